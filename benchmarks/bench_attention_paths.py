"""Benchmarks for the attention-path saddle point, printed side by side with their ratios.

    python benchmarks/bench_attention_paths.py [--large]

The theory is the action declared on the saddle-point engine (theories/attention_paths/action.py, solved by
attnverify.saddle: trust-region Newton on the exact Hessian, the minimum test included).

1. Markov task (4 paths, P = 100, the authors' features when present): the engine against the authors' optimiser
   as they ran it (Adam lr 0.1 on the entries of U, torch float64 autograd, stop at max |∂(S/n)/∂U| < 1e-5:
   benchmarks/authors_adam.py, needs torch from the [train] extra) and against Adam on the engine's Cholesky
   parameters with its analytic gradient, at 1e-5 and 1e-9.
2. One solve of the one-shot image task (P = 600, 16 paths), minimum test included.
3. A sweep (widths × temperatures, continuation) against the same solves done independently.
4. Scaling in P with 16 paths (L = 2, H = 4, N0 = 64, S = 48, average pooling, the one-shot image
   task's shapes on synthetic tokens): one action+gradient call in the P × P kernel space (from X,
   never forming C) vs the (N0𝓗)-dimensional feature space, and the feature-space solve's wall time
   and peak traced memory.
5. (--large) Path features and the feature-space solve at P = 100,000 (the P × P kernel would need 80 GB).
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from attnverify.numerics.kernel_energy import energy_for
from attnverify.saddle import gp_point, sweep
from attnverify.saddle.action import NumericAction
from attnverify.saddle.solve import solve_energy
from attnverify.theories.attention_paths.action import ActionConfig, solve_paths
from attnverify.theories.attention_paths.theory_points import authors_markov_data
from attnverify.theories.attention_paths.markov_chain import MarkovChainTask, markov_dataset
from attnverify.theories.attention_paths.synthetic import synthetic_problem


def adam(action: NumericAction, *, tolerance: float, learning_rate: float = 0.1, max_steps: int = 50_000,
         beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8) -> tuple[int, float]:
    """Plain Adam on the engine's Cholesky parameters from the GP point; (steps, final residual)."""
    start = gp_point(action.declaration, **dict(zip(action.declaration.parameter_names, action.parameters)))
    theta = action.parametrisation.theta(start.entries)
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    for step in range(1, max_steps + 1):
        residual = action.residual(theta)
        if residual < tolerance:
            return step, residual
        g = action(theta)[1]
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


def authors_baseline(C, y, N):
    """The authors' optimiser (benchmarks/authors_adam.py) with torch's default threads and with one thread,
    the faster of the two (steps, seconds, residual, U), or None without torch (the [train] extra)."""
    try:
        from authors_adam import authors_adam
    except ImportError:  # run from elsewhere than benchmarks/
        import sys
        from pathlib import Path
        sys.path.insert(0, str(Path(__file__).parent))
        from authors_adam import authors_adam
    try:
        import torch
    except ImportError:
        return None
    default = torch.get_num_threads()
    runs = []
    for threads in sorted({default, 1}):
        torch.set_num_threads(threads)
        runs.append(authors_adam(C, y, heads=(2, 2), width=N, temperature=0.01))
    torch.set_num_threads(default)
    return min(runs, key=lambda run: run[1])


def best_of(function, repeats: int = 5):
    """(fastest wall time of ``repeats`` calls, the last result): the machine's noise is one-sided."""
    times = []
    for _ in range(repeats):
        seconds, result = timed(function)
        times.append(seconds)
    return min(times), result


def one_shot_problem():
    """The first cached one-shot network's P = 600 theory episodes (figure 3's solve)."""
    from attnverify.theories.attention_paths.one_shot import analysis as experiment

    networks, _ = experiment.cached_networks()
    seed = sorted(networks)[0]
    paths = experiment.first_episodes(experiment.path_data(networks[seed], experiment.one_shot_data()), 600)
    return paths.X, paths.y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="also features + solve at P = 100,000 (feature space)")
    large = parser.parse_args().large

    X, y, origin = markov_features()
    C = np.einsum("pia,qib->abpq", X, X)  # P = 100: the kernel route is the fastest for both
    first, _ = timed(lambda: solve_paths(dict(C=C, y=y), heads=(2, 2), width=10, temperature=0.01))
    print(f"1. Markov task, 4 paths, P = {len(y)}, T = 0.01 ({origin}); tolerance on max |∂(S/n)/∂U|")
    print("   authors' Adam: lr 0.1 on the entries of U, torch float64 autograd, stop at 1e-5 (their rule),")
    print("   the faster of torch's default threads and one thread;")
    print("   our Adam: lr 0.1 on the Cholesky parameters, numpy analytic gradient, stop at 1e-5;")
    print("   solve: the engine's trust-region Newton on the exact Hessian, minimum test and error estimate included,")
    print("   on a prepared energy (C checked once, as the authors' loop takes C as given); call: solve_paths(C, …)")
    print("   with its checks of C (symmetry, positive semi-definiteness). Best of 5 each.")
    print(f"   (the first call of the process also derives and generates the action's derivatives: {first:.2f} s, once)")
    print(f"{'N':>6} {'authors s':>10} {'steps':>6} {'our Adam s':>11} {'steps':>6} {'solve 1e-5':>11} "
          f"{'vs authors':>11} {'vs Adam':>8} {'call 1e-5':>10} {'vs authors':>11} {'solve 1e-9':>11} "
          f"{'vs authors':>11} {'vs Adam 1e-9':>13} {'max|ΔU|':>9}")
    for N in (10, 100, 1000):
        config = ActionConfig.build((2, 2), N, 0.01)
        declaration, values = config.action, config.action.parameter_values(config.parameters())
        energy = energy_for(C=C, y=y, temperature=0.01)
        t_adam, (steps, _) = timed(lambda: adam(NumericAction(declaration, energy, values), tolerance=1e-5))
        t_adam9, (steps9, residual9) = timed(lambda: adam(NumericAction(declaration, energy, values), tolerance=1e-9))
        t5, _ = best_of(lambda: solve_energy(declaration, energy, values, temperature=0.01, tolerance=1e-5))
        call5, _ = best_of(lambda: solve_paths(dict(C=C, y=y), heads=(2, 2), width=N, temperature=0.01,
                                               tolerance=1e-5))
        t9, solution = best_of(lambda: solve_energy(declaration, energy, values, temperature=0.01, tolerance=1e-9))
        adam9 = f"{t_adam9 / t9:.0f}x" if residual9 < 1e-9 else f">{t_adam9 / t9:.0f}x (not reached in {steps9})"
        authors = authors_baseline(C, y, N)
        if authors is None:
            a_steps, a_seconds, gap = "-", float("nan"), float("nan")
        else:
            a_steps, a_seconds, _, U_authors = authors
            gap = float(np.max(np.abs(U_authors - solution.matrix("U1"))))
        print(f"{N:>6} {a_seconds:>10.3g} {a_steps:>6} {t_adam:>11.3g} {steps:>6} {t5:>11.3g} {a_seconds / t5:>10.0f}x "
              f"{t_adam / t5:>7.0f}x {call5:>10.3g} {a_seconds / call5:>10.0f}x {t9:>11.3g} {a_seconds / t9:>10.0f}x "
              f"{adam9:>13} {gap:>9.1e}", flush=True)

    print("\n2. One-shot image task (figure 3): first cached network, P = 600, 16 paths (L = 2, H = 4), N0 = 64,")
    print("   kernel space (N0·𝓗 = 1024 > P); solve from the GP point to 1e-6 (the experiment's tolerance) and 1e-9,")
    print("   minimum test (exact Hessian eigenvalues) and error estimate included; best of 3")
    X1, y1 = one_shot_problem()
    print(f"{'N':>6} {'T':>6} {'seconds':>8} {'Newton':>7} {'λ_min':>9} {'tolerance':>10}")
    for N, T in ((10, 0.25), (10, 0.01), (1000, 0.25)):
        for tol in (1e-6, 1e-9):
            seconds, sol = best_of(lambda: solve_paths(dict(X=X1, y=y1), heads=(4, 4), width=N, temperature=T,
                                                       tolerance=tol), repeats=3)
            print(f"{N:>6} {T:>6g} {seconds:>8.2f} {sol.iterations:>7} "
                  f"{sol.hessian_eigenvalues.min():>9.2g} {tol:>10g}", flush=True)

    print("\n3. Sweep vs independent solves: one-shot P = 600, widths (1000, 100, 10) × temperatures (1, 0.25, 0.05)")
    widths, temperatures = (1000, 100, 10), (1.0, 0.25, 0.05)
    config = ActionConfig.build((4, 4), 1.0, 1.0)
    t_sweep, grid = timed(lambda: sweep(config.action, dict(X=X1, y=y1), widths=widths, temperatures=temperatures,
                                        tolerance=1e-6, **config.parameters()))
    t_alone, alone = timed(lambda: [solve_paths(dict(X=X1, y=y1), heads=(4, 4), width=N, temperature=T,
                                                tolerance=1e-6) for N in widths for T in temperatures])
    print(f"   sweep {t_sweep:.2f} s ({grid.iterations} Newton iterations) vs independent {t_alone:.2f} s "
          f"({sum(s.iterations for s in alone)} iterations): {t_alone / t_sweep:.2f}x")

    print("\n4. 16 paths (L = 2, H = 4), N0 = 64, S = 48, average pooling, N = 100, T = 0.1")
    print("   one energy+gradient call in the P × P kernel space (from X) vs the (N0𝓗)² feature space;")
    print("   then the whole feature-space solve (tolerance 1e-9) with its peak traced memory")
    print(f"{'P':>7} {'kernel call s':>14} {'feature call s':>15} {'ratio':>8} {'solve s':>9} {'solve MiB':>10} {'X MiB':>7}")
    for P in (2000, 5000):  # N0·𝓗 = 1024 < P
        Xs, ys = synthetic_problem(P, heads=(4, 4), input_width=64, tokens=48, readout="average_pooling", seed=1)
        R = np.linalg.cholesky(np.eye(16) + 0.1 * np.ones((16, 16)))
        kernel_call, _ = timed(lambda: energy_for(X=Xs, y=ys, temperature=0.1, space="kernel")(R))
        feature = energy_for(X=Xs, y=ys, temperature=0.1, space="feature")
        feature_call, _ = timed(lambda: feature(R))
        tf, mf, solution = peak_memory(lambda: solve_paths(dict(X=Xs, y=ys), heads=(4, 4), width=100, temperature=0.1))
        print(f"{P:>7} {kernel_call:>14.3g} {feature_call:>15.3g} {kernel_call / feature_call:>8.1f} {tf:>9.3g} "
              f"{mf:>10.0f} {Xs.nbytes / 2**20:>7.0f}", flush=True)

    if large:
        P = 100_000
        t_data, m_data, (Xs, ys) = peak_memory(lambda: synthetic_problem(P, heads=(4, 4), input_width=64, tokens=48,
                                                                         readout="average_pooling", seed=2))
        tf, mf, solution = peak_memory(lambda: solve_paths(dict(X=Xs, y=ys), heads=(4, 4), width=100,
                                                           temperature=0.1))
        print(f"\n5. P = {P:,}: features {t_data:.1f} s (peak traced {m_data:.0f} MiB, of which X is "
              f"{Xs.nbytes / 2**20:.0f} MiB); feature-space solve {tf:.1f} s, peak traced {mf:.0f} MiB beyond X; "
              f"total {t_data + tf:.1f} s; {solution.message}")


if __name__ == "__main__":
    main()
