"""The report as Markdown: equations as ``$$ … $$`` LaTeX, tables as pipe tables, raw HTML escaped."""

from __future__ import annotations

import re
from typing import Iterable
from urllib.parse import quote

from ..derivations.derivation import Derivation
from ..derivations.steps import StepCheck, counts, counts_text
from .equations import equation_markdown
from .results import (drawn_line, example_rows, format_parameters, format_value, key_figures, metadata_rows,
                      needed_text, section_title, sides, summary_line, verdict)
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
    parts = [f"#### `{result['name']}` — {result['status']} (expected {result['expect']}): {verdict(result)}",
             _md_text(result["statement"])]
    if result.get("source"):
        parts.append(f"*Source: {_md_text(result['source'])}*")
    rows, _ = example_rows(result)
    if rows:
        parts.append(markdown_table(
            ["example", "parameters", "seed", *sides(result), "tolerance", "outcome", "seconds"], rows
        ))
    if drawn_line(result):
        parts.append(f"Drawn: {_md_text(drawn_line(result))}")
    counter = result.get("counterexample")
    if counter is not None:
        evidence = counter.get("evidence") or {}
        if evidence.get("note"):
            parts.append(f"Counterexample note: {_md_text(evidence['note'])}")
    failed = result.get("error")
    if isinstance(failed, dict) and failed.get("error"):
        parts.append(f"Error in the claim's code (not a counterexample) at "
                     f"{_md_text(format_parameters(failed.get('parameters') or {}))}, seed {failed.get('seed')}:")
        parts.append("```\n" + failed["error"].rstrip() + "\n```")
    if result["status"] == "inconclusive":
        needed = needed_text(result.get("needed"))
        parts.append("Inconclusive: no example contradicts the claim, and not every one decides it"
                     + (f"; deciding would take {needed}" if needed else "") + ".")
    for note in result.get("notes") or []:
        parts.append(f"Note: {_md_text(note)}")
    parts.append(f"Replay: `{result['replay']}`")
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
            parts.append(markdown_table(
                ["claim", "statement", "expected", "status", "verdict", "key figures", "seconds"],
                [[f"`{c['name']}`", c["statement"], c["expect"], c["status"], verdict(c), key_figures(c),
                  f"{c['seconds']:.2f}"] for c in outcome.claims],
            ))
            parts += [claim_detail_markdown(c) for c in outcome.claims]
    return "\n\n".join(parts) + "\n"
