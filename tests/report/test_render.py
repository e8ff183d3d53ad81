"""Equations render as well-formed MathML (HTML) and LaTeX (Markdown); failures fall back."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
import sympy

from attnverify.report import equations, markdown, render

x, kappa, nu, lam, gamma, eps, n = sympy.symbols("x kappa nu lambda gamma epsilon n")
f = sympy.Function("f")

TYPICAL = {
    "Eq with Integral and erf": sympy.Eq(
        f(x), sympy.Integral(sympy.exp(-(x**2)) * sympy.erf(kappa * x), (x, -sympy.oo, sympy.oo))
    ),
    "sqrt of Greek": sympy.sqrt(nu / lam) * gamma + eps,
    "Derivative": sympy.Derivative(f(x), x, 2),
    "partial Derivative": sympy.Derivative(x**2 * nu + x, x, nu),
    "Sum": sympy.Sum(1 / n**2, (n, 1, sympy.oo)),
    "Piecewise": sympy.Piecewise((x, x < 0), (kappa, True)),
    "relations": sympy.And(sympy.Lt(x, 1), sympy.Ge(x, 0)),
    "odd symbol name": sympy.Symbol("a&b<c") + 1,
    "Function application": sympy.Function("zeta")(kappa, nu),
}


@pytest.mark.parametrize("expr", TYPICAL.values(), ids=TYPICAL.keys())
def test_mathml_is_well_formed_xml(expr):
    html = equations.equation_html(expr)
    assert html.startswith('<math display="block" xmlns="http://www.w3.org/1998/Math/MathML">')
    ET.fromstring(html)  # escaped text, numeric character references only
    assert "$$" in equations.equation_markdown(expr)


def test_greek_letters_and_piecewise_read_as_mathematics():
    mathml = equations.equation_mathml(sympy.Piecewise((kappa * nu, x < lam), (gamma, True)))
    assert "&#954;" in mathml and "&#957;" in mathml and "&#955;" in mathml  # κ ν λ
    assert "otherwise" in mathml and "piecewise" not in mathml


def test_eulers_number_reads_as_an_upright_e_as_in_the_latex():
    """e and exp(x) in MathML: an upright e (the LaTeX's e), not sympy's double-struck ⅇ (U+2147)."""
    mathml = equations.equation_mathml(sympy.E * sympy.exp(-x**2 / 2))
    root = ET.fromstring(f"<math>{mathml}</math>")
    assert [mi.text for mi in root.iter("mi") if mi.text in ("e", "\u2147")] == ["e", "e"]
    assert "2147" not in mathml and "ExponentialE" not in mathml


def test_an_expectation_reads_as_e_with_its_laws_in_every_format():
    """𝔼 over w ~ 𝒩(0, 1) of the integrand, in the HTML report's MathML as in the LaTeX and the text, never a
    function call named expectation; well-formed, its laws under the operator."""
    from attnverify.derivations.gaussian import Expectation

    w1, w2 = sympy.symbols("w1 w2", real=True)
    e = Expectation(sympy.erf(w1) * sympy.erf(w2), (w1, 0, 1), (w2, 0, 1))
    mathml = equations.equation_mathml(sympy.Eq(sympy.Symbol("K"), e))
    root = ET.fromstring(f"<math>{mathml}</math>")
    (under,) = root.iter("munder")
    assert under[0].text == "\U0001d53c" and "".join(under[1].itertext()).count("\u223c") == 2
    assert "expectation" not in mathml.lower()
    assert r"\mathbb{E}" in equations.equation_latex(e) and str(e).startswith("𝔼[")


def test_a_symbol_named_in_tex_prints_as_that_tex():
    """A matrix symbol named ``\\mathrm{Tr}_{h_\\ell} U_\\ell`` (the attention-path action's partial trace) reads as
    Tr with its subscripts, not as the text of its name."""
    B = sympy.MatrixSymbol(r"\mathrm{Tr}_{h_\ell} U_\ell", n, n)
    mathml = equations.equation_mathml(sympy.Trace(B))
    root = ET.fromstring(f"<math>{mathml}</math>")
    assert "\\" not in mathml and "".join(root.itertext()).replace(" ", "") == "trace(TrhℓUℓ)"
    assert len(list(root.iter("msub"))) == 3  # Tr_{h_ℓ}, h_ℓ, U_ℓ


def test_unknown_tex_is_refused_on_the_site_and_shown_as_source_in_the_report():
    """A command latex2mathml does not know passes through as text (``<mi>\\foo</mi>``): the report shows the TeX
    source, the site's strict conversion refuses it by name."""
    assert render.math_html(r"\foo x", False) == '<span class="tex">\\foo x</span>'
    with pytest.raises(ValueError, match=r"unknown TeX command\(s\) \\foo"):
        render.math_html(r"\foo x", False, strict=True)
    with pytest.raises(ValueError, match="cannot read"):
        render.math_html(r"\frac{1}{", True, strict=True)
    assert render.math_html(r"\langle k, v\rangle", False, strict=True).startswith("<math")


def test_failing_mathml_falls_back_to_latex(monkeypatch):
    def broken(self, expr):
        raise NotImplementedError("no MathML for this")

    monkeypatch.setattr(equations.MathMLPrinter, "doprint", broken)
    html = equations.equation_html(sympy.sqrt(kappa))
    assert "<math" not in html and "<code>" in html and "\\sqrt{\\kappa}" in html


def test_long_expression_is_folded_but_shown(monkeypatch):
    monkeypatch.setattr(equations, "LONG_EXPRESSION", 400)  # the real threshold is 6000 characters
    huge = sum(sympy.Symbol(f"a_{k}") * x**k for k in range(40))
    html = equations.equation_html(huge)
    assert html.startswith("<details") and "<math" in html
    assert equations.equation_markdown(huge).startswith("<details>")
    assert not equations.equation_html(x + 1).startswith("<details")


def test_markdown_is_escaped_and_its_math_is_mathml():
    """markdown-it-py (CommonMark + tables + dollarmath): raw HTML escaped, $…$ and $$…$$ as offline MathML,
    TeX that latex2mathml cannot read shown as escaped source, headings nested under the section's."""
    html = render.markdown_to_html("Intro with <b>raw</b> & `x<y`.\n\n# Part\n\n- one\n- two\n\n$$\nU = 1\n$$\n\n"
                                   "Inline $\\alpha^2$ and | a | b |\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    assert "&lt;b&gt;raw&lt;/b&gt; &amp;" in html
    assert "<code>x&lt;y</code>" in html
    assert "<h3>Part</h3>" in html
    assert "<li>one</li>" in html and "<li>two</li>" in html and "<ul>" in html
    assert '<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><mrow><mi>U</mi>' in html
    assert 'display="inline"><mrow><msup><mi>&#x003B1;</mi><mn>2</mn></msup>' in html
    assert "<table>" in html and "<td>1</td>" in html
    unreadable = render.markdown_to_html("$$\n\\left( <x>\n$$")  # \left without \right: latex2mathml refuses it
    assert '<pre class="tex"><code>' in unreadable and "&lt;x&gt;" in unreadable


def test_markdown_table_escapes_pipes():
    table = markdown.markdown_table(["a", "b"], [["x|y", 0.123456789]])
    assert table.splitlines()[-1] == "| x\\|y | 0.123457 |"
