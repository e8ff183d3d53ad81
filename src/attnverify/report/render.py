"""Rendering the report: HTML with MathML equations, and Markdown with LaTeX equations.

The HTML page loads nothing from the network: equations are presentation MathML printed by
sympy (browsers render it natively), the stylesheet is inline, figures are PNGs by relative path.
An expression sympy cannot print as MathML falls back to its LaTeX source in a ``<code>`` block;
a very long one is still shown, folded inside ``<details>``.
"""

from __future__ import annotations

import html
import re
from html.entities import html5
from typing import Iterable
from urllib.parse import quote

import latex2mathml.converter
import sympy
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from sympy.printing.conventions import requires_partial
from sympy.printing.mathml import MathMLPresentationPrinter

from ..derivations.derivation import Derivation
from .results import first_line, format_parameters, format_value, key_figures, side_labels, verdict
from .section import Figure, Table, TheoryOutcome

#: Above this many characters of MathML/LaTeX an equation is folded inside ``<details>``.
LONG_EXPRESSION = 6000
MATHML_NAMESPACE = "http://www.w3.org/1998/Math/MathML"

_ENTITY = re.compile(r"&(?!#?[A-Za-z0-9]+;)")
_NAMED_ENTITY = re.compile(r"&([A-Za-z][A-Za-z0-9]*);")
_XML_ENTITIES = {"lt", "gt", "amp", "quot", "apos"}


# ----------------------------------------------------------------------------- equations


def _escape_text_node(data: str) -> str:
    """Escape ``<``, ``>`` and stray ``&`` but keep the character references sympy writes."""
    return _ENTITY.sub("&amp;", str(data)).replace("<", "&lt;").replace(">", "&gt;")


def _numeric_entity(match: re.Match) -> str:
    # Named references such as &dd; or &InvisibleTimes; are HTML5-only; numeric ones are valid
    # in any HTML or XML reader.
    name = match.group(1)
    if name in _XML_ENTITIES:
        return match.group(0)
    text = html5.get(name + ";")
    if text is None:
        return "&amp;" + name + ";"
    return "".join(f"&#x{ord(c):X};" for c in text)


class MathMLPrinter(MathMLPresentationPrinter):
    """sympy's presentation MathML printer with escaped text, a brace for ``Piecewise`` and
    ``d^n/dx^n`` for derivatives (sympy prints ``Piecewise`` as a function call)."""

    def __init__(self, settings: dict | None = None):
        super().__init__(settings)
        raw_text_node = self.dom.createTextNode
        # sympy writes text nodes unescaped (so its &#x…; references survive); a relation's
        # "<" or a symbol named "a&b" would then break the markup.
        self.dom.createTextNode = lambda data: raw_text_node(_escape_text_node(data))

    def _element(self, tag: str, *children, text: str | None = None, **attributes):
        node = self.dom.createElement(tag)
        for key, value in attributes.items():
            node.setAttribute(key, value)
        if text is not None:
            node.appendChild(self.dom.createTextNode(text))
        for child in children:
            node.appendChild(child)
        return node

    def _print_Piecewise(self, expr):
        rows = []
        for piece, condition in expr.args:
            if condition == sympy.true:
                when = self._element("mtext", text="otherwise")
            else:
                when = self._element("mrow", self._element("mtext", text="if\u2002"), self._print(condition))
            rows.append(self._element("mtr", self._element("mtd", self._print(piece)), self._element("mtd", when)))
        table = self._element("mtable", *rows, columnalign="left left")
        return self._element("mrow", self._element("mo", text="{", stretchy="true"), table)

    def _print_Derivative(self, e):
        d = "\u2202" if requires_partial(e.expr) else "d"

        def d_power(base, power):
            if power == 1:
                return base
            return self._element("msup", base, self._print(power))

        order = sum(count for _, count in e.variable_count)
        def d_sign():
            return self._element("mi", text=d, mathvariant="normal")

        numerator = d_power(d_sign(), order)
        denominator = self._element(
            "mrow",
            *[
                self._element("mrow", d_sign(), d_power(self._print(variable), count))
                for variable, count in e.variable_count
            ],
        )
        fraction = self._element("mfrac", self._element("mrow", numerator), denominator)
        body = self._print(e.expr)
        if not (e.expr.is_Atom or isinstance(e.expr, (sympy.Function, sympy.Derivative))):
            body = self._paren_comma_separated(e.expr)
        return self._element("mrow", fraction, body)

    def doprint(self, expr) -> str:
        return _NAMED_ENTITY.sub(_numeric_entity, super().doprint(expr))


def equation_latex(expr) -> str:
    """LaTeX of ``expr`` (its ``str`` if even sympy's LaTeX printer fails)."""
    try:
        return sympy.latex(expr)
    except Exception:
        return str(expr)


def equation_mathml(expr) -> str | None:
    """Presentation MathML of ``expr`` (without the ``<math>`` element), or None if it fails."""
    try:
        return MathMLPrinter().doprint(sympy.sympify(expr))
    except Exception:
        return None


def _fold(inner: str, size: int, kind: str) -> str:
    summary = f"A long expression ({size:,} characters of {kind}); click to show it."
    return f'<details class="long"><summary>{html.escape(summary)}</summary>{inner}</details>'


def equation_html(expr) -> str:
    """A display equation: ``<math display="block">`` or, if MathML fails, LaTeX in ``<code>``."""
    mathml = equation_mathml(expr)
    if mathml is None:
        latex = equation_latex(expr)
        inner = (
            '<pre class="tex"><code>' + html.escape(latex) + "</code></pre>"
            '<p class="fallback">(MathML printing failed for this expression; LaTeX source shown.)</p>'
        )
        return _fold(inner, len(latex), "LaTeX") if len(latex) > LONG_EXPRESSION else inner
    inner = f'<math display="block" xmlns="{MATHML_NAMESPACE}">{mathml}</math>'
    return _fold(inner, len(mathml), "MathML") if len(mathml) > LONG_EXPRESSION else inner


def equation_markdown(expr) -> str:
    """A display equation ``$$ … $$`` (folded inside ``<details>`` when very long)."""
    latex = equation_latex(expr)
    block = f"$$\n{latex}\n$$"
    if len(latex) > LONG_EXPRESSION:
        return (
            f"<details><summary>A long expression ({len(latex):,} characters of LaTeX)</summary>"
            f"\n\n{block}\n\n</details>"
        )
    return block


# ----------------------------------------------------------------------------- Markdown text


def _math_html(latex: str, display: bool) -> str:
    """TeX as MathML (latex2mathml, offline); TeX it cannot read is shown as escaped TeX source."""
    try:
        mathml = latex2mathml.converter.convert(latex, display="block" if display else "inline")
    except Exception:  # latex2mathml raises its own exception types for unsupported TeX
        escaped = html.escape(latex.strip())
        return f'<pre class="tex"><code>{escaped}</code></pre>' if display else f'<span class="tex">{escaped}</span>'
    return mathml


def _markdown_parser(heading_offset: int) -> MarkdownIt:
    """CommonMark with tables and $…$ / $$…$$ math (markdown-it-py); raw HTML in the text is escaped."""
    parser = MarkdownIt("commonmark", {"html": False}).enable("table").use(dollarmath_plugin, double_inline=True)
    parser.add_render_rule("math_inline", lambda self, tokens, idx, options, env: _math_html(tokens[idx].content, False))
    parser.add_render_rule("math_inline_double",
                           lambda self, tokens, idx, options, env: _math_html(tokens[idx].content, True))
    parser.add_render_rule("math_block", lambda self, tokens, idx, options, env: _math_html(tokens[idx].content, True))

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
math[display="block"] { margin: .4rem 0 .8rem 0; overflow-x: auto; }
.derivation { border-left: 3px solid #6a8caf; padding-left: 1rem; margin: 1.5rem 0; }
.derivation ol > li { margin-bottom: .6rem; }
.derivation li.result { background: #eef4fa; }
.source { color: #555; font-size: .9rem; }
figure { margin: 1.5rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: .92rem; color: #333; }
.ok { color: #1b7a1b; font-weight: 600; }
.unexpected { color: #b00020; font-weight: 600; }
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


def derivation_html(derivation: Derivation) -> str:
    """A derivation as its numbered steps, each a sentence and a MathML equation."""
    parts = [f'<div class="derivation" id="{html.escape(derivation.name)}">']
    parts.append(f"<h3>{html.escape(derivation.title)}</h3>")
    if derivation.source:
        parts.append(f'<p class="source">Source: {html.escape(derivation.source)}</p>')
    parts.append("<ol>")
    for step in derivation.steps:
        css = ' class="result"' if step.name else ""
        label = f" <em>(result <code>{html.escape(step.name)}</code>)</em>" if step.name else ""
        parts.append(f"<li{css}><p>{_inline(step.description)}{label}</p>{equation_html(step.expression)}</li>")
    parts.append("</ol></div>")
    return "\n".join(parts)


def figure_html(figure: Figure, number: int) -> str:
    src = html.escape(quote(figure.filename), quote=True)
    caption = html.escape(figure.caption)
    return (
        f'<figure><img src="{src}" alt="{html.escape(figure.caption, quote=True)}">'
        f"<figcaption><strong>Figure {number}.</strong> {caption}</figcaption></figure>"
    )


def table_html(table: Table) -> str:
    return _html_table(table.header, table.rows, caption=table.caption)


def _verdict_html(result: dict) -> str:
    css = "ok" if result["ok"] else "unexpected"
    return f'<span class="{css}">{verdict(result)}</span>'


def claims_table_html(claims: list[dict]) -> str:
    """The claims of a theory: name, statement, expected, status, OK, key figures, seconds."""
    header = ["claim", "statement", "expected", "status", "verdict", "key figures", "seconds"]
    parts = ["<table><thead><tr>" + "".join(_cell(h, header=True) for h in header) + "</tr></thead><tbody>"]
    for r in claims:
        anchor = html.escape("claim-" + r["name"], quote=True)
        parts.append(
            "<tr>"
            f'<td><a href="#{anchor}"><code>{html.escape(r["name"])}</code></a></td>'
            f"<td>{html.escape(r['statement'])}</td>"
            f"<td>{html.escape(r['expect'])}</td><td>{html.escape(r['status'])}</td>"
            f"<td>{_verdict_html(r)}</td><td>{html.escape(key_figures(r))}</td>"
            f'<td class="num">{r["seconds"]:.2f}</td>'
            "</tr>"
        )
    parts.append("</tbody></table>")
    return "".join(parts)


def _example_rows(result: dict) -> tuple[list[list], list[str]]:
    rows, classes = [], []
    examples = list(result.get("examples") or [])
    counter = result.get("counterexample")
    shown = [(str(k), e) for k, e in enumerate(examples, 1)]
    if counter is not None:
        shown.append(("counterexample", counter))
    for label, e in shown:
        evidence = e.get("evidence") or {}
        if e.get("error"):
            outcome = "error: " + first_line(e["error"])
        else:
            outcome = "holds" if evidence.get("holds") else "fails"
        rows.append([
            label,
            format_parameters(e.get("parameters") or {}),
            e.get("seed"),
            evidence.get("theory"),
            evidence.get("observed"),
            evidence.get("tolerance"),
            outcome,
            e.get("seconds"),
        ])
        classes.append("counterexample" if label == "counterexample" else "")
    return rows, classes


def _sides(result: dict) -> tuple[str, str]:
    """Column names of the two sides, from the relation of the claim's evidence (value/bound for at_most)."""
    examples = [*(result.get("examples") or []), result.get("counterexample") or {}]
    relations = {(e.get("evidence") or {}).get("relation") for e in examples} - {None}
    return side_labels(relations.pop()) if len(relations) == 1 else ("theory", "observed")


def claim_detail_html(result: dict) -> str:
    """One claim in full: every example with its parameters, the two sides and the tolerance,
    the counterexample (with its note and error), and the replay command."""
    anchor = html.escape("claim-" + result["name"], quote=True)
    parts = [f'<div class="claim" id="{anchor}">']
    parts.append(f"<h4><code>{html.escape(result['name'])}</code> — {html.escape(result['status'])} "
                 f"(expected {html.escape(result['expect'])}) {_verdict_html(result)}</h4>")
    parts.append(f"<p>{html.escape(result['statement'])}</p>")
    if result.get("source"):
        parts.append(f'<p class="source">Source: {html.escape(result["source"])}</p>')
    rows, classes = _example_rows(result)
    if rows:
        header = ["example", "parameters", "seed", *_sides(result), "tolerance", "outcome", "seconds"]
        parts.append(_html_table(header, rows, row_classes=classes))
    counter = result.get("counterexample")
    if counter is not None:
        evidence = counter.get("evidence") or {}
        if evidence.get("note"):
            parts.append(f"<p>Counterexample note: {html.escape(evidence['note'])}</p>")
        if evidence.get("standard_error") is not None:
            parts.append(f"<p>Standard error: {html.escape(format_value(evidence['standard_error']))}</p>")
        if counter.get("error"):
            parts.append(f'<pre class="error">{html.escape(counter["error"])}</pre>')
        parts.append(f"<p>Shrink trials: {int(result.get('shrink_trials', 0))}</p>")
    for note in result.get("notes") or []:
        parts.append(f"<p>Note: {html.escape(note)}</p>")
    parts.append(f"<p>Replay: <code>{html.escape(result['replay'])}</code></p>")
    parts.append("</div>")
    return "\n".join(parts)


def _metadata_rows(metadata: dict) -> list[list]:
    rows = []
    for key in ("date", "profile", "backend", "seed", "only"):
        if metadata.get(key) is not None:
            rows.append([key, metadata[key]])
    for package, version in (metadata.get("versions") or {}).items():
        rows.append([package, version])
    return rows


def _section_title(outcome: TheoryOutcome) -> str:
    return outcome.section.title if outcome.section is not None else outcome.theory


def render_html(outcomes: list[TheoryOutcome], metadata: dict) -> str:
    """The whole report as one self-contained HTML page (no network resources)."""
    claims = [c for o in outcomes for c in o.claims]
    unexpected = sum(1 for c in claims if not c["ok"])
    body = ["<h1>attnverify report</h1>"]
    body.append(_html_table(["setting", "value"], _metadata_rows(metadata), caption="Run"))
    summary = f"{len(claims)} claims checked: {len(claims) - unexpected} as expected, {unexpected} unexpected."
    errors = sum(len(o.errors) for o in outcomes)
    if errors:
        summary += f" {errors} error(s) while building the report (see below)."
    css = "ok" if not unexpected and not errors else "unexpected"
    body.append(f'<p class="{css}">{html.escape(summary)}</p>')
    body.append("<nav><ul>" + "".join(
        f'<li><a href="#{html.escape(o.theory, quote=True)}">{html.escape(_section_title(o))}</a></li>'
        for o in outcomes
    ) + "</ul></nav>")
    figure_number = 0
    for outcome in outcomes:
        body.append(f'<section id="{html.escape(outcome.theory, quote=True)}">')
        body.append(f"<h2>{html.escape(_section_title(outcome))}</h2>")
        for error in outcome.errors:
            body.append(f'<div class="error"><p>Part of this section could not be built:</p>'
                        f"<pre>{html.escape(error)}</pre></div>")
        for warning in outcome.warnings:
            body.append(f'<p class="warning">{html.escape(warning)}</p>')
        section = outcome.section
        if section is not None:
            body.append(markdown_to_html(section.introduction))
            if section.derivations:
                body.append("<h3>Derivations</h3>")
                body += [derivation_html(d) for d in section.derivations]
            if section.figures:
                body.append("<h3>Figures</h3>")
                for figure in section.figures:
                    figure_number += 1
                    body.append(figure_html(figure, figure_number))
            if section.tables:
                body.append("<h3>Tables</h3>")
                body += [table_html(t) for t in section.tables]
        if outcome.claims:
            body.append("<h3>Claims</h3>")
            body.append(claims_table_html(outcome.claims))
            body += [claim_detail_html(c) for c in outcome.claims]
        body.append("</section>")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<title>attnverify report</title>\n<style>" + _STYLE + "</style>\n</head>\n<body>\n"
        + "\n".join(body) + "\n</body>\n</html>\n"
    )


# ----------------------------------------------------------------------------- Markdown


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


def derivation_markdown(derivation: Derivation) -> str:
    parts = [f"### {_md_text(derivation.title)}"]
    if derivation.source:
        parts.append(f"*Source: {_md_text(derivation.source)}*")
    for k, step in enumerate(derivation.steps, 1):
        result = f" (result `{step.name}`)" if step.name else ""
        parts.append(f"**Step {k}{result}.** {_md_text(step.description)}")
        parts.append(equation_markdown(step.expression))
    return "\n\n".join(parts)


def claim_detail_markdown(result: dict) -> str:
    parts = [f"#### `{result['name']}` — {result['status']} (expected {result['expect']}): {verdict(result)}",
             _md_text(result["statement"])]
    if result.get("source"):
        parts.append(f"*Source: {_md_text(result['source'])}*")
    rows, _ = _example_rows(result)
    if rows:
        parts.append(markdown_table(
            ["example", "parameters", "seed", *_sides(result), "tolerance", "outcome", "seconds"], rows
        ))
    counter = result.get("counterexample")
    if counter is not None:
        evidence = counter.get("evidence") or {}
        if evidence.get("note"):
            parts.append(f"Counterexample note: {_md_text(evidence['note'])}")
        if counter.get("error"):
            parts.append("```\n" + counter["error"].rstrip() + "\n```")
    for note in result.get("notes") or []:
        parts.append(f"Note: {_md_text(note)}")
    parts.append(f"Replay: `{result['replay']}`")
    return "\n\n".join(parts)


def render_markdown(outcomes: list[TheoryOutcome], metadata: dict) -> str:
    """The whole report as Markdown, equations as ``$$ … $$`` LaTeX."""
    claims = [c for o in outcomes for c in o.claims]
    unexpected = sum(1 for c in claims if not c["ok"])
    parts = ["# attnverify report", markdown_table(["setting", "value"], _metadata_rows(metadata))]
    parts.append(f"{len(claims)} claims checked: {len(claims) - unexpected} as expected, {unexpected} unexpected.")
    figure_number = 0
    for outcome in outcomes:
        parts.append(f"## {_md_text(_section_title(outcome))}")
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
