"""Run a run's tasks (report sections, claims, experiments) serially or on local worker processes.

A :class:`Task` names a module-level function (so that a worker process can import it), its keyword
arguments and the tasks it must wait for. :func:`run_tasks` starts each task once its prerequisites are done,
in the order given, on ``workers`` processes (``spawn``ed, each with ``cpu_count // workers`` BLAS threads),
or in this process when ``workers`` is 1. A task's result depends only on its arguments (seeds come from the
run's seed and the task's identity), so the results do not depend on ``workers`` or on the order of completion.

Inside a task, :func:`progress` sends one status line to the run's progress display, from a worker too.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import threading
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable

from ..numerics import blas
from ..numerics.arguments import integer

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


def ready(pending: list[Task], finished: dict[str, Outcome], count: int) -> list[Task]:
    """The first ``count`` tasks of ``pending`` (in the run's order) whose prerequisites are all ``finished``."""
    return list(itertools.islice((t for t in pending if set(t.after) <= finished.keys()), max(count, 0)))


def _checked(tasks: list[Task]) -> list[Task]:
    names = [t.name for t in tasks]
    if len(set(names)) != len(names):
        raise ValueError(f"task names must be unique, got {names}")
    for task in tasks:
        unknown = set(task.after) - set(names)
        if unknown:
            raise ValueError(f"task {task.name!r} waits for {sorted(unknown)}, which are not tasks of this run")
    done: set[str] = set()
    remaining = list(tasks)
    while remaining:  # a task list with a cycle would never finish
        ready = [t for t in remaining if set(t.after) <= done]
        if not ready:
            raise ValueError(f"the tasks {[t.name for t in remaining]} wait for each other in a cycle")
        done.update(t.name for t in ready)
        remaining = [t for t in remaining if t.name not in done]
    return tasks


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
    tasks = _checked(list(tasks))
    workers = integer("workers", workers, 1)
    outcomes: dict[str, Outcome] = {}

    def finish(outcome: Outcome) -> None:
        outcomes[outcome.name] = outcome
        if on_done is not None:
            on_done(outcome)

    if workers == 1:
        global _say
        previous, _say = _say, say
        try:
            for task in tasks:  # _checked guarantees an order in which every "after" comes first
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
