"""What the action's posterior mean costs by each method of ``attnverify.saddle.posterior_mean``.

The case is the how-to's low-rank one (docs/how-to/beyond-saddle.md): the generic attention-path action with heads
(2, 2) (14 coordinates: U₁ 4 × 4, U₂ 2 × 2, U_a) on 40 examples of two tokens of width 2, N = 6, σ² = σ_a² = 0.5,
T = 0.01, where the expansion parameter is ε ≈ 0.49 and the next order misses the networks. Timed: the next order
(``method="laplace"``), and ``method="hmc"`` at its default size (8 chains × 1,000 draws after 500 of warm-up) and at
the size the thorough test uses (8 × 2,500 after 1,000); a run the R̂/ESS gate refuses is kept as refused. Each call
is the public one (its saddle point solved inside), on one thread; the calls take turns ``--repeats`` times and the
least CPU time of each is kept, beside the first turn's (whose first call also generates the action's terms). The
sampler's gradient evaluations (each one evaluation of the action and its gradient for all chains at once) are its
own count.

    python benchmarks/bench_beyond_saddle.py [--repeats 2]

Writes benchmarks/results/beyond_saddle.json (benchmarks/record.py); docs/performance.md shows it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import attnverify.saddle.sampling as sampling
from attnverify.saddle import SaddlePointError, posterior_mean
from attnverify.theories.attention_paths.generic_claims import family
from attnverify.theories.attention_paths.synthetic import synthetic_problem

sys.path.insert(0, str(Path(__file__).parent))
from record import code_that_runs, write_record  # noqa: E402

HEADS = (2, 2)
SETTING = dict(N=6, sigma=0.5, sigma_a=0.5)
TEMPERATURE = 0.01
CASES = (("laplace", None), ("hmc", None), ("hmc", dict(warmup=1000, draws=2500)))


def low_rank_data() -> dict:
    X, y = synthetic_problem(40, heads=HEADS, input_width=2, tokens=2, seed=0)
    return dict(X=X, y=y)


class SamplerRuns:
    """The sampler's own runs (``saddle.sampling.run_sampler``'s results), kept while in a ``with`` block."""

    def __enter__(self):
        self.runs, self.original = [], sampling.run_sampler

        def kept(*args, **kwargs):
            run = self.original(*args, **kwargs)
            self.runs.append(run)
            return run

        sampling.run_sampler = kept
        return self

    def __exit__(self, *exc):
        sampling.run_sampler = self.original


def call(data: dict, method: str, sampler: dict | None, seed: int) -> dict:
    """One public call, timed: CPU and wall seconds, U₁[0, 0] and its error (or the refusal), the sampler's counts."""
    with SamplerRuns() as kept:
        began, cpu = time.perf_counter(), time.process_time()
        try:
            prediction = posterior_mean(family(HEADS), data, temperature=TEMPERATURE, method=method, seed=seed,
                                        sampler=sampler, **SETTING)
            outcome = dict(mean=float(prediction["U1"][0, 0]), error=float(prediction.error["U1"][0, 0]),
                           outcome="mean")
        except SaddlePointError as refused:
            outcome = dict(outcome="refused: " + str(refused).split(":")[1].split("(")[0].strip())
        outcome.update(cpu=time.process_time() - cpu, wall=time.perf_counter() - began)
    if kept.runs:
        run = kept.runs[-1]
        outcome.update(evaluations=int(run.gradient_evaluations), steps=int(run.steps),
                       acceptance=float(np.mean(run.acceptance)))
        outcome["per_evaluation_us"] = 1e6 * outcome["cpu"] / outcome["evaluations"]
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    options = parser.parse_args()
    data = low_rank_data()
    best: dict[int, dict] = {}
    first: dict[int, float] = {}  # each call's first turn
    for repeat in range(options.repeats):
        for index, (method, sampler) in enumerate(CASES):
            figures = call(data, method, sampler, seed=22)
            size = sampler or {}
            label = "–" if method == "laplace" else (f"8 × {size.get('draws', 1000):,} after "
                                                     f"{size.get('warmup', 500):,}")
            print(f"run {repeat + 1}: {method:8s} {label:22s} {figures['cpu']:7.2f} s CPU "
                  f"({figures['wall']:.2f} s wall), {figures['outcome']}"
                  + (f" U1[0,0] = {figures['mean']:.3f} ± {figures['error']:.3f}" if 'mean' in figures else "")
                  + (f", {figures['evaluations']:,} gradient evaluations, {figures['per_evaluation_us']:.0f} µs each"
                     if 'evaluations' in figures else ""), flush=True)
            if index not in best or figures["cpu"] < best[index]["cpu"]:
                best[index] = dict(method=method, sampler=label, **figures)
            first.setdefault(index, figures["cpu"])
    rows = [dict(best[index], first=first[index]) for index in range(len(CASES))]
    laplace = rows[0]["cpu"]
    for row in rows:
        row["ratio"] = row["cpu"] / laplace
    print("\n".join(f"{row['method']:8s} {row['sampler']:22s} {row['cpu']:7.2f} s  ×{row['ratio']:,.0f} the next order"
                    for row in rows))
    timed = code_that_runs(lambda: [call(data, method, sampler, seed=22) for method, sampler in CASES[:2]])
    write_record("beyond_saddle", rows, timed=timed,
                 columns=[("method", "method", "{}"), ("sampler", "chains × draws", "{}"),
                          ("cpu", "CPU seconds", "{:.2f}"), ("first", "first call", "{:.2f}"),
                          ("ratio", "× the next order", "{:,.0f}"),
                          ("outcome", "outcome", "{}"), ("mean", "U₁[0, 0]", "{:.3f}"), ("error", "± error", "{:.3f}"),
                          ("evaluations", "gradient evaluations", "{:,d}"),
                          ("per_evaluation_us", "µs an evaluation (8 chains)", "{:.0f}"),
                          ("acceptance", "acceptance", "{:.2f}")],
                 settings=dict(heads=list(HEADS), examples=40, input_width=2, tokens=2, temperature=TEMPERATURE,
                               repeats=options.repeats, seed=22, **SETTING),
                 notes="one thread; least CPU time of the turns")


if __name__ == "__main__":
    main()
