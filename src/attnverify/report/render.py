"""Rendering the report as HTML with MathML equations (the Markdown report: `.markdown`).

The HTML page loads nothing from the network: equations are presentation MathML printed by
sympy (`.equations`; browsers render it natively), Markdown text goes through markdown-it-py with
its TeX as MathML (latex2mathml), the stylesheet is inline, figures are PNGs by relative path.
"""

from __future__ import annotations

import html
import re
from typing import Iterable
from urllib.parse import quote

import latex2mathml.converter
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin

from ..checks.story import ClaimStory, claim_story, format_value
from ..derivations.derivation import Derivation
from ..derivations.steps import StepCheck
from .equations import equation_html
from .printer import CLAIM_COLUMNS, TITLE, ParagraphStory, ReportPrinter, section_title
from .section import Figure, Table, TheoryOutcome

# ----------------------------------------------------------------------------- Markdown text


UNREAD_COMMAND = re.compile(r">(\\[A-Za-z]+)<")
"""A TeX command latex2mathml passed through as text (it does not know it): ``<mi>\\foo</mi>``."""


def math_html(latex: str, display: bool, *, strict: bool = False) -> str:
    """TeX as MathML (latex2mathml, offline). TeX it cannot read, or a command it does not know, is shown as
    escaped TeX source, or with ``strict`` (the docs site) raises ValueError naming the formula."""
    try:
        mathml = latex2mathml.converter.convert(latex, display="block" if display else "inline")
        unread = UNREAD_COMMAND.findall(mathml)
        if unread:
            raise ValueError(f"unknown TeX command(s) {', '.join(unread)}")
    except Exception as error:  # latex2mathml raises its own exception types for unsupported TeX
        if strict:
            raise ValueError(f"TeX that latex2mathml cannot read ({type(error).__name__}: {error}): {latex!r}") from None
        escaped = html.escape(latex.strip())
        return f'<pre class="tex"><code>{escaped}</code></pre>' if display else f'<span class="tex">{escaped}</span>'
    return mathml


def _markdown_parser(heading_offset: int) -> MarkdownIt:
    """CommonMark with tables and $…$ / $$…$$ math (markdown-it-py); raw HTML in the text is escaped."""
    parser = MarkdownIt("commonmark", {"html": False}).enable("table").use(dollarmath_plugin, double_inline=True)
    parser.add_render_rule("math_inline", lambda self, tokens, idx, options, env: math_html(tokens[idx].content, False))
    parser.add_render_rule("math_inline_double",
                           lambda self, tokens, idx, options, env: math_html(tokens[idx].content, True))
    parser.add_render_rule("math_block", lambda self, tokens, idx, options, env: math_html(tokens[idx].content, True))

    def heading(self, tokens, idx, options, env):
        token = tokens[idx]
        token.tag = f"h{min(6, int(token.tag[1]) + heading_offset)}"
        return self.renderToken(tokens, idx, options, env)

    parser.add_render_rule("heading_open", heading)
    parser.add_render_rule("heading_close", heading)
    return parser


_PARSERS: dict[int, MarkdownIt] = {}


def _parser(heading_offset: int = 2) -> MarkdownIt:
    if heading_offset not in _PARSERS:
        _PARSERS[heading_offset] = _markdown_parser(heading_offset)
    return _PARSERS[heading_offset]


def _inline(text: str) -> str:
    """Markdown inline markup to HTML (code, $math$ as MathML, emphasis, links)."""
    return _parser().renderInline(text or "")


def markdown_to_html(text: str, *, heading_offset: int = 2) -> str:
    """Markdown (CommonMark, tables, $…$ and $$…$$ math) to HTML; headings shifted by ``heading_offset``
    levels so that a section's introduction nests under the section's own heading."""
    return _parser(heading_offset).render((text or "").strip("\n")).strip()


# ----------------------------------------------------------------------------- HTML

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 62rem;
       margin: 2rem auto; padding: 0 1rem; line-height: 1.5; color: #1a1a1a; }
h1, h2, h3 { line-height: 1.2; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: .2rem; margin-top: 2.5rem; }
table { border-collapse: collapse; margin: 1rem 0; font-size: .92rem; }
th, td { border: 1px solid #ccc; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
caption { caption-side: top; text-align: left; font-style: italic; padding: .25rem 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: .88rem; }
pre { background: #f6f6f6; padding: .5rem; overflow-x: auto; white-space: pre-wrap; }
math[display="block"] { margin: .4rem 0 .8rem 0; padding: .2em 0; overflow-x: auto; overflow-y: hidden; }
.derivation { border-left: 3px solid #6a8caf; padding-left: 1rem; margin: 1.5rem 0; }
.derivation ol > li { margin-bottom: .6rem; }
.derivation li.result { background: #eef4fa; }
.derivation .check { color: #456; font-size: .88rem; margin: -.4rem 0 0 0; }
.derivation .check.failed { color: #b00020; font-weight: 600; }
.source { color: #555; font-size: .9rem; }
figure { margin: 1.5rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: .92rem; color: #333; }
.ok { color: #1b7a1b; font-weight: 600; }
.unexpected { color: #b00020; font-weight: 600; }
.undecided { color: #8a5a00; font-weight: 600; }
.error, .warning { border: 1px solid #b00020; background: #fff4f4; padding: .5rem 1rem; }
.warning { border-color: #b07000; background: #fffaf0; }
tr.counterexample { background: #fff0f0; }
.tex { font-family: ui-monospace, Menlo, Consolas, monospace; }
details.long > summary { cursor: pointer; color: #335; }
"""


def _cell(value, header: bool = False) -> str:
    tag = "th" if header else "td"
    numeric = not header and isinstance(value, (int, float)) and not isinstance(value, bool)
    css = ' class="num"' if numeric else ""
    return f"<{tag}{css}>{html.escape(format_value(value))}</{tag}>"


def _html_table(header: Iterable, rows: Iterable[Iterable], caption: str = "", row_classes=None) -> str:
    parts = ["<table>"]
    if caption:
        parts.append(f"<caption>{html.escape(caption)}</caption>")
    parts.append("<thead><tr>" + "".join(_cell(h, header=True) for h in header) + "</tr></thead><tbody>")
    for k, row in enumerate(rows):
        css = f' class="{row_classes[k]}"' if row_classes and row_classes[k] else ""
        parts.append(f"<tr{css}>" + "".join(_cell(v) for v in row) + "</tr>")
    parts.append("</tbody></table>")
    return "".join(parts)


def step_check_html(check: StepCheck) -> str:
    """A step's check as a paragraph of class ``check <outcome>`` (a failure in red, with its point)."""
    mark = "✗ " if check.failed else ""
    return f'<p class="check {check.outcome}">{mark}Check: {html.escape(check.label())}</p>'


def _css(name: str) -> str:
    """`` class="name"`` for a tag, or nothing."""
    return f' class="{name}"' if name else ""


def _verdict_html(verdict: str) -> str:
    css = {"OK": "ok", "UNDECIDED": "undecided"}.get(verdict, "unexpected")
    return f'<span class="{css}">{verdict}</span>'


class HtmlPrinter(ParagraphStory, ReportPrinter):
    """The report as one self-contained HTML page: equations as MathML, figures by relative path, no network
    resources."""

    def document(self, parts: list[str]) -> str:
        return ('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
                '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
                f"<title>{html.escape(TITLE)}</title>\n<style>" + _STYLE + "</style>\n</head>\n<body>\n"
                + "\n".join(parts) + "\n</body>\n</html>\n")

    def title(self, text: str) -> str:
        return f"<h1>{html.escape(text)}</h1>"

    def settings(self, rows: list[list]) -> str:
        return _html_table(["setting", "value"], rows, caption="Run")

    def summary(self, text: str, state: str) -> str:
        return f'<p class="{state}">{html.escape(text)}</p>'

    def contents(self, outcomes: list[TheoryOutcome]) -> str:
        return "<nav><ul>" + "".join(
            f'<li><a href="#{html.escape(o.theory, quote=True)}">{html.escape(section_title(o))}</a></li>'
            for o in outcomes) + "</ul></nav>"

    def section_heading(self, outcome: TheoryOutcome) -> str:
        return f'<section id="{html.escape(outcome.theory, quote=True)}">\n<h2>{html.escape(section_title(outcome))}</h2>'

    def section_end(self, outcome: TheoryOutcome) -> str:
        return "</section>"

    def build_error(self, error: str) -> str:
        return (f'<div class="error"><p>Part of this section could not be built:</p>'
                f"<pre>{html.escape(error)}</pre></div>")

    def warning(self, text: str) -> str:
        return f'<p class="warning">{html.escape(text)}</p>'

    def introduction(self, text: str) -> str:
        return markdown_to_html(text)

    def group(self, title: str, parts: list[str]) -> list[str]:
        return [self.heading(title), *parts] if parts else []

    def heading(self, text: str) -> str:
        return f"<h3>{html.escape(text)}</h3>"

    def derivation_block(self, derivation: Derivation, checked: str, steps: list[str]) -> str:
        parts = [f'<div class="derivation" id="{html.escape(derivation.name)}">',
                 f"<h3>{html.escape(derivation.title)}</h3>"]
        if derivation.source:
            parts.append(f'<p class="source">Source: {html.escape(derivation.source)}</p>')
        parts += [f'<p class="source">Steps checked: {html.escape(checked)}.</p>', "<ol>", *steps, "</ol></div>"]
        return "\n".join(parts)

    def step(self, number: int, step, check: StepCheck) -> str:
        css = ' class="result"' if step.name else ""
        label = f" <em>(result <code>{html.escape(step.name)}</code>)</em>" if step.name else ""
        return (f"<li{css}><p>{_inline(step.description)}{label}</p>{equation_html(step.expression)}"
                f"{step_check_html(check)}</li>")

    def figure(self, figure: Figure, number: int) -> str:
        src = html.escape(quote(figure.filename), quote=True)
        return (f'<figure><img src="{src}" alt="{html.escape(figure.caption, quote=True)}">'
                f"<figcaption><strong>Figure {number}.</strong> {html.escape(figure.caption)}</figcaption></figure>")

    def table(self, table: Table) -> str:
        return _html_table(table.header, table.rows, caption=table.caption)

    def claims_table(self, stories: list[ClaimStory]) -> str:
        """Name (a link to its story), statement, expected, status, verdict, key figures, seconds."""
        parts = ["<table><thead><tr>" + "".join(_cell(h, header=True) for h in CLAIM_COLUMNS) + "</tr></thead><tbody>"]
        for story in stories:
            anchor = html.escape("claim-" + story.name, quote=True)
            parts.append(
                "<tr>"
                f'<td><a href="#{anchor}"><code>{html.escape(story.name)}</code></a></td>'
                f"<td>{html.escape(story.statement)}</td>"
                f"<td>{html.escape(story.expect)}</td><td>{html.escape(story.status)}</td>"
                f"<td>{_verdict_html(story.verdict)}</td><td>{html.escape(story.key_figures)}</td>"
                f'<td class="num">{story.seconds:.2f}</td>'
                "</tr>"
            )
        parts.append("</tbody></table>")
        return "".join(parts)

    def stories(self, parts: list[str]) -> str:
        return "\n".join(parts)

    # ------------------------------------------------------------------ a claim's story

    def story_block(self, story: ClaimStory, parts: list[str]) -> str:
        anchor = html.escape("claim-" + story.name, quote=True)
        return self.joined([f'<div class="claim" id="{anchor}">', *parts, "</div>"])

    def story_heading(self, story: ClaimStory) -> str:
        return (f"<h4><code>{html.escape(story.name)}</code> — {html.escape(story.status)} "
                f"(expected {html.escape(story.expect)}) {_verdict_html(story.verdict)}</h4>")

    def source(self, text: str) -> str:
        return f'<p class="source">Source: {html.escape(text)}</p>'

    def examples(self, story: ClaimStory) -> str:
        """Every example with its parameters, seed, the two sides and the tolerance; the counterexample's row
        marked."""
        return _html_table(story.example_header, story.example_rows, row_classes=story.row_classes) \
            if story.example_rows else ""

    def paragraph(self, text: str, css: str = "") -> str:
        return f"<p{_css(css)}>{html.escape(text)}</p>"

    def preformatted(self, text: str, css: str = "") -> str:
        return f"<pre{_css(css)}>{html.escape(text)}</pre>"

    def joined(self, parts: list[str]) -> str:
        return "\n".join(parts)

    def replay(self, story: ClaimStory) -> str:
        return f"<p>Replay: <code>{html.escape(story.replay)}</code></p>"


def derivation_html(derivation: Derivation) -> str:
    """A derivation as its numbered steps, each a sentence, a MathML equation and its check, after a count of the
    checks' outcomes."""
    return HtmlPrinter().derivation(derivation)


def story_html(story: ClaimStory) -> str:
    """A claim's story as HTML: every example with its parameters, the two sides and the tolerance, the
    counterexample (with its note, standard error and shrink trials), the error of the claim's code, and the
    replay command."""
    return HtmlPrinter().story(story)


def claim_detail_html(result: dict) -> str:
    """One claim result (``ClaimResult.as_dict()``) in full, as HTML: `story_html` of its story."""
    return story_html(claim_story(result))


def render_html(outcomes: list[TheoryOutcome], metadata: dict) -> str:
    """The whole report as one self-contained HTML page (no network resources)."""
    return HtmlPrinter().doprint(outcomes, metadata)
