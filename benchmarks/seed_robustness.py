"""Seed robustness (issue 27, part 6): the built-in claims under fresh run seeds, and the quick test tier under fresh
seed offsets, counted side by side.

A claim or a test whose outcome flips with the seed has a tolerance or power problem: every stochastic check states
its false-alarm probability, so over S runs the expected number of unexpected outcomes is about S times that
probability (≤ 10⁻³ for each sampler gate, ~10⁻⁶ for a 5-SE comparison), and anything more is a finding.

Claims: each built-in claim (``theories.builtin_claims()``) is run by ``checks.runner.run_claim`` with profile
quick under run seeds 1…N (seed 0 is the default run); per (claim, seed) the status and, for the Monte Carlo
equalities, the largest |theory − observed|/SE are recorded. A claim whose first run takes longer than ``--budget``
seconds runs under that seed only. Rows stream into a JSON-lines file, so an interrupted sweep resumes.

Tests: ``pytest -q -m "not thorough" -n auto`` in a subprocess per offset 1…M of ``ATTNVERIFY_TEST_SEED_OFFSET``
(``tests/seeds.py``); the table gives passed, failed and which.

    python benchmarks/seed_robustness.py [--seeds 20] [--offsets 10] [--only PATTERN] [--budget 120]
                                         [--skip-claims | --skip-tests] [--workers auto] [--tests PATH ...]
                                         [--out FILE]

A benchmark, not a test: the whole of it takes hours on two cores (20 quick runs of every claim, 10 test tiers).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OFFSET_VARIABLE = "ATTNVERIFY_TEST_SEED_OFFSET"


def _examples(result: dict) -> list[dict]:
    shown = list(result.get("examples") or []) + ([result["counterexample"]] if result.get("counterexample") else [])
    return [e["evidence"] for e in shown if (e.get("evidence") or {}).get("standard_error")]


def worst_z(result: dict) -> float | None:
    """max |θ − o|/SE over the stochastic equalities (relation "equal" with a standard error)."""
    values = [abs(e["theory"] - e["observed"]) / e["standard_error"] for e in _examples(result)
              if e.get("relation") == "equal" and e.get("theory") is not None and e.get("observed") is not None]
    return max(values) if values else None


def run_claims(args) -> list[dict]:
    from attnverify import theories
    from attnverify.checks.claim import select
    from attnverify.checks.runner import run_claim
    from attnverify.execution import Store

    claims = select(theories.builtin_claims(), args.only)
    out = Path(args.out)
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    done = {(r["name"], r["seed"]) for r in rows}
    slow = {r["name"] for r in rows if r.get("slow")}
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    with out.open("a", encoding="utf-8") as handle:
        for seed in seeds:
            store = Store()  # the claims of one seed share its experiments, as one run of `attnverify check` does
            for claim in claims:
                if (claim.name, seed) in done or claim.name in slow:
                    continue
                start = time.perf_counter()
                try:
                    result = run_claim(claim, profile="quick", backend="numpy", seed=seed, store=store).as_dict()
                except Exception as error:  # noqa: BLE001 - a crash is an outcome to count, not a reason to stop
                    result = {"status": "error", "ok": False, "examples": [], "counterexample": None,
                              "error": f"{type(error).__name__}: {error}"}
                seconds = time.perf_counter() - start
                row = {"name": claim.name, "seed": seed, "expect": claim.expect, "status": result["status"],
                       "ok": bool(result["ok"]), "worst_z": worst_z(result), "seconds": round(seconds, 2),
                       "slow": seconds > args.budget}
                if not row["ok"]:
                    row["detail"] = json.dumps(result.get("error") or (result.get("counterexample") or {}).get(
                        "evidence") or result.get("needed"))[:2000]
                if row["slow"]:
                    slow.add(claim.name)
                handle.write(json.dumps(row) + "\n")
                handle.flush()
                rows.append(row)
                z = "" if row["worst_z"] is None else f", |z|max {row['worst_z']:.2f}"
                print(f"seed {seed:3d} {claim.name}: {row['status']} ({'as expected' if row['ok'] else 'UNEXPECTED'}"
                      f"{z}, {seconds:.1f} s{', over the budget: this seed only' if row['slow'] else ''})", flush=True)
    return [r for r in rows if r["seed"] in seeds and any(r["name"] == c.name for c in claims)]


def claims_table(rows: list[dict]) -> tuple[int, int]:
    names = list(dict.fromkeys(r["name"] for r in rows))
    print(f"\n{'claim':62s} {'expect':12s} runs holds refuted inconcl. error unexpected worst|z| seconds")
    for name in names:
        mine = [r for r in rows if r["name"] == name]
        count = {s: sum(r["status"] == s for r in mine) for s in ("holds", "refuted", "inconclusive", "error")}
        zs = [r["worst_z"] for r in mine if r.get("worst_z") is not None]
        print(f"{name:62s} {mine[0].get('expect', ''):12s} {len(mine):4d} {count['holds']:5d} {count['refuted']:7d} "
              f"{count['inconclusive']:8d} {count['error']:5d} {sum(not r['ok'] for r in mine):10d} "
              f"{max(zs) if zs else math.nan:8.2f} {sum(r['seconds'] for r in mine):7.0f}")
    for r in rows:
        if not r["ok"]:
            print(f"  unexpected: {r['name']} seed {r['seed']}: {r['status']} ({r.get('detail', '')[:300]})")
    return len(rows), sum(not r["ok"] for r in rows)


def run_tests(args) -> list[dict]:
    """The quick tier once per offset, in a subprocess with the offset in its environment."""
    rows = []
    for offset in range(args.first_offset, args.first_offset + args.offsets):
        command = [sys.executable, "-m", "pytest", "-q", "-m", "not thorough", "-p", "no:cacheprovider"]
        if args.workers != "0":
            command += ["-n", args.workers]
        command += args.tests
        start = time.perf_counter()
        done = subprocess.run(command, cwd=ROOT, env=os.environ | {OFFSET_VARIABLE: str(offset)},
                              capture_output=True, text=True)
        output = done.stdout + done.stderr
        counts = {key: int(n) for n, key in re.findall(r"(\d+) (passed|failed|errors?|skipped)", output.splitlines()[-1]
                                                         if output.strip() else "")}
        which = [line.split(" - ")[0].split(" ", 1)[1] for line in output.splitlines()
                 if line.startswith(("FAILED ", "ERROR "))]
        row = {"offset": offset, "passed": counts.get("passed", 0),
               "failed": counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0),
               "which": which, "exit": done.returncode, "seconds": round(time.perf_counter() - start)}
        rows.append(row)
        print(f"offset {offset:3d}: {row['passed']} passed, {row['failed']} failed, exit {row['exit']} "
              f"({row['seconds']} s){'' if not which else ': ' + ', '.join(which)}", flush=True)
    return rows


def tests_table(rows: list[dict]) -> tuple[int, int]:
    print(f"\n{OFFSET_VARIABLE:>28s}  passed  failed  which")
    for r in rows:
        print(f"{r['offset']:28d}  {r['passed']:6d}  {r['failed']:6d}  {', '.join(r['which']) or '-'}")
    return len(rows), sum(r["failed"] > 0 or r["exit"] != 0 for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="fresh run seeds per claim (default 20)")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--only", default=None, help="claims whose name contains this")
    parser.add_argument("--budget", type=float, default=math.inf,
                        help="seconds: a claim whose first run takes longer runs under that seed only")
    parser.add_argument("--offsets", type=int, default=10, help="seed offsets of the quick test tier (default 10)")
    parser.add_argument("--first-offset", type=int, default=1)
    parser.add_argument("--workers", default="auto", help="pytest-xdist workers (0: none)")
    parser.add_argument("--tests", nargs="*", default=[], help="test paths (default: the whole quick tier)")
    parser.add_argument("--skip-claims", action="store_true")
    parser.add_argument("--skip-tests", action="store_true")
    parser.add_argument("--out", default="seed_robustness.jsonl", help="claim rows (JSON lines; a rerun resumes)")
    args = parser.parse_args()

    claim_counts = test_counts = None
    if not args.skip_claims:
        claim_counts = claims_table(run_claims(args))
    if not args.skip_tests:
        test_counts = tests_table(run_tests(args))
    print()
    if claim_counts:
        print(f"claims: {claim_counts[1]} unexpected of {claim_counts[0]} runs (run seeds {args.first_seed}–"
              f"{args.first_seed + args.seeds - 1})", end="   |   " if test_counts else "\n")
    if test_counts:
        print(f"tests: {test_counts[1]} of {test_counts[0]} offsets with a failure (offsets {args.first_offset}–"
              f"{args.first_offset + args.offsets - 1})")


if __name__ == "__main__":
    main()
