"""Claims as tasks of a run (:mod:`attnverify.experiments.scheduler`): on local worker processes or a Dask
cluster, for ``attnverify report`` and for ``check`` / ``verify --scheduler``.

A task names its claim by theory and name (the theory's module or file is loaded again in the worker, so
nothing but plain values crosses a process boundary) and returns ``ClaimResult.as_dict()``; a task that
itself failed (e.g. its worker died for good) becomes an "error" result with the traceback.
"""

from __future__ import annotations

import shutil
import tempfile
from typing import Callable, Sequence

from ..experiments import scheduler as task_runner
from ..experiments.scheduler import Outcome, Task, run_tasks
from ..experiments.store import Store
from ..numerics.backend import Backend, get_backend
from .claim import Claim
from .runner import ClaimResult, Example


def claim_task(theory, name: str, profile: str, backend: str, seed: int, examples: int | None, store: str,
               command: str | None = None) -> dict:
    """A task of the run: check ``theory``'s claim ``name``; its experiments come from the store folder.
    ``command`` is what its replay line runs (default: ``attnverify check``, or ``verify FILE`` for a file's)."""
    from ..report.results import run_claim_or_error, verify_command  # (report imports this module)

    result = run_claim_or_error(theory.claim(name), profile=profile, backend=get_backend(backend), seed=seed,
                                examples=examples, store=Store(store),
                                progress=lambda c, i, n: task_runner.progress(f"{c.name}: example {i}/{n}"))
    if command is not None:
        result.command = command
    elif theory.claims.endswith(".py"):  # a user's file: its claims replay through verify
        result.command = verify_command(theory.claims)
    return result.as_dict()


def crashed_claim(claim: Claim, outcome: Outcome, profile: str, backend: Backend, seed: int) -> dict:
    """The result of a claim whose task itself failed (e.g. its worker died): status "error", traceback kept."""
    failure = Example(parameters={}, seed=seed, error=outcome.error)
    return ClaimResult(claim=claim, status="error", examples=[], counterexample=failure, profile=profile,
                       backend=backend.name, seed=seed, seconds=0.0,
                       notes=["the claim's task failed outside its check"]).as_dict()


def claim_outcome(claim: Claim, outcome: Outcome, profile: str, backend: Backend, seed: int) -> dict:
    """The result of a finished claim task: what it returned, or :func:`crashed_claim` when the task failed."""
    return outcome.result if outcome.error is None else crashed_claim(claim, outcome, profile, backend, seed)


def checking_line(position: int, total: int, claim: Claim, examples: int | None, profile: str) -> str:
    """The progress line of a claim task that starts: ``[k/n] name: checking (N examples)``."""
    return f"[{position}/{total}] {claim.name}: checking ({examples or claim.examples[profile]} examples)"


def finished_line(position: int, total: int, result: dict) -> str:
    """The progress line of a finished claim: ``[k/n] name: status, OK|UNEXPECTED (seconds)``."""
    return (f"[{position}/{total}] {result['name']}: {result['status']}, {'OK' if result['ok'] else 'UNEXPECTED'} "
            f"({result['seconds']:.1f} s)")


def run_claims_as_tasks(claims: Sequence[Claim], theories: Sequence, *, profile: str, backend: Backend, seed: int,
                        examples: int | None, scheduler: str | None, workers: int = 1,
                        say: Callable[[str], None] = lambda message: None, command: str | None = None,
                        on_result: Callable[[list[dict], list[str]], None] | None = None) -> list[dict]:
    """Check ``claims`` (each of one of ``theories``) as tasks, on ``workers`` local processes or the Dask
    cluster ``scheduler``, sharing one store folder; returns the results in the claims' order.
    ``on_result(finished, not_run)`` sees the finished results (in the claims' order) after each one."""
    owner = {}
    for c in claims:
        matches = [t for t in theories if c.name.startswith(t.name + ".")]
        if not matches:
            raise ValueError(f"claim {c.name!r} belongs to none of the theories {[t.name for t in theories]}")
        owner[c.name] = matches[0]
    store = tempfile.mkdtemp(prefix="attnverify-store-")
    common = dict(profile=profile, backend=backend.name, seed=seed, examples=examples, store=store, command=command)
    tasks = [Task(c.name, claim_task, dict(theory=owner[c.name], name=c.name, **common)) for c in claims]
    position = {c.name: k for k, c in enumerate(claims, 1)}
    by_name = {c.name: c for c in claims}
    finished: dict[str, dict] = {}

    def on_start(task: Task) -> None:
        say(checking_line(position[task.name], len(claims), by_name[task.name], examples, profile))

    def on_done(outcome: Outcome) -> None:
        result = claim_outcome(by_name[outcome.name], outcome, profile, backend, seed)
        finished[outcome.name] = result
        say(finished_line(position[outcome.name], len(claims), result))
        if on_result is not None:
            on_result([finished[c.name] for c in claims if c.name in finished],
                      [c.name for c in claims if c.name not in finished])

    try:
        run_tasks(tasks, workers=workers, scheduler=scheduler, on_start=on_start, on_done=on_done, say=say)
    finally:
        shutil.rmtree(store, ignore_errors=True)
    return [finished[c.name] for c in claims]
