"""Run a run's tasks (report sections, claims, experiments) serially or on local worker processes.

A `Task` names a module-level function (so that a worker process can import it), its keyword
arguments and the tasks it must wait for. `run_tasks` starts each task once its prerequisites are done:
in the order given in this process when ``workers`` is 1; on ``workers`` processes (``spawn``ed, each with
``cpu_count // workers`` BLAS threads) longest chain of waiting tasks first (`by_priority`). A task's
result depends only on its arguments (seeds come from the run's seed and the task's identity), so the results
do not depend on ``workers`` or on the order of completion.

Inside a task, `attnverify.execution.tasks.progress` sends one event to the run's progress display, from
a worker too.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Callable

from ..base import blas
from ..base.arguments import integer
from . import tasks as run_state
from .tasks import Outcome, Task, by_priority, in_order, ready

def _worker_start(queue, threads: int) -> None:
    run_state.say = queue.put
    blas.set_process_threads(threads)


def _call(function: Callable[..., Any], arguments: dict) -> Any:
    return function(**arguments)


def run_tasks(tasks: list[Task], *, workers: int = 1, on_start: Callable[[Task], None] | None = None,
              on_done: Callable[[Outcome], None] | None = None,
              say: Callable[[str], None] | None = None, scheduler: str | None = None) -> dict[str, Outcome]:
    """Run ``tasks`` (each after its ``after``), ``workers`` at a time, or on the Dask cluster ``scheduler``
    (``local:N`` or an address: `.cluster`); ``on_done`` sees each outcome as it finishes (write it down
    there: nothing finished is lost when a later task fails or the run stops). A task that raises gives an
    `Outcome` with its traceback; the tasks after it still run."""
    if scheduler is not None:
        from .cluster import run_on_cluster

        return run_on_cluster(tasks, scheduler, on_start=on_start, on_done=on_done, say=say)
    workers = integer("workers", workers, 1)
    tasks = in_order(list(tasks)) if workers == 1 else by_priority(tasks)  # each checks the list
    outcomes: dict[str, Outcome] = {}

    def finish(outcome: Outcome) -> None:
        outcomes[outcome.name] = outcome
        if on_done is not None:
            on_done(outcome)

    if workers == 1:
        previous, run_state.say = run_state.say, say
        try:
            for task in tasks:  # _checked put every "after" first
                if on_start is not None:
                    on_start(task)
                try:
                    finish(Outcome(task.name, result=_call(task.function, task.call_arguments(outcomes))))
                except Exception:
                    finish(Outcome(task.name, error=traceback.format_exc()))
        finally:
            run_state.say = previous
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
