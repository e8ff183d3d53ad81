"""Benchmarks for the attention-path saddle point, printed side by side with their ratios.

    python benchmarks/bench_attention_paths.py [--repeats 20] [--adam] [--sweep] [--scaling] [--large]

The theory is the action declared on the saddle-point engine (theories/attention_paths/action.py, solved by
attnverify.saddle: trust-region Newton on the exact Hessian, the minimum test included). Sections 1, 2 and 5 write
their figures to benchmarks/results/ (benchmarks/record.py), which docs/performance.md shows; 3 and 4 print only.

1. Markov task (4 paths, P = 100, the authors' features when present), T = 0.01, the engine's default tolerance:
   the public call ``solve_paths(dict(C=C, y=y), …)`` (its checks of C included) against ``solve_energy`` on a
   prepared energy (C checked once), at N = 10, 100, 1000; the two take turns ``--repeats`` times and the least
   CPU time of each is kept (both run on one thread: their cost without the time other jobs take from it). Record ``attention_paths_markov``. With ``--adam``, also
   Adam on the engine's Cholesky parameters with its analytic gradient, at 1e-5 and 1e-9 (printed only).
2. One solve of the one-shot image task (P = 600, 16 paths), minimum test included, from the first cached one-shot
   network; left out, and said so, where no cached networks are installed. Record ``attention_paths_one_shot``.
3. (--sweep) A sweep (widths × temperatures, continuation) against the same solves done independently.
4. (--scaling) Scaling in P with 16 paths (L = 2, H = 4, N0 = 64, S = 48, average pooling, the one-shot image
   task's shapes on synthetic tokens): one action+gradient call in the P × P kernel space (from X, never forming
   C) against the (N0𝓗)-dimensional feature space, and the feature-space solve's wall time and peak traced memory.
5. (--large) Path features and the feature-space solve at P = 100,000 (the P × P kernel would need 80 GB).
   Record ``attention_paths_large``.

The solver against the authors' own optimiser is ``benchmarks/bench_authors_solver.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

from attnverify.numerics.kernel_energy import energy_for
from attnverify.saddle import gp_point, sweep
from attnverify.saddle.action import NumericAction
from attnverify.saddle.solve import solve_energy
from attnverify.theories.attention_paths.action import ActionConfig, solve_paths
from attnverify.theories.attention_paths.markov_chain import MarkovChainTask, markov_dataset
from attnverify.theories.attention_paths.synthetic import synthetic_problem
from attnverify.theories.attention_paths.theory_points import authors_markov_data

sys.path.insert(0, str(Path(__file__).parent))
from record import code_that_runs, write_record  # noqa: E402

MARKOV_WIDTHS = (10, 100, 1000)
MARKOV_TEMPERATURE = 0.01
ONE_SHOT_CASES = ((10, 0.25), (10, 0.01), (1000, 0.25))
ONE_SHOT_TOLERANCES = (1e-6, 1e-9)


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


def best_of(function, repeats: int = 5):
    """(fastest wall time of ``repeats`` calls, the last result): the machine's noise is one-sided."""
    times = []
    for _ in range(repeats):
        seconds, result = timed(function)
        times.append(seconds)
    return min(times), result


def in_turns(first, second, repeats: int):
    """The least CPU time of this thread for each of two functions called alternately ``repeats`` times, and their
    last results. Both run on this thread alone (one BLAS thread), so its CPU time is their cost without the time
    other jobs of a shared machine take from it; alternating spreads the machine's drift (caches, clock) over both."""
    times, results = ([], []), [None, None]
    for _ in range(repeats):
        for k, function in enumerate((first, second)):
            start = time.thread_time()
            results[k] = function()
            times[k].append(time.thread_time() - start)
    return min(times[0]), min(times[1]), results


def one_shot_problem():
    """The first cached one-shot network's P = 600 theory episodes (figure 3's solve)."""
    from attnverify.theories.attention_paths.one_shot import analysis as experiment

    networks, _ = experiment.cached_networks()
    seed = sorted(networks)[0]
    paths = experiment.first_episodes(experiment.path_data(networks[seed], experiment.one_shot_data()), 600)
    return paths.X, paths.y


def markov_section(repeats: int, with_adam: bool) -> None:
    X, y, origin = markov_features()
    C = np.einsum("pia,qib->abpq", X, X)  # P = 100: the kernel route is the fastest for both
    T = MARKOV_TEMPERATURE
    first, _ = timed(lambda: solve_paths(dict(C=C, y=y), heads=(2, 2), width=10, temperature=T))
    print(f"1. Markov task, 4 paths, P = {len(y)}, T = {T} ({origin}), the engine's default tolerance on max "
          "|∂(S/n)/∂U|")
    print("   call: solve_paths(C, …) with its checks of C (symmetry, positive semi-definiteness); solve: solve_energy")
    print("   on a prepared energy (C checked once); trust-region Newton on the exact Hessian, minimum test and error")
    print(f"   estimate included. The two take turns {repeats} times, least CPU time of each kept.")
    print(f"   (the first call of the process also derives and generates the action's derivatives: {first:.2f} s, once)")
    header = f"{'N':>6} {'call CPU ms':>12} {'solve CPU ms':>13} {'call/solve':>11} {'Newton':>7}"
    if with_adam:
        header += f" {'Adam 1e-5 s':>12} {'steps':>6} {'vs solve':>9} {'Adam 1e-9 s':>12} {'vs solve':>22}"
    print(header)

    def prepared(N):
        config = ActionConfig.build((2, 2), N, T)
        declaration, values = config.action, config.action.parameter_values(config.parameters())
        return declaration, energy_for(C=C, y=y, temperature=T), values

    def call(N):
        return solve_paths(dict(C=C, y=y), heads=(2, 2), width=N, temperature=T)

    def solve(N, declaration, energy, values):
        return solve_energy(declaration, energy, values, temperature=T)

    rows = []
    for N in MARKOV_WIDTHS:
        declaration, energy, values = prepared(N)
        t_call, t_solve, (_, solution) = in_turns(lambda: call(N), lambda: solve(N, declaration, energy, values),
                                                  repeats)
        row = dict(width=N, call_ms=1e3 * t_call, solve_ms=1e3 * t_solve, ratio=t_call / t_solve,
                   newton_iterations=solution.iterations)
        rows.append(row)
        line = (f"{N:>6} {row['call_ms']:>12.3g} {row['solve_ms']:>13.3g} {row['ratio']:>10.2f}x "
                f"{solution.iterations:>7}")
        if with_adam:
            t_adam, (steps, _) = timed(lambda: adam(NumericAction(declaration, energy, values), tolerance=1e-5))
            t_adam9, (steps9, residual9) = timed(lambda: adam(NumericAction(declaration, energy, values),
                                                              tolerance=1e-9))
            adam9 = (f"{t_adam9 / t_solve:.0f}x" if residual9 < 1e-9
                     else f">{t_adam9 / t_solve:.0f}x (not in {steps9})")
            line += f" {t_adam:>12.3g} {steps:>6} {t_adam / t_solve:>8.0f}x {t_adam9:>12.3g} {adam9:>22}"
        print(line, flush=True)

    def work():
        call(MARKOV_WIDTHS[1])
        solve(MARKOV_WIDTHS[1], *prepared(MARKOV_WIDTHS[1]))

    write_record("attention_paths_markov", rows, timed=code_that_runs(work),
                 columns=[("width", "N", "{:d}"), ("call_ms", "solve_paths(C, …), CPU ms", "{:.3g}"),
                          ("solve_ms", "solve_energy, CPU ms", "{:.3g}"), ("ratio", "call ÷ solve", "{:.2f}×"),
                          ("newton_iterations", "Newton iterations", "{:d}")],
                 settings=dict(features=origin, paths=4, P=len(y), temperature=T, repeats=repeats,
                               first_call_seconds=first))


def one_shot_section() -> tuple | None:
    """Section 2; the one-shot problem (X, y), or None where no cached networks are installed."""
    try:
        X1, y1 = one_shot_problem()
    except (FileNotFoundError, ValueError) as missing:
        print(f"\n2. One-shot image task: left out, {missing}")
        return None
    print("\n2. One-shot image task (figure 3): first cached network, P = 600, 16 paths (L = 2, H = 4), N0 = 64,")
    print("   kernel space (N0·𝓗 = 1024 > P); solve from the GP point to 1e-6 (the experiment's tolerance) and 1e-9,")
    print("   minimum test (exact Hessian eigenvalues) and error estimate included; best of 3")
    print(f"{'N':>6} {'T':>6} {'seconds':>8} {'Newton':>7} {'λ_min':>9} {'tolerance':>10}")

    def solve(N, T, tolerance):
        return solve_paths(dict(X=X1, y=y1), heads=(4, 4), width=N, temperature=T, tolerance=tolerance)

    rows = []
    for N, T in ONE_SHOT_CASES:
        for tolerance in ONE_SHOT_TOLERANCES:
            seconds, solution = best_of(lambda: solve(N, T, tolerance), repeats=3)
            rows.append(dict(width=N, temperature=T, tolerance=tolerance, seconds=seconds,
                             newton_iterations=solution.iterations,
                             smallest_eigenvalue=float(solution.hessian_eigenvalues.min())))
            print(f"{N:>6} {T:>6g} {seconds:>8.2f} {solution.iterations:>7} "
                  f"{rows[-1]['smallest_eigenvalue']:>9.2g} {tolerance:>10g}", flush=True)
    write_record("attention_paths_one_shot", rows, timed=code_that_runs(lambda: solve(*ONE_SHOT_CASES[0], 1e-6)),
                 columns=[("width", "N", "{:d}"), ("temperature", "T", "{:g}"), ("tolerance", "tolerance", "{:g}"),
                          ("seconds", "solve (s)", "{:.2f}"), ("newton_iterations", "Newton iterations", "{:d}"),
                          ("smallest_eigenvalue", "smallest Hessian eigenvalue", "{:.2g}")],
                 settings=dict(P=len(y1), paths=16, heads=[4, 4], input_width=int(X1.shape[1]), repeats=3))
    return X1, y1


def sweep_section(X1, y1) -> None:
    print("\n3. Sweep vs independent solves: one-shot P = 600, widths (1000, 100, 10) × temperatures (1, 0.25, 0.05)")
    widths, temperatures = (1000, 100, 10), (1.0, 0.25, 0.05)
    config = ActionConfig.build((4, 4), 1.0, 1.0)
    t_sweep, grid = timed(lambda: sweep(config.action, dict(X=X1, y=y1), widths=widths, temperatures=temperatures,
                                        tolerance=1e-6, **config.parameters()))
    t_alone, alone = timed(lambda: [solve_paths(dict(X=X1, y=y1), heads=(4, 4), width=N, temperature=T,
                                                tolerance=1e-6) for N in widths for T in temperatures])
    print(f"   sweep {t_sweep:.2f} s ({grid.iterations} Newton iterations) vs independent {t_alone:.2f} s "
          f"({sum(s.iterations for s in alone)} iterations): {t_alone / t_sweep:.2f}x")


def scaling_section() -> None:
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


def large_section() -> None:
    P = 100_000

    def features():
        return synthetic_problem(P, heads=(4, 4), input_width=64, tokens=48, readout="average_pooling", seed=2)

    t_data, m_data, (Xs, ys) = peak_memory(features)

    def solve():
        return solve_paths(dict(X=Xs, y=ys), heads=(4, 4), width=100, temperature=0.1)

    tf, mf, solution = peak_memory(solve)
    x_mib = Xs.nbytes / 2**20
    print(f"\n5. P = {P:,}: features {t_data:.1f} s (peak traced {m_data:.0f} MiB, of which X is "
          f"{x_mib:.0f} MiB); feature-space solve {tf:.1f} s, peak traced {mf:.0f} MiB beyond X; "
          f"total {t_data + tf:.1f} s; {solution.message}")
    # the functions timed, found on a problem of the same shapes small enough to run twice (P = 2,000: still more
    # examples than N0·𝓗 = 1,024, so the same feature-space route and the same chunked features)
    def small():
        Xt, yt = synthetic_problem(2000, heads=(4, 4), input_width=64, tokens=48, readout="average_pooling", seed=2)
        solve_paths(dict(X=Xt, y=yt), heads=(4, 4), width=100, temperature=0.1)

    write_record("attention_paths_large",
                 [dict(P=P, features_seconds=t_data, features_mib=m_data, X_mib=x_mib, solve_seconds=tf,
                       solve_mib=mf, newton_iterations=solution.iterations)],
                 timed=code_that_runs(small),
                 columns=[("P", "P", "{:,d}"), ("features_seconds", "path features (s)", "{:.1f}"),
                          ("features_mib", "their peak traced memory (MiB)", "{:,.0f}"),
                          ("X_mib", "of which X (MiB)", "{:,.0f}"),
                          ("solve_seconds", "feature-space solve (s)", "{:.1f}"),
                          ("solve_mib", "its peak traced memory beyond X (MiB)", "{:,.0f}"),
                          ("newton_iterations", "Newton iterations", "{:d}")],
                 settings=dict(paths=16, heads=[4, 4], input_width=64, tokens=48, readout="average_pooling",
                               width=100, temperature=0.1, seed=2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20, help="turns of the Markov task's call and solve")
    parser.add_argument("--adam", action="store_true", help="also Adam on the Markov task (printed only)")
    parser.add_argument("--sweep", action="store_true", help="also a sweep against independent solves")
    parser.add_argument("--scaling", action="store_true", help="also the scaling in P (P = 2,000 and 5,000)")
    parser.add_argument("--large", action="store_true", help="also features + solve at P = 100,000 (feature space)")
    options = parser.parse_args()
    if options.repeats < 1:
        raise SystemExit(f"--repeats must be ≥ 1, got {options.repeats}")

    markov_section(options.repeats, options.adam)
    one_shot = one_shot_section()
    if options.sweep:
        if one_shot is None:
            print("\n3. Sweep: left out, it solves the one-shot problem")
        else:
            sweep_section(*one_shot)
    if options.scaling:
        scaling_section()
    if options.large:
        large_section()


if __name__ == "__main__":
    main()
