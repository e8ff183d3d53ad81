"""Claim results for the terminal: the results table, a claim's story as text (`attnverify.checks.story.story_text`,
what ``check`` and ``verify`` print) and the whole report as text (`TextPrinter`); a derivation as results.json
keeps it."""

from __future__ import annotations

from ..checks.story import ClaimStory, claim_story, format_value, key_figures, story_text, verdict
from .printer import ReportPrinter, section_title
from .section import Figure, Table, TheoryOutcome

#: Columns of the results table, in order.
COLUMNS = ("name", "expected", "status", "verdict", "examples", "seconds", "key figures")


def table_row(result: dict) -> list[str]:
    """One row of the results table, as the strings of `COLUMNS`."""
    return [
        result["name"],
        result["expect"],
        result["status"],
        verdict(result),
        str(len(result.get("examples") or [])),
        f"{result['seconds']:.2f}",
        key_figures(result),
    ]


def text_table(header: list[str], rows: list[list[str]]) -> str:
    """A plain-text table with padded columns (the last column is left unpadded)."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list) -> str:
        padded = [str(c).ljust(w) for c, w in zip(cells[:-1], widths[:-1])]
        return "  ".join([*padded, str(cells[-1])]).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def results_table(results: list[dict]) -> str:
    """The results table of a run, as plain text."""
    return text_table(list(COLUMNS), [table_row(r) for r in results])


def needs_details(result: dict) -> bool:
    """A result is spelled out when it is not as expected, or when it is a refutation or inconclusive."""
    return not result["ok"] or result["status"] in ("refuted", "inconclusive")


def result_details(result: dict, *, full_traceback: bool = True) -> str:
    """The full story of one result as text: parameters, the two sides, tolerance, note, error (``full_traceback``
    False: with the claim's own frames only), replay."""
    return story_text(claim_story(result), full_traceback=full_traceback)


def derivation_dict(derivation) -> dict:
    """A derivation as results.json keeps it: name, title, source, a count of its steps' check outcomes, and each
    step's sentence, LaTeX, text, exported name, kind and check (`StepCheck`)."""
    from ..derivations.steps import counts
    from .equations import equation_latex

    checks = derivation.checks()
    return {
        "name": derivation.name,
        "title": derivation.title,
        "source": derivation.source,
        "checks": counts(checks),
        "steps": [
            {"description": s.description, "latex": equation_latex(s.expression), "text": str(s.expression),
             "name": s.name, "kind": s.kind, "check": check.as_dict()}
            for s, check in zip(derivation.steps, checks)
        ],
    }


def _underlined(text: str, rule: str) -> str:
    return f"{text}\n{rule * len(text)}"


def _indented(text: str, by: str = "    ") -> str:
    return "\n".join(by + line for line in text.rstrip().splitlines())


class TextPrinter(ReportPrinter):
    """The report as plain text, for a terminal or a log: equations as sympy writes them (``str``), tables padded,
    each claim's story as ``check`` prints it (`StoryPrinter`'s leaves)."""

    def document(self, parts: list[str]) -> str:
        return "\n\n".join(parts) + "\n"

    def title(self, text: str) -> str:
        return _underlined(text, "=")

    def settings(self, rows: list[list]) -> str:
        return text_table(["setting", "value"], [[str(k), str(v)] for k, v in rows])

    def summary(self, text: str, state: str) -> str:
        return text

    def section_heading(self, outcome: TheoryOutcome) -> str:
        return _underlined(section_title(outcome), "=")

    def build_error(self, error: str) -> str:
        return "part of this section could not be built:\n" + _indented(error)

    def warning(self, text: str) -> str:
        return f"warning: {text}"

    def introduction(self, text: str) -> str:
        return text.strip()

    def heading(self, text: str) -> str:
        return _underlined(text, "-")

    def derivation_block(self, derivation, checked: str, steps: list[str]) -> str:
        lines = [derivation.title] + ([f"source: {derivation.source}"] if derivation.source else [])
        return "\n".join([*lines, f"steps checked: {checked}", *steps])

    def step(self, number: int, step, check) -> str:
        result = f" (result {step.name})" if step.name else ""
        return "\n".join([f"  {number}. {step.description}{result}", _indented(str(step.expression), " " * 6),
                          f"      check: {check.label()}"])

    def figure(self, figure: Figure, number: int) -> str:
        return f"Figure {number} ({figure.filename}). {figure.caption}"

    def table(self, table: Table) -> str:
        """The caption, then the rows padded to one width (a ragged row, or one without a header, is shown as it
        is: every cell, blanks where it has fewer)."""
        width = max([len(table.header), *(len(row) for row in table.rows)])
        if width == 0:
            return table.caption
        header = [str(h) for h in table.header] + [""] * (width - len(table.header))
        rows = [[format_value(v) for v in row] + [""] * (width - len(row)) for row in table.rows]
        return table.caption + "\n" + text_table(header, rows)

    def claims_table(self, stories: list[ClaimStory]) -> str:
        """Name, expected, status, verdict, seconds and key figures (the statement is in each story)."""
        return text_table(["claim", "expected", "status", "verdict", "seconds", "key figures"],
                          [[c.name, c.expect, c.status, c.verdict, f"{c.seconds:.2f}", c.key_figures] for c in stories])

    def stories(self, parts: list[str]) -> str:
        return "\n\n".join(parts)


def render_text(outcomes: list[TheoryOutcome], metadata: dict) -> str:
    """The whole report as plain text (``report.txt``)."""
    return TextPrinter().doprint(outcomes, metadata)
