"""Equations of the report: sympy expressions as presentation MathML (HTML) and as LaTeX (Markdown).

MathML is printed by sympy with escaped text, numeric character references, a brace for ``Piecewise`` and
``d^n/dx^n`` for derivatives; an expression sympy cannot print as MathML falls back to its LaTeX source in a
``<code>`` block, and a very long one is folded inside ``<details>``.
"""

from __future__ import annotations

import html
import re
from html.entities import html5

import sympy
from sympy.printing.conventions import requires_partial
from sympy.printing.mathml import MathMLPresentationPrinter

#: Above this many characters of MathML/LaTeX an equation is folded inside ``<details>``.
LONG_EXPRESSION = 6000
MATHML_NAMESPACE = "http://www.w3.org/1998/Math/MathML"

_ENTITY = re.compile(r"&(?!#?[A-Za-z0-9]+;)")
_NAMED_ENTITY = re.compile(r"&([A-Za-z][A-Za-z0-9]*);")
_XML_ENTITIES = {"lt", "gt", "amp", "quot", "apos"}


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

    def _print_Exp1(self, e):
        """e as the LaTeX beside it prints it, upright: sympy's MathML writes ⅇ (U+2147, double-struck)."""
        return self._element("mi", text="e", mathvariant="normal")

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

    def _print_Expectation(self, e):
        """𝔼 with its laws below, w ~ 𝒩(μ, σ²) (a name alone for an unspecified law), then [integrand], as the
        LaTeX and the text printers show it."""
        laws = []
        for law in e.laws:
            name = self._print(law[0])
            if len(law) == 3:
                normal = self._element("mrow", self._element("mi", text="\U0001d4a9", mathvariant="normal"),
                                       self._element("mo", text="("), self._print(law[1]), self._element("mo", text=","),
                                       self._print(law[2]), self._element("mo", text=")"))
                laws.append(self._element("mrow", name, self._element("mo", text="\u223c"), normal))
            else:
                laws.append(name)
        separated = []
        for k, law in enumerate(laws):
            separated += [self._element("mo", text=",")] * (k > 0) + [law]
        operator = self._element("munder", self._element("mo", text="\U0001d53c", movablelimits="false"),
                                 self._element("mrow", *separated))
        return self._element("mrow", operator, self._element("mo", text="[", stretchy="true"), self._print(e.integrand),
                             self._element("mo", text="]", stretchy="true"))

    def _print_Symbol(self, sym, style="plain"):
        """A symbol named in TeX (a backslash in its name, e.g. ``\\mathrm{Tr}_{h_\\ell} U_\\ell``, as the LaTeX
        printer shows it verbatim) as that TeX's MathML (latex2mathml); other names as sympy splits them."""
        if "\\" not in sym.name:
            return super()._print_Symbol(sym, style=style)
        from xml.dom.minidom import parseString

        import latex2mathml.converter

        parsed = parseString(latex2mathml.converter.convert(sym.name))
        return self.dom.importNode(parsed.documentElement.firstChild, True)

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
