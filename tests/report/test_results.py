"""Claim results as text: the key figures name the sides by their relation and show the standard error."""

from attnverify.checks import at_most, claim, run_claim, st, within_error
from attnverify.numerics.statistics import Estimate
from attnverify.report.render import claim_detail_markdown
from attnverify.report.results import key_figures, result_details


def _result(evidence_maker, name="demo.shown"):
    @claim(name, parameters=st.fixed_dictionaries({"x": st.just(1.0)}), examples={"quick": 1, "thorough": 1},
           statement="A demonstration of how results are shown.")
    def check(p, ctx):
        return evidence_maker()

    return run_claim(check, seed=0).as_dict()


def test_a_monte_carlo_equality_shows_its_standard_error_not_the_tolerance_as_plus_minus():
    result = _result(lambda: within_error(1.0, Estimate(mean=1.01, standard_error=0.004, samples=100)))
    text = key_figures(result)
    assert text == "theory 1 vs observed 1.01 (SE 0.004), allowed gap 0.02"
    assert "±" not in text


def test_a_one_sided_claim_shows_the_relation_it_needs_with_its_numbers():
    from attnverify.checks import Evidence

    result = _result(lambda: Evidence(holds=False, theory=0.0, observed=0.47, tolerance=0.54, standard_error=0.108,
                                      relation="above"), name="demo.above")
    assert key_figures(result) == "observed − theory > τ: 0.47 − 0 > 0.54 (SE 0.108)"


def test_a_bound_is_shown_as_an_inequality_with_value_and_bound_labels():
    result = _result(lambda: at_most(0.3, 0.5, tolerance=0.01))
    assert key_figures(result) == "0.3 ≤ 0.5 + 0.01"
    detail = result_details(result)
    assert "value:" in detail and "bound:" in detail and "theory:" not in detail
    assert "| value | bound |" in claim_detail_markdown(result)


def test_a_notebook_shows_results_evidence_and_derivations():
    """_repr_markdown_ / _repr_html_: what Jupyter calls to display an object."""
    import sympy

    from attnverify.checks import run_claim
    from attnverify.derivations.derivation import DerivationRecorder

    @claim("demo.notebook", parameters=st.fixed_dictionaries({"x": st.just(1.0)}),
           examples={"quick": 1, "thorough": 1}, statement="x is at most 2.")
    def check(p, ctx):
        return at_most(p["x"], 2.0)

    result = run_claim(check, seed=0)
    assert "demo.notebook" in result._repr_markdown_() and "| value | bound |" in result._repr_markdown_()
    assert "<table" in result._repr_html_() and "demo.notebook" in result._repr_html_()
    evidence = result.examples[0].evidence
    assert "| value | 1 |" in evidence._repr_markdown_() and "| bound | 2 |" in evidence._repr_markdown_()
    assert "<th>verdict</th><td>holds</td>" in evidence._repr_html_()
    x = sympy.Symbol("x")
    rec = DerivationRecorder("demo.square", "A square", "nowhere")
    rec.step("Differentiate x².", sympy.Eq(sympy.Derivative(x**2, x), 2 * x))
    derivation = rec.finish()
    assert "$$" in derivation._repr_markdown_() and "A square" in derivation._repr_markdown_()
    assert "<math" in derivation._repr_html_()
