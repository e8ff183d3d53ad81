"""numpy (all cores) against cupy on the same machine, side by side: what issue 39 asks a lent GPU to show.

    python benchmarks/bench_device.py solve      # attention-path saddle point: P × P kernel space at P = 4,000
                                                 #   and 12,000, feature space at P = 100,000
    python benchmarks/bench_device.py sampler    # collapsed HMC of the 4-path network (figure 2c, N = 10):
                                                 #   ESS/s at 16 / 1,024 / 8,192 chains on each backend
    python benchmarks/bench_device.py network    # the saddle engine's sampled one-hidden-layer network, the same
    python benchmarks/bench_device.py all [--skip-cupy] [--budget SECONDS]

Every row is one run on one backend; the ratio column is numpy's time (or cupy's ESS/s) over the other's. ESS is
the smallest bulk ESS over the recorded quantities (arviz-stats), over the whole run's wall time, warm-up included.
With ≥ 64 chains the sampler runs superchains and ChEES warm-up (``saddle.sampling.run_sampler``), so the chain
counts compare the sampler as each backend would run it. A case that would pass ``--budget`` seconds (estimated
from the case before it) is skipped and named, so one call fits a device session.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from attnverify.base.backend import cupy_works, get_backend
from attnverify.numerics.diagnostics import ess_bulk

BACKENDS = ("numpy", "cupy")
CASES = ((4_000, "kernel"), (12_000, "kernel"), (100_000, "feature"))
"""The solve's cases: P and the space it is solved in (16 paths, N0 = 64: the feature space has 1,024 dimensions)."""


def _synchronise(backend: str) -> None:
    if backend == "cupy":
        import cupy

        cupy.cuda.Device().synchronize()


def solve_rows(backends, budget: float) -> None:
    from attnverify.theories.attention_paths.action import solve_paths
    from attnverify.theories.attention_paths.synthetic import synthetic_problem

    print(f"{'case':<34} {'backend':>8} {'seconds':>9} {'numpy / this':>13} {'max |ΔU| vs numpy':>18}", flush=True)
    last: dict = {}  # backend → (P, seconds) of its last kernel-space solve: the next is estimated as P³
    for P, space in CASES:
        X, y = synthetic_problem(P, heads=(4, 4), input_width=64, tokens=48, readout="average_pooling", seed=1)
        first = None
        for backend in backends:
            if space == "kernel" and backend in last and last[backend][1] * (P / last[backend][0]) ** 3 > budget:
                print(f"{f'P = {P:,}, {space} space':<34} {backend:>8}  skipped: ~"
                      f"{last[backend][1] * (P / last[backend][0]) ** 3:.0f} s by P³ from P = {last[backend][0]:,}")
                continue
            begun = time.perf_counter()
            solution = solve_paths(dict(X=X, y=y), heads=(4, 4), width=100, temperature=0.1, space=space,
                                   backend=backend)
            _synchronise(backend)
            seconds = time.perf_counter() - begun
            U = np.asarray(solution.matrix("U1"))
            first = first or (seconds, U)
            if space == "kernel":
                last[backend] = (P, seconds)
            print(f"{f'P = {P:,}, {space} space':<34} {backend:>8} {seconds:>9.3g} {first[0] / seconds:>13.2f} "
                  f"{float(np.max(np.abs(U - first[1]))):>18.2g}", flush=True)


def sizes(chains: int) -> tuple[int, int]:
    """(warm-up, kept draws) per chain: few long chains, or many short ones (≥ 64: superchains, ChEES)."""
    return (150, 400) if chains < 64 else (150, 25)


def _sampler_row(label: str, backend: str, chains: int, run, baseline: list) -> float:
    begun = time.perf_counter()
    quantities, extra = run(backend, chains)
    _synchronise(backend)
    seconds = time.perf_counter() - begun
    ess = float(np.min(ess_bulk(quantities)))
    rate = ess / seconds
    if not baseline:
        baseline.append(rate)
    print(f"{label:<34} {backend:>8} {chains:>7,} {seconds:>9.3g} {ess:>9.0f} {rate:>9.1f} {rate / baseline[0]:>8.2f}"
          f"  {extra}", flush=True)
    return seconds


def _sweep(label: str, run, backends, budget: float, counts=(16, 1_024, 8_192)) -> None:
    print(f"{'case':<34} {'backend':>8} {'chains':>7} {'seconds':>9} {'ESS':>9} {'ESS/s':>9} {'ratio':>8}", flush=True)
    baseline: list = []
    for backend in backends:
        previous = None
        for chains in counts:
            estimate = None if previous is None else \
                previous[1] * chains * sum(sizes(chains)) / (previous[0] * sum(sizes(previous[0])))
            if backend == "numpy" and estimate is not None and estimate > budget:
                print(f"{label:<34} {backend:>8} {chains:>7,}  skipped: ~{estimate:.0f} s by the count before it")
                continue
            previous = (chains, _sampler_row(label, backend, chains, run, baseline))


def attention_sampler(backends, budget: float) -> None:
    from attnverify.theories.attention_paths.posterior import network_posterior
    from attnverify.theories.attention_paths.sampling import SamplerSettings, sample_posterior
    from attnverify.theories.attention_paths.theory_points import authors_markov_data

    X, y = authors_markov_data()[:2]

    def run(backend, chains):
        warmup, draws = sizes(chains)
        posterior = network_posterior(X, y, heads=(2, 2), width=10, temperature=0.01, backend=backend)
        samples = sample_posterior(posterior, seed=1, settings=SamplerSettings(chains=chains, warmup=warmup,
                                                                               draws=draws))
        U = samples.order_parameter
        i, j = np.triu_indices(U.shape[0])
        return U[i, j], f"warm-up {warmup}, draws {draws}, acceptance {samples.diagnostics()['mean_acceptance']:.2f}"

    _sweep("4-path network, N = 10, T = 0.01", run, backends, budget)


def network_sampler(backends, budget: float) -> None:
    from attnverify.saddle.network import one_hidden_layer, sample_order_parameters

    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 3))
    y = X[:, 0] + 0.3 * rng.standard_normal(30)

    def run(backend, chains):
        warmup, draws = sizes(chains)
        sampled = sample_order_parameters(one_hidden_layer(40, 3, activation="relu"), X, y, temperature=0.1,
                                          seed=1, backend=backend, chains=chains, warmup=warmup, draws=draws)
        return np.asarray(sampled.draws["Q"]), f"warm-up {warmup}, draws {draws}"  # (chains, draws)

    _sweep("one hidden ReLU layer, N = 40", run, backends, budget)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("solve", "sampler", "network", "all"))
    parser.add_argument("--skip-cupy", action="store_true")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds one case may take (estimated)")
    args = parser.parse_args()
    backends = ("numpy",) if args.skip_cupy or not cupy_works() else BACKENDS
    for backend in backends:
        get_backend(backend)
    for part, function in (("solve", solve_rows), ("sampler", attention_sampler), ("network", network_sampler)):
        if args.part in (part, "all"):
            print(f"\n== {part} ==", flush=True)
            function(backends, args.budget)


if __name__ == "__main__":
    main()
