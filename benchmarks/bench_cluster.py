"""A run's tasks serially and on a 2-worker Dask ``LocalCluster`` (``--scheduler local:2``), side by side.

    python benchmarks/bench_cluster.py [--tiny 2000] [--seeds 13] [--repeats 2] [--ceiling-seeds 4] [--skip-sweep]
                                       [--sampling] [--claim NAME] [--claim-examples 24]

0. The ceiling: part 3's first ``--ceiling-seeds`` seeds in one process alone, then in two processes at once; twice
   the first time over the second is the most any 2-worker run can gain on this machine.
1. Per-task cost of the Dask path: tasks that return their argument, serially in this process, and on ``local:2``
   ``--tiny`` / 10 and ``--tiny`` of them: the difference per task is the cost of a task beyond the cluster's
   start and stop.
2. The features a task reads from the run's store folder (what a cluster's workers share instead of scattering
   them through the scheduler): the size of the thorough figure-3 path features and the time to read them.
3. Figure 3's training-seed sweep, the thorough tier's sweep over the cached networks (for each training seed,
   ``one_shot_network`` then ``one_shot_analysis``: path features, saddle points over the temperatures, head
   scores and pruning), as the report's experiment tasks: serially with 1 BLAS thread, serially with one BLAS
   thread per CPU, and on ``local:2`` (one thread per worker); speed-ups, and whether the stored results are the
   same (timings aside): bit for bit at equal BLAS thread counts; a different count changes the order of BLAS
   sums, hence the last bits. Each run is a new process (imports and planning before the clock starts, as in a
   command); the runs take turns, ``--repeats`` times; the fastest of each is compared, and serial against
   local:2 turn by turn (the two back to back).
4. One thorough claim's hypothesis examples (``--claim``, ``--claim-examples``), checked serially and as batches
   on ``local:2`` (as ``attnverify check --scheduler local:2`` runs them): speed-up, and the same result.
5. Figure 3's sampled networks (``--sampling``; about 30 minutes), the thorough tier's longest tasks: the
   posterior at N = 10 sampled as ``one_shot.CHAIN_GROUPS`` chain groups (one task each, each sampling on one
   core) and pooled, serially and on ``local:2``, with their prerequisites (the first network's features and
   the width sweep) computed once beforehand and copied into each run's store; a cold cache, so every run
   samples; the same comparison of results.
"""

from __future__ import annotations

import argparse
import os
import pickle
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from attnverify.execution.scheduler import Task, run_tasks
from attnverify.execution.settings import RunSettings
from attnverify.execution.store import Store
from attnverify.base import blas
from attnverify.base.cache import ENVIRONMENT_VARIABLE as CACHE_VARIABLE
from attnverify.run.report import experiment_task
from attnverify.theories import builtin, builtin_theory


def identity(x: int) -> int:
    return x


def timed_run(tasks: list[Task], scheduler: str | None, workers: int = 1) -> float:
    start = time.perf_counter()
    outcomes = run_tasks(tasks, scheduler=scheduler, workers=workers)
    failed = [o.error for o in outcomes.values() if o.error is not None]
    if failed:
        raise RuntimeError(failed[0])
    return time.perf_counter() - start


def tiny_tasks(count: int) -> None:
    few = [Task(f"identity {k}", identity, {"x": k}) for k in range(count // 10)]
    many = [Task(f"identity {k}", identity, {"x": k}) for k in range(count)]
    serial = timed_run(many, None)
    short, long = timed_run(few, "local:2"), timed_run(many, "local:2")
    per_task = (long - short) / (len(many) - len(few))
    print(f"1. tiny tasks: serial {serial / count * 1e6:.0f} µs a task; local:2 {len(few)} tasks {short:.2f} s and "
          f"{count} tasks {long:.2f} s (each run starts and stops its cluster): {per_task * 1e3:.2f} ms a task")


def plans(seeds: int):
    theory = builtin_theory("attention_paths")
    chosen = [p for p in theory.plan_experiments(profile="thorough", seed=0, backend="numpy")
              if p.experiment.__name__ in ("one_shot_network", "one_shot_analysis")
              and dict(p.parameters)["training_seed"] < seeds]
    return theory, chosen


def seed_tasks(theory, chosen, store: str) -> list[Task]:
    return [Task(p.label, experiment_task, dict(theory=theory, label=p.label,
                                                 settings=RunSettings(profile="thorough", store=store)),
                 after=tuple(a.label for a in p.after if a in chosen)) for p in chosen]


def stored(folder: str) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(Path(folder).glob("*.pickle"))}


def features(theory, chosen) -> None:
    with tempfile.TemporaryDirectory() as folder:
        inputs = next(p for p in chosen if p.experiment.__name__ == "one_shot_network")
        start = time.perf_counter()
        Store(folder).result(inputs)
        computed = time.perf_counter() - start
        (path,) = Path(folder).glob("*.pickle")
        start = time.perf_counter()
        with open(path, "rb") as handle:
            pickle.load(handle)
        read = time.perf_counter() - start
        print(f"2. one network's figure-3 path features (one_shot_network): {path.stat().st_size / 2**20:.1f} MiB in "
              f"the store folder; computed once in {computed:.2f} s, read back by a task in {read * 1e3:.0f} ms")


def _differences(a, b, path: str = "") -> tuple[list[str], float]:
    """The fields (timings aside) where ``a`` and ``b`` differ, and the largest relative difference of floats."""
    if type(a) is not type(b):
        return [path], float("inf")
    if hasattr(a, "__dataclass_fields__"):
        a, b = vars(a), vars(b)
    if isinstance(a, dict):
        found, worst = [], 0.0
        for key in a:
            if "seconds" not in str(key):
                more, largest = _differences(a[key], b.get(key), f"{path}.{key}")
                found, worst = found + more, max(worst, largest)
        return found, worst
    if isinstance(a, (list, tuple)) and len(a) == len(b):
        results = [_differences(x, y, f"{path}[{k}]") for k, (x, y) in enumerate(zip(a, b))]
        return [p for r in results for p in r[0]], max([r[1] for r in results], default=0.0)
    if isinstance(a, np.ndarray) or isinstance(a, float):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return [path], float("inf")
        if np.array_equal(a, b, equal_nan=True):
            return [], 0.0
        if a.dtype.kind != "f":
            return [path], float("inf")
        scale = np.maximum(np.abs(a), np.abs(b))
        return [path], float(np.nanmax(np.abs(a - b) / np.where(scale > 0, scale, 1.0)))
    return ([], 0.0) if a == b else ([path], float("inf"))


def compared(first: dict[str, bytes], second: dict[str, bytes]) -> str:
    if first.keys() != second.keys():
        return "different experiments"
    found, worst = [], 0.0
    for key in first:
        more, largest = _differences(pickle.loads(first[key]), pickle.loads(second[key]))
        found, worst = found + more, max(worst, largest)
    return "identical" if not found else f"{len(found)} fields differ, at most {worst:.1e} relative"


def timed_sweep(theory, chosen, scheduler: str | None = None, threads: int | None = 1, workers: int = 1,
                start_from: str | None = None) -> tuple[float, dict[str, bytes]]:
    """The tasks of the plans ``chosen`` with a fresh store (a copy of the store folder ``start_from``, if given)
    and a cold cache (the thorough tier keeps its saddle points and sampled networks there), ``threads`` BLAS
    threads here (None: one per CPU): the seconds, and the stored results."""
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as cache:
        if start_from is not None:
            shutil.copytree(start_from, folder, dirs_exist_ok=True)
        os.environ[CACHE_VARIABLE] = cache
        with blas.threads(threads):
            seconds = timed_run(seed_tasks(theory, chosen, folder), scheduler, workers)
        return seconds, stored(folder)


def _sweep_in_process(seeds: int) -> float:
    return timed_sweep(*plans(seeds))[0]


def two_side_by_side(seeds: int, repeats: int) -> None:
    """The machine's ceiling for two workers: the first ``seeds`` seeds' tasks in one process alone, then in two
    processes at once (each its own store and cache). Two cores that share caches, memory bandwidth and a
    hypervisor run two such processes at less than twice the throughput of one; no scheduler can beat that."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=context) as pool:
        list(pool.map(plans, [1, 1]))  # both processes import the package before the clock starts
        alone, pairs = [], []
        for _ in range(repeats):  # taking turns, as in part 3
            alone.append(pool.submit(_sweep_in_process, seeds).result())
            pairs.append(max(f.result() for f in [pool.submit(_sweep_in_process, seeds) for _ in range(2)]))
    print(f"0. two processes side by side ({seeds} seeds of part 3 each; fastest of {repeats}): alone {min(alone):.1f} s "
          f"({', '.join(f'{t:.1f}' for t in alone)}), two at once {min(pairs):.1f} s (the slower of the two: "
          f"{', '.join(f'{t:.1f}' for t in pairs)}): the ceiling of a 2-worker speed-up on this machine is "
          f"{2 * min(alone) / min(pairs):.2f}x")


def in_new_process(name: str, *arguments):
    """``name(*arguments)`` (a function of this module) in a new Python process, as a command runs: the package
    imported and the run planned there before the clock starts. (In this process, a serial run would find what
    earlier runs left warm, and a later run's client would collect a heap that earlier runs filled.)"""
    import subprocess
    import sys

    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "run.pickle"
        subprocess.run([sys.executable, __file__, "--one-run", repr((name, *arguments)), str(out)], check=True)
        return pickle.loads(out.read_bytes())


def _one_run(call: str, out: str) -> None:
    import ast

    name, *arguments = ast.literal_eval(call)
    Path(out).write_bytes(pickle.dumps(globals()[name](*arguments)))


def planned_sweep(seeds: int, scheduler: str | None, threads: int | None,
                  workers: int) -> tuple[float, dict[str, bytes]]:
    """:func:`timed_sweep` of the first ``seeds`` seeds' tasks."""
    return timed_sweep(*plans(seeds), scheduler, threads, workers)


def seed_sweep(seeds: int, repeats: int) -> None:
    """Each run ``repeats`` times, each in a new process, the runs taking turns (this VM's speed drifts by ±10 %
    over minutes): the fastest of each, and every time."""
    seconds, results = {}, {}
    runs = {"serial, 1 BLAS thread": (None, 1, 1), "local:2 (1 BLAS thread each)": ("local:2", None, 1),
            f"serial, {os.cpu_count()} BLAS threads": (None, None, 1),
            "2 local processes (--workers 2)": (None, None, 2)}
    for _ in range(repeats):
        for name, (scheduler, threads, workers) in runs.items():
            took, results[name] = in_new_process("planned_sweep", seeds, scheduler, threads, workers)
            seconds.setdefault(name, []).append(took)
    serial, dask = list(runs)[:2]  # run one after the other in each turn: their ratio sees the same minute
    print(f"3. figure 3's training-seed features and analyses ({seeds} seeds, thorough, cold cache; each run in a "
          f"new process; fastest of {repeats}):")
    for name in runs:
        every = ", ".join(f"{t:.1f}" for t in seconds[name])
        print(f"   {name:<32} {min(seconds[name]):7.1f} s ({every})   speed-up of local:2 "
              f"{min(seconds[name]) / min(seconds[dask]):.2f}x   results (timings aside) vs local:2: "
              f"{compared(results[name], results[dask])}")
    turns = ", ".join(f"{a / b:.2f}x" for a, b in zip(seconds[serial], seconds[dask]))
    print(f"   speed-up of local:2 over serial (1 BLAS thread) turn by turn, the two runs back to back: {turns}")


def _sampling_plans(theory) -> tuple[list, list]:
    plans = theory.plan_experiments(profile="thorough", seed=0, backend="numpy")
    (sampled,) = [p for p in plans if p.experiment.__name__ == "one_shot_sampled_networks"]
    chosen = [p for p in plans if p.experiment.__name__ == "one_shot_chain_group"] + [sampled]
    return chosen, [p for p in sampled.after if p not in chosen]


def timed_sampling(ready: str, scheduler: str | None) -> tuple[float, dict[str, bytes]]:
    """:func:`timed_sweep` of the chain groups and their pooling, from the store folder ``ready``."""
    theory, _ = plans(1)
    return timed_sweep(theory, _sampling_plans(theory)[0], scheduler, start_from=ready)


def sampled_networks(theory) -> None:
    """Part 5: the sampled one-shot networks' chain groups and their pooling, serially and on local:2."""
    chosen, prerequisites = _sampling_plans(theory)
    seconds, results = {}, {}
    with tempfile.TemporaryDirectory() as ready, tempfile.TemporaryDirectory() as cache:
        os.environ[CACHE_VARIABLE] = cache  # the width sweep's saddle points, kept apart from the timed runs'
        with blas.threads(1):
            start = time.perf_counter()
            for plan in prerequisites:
                Store(ready).result(plan)
        print(f"5. figure 3's sampled networks (thorough; {len(chosen) - 1} chain groups, then pooled; each run in a "
              f"new process); prerequisites {', '.join(p.experiment.__name__ for p in prerequisites)} computed once "
              f"in {time.perf_counter() - start:.0f} s:")
        for name, scheduler in (("serial, 1 BLAS thread", None), ("local:2 (1 BLAS thread each)", "local:2")):
            seconds[name], results[name] = in_new_process("timed_sampling", ready, scheduler)
    dask = list(seconds)[-1]
    for name in seconds:
        print(f"   {name:<32} {seconds[name]:7.1f} s   speed-up of local:2 {seconds[name] / seconds[dask]:.2f}x   "
              f"results (timings aside) vs local:2: {compared(results[name], results[dask])}")


def claim_sweep(name: str, examples: int) -> None:
    """One thorough claim's hypothesis examples: serially, then as batches on local:2 (what ``check`` runs)."""
    from attnverify.run.claims import run_claims_as_tasks

    (theory,) = [t for t in builtin() if name.startswith(t.name + ".")]
    claim = theory.claim_named(name)
    seconds, results = {}, {}
    for scheduler in (None, "local:2"):
        start = time.perf_counter()
        settings = RunSettings(profile="thorough", examples=examples, scheduler=scheduler)
        (results[scheduler],) = run_claims_as_tasks([claim], [theory], settings)
        seconds[scheduler] = time.perf_counter() - start
    same = _differences(*(json_without_seconds(results[s]) for s in (None, "local:2")))[0] == []
    work = {s: sum(e["seconds"] for e in results[s]["examples"]) for s in (None, "local:2")}
    print(f"4. {name}, {examples} examples (thorough; {min(examples, 8)} batches): serial {seconds[None]:.1f} s, "
          f"local:2 {seconds['local:2']:.1f} s, speed-up {seconds[None] / seconds['local:2']:.2f}x; "
          f"status {results[None]['status']} / {results['local:2']['status']}; results (timings aside) identical: {same}; "
          f"the examples took {work[None]:.1f} s in one process and {work['local:2']:.1f} s in all on the 2 workers "
          f"(two at once run slower: part 0)")


def json_without_seconds(result: dict) -> dict:
    return {k: v for k, v in result.items() if k != "seconds"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", type=int, default=2000, help="number of tiny tasks (default 2000)")
    parser.add_argument("--seeds", type=int, default=13, help="training seeds of the sweep (default 13, all cached)")
    parser.add_argument("--skip-sweep", action="store_true", help="only parts 1, 2 and 4")
    parser.add_argument("--repeats", type=int, default=2, help="times each run of part 3 is timed (default 2)")
    parser.add_argument("--ceiling-seeds", type=int, default=4, help="seeds of part 0 (default 4; 0 skips it)")
    parser.add_argument("--sampling", action="store_true", help="part 5, figure 3's sampled networks (~30 min)")
    parser.add_argument("--claim", default="single_location.closed_form_risk", help="the claim of part 4")
    parser.add_argument("--claim-examples", type=int, default=24, help="its number of examples (default 24)")
    parser.add_argument("--one-run", nargs=2, help=argparse.SUPPRESS)  # in_new_process's child
    args = parser.parse_args()
    if args.one_run:
        return _one_run(*args.one_run)
    print(f"{os.cpu_count()} CPUs")
    if args.ceiling_seeds:
        two_side_by_side(args.ceiling_seeds, args.repeats)
    tiny_tasks(args.tiny)
    theory, chosen = plans(args.seeds)
    features(theory, chosen)
    if not args.skip_sweep:
        seed_sweep(args.seeds, args.repeats)
    claim_sweep(args.claim, args.claim_examples)
    if args.sampling:
        sampled_networks(theory)


if __name__ == "__main__":
    main()
