"""Many short chains on one CPU: ChEES against dual averaging, and the nested-R̂ gate's false alarms.

1. ESS per second of :func:`attnverify.numerics.hmc.sample` at 1,024 chains on N(0, diag σ²), σ from 0.5 to 2 in 50
   dimensions, ``adapt="dual_averaging"`` (per-chain step sizes, fixed trajectory π/2) against ``adapt="chees"`` (one
   step size, the trajectory length adapted across chains), the two run alternately ``--repeats`` times; ESS is
   arviz's bulk ESS of x and of x², the least over the dimensions; seconds are the whole run, warm-up included.
2. The false-alarm rate of :meth:`ChainSummary.rhat_converged` with superchains (nested R̂ of the rank-normalised and
   folded draws against :func:`~attnverify.numerics.diagnostics.nested_rhat_limit`, Bonferroni over the two) on
   exact i.i.d. draws, against the α it states.

    python benchmarks/many_chains.py [--chains 1024] [--repeats 3] [--replicates 2000]

Section 1 writes benchmarks/results/many_chains.json, section 2 benchmarks/results/nested_rhat_gate.json
(benchmarks/record.py); docs/performance.md shows them.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from attnverify.numerics.diagnostics import ess_bulk, nested_quantile, summarize
from attnverify.numerics.hmc import sample

sys.path.insert(0, str(Path(__file__).parent))
from record import code_that_runs, write_record  # noqa: E402

SHAPE = (16, 8, 10)
"""The nested gate's draws: K superchains × M chains × N i.i.d. draws."""


def ess_per_second(chains: int, adapt: str, seed: int, warmup: int = 200, draws: int = 100) -> dict:
    sigma = np.linspace(0.5, 2.0, 50)

    def potential_and_gradient(x):
        return 0.5 * np.sum(x * x / sigma**2, axis=1), x / sigma**2

    x0 = np.random.default_rng(seed).normal(size=(chains, sigma.size))
    begun = time.perf_counter()
    values, stats = sample(potential_and_gradient, x0, seed=seed, warmup=warmup, draws=draws, adapt=adapt)
    seconds = time.perf_counter() - begun
    ess, ess_square = float(np.min(ess_bulk(values))), float(np.min(ess_bulk(values**2)))
    return {"seconds": seconds, "ess": ess, "ess_square": ess_square, "steps": int(stats["steps"]),
            "acceptance": float(stats["mean_acceptance"]), "ess_per_second": ess / seconds,
            "ess_square_per_second": ess_square / seconds}


def false_alarms(replicates: int, alpha: float, shape=SHAPE, seed: int = 2027) -> float:
    """The fraction of replicates (K superchains × M chains × N i.i.d. draws, one quantity each) whose nested-R̂ gate
    fails: each replicate's bulk and folded R̂ν against its limit at α/2 (the gate of one entry), vectorised over the
    replicates (one summary whose entries are the replicates)."""
    K, M, N = shape
    summary = summarize(np.random.default_rng(seed).normal(size=(replicates, K * M, N)), K)
    q = nested_quantile(K, M, statistics=2, alpha=alpha)
    failed = ((summary.rhat_nested_bulk > np.sqrt(1 + q * summary.nested_scale_bulk))
              | (summary.rhat_nested_folded > np.sqrt(1 + q * summary.nested_scale_folded)))
    return float(np.mean(failed))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=1024)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--replicates", type=int, default=2000)
    options = parser.parse_args()
    runs = []
    for repeat in range(options.repeats):
        for adapt in ("dual_averaging", "chees"):
            r = ess_per_second(options.chains, adapt, seed=repeat)
            runs.append(dict(adapt=adapt, run=repeat + 1, **r))
            print(f"{adapt:15s} {r['seconds']:.2f} s, {r['steps']} leapfrog steps (longest), acceptance "
                  f"{r['acceptance']:.2f}, min ESS x {r['ess']:.0f} ({r['ess_per_second']:.0f}/s), x² "
                  f"{r['ess_square']:.0f} ({r['ess_square_per_second']:.0f}/s)")

    def both():  # the timed functions, found on fewer chains: the same code runs whatever their number
        for adapt in ("dual_averaging", "chees"):
            ess_per_second(64, adapt, seed=0)

    write_record("many_chains", runs, timed=code_that_runs(both),
                 columns=[("adapt", "warm-up", "{}"), ("run", "run", "{:d}"), ("seconds", "seconds a run", "{:.2f}"),
                          ("steps", "leapfrog steps (longest)", "{:d}"), ("acceptance", "acceptance", "{:.2f}"),
                          ("ess", "min ESS of x", "{:,.0f}"), ("ess_per_second", "ESS/s of x", "{:,.0f}"),
                          ("ess_square", "min ESS of x²", "{:,.0f}"),
                          ("ess_square_per_second", "ESS/s of x²", "{:,.0f}")],
                 settings=dict(chains=options.chains, dimensions=50, warmup=200, draws=100, repeats=options.repeats))
    gates = []
    for alpha in (0.05, 0.01):
        rate = false_alarms(options.replicates, alpha)
        gates.append(dict(alpha=alpha, replicates=options.replicates, false_alarms=rate,
                          standard_error=float(np.sqrt(rate * (1 - rate) / options.replicates))))
        print(f"nested gate, 16 superchains × 8 chains × 10 i.i.d. draws: false alarms {rate:.4f} at stated α = {alpha}")
    write_record("nested_rhat_gate", gates, timed=code_that_runs(lambda: false_alarms(20, 0.05)),
                 columns=[("alpha", "stated α", "{:g}"), ("replicates", "replicates", "{:,d}"),
                          ("false_alarms", "false alarms", "{:.4f}"), ("standard_error", "standard error", "{:.4f}")],
                 settings=dict(superchains=SHAPE[0], chains_per_superchain=SHAPE[1], draws=SHAPE[2], seed=2027))


if __name__ == "__main__":
    main()
