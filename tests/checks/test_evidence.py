"""Evidence never lets a false claim through: it validates itself and recomputes its verdict."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnverify.checks import Evidence, at_most, claim, close, run_claim, st, within_error
from attnverify.checks.evidence import EvidenceError
from attnverify.numerics.statistics import Estimate

INF, NAN = math.inf, math.nan
ONE = st.fixed_dictionaries({"x": st.just(1)})


@pytest.mark.parametrize("make, named", [
    (lambda: close(1, 2, rtol=INF), "rtol"),
    (lambda: close(1, 2, atol=INF), "atol"),
    (lambda: close(1, 2, rtol=NAN), "rtol"),
    (lambda: close(1, 2, rtol=-1e-12), "rtol"),
    (lambda: close(1e308, 1e308, rtol=10.0), "tolerance"),  # atol + rtol·|rhs| overflows
    (lambda: at_most(2, 1, tolerance=INF), "tolerance"),
    (lambda: at_most(2, 1, tolerance=NAN), "tolerance"),
    (lambda: at_most(2, 1, tolerance=-1.0), "tolerance"),
    (lambda: within_error(1.0, Estimate(2.0, INF, 10)), "standard_error"),
    (lambda: within_error(1.0, Estimate(2.0, 0.1, 10), bias_budget=INF), "bias_budget"),
    (lambda: within_error(1.0, Estimate(2.0, 0.1, 10), bias_budget=-0.1), "bias_budget"),
    (lambda: within_error(1.0, Estimate(2.0, 0.1, 10), z=INF), "z"),
    (lambda: within_error(1.0, Estimate(2.0, 0.1, 10), z=4.9), "z"),
    (lambda: within_error(1.0, Estimate(2.0, 0.1, 10), z=1e154, resolution=0.1), "z"),  # no overflow inside
    (lambda: at_most(2, 1, standard_error=0.1, z=3), "z"),
    (lambda: at_most(2, 1, standard_error=NAN), "standard_error"),
    (lambda: within_error(1.0, Estimate(NAN, 0.1, 10)), "mean"),
    (lambda: within_error(NAN, Estimate(1.0, 0.1, 10)), "theory"),
    (lambda: close(NAN, NAN), "lhs"),
])
def test_an_unbounded_or_broken_tolerance_is_an_error_not_a_pass(make, named):
    with pytest.raises(ValueError, match=named):  # EvidenceError, or Estimate refusing a broken figure
        make()


@pytest.mark.parametrize("fields, named", [
    ({"holds": True, "theory": NAN, "observed": 1.0, "tolerance": 0.1}, "theory"),
    ({"holds": True, "theory": 1.0, "observed": INF, "tolerance": 0.1}, "observed"),
    ({"holds": NAN, "theory": 1.0, "observed": 1.0, "tolerance": 0.1}, "holds"),
    ({"holds": "False"}, "holds"),
    ({"holds": 1}, "holds"),
    ({"holds": True, "theory": 1.0, "observed": 1.0, "tolerance": -0.1}, "tolerance"),
    ({"holds": False, "theory": 1.0, "observed": 1.0, "tolerance": NAN}, "tolerance"),
    ({"holds": True, "standard_error": -1.0}, "standard_error"),
    ({"holds": True, "theory": 1.0, "observed": 2.0, "tolerance": 0.5}, "figures say False"),
    ({"holds": False, "theory": 1.0, "observed": 1.2, "tolerance": 0.5}, "figures say True"),
    ({"holds": True, "relation": "at_most", "theory": 3.0, "observed": 1.0, "tolerance": 1.0}, "figures say False"),
    ({"holds": True, "relation": "above", "theory": 0.0, "observed": 1.0, "tolerance": 1.0}, "figures say False"),
    ({"holds": True, "relation": "below", "theory": 0.0, "observed": -0.5, "tolerance": 1.0}, "figures say False"),
    ({"holds": True, "relation": "custom", "conditions": {"converged": False}}, "figures say False"),
    ({"holds": True, "conditions": {"converged": "yes"}}, "converged"),
    ({"holds": True, "relation": "approximately"}, "relation"),
    ({"holds": True, "relation": "equal", "theory": 1.0}, "needs theory, observed and tolerance"),
])
def test_evidence_refuses_what_it_cannot_stand_behind(fields, named):
    with pytest.raises(EvidenceError, match=named):
        Evidence(**fields)


def test_each_relation_and_its_conditions_decide_the_verdict():
    assert Evidence(True, 1.0, 1.4, 0.5).relation == "equal"
    assert Evidence(True, 3.0, 2.5, 0.5, relation="at_most").verdict() is True
    assert Evidence(True, 0.0, 2.0, 1.0, relation="above").verdict() is True
    assert Evidence(True, 0.0, -2.0, 1.0, relation="below").verdict() is True
    assert Evidence(False, 1.0, 1.0, 0.0, conditions={"Hessian positive": False}).verdict() is False
    assert Evidence(True, note="stated by the check").verdict() is None  # custom, nothing to recompute
    assert Evidence(np.bool_(True), np.float64(1.0), np.float64(1.0), np.float64(0.0)).holds is True
    assert close(1.0, 1.0, conditions={"gradient matches": False}).holds is False


@claim("mine.liar", parameters=ONE, examples={"quick": 1, "thorough": 1}, shrink_budget=1)
def liar(params, ctx):
    """1 = 2 (false; the check says it holds anyway)."""
    return Evidence(holds=True, theory=1.0, observed=2.0, tolerance=0.0)


@claim("mine.nan_side", parameters=ONE, examples={"quick": 1, "thorough": 1}, shrink_budget=1)
def nan_side(params, ctx):
    """A side that broke down."""
    return Evidence(holds=True, theory=float("nan"), observed=1.0, tolerance=1.0)


@claim("mine.infinite_rtol", parameters=ONE, examples={"quick": 1, "thorough": 1}, shrink_budget=1)
def infinite_rtol(params, ctx):
    """1 = 2 within an infinite relative tolerance."""
    return close(1, 2, rtol=float("inf"))


@claim("mine.tampered", parameters=ONE, examples={"quick": 1, "thorough": 1}, shrink_budget=1)
def tampered(params, ctx):
    """An Evidence whose verdict was changed after it was made."""
    evidence = close(1.0, 2.0)
    object.__setattr__(evidence, "holds", True)
    return evidence


@pytest.mark.parametrize("bad", [liar, nan_side, infinite_rtol, tampered], ids=lambda c: c.name)
def test_the_runner_reports_untrustworthy_evidence_as_an_error(bad):
    result = run_claim(bad, seed=0)
    assert result.status == "error" and not result.ok
    assert result.counterexample is None and result.error.evidence is None
    assert "figures say" in result.error.error or "finite" in result.error.error


def test_a_bound_on_a_monte_carlo_estimate_allows_z_standard_errors():
    """P(|Z| > 2) = erfc(√2) = 0.0455003 observed as 0.04558 ± 0.00066: 0.12 SE above the bound holds with the
    standard error given (5 SE allowed), and 6 SE above it is refuted."""
    bound, se = 0.0455003, 0.000659567
    held = at_most(0.04558, bound, standard_error=se)
    assert held.holds and math.isclose(held.tolerance, 5 * se, rel_tol=1e-9)
    assert not at_most(bound + 6 * se, bound, standard_error=se).holds
    assert not at_most(0.04558, bound).holds  # without it, an exact bound: noise refutes


def test_a_bound_too_wide_for_the_excess_it_must_see_is_inconclusive_and_says_what_would_decide():
    """A slope 0.0066 ± 0.035 against ≤ 0: not refuted at 5 SE, but an allowance of 0.175 cannot see a slope of 0.06,
    the resolution asked; at 8 seeds, ⌈8·(0.175/0.06)²⌉ = 69 would. With a resolution the allowance meets, it holds;
    a slope 6 SE up is refuted whatever the resolution; a tolerance above the resolution no count decides."""
    wide = at_most(0.0066, 0.0, standard_error=0.035, resolution=0.06, samples=8, unit="seeds")
    assert wide.status == "inconclusive" and wide.needed == {"seeds": 69} and "69 seeds" in wide.inconclusive
    assert at_most(0.0066, 0.0, standard_error=0.035, resolution=0.2).holds
    assert at_most(6 * 0.035, 0.0, standard_error=0.035, resolution=0.05).status == "refuted"
    hopeless = at_most(0.0, 0.0, tolerance=0.1, standard_error=0.01, resolution=0.05, samples=8)
    assert hopeless.status == "inconclusive" and hopeless.needed == {} and "no smaller" in hopeless.inconclusive
    with pytest.raises(EvidenceError, match="standard_error"):
        at_most(0.0, 0.0, resolution=0.05)
    with pytest.raises(EvidenceError, match="samples"):
        at_most(0.0, 0.0, standard_error=0.01, resolution=0.05, samples=0)
    with pytest.raises(EvidenceError, match="resolution"):  # refused even where the comparison is refuted
        at_most(1.0, 0.0, standard_error=0.01, resolution=float("nan"))


def test_a_comparison_held_by_a_round_off_floor_above_both_sides_is_vacuous():
    """5 ≤ 0 "holds" under a floor of 16 ulps of 1e300: vacuous, and a claim of such examples alone is
    inconclusive; 0.1 + 0.2 = 0.3 by round-off is evidence (the floor is far below the sides)."""
    assert at_most(5.0, 0.0, scale=1e300).vacuous and not close(0.1 + 0.2, 0.3, rtol=0).vacuous

    @claim("demo.floor_only", parameters=ONE)
    def floor_only(p, ctx):
        """5 ≤ 0 up to round-off of terms of size 1e300."""
        return at_most(5.0, 0.0, scale=1e300)

    result = run_claim(floor_only, seed=0)
    assert result.status == "inconclusive" and "round-off is no evidence" in result.examples[0].evidence.inconclusive


def test_close_on_arrays_holds_entrywise_and_points_at_the_worst_entry():
    a = np.arange(12.0).reshape(3, 4)
    assert close(a, a + 1e-14, rtol=1e-12, atol=1e-13).holds
    b = a.copy()
    b[2, 1] += 1e-3
    b[0, 3] += 1e-6
    evidence = close(b, a, rtol=1e-9)
    assert not evidence.holds
    assert evidence.figures["worst_index"] == [2, 1] and evidence.figures["entries_outside"] == 2
    assert (evidence.theory, evidence.observed) == (b[2, 1], a[2, 1])
    assert close(np.full(3, 2.0), 2.0).holds and not close(np.array([2.0, 2.5]), 2.0).holds


@pytest.mark.parametrize("lhs, rhs, match", [
    (np.ones(3), np.ones(4), "one shape"),
    (np.array([1.0, np.nan]), np.ones(2), "lhs must be finite"),
    (np.ones(2), np.array(["a", "b"]), "rhs must be a real number"),
    (np.array([True, False]), np.ones(2), "lhs must be a real number"),
    (np.full(2, 1e308), np.full(2, -1e308), "overflows"),
])
def test_close_on_arrays_refuses_bad_input_by_name(lhs, rhs, match):
    with pytest.raises(EvidenceError, match=match):
        close(lhs, rhs)
