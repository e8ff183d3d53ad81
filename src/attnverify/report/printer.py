"""One walk over a report, a printer per format (sympy's ``Printer`` as the model).

`ReportPrinter.doprint` visits a run once: the run's settings and summary, then per theory the errors and warnings
of its build, its introduction, derivations (step by step, `ReportPrinter.derivation`), figures, tables and claims
(their table, then each claim's story, `attnverify.checks.story.StoryPrinter.story`). A format is a subclass that
overrides only the leaves: `attnverify.report.render.HtmlPrinter`, `attnverify.report.markdown.MarkdownPrinter`,
`attnverify.report.latex.LatexPrinter`, `attnverify.report.results.TextPrinter`.
"""

from __future__ import annotations

from dataclasses import replace

from ..checks.story import UNDECIDED, ClaimStory, StoryPrinter, claim_story, format_parameters, format_value, \
    summary_line, verdict
from ..derivations.derivation import Derivation
from ..derivations.steps import StepCheck, counts, counts_text
from .section import Figure, Table, TheoryOutcome

TITLE = "attnverify report"

#: The claims table's columns, in every format.
CLAIM_COLUMNS = ("claim", "statement", "expected", "status", "verdict", "key figures", "seconds")


def report_summary(outcomes: list[TheoryOutcome]) -> tuple[str, str]:
    """The run's one-line summary (`summary_line`, with the number of build errors) and its state: ``ok``,
    ``undecided`` or ``unexpected`` (a build error or an unexpected claim)."""
    claims = [c for o in outcomes for c in o.claims]
    verdicts = [verdict(c) for c in claims]
    text = summary_line(claims) + "."
    errors = sum(len(o.errors) for o in outcomes)
    if errors:
        text += f" {errors} error(s) while building the report (see below)."
    state = ("unexpected" if errors or "UNEXPECTED" in verdicts else
             "undecided" if "UNDECIDED" in verdicts else "ok")
    return text, state


def metadata_rows(metadata: dict) -> list[list]:
    """The run's settings and package versions, as the report's "Run" table shows them."""
    rows = []
    for key in ("date", "profile", "backend", "seed", "only", "store"):
        if metadata.get(key) is not None:
            rows.append([key, metadata[key]])
    if metadata.get("kept_claims"):
        rows.append(["claims read back from the store", len(metadata["kept_claims"])])
    for package, version in (metadata.get("versions") or {}).items():
        rows.append([package, version])
    return rows


def section_title(outcome) -> str:
    """A section's heading: its title, or the theory's name where the section could not be built."""
    return outcome.section.title if outcome.section is not None else outcome.theory


def _pointing_to_figures(story: ClaimStory, numbers: list[int]) -> ClaimStory:
    """``story`` with a note naming the report's figures that show its claim (none: as it is)."""
    if not numbers:
        return story
    where = ", ".join(f"Figure {n}" for n in numbers)
    return replace(story, notes=(*story.notes, f"shown in {where}"))


class ReportPrinter(StoryPrinter):
    """The walk of a report and of a derivation; the leaves (every method below `derivation`) are the format's."""

    def doprint(self, outcomes: list[TheoryOutcome], metadata: dict) -> str:
        """The whole report of ``outcomes`` (`TheoryOutcome`, in order) and the run's ``metadata``."""
        parts = [self.title(TITLE), self.settings(metadata_rows(metadata)), self.summary(*report_summary(outcomes)),
                 self.contents(outcomes)]
        figure_number = 0
        shown_in: dict[str, list[int]] = {}  # claim name -> the figures that show it
        for outcome in outcomes:
            parts.append(self.section_heading(outcome))
            parts += [self.build_error(error) for error in outcome.errors]
            parts += [self.warning(warning) for warning in outcome.warnings]
            section = outcome.section
            if section is not None:
                parts.append(self.introduction(section.introduction))
                parts += self.group("Derivations", [self.derivation(d) for d in section.derivations])
                figures = []
                for figure in section.figures:
                    figure_number += 1
                    figures.append(self.figure(figure, figure_number))
                    for name in getattr(figure, "claims", ()):
                        shown_in.setdefault(name, []).append(figure_number)
                parts += self.group("Figures", figures)
                parts += self.group("Tables", [self.table(t) for t in section.tables])
            if outcome.claims:
                stories = [_pointing_to_figures(claim_story(c), shown_in.get(c["name"], [])) for c in outcome.claims]
                parts += [self.heading("Claims"), self.claims_table(stories),
                          self.stories([self.story(s) for s in stories])]
            parts.append(self.section_end(outcome))
        return self.document([part for part in parts if part])

    def derivation(self, derivation: Derivation) -> str:
        """A derivation: its heading (title, source, the count of its steps' checks), then each step with its check."""
        checks = derivation.checks()
        steps = [self.step(k, step, check) for k, (step, check) in enumerate(zip(derivation.steps, checks), 1)]
        return self.derivation_block(derivation, counts_text(counts(checks)), steps)

    # ------------------------------------------------------------------ the leaves

    def document(self, parts: list[str]) -> str:
        raise NotImplementedError

    def title(self, text: str) -> str:
        raise NotImplementedError

    def settings(self, rows: list[list]) -> str:
        """The run's settings and package versions (`metadata_rows`)."""
        raise NotImplementedError

    def summary(self, text: str, state: str) -> str:
        raise NotImplementedError

    def contents(self, outcomes: list[TheoryOutcome]) -> str:
        return ""

    def section_heading(self, outcome: TheoryOutcome) -> str:
        raise NotImplementedError

    def section_end(self, outcome: TheoryOutcome) -> str:
        return ""

    def build_error(self, error: str) -> str:
        """A part of the section that could not be built, with its traceback."""
        raise NotImplementedError

    def warning(self, text: str) -> str:
        raise NotImplementedError

    def introduction(self, text: str) -> str:
        """The section's introduction, Markdown text with ``$…$`` math."""
        raise NotImplementedError

    def group(self, title: str, parts: list[str]) -> list[str]:
        """The section's derivations, figures or tables, under ``title`` where the format gives them one."""
        return parts

    def heading(self, text: str) -> str:
        raise NotImplementedError

    def derivation_block(self, derivation: Derivation, checked: str, steps: list[str]) -> str:
        raise NotImplementedError

    def step(self, number: int, step, check: StepCheck) -> str:
        raise NotImplementedError

    def figure(self, figure: Figure, number: int) -> str:
        raise NotImplementedError

    def table(self, table: Table) -> str:
        raise NotImplementedError

    def claims_table(self, stories: list[ClaimStory]) -> str:
        raise NotImplementedError

    def stories(self, parts: list[str]) -> str:
        """The theory's claims' stories, each told by `story`."""
        raise NotImplementedError


class ParagraphStory:
    """A claim's story as a report page tells it (HTML, Markdown): its sentences are written here once, and a format
    gives only a paragraph, a preformatted block and how parts are joined. Put it before `ReportPrinter` among a
    printer's bases: it replaces the terminal's leaves of `StoryPrinter` that tell the shown example."""

    def paragraph(self, text: str, css: str = "") -> str:
        """``text`` as a paragraph (escaped for the format); ``css``: a class where the format has classes."""
        raise NotImplementedError

    def preformatted(self, text: str, css: str = "") -> str:
        """``text`` kept as it is (a traceback), in a block of its own."""
        raise NotImplementedError

    def joined(self, parts: list[str]) -> str:
        raise NotImplementedError

    def statement(self, text: str) -> str:
        return self.paragraph(text)

    def drawn(self, text: str) -> str:
        return self.paragraph(f"Drawn: {text}", "drawn")

    def counterexample(self, story: ClaimStory) -> str:
        """Its note, its standard error and the shrink trials it took."""
        parts = []
        if story.counterexample_note:
            parts.append(self.paragraph(f"Counterexample note: {story.counterexample_note}"))
        if story.counterexample_standard_error is not None:
            parts.append(self.paragraph(f"Standard error: {format_value(story.counterexample_standard_error)}"))
        parts.append(self.paragraph(f"Shrink trials: {story.shrink_trials}"))
        return self.joined(parts)

    def failure(self, story: ClaimStory) -> str:
        """The example the claim's code failed on, and its traceback."""
        failed = story.failure
        return self.joined([self.paragraph(f"Error in the claim's code (not a counterexample) at "
                                           f"{format_parameters(failed.get('parameters') or {})}, "
                                           f"seed {failed.get('seed')}:"),
                            self.preformatted(failed["error"], "error")])

    def undecided(self, story: ClaimStory) -> str:
        return self.paragraph(f"Inconclusive: {UNDECIDED}"
                              + (f"; deciding them all would take {story.needed}" if story.needed else "") + ".")

    def note(self, text: str) -> str:
        return self.paragraph(f"Note: {text}")
