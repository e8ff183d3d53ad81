"""Build the report: each theory's section, then its built-in claims, into one directory.

``build_report(DIR)`` writes ``DIR/index.html`` (MathML, no network resources), ``DIR/report.md``
(LaTeX), ``DIR/results.json`` (every figure's data, every table, every claim result, metadata)
and the PNGs the sections draw. A theory's planned experiments, its section and its claims are tasks of one
run (serially, or on worker processes: ``workers``): the experiments first, then the section, which only
draws them, then the claims, which share them through the run's store. results.json is rewritten after
every finished task, so an interrupted run keeps what it finished (``"complete": false`` until the end).
"""

from __future__ import annotations

import datetime
import importlib
import platform
import shutil
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable, Sequence

from ..base import __version__
from ..checks.claim import PROFILES, select
from ..checks.runner import jsonable, write_json
from .claims import ClaimTasks, batches_for
from ..experiments.scheduler import run_tasks
from ..experiments import tasks as run_state
from ..experiments.tasks import Outcome, Task
from ..experiments.store import Store
from ..base.files import write_atomically
from ..report.results import derivation_dict, exit_status, summary_line
from ..base.arguments import backend as checked_backend, integer
from ..base.backend import Backend, get_backend
from ..report.markdown import render_markdown
from ..report.render import render_html
from ..report.section import Section, TheoryOutcome
from ..theories import BUILTIN, TheoryModules, concise, load
from ..theories.catalogue import UserFileError, user_file, user_file_errors

THEORIES: tuple[TheoryModules, ...] = BUILTIN
"""The theories a report covers by default (the papers' three), in report order; ``theories=`` adds others."""


def chosen_theories(only: str | None, theories: Sequence[TheoryModules] | None = None) -> list[TheoryModules]:
    """The theories (default :data:`THEORIES`) that ``only`` names (:func:`~attnverify.checks.claim.select`); a
    ValueError naming them all when it names none."""
    theories = list(THEORIES if theories is None else theories)
    chosen = select(theories, only)
    if not chosen:
        raise ValueError(f"only={only!r} matches no theory; the theories are {', '.join(t.name for t in theories)}")
    return chosen


def _versions() -> dict[str, str]:
    versions = {"attnverify": __version__, "python": platform.python_version()}
    for package in ("sympy", "numpy", "scipy", "hypothesis", "matplotlib"):
        try:
            versions[package] = importlib.import_module(package).__version__
        except Exception:
            versions[package] = "not installed"
    return versions


def _metadata(profile: str, backend: Backend, seed: int, only: str | None) -> dict:
    return {
        "generator": "attnverify report",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "profile": profile,
        "backend": backend.name,
        "seed": seed,
        "only": only,
        "versions": _versions(),
    }


def _section_dict(outcome: TheoryOutcome) -> dict:
    section = outcome.section
    entry: dict = {"theory": outcome.theory, "seconds": round(outcome.seconds, 3),
                   "experiment_seconds": {name: round(seconds, 3) for name, seconds in outcome.experiments.items()},
                   "errors": outcome.errors, "warnings": outcome.warnings}
    if section is None:
        return entry
    if outcome.rendered is None:  # printing the derivations (sympy → LaTeX) takes seconds: once per section
        outcome.rendered = _rendered_section(section)
    entry.update(outcome.rendered)
    return entry


def _rendered_section(section: Section) -> dict:
    return dict(
        title=section.title,
        introduction=section.introduction,
        derivations=[derivation_dict(d) for d in section.derivations],
        figures=[{"filename": f.filename, "caption": f.caption, "data": f.data} for f in section.figures],
        tables=[{"caption": t.caption, "header": t.header, "rows": t.rows} for t in section.tables],
    )


def report_document(outcomes: list[TheoryOutcome], metadata: dict, *, not_run: list[str]) -> dict:
    """The content of results.json; ``not_run`` names the sections and claims still to come."""
    claims = [c for o in outcomes for c in o.claims]
    return jsonable({
        "metadata": metadata,
        "complete": not not_run,
        "not_run": not_run,
        "ok": all(c["ok"] for c in claims) and not any(o.errors for o in outcomes),
        "summary": summary_line(claims),
        "exit_status": 1 if any(o.errors for o in outcomes) else exit_status(claims),
        "sections": [_section_dict(o) for o in outcomes],
        "claims": claims,
    })


def _write_results(out_dir: Path, outcomes: list[TheoryOutcome], metadata: dict, *, not_run: list[str]) -> dict:
    document = report_document(outcomes, metadata, not_run=not_run)
    write_json(document, out_dir / "results.json")
    return document


def _build_section(outcome: TheoryOutcome, theory: TheoryModules, out_dir: Path, *, profile: str, backend: Backend,
                   seed: int, progress: Callable[[str], None], store: Store) -> None:
    build_section = None
    try:
        build_section = theory.section_builder()
        section = build_section(out_dir, profile=profile, backend=backend, seed=seed, progress=progress, store=store)
        if not isinstance(section, Section):
            raise TypeError(f"build_section of {outcome.theory} returned {type(section).__name__}, not Section")
    except Exception as error:
        where = user_file(theory)
        located = "" if where is None else UserFileError(where, error, fallback=_users_section(theory, build_section))
        outcome.errors.append((f"{located.first_line}\n" if located else "") + traceback.format_exc())
        return
    outcome.section = section
    for figure in section.figures:
        if not (out_dir / figure.filename).is_file():
            outcome.warnings.append(f"figure file {figure.filename!r} was not written into the report directory")


def _users_section(theory: TheoryModules, builder):
    """The section function a user wrote (``@theory.section``, or ``build_section``), to point at when the error's
    traceback has no frame of the user's code."""
    form = concise(load(theory.section))
    return getattr(form, "_section", None) if form is not None else builder


def _users_plan(theory: TheoryModules):
    """The user's ``plan_experiments`` (or ``@theory.experiments`` function), to point at when what it returned is
    refused."""
    module = load(theory.experiments or theory.section)
    form = concise(module)
    return getattr(form, "_plan", None) if form is not None else getattr(module, "plan_experiments", None)


def section_task(theory: TheoryModules, out_dir: str, profile: str, backend: str, seed: int, store: str) -> TheoryOutcome:
    """A task of the run (:mod:`attnverify.experiments.scheduler`): build ``theory``'s section into
    ``out_dir``, its experiments in the run's store folder ``store``, and print its derivations once."""
    outcome = TheoryOutcome(theory.name)
    start = time.perf_counter()
    _build_section(outcome, theory, Path(out_dir), profile=profile, backend=get_backend(backend), seed=seed,
                   progress=run_state.progress, store=Store(store))
    if outcome.section is not None:
        outcome.rendered = _rendered_section(outcome.section)
    outcome.seconds = time.perf_counter() - start
    return outcome


def experiment_task(theory: TheoryModules, label: str, profile: str, backend: str, seed: int, store: str) -> float:
    """A task of the run: compute the planned experiment ``label`` of ``theory`` into the store folder ``store``
    (planned again here, so that a user's file needs no pickling); returns the seconds it took."""
    start = time.perf_counter()
    plans = {p.label: p for p in theory.planned_experiments(profile=profile, seed=seed, backend=backend)}
    plan = plans[label]
    Store(store).get(plan.experiment, **dict(plan.parameters))
    return time.perf_counter() - start


SECTION_SUFFIX = " (section)"


def _section_name(theory: str) -> str:
    return f"{theory}{SECTION_SUFFIX}"


def _experiment_name(theory: str, plan) -> str:
    return f"{theory}: {plan.label}"


def build_report(
    out_dir: str | Path,
    *,
    profile: str = "quick",
    backend: str | Backend | None = None,
    seed: int = 0,
    only: str | None = None,
    progress: Callable[[str], None] | None = None,
    examples: int | None = None,
    workers: int = 1,
    theories: Sequence[TheoryModules] | None = None,
    scheduler: str | None = None,
    store: str | Path | None = None,
    latex: bool = False,
) -> dict:
    """Write the report of every theory of ``theories`` (default :data:`THEORIES`; those ``only`` names)
    into ``out_dir`` and return the results.json document. A user's theory
    (``attnverify.theories.from_file("mine.py")``) goes through the same pipeline as the built-in ones. ``examples`` overrides every claim's number of
    examples for the profile. ``workers`` > 1 runs the sections and claims on that many worker processes
    (a theory's claims start after its section, whose experiments they share through the run's store);
    the results are the same as with one. ``scheduler`` (``"local:N"`` or a Dask scheduler's address) runs them
    on a Dask cluster instead (:mod:`attnverify.experiments.cluster`), with the same results. ``store`` is the
    folder of the run's experiments (default: a temporary folder, removed at the end): one that every worker can
    reach on a cluster, and one a rerun reuses (every experiment already there is read, not computed again).
    ``latex`` also writes ``report.tex`` (:mod:`.latex`; figures as the PDFs beside their PNGs).

    A section that fails to build, or a claim that crashes, is reported in place (with its
    traceback) and the build goes on; ``document["ok"]`` is True only when nothing failed and
    every claim came out as expected.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    seed = integer("seed", seed, 0)
    if examples is not None:
        examples = integer("examples", examples, 1)
    workers = integer("workers", workers, 1)
    if scheduler is not None:
        from ..experiments.cluster import parse_scheduler

        parse_scheduler(scheduler)  # a bad address is refused before any work
    chosen = chosen_theories(only, theories)
    by_name = {t.name: t for t in chosen}
    theories = [t.name for t in chosen]
    backend = checked_backend(backend)
    say = progress or (lambda message: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    metadata = _metadata(profile, backend, seed, only)
    if examples is not None:
        metadata["examples"] = examples
    claims = {}
    for t in theories:
        with user_file_errors(user_file(by_name[t])):
            claims[t] = by_name[t].claim_list()
    outcomes = {t: TheoryOutcome(t) for t in theories}
    keep_store = store is not None
    if keep_store:
        Path(store).mkdir(parents=True, exist_ok=True)
        store = str(Path(store).resolve())
    else:
        store = tempfile.mkdtemp(prefix="attnverify-store-")
    common = dict(profile=profile, backend=backend.name, seed=seed, store=store)
    plans = {}
    for t in theories:  # a user's plan is refused here, at its line, before any task runs
        with user_file_errors(user_file(by_name[t]), fallback=lambda: _users_plan(by_name[t])):
            plans[t] = by_name[t].planned_experiments(profile=profile, seed=seed, backend=backend.name)
    experiment_tasks = {t: [Task(_experiment_name(t, plan), experiment_task,
                                 dict(theory=by_name[t], label=plan.label, **common),
                                 after=tuple(_experiment_name(t, a) for a in plan.after)) for plan in plans[t]]
                        for t in theories}
    experiment_of = {task.name: t for t in theories for task in experiment_tasks[t]}
    sections = {t: Task(_section_name(t), section_task, dict(theory=by_name[t], out_dir=str(out_dir), **common),
                        after=tuple(task.name for task in experiment_tasks[t])) for t in theories}
    theory_of = {c.name: t for t in theories for c in claims[t]}
    checks = ClaimTasks([(by_name[t], c) for t in theories for c in claims[t]], profile=profile, backend=backend,
                        seed=seed, examples=examples, store=store, say=say,
                        batches=batches_for(workers, scheduler),
                        positions={c.name: (k, len(claims[t])) for t in theories for k, c in enumerate(claims[t], 1)},
                        after={c.name: (_section_name(t),) for t in theories for c in claims[t]})
    finished_claims: dict[str, dict] = dict(checks.results)  # kept from an earlier run with this store
    claim_tasks = {t: [task for task in checks.tasks if theory_of[task.arguments["name"]] == t] for t in theories}
    if workers == 1:  # theory by theory: the first theory's results are complete first
        tasks = [task for t in theories for task in (*experiment_tasks[t], sections[t], *claim_tasks[t])]
    else:  # every experiment first (the longest tasks), then the sections, each unlocking its claims
        tasks = ([task for t in theories for task in experiment_tasks[t]] + [sections[t] for t in theories]
                 + [task for t in theories for task in claim_tasks[t]])
    section_seconds: dict[str, float] = {}

    def listed() -> list[TheoryOutcome]:
        for t in theories:
            outcomes[t].claims = [finished_claims[c.name] for c in claims[t] if c.name in finished_claims]
        return [outcomes[t] for t in theories]

    def not_run() -> list[str]:
        return [task.name for task in tasks if task.name not in done and not checks.is_batch(task.name)] + [
            "index.html and report.md"]

    def on_start(task: Task) -> None:
        if task.function is experiment_task:
            say(f"{task.name}: computing")
        elif task.function is section_task:
            say(f"{task.arguments['theory'].name}: building the section")
        else:
            checks.started(task)

    def on_done(outcome: Outcome) -> None:
        done.add(outcome.name)
        if checks.owns(outcome.name):
            result = checks.finished(outcome)
            if result is None:  # a batch of a claim's examples
                return
            finished_claims[outcome.name] = result
            theory = theory_of[outcome.name]
        elif outcome.name in experiment_of:
            theory = experiment_of[outcome.name]
            if outcome.error is None:
                outcomes[theory].experiments[outcome.name.split(": ", 1)[1]] = outcome.result
                say(f"{outcome.name}: done ({outcome.result:.1f} s)")
            else:
                outcomes[theory].warnings.append(f"experiment {outcome.name} failed in its own task (the section "
                                                 f"computes it again):\n{outcome.error}")
        else:  # a section
            theory = outcome.name.removesuffix(SECTION_SUFFIX)
            if outcome.error is None:
                outcome.result.warnings[:0] = outcomes[theory].warnings  # those of its experiments' tasks
                outcome.result.experiments = outcomes[theory].experiments
                outcomes[theory] = outcome.result
                section_seconds[theory] = outcome.result.seconds
            else:
                outcomes[theory].errors.append(outcome.error)
        # the time spent on the theory: its experiments', section's and claims' (the same on one worker or several)
        outcomes[theory].seconds = section_seconds.get(theory, 0.0) + sum(
            finished_claims[c.name]["seconds"] for c in claims[theory] if c.name in finished_claims) + sum(
            outcomes[theory].experiments.values())
        _write_results(out_dir, listed(), metadata, not_run=not_run())

    done: set[str] = set()
    try:
        run_tasks(tasks, workers=workers, on_start=on_start, on_done=on_done, say=say, scheduler=scheduler)
    finally:
        if not keep_store:
            shutil.rmtree(store, ignore_errors=True)
    final = listed()
    say("writing index.html and report.md")
    write_atomically(out_dir / "index.html", render_html(final, metadata))
    write_atomically(out_dir / "report.md", render_markdown(final, metadata))
    if latex:
        from ..report.latex import render_latex

        say("writing report.tex")
        write_atomically(out_dir / "report.tex", render_latex(final, metadata, out_dir))
    return _write_results(out_dir, final, metadata, not_run=[])
