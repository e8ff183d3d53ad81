"""Benchmarks for single-location regression, printed side by side with their ratios.

    python benchmarks/bench_single_location.py [--backend numpy|cupy] [--json FILE]

1. Monte Carlo risk: exact reduction to span{k*, v*, k, v} vs full d-dimensional tokens.
2. ζ(t, g): generated array evaluator (composite Gauss–Legendre) vs scipy's Owen's T route.
3. Population PGD (4-D reduction, generated gradient): 30 runs one by one vs as a batch axis.

The figures go to benchmarks/results/single_location_BACKEND.json (benchmarks/record.py), or ``--json``'s file.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import sympy
from scipy.special import owens_t

from attnverify.derivations.codegen import evaluator
from attnverify.derivations.gaussian import ErfSquareMean
from attnverify.theories import single_location as sim
from attnverify.base.backend import get_backend

sys.path.insert(0, str(Path(__file__).parent))
from record import code_that_runs, write_record  # noqa: E402

RECORDS = {"numpy": "single_location_numpy", "cupy": "single_location_cupy"}


def timed(function, repeat: int = 3) -> float:
    """Best wall time of ``repeat`` calls (seconds)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="numpy", choices=sorted(RECORDS))
    parser.add_argument("--json", type=Path, default=None, help="the record (default benchmarks/results/"
                        "single_location_BACKEND.json)")
    options = parser.parse_args()
    backend = get_backend(options.backend)
    rows = []

    d, L, n = 400, 10, 20_000
    task = sim.make_task(d, L, seed=0, backend=backend)

    def risk(n, full=False):
        simulate = sim.risk_monte_carlo_full if full else sim.risk_monte_carlo
        return simulate(task, task.k_star, task.v_star, 0.1, n, 1, backend=backend)

    reduced = timed(lambda: risk(n))
    full = timed(lambda: risk(n, full=True), 1)
    rows.append((f"MC risk, d={d}, L={L}, n={n}", "full tokens", full, "reduction", reduced))

    t, g = sympy.symbols("t g", real=True)
    zeta = evaluator(ErfSquareMean(t, g), [t, g], backend)
    rng = np.random.default_rng(0)
    tt, gg = rng.uniform(0, 10, 1_000_000), rng.uniform(0.01, 3, 1_000_000)
    tb, gb = backend.asarray(tt), backend.asarray(gg)
    generated = timed(lambda: zeta(tb, gb))
    owen = timed(lambda: 1 - 8 * owens_t(np.sqrt(2) * tt / np.sqrt(1 + 2 * gg**2), 1 / np.sqrt(1 + 4 * gg**2)))
    rows.append(("zeta(t, g), 10^6 points", "Owen's T (scipy, CPU)", owen, f"generated ({backend.name})", generated))

    k0, v0 = sim.initialize_on_sphere(30, d, 0, backend=backend)
    (k4, v4), _ = sim.reduce_to_four_dimensions(k0, v0, task.k_star, task.v_star, backend=backend)
    steps = 200

    def pgd(k, v):
        return sim.population_projected_gradient_descent(
            k, v, lam0=0.1, scheduled=False, step_size=4e-3, steps=steps, d=d, L=L, gamma=np.sqrt(0.5), eps=0.1,
            record_every=steps, backend=backend)

    pgd(k4[:1], v4[:1])  # derive and compile the gradient once
    batched = timed(lambda: pgd(k4, v4), 1)
    one_by_one = timed(lambda: [pgd(k4[i : i + 1], v4[i : i + 1]) for i in range(30)], 1)
    rows.append((f"population PGD, 30 runs x {steps} steps", "runs one by one", one_by_one, "runs as a batch axis", batched))

    print(f"{'benchmark':<40} {'baseline':<24} {'seconds':>10} {'candidate':<24} {'seconds':>10} {'ratio':>8}")
    for name, base, tb_, cand, tc in rows:
        print(f"{name:<40} {base:<24} {tb_:>10.4g} {cand:<24} {tc:>10.4g} {tb_ / tc:>8.2f}")

    def once():  # the timed functions, found on small cases of each benchmark
        risk(200), risk(200, full=True), zeta(tb[:10], gb[:10]), pgd(k4[:2], v4[:2])

    figures = [dict(benchmark=name, baseline=base, baseline_seconds=tb_, candidate=cand, candidate_seconds=tc,
                    ratio=tb_ / tc) for name, base, tb_, cand, tc in rows]
    write_record(RECORDS[backend.name], figures, path=options.json, timed=code_that_runs(once),
                 columns=[("benchmark", "benchmark", "{}"), ("baseline", "baseline", "{}"),
                          ("baseline_seconds", "seconds", "{:.4g}"), ("candidate", "candidate", "{}"),
                          ("candidate_seconds", "seconds", "{:.4g}"), ("ratio", "baseline ÷ candidate", "{:.3g}×")],
                 settings=dict(backend=backend.name, d=d, L=L, n=n, zeta_points=1_000_000, pgd_runs=30,
                               pgd_steps=steps, repeats=3))


if __name__ == "__main__":
    main()
