"""The report as Markdown: equations as ``$$ … $$`` LaTeX, tables as pipe tables, raw HTML escaped."""

from __future__ import annotations

import re
from typing import Iterable
from urllib.parse import quote

from ..checks.story import ClaimStory, claim_story, format_value
from ..derivations.derivation import Derivation
from ..derivations.steps import StepCheck
from .equations import equation_markdown
from .printer import CLAIM_COLUMNS, ParagraphStory, ReportPrinter, section_title
from .section import Figure, Table, TheoryOutcome


_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
_INLINE_LITERAL = re.compile(r"(`[^`]+`|\$[^$\n]+\$)")  # code spans and inline math: left as they are


def _md_text(text: str) -> str:
    """Plain text for Markdown: what looks like an HTML tag is escaped (outside code and $math$)."""
    return "".join(
        piece if _INLINE_LITERAL.fullmatch(piece) else _TAG_START.sub("&lt;", piece)
        for piece in _INLINE_LITERAL.split(str(text))
    )


def _md_cell(value) -> str:
    return _md_text(format_value(value)).replace("|", "\\|").replace("\n", " ")


def markdown_table(header: Iterable, rows: Iterable[Iterable]) -> str:
    header = list(header)
    lines = ["| " + " | ".join(_md_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _md_plain(text: str) -> str:
    """Text with nothing Markdown would read as markup (emphasis, code, links, tags): a checker's sentence."""
    return re.sub(r"([\\`*_\[\]<>|])", r"\\\1", str(text))


def step_check_markdown(check: StepCheck) -> str:
    """A step's check as one line: ``Check: proved symbolically …``; a failure in bold with its point."""
    text = f"Check: {_md_plain(check.label())}"
    return f"**✗ {text}**" if check.failed else f"*{text}*"


class MarkdownPrinter(ParagraphStory, ReportPrinter):
    """The report as Markdown: equations as ``$$ … $$`` LaTeX, tables as pipe tables, raw HTML escaped."""

    def document(self, parts: list[str]) -> str:
        return "\n\n".join(parts) + "\n"

    def title(self, text: str) -> str:
        return f"# {_md_text(text)}"

    def settings(self, rows: list[list]) -> str:
        return markdown_table(["setting", "value"], rows)

    def summary(self, text: str, state: str) -> str:
        return _md_text(text)

    def section_heading(self, outcome: TheoryOutcome) -> str:
        return f"## {_md_text(section_title(outcome))}"

    def build_error(self, error: str) -> str:
        return "Part of this section could not be built:\n\n```\n" + error.rstrip() + "\n```"

    def warning(self, text: str) -> str:
        return f"**Warning:** {_md_text(text)}"

    def introduction(self, text: str) -> str:
        return text.strip()

    def heading(self, text: str) -> str:
        return f"### {_md_text(text)}"

    def derivation_block(self, derivation: Derivation, checked: str, steps: list[str]) -> str:
        parts = [f"### {_md_text(derivation.title)}"]
        if derivation.source:
            parts.append(f"*Source: {_md_text(derivation.source)}*")
        parts += [f"*Steps checked: {checked}.*", *steps]
        return "\n\n".join(parts)

    def step(self, number: int, step, check: StepCheck) -> str:
        result = f" (result `{step.name}`)" if step.name else ""
        return "\n\n".join([f"**Step {number}{result}.** {_md_text(step.description)}",
                             equation_markdown(step.expression), step_check_markdown(check)])

    def figure(self, figure: Figure, number: int) -> str:
        caption = _md_text(figure.caption)
        return f"![{caption}]({quote(figure.filename)})\n\n**Figure {number}.** {caption}"

    def table(self, table: Table) -> str:
        return f"*{_md_text(table.caption)}*\n\n" + markdown_table(table.header, table.rows)

    def claims_table(self, stories: list[ClaimStory]) -> str:
        return markdown_table(CLAIM_COLUMNS, [[f"`{c.name}`", c.statement, c.expect, c.status, c.verdict,
                                               c.key_figures, f"{c.seconds:.2f}"] for c in stories])

    def stories(self, parts: list[str]) -> str:
        return "\n\n".join(parts)

    # ------------------------------------------------------------------ a claim's story

    def story_block(self, story: ClaimStory, parts: list[str]) -> str:
        return self.joined(parts)

    def story_heading(self, story: ClaimStory) -> str:
        return f"#### `{story.name}` — {story.status} (expected {story.expect}): {story.verdict}"

    def source(self, text: str) -> str:
        return f"*Source: {_md_text(text)}*"

    def examples(self, story: ClaimStory) -> str:
        return markdown_table(story.example_header, story.example_rows) if story.example_rows else ""

    def paragraph(self, text: str, css: str = "") -> str:
        return _md_text(text)

    def preformatted(self, text: str, css: str = "") -> str:
        return "```\n" + text.rstrip() + "\n```"

    def joined(self, parts: list[str]) -> str:
        return "\n\n".join(parts)

    def replay(self, story: ClaimStory) -> str:
        return f"Replay: `{story.replay}`"


def derivation_markdown(derivation: Derivation) -> str:
    """A derivation as its numbered steps (sentence, $$ LaTeX $$, and each step's check), after a count of the
    checks' outcomes."""
    return MarkdownPrinter().derivation(derivation)


def story_markdown(story: ClaimStory) -> str:
    """A claim's story as Markdown: its examples as a pipe table, what was drawn, the counterexample, the error of
    the claim's code, the notes and the replay command."""
    return MarkdownPrinter().story(story)


def claim_detail_markdown(result: dict) -> str:
    """One claim result (``ClaimResult.as_dict()``) in full, as Markdown: `story_markdown` of its story."""
    return story_markdown(claim_story(result))


def render_markdown(outcomes: list[TheoryOutcome], metadata: dict) -> str:
    """The whole report as Markdown, equations as ``$$ … $$`` LaTeX."""
    return MarkdownPrinter().doprint(outcomes, metadata)
