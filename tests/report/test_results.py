"""Claim results as text: the key figures name the sides by their relation and show the standard error."""

from attnverify.checks import at_most, claim, run_claim, st, within_error
from attnverify.numerics.statistics import Estimate
from attnverify.report.markdown import claim_detail_markdown
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
    assert key_figures(result) == "observed − bound > τ: 0.47 − 0 > 0.54 (SE 0.108)"
    labelled = _result(lambda: Evidence(holds=True, theory=0.0, observed=9.86, tolerance=0.36, standard_error=0.07,
                                        relation="custom", labels=("no drop", "least drop")), name="demo.custom")
    assert key_figures(labelled) == "no drop 0 vs least drop 9.86 (SE 0.07), allowed gap 0.36"


def test_a_bound_is_shown_as_an_inequality_with_value_and_bound_labels():
    result = _result(lambda: at_most(0.3, 0.5, tolerance=0.01))
    assert key_figures(result) == "0.3 ≤ 0.5 + 0.01"
    detail = result_details(result)
    assert "value:" in detail and "bound:" in detail and "theory:" not in detail
    assert "| value | bound |" in claim_detail_markdown(result)


def test_a_bound_names_the_sides_its_check_labels_and_the_conditions_that_fail():
    """A bound whose check names its sides shows them beside the numbers; a condition the verdict needs that does
    not hold is named after them (the sides alone would read as a pass)."""
    labelled = _result(lambda: at_most(0.02, 0.05, labels=("|slope + 1|", "tolerance")))
    assert key_figures(labelled).startswith("|slope + 1| 0.02 ≤ tolerance 0.05 + ")  # + its round-off floor
    failing = _result(lambda: at_most(0.02, 0.05, labels=("|slope + 1|", "tolerance"),
                                      conditions={"on the prediction's side": False}))
    assert key_figures(failing).startswith("|slope + 1| 0.02 ≤ tolerance 0.05 + ")
    assert key_figures(failing).endswith("; fails: on the prediction's side")
    broken = _result(lambda: at_most(0.3, 0.2, tolerance=0.01))  # the numbers in the relation they are in
    assert key_figures(broken) == "0.3 > 0.2 + 0.01"


def test_a_stated_bias_budget_is_named_inside_the_gap_allowed():
    """A claim that holds mostly on its stated bias budget says so in the table, not only in its note."""
    from attnverify.checks import within_error
    from attnverify.numerics.statistics import Estimate

    biased = _result(lambda: within_error(4.3, Estimate(3.8, 0.04, 1000), bias_budget=0.874))
    assert key_figures(biased).startswith("theory 4.3 vs observed 3.8 (SE 0.04), allowed gap 1.07")
    assert key_figures(biased).endswith("(bias budget 0.874)")
    plain = _result(lambda: within_error(4.3, Estimate(4.25, 0.04, 1000)))
    assert "bias budget" not in key_figures(plain)


def test_a_notebook_shows_results_evidence_derivations_claims_and_theories():
    """The report's renderings found from the object's class (report.notebook), handed to IPython by class name:
    no core object imports the report."""
    import sympy

    from attnverify import Theory
    from attnverify.checks import run_claim
    from attnverify.derivations.derivation import DerivationRecorder
    from attnverify.report import notebook

    @claim("demo.notebook", parameters=st.fixed_dictionaries({"x": st.just(1.0)}),
           examples={"quick": 1, "thorough": 1}, statement="x is at most 2.")
    def check(p, ctx):
        return at_most(p["x"], 2.0)

    result = run_claim(check, seed=0)
    assert "demo.notebook" in notebook.markdown(result) and "| value | bound |" in notebook.markdown(result)
    assert "<table" in notebook.html(result) and "demo.notebook" in notebook.html(result)
    evidence = result.examples[0].evidence
    assert "| value | 1 |" in notebook.markdown(evidence) and "| bound | 2 |" in notebook.markdown(evidence)
    assert "<th>verdict</th><td>holds</td>" in notebook.html(evidence)
    x = sympy.Symbol("x")
    rec = DerivationRecorder("demo.square", "A square", "nowhere")
    rec.step("Differentiate x².", sympy.Eq(sympy.Derivative(x**2, x), 2 * x))
    derivation = rec.finish()
    assert "$$" in notebook.markdown(derivation) and "A square" in notebook.markdown(derivation)
    assert "<math" in notebook.html(derivation)
    assert "x is at most 2." in notebook.html(check) and "attnverify verify" in notebook.markdown(check)
    theory = Theory("demo", title="Demo")

    @theory.claim(x=st.just(1.0))
    def bounded(x):
        """x ≤ 2."""
        return at_most(x, 2.0)

    assert "<h3>Demo</h3>" in notebook.html(theory) and "| claim | `demo.bounded` | x ≤ 2. (expected holds) |" \
        in notebook.markdown(theory)

    class Formatter:
        def __init__(self):
            self.types = {}

        def for_type_by_name(self, module, name, function):
            self.types[(module, name)] = function

    shell = type("Shell", (), {})()
    shell.display_formatter = type("Display", (), {})()
    shell.display_formatter.formatters = {"text/html": Formatter(), "text/markdown": Formatter()}
    import attnverify

    attnverify.load_ipython_extension(shell)
    registered = shell.display_formatter.formatters["text/html"].types
    assert registered[("attnverify.checks.runner", "ClaimResult")](result) == notebook.html(result)
    assert set(registered) == set(notebook.DISPLAYED)


def test_no_core_object_imports_the_report():
    """The modules of the displayed objects (claim, evidence and its comparisons, result, derivation) import nothing
    from report/."""
    import ast
    from pathlib import Path

    import attnverify

    root = Path(attnverify.__file__).parent
    for name in ("checks/claim.py", "checks/evidence.py", "checks/comparisons.py", "checks/runner.py",
                 "derivations/derivation.py"):
        for node in ast.walk(ast.parse((root / name).read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and "report" in node.module.split("."):
                raise AssertionError(f"{name} imports {node.module}")


def test_a_result_prints_as_its_story_not_a_dataclass():
    @claim("demo.printed", parameters={"x": st.integers(0, 3)}, examples={"quick": 3, "thorough": 3},
           statement="x² = 2 (false).", expect="refuted")
    def check(p, ctx):
        from attnverify.checks import close

        return close(float(p["x"] ** 2), 2.0, labels=("x²", "two"))

    result = run_claim(check, seed=0)
    text = str(result)
    assert text.startswith("--- demo.printed: refuted (expected refuted) -> OK\nstatement:  x² = 2 (false).")
    assert "counterexample (after" in text and "  parameters: x=" in text and "  x²:" in text and "  two:" in text
    assert "replay:     attnverify" in text and "ClaimResult(" not in text
    assert repr(result).startswith("<ClaimResult demo.printed: refuted")
    from attnverify.report.results import key_figures

    assert key_figures(result.as_dict()).startswith("x² ")
