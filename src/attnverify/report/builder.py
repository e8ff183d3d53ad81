"""Build the report: each theory's section, then its built-in claims, into one directory.

``build_report(DIR)`` writes ``DIR/index.html`` (MathML, no network resources), ``DIR/report.md``
(LaTeX), ``DIR/results.json`` (every figure's data, every table, every claim result, metadata)
and the PNGs the sections draw. results.json is rewritten after the section and after every
claim, so an interrupted run keeps what it finished (``"complete": false`` until the end).
"""

from __future__ import annotations

import datetime
import importlib
import platform
import time
import traceback
from pathlib import Path
from typing import Callable

from .. import __version__
from ..checks import catalogue
from ..checks.claim import PROFILES
from ..checks.runner import jsonable, write_atomically, write_json
from ..numerics.arguments import backend as checked_backend, integer
from ..numerics.backend import Backend
from .render import equation_latex, render_html, render_markdown
from .results import run_claim_or_error
from .section import Section, TheoryOutcome

#: Theories with a report section, in report order; ``attnverify.report.<theory>`` provides it.
SECTIONS = ("single_location", "attention_paths", "conditional_mean")


def select_theories(only: str | None) -> list[str]:
    """The theories of :data:`SECTIONS` named (exactly, else by substring) by ``only``."""
    if not only:
        return list(SECTIONS)
    exact = [t for t in SECTIONS if t == only]
    chosen = exact or [t for t in SECTIONS if only in t]
    if not chosen:
        raise ValueError(f"only={only!r} matches no theory; the theories are {', '.join(SECTIONS)}")
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
        derivations=[
            {
                "name": d.name,
                "title": d.title,
                "source": d.source,
                "steps": [
                    {"description": s.description, "latex": equation_latex(s.expression), "text": str(s.expression)}
                    for s in d.steps
                ],
            }
            for d in section.derivations
        ],
        figures=[{"filename": f.filename, "caption": f.caption, "data": f.data} for f in section.figures],
        tables=[{"caption": t.caption, "header": t.header, "rows": t.rows} for t in section.tables],
    )


def results_document(outcomes: list[TheoryOutcome], metadata: dict, *, not_run: list[str]) -> dict:
    """The content of results.json; ``not_run`` names the sections and claims still to come."""
    claims = [c for o in outcomes for c in o.claims]
    return jsonable({
        "metadata": metadata,
        "complete": not not_run,
        "not_run": not_run,
        "ok": all(c["ok"] for c in claims) and not any(o.errors for o in outcomes),
        "sections": [_section_dict(o) for o in outcomes],
        "claims": claims,
    })


def _write_results(out_dir: Path, outcomes: list[TheoryOutcome], metadata: dict, *, not_run: list[str]) -> dict:
    document = results_document(outcomes, metadata, not_run=not_run)
    write_json(document, out_dir / "results.json")
    return document


def _build_section(outcome: TheoryOutcome, out_dir: Path, *, profile: str, backend: Backend, seed: int,
                   progress: Callable[[str], None]) -> None:
    try:
        provider = importlib.import_module(f"{__package__}.{outcome.theory}")
        section = provider.build_section(out_dir, profile=profile, backend=backend, seed=seed, progress=progress)
        if not isinstance(section, Section):
            raise TypeError(f"build_section of {outcome.theory} returned {type(section).__name__}, not Section")
    except Exception:
        outcome.errors.append(traceback.format_exc())
        return
    outcome.section = section
    for figure in section.figures:
        if not (out_dir / figure.filename).is_file():
            outcome.warnings.append(f"figure file {figure.filename!r} was not written into the report directory")


def build_report(
    out_dir: str | Path,
    *,
    profile: str = "quick",
    backend: str | Backend | None = None,
    seed: int = 0,
    only: str | None = None,
    progress: Callable[[str], None] | None = None,
    examples: int | None = None,
) -> dict:
    """Write the report of every theory in :data:`SECTIONS` (or those ``only`` names) into
    ``out_dir`` and return the results.json document. ``examples`` overrides every claim's number of
    examples for the profile.

    A section that fails to build, or a claim that crashes, is reported in place (with its
    traceback) and the build goes on; ``document["ok"]`` is True only when nothing failed and
    every claim came out as expected.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
    seed = integer("seed", seed, 0)
    if examples is not None:
        examples = integer("examples", examples, 1)
    theories = select_theories(only)
    backend = checked_backend(backend)
    say = progress or (lambda message: None)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    metadata = _metadata(profile, backend, seed, only)
    if examples is not None:
        metadata["examples"] = examples
    outcomes: list[TheoryOutcome] = []
    builtin = catalogue.builtin_claims()
    planned = {t: [f"{t} (section)"] + [c.name for c in builtin if c.theory == t] for t in theories}

    def still_to_run(theory: str, done: int) -> list[str]:
        """What is not finished after ``done`` items (section first, then claims) of ``theory``."""
        later = theories[theories.index(theory) + 1:]
        return planned[theory][done:] + [item for t in later for item in planned[t]] + ["index.html and report.md"]

    for theory in theories:
        outcome = TheoryOutcome(theory)
        outcomes.append(outcome)
        start = time.perf_counter()
        say(f"{theory}: building the section")
        _build_section(outcome, out_dir, profile=profile, backend=backend, seed=seed, progress=say)
        outcome.seconds = time.perf_counter() - start
        _write_results(out_dir, outcomes, metadata, not_run=still_to_run(theory, 1))
        claims = [c for c in builtin if c.theory == theory]
        for k, claim in enumerate(claims, 1):
            say(f"[{k}/{len(claims)}] {claim.name}: checking ({examples or claim.examples[profile]} examples)")
            result = run_claim_or_error(
                claim, profile=profile, backend=backend, seed=seed, examples=examples,
                progress=lambda c, i, n: say(f"[{k}/{len(claims)}] {c.name}: example {i}/{n}"),
            )
            outcome.claims.append(result.as_dict())
            outcome.seconds = time.perf_counter() - start
            say(f"[{k}/{len(claims)}] {claim.name}: {result.status}, "
                f"{'OK' if result.ok else 'UNEXPECTED'} ({result.seconds:.1f} s)")
            _write_results(out_dir, outcomes, metadata, not_run=still_to_run(theory, 1 + k))

    say("writing index.html and report.md")
    write_atomically(out_dir / "index.html", render_html(outcomes, metadata))
    write_atomically(out_dir / "report.md", render_markdown(outcomes, metadata))
    return _write_results(out_dir, outcomes, metadata, not_run=[])
