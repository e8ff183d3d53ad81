"""Many short chains on one CPU: ChEES against dual averaging, and the nested-R̂ gate's false alarms.

1. ESS per second of :func:`attnverify.numerics.hmc.sample` at 1,024 chains on N(0, diag σ²), σ from 0.5 to 2 in 50
   dimensions, ``adapt="dual_averaging"`` (per-chain step sizes, fixed trajectory π/2) against ``adapt="chees"`` (one
   step size, the trajectory length adapted across chains), the two run alternately ``--repeats`` times; ESS is
   arviz's bulk ESS of x and of x², the least over the dimensions; seconds are the whole run, warm-up included.
2. The false-alarm rate of :meth:`ChainSummary.rhat_converged` with superchains (nested R̂ of the rank-normalised and
   folded draws against :func:`~attnverify.numerics.diagnostics.nested_rhat_limit`, Bonferroni over the two) on
   exact i.i.d. draws, against the α it states.

    python benchmarks/many_chains.py [--chains 1024] [--repeats 3] [--replicates 2000]

Measured (2026-11-27, this repository's 2-core VM otherwise idle, numpy, ``--repeats 3``; ChEES's step size
dual-averaged on the harmonic mean of the chains' acceptance): dual averaging 0.54–0.62 s a run, 4 leapfrog steps,
min ESS of x 20,300–22,000 (35,500–40,500/s), of x² 2,800–3,000 (4,500–5,500/s); ChEES 0.67–0.76 s, at most 8 steps,
min ESS of x 38,400–40,200 (50,200–57,400/s), of x² 37,200–38,100 (49,900–55,200/s): 1.4–1.5× the ESS/s of the means
and ~10× that of the second moments. Nested gate on 16 × 8 × 10 i.i.d. draws: false alarms 0.0517 at α = 0.05 and
0.0103 at α = 0.01 (4,000 replicates, standard errors 0.0035 and 0.0016; 0.0475 and 0.0075 at 400 replicates).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from attnverify.numerics.diagnostics import ess_bulk, nested_quantile, summarize
from attnverify.numerics.hmc import sample


def ess_per_second(chains: int, adapt: str, seed: int, warmup: int = 200, draws: int = 100) -> dict:
    sigma = np.linspace(0.5, 2.0, 50)

    def potential_and_gradient(x):
        return 0.5 * np.sum(x * x / sigma**2, axis=1), x / sigma**2

    x0 = np.random.default_rng(seed).normal(size=(chains, sigma.size))
    begun = time.perf_counter()
    values, stats = sample(potential_and_gradient, x0, seed=seed, warmup=warmup, draws=draws, adapt=adapt)
    seconds = time.perf_counter() - begun
    ess, ess_square = float(np.min(ess_bulk(values))), float(np.min(ess_bulk(values**2)))
    return {"seconds": seconds, "ess": ess, "ess_square": ess_square, "steps": stats["steps"],
            "acceptance": stats["mean_acceptance"], "ess_per_second": ess / seconds,
            "ess_square_per_second": ess_square / seconds}


def false_alarms(replicates: int, alpha: float, shape=(16, 8, 10), seed: int = 2027) -> float:
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
    for repeat in range(options.repeats):
        for adapt in ("dual_averaging", "chees"):
            r = ess_per_second(options.chains, adapt, seed=repeat)
            print(f"{adapt:15s} {r['seconds']:.2f} s, {r['steps']} leapfrog steps (longest), acceptance "
                  f"{r['acceptance']:.2f}, min ESS x {r['ess']:.0f} ({r['ess_per_second']:.0f}/s), x² "
                  f"{r['ess_square']:.0f} ({r['ess_square_per_second']:.0f}/s)")
    for alpha in (0.05, 0.01):
        rate = false_alarms(options.replicates, alpha)
        print(f"nested gate, 16 superchains × 8 chains × 10 i.i.d. draws: false alarms {rate:.4f} at stated α = {alpha}")


if __name__ == "__main__":
    main()
