"""A run's tasks on a Dask cluster (``--scheduler``; the optional ``[distributed]`` extra).

``run_on_cluster(tasks, "local:2", …)`` starts a ``LocalCluster`` of 2 worker processes (one thread each) for
the run and stops it at the end; ``run_on_cluster(tasks, "tcp://host:8786", …)`` uses a running scheduler
(e.g. one that ``dask-jobqueue`` started on a SLURM cluster). The client hands the cluster as many tasks as it
has worker threads, the first ready ones by `by_priority`, and the next
as each finishes, with the outcomes of its prerequisites (as the local worker processes do): a task waiting on a
busy worker while another worker idles (Dask places a task beside its prerequisites' results) cost the figure-3
sweep 15 % of its time. A task never raises on the worker (its traceback comes back in its
`Outcome`), so the tasks after a failed one still run. A worker that
dies mid-task is replaced and its task rerun by Dask; the task's result depends only on its arguments (seeds
come from the run's seed and the task's identity), so the rerun gives the same answer. Progress lines from
inside tasks come back as Dask events.

Dask is imported only here, and only when a scheduler is asked for.
"""

from __future__ import annotations

import logging
import os
import time
import traceback
import uuid
from typing import Any, Callable
from urllib.parse import urlsplit

from ..base import blas
from . import tasks as run_state
from .tasks import Outcome, Task, by_priority, ready

class SchedulerUnavailable(RuntimeError):
    """Dask is not installed, or the scheduler at the given address cannot be reached."""


CONNECT_SECONDS = 10
"""How long to wait for a scheduler given by address."""

RECOUNT_SECONDS = 1.0
"""How often the client asks the scheduler how many worker threads there are (it hands out one task per thread)."""

TOPIC = "attnverify-progress"
"""The Dask event topic on which tasks send their progress lines and start notices to the client."""


LOCAL_CLUSTER_CONFIG = {
    # Dask's nannies set MALLOC_TRIM_THRESHOLD_=65536 in their workers' environment: glibc then stops raising its
    # mmap threshold, so every large numpy array is mapped and unmapped afresh, and the claims' Monte Carlo
    # examples ran 1.37x slower than in one process (benchmarks/bench_cluster.py). Leave glibc's default.
    "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None,
    # An idle worker woke 100 times a second (the statistical profiler samples the task thread's stack every
    # 10 ms; the event-loop tick is 20 ms; the worker's and the nanny's memory monitors poll every 100 ms):
    # 4.8 % of a core each, and the task threads of the figure-3 sweep were preempted 32,000 times against
    # 9,000-11,000 without them. The dashboard's profile page stays empty; memory limits are still enforced,
    # checked once a second.
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
}
"""The Dask settings of the ``LocalCluster`` that ``--scheduler local:N`` starts (the README gives them for
clusters started elsewhere)."""


SCHEMES = ("tcp", "tls", "ucx", "ws", "wss")
"""The Dask protocols an address may name (``SCHEME://HOST[:PORT]``)."""

_FORMS = ("local, local:N or a scheduler address SCHEME://HOST[:PORT] or HOST:PORT such as tcp://host:8786 "
          f"(SCHEME one of {', '.join(SCHEMES)}; PORT in 1–65535)")


def most_workers() -> int:
    """The most worker processes a run may start on this machine: 8 per CPU (more only wait their turn, each with
    its own memory)."""
    return 8 * (os.cpu_count() or 1)


def parse_scheduler(text: str) -> tuple[str, Any]:
    """``"local"`` or ``"local:N"`` → ("local", N workers; N = the CPU count when left out); an address
    (``tcp://host:8786``, ``host:8786``) → ("address", text). Anything else is refused by name, an address
    without a host or with a bad port too (Dask would fail on it deep in its connection code)."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"--scheduler must be {_FORMS}, got {text!r}")
    text = text.strip()
    if text == "local":
        return "local", os.cpu_count() or 1
    if text.startswith("local:"):
        count = text.split(":", 1)[1]
        if not count.isdigit() or not 1 <= int(count) <= most_workers():
            raise ValueError(f"--scheduler local:N needs a number of workers N in [1, {most_workers()}] (8 per CPU "
                             f"at most), got {text!r}")
        return "local", int(count)
    if "://" in text or (":" in text and text.rsplit(":", 1)[1].isdigit()):
        if problem := _address_problem(text):
            raise ValueError(f"--scheduler must be {_FORMS}, got {text!r} ({problem})")
        return "address", text
    raise ValueError(f"--scheduler must be {_FORMS}, got {text!r}")


def _address_problem(text: str) -> str:
    """What is wrong with the scheduler address ``text`` (``SCHEME://HOST[:PORT]`` or ``HOST:PORT``), or ""."""
    scheme = text.split("://", 1)[0] if "://" in text else "tcp"
    if scheme not in SCHEMES:
        return f"unknown protocol {scheme!r}"
    parts = urlsplit(text if "://" in text else f"tcp://{text}")
    try:
        port = parts.port
    except ValueError:
        return "the port must be a number in 1–65535"
    if not parts.hostname:
        return "no host"
    if port is not None and port < 1:
        return "the port must be a number in 1–65535"
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username is not None:
        return "nothing may come before HOST or after PORT"
    return ""


def _run_on_worker(name: str, function: Callable[..., Any], arguments: dict, threads: int) -> Outcome:
    """The task ``name`` (``function(**arguments)``) on a Dask worker: tell the client it started, relay its
    progress lines, never raise."""
    from distributed import get_worker

    worker = get_worker()
    run_state.say = lambda message: worker.log_event(TOPIC, run_state.as_message(message))
    blas.set_process_threads(threads)
    worker.log_event(TOPIC, {"start": name})
    try:
        return Outcome(name, result=function(**arguments))
    except Exception:
        return Outcome(name, error=traceback.format_exc())


def _threads(client) -> int:
    """The worker threads the cluster has now."""
    return sum(client.nthreads().values())


def run_on_cluster(tasks: list[Task], address: str, *, on_start: Callable[[Task], None] | None = None,
                   on_done: Callable[[Outcome], None] | None = None,
                   say: Callable[[str], None] | None = None) -> dict[str, Outcome]:
    """Run ``tasks`` (each after its ``after``) on the Dask cluster ``address`` (`parse_scheduler`);
    ``on_done`` sees each outcome on the client as it finishes (write it down there)."""
    kind, value = parse_scheduler(address)
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise SchedulerUnavailable("--scheduler needs Dask distributed: pip install 'attnverify[distributed]'") from None
    logging.getLogger("distributed").setLevel(logging.WARNING)  # the client's own connection notices
    tasks = by_priority(tasks)  # checked, and in the order they are handed out
    say = say or (lambda message: None)
    by_name = {task.name: task for task in tasks}
    outcomes: dict[str, Outcome] = {}
    cluster = None
    if kind == "local":
        import dask

        with dask.config.set(LOCAL_CLUSTER_CONFIG):
            cluster = LocalCluster(n_workers=value, threads_per_worker=1, processes=True, dashboard_address=":0",
                                   silence_logs=logging.CRITICAL)
            client = Client(cluster)
    else:
        try:
            client = Client(value, timeout=CONNECT_SECONDS)
        except OSError as error:
            raise SchedulerUnavailable(f"--scheduler {value}: no Dask scheduler answered there within "
                                       f"{CONNECT_SECONDS} s ({error})") from None
    try:
        say(f"Dask scheduler {client.scheduler.address} with {len(client.scheduler_info()['workers'])} workers; "
            f"dashboard {client.dashboard_link}")

        def on_event(event) -> None:
            _, message = event
            if "start" in message:
                if on_start is not None and message["start"] in by_name:
                    on_start(by_name[message["start"]])
            else:
                say(run_state.from_message(message))

        client.subscribe_topic(TOPIC, on_event)
        run = uuid.uuid4().hex[:8]
        pending = list(tasks)
        running = as_completed()
        threads, counted = _threads(client), time.monotonic()
        while pending or running.count():
            if time.monotonic() - counted > RECOUNT_SECONDS:  # workers may join or leave during a run
                threads, counted = _threads(client), time.monotonic()
            for task in ready(pending, outcomes, threads - running.count()):
                pending.remove(task)
                running.add(client.submit(_run_on_worker, task.name, task.function, task.call_arguments(outcomes), 1,
                                          key=f"{task.name} [{run}]", pure=False))
            if not running.count():  # e.g. a dask-jobqueue cluster whose first job has not started
                say(f"waiting for a worker to join the scheduler {client.scheduler.address}")
                client.wait_for_workers(1)
                threads, counted = _threads(client), time.monotonic()
                continue
            outcome = next(running).result()
            outcomes[outcome.name] = outcome
            if on_done is not None:
                on_done(outcome)
    finally:
        if cluster is not None:  # workers first, so that none reports a lost scheduler on the way out
            client.retire_workers(close_workers=True)
            client.close()
            cluster.close()
        else:
            client.close()
    return outcomes
