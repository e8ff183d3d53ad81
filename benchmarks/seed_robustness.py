"""Seed robustness of the quick tier: run claims under fresh run seeds and count unexpected outcomes.

A claim whose verdict flips with the seed has a tolerance or power problem. For each (claim, seed)
this records the status and the largest |z| = |theory − observed| / SE over the examples that carry
a standard error (the Monte Carlo ones). Results stream into a JSON-lines file, so an interrupted
sweep resumes where it stopped.

    python benchmarks/seed_robustness.py --seeds 1-20 [--only PATTERN] [--skip PATTERN ...] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from attnverify.checks import catalogue
from attnverify.checks.runner import select
from attnverify.numerics.backend import get_backend
from attnverify.report.results import run_claim_or_error


def _examples(result: dict) -> list[dict]:
    shown = result["examples"] + ([result["counterexample"]] if result["counterexample"] else [])
    return [e["evidence"] for e in shown if e.get("evidence") and e["evidence"].get("standard_error")]


def worst_z(result: dict) -> float | None:
    """max |θ − o| / SE over the stochastic equalities (relation "equal" with a standard error)."""
    values = [abs(e["theory"] - e["observed"]) / e["standard_error"] for e in _examples(result) if e["relation"] == "equal"]
    return max(values) if values else None


def smallest_margin(result: dict) -> float | None:
    """min over the one-sided stochastic examples of how far (in SE) the observed side lies on the
    claimed side: (o − θ)/SE for "above", (θ − o)/SE for "below" and "at_most" (θ ≤ o: (o − θ)/SE)."""
    values = []
    for e in _examples(result):
        if e["relation"] in ("above", "at_most"):
            values.append((e["observed"] - e["theory"]) / e["standard_error"])
        elif e["relation"] == "below":
            values.append((e["theory"] - e["observed"]) / e["standard_error"])
    return min(values) if values else None


def seeds(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=seeds, default=seeds("1-20"))
    parser.add_argument("--only", default=None)
    parser.add_argument("--skip", nargs="*", default=[])
    parser.add_argument("--out", default="seed_robustness.jsonl")
    args = parser.parse_args()

    claims = [c for c in select(catalogue.builtin_claims(), args.only) if not any(s in c.name for s in args.skip)]
    out = Path(args.out)
    done = set()
    if out.exists():
        done = {(r["name"], r["seed"]) for r in map(json.loads, out.read_text().splitlines())}
    backend = get_backend("numpy")
    with out.open("a", encoding="utf-8") as handle:
        for claim in claims:
            for seed in args.seeds:
                if (claim.name, seed) in done:
                    continue
                start = time.perf_counter()
                result = run_claim_or_error(claim, profile="quick", backend=backend, seed=seed).as_dict()
                row = {"name": claim.name, "seed": seed, "status": result["status"], "ok": result["ok"],
                       "worst_z": worst_z(result), "margin": smallest_margin(result), "seconds": round(time.perf_counter() - start, 2)}
                if not result["ok"]:
                    row["detail"] = (result["counterexample"] or {}).get("error") or \
                        json.dumps((result["counterexample"] or {}).get("evidence"))[:2000]
                handle.write(json.dumps(row) + "\n")
                handle.flush()
                print(f"{claim.name} seed {seed}: {row['status']} {'OK' if row['ok'] else 'UNEXPECTED'} "
                      f"|z|max {row['worst_z'] if row['worst_z'] is None else round(row['worst_z'], 2)} "
                      f"({row['seconds']} s)", flush=True)
    summarise(out)


def summarise(path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    names = list(dict.fromkeys(r["name"] for r in rows))
    print(f"\n{'claim':60s} runs unexpected  worst|z|  min margin  seconds")
    for name in names:
        mine = [r for r in rows if r["name"] == name]
        zs = [r["worst_z"] for r in mine if r.get("worst_z") is not None]
        margins = [r["margin"] for r in mine if r.get("margin") is not None]
        print(f"{name:60s} {len(mine):4d} {sum(not r['ok'] for r in mine):10d}  "
              f"{max(zs) if zs else math.nan:8.2f}  {min(margins) if margins else math.nan:10.2f}  "
              f"{sum(r['seconds'] for r in mine):7.1f}")
    print(f"total: {len(rows)} runs, {sum(not r['ok'] for r in rows)} unexpected")


if __name__ == "__main__":
    main()
