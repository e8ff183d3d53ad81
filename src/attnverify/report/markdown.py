"""The report as Markdown: equations as ``$$ … $$`` LaTeX, tables as pipe tables, raw HTML escaped."""

from __future__ import annotations

import re
from typing import Iterable
from urllib.parse import quote

from ..derivations.derivation import Derivation
from ..derivations.steps import StepCheck, counts, counts_text
from .equations import equation_markdown
from .results import metadata_rows, section_title
from .story import UNDECIDED, ClaimStory, claim_story, format_parameters, format_value, summary_line
from .section import TheoryOutcome


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


def derivation_markdown(derivation: Derivation) -> str:
    """A derivation as its numbered steps (sentence, $$ LaTeX $$, and each step's check), after a count of the
    checks' outcomes."""
    checks = derivation.checks()
    parts = [f"### {_md_text(derivation.title)}"]
    if derivation.source:
        parts.append(f"*Source: {_md_text(derivation.source)}*")
    parts.append(f"*Steps checked: {counts_text(counts(checks))}.*")
    for k, (step, check) in enumerate(zip(derivation.steps, checks), 1):
        result = f" (result `{step.name}`)" if step.name else ""
        parts.append(f"**Step {k}{result}.** {_md_text(step.description)}")
        parts.append(equation_markdown(step.expression))
        parts.append(step_check_markdown(check))
    return "\n\n".join(parts)


def claim_detail_markdown(result: dict) -> str:
    """One claim result (``ClaimResult.as_dict()``) in full, as Markdown: `story_markdown` of its story."""
    return story_markdown(claim_story(result))


def story_markdown(story: ClaimStory) -> str:
    """A claim's story as Markdown: its examples as a pipe table, what was drawn, the counterexample's note, the
    error of the claim's code, the notes and the replay command."""
    parts = [f"#### `{story.name}` — {story.status} (expected {story.expect}): {story.verdict}",
             _md_text(story.statement)]
    if story.source:
        parts.append(f"*Source: {_md_text(story.source)}*")
    if story.example_rows:
        parts.append(markdown_table(story.example_header, story.example_rows))
    if story.drawn:
        parts.append(f"Drawn: {_md_text(story.drawn)}")
    if story.counterexample_note:
        parts.append(f"Counterexample note: {_md_text(story.counterexample_note)}")
    if story.failure is not None:
        failed = story.failure
        parts.append(f"Error in the claim's code (not a counterexample) at "
                     f"{_md_text(format_parameters(failed.get('parameters') or {}))}, seed {failed.get('seed')}:")
        parts.append("```\n" + failed["error"].rstrip() + "\n```")
    if story.inconclusive:
        parts.append(f"Inconclusive: {UNDECIDED}"
                     + (f"; deciding them all would take {story.needed}" if story.needed else "")
                     + ".")
    for note in story.notes:
        parts.append(f"Note: {_md_text(note)}")
    parts.append(f"Replay: `{story.replay}`")
    return "\n\n".join(parts)


def render_markdown(outcomes: list[TheoryOutcome], metadata: dict) -> str:
    """The whole report as Markdown, equations as ``$$ … $$`` LaTeX."""
    claims = [c for o in outcomes for c in o.claims]
    parts = ["# attnverify report", markdown_table(["setting", "value"], metadata_rows(metadata))]
    parts.append(summary_line(claims) + ".")
    figure_number = 0
    for outcome in outcomes:
        parts.append(f"## {_md_text(section_title(outcome))}")
        for error in outcome.errors:
            parts.append("Part of this section could not be built:\n\n```\n" + error.rstrip() + "\n```")
        for warning in outcome.warnings:
            parts.append(f"**Warning:** {_md_text(warning)}")
        section = outcome.section
        if section is not None:
            if section.introduction.strip():
                parts.append(section.introduction.strip())
            parts += [derivation_markdown(d) for d in section.derivations]
            for figure in section.figures:
                figure_number += 1
                caption = _md_text(figure.caption)
                parts.append(f"![{caption}]({quote(figure.filename)})\n\n**Figure {figure_number}.** {caption}")
            for table in section.tables:
                parts.append(f"*{_md_text(table.caption)}*\n\n" + markdown_table(table.header, table.rows))
        if outcome.claims:
            parts.append("### Claims")
            stories = [claim_story(c) for c in outcome.claims]
            parts.append(markdown_table(
                ["claim", "statement", "expected", "status", "verdict", "key figures", "seconds"],
                [[f"`{c.name}`", c.statement, c.expect, c.status, c.verdict, c.key_figures, f"{c.seconds:.2f}"]
                 for c in stories],
            ))
            parts += [story_markdown(story) for story in stories]
    return "\n\n".join(parts) + "\n"
