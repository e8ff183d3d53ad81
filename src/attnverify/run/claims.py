"""Claims as tasks of a run (`attnverify.execution.scheduler`): the one path by which ``check``, ``verify``,
``report`` and the pytest plugin run claims, in this process, on local worker processes or on a Dask cluster.

In a parallel run a claim becomes up to ``BATCHES`` tasks that check its drawn examples (`drawn_examples`, drawn
on the client), then its own task, which takes their examples and shrinks a failure as a serial run would: the
result is the serial run's (timings aside), since an example's check depends only on its parameters and Monte
Carlo seed. The client keeps each finished batch and each finished claim in the run's store folder
(`SavedChecks`), so that a rerun with the same folder checks only what is missing.

A task names its claim by theory and name (an `attnverify.Theory` pickles as its name and file and is
loaded again in the worker, `attnverify.theories.by_reference`, so nothing but plain values and examples
crosses a process boundary). The run's other tasks (a report's experiments
and sections, `.report`) run through the same driver, ahead of the claims that wait for them. The run's store
folder (`run_store`), a claim's crash as a result (`run_claim_or_error`) and the exit status of a
run's verdicts (`exit_status`) are here too: the report layer only prints what a run gives it.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Mapping, Protocol, Sequence

from ..execution.scheduler import run_tasks
from ..execution.tasks import ClaimFinished, ClaimStarted, ExampleChecked, Outcome, Task, progress
from ..execution.settings import RunSettings
from ..checks.claim import Claim
from ..checks.runner import ClaimResult, Example, drawn_examples, evaluate, example_key, run_claim
from ..checks.story import verdict
from ..checks.saved import SavedChecks
from ..checks.strategies import points_in
from ..theories.catalogue import user_file

BATCHES = 8
"""Most tasks a claim's examples are split into: enough to keep a few workers busy on one long claim, few
enough that the per-task cost of a cluster (milliseconds, ``benchmarks/bench_cluster.py``) stays small."""


def run_claim_or_error(claim: Claim, settings: RunSettings, *,
                       progress: Callable[[Claim, int, int], None] | None = None, **ahead) -> ClaimResult:
    """``run_claim`` in the run of ``settings``, except that a crash outside the check (e.g. in the parameter
    strategy) becomes a result with status ``"error"`` and its traceback, so one claim never ends a run. ``ahead``:
    ``evaluated`` and ``on_evaluated`` of [`run_claim`][attnverify.checks.runner.run_claim]."""
    start = time.perf_counter()
    try:
        return run_claim(claim, settings, progress=progress, **ahead)
    except Exception as error:
        detail = "".join(traceback.format_exception_only(type(error), error)).strip()
        return _failed(claim, settings, f"{detail}\n{traceback.format_exc()}", time.perf_counter() - start,
                       "the run itself failed before or while drawing examples")


def _failed(claim: Claim, settings: RunSettings, error: str, seconds: float, note: str) -> ClaimResult:
    """The result of ``claim`` whose run failed outside its check: status "error", the traceback kept."""
    return ClaimResult(claim=claim, status="error", examples=[], counterexample=None,
                       error=Example(parameters={}, seed=settings.seed, error=error), profile=settings.profile,
                       backend=settings.backend, seed=settings.seed, seconds=seconds,
                       requested_examples=settings.examples, notes=[note])


def exit_status(results: list[dict]) -> int:
    """The command line's exit status for a run's results: 0 when every claim came out as expected, 1 when
    any came out against its expectation or failed to run, 3 when none did but some were inconclusive
    where a decision was expected (2 is a usage error)."""
    verdicts = {verdict(r) for r in results}
    return 1 if "UNEXPECTED" in verdicts else (3 if "UNDECIDED" in verdicts else 0)


def verify_command(path: str) -> str:
    """``attnverify verify FILE`` with the file name quoted for a shell: what replays a user's file's claims."""
    return f"attnverify verify {shlex.quote(str(path))}"


@contextmanager
def run_store(settings: RunSettings) -> Iterator[RunSettings]:
    """``settings`` with their store in a folder, absolute: the settings' own folder (kept, so that a rerun reads
    what is there; the settings themselves when it is absolute already), or, for a store in memory, a temporary
    folder, removed when the run ends however it ends (a run's tasks share their results through a folder: what a
    store in memory holds is not read, and the run's results are not put in it)."""
    if settings.folder is not None:
        folder = str(Path(settings.folder).resolve())
        yield settings if folder == settings.folder else settings.but(store=folder)
        return
    folder = tempfile.mkdtemp(prefix="attnverify-store-")
    try:
        yield settings.but(store=folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def batches_for(settings: RunSettings) -> int:
    """The batch tasks a claim's examples are split into: ``BATCHES`` when the run is parallel (worker processes or
    a cluster), none when it is serial (the claim's own task checks them in order, as ``run_claim`` does)."""
    return BATCHES if settings.parallel else 0


def example_batch_task(theory, name: str, examples: list[tuple[dict, int]], first: int, total: int,
                       settings: RunSettings) -> list[Example]:
    """A task of the run: check the examples ``(parameters, Monte Carlo seed)`` of ``theory``'s claim ``name``
    (numbered from ``first`` of ``total``) in order, up to the first that fails (a serial run stops there too)."""
    claim, checked, settings = theory.claim_named(name), [], settings.of_task()
    for k, (parameters, monte_carlo_seed) in enumerate(examples, first):
        checked.append(evaluate(claim, parameters, monte_carlo_seed, settings))
        progress(ExampleChecked(name, k, total))
        if not checked[-1].holds:
            break
    return checked


def claim_task(theory, name: str, settings: RunSettings, command: str | None = None, evaluated: dict | None = None,
               inputs: dict | None = None) -> dict:
    """A task of the run of ``settings``: check ``theory``'s claim ``name``; its experiments come from the store. The
    examples in ``evaluated`` (kept from an earlier run) and those the ``inputs`` batches checked are taken as
    they are; each example it checks itself is kept in the store folder as soon as it is checked (an interrupted
    run loses none). ``command`` is what its replay line runs (default: ``attnverify check``, or ``verify FILE``)."""
    claim, settings = theory.claim_named(name), settings.of_task()
    ahead = dict(evaluated or {})
    for outcome in (inputs or {}).values():
        if outcome.error is None:
            ahead.update({example_key(e.parameters, e.seed): e for e in outcome.result})
    saved = SavedChecks(settings.folder)
    result = run_claim_or_error(claim, settings, evaluated=ahead,
                                progress=lambda c, i, n: progress(ExampleChecked(c.name, i, n)),
                                on_evaluated=lambda example: saved.add_examples(claim, [example], settings))
    if command is not None:
        result.command = command
    elif user_file(theory) is not None:  # a user's file: its claims replay through verify
        result.command = verify_command(user_file(theory))
    return result.as_dict()


def crashed_claim(claim: Claim, outcome: Outcome, settings: RunSettings) -> dict:
    """The result of a claim whose task itself failed (e.g. its worker died): status "error", traceback kept."""
    return _failed(claim, settings, outcome.error, 0.0, "the claim's task failed outside its check").as_dict()


def claim_started(position: int, total: int, claim: Claim, settings: RunSettings) -> ClaimStarted:
    """The event of a claim that starts (its line: ``[k/n] name: checking (N examples)``): the examples asked for,
    or the points its parameters can take where they are fewer (each point is checked once)."""
    asked = settings.examples or claim.examples[settings.profile]
    points = points_in(claim.parameters)
    return ClaimStarted(position, total, claim.name, asked if points is None else min(asked, points))


def claim_finished(position: int, total: int, result: dict, kept: bool = False) -> ClaimFinished:
    """The event of a finished claim (its line: ``[k/n] name: status, OK|UNDECIDED|UNEXPECTED (seconds)``)."""
    return ClaimFinished(position, total, result["name"], result["status"], verdict(result), result["seconds"], kept)


def _batches(count: int, parts: int) -> list[range]:
    """``range(count)`` in at most ``parts`` consecutive pieces of (nearly) equal length."""
    parts = max(1, min(parts, count))
    edges = [round(k * count / parts) for k in range(parts + 1)]
    return [range(a, b) for a, b in zip(edges, edges[1:]) if b > a]


@dataclass
class ClaimTasks:
    """The tasks that check a run's ``claims`` (``(theory, claim)`` pairs), each claim's after the tasks
    ``after[name]``, with progress lines ``[k/n]`` from ``positions[name] = (k, n)``. A claim whose result is kept
    in ``store`` (an earlier run with the same folder) is no task: it is in ``results`` from the start."""

    claims: Sequence[tuple]
    settings: RunSettings  # the run's, its store in a folder
    positions: dict
    after: dict = field(default_factory=dict)
    command: str | None = None
    batches: int = BATCHES
    say: Callable[[str], None] = lambda message: None
    tasks: list = field(init=False)
    results: dict = field(init=False)

    def __post_init__(self) -> None:
        self.saved = SavedChecks(self.settings.folder)
        self._claim = {c.name: c for _, c in self.claims}
        self._batch_of: dict[str, str] = {}  # batch task → its claim
        self._announced: set[str] = set()
        self.tasks, self.results = [], {}
        for theory, claim in self.claims:
            kept = self.saved.result(claim, self.settings)
            if kept is not None:
                self.results[claim.name] = kept
            else:
                self.tasks.extend(self._tasks(theory, claim))

    def _tasks(self, theory, claim: Claim) -> list[Task]:
        after = tuple(self.after.get(claim.name, ()))
        evaluated = self.saved.examples(claim, self.settings)
        try:
            drawn = drawn_examples(claim, self.settings)
        except Exception:  # a strategy that fails: the claim's own task reports it
            drawn = []
        missing = [(k, e) for k, e in enumerate(drawn, 1) if example_key(*e) not in evaluated]
        batches = []
        for piece in _batches(len(missing), self.batches) if self.batches else ():
            numbers = [missing[i][0] for i in piece]
            name = f"{claim.name} [examples {numbers[0]}–{numbers[-1]}]"
            self._batch_of[name] = claim.name
            batches.append(Task(name, example_batch_task, dict(
                theory=theory, name=claim.name, examples=[missing[i][1] for i in piece], first=numbers[0],
                total=len(drawn), settings=self.settings), after=after))
        own = Task(claim.name, claim_task, dict(theory=theory, name=claim.name, settings=self.settings,
                                                command=self.command, evaluated=evaluated),
                   after=after, inputs=tuple(t.name for t in batches))
        return [*batches, own]

    def is_batch(self, name: str) -> bool:
        """Whether the task ``name`` checks a batch of a claim's examples."""
        return name in self._batch_of

    def owns(self, name: str) -> bool:
        """Whether the task ``name`` is one of these."""
        return name in self._claim or name in self._batch_of

    def started(self, task: Task) -> None:
        """The progress line of a claim when the first of its tasks starts."""
        name = self._batch_of.get(task.name, task.name)
        if name not in self._announced:
            self._announced.add(name)
            k, n = self.positions[name]
            self.say(claim_started(k, n, self._claim[name], self.settings))

    def finished(self, outcome: Outcome) -> dict | None:
        """Keep what ``outcome`` (one of these tasks) brought; the claim's result when it is the claim's own task."""
        if outcome.name in self._batch_of:
            if outcome.error is None:
                self.saved.add_examples(self._claim[self._batch_of[outcome.name]], outcome.result, self.settings)
            return None
        claim = self._claim[outcome.name]
        if outcome.error is None:
            result = outcome.result
            self.saved.save_result(claim, result, self.settings)
        else:
            result = crashed_claim(claim, outcome, self.settings)
        self.results[claim.name] = result
        k, n = self.positions[claim.name]
        self.say(claim_finished(k, n, result))
        return result


@dataclass(frozen=True)
class InProcess:
    """The theory of a claim that a serial run was given directly (made in a session, not in a module or file):
    its tasks run in this process, so the claim itself is the way to find it again."""

    only: Claim
    builtin: bool = True  # no file to replay it from: ``check --only`` names it

    @property
    def name(self) -> str:
        return self.only.name.split(".")[0]

    def claim_named(self, name: str) -> Claim:
        return self.only


class Ahead(Protocol):
    """Tasks a run does besides its claims (a report's planned experiments and sections): the claims may wait
    for them (``ClaimTasks.after``), and the run hands each of their starts and outcomes back."""

    tasks: list[Task]

    def started(self, task: Task) -> None: ...

    def finished(self, outcome: Outcome) -> None: ...


def _in_run_order(ahead: Sequence[Task], claims: Sequence[Task], workers: int) -> list[Task]:
    """The run's tasks in the order they are handed to the scheduler. On one worker each claim's tasks come right
    after the last task they wait for (a report: theory by theory, so the first theory's results are complete
    first); on several, every task of ``ahead`` first (a report's experiments are the longest tasks)."""
    if workers != 1:
        return [*ahead, *claims]
    position = {task.name: k for k, task in enumerate(ahead)}
    following: dict[int, list[Task]] = {}
    for task in claims:
        following.setdefault(max((position.get(a, -1) for a in task.after), default=-1), []).append(task)
    ordered = list(following.get(-1, []))
    for k, task in enumerate(ahead):
        ordered += [task, *following.get(k, [])]
    return ordered


def run_claims_as_tasks(claims: Sequence[Claim], theories: Sequence, settings: RunSettings, *,
                        say: Callable[[str], None] = lambda message: None, command: str | None = None,
                        on_result: Callable[[list[dict], list[str]], None] | None = None,
                        batches: int | None = None, ahead: Ahead | None = None,
                        after: Mapping[str, tuple[str, ...]] | None = None,
                        positions: Mapping[str, tuple[int, int]] | None = None) -> list[dict]:
    """Check ``claims`` (each of one of ``theories``) as tasks of the run of ``settings``: in this process, one after
    another (``workers`` 1, no ``scheduler``: the run of ``check`` and ``verify``), on ``workers`` local processes, or
    on the Dask cluster ``scheduler``, sharing one store folder (the settings' own, kept for a rerun; for a store in
    memory a temporary one: `run_store`); returns the results in the claims' order.

    ``ahead``: the run's other tasks (a report's experiments and sections), run with the claims; a claim waits for
    the tasks ``after[claim name]``. ``on_result(finished, not_run)`` sees the finished results (in the claims'
    order) and the names of the tasks still to come after each claim and each task of ``ahead``. ``positions``:
    each claim's ``(k, n)`` of its progress line ``[k/n]`` (default: its place among ``claims``). ``batches``: the
    tasks a claim's examples are split into ahead of its own task (default ``BATCHES`` when the run is parallel,
    none when it is serial: there the claim's task checks them in order)."""
    if batches is None:
        batches = batches_for(settings)
    serial = not settings.parallel
    owner = {}
    for c in claims:
        matches = [t for t in theories if c.name.startswith(t.name + ".")]
        if not matches and not serial:  # a worker loads the claim again from its theory's module or file
            raise ValueError(f"claim {c.name!r} belongs to none of the theories {[t.name for t in theories]}")
        owner[c.name] = matches[0] if matches else InProcess(c)
    with run_store(settings) as settings:
        plan = ClaimTasks([(owner[c.name], c) for c in claims], settings, command=command, say=say, batches=batches,
                          positions=dict(positions or {c.name: (k, len(claims)) for k, c in enumerate(claims, 1)}),
                          after=dict(after or {}))
        run = _Run(plan, claims, _in_run_order(ahead.tasks if ahead else [], plan.tasks, settings.workers), ahead,
                   on_result)
        for c in claims:
            if c.name in plan.results:
                say(claim_finished(*plan.positions[c.name], plan.results[c.name], kept=True))
        if plan.results:  # kept from an earlier run: written down before the first task
            run.report()
        run_tasks(run.tasks, workers=settings.workers, scheduler=settings.scheduler, on_start=run.started,
                  on_done=run.finished, say=say)
    return [plan.results[c.name] for c in claims]


@dataclass
class _Run:
    """The driver's side of one run: hands each task's start and outcome to the claims' plan or to ``ahead``,
    and tells ``on_result`` after each claim and each task of ``ahead``."""

    plan: ClaimTasks
    claims: Sequence[Claim]
    tasks: list[Task]
    ahead: Ahead | None
    on_result: Callable[[list[dict], list[str]], None] | None
    done: set = field(default_factory=set)

    def report(self) -> None:
        if self.on_result is not None:
            results = self.plan.results
            self.on_result([results[c.name] for c in self.claims if c.name in results],
                           [t.name for t in self.tasks if t.name not in self.done and not self.plan.is_batch(t.name)])

    def started(self, task: Task) -> None:
        if self.plan.owns(task.name):
            self.plan.started(task)
        elif self.ahead is not None:
            self.ahead.started(task)

    def finished(self, outcome: Outcome) -> None:
        self.done.add(outcome.name)
        if self.plan.owns(outcome.name):
            if self.plan.finished(outcome) is None:  # a batch of a claim's examples
                return
        elif self.ahead is not None:
            self.ahead.finished(outcome)
        self.report()
