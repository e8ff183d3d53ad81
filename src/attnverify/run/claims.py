"""Claims as tasks of a run (:mod:`attnverify.experiments.scheduler`): the one path by which ``check``, ``verify``,
``report`` and the pytest plugin run claims, in this process, on local worker processes or on a Dask cluster.

In a parallel run a claim becomes up to ``BATCHES`` tasks that check its drawn examples (:func:`~.runner.drawn_examples`, drawn
on the client), then its own task, which takes their examples and shrinks a failure as a serial run would: the
result is the serial run's (timings aside), since an example's check depends only on its parameters and Monte
Carlo seed. The client keeps each finished batch and each finished claim in the run's store folder
(:class:`~.saved.SavedChecks`), so that a rerun with the same folder checks only what is missing.

A task names its claim by theory and name (the theory's module or file is loaded again in the worker, so
nothing but plain values and examples crosses a process boundary).
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ..experiments.scheduler import run_tasks
from ..experiments.tasks import ClaimFinished, ClaimStarted, ExampleChecked, Outcome, Task, progress
from ..experiments.store import Store
from ..base.backend import Backend, get_backend
from ..checks.claim import Claim
from ..checks.runner import ClaimResult, Example, drawn_examples, evaluate, example_key
from ..checks.saved import SavedChecks
from ..report.results import run_claim_or_error, verdict, verify_command

BATCHES = 8
"""Most tasks a claim's examples are split into: enough to keep a few workers busy on one long claim, few
enough that the per-task cost of a cluster (milliseconds, ``benchmarks/bench_cluster.py``) stays small."""


def batches_for(workers: int, scheduler: str | None) -> int:
    """The batch tasks a claim's examples are split into: ``BATCHES`` when the run is parallel (worker processes or
    a cluster), none when it is serial (the claim's own task checks them in order, as ``run_claim`` does)."""
    return BATCHES if scheduler is not None or workers > 1 else 0


def example_batch_task(theory, name: str, examples: list[tuple[dict, int]], first: int, total: int, profile: str,
                       backend: str, seed: int, store: str) -> list[Example]:
    """A task of the run: check the examples ``(parameters, Monte Carlo seed)`` of ``theory``'s claim ``name``
    (numbered from ``first`` of ``total``) in order, up to the first that fails (a serial run stops there too)."""
    claim, checked, shared = theory.claim(name), [], Store(store)
    for k, (parameters, monte_carlo_seed) in enumerate(examples, first):
        checked.append(evaluate(claim, parameters, monte_carlo_seed, profile=profile, backend=get_backend(backend),
                                run_seed=seed, store=shared))
        progress(ExampleChecked(name, k, total))
        if not checked[-1].holds:
            break
    return checked


def claim_task(theory, name: str, profile: str, backend: str, seed: int, examples: int | None, store: str,
               command: str | None = None, evaluated: dict | None = None, inputs: dict | None = None) -> dict:
    """A task of the run: check ``theory``'s claim ``name``; its experiments come from the store folder. The
    examples in ``evaluated`` (kept from an earlier run) and those the ``inputs`` batches checked are taken as
    they are; each example it checks itself is kept in the store folder as soon as it is checked (an interrupted
    run loses none). ``command`` is what its replay line runs (default: ``attnverify check``, or ``verify FILE``)."""
    claim = theory.claim(name)
    ahead = dict(evaluated or {})
    for outcome in (inputs or {}).values():
        if outcome.error is None:
            ahead.update({example_key(e.parameters, e.seed): e for e in outcome.result})
    saved = SavedChecks(store)
    result = run_claim_or_error(claim, profile=profile, backend=get_backend(backend), seed=seed,
                                examples=examples, store=Store(store), evaluated=ahead,
                                progress=lambda c, i, n: progress(ExampleChecked(c.name, i, n)),
                                on_evaluated=lambda example: saved.add_examples(claim, [example], profile=profile,
                                                                                 backend=backend, seed=seed))
    if command is not None:
        result.command = command
    elif theory.claims.endswith(".py"):  # a user's file: its claims replay through verify
        result.command = verify_command(theory.claims)
    return result.as_dict()


def crashed_claim(claim: Claim, outcome: Outcome, profile: str, backend: Backend, seed: int) -> dict:
    """The result of a claim whose task itself failed (e.g. its worker died): status "error", traceback kept."""
    failure = Example(parameters={}, seed=seed, error=outcome.error)
    return ClaimResult(claim=claim, status="error", examples=[], counterexample=None, error=failure, profile=profile,
                       backend=backend.name, seed=seed, seconds=0.0,
                       notes=["the claim's task failed outside its check"]).as_dict()


def claim_started(position: int, total: int, claim: Claim, examples: int | None, profile: str) -> ClaimStarted:
    """The event of a claim that starts (its line: ``[k/n] name: checking (N examples)``)."""
    return ClaimStarted(position, total, claim.name, examples or claim.examples[profile])


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
    profile: str
    backend: Backend
    seed: int
    examples: int | None
    store: str
    positions: dict
    after: dict = field(default_factory=dict)
    command: str | None = None
    batches: int = BATCHES
    say: Callable[[str], None] = lambda message: None
    tasks: list = field(init=False)
    results: dict = field(init=False)

    def __post_init__(self) -> None:
        self.saved = SavedChecks(self.store)
        self._claim = {c.name: c for _, c in self.claims}
        self._batch_of: dict[str, str] = {}  # batch task → its claim
        self._announced: set[str] = set()
        self.tasks, self.results = [], {}
        for theory, claim in self.claims:
            kept = self.saved.result(claim, **self._run)
            if kept is not None:
                self.results[claim.name] = kept
            else:
                self.tasks.extend(self._tasks(theory, claim))

    @property
    def _run(self) -> dict:
        return dict(profile=self.profile, backend=self.backend.name, seed=self.seed, examples=self.examples)

    def _tasks(self, theory, claim: Claim) -> list[Task]:
        common = dict(profile=self.profile, backend=self.backend.name, seed=self.seed, store=self.store)
        after = tuple(self.after.get(claim.name, ()))
        evaluated = self.saved.examples(claim, profile=self.profile, backend=self.backend.name, seed=self.seed)
        try:
            drawn = drawn_examples(claim, profile=self.profile, seed=self.seed, examples=self.examples)
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
                total=len(drawn), **common), after=after))
        own = Task(claim.name, claim_task, dict(theory=theory, name=claim.name, examples=self.examples,
                                                command=self.command, evaluated=evaluated, **common),
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
            self.say(claim_started(k, n, self._claim[name], self.examples, self.profile))

    def finished(self, outcome: Outcome) -> dict | None:
        """Keep what ``outcome`` (one of these tasks) brought; the claim's result when it is the claim's own task."""
        if outcome.name in self._batch_of:
            if outcome.error is None:
                self.saved.add_examples(self._claim[self._batch_of[outcome.name]], outcome.result,
                                        profile=self.profile, backend=self.backend.name, seed=self.seed)
            return None
        claim = self._claim[outcome.name]
        if outcome.error is None:
            result = outcome.result
            self.saved.save_result(claim, result, **self._run)
        else:
            result = crashed_claim(claim, outcome, self.profile, self.backend, self.seed)
        self.results[claim.name] = result
        k, n = self.positions[claim.name]
        self.say(claim_finished(k, n, result))
        return result


@dataclass(frozen=True)
class InProcess:
    """The theory of a claim that a serial run was given directly (made in a session, not in a module or file):
    its tasks run in this process, so the claim itself is the way to find it again."""

    only: Claim
    claims: str = ""

    @property
    def name(self) -> str:
        return self.only.name.split(".")[0]

    def claim(self, name: str) -> Claim:
        return self.only


def run_claims_as_tasks(claims: Sequence[Claim], theories: Sequence, *, profile: str, backend: Backend, seed: int,
                        examples: int | None, scheduler: str | None, workers: int = 1,
                        say: Callable[[str], None] = lambda message: None, command: str | None = None,
                        on_result: Callable[[list[dict], list[str]], None] | None = None,
                        store: str | None = None, batches: int | None = None) -> list[dict]:
    """Check ``claims`` (each of one of ``theories``) as tasks: in this process, one after another (``workers`` 1,
    no ``scheduler``: the run of ``check`` and ``verify``), on ``workers`` local processes, or on the Dask cluster
    ``scheduler``, sharing one store folder (``store``, kept for a rerun; default a temporary one); returns the
    results in the claims' order. ``on_result(finished, not_run)`` sees the finished results (in the claims' order)
    after each claim. ``batches``: the tasks a claim's examples are split into ahead of its own task (default
    ``BATCHES`` when the run is parallel, none when it is serial: there the claim's task checks them in order)."""
    if batches is None:
        batches = batches_for(workers, scheduler)
    serial = scheduler is None and workers == 1
    owner = {}
    for c in claims:
        matches = [t for t in theories if c.name.startswith(t.name + ".")]
        if not matches and not serial:  # a worker loads the claim again from its theory's module or file
            raise ValueError(f"claim {c.name!r} belongs to none of the theories {[t.name for t in theories]}")
        owner[c.name] = matches[0] if matches else InProcess(c)
    folder = store or tempfile.mkdtemp(prefix="attnverify-store-")
    try:
        plan = ClaimTasks([(owner[c.name], c) for c in claims], profile=profile, backend=backend, seed=seed,
                          examples=examples, store=str(folder), command=command, say=say, batches=batches,
                          positions={c.name: (k, len(claims)) for k, c in enumerate(claims, 1)})

        def report() -> None:
            if on_result is not None:
                on_result([plan.results[c.name] for c in claims if c.name in plan.results],
                          [c.name for c in claims if c.name not in plan.results])

        for c in claims:
            if c.name in plan.results:
                say(claim_finished(*plan.positions[c.name], plan.results[c.name], kept=True))
        if plan.results:  # kept from an earlier run: written down before the first task
            report()

        def on_done(outcome: Outcome) -> None:
            if plan.finished(outcome) is not None:
                report()

        run_tasks(plan.tasks, workers=workers, scheduler=scheduler, on_start=plan.started, on_done=on_done, say=say)
    finally:
        if store is None:
            shutil.rmtree(folder, ignore_errors=True)
    return [plan.results[c.name] for c in claims]
