"""Benchmarks for the attention-path saddle point, printed side by side with their ratios.

    python benchmarks/bench_attention_paths.py [--large]

1. Solver vs Adam at equal tolerance. Adam (lr 0.1, the authors' optimiser and rate, here on the
   same Cholesky parameters and the same analytic gradient of S/n) runs until the authors' stopping
   rule max |∂(S/n)/∂U| < 1e-5; the solver (L-BFGS + Newton) is asked for the same 1e-5 and, for
   reference, for 1e-9. Hidden Markov chain, 4 paths, P = 100 (the authors' features when present).
2. Scaling in P with 16 paths (L = 2, H = 4, N0 = 64, S = 48, average pooling, the one-shot image
   task's shapes on synthetic tokens): one action+gradient call in the P × P kernel space (from X,
   never forming C) vs the (N0𝓗)-dimensional feature space, and the feature-space solve's wall time
   and peak traced memory.
3. (--large) The feature space alone at P = 100,000, where the P × P kernel would need 80 GB.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from attnverify.numerics.attention_paths import Action, ActionConfig, energy_for, saddle_point, saddle_point_from_features
from attnverify.numerics.attention_paths.experiments import authors_markov_data
from attnverify.numerics.attention_paths.markov_chain import MarkovChainTask, markov_dataset
from attnverify.numerics.attention_paths.saddle_point import gp_start
from attnverify.numerics.attention_paths.synthetic import synthetic_problem


def adam(action: Action, *, tolerance: float, learning_rate: float = 0.1, max_steps: int = 50_000,
         beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8) -> tuple[int, float]:
    """Plain Adam on the Cholesky parameters from the GP point; (steps, final residual)."""
    theta = action.parametrisation.theta(gp_start(action.config))
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    for step in range(1, max_steps + 1):
        E, H, factors, U_a, grads = action.parts(theta)
        residual = max(np.max(np.abs(G)) for G in grads) / action.scale
        if residual < tolerance:
            return step, residual
        g = action.parametrisation.chain(factors, grads) / action.scale
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        theta = theta - learning_rate * (m / (1 - beta1**step)) / (np.sqrt(v / (1 - beta2**step)) + eps)
    return max_steps, residual


def markov_features():
    data = authors_markov_data()
    if data is not None:
        return data[0], data[1], "authors' features"
    X, y, _, _ = markov_dataset(MarkovChainTask(), "4paths", 100, 10, seed=0)
    return np.asarray(X), y, "generated features (seed 0)"


def timed(function):
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def peak_memory(function):
    tracemalloc.start()
    start = time.perf_counter()
    result = function()
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return seconds, peak / 2**20, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="also solve at P = 100,000 (feature space)")
    large = parser.parse_args().large

    X, y, origin = markov_features()
    print(f"1. Markov task, 4 paths, P = {len(y)}, T = 0.01 ({origin}); tolerance on max |∂(S/n)/∂U|")
    print(f"{'N':>6} {'Adam steps':>11} {'Adam s':>9} {'solver s (1e-5)':>16} {'ratio':>8} {'solver s (1e-9)':>16} {'ratio':>8}")
    C = np.einsum("pia,qib->abpq", X, X)  # P = 100: the kernel route is the fastest for both
    for N in (10, 100, 1000):
        config = ActionConfig.build((2, 2), N, 0.01)
        action = Action(config, energy_for(C=C, y=y, temperature=0.01))
        t_adam, (steps, _) = timed(lambda: adam(action, tolerance=1e-5))
        t5, _ = timed(lambda: saddle_point(C, y, heads=(2, 2), width=N, temperature=0.01, tolerance=1e-5))
        t9, _ = timed(lambda: saddle_point(C, y, heads=(2, 2), width=N, temperature=0.01, tolerance=1e-9))
        print(f"{N:>6} {steps:>11} {t_adam:>9.3g} {t5:>16.3g} {t_adam / t5:>8.1f} {t9:>16.3g} {t_adam / t9:>8.1f}")

    print("\n2. 16 paths (L = 2, H = 4), N0 = 64, S = 48, average pooling, N = 100, T = 0.1")
    print("   one energy+gradient call in the P × P kernel space (from X) vs the (N0𝓗)² feature space;")
    print("   then the whole feature-space solve (tolerance 1e-9) with its peak traced memory")
    print(f"{'P':>7} {'kernel call s':>14} {'feature call s':>15} {'ratio':>8} {'solve s':>9} {'solve MiB':>10} {'X MiB':>7}")
    for P in (2000, 5000):  # N0·𝓗 = 1024 < P
        Xs, ys = synthetic_problem(P, heads=(4, 4), input_width=64, tokens=48, readout="average_pooling", seed=1)
        R = np.linalg.cholesky(np.eye(16) + 0.1 * np.ones((16, 16)))
        kernel_call, _ = timed(lambda: energy_for(X=Xs, y=ys, temperature=0.1, space="kernel")(R))
        feature = energy_for(X=Xs, y=ys, temperature=0.1, space="feature")
        feature_call, _ = timed(lambda: feature(R))
        tf, mf, solution = peak_memory(lambda: saddle_point_from_features(Xs, ys, heads=(4, 4), width=100, temperature=0.1))
        print(f"{P:>7} {kernel_call:>14.3g} {feature_call:>15.3g} {kernel_call / feature_call:>8.1f} {tf:>9.3g} "
              f"{mf:>10.0f} {Xs.nbytes / 2**20:>7.0f}")

    if large:
        P = 100_000
        t_data, (Xs, ys) = timed(lambda: synthetic_problem(P, heads=(4, 4), input_width=64, tokens=48,
                                                           readout="average_pooling", seed=2))
        tf, mf, solution = peak_memory(lambda: saddle_point_from_features(Xs, ys, heads=(4, 4), width=100,
                                                                         temperature=0.1))
        print(f"\n3. P = {P:,}: features {t_data:.1f} s ({Xs.nbytes / 2**20:.0f} MiB); feature-space solve "
              f"{tf:.1f} s, peak traced {mf:.0f} MiB beyond X; {solution.message}")


if __name__ == "__main__":
    main()
