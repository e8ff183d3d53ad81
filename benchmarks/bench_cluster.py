"""A run's tasks serially and on a 2-worker Dask ``LocalCluster`` (``--scheduler local:2``), side by side.

    python benchmarks/bench_cluster.py [--tiny 400] [--seeds 13] [--skip-sweep]

1. Per-task cost of the Dask path: ``--tiny`` tasks that return their argument, serially in this process and on
   ``local:2``; the cluster's start and stop are timed apart (a run with one task).
2. The features a task reads from the run's store folder (what a cluster's workers share instead of scattering
   them through the scheduler): the size of the thorough figure-3 path features and the time to read them.
3. Figure 3's training-seed sweep, the thorough tier's sweep over the cached networks (for each training seed,
   ``one_shot_network`` then ``one_shot_analysis``: path features, saddle points over the temperatures, head
   scores and pruning), as the report's experiment tasks: serially, then on ``local:2``; speed-up and whether the
   stored results are byte-identical.
"""

from __future__ import annotations

import argparse
import os
import pickle
import tempfile
import time
from pathlib import Path

from attnverify.experiments.scheduler import Task, run_tasks
from attnverify.experiments.store import Store
from attnverify.numerics.cache import ENVIRONMENT_VARIABLE as CACHE_VARIABLE
from attnverify.report.builder import experiment_task
from attnverify.theories import BUILTIN


def identity(x: int) -> int:
    return x


def timed_run(tasks: list[Task], scheduler: str | None) -> float:
    start = time.perf_counter()
    outcomes = run_tasks(tasks, scheduler=scheduler)
    failed = [o.error for o in outcomes.values() if o.error is not None]
    if failed:
        raise RuntimeError(failed[0])
    return time.perf_counter() - start


def tiny_tasks(count: int) -> None:
    tasks = [Task(f"identity {k}", identity, {"x": k}) for k in range(count)]
    serial = timed_run(tasks, None)
    start_stop = timed_run(tasks[:1], "local:2")
    dask = timed_run(tasks, "local:2")
    per_task = (dask - start_stop) / (count - 1)
    print(f"1. {count} tiny tasks: serial {serial * 1e3:.1f} ms ({serial / count * 1e6:.0f} µs a task); local:2 "
          f"{dask:.2f} s, of which the cluster's start and stop {start_stop:.2f} s; "
          f"{per_task * 1e3:.2f} ms a task beyond that")


def plans(seeds: int):
    (theory,) = [t for t in BUILTIN if t.name == "attention_paths"]
    chosen = [p for p in theory.planned_experiments(profile="thorough", seed=0, backend="numpy")
              if p.experiment.__name__ in ("one_shot_network", "one_shot_analysis")
              and dict(p.parameters)["training_seed"] < seeds]
    return theory, chosen


def seed_tasks(theory, chosen, store: str) -> list[Task]:
    return [Task(p.label, experiment_task, dict(theory=theory, label=p.label, profile="thorough", backend="numpy",
                                                 seed=0, store=store),
                 after=tuple(a.label for a in p.after if a in chosen)) for p in chosen]


def stored(folder: str) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(Path(folder).glob("*.pickle"))}


def features(theory, chosen) -> None:
    with tempfile.TemporaryDirectory() as folder:
        inputs = next(p for p in chosen if p.experiment.__name__ == "one_shot_network")
        start = time.perf_counter()
        Store(folder).get(inputs.experiment, **dict(inputs.parameters))
        computed = time.perf_counter() - start
        (path,) = Path(folder).glob("*.pickle")
        start = time.perf_counter()
        with open(path, "rb") as handle:
            pickle.load(handle)
        read = time.perf_counter() - start
        print(f"2. one network's figure-3 path features (one_shot_network): {path.stat().st_size / 2**20:.1f} MiB in "
              f"the store folder; computed once in {computed:.2f} s, read back by a task in {read * 1e3:.0f} ms")


def seed_sweep(theory, chosen) -> None:
    seconds, results = {}, {}
    for scheduler in (None, "local:2"):
        with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as cache:
            os.environ[CACHE_VARIABLE] = cache  # cold: the thorough tier keeps its saddle points in the cache folder
            seconds[scheduler] = timed_run(seed_tasks(theory, chosen, folder), scheduler)
            results[scheduler] = stored(folder)
    same = results[None] == results["local:2"]
    print(f"3. figure 3's training-seed features and analyses ({len(chosen) // 2} seeds, thorough): serial "
          f"{seconds[None]:.1f} s, "
          f"local:2 {seconds['local:2']:.1f} s, speed-up {seconds[None] / seconds['local:2']:.2f}x; "
          f"stored results byte-identical: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", type=int, default=400, help="number of tiny tasks (default 400)")
    parser.add_argument("--seeds", type=int, default=13, help="training seeds of the sweep (default 13, all cached)")
    parser.add_argument("--skip-sweep", action="store_true", help="only parts 1 and 2")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs")
    tiny_tasks(args.tiny)
    theory, chosen = plans(args.seeds)
    features(theory, chosen)
    if not args.skip_sweep:
        seed_sweep(theory, chosen)


if __name__ == "__main__":
    main()
