"""Build the report: each theory's section, then its built-in claims, into one directory.

``build_report(DIR)`` writes ``DIR/index.html`` (MathML, no network resources), ``DIR/report.md``
(LaTeX), ``DIR/report.txt`` (plain text), ``DIR/results.json`` (every figure's data, every table, every claim result, metadata)
and the PNGs the sections draw. A theory's planned experiments, its section and its claims are tasks of one
run of `run_claims_as_tasks` (serially, or on worker processes: ``workers``): the experiments
first, then the section, which only draws them, then the claims, which share them through the run's store. results.json
is rewritten after every finished task, so an interrupted run keeps what it finished (``"complete": false`` until the
end).
"""

from __future__ import annotations

import datetime
import importlib
import os
import platform
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..base import __version__
from ..checks.claim import Claim, select
from ..checks.runner import jsonable, write_json
from .claims import exit_status, run_claims_as_tasks, run_store
from ..execution import tasks as run_state
from ..execution.tasks import ClaimFinished, Outcome, Task
from ..execution.settings import RunSettings
from ..base.files import fingerprint, write_atomically
from ..checks.story import summary_line
from ..report.markdown import render_markdown
from ..report.render import render_html
from ..report.results import derivation_dict, render_text
from ..report.section import Section, TheoryOutcome
from ..theories import builtin
from ..theories.catalogue import UserFileError, user_file, user_file_errors

THEORIES: Sequence | None = None
"""The theories a report covers by default, in report order: None for the papers' three
(`attnverify.theories.builtin`); ``theories=`` gives others (a user's file:
`attnverify.theories.from_file`)."""


def default_theories() -> list:
    """`THEORIES`, or the built-in theories when it is None."""
    return builtin() if THEORIES is None else list(THEORIES)


def chosen_theories(only: str | None, theories: Sequence | None = None) -> list:
    """The theories (default `default_theories`) that ``only`` names ([`select`][attnverify.checks.claim.select]);
    a ValueError naming them all when it names none."""
    theories = default_theories() if theories is None else list(theories)
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


PACKAGE = Path(__file__).resolve().parent.parent

NOT_RESULTS = ("ATTNVERIFY_CACHE", "ATTNVERIFY_DOCS_REPORT", "ATTNVERIFY_KEEP_DERIVATIONS")
"""The ``ATTNVERIFY_*`` settings that say where things are kept, not what a run computes."""


def store_key(*files: str | Path, package: Path = PACKAGE) -> str:
    """The name of a store folder for runs of this code: a fingerprint of every file of ``package``, of ``files``
    (a report's ``--with`` files), of the versions results.json records and of the ``ATTNVERIFY_*`` settings but
    `NOT_RESULTS`. The store keys a claim's result by its own file, profile, backend, seed and number of
    examples, and an experiment by its parameters only, so a folder named by this key is read back only by runs
    of the same code (``make report`` and ``make docs`` share one)."""
    paths = sorted(p for p in Path(package).rglob("*")
                   if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")
    settings = sorted((k, v) for k, v in os.environ.items() if k.startswith("ATTNVERIFY_") and k not in NOT_RESULTS)
    return fingerprint(repr(sorted(_versions().items())), repr(settings),
                       *(part for p in paths for part in (str(p.relative_to(package)), p.read_bytes())),
                       *(part for f in files for part in (str(f), Path(f).read_bytes())))


def _metadata(settings: RunSettings, only: str | None) -> dict:
    return {
        "generator": "attnverify report",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "profile": settings.profile,
        "backend": settings.backend,
        "seed": settings.seed,
        "only": only,
        "versions": _versions(),
        **({} if settings.examples is None else {"examples": settings.examples}),
        "store": settings.folder,
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


def _build_section(outcome: TheoryOutcome, theory, out_dir: Path, settings: RunSettings,
                   progress: Callable[[str], None]) -> None:
    try:  # Theory.build_section refuses a section function that returns no Section
        section = theory.build_section(out_dir, settings, progress=progress)
    except Exception as error:
        where = user_file(theory)
        located = "" if where is None else UserFileError(where, error, fallback=theory._section)
        outcome.errors.append((f"{located.first_line}\n" if located else "") + traceback.format_exc())
        return
    outcome.section = section
    for figure in section.figures:
        if not (out_dir / figure.filename).is_file():
            outcome.warnings.append(f"figure file {figure.filename!r} was not written into the report directory")


def section_task(theory, out_dir: str, settings: RunSettings) -> TheoryOutcome:
    """A task of the run of ``settings`` (`attnverify.execution.scheduler`): build ``theory``'s section into
    ``out_dir``, its experiments in the run's store, and print its derivations once."""
    outcome = TheoryOutcome(theory.name)
    start = time.perf_counter()
    _build_section(outcome, theory, Path(out_dir), settings.of_task(), run_state.progress)
    if outcome.section is not None:
        outcome.rendered = _rendered_section(outcome.section)
    outcome.seconds = time.perf_counter() - start
    return outcome


def experiment_task(theory, label: str, settings: RunSettings) -> float:
    """A task of the run of ``settings``: compute the planned experiment ``label`` of ``theory`` into the run's store
    (planned again here, so that a user's file needs no pickling); returns the seconds it took."""
    start = time.perf_counter()
    plans = {p.label: p for p in theory.plan_experiments(settings)}
    plan = plans[label]
    settings.of_task().store.result(plan)
    return time.perf_counter() - start


SECTION_SUFFIX = " (section)"


def _section_name(theory: str) -> str:
    return f"{theory}{SECTION_SUFFIX}"


def _experiment_name(theory: str, plan) -> str:
    return f"{theory}: {plan.label}"


@dataclass
class Sections:
    """The sections' side of a report's run (the tasks `run_claims_as_tasks` runs ahead of the
    claims): each theory's planned experiments (``plans``) and its section as tasks, a theory's section after its
    experiments and its claims after its section; what their outcomes bring to each theory's
    `TheoryOutcome`; and results.json rewritten after each of them and each claim."""

    theories: list
    claims: dict[str, list[Claim]]
    plans: dict[str, list]
    out_dir: Path
    metadata: dict
    settings: RunSettings  # the run's, its store in a folder
    say: Callable[[str], None]
    outcomes: dict[str, TheoryOutcome] = field(init=False)
    tasks: list[Task] = field(init=False)

    def __post_init__(self) -> None:
        names = [t.name for t in self.theories]
        self.outcomes = {t: TheoryOutcome(t) for t in names}
        self._section_seconds: dict[str, float] = {}
        experiments = {t.name: [Task(_experiment_name(t.name, plan), experiment_task,
                                     dict(theory=t, label=plan.label, settings=self.settings),
                                     after=tuple(_experiment_name(t.name, a) for a in plan.after))
                                for plan in self.plans[t.name]] for t in self.theories}
        self._experiment_of = {task.name: t for t in names for task in experiments[t]}
        sections = {t.name: Task(_section_name(t.name), section_task,
                                 dict(theory=t, out_dir=str(self.out_dir), settings=self.settings),
                                 after=tuple(task.name for task in experiments[t.name])) for t in self.theories}
        if self.settings.workers == 1:  # theory by theory: the first theory's results are complete first
            self.tasks = [task for t in names for task in (*experiments[t], sections[t])]
        else:  # every experiment first (the longest tasks), then the sections, each unlocking its claims
            self.tasks = [task for t in names for task in experiments[t]] + [sections[t] for t in names]

    @property
    def after(self) -> dict[str, tuple[str, ...]]:
        """What each claim waits for: its theory's section, whose experiments it shares through the store."""
        return {c.name: (_section_name(t),) for t, claims in self.claims.items() for c in claims}

    @property
    def positions(self) -> dict[str, tuple[int, int]]:
        """Each claim's ``(k, n)``: its place among its theory's claims."""
        return {c.name: (k, len(claims)) for claims in self.claims.values() for k, c in enumerate(claims, 1)}

    def started(self, task: Task) -> None:
        if task.function is experiment_task:
            self.say(f"{task.name}: computing")
        else:
            self.say(f"{task.arguments['theory'].name}: building the section")

    def finished(self, outcome: Outcome) -> None:
        if outcome.name in self._experiment_of:
            theory = self._experiment_of[outcome.name]
            if outcome.error is None:
                self.outcomes[theory].experiments[outcome.name.split(": ", 1)[1]] = outcome.result
                self.say(f"{outcome.name}: done ({outcome.result:.1f} s)")
            else:
                self.outcomes[theory].warnings.append(f"experiment {outcome.name} failed in its own task (the "
                                                      f"section computes it again):\n{outcome.error}")
            return
        theory = outcome.name.removesuffix(SECTION_SUFFIX)
        if outcome.error is None:
            outcome.result.warnings[:0] = self.outcomes[theory].warnings  # those of its experiments' tasks
            outcome.result.experiments = self.outcomes[theory].experiments
            self.outcomes[theory] = outcome.result
            self._section_seconds[theory] = outcome.result.seconds
        else:
            self.outcomes[theory].errors.append(outcome.error)

    def listed(self, finished: list[dict]) -> list[TheoryOutcome]:
        """Every theory's outcome with its ``finished`` claims, and the time spent on it: its experiments',
        section's and claims' (the same on one worker or several)."""
        by_name = {r["name"]: r for r in finished}
        for t, claims in self.claims.items():
            outcome = self.outcomes[t]
            outcome.claims = [by_name[c.name] for c in claims if c.name in by_name]
            outcome.seconds = (self._section_seconds.get(t, 0.0) + sum(r["seconds"] for r in outcome.claims)
                               + sum(outcome.experiments.values()))
        return [self.outcomes[t] for t in self.claims]

    def write(self, finished: list[dict], not_run: list[str]) -> None:
        """Rewrite results.json with the ``finished`` claims; ``not_run`` names the tasks still to come."""
        _write_results(self.out_dir, self.listed(finished), self.metadata, not_run=[*not_run, PAGES])


PAGES = "index.html, report.md and report.txt"
"""What a report writes last, named among what has not run until then."""


def build_report(
    out_dir: str | Path,
    settings: RunSettings | None = None,
    *,
    only: str | None = None,
    progress: Callable[[str], None] | None = None,
    theories: Sequence | None = None,
    latex: bool = False,
    **options,
) -> dict:
    """Write the report of every theory of ``theories`` (default `THEORIES`; those ``only`` names)
    into ``out_dir`` and return the results.json document, in the run of ``settings`` (default `RunSettings()`,
    changed by the settings named as keywords: ``build_report("report", profile="thorough", workers=4)``). A user's
    theory (``attnverify.theories.from_file("mine.py")``) goes through the same pipeline as the built-in ones. The
    settings' ``examples`` overrides every claim's number of examples for the profile. ``workers`` > 1 runs the
    sections and claims on that many worker processes (a theory's claims start after its section, whose experiments
    they share through the run's store); the results are the same as with one. ``scheduler`` (``"local:N"`` or a Dask
    scheduler's address) runs them on a Dask cluster instead (`attnverify.execution.cluster`), with the same results.
    ``store`` is the folder of the run's experiments (default: a temporary folder, removed at the end): one that
    every worker can reach on a cluster, and one a rerun reuses (every experiment already there is read, not computed
    again); results.json's metadata names it (``store``) and the claims read back from it (``kept_claims``).
    ``latex`` also writes ``report.tex`` (`.latex`; figures as the PDFs beside their PNGs).

    The run is `run_claims_as_tasks` with the sections' tasks (`Sections`) ahead of the
    claims. A section that fails to build, or a claim that crashes, is reported in place (with its
    traceback) and the build goes on; ``document["ok"]`` is True only when nothing failed and
    every claim came out as expected.
    """
    settings = RunSettings.given(settings, **options)
    chosen = chosen_theories(only, theories)
    say = progress or (lambda message: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    metadata = _metadata(settings, only)
    # the claims whose results this run read back from the store instead of checking them (announced before the
    # first task, so results.json says so from its first writing)
    metadata["kept_claims"] = kept = []

    def noted(message: str) -> None:
        if isinstance(message, ClaimFinished) and message.kept:
            kept.append(message.claim)
        say(message)

    claims, plans = {}, {}
    for t in chosen:
        with user_file_errors(user_file(t)):
            claims[t.name] = t.claim_list()
    for t in chosen:  # a user's plan is refused here, at its line, before any task runs
        with user_file_errors(user_file(t), fallback=lambda: t._plan):  # the user's function, to point at
            plans[t.name] = t.plan_experiments(settings)
    with run_store(settings) as settings:
        sections = Sections(chosen, claims, plans, out_dir, metadata, settings, say=say)
        finished = run_claims_as_tasks([c for t in chosen for c in claims[t.name]], chosen, settings, say=noted,
                                       on_result=sections.write, ahead=sections, after=sections.after,
                                       positions=sections.positions)
    final = sections.listed(finished)
    say(f"writing {PAGES}")
    write_atomically(out_dir / "index.html", render_html(final, metadata))
    write_atomically(out_dir / "report.md", render_markdown(final, metadata))
    write_atomically(out_dir / "report.txt", render_text(final, metadata))
    if latex:
        from ..report.latex import render_latex

        say("writing report.tex")
        write_atomically(out_dir / "report.tex", render_latex(final, metadata, out_dir))
    return _write_results(out_dir, final, metadata, not_run=[])
