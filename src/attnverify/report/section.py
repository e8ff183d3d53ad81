"""What a theory contributes to the report: a section of derivations, figures and tables.

A theory's section function (registered with ``Theory.section``) is called as::

    build_section(out_dir: pathlib.Path, settings: RunSettings, progress: Callable[[str], None]) -> Section

It writes its PNG files into ``out_dir`` and returns `Figure` objects naming them (file
names relative to ``out_dir``); ``settings`` are the run's checked
[`RunSettings`][attnverify.execution.settings.RunSettings], whose ``store`` holds the run's experiment results, which
the theory's claims see too, so an experiment both need runs once; ``progress`` takes one short status line.
The builder adds the theory's claims; rendering lives in `attnverify.report.render`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..derivations.derivation import Derivation


@dataclass
class Figure:
    """A PNG in the report directory; ``data`` holds every number plotted (goes to results.json); ``claims``, the
    names of the claims it shows (each claim's story points to the figure)."""

    filename: str
    caption: str
    data: dict = field(default_factory=dict)
    claims: tuple[str, ...] = ()


@dataclass
class Table:
    """A table of numbers or text; ``rows`` are lists as long as ``header``."""

    caption: str
    header: list[str]
    rows: list[list]


@dataclass
class Section:
    """One theory's part of the report. ``introduction`` is Markdown text. A `attnverify.Theory`'s section
    function leaves ``theory``, ``title``, ``introduction`` and ``derivations`` empty: the theory fills them in."""

    theory: str = ""
    title: str = ""
    introduction: str = ""
    derivations: list[Derivation] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)


@dataclass
class TheoryOutcome:
    """What the builder got for one theory: its section (None if building it failed), the
    results of its claims (``ClaimResult.as_dict()``), errors met on the way, and the time spent."""

    theory: str
    section: Section | None = None
    claims: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0
    experiments: dict = field(default_factory=dict)  # planned experiment → seconds of its task
    rendered: dict | None = field(default=None, repr=False)  # the section as JSON, made once (report.builder)
