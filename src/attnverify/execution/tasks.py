"""A run's tasks as data: `Task` (a module-level function, its keyword arguments, the tasks it waits
for), its `Outcome`, the order in which they may start (`by_priority`, `ready`), and
`progress`, by which a running task reports an event: a claim started or finished, an example checked
(`Event` subclasses), or a status line. Run locally by
`attnverify.execution.scheduler`, on a Dask cluster by `attnverify.execution.cluster`.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

say: Callable[[str], None] | None = None  # where progress() goes: the serial run's display, or a worker's queue


def progress(event: str) -> None:
    """One event from inside a task to the run's progress display (ignored outside a run): an `Event`, or a
    plain status line of an experiment or a section."""
    if say is not None:
        say(event if isinstance(event, Event) else str(event))


class Event(str):
    """A progress event of a run: a line of text (what a log shows) that carries its fields as attributes (what a
    display reads, by the event's type, never by parsing the line). Sent by `progress`, from a worker
    process too: it pickles as its fields."""

    fields: tuple[str, ...] = ()

    def __new__(cls, *values: Any):
        if len(values) != len(cls.fields):
            raise TypeError(f"{cls.__name__} takes {cls.fields}, got {values!r}")
        event = super().__new__(cls, cls.line(*values))
        event.__dict__.update(zip(cls.fields, values))
        return event

    def __reduce__(self):
        return type(self), tuple(getattr(self, name) for name in self.fields)

    @staticmethod
    def line(*values: Any) -> str:
        raise NotImplementedError


class ExampleChecked(Event):
    """One more example of ``claim`` checked: ``index`` of ``total``."""

    fields = ("claim", "index", "total")

    @staticmethod
    def line(claim: str, index: int, total: int) -> str:
        return f"{claim}: example {index}/{total}"


class ClaimStarted(Event):
    """The claim at ``position`` of the run's ``total`` starts, with its number of ``examples``."""

    fields = ("position", "total", "claim", "examples")

    @staticmethod
    def line(position: int, total: int, claim: str, examples: int) -> str:
        return f"[{position}/{total}] {claim}: checking ({examples} example{'s' * (examples != 1)})"


class ClaimFinished(Event):
    """The claim at ``position`` finished: its status, its verdict (OK, UNDECIDED, UNEXPECTED) and seconds;
    ``kept``: taken from an earlier run's store, not checked again."""

    fields = ("position", "total", "claim", "status", "verdict", "seconds", "kept")

    @staticmethod
    def line(position: int, total: int, claim: str, status: str, verdict: str, seconds: float, kept: bool) -> str:
        return f"[{position}/{total}] {claim}: " + ClaimFinished.outcome_of(status, verdict, seconds, kept)

    @staticmethod
    def outcome_of(status: str, verdict: str, seconds: float, kept: bool) -> str:
        return f"{status}, {verdict} ({seconds:.1f} s)" + (" [kept from an earlier run]" if kept else "")

    @property
    def outcome(self) -> str:
        """The line without the claim: ``status, VERDICT (seconds)``."""
        return self.outcome_of(self.status, self.verdict, self.seconds, self.kept)


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


def by_priority(tasks: list[Task]) -> list[Task]:
    """``tasks`` longest chain first: ordered by the number of tasks on the longest chain from each through the
    tasks that wait for it (itself included), then in the run's order. Started in this order by parallel
    workers, the tasks that others wait for go first, so that a run of short tasks feeding long ones does not
    end with one worker on a whole chain while the others sit idle (list scheduling by critical path, in
    tasks: a run does not know how long each takes)."""
    position = {t.name: k for k, t in enumerate(tasks)}
    chain = {t.name: 1 for t in tasks}
    for task in reversed(in_order(list(tasks))):  # every task after those it waits for
        for name in task.after:
            chain[name] = max(chain[name], chain[task.name] + 1)
    return sorted(tasks, key=lambda t: (-chain[t.name], position[t.name]))


def ready(pending: list[Task], finished: dict[str, Outcome], count: int) -> list[Task]:
    """The first ``count`` tasks of ``pending`` (in its order: `by_priority`) whose prerequisites are all
    ``finished``."""
    return list(itertools.islice((t for t in pending if set(t.after) <= finished.keys()), max(count, 0)))


def in_order(tasks: list[Task]) -> list[Task]:
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


def integer_seed(sequence: np.random.SeedSequence) -> int:
    """A 32-bit integer seed from a SeedSequence, for a part of a task (a task's seeds come from the run's seed and
    its identity)."""
    return int(sequence.generate_state(1)[0])


EVENTS = {kind.__name__: kind for kind in (ExampleChecked, ClaimStarted, ClaimFinished)}


def as_message(event: str) -> dict:
    """An event as plain data for a channel that carries only basic types (Dask's event log)."""
    if isinstance(event, Event):
        return {"progress": str(event), "event": [type(event).__name__, [getattr(event, f) for f in event.fields]]}
    return {"progress": str(event)}


def from_message(message: dict) -> str:
    """The event `as_message` made (a plain status line when it carried no event)."""
    kind = message.get("event")
    return EVENTS[kind[0]](*kind[1]) if kind else message["progress"]
