"""The generic saddle-point solver (:mod:`attnverify.saddle`, the action declared in sympy) against the built-in
attention-path solver (hand-written gradients and Hessians, U_a profiled out), side by side with their ratio.

    python benchmarks/bench_saddle.py [--P 600] [--repeat 3]

Hidden Markov chain task, 4 paths (heads (2, 2)), T = 0.01, σ² = 1, P training sequences drawn with seed 0; and
H = 1 (one head, the scalar kernel renormalisation) on the first path's kernel. For each width N: each solver's
best wall time of ``repeat`` solves from the GP point to max |∂S/∂U| ≤ 1e-9 of its scale (the generic solver's
first call in the process, which derives and generates its evaluators, is reported apart), and max |ΔU| over every
order parameter between the two solutions solved to 1e-11 (the generic solver's residual; its round-off floor at P = 600 is ~4e-12).

Cost estimate: an iteration's work is one Cholesky of K + T·I and the solves for A = (K + T·I)⁻¹ (P³/3 + P³ flops),
the trace products Tr(A S_k A S_l) for the 10 pairs (≈ 10·2P³): ~2.3·10¹⁰ flops per Newton step at P = 600 on the
energy side in both solvers; the entropy (a few hundred scalar operations) is negligible, so the two should take
the same time per iteration, and the generic one pays only its Python per-entry loops on 10 + 3 + 1 entries.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from attnverify.saddle import solve
from attnverify.theories.attention_paths import saddle_point_from_features
from attnverify.theories.attention_paths.generic_action import attention_paths_action
from attnverify.theories.attention_paths.markov_chain import MarkovChainTask, markov_dataset

T = 0.01


def best(function, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--P", type=int, default=600)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--widths", type=float, nargs="+", default=[10, 100, 1000])
    args = parser.parse_args()
    X, y, _, _ = markov_dataset(MarkovChainTask(), "4paths", args.P, 10, seed=0)
    X, y = np.asarray(X), np.asarray(y)
    four, one = attention_paths_action((2, 2)), attention_paths_action((1,))
    priors4, priors1 = dict(sigma1=1.0, sigma2=1.0, sigma_a=1.0), dict(sigma1=1.0, sigma_a=1.0)
    start = time.perf_counter()
    solve(four, dict(X=X, y=y), temperature=T, N=args.widths[0], **priors4)
    first = time.perf_counter() - start
    solve(one, dict(X=X[:, :, :1], y=y), temperature=T, N=args.widths[0], **priors1)
    print(f"P = {args.P}, N0 = {X.shape[1]}, T = {T}; the generic solver's first call (derive + generate + solve): "
          f"{first:.2f} s")
    print(f"{'case':<22}{'N':>7}{'built-in s':>12}{'generic s':>11}{'ratio':>8}{'max |ΔU|':>11}{'iterations':>12}")
    for N in args.widths:
        t_ref, ref = best(lambda: saddle_point_from_features(X, y, heads=(2, 2), width=N, temperature=T), args.repeat)
        t_gen, gen = best(lambda: solve(four, dict(X=X, y=y), temperature=T, N=N, **priors4), args.repeat)
        tight_ref = saddle_point_from_features(X, y, heads=(2, 2), width=N, temperature=T, tolerance=1e-12)
        tight = solve(four, dict(X=X, y=y), temperature=T, N=N, tolerance=1e-11, raise_on_failure=False, **priors4)
        gap = max(np.max(np.abs(tight["U1"] - tight_ref.order_parameter)),
                  np.max(np.abs(tight["U2"] - tight_ref.order_parameters[1])),
                  abs(tight["Ua"] - tight_ref.readout_order_parameter))
        print(f"{'4 paths, heads (2, 2)':<22}{N:>7g}{t_ref:>12.3f}{t_gen:>11.3f}{t_gen / t_ref:>8.2f}{gap:>11.1e}"
              f"{f'{ref.iterations} | {gen.iterations}':>12}")
        t_ref, ref = best(lambda: saddle_point_from_features(X[:, :, :1], y, heads=(1,), width=N, temperature=T),
                          args.repeat)
        t_gen, gen = best(lambda: solve(one, dict(X=X[:, :, :1], y=y), temperature=T, N=N, **priors1), args.repeat)
        tight_ref = saddle_point_from_features(X[:, :, :1], y, heads=(1,), width=N, temperature=T, tolerance=1e-12)
        tight = solve(one, dict(X=X[:, :, :1], y=y), temperature=T, N=N, tolerance=1e-11, raise_on_failure=False, **priors1)
        gap = max(abs(tight["U1"] - float(tight_ref.order_parameter[0, 0])),
                  abs(tight["Ua"] - tight_ref.readout_order_parameter))
        print(f"{'H = 1 (scalar)':<22}{N:>7g}{t_ref:>12.3f}{t_gen:>11.3f}{t_gen / t_ref:>8.2f}{gap:>11.1e}"
              f"{f'{ref.iterations} | {gen.iterations}':>12}")


if __name__ == "__main__":
    main()
