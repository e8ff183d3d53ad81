"""Run a run's tasks (report sections, claims, experiments) serially or on local worker processes.

A :class:`Task` names a module-level function (so that a worker process can import it), its keyword
arguments and the tasks it must wait for. :func:`run_tasks` starts each task once its prerequisites are done:
in the order given in this process when ``workers`` is 1; on ``workers`` processes (``spawn``ed, each with
``cpu_count // workers`` BLAS threads) longest chain of waiting tasks first (:func:`by_priority`). A task's
result depends only on its arguments (seeds come from the run's seed and the task's identity), so the results
do not depend on ``workers`` or on the order of completion.

Inside a task, :func:`progress` sends one status line to the run's progress display, from a worker too.
"""

from __future__ import annotations

import heapq
import itertools
import multiprocessing
import os
import threading
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable

from ..base import blas
from ..base.arguments import integer

_say: Callable[[str], None] | None = None  # where progress() goes: the serial run's display, or a worker's queue


def progress(message: str) -> None:
    """One status line from inside a task to the run's progress display (ignored outside a run)."""
    if _say is not None:
        _say(str(message))


@dataclass(frozen=True)
class Task:
    """``function(**arguments)`` under ``name``, started after every task named in ``after``. The outcomes of
    the tasks named in ``inputs`` (which it also waits for) are given to it as ``inputs={name: Outcome}``."""

    name: str
    function: Callable[..., Any]
    arguments: dict = field(default_factory=dict)
    after: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "after", tuple(self.after) + tuple(n for n in self.inputs if n not in self.after))

    def call_arguments(self, outcomes: dict[str, "Outcome"]) -> dict:
        """The keyword arguments of the call: ``arguments``, and ``inputs`` from the finished ``outcomes``."""
        if not self.inputs:
            return self.arguments
        return {**self.arguments, "inputs": {name: outcomes[name] for name in self.inputs}}


@dataclass(frozen=True)
class Outcome:
    """A finished task: its result, or the traceback of what it raised (``error``)."""

    name: str
    result: Any = None
    error: str | None = None


def _worker_start(queue, threads: int) -> None:
    global _say
    _say = queue.put
    blas.set_process_threads(threads)


def _call(function: Callable[..., Any], arguments: dict) -> Any:
    return function(**arguments)


def by_priority(tasks: list[Task]) -> list[Task]:
    """``tasks`` longest chain first: ordered by the number of tasks on the longest chain from each through the
    tasks that wait for it (itself included), then in the run's order. Started in this order by parallel
    workers, the tasks that others wait for go first, so that a run of short tasks feeding long ones does not
    end with one worker on a whole chain while the others sit idle (list scheduling by critical path, in
    tasks: a run does not know how long each takes)."""
    position = {t.name: k for k, t in enumerate(tasks)}
    chain = {t.name: 1 for t in tasks}
    for task in reversed(_checked(list(tasks))):  # every task after those it waits for
        for name in task.after:
            chain[name] = max(chain[name], chain[task.name] + 1)
    return sorted(tasks, key=lambda t: (-chain[t.name], position[t.name]))


def ready(pending: list[Task], finished: dict[str, Outcome], count: int) -> list[Task]:
    """The first ``count`` tasks of ``pending`` (in its order: :func:`by_priority`) whose prerequisites are all
    ``finished``."""
    return list(itertools.islice((t for t in pending if set(t.after) <= finished.keys()), max(count, 0)))


def _checked(tasks: list[Task]) -> list[Task]:
    """``tasks`` in an order in which every task comes after those it waits for, otherwise in the order given
    (the serial run's order); a clear error for a repeated name, an unknown prerequisite or a cycle."""
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise ValueError(f"task names must be unique, got {names}")
    waiting: dict[str, list[str]] = {name: [] for name in names}
    for task in tasks:
        unknown = set(task.after) - waiting.keys()
        if unknown:
            raise ValueError(f"task {task.name!r} waits for {sorted(unknown)}, which are not tasks of this run")
        for name in set(task.after):
            waiting[name].append(task.name)
    position = {name: k for k, name in enumerate(names)}
    missing = {t.name: len(set(t.after)) for t in tasks}
    startable = [position[t.name] for t in tasks if not missing[t.name]]
    heapq.heapify(startable)
    ordered = []
    while startable:  # Kahn's algorithm, the earliest startable task first
        task = tasks[heapq.heappop(startable)]
        ordered.append(task)
        for name in waiting[task.name]:
            missing[name] -= 1
            if not missing[name]:
                heapq.heappush(startable, position[name])
    if len(ordered) < len(tasks):  # a task list with a cycle would never finish
        raise ValueError(f"the tasks {[n for n in names if missing[n]]} wait for each other in a cycle")
    return ordered


def run_tasks(tasks: list[Task], *, workers: int = 1, on_start: Callable[[Task], None] | None = None,
              on_done: Callable[[Outcome], None] | None = None,
              say: Callable[[str], None] | None = None, scheduler: str | None = None) -> dict[str, Outcome]:
    """Run ``tasks`` (each after its ``after``), ``workers`` at a time, or on the Dask cluster ``scheduler``
    (``local:N`` or an address: :mod:`.cluster`); ``on_done`` sees each outcome as it finishes (write it down
    there: nothing finished is lost when a later task fails or the run stops). A task that raises gives an
    :class:`Outcome` with its traceback; the tasks after it still run."""
    if scheduler is not None:
        from .cluster import run_on_cluster

        return run_on_cluster(tasks, scheduler, on_start=on_start, on_done=on_done, say=say)
    workers = integer("workers", workers, 1)
    tasks = _checked(list(tasks)) if workers == 1 else by_priority(tasks)  # each checks the list
    outcomes: dict[str, Outcome] = {}

    def finish(outcome: Outcome) -> None:
        outcomes[outcome.name] = outcome
        if on_done is not None:
            on_done(outcome)

    if workers == 1:
        global _say
        previous, _say = _say, say
        try:
            for task in tasks:  # _checked put every "after" first
                if on_start is not None:
                    on_start(task)
                try:
                    finish(Outcome(task.name, result=_call(task.function, task.call_arguments(outcomes))))
                except Exception:
                    finish(Outcome(task.name, error=traceback.format_exc()))
        finally:
            _say = previous
        return outcomes

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    listener = threading.Thread(target=_relay, args=(queue, say), daemon=True)
    listener.start()
    threads = max(1, (os.cpu_count() or 1) // workers)
    pending = list(tasks)
    running: dict[Future, Task] = {}
    try:
        with ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_start,
                                 initargs=(queue, threads)) as pool:
            while pending or running:
                for task in ready(pending, outcomes, workers - len(running)):
                    pending.remove(task)
                    if on_start is not None:
                        on_start(task)
                    running[pool.submit(_call, task.function, task.call_arguments(outcomes))] = task
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in finished:
                    task = running.pop(future)
                    try:
                        finish(Outcome(task.name, result=future.result()))
                    except Exception as error:
                        detail = "".join(traceback.format_exception(type(error), error, error.__traceback__))
                        finish(Outcome(task.name, error=detail))
    finally:
        queue.put(None)
        listener.join(timeout=5)
    return outcomes


def _relay(queue, say: Callable[[str], None] | None) -> None:
    """Pass the workers' progress lines to ``say`` until the run's end (None)."""
    while True:
        message = queue.get()
        if message is None:
            return
        if say is not None:
            say(message)
