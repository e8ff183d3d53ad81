"""Every derivation step checked (:mod:`attnverify.derivations.steps`): proved, agreeing at random points, failing
at a shown point, marked, or unchecked with why; the theory's claim fails on a wrong step; the built-ins pass."""

from __future__ import annotations

import json
import textwrap

import pytest
import sympy
from sympy import Eq, FiniteSet, Integral, IndexedBase, MatrixSymbol, O, Rational, Sum, Symbol, exp, oo, pi, sqrt

from attnverify.base.files import unpack_entry
from attnverify.checks import run_claim
from attnverify.derivations import kept, steps
from attnverify.derivations.steps import comparison as comparing, numeric, relations, symbolic, walk
from attnverify.derivations.derivation import DerivationRecorder
from attnverify.derivations.gaussian import Expectation, gaussian
from attnverify.derivations.steps import StepCheck, compare
from attnverify.base.cache import KEEP_VARIABLE, cache_directory
from attnverify.report.markdown import derivation_markdown
from attnverify.report.render import derivation_html
from attnverify.report.results import derivation_dict
from attnverify.theories import BUILTIN_NAMES, builtin_theory, from_file

a, s, t, x, y = sympy.symbols("a s t x y", positive=True)
u = Symbol("u", positive=True)
R = Symbol("R")


@pytest.fixture(autouse=True)
def _fresh_cache(tmp_path, monkeypatch):
    """Each test checks afresh: its own folder of checked steps (the derivations stay kept), an empty memory."""
    monkeypatch.setattr(comparing, "cache_directory", lambda *parts: tmp_path.joinpath("cache", *parts))
    monkeypatch.delenv(KEEP_VARIABLE, raising=False)
    monkeypatch.setattr(comparing, "_MEMORY", {})
    steps.check_derivation.cache_clear()


def chain(*relations, **marks):
    """A derivation of the given steps (each an expression, or (expression, keyword arguments))."""
    rec = DerivationRecorder("demo.chain", "A chain", "here")
    for k, relation in enumerate(relations, 1):
        expression, options = relation if isinstance(relation, tuple) else (relation, {})
        rec.step(f"step {k}", expression, **options)
    return rec.finish()


def outcomes(derivation):
    return [c.outcome for c in derivation.checks()]


def assert_fails_at_a_point(check, *names):
    assert check.outcome == "failed", check
    assert set(names) <= set(check.point), check.point
    left, right = check.values
    assert left != right and "FAILS" in check.label() and all(f"{n} = " in check.label() for n in names)


# ----------------------------------------------------------------------------- symbolic and numeric


def test_an_identity_sympy_decides_is_proved_symbolically():
    check = compare(sympy.sin(x) ** 2 + sympy.cos(x) ** 2, sympy.S.One)
    assert check.outcome == "symbolic" and "simplify" in check.detail


def test_a_wrong_jacobian_fails_at_a_shown_point():
    """x = u², dx = 2u du: ∫₀^∞ e^{−ax}√x dx = ∫₀^∞ e^{−au²} u · 2u du; the Jacobian u instead of 2u is caught by
    30-digit quadrature at a random a > 0."""
    derivation = chain((Eq(R, Integral(exp(-a * x) * sqrt(x), (x, 0, oo))), {"kind": "definition"}),
                       Eq(R, Integral(exp(-a * u**2) * u * 2 * u, (u, 0, oo))),
                       Eq(R, Integral(exp(-a * u**2) * u * u, (u, 0, oo))))
    right, wrong = derivation.checks()[1:]
    assert right.outcome in ("symbolic", "numeric") and right.against == 1
    assert_fails_at_a_point(wrong, "a")
    assert wrong.against == 2 and float(wrong.values[0]) == pytest.approx(2 * float(wrong.values[1]))


def test_a_dropped_factor_fails_at_a_shown_point():
    derivation = chain(Eq(R, (x + y) ** 2), Eq(R, x**2 + x * y + y**2))
    assert_fails_at_a_point(derivation.checks()[1], "x", "y")


def test_the_issues_one_plus_t_for_one_plus_t_squared_is_caught_even_where_it_is_small():
    """A prefactor 1 + t for 1 + t², with t = s/100 (at most 2.5% off in the range drawn): below any Monte Carlo
    resolution, not below 30 digits."""
    small = s / 100
    derivation = chain(Eq(R, (1 + small**2) * exp(-s)), Eq(R, (1 + small) * exp(-s)))
    check = derivation.checks()[1]
    assert_fails_at_a_point(check, "s")
    point = sympy.Rational(check.point["s"])
    assert float(check.values[0]) == pytest.approx(float((1 + (point / 100) ** 2) * exp(-point)), rel=1e-10)


def test_integrals_with_infinite_limits_and_infinite_sums_are_evaluated():
    k = Symbol("k", integer=True, positive=True)
    assert compare(Integral(exp(-a * x**2), (x, -oo, oo)), sqrt(pi / a)).outcome in ("symbolic", "numeric")
    assert_fails_at_a_point(compare(Integral(exp(-a * x**2), (x, -oo, oo)), sqrt(pi / (2 * a))), "a")
    assert compare(Sum(1 / k**2, (k, 1, oo)), pi**2 / 6).outcome in ("symbolic", "numeric")
    wrong = compare(Sum(1 / k**2, (k, 1, oo)), pi**2 / 7)
    assert wrong.outcome == "failed" and wrong.values[0].startswith("1.6449340668")


@pytest.mark.parametrize("assumptions, outcome", [({"positive": True}, "symbolic"), ({"real": True}, "failed"),
                                                   ({}, "failed")])
def test_points_respect_the_symbols_assumptions(assumptions, outcome, monkeypatch):
    """√(r²) = r holds for r > 0 only: a real or unassumed r is drawn with both signs, so it fails."""
    monkeypatch.setattr(symbolic, "SIMPLIFY_OPERATIONS", 0)  # the numeric path decides
    r = Symbol("r", **assumptions)
    check = compare(sqrt(r**2), r)
    assert check.outcome == outcome
    if outcome == "failed":
        assert sympy.Rational(check.point["r"]) < 0


def test_integer_symbols_get_integer_values():
    n = Symbol("n", integer=True, positive=True)
    check = compare(sympy.cos(pi * x) ** 2 * (-1) ** (2 * n), sympy.cos(pi * x) ** 2 * (-1) ** n)
    assert_fails_at_a_point(check, "n", "x")
    assert sympy.Integer(check.point["n"]) % 2 == 1


def test_an_exact_zero_reached_by_cancellation_is_not_a_failure_a_real_difference_is(monkeypatch):
    """Digits count relative to the size of the terms: a cancellation to 0 agrees; 10⁻¹⁵ of terms of size ~10
    does not (it stays when the precision doubles)."""
    monkeypatch.setattr(symbolic, "SIMPLIFY_OPERATIONS", 0)
    monkeypatch.setattr(symbolic, "EXPAND_OPERATIONS", 0)
    zero = (sqrt(x) + sqrt(2)) ** 2 - x - 2 * sqrt(2 * x) - 2
    assert compare(zero, sympy.S.Zero).outcome == "numeric"
    assert compare(zero, sympy.Rational(1, 10**15)).outcome == "failed"


def test_a_difference_small_beside_the_terms_is_a_failure_unless_it_is_round_off(monkeypatch):
    """1 − erf(7) against 2·erfc(7): 4e-23 apart, 22 digits of terms of size 1, and as far apart at 60 digits,
    so the step fails; against erfc(7) it agrees. Sides without a free symbol are checked at their one point."""
    monkeypatch.setattr(symbolic, "SIMPLIFY_OPERATIONS", 0)
    monkeypatch.setattr(symbolic, "EXPAND_OPERATIONS", 0)
    tail = 1 - sympy.erf(7)
    assert compare(tail, 2 * sympy.erfc(7)).outcome == "failed"
    agreed = compare(tail, sympy.erfc(7))
    assert agreed.outcome == "numeric" and agreed.points == 1 and "at its one point" in agreed.label()


def test_matrix_identities_are_checked_with_explicit_random_matrices():
    """The push-through identity K(KᵀK + λI)⁻¹ = (KKᵀ + λI)⁻¹K holds; with KᵀK where KKᵀ belongs it fails."""
    rows, cols = Symbol("L", integer=True, positive=True), Symbol("d", integer=True, positive=True)
    K, q = MatrixSymbol("K", rows, cols), MatrixSymbol("q", cols, 1)
    lam = Symbol("lambda", positive=True)
    left = K * (K.T * K + lam * sympy.Identity(cols)).I * q
    assert compare(left, (K * K.T + lam * sympy.Identity(rows)).I * K * q).outcome in ("symbolic", "numeric")
    wrong = compare(sympy.Trace(left.T * left), sympy.Trace((K * (K.T * K + 2 * lam * sympy.Identity(cols)).I * q).T
                                                          * (K * (K.T * K + 2 * lam * sympy.Identity(cols)).I * q)))
    assert_fails_at_a_point(wrong, "lambda", "K", "L", "d")


def test_indexed_entries_and_symbolic_limits_get_values():
    n, i = Symbol("n", integer=True, positive=True), Symbol("i", integer=True)
    A = IndexedBase("A")
    assert compare(Sum(A[i], (i, 1, n)), Sum(A[i], (i, 1, n - 1)) + A[n]).outcome == "numeric"
    assert_fails_at_a_point(compare(Sum(A[i], (i, 1, n)), Sum(A[i], (i, 1, n - 1))), "n")


def test_an_expansion_is_checked_by_its_order_term():
    assert compare(1 / (1 + x), 1 - x + x**2 + O(x**3)).outcome == "symbolic"
    wrong = compare(1 / (1 + x), 1 - x + 2 * x**2 + O(x**3))
    assert wrong.outcome == "failed" and "x**2" in wrong.detail
    L = Symbol("L", positive=True)
    assert compare(1 / L + 3 / L**3, 1 / L + O(L**-2, (L, oo))).outcome == "symbolic"


def test_undecided_is_never_a_pass():
    """An unevaluated function cannot be evaluated: unchecked, with why (not a pass, not a failure)."""
    f = sympy.Function("f")
    check = compare(f(x) + 1, f(x) + 2)
    assert check.outcome == "unchecked" and "unevaluated function f" in check.detail
    assert compare(f(x) + x, x + f(x)).outcome == "symbolic"  # the same expression


# ----------------------------------------------------------------------------- chains


def test_a_step_is_checked_against_the_latest_earlier_form_of_its_left_side():
    derivation = chain(Eq(R, (x + 1) ** 2 - 1), Eq(R, x**2 + 2 * x), Eq(R, x * (x + 2)))
    checks = derivation.checks()
    assert [c.outcome for c in checks] == ["unchecked", "symbolic", "symbolic"]
    assert "first value of R" in checks[0].detail and [c.against for c in checks[1:]] == [1, 2]


def test_one_slip_is_one_failure_the_next_step_is_checked_against_the_last_that_held():
    """A wrong form is not learnt: the step after it is compared with the last form that held, so a slip in step 2
    followed by the right step 3 reads as one failure (step 3 agrees with step 1), for named forms and for plain
    expressions alike."""
    named = chain(Eq(R, (x + y) ** 2), Eq(R, x**2 + y**2), Eq(R, x**2 + 2 * x * y + y**2))
    plain = chain((x + y) ** 2, x**2 + y**2, x**2 + 2 * x * y + y**2)
    for derivation in (named, plain):
        checks = derivation.checks()
        assert [c.outcome for c in checks[1:]] == ["failed", "symbolic"] and checks[2].against == 1
    wrong_twice = chain(Eq(R, (x + y) ** 2), Eq(R, x**2 + y**2), Eq(R, x**2 + y**2 + x * y))
    assert outcomes(wrong_twice)[1:] == ["failed", "failed"]  # a second slip is a second failure


def test_earlier_results_are_substituted_before_a_step_that_assembles_them():
    E = sympy.Function("E")
    derivation = chain((Eq(R, E(x) ** 2 + E(y)), {"kind": "definition"}), Eq(E(x), a + 1), Eq(E(y), a),
                       Eq(R, a**2 + 3 * a + 1), Eq(R, a**2 + 3 * a + 2))
    assert outcomes(derivation)[3] == "symbolic"
    assert_fails_at_a_point(derivation.checks()[4], "a")


def test_the_dimensions_of_an_earlier_matrix_are_known_symbols():
    """σ² tr(X(XᵀX)⁻¹Xᵀ) = σ² tr((XᵀX)⁻¹XᵀX), which sympy writes σ²·d: d is the dimension of the X of the steps
    before, not a new notation; so σ²·d holds, and σ²·(d + 1) or σ²·n (n the other dimension of X) fail."""
    n, d = sympy.symbols("n d", integer=True, positive=True)
    X, Y, beta = MatrixSymbol("X", n, d), MatrixSymbol("Y", n, 1), MatrixSymbol("beta", d, 1)
    sigma = Symbol("sigma", positive=True)
    least_squares = (Eq(beta, (X.T * X).I * X.T * Y), {"kind": "definition"})
    hat_trace = (Eq(R, sigma**2 * sympy.Trace(X * (X.T * X).I * X.T)), {"kind": "definition"})
    cyclic = Eq(R, sigma**2 * sympy.trace((X.T * X).I * X.T * X))
    assert cyclic == Eq(R, sigma**2 * d)  # as sympy builds it
    checks = chain(least_squares, hat_trace, cyclic, Eq(R, sigma**2 * (d + 1))).checks()
    assert checks[2].outcome in ("symbolic", "numeric") and checks[2].against == 2, checks[2]
    assert_fails_at_a_point(checks[3], "d")
    assert_fails_at_a_point(chain(least_squares, hat_trace, cyclic, Eq(R, sigma**2 * n)).checks()[3], "n", "d")


def test_a_specialisation_states_its_values():
    derivation = chain(Eq(R, x**2 + x * y), (Eq(R, 1 + y), {"substitute": {x: 1}}), Eq(R, 2 + y))
    checks = derivation.checks()
    assert checks[1].outcome == "symbolic" and "taken at x = 1" in checks[1].label()
    assert_fails_at_a_point(checks[2], "y")


def test_a_solution_is_checked_against_the_condition_it_solves():
    z = Symbol("z", real=True)
    derivation = chain(Eq(z**2 - 2 * a, 0), FiniteSet(-sqrt(2 * a), sqrt(2 * a)), Eq(z, sqrt(2 * a)),
                       Eq(z, sqrt(3 * a)))
    condition, roots, root, wrong = derivation.checks()
    assert condition.outcome == "condition" and "steps 2, 3 satisfy it" in condition.detail
    assert roots.outcome == "symbolic" and root.outcome == "symbolic" and root.against == 1
    assert_fails_at_a_point(wrong, "a")
    assert outcomes(chain(Eq(z**2 - 2 * a, 0), FiniteSet(sqrt(a), 2 * sqrt(a))))[1] == "failed"


def test_a_solved_equation_to_zero_does_not_hide_a_false_relation_beside_it(monkeypatch):
    """Step 2 says z² − 2a = 0 (solved by step 3) and R = x + 2 after R = x + 1: it fails for the second."""
    z = Symbol("z", real=True)
    derivation = chain((Eq(R, x + 1), {"kind": "definition"}), sympy.Tuple(Eq(z**2 - 2 * a, 0), Eq(R, x + 2)),
                       Eq(z, sqrt(2 * a)))
    assert outcomes(derivation) == ["definition", "failed", "symbolic"]


def test_an_equation_to_zero_that_no_later_step_solves_is_an_identity(monkeypatch):
    """R − (x² + 2x + 2) = 0 after R = (x + 1)², which fails at random points: a condition if a later step solved
    it, but none does, so it fails as the identity it is (read as a condition, nothing would ever check it)."""
    monkeypatch.setattr(symbolic, "SIMPLIFY_OPERATIONS", 0)
    monkeypatch.setattr(symbolic, "EXPAND_OPERATIONS", 0)
    derivation = chain((Eq(R, (x + 1) ** 2), {"kind": "definition"}), Eq(R - x**2 - 2 * x - 2, 0))
    check = derivation.checks()[1]
    assert_fails_at_a_point(check, "x")
    assert "no later step solves" in check.detail


def test_marked_steps_are_shown_as_marked_and_what_they_state_is_used_later():
    derivation = chain((Eq(R, x + 1), {"kind": "definition"}), (Eq(x, 2 * y), {"kind": "assumption"}),
                       Eq(R - 1, 2 * y), Eq(R, 2 * y))
    checks = derivation.checks()
    assert [c.outcome for c in checks[:3]] == ["definition", "assumption", "symbolic"]
    assert "not checked" in checks[0].label() and checks[3].against == 1
    assert_fails_at_a_point(checks[3], "y")


def test_a_plain_expression_is_a_new_form_of_the_previous_one():
    derivation = chain((x + 1) ** 2, x**2 + 2 * x + 1, x**2 + 1, sympy.Tuple(x, x))
    checks = derivation.checks()
    assert [c.outcome for c in checks] == ["unchecked", "symbolic", "failed", "unchecked"]
    assert "first expression" in checks[0].detail and "not a new form" in checks[3].detail
    assert_fails_at_a_point(checks[2], "x")


def test_a_side_kept_as_written_is_shown_so_and_checked_by_its_value():
    """sympy builds 2(v + 1) as 2v + 2; recorded (and checked) under ``sympy.evaluate(False)``, or written with
    ``UnevaluatedExpr``, the definition stays 2(v + 1) in the report, and a step from it is compared with its value:
    2v + 2 holds (under evaluate(False) by expand, not as the same expression), 2v + 1 fails."""
    k, v = Symbol("k"), Symbol("v", real=True)
    for written in ("evaluate(False)", "UnevaluatedExpr"):
        with sympy.evaluate(written == "UnevaluatedExpr"):
            value = 2 * sympy.UnevaluatedExpr(v + 1) if written == "UnevaluatedExpr" else 2 * (v + 1)
            definition = (Eq(k, value), {"kind": "definition"})
            derivation = chain(definition, Eq(k, 2 * v + 2))
            slip = chain(definition, Eq(k, 2 * v + 1))
            holds, fails = derivation.checks()[1], slip.checks()[1]
        assert holds.outcome == "symbolic", (written, holds)
        assert written == "UnevaluatedExpr" or "expand" in holds.detail, holds
        assert_fails_at_a_point(fails, "v")
        assert r"k = 2 \left(v + 1\right)" in derivation_markdown(derivation), written


def test_a_step_the_checker_cannot_read_is_unchecked_not_a_crash(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("sympy gave up")

    monkeypatch.setattr(relations, "_check_relation", broken)
    (check,) = chain(Eq(x, y)).checks()
    assert check.outcome == "unchecked" and "RuntimeError: sympy gave up" in check.detail


def test_recording_refuses_a_bad_kind_substitution_or_expression():
    rec = DerivationRecorder("demo.bad", "Bad", "here")
    with pytest.raises(ValueError, match="kind must be one of"):
        rec.step("a", Eq(x, 1), kind="lemma")
    with pytest.raises(ValueError, match="substitute must be a non-empty dict"):
        rec.step("a", Eq(x, 1), substitute=[(x, 1)])
    with pytest.raises(TypeError, match="must be a sympy object"):
        rec.step("a", "x = 1")


def test_kinds_and_substitutions_are_kept_on_disk():
    derivation = chain((Eq(R, x + y), {"kind": "definition"}), (Eq(R, 1 + y), {"substitute": {x: 1}}))
    read = kept.decoded(kept.encoded(derivation))
    assert [(s.kind, s.substitute) for s in read.steps] == [("definition", ()), ("derived", ((x, 1),))]


# ----------------------------------------------------------------------------- cache


def test_outcomes_are_cached_in_memory_and_on_disk(monkeypatch):
    numeric_check = comparing.numeric_check
    key = steps.comparison_key(x + x, 2 * y)
    first = compare(x + x, 2 * y)
    path = comparing._cache_path(key)
    assert path.is_file() and steps.StepCheck.from_dict(json.loads(unpack_entry(path.read_bytes(), key))) == first
    monkeypatch.setattr(comparing, "_MEMORY", {})
    monkeypatch.setattr(comparing, "numeric_check", lambda *args: pytest.fail("a kept outcome is checked again"))
    assert compare(x + x, 2 * y) == first  # a new process reads it
    path.write_text("{ damaged")
    monkeypatch.setattr(comparing, "_MEMORY", {})
    monkeypatch.setattr(comparing, "numeric_check", numeric_check)
    assert compare(x + x, 2 * y) == first and json.loads(unpack_entry(path.read_bytes(), key))["outcome"] == "failed"


def test_the_disk_is_off_with_the_kept_derivations(monkeypatch):
    monkeypatch.setenv(KEEP_VARIABLE, "0")
    compare(x + 1, 1 + x)
    assert not comparing._cache_path(steps.comparison_key(x + 1, 1 + x)).exists()


# ----------------------------------------------------------------------------- report, notebook, claim


def test_each_steps_check_is_in_the_markdown_html_json_and_notebook():
    derivation = chain(Eq(R, (x + y) ** 2), Eq(R, x**2 + 2 * x * y + y**2), Eq(R, x**2 + y**2))
    markdown, html = derivation_markdown(derivation), derivation_html(derivation)
    assert "Steps checked: 3 steps: 1 proved symbolically" in markdown and "1 failed" in markdown
    assert "*Check: proved symbolically (against step 1)" in markdown
    assert "**✗ Check: FAILS (against step 2) at x = " in markdown
    assert '<p class="check failed">✗ Check: FAILS (against step 2) at x = ' in html
    from attnverify.report import notebook

    assert notebook.markdown(derivation) == markdown and notebook.html(derivation) == html
    document = json.loads(json.dumps(derivation_dict(derivation)))
    assert document["checks"]["failed"] == 1 and document["steps"][2]["check"]["point"].keys() == {"x", "y"}
    assert document["steps"][0]["kind"] == "derived"


def test_a_wrong_step_in_a_users_file_fails_its_theorys_verification(tmp_path):
    source = tmp_path / "wrong.py"
    source.write_text(textwrap.dedent('''
        import sympy
        from attnverify.checks import claim, close, st
        from attnverify.derivations.derivation import DerivationRecorder

        THEORY = "wrong"


        def derivations():
            x = sympy.Symbol("x", positive=True)
            rec = DerivationRecorder("wrong.square", "A square", "here")
            rec.step("The square", sympy.Eq(sympy.Symbol("R"), (1 + x) ** 2))
            rec.step("Expand, dropping the factor 2", sympy.Eq(sympy.Symbol("R"), 1 + x + x**2))
            return [rec.finish()]


        @claim("wrong.one", parameters=st.just({}))
        def one(p, ctx):
            """1 = 1."""
            return close(1.0, 1.0)
    '''))
    theory = from_file(source)
    assert [c.name for c in theory.claim_list()] == ["wrong.one", "wrong.derivation_steps"]
    result = run_claim(theory.claim_named("wrong.derivation_steps"), profile="quick", seed=0)
    assert result.status == "refuted" and not result.ok
    evidence = result.counterexample.evidence
    assert evidence.conditions == {"wrong.square: step 2": False}
    assert evidence.note.startswith("wrong.square: step 2 FAILS (against step 1) at x = ")
    assert evidence.figures["counts"]["failed"] == 1


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_every_builtin_derivation_step_passes_through_the_claim_runner(name, monkeypatch):
    theory = builtin_theory(name)
    monkeypatch.setattr(comparing, "cache_directory", cache_directory)  # the real cache, as a run uses it
    result = run_claim(theory.claim_named(f"{theory.name}.derivation_steps"), profile="quick", seed=0)
    evidence = result.examples[-1].evidence
    assert result.ok and result.status == "holds", evidence.note
    counted = evidence.figures["counts"]
    assert counted["failed"] == 0 and counted["symbolic"] + counted["numeric"] >= 4
    assert counted["unchecked"] == 0, [label for label, check in evidence.figures["steps"].items()
                                       if check["outcome"] == "unchecked"]


# ----------------------------------------------------------------------------- expectations, unknowns, conditions


def test_a_gaussian_expectation_is_checked_by_quadrature_and_a_wrong_one_fails():
    """E erf(a + bZ) = erf(a/√(1 + 2b²)) agrees in 30 digits; the √(1 + b²) of a dropped factor fails at a point."""
    z, b2 = Symbol("z", real=True), Symbol("b", positive=True)
    mean = Expectation(sympy.erf(a + b2 * z), gaussian(z))
    right = compare(mean, sympy.erf(a / sqrt(1 + 2 * b2**2)))
    assert right.outcome == "numeric" and right.points == steps.QUADRATURE_POINTS and right.digits >= 20
    assert_fails_at_a_point(compare(mean, sympy.erf(a / sqrt(1 + b2**2))), "a", "b")


def test_a_two_dimensional_relu_integral_is_checked_against_the_arc_cosine_kernel():
    """∫∫ relu(x) relu(cos t x + sin t y) e^{−(x² + y²)/2}/(2π) dx dy, kinked on lines through the origin, equals
    (sin t + (π − t) cos t)/(2π) (Cho & Saul 2009) at random t in (0, π): checked by sectors, as is the same mean
    written as an expectation; 1/π for 1/(2π) fails."""
    K = Symbol("K")
    x, y = sympy.symbols("x y", real=True)
    relus = sympy.Max(0, x) * sympy.Max(0, sympy.cos(t) * x + sympy.sin(t) * y)
    kernel = Integral(relus * exp(-(x**2 + y**2) / 2) / (2 * pi), (x, -oo, oo), (y, -oo, oo))
    closed = sympy.sin(t) + (pi - t) * sympy.cos(t)
    checks = chain((Eq(K, kernel), {"kind": "definition"}), Eq(K, closed / (2 * pi)), Eq(K, closed / pi)).checks()
    assert checks[1].outcome == "symbolic" or (checks[1].outcome == "numeric" and checks[1].digits >= 20), checks[1]
    assert_fails_at_a_point(checks[2], "t")
    mean = compare(Expectation(relus, gaussian(x), gaussian(y)), closed / (2 * pi))
    assert mean.outcome == "symbolic" or (mean.outcome == "numeric" and mean.digits >= 20), mean


def test_averaging_conditionally_is_checked_by_its_integrands():
    """E over (z, w) of (z + w)² erf(z) = E over z of (z² + 1) erf(z)… = 0 by symmetry: the integrands after w is
    averaged agree for every z, no quadrature; a wrong conditional average fails at a point."""
    z, w = sympy.symbols("z w", real=True)
    full = Expectation((a * z + w) ** 2 * sympy.exp(z), gaussian(z), gaussian(w))
    right = compare(full, Expectation((a**2 * z**2 + 1) * sympy.exp(z), gaussian(z)))
    assert right.outcome == "numeric" and "given z" in right.detail
    wrong = compare(full, Expectation(a**2 * z**2 * sympy.exp(z), gaussian(z)))
    assert wrong.outcome == "failed" and "a" in wrong.point


def test_expectations_of_unspecified_laws_are_checked_by_linearity():
    """μ_uss = E[u s²] with u = w(v − m∞)/E[w], s = w/E[w] − 1 is R₃e₁,₃ − 2R₂e₁,₂ (the ratio expansion's tilted
    moments): proved; R₃e₁,₃ − R₂e₁,₂ fails, at the moments shown."""
    w, v = sympy.symbols("w v", real=True)
    m, u, s_, mu, R2, R3, e12, e13 = sympy.symbols("m u s mu R2 R3 e12 e13")
    mean_w = Expectation(w, w)
    definitions = sympy.Tuple(
        Eq(m, Expectation(w * v, w, v) / mean_w), Eq(u, w * (v - m) / mean_w), Eq(s_, w / mean_w - 1),
        Eq(mu, Expectation(u * s_**2, w, v)), Eq(R2, Expectation(w**2, w) / mean_w**2),
        Eq(R3, Expectation(w**3, w) / mean_w**3), Eq(e12, Expectation(w**2 * (v - m), w, v) / Expectation(w**2, w)),
        Eq(e13, Expectation(w**3 * (v - m), w, v) / Expectation(w**3, w)))
    checks = chain((definitions, {"kind": "definition"}), Eq(mu, R3 * e13 - 2 * R2 * e12),
                   Eq(mu, R3 * e13 - R2 * e12)).checks()
    assert checks[1].outcome in ("symbolic", "numeric")
    assert checks[2].outcome == "failed" and "E[w**2]" in checks[2].point


def test_unevaluated_functions_are_replaced_by_generic_ones():
    """Counting the terms of E(D + ΣN_ℓ)² with 𝔼 unknown passes; a wrong count is unchecked, not passed (𝔼(2N) =
    2𝔼(N) is true and fails for a generic function, so a difference is no proof of a wrong step)."""
    E = sympy.Function("𝔼")
    D, N = sympy.symbols("D N")
    L_ = Symbol("L", positive=True)
    ell, m_ = sympy.symbols("ell m", integer=True)
    delta = sympy.KroneckerDelta(ell, m_)
    expanded = E(D**2) + 2 * sympy.Sum(E(D) * E(N), (ell, 1, L_ - 1)) + sympy.Sum(
        delta * E(N**2) + (1 - delta) * E(N) ** 2, (ell, 1, L_ - 1), (m_, 1, L_ - 1))
    right = E(D**2) + 2 * (L_ - 1) * E(D) * E(N) + (L_ - 1) * E(N**2) + (L_ - 1) * (L_ - 2) * E(N) ** 2
    checks = chain((Eq(R, expanded), {"kind": "assumption"}), Eq(R, right),
                   Eq(R, right + (L_ - 1) * E(N) ** 2)).checks()
    assert checks[1].outcome == "numeric" and "generic" in checks[1].detail
    assert checks[2].outcome == "unchecked" and "rests on what they are" in checks[2].detail
    assert compare(E(2 * N), 2 * E(N)).outcome == "unchecked"


def test_a_condition_is_checked_through_the_step_that_solves_it():
    """ℛ(c) = (c − 2)² + 1: the condition ∂ℛ/∂c = 0 (the derivative taken of ℛ's value) is solved by c = 2, not by
    c = 3; a condition no later step solves is unchecked."""
    c = Symbol("c", real=True)
    right = chain(Eq(R, (c - 2) ** 2 + 1), (Eq(sympy.Derivative(R, c), 0), {"kind": "condition"}), Eq(c, 2),
                  Eq(R, 1)).checks()
    assert [k.outcome for k in right] == ["unchecked", "condition", "symbolic", "symbolic"]
    assert "step 3" in right[1].label() and right[2].against == 2
    wrong = chain(Eq(R, (c - 2) ** 2 + 1), (Eq(sympy.Derivative(R, c), 0), {"kind": "condition"}), Eq(c, 3)).checks()
    assert wrong[1].outcome == "unchecked" and "no later step solves" in wrong[1].detail
    assert wrong[2].outcome == "failed"


def test_matrix_differentials_are_checked_at_explicit_matrices():
    """d ln det X = Tr(X⁻¹ dX) and d X⁻¹ = −X⁻¹ dX X⁻¹ along a direction, by exact central differences; the sign
    of the second flipped fails."""
    n = Symbol("n", integer=True, positive=True)
    X, dX = MatrixSymbol("X", n, n), MatrixSymbol("dX", n, n)
    eps = Symbol("epsilon", real=True)

    def along(f):
        return sympy.Subs(sympy.Derivative(f.xreplace({X: X + eps * dX}), eps), eps, 0)

    assert compare(along(sympy.log(sympy.Determinant(X))), sympy.Trace(X.I * dX)).outcome in ("symbolic", "numeric")
    assert compare(along(X.I), -X.I * dX * X.I).outcome in ("symbolic", "numeric")
    assert_fails_at_a_point(compare(along(X.I), X.I * dX * X.I), "n", "X", "dX")


def test_a_step_holds_at_its_values_on_both_sides():
    """∂f/∂x at a point: the derivative is taken of f's value, then the point substituted (the variable stays
    bound); a wrong value fails."""
    f = Symbol("f")
    step = Eq(sympy.Tuple(sympy.Derivative(f, x), sympy.Derivative(f, y)), sympy.Tuple(2 * y, 2 * x))
    checks = chain((Eq(f, 2 * x * y), {"kind": "definition"}), (step, {"substitute": {x: 3, y: 5}})).checks()
    assert checks[1].outcome == "symbolic" and "taken at x = 3, y = 5" in checks[1].label()
    wrong = Eq(sympy.Tuple(sympy.Derivative(f, x), sympy.Derivative(f, y)), sympy.Tuple(6, 10))
    assert outcomes(chain((Eq(f, 2 * x * y), {"kind": "definition"}), (wrong, {"substitute": {x: 3, y: 5}})))[1] \
        == "failed"


def test_a_function_given_at_symbols_is_its_value_anywhere():
    """f(t) = t² + 1, then f(2) = 5; f(2) = 4 fails."""
    f = steps.function("f")
    checks = chain((Eq(f(t), t**2 + 1), {"kind": "definition"}), Eq(f(2), 5), Eq(f(2), 4)).checks()
    assert [k.outcome for k in checks[1:]] == ["symbolic", "failed"]


def test_a_whole_derivation_is_kept_on_disk(monkeypatch):
    derivation = chain(Eq(R, (x + y) ** 2), Eq(R, x**2 + 2 * x * y + y**2))
    first = derivation.checks()
    steps.check_derivation.cache_clear()
    monkeypatch.setattr(walk, "_walked", lambda d: pytest.fail("a kept derivation is walked again"))
    assert derivation.checks() == first


def test_a_quadrature_limited_check_states_the_digits_its_error_estimate_leaves():
    """∫_{−1}^{1} = 2∫_0^1 of an even integrand with poles at ±i/√48: mpmath.quad's estimate leaves about 29 of
    the 30 digits, and the label says 29, quadrature-limited; a planted factor 1 + 10⁻⁵ fails."""
    t = Symbol("t", real=True)
    integrand = sympy.exp(-t**2) / (Rational(1, 48) + t**2)
    whole, half = sympy.Integral(integrand, (t, -1, 1)), 2 * sympy.Integral(integrand, (t, 0, 1))
    right = compare(whole, half, budget=10)
    assert right.outcome == "numeric" and right.limited and 20 <= right.digits < 30
    assert "to 29 digits (quadrature-limited)" in right.label()
    assert StepCheck.from_dict(right.as_dict()) == right
    assert compare(whole, half * (1 + Rational(1, 10**5)), budget=10).failed


def test_a_difference_within_the_error_estimate_is_agreement_to_the_digits_it_leaves():
    """Sides 10⁻¹⁵ apart with a combined error estimate of 2·10⁻¹⁵ agree to the 14.7 digits it leaves (too few to
    pass :func:`steps.numeric.numeric_check`, which leaves such a step unchecked, never failed); 10⁻²² apart with no estimate,
    to 22; 10⁻¹² apart with an estimate of 10⁻²⁵ they differ."""
    one = sympy.Float(1, 40)
    assert numeric._agreed(one, one + sympy.Float("1e-15", 40), sympy.Float("2e-15")) == (pytest.approx(14.7, abs=0.01),
                                                                                       True)
    assert numeric._agreed(one, one + sympy.Float("1e-22", 40), 0) == (pytest.approx(22), False)
    assert numeric._agreed(one, one + sympy.Float("1e-12", 40), sympy.Float("1e-25")) is None


def test_a_derivation_with_a_step_the_checker_cannot_decide_is_not_verified():
    """A misspelt left side (mm for m) is a first value, unchecked: the theory's derivation_steps claim is
    inconclusive and names the step, not held while the named result rests on it."""
    from attnverify import Theory

    theory = Theory("misspelt")
    m, mm = Symbol("m"), Symbol("mm")

    @theory.derivation
    def result(step):
        """A result whose last step misspells its name"""
        step("Its definition", Eq(m, x**2 + 1), kind="definition")
        step("Its value, misspelt", Eq(mm, x**2 + 2), name="m")

    (claim,) = [c for c in theory.claim_list() if c.name == "misspelt.derivation_steps"]
    outcome = run_claim(claim)
    assert outcome.status == "inconclusive", outcome
    assert "first value of mm" in outcome.examples[0].evidence.inconclusive
