"""The derived single-location risk against the authors' closed form, its gradient, its limits."""

import math

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from attnverify.theories.single_location import derivations as sl
from theories.single_location.paper_formula import authors_risk

overlap = st.floats(-0.95, 0.95)
point = st.fixed_dictionaries(
    {
        "overlaps": st.tuples(overlap, overlap, overlap, overlap, overlap),
        "lam": st.floats(0.02, 3.0),
        "gamma": st.floats(0.2, 2.0),
        "d": st.integers(4, 2000),
        "L": st.integers(1, 60),
        "eps": st.floats(0.0, 1.0),
    }
)


def _kw(p):
    return {k: p[k] for k in ("lam", "gamma", "d", "L", "eps")}


@settings(max_examples=60)
@given(p=point)
def test_derived_risk_equals_the_authors_closed_form(p):
    derived = float(sl.population_risk_from_overlaps(*p["overlaps"], **_kw(p)))
    paper = authors_risk(*p["overlaps"], p["lam"], p["gamma"], p["d"], p["L"], p["eps"])
    # both float64 sums of O(d) terms; Owen's T vs quadrature for ζ: 1e-12 of the largest scale
    assert derived == pytest.approx(paper, rel=1e-11, abs=1e-11 * p["d"])


@settings(max_examples=30)
@given(p=point)
def test_gradient_equals_central_finite_differences(p):
    o = np.array(p["overlaps"])
    grad = np.array(sl.risk_gradient_from_overlaps(*o, **_kw(p)), dtype=float)
    h = 1e-6
    for i in range(5):
        up, down = o.copy(), o.copy()
        up[i] += h
        down[i] -= h
        fd = (sl.population_risk_from_overlaps(*up, **_kw(p)) - sl.population_risk_from_overlaps(*down, **_kw(p))) / (2 * h)
        scale = abs(float(sl.population_risk_from_overlaps(*o, **_kw(p)))) + 1.0
        # central differences: O(h²)·|ℛ'''| truncation plus 1e-16·scale/h round-off
        assert float(fd) == pytest.approx(grad[i], rel=1e-5, abs=1e-8 * scale / h * 1e-2 + 1e-6)


def test_on_the_manifold_the_off_manifold_partials_vanish_symbolically():
    on_manifold = {sl.theta: 0, sl.eta: 0, sl.rho: 0}
    grads = sl.risk_gradient_expressions()
    for partial in grads[2:]:
        assert sympy.simplify(partial.subs(on_manifold)) == 0


def test_oracle_risk_matches_the_theorem_one_form():
    lam, d, L, gamma, eps = 0.3, 50, 5, np.sqrt(0.5), 0.1
    from theories.single_location.paper_formula import zeta
    from scipy.special import erf

    expected = (eps**2 + gamma**2 * (1 - 2 * erf(lam * np.sqrt(d) / np.sqrt(2 * (1 + 2 * lam**2 * gamma**2)))
                + zeta(lam * np.sqrt(d / 2), lam * gamma)) + (L - 1) * 2 / np.pi * np.arcsin(2 * lam**2 / (1 + 2 * lam**2)))
    assert float(sl.oracle_risk(lam, d, L, gamma, eps)) == pytest.approx(expected, rel=1e-13)


def test_linear_risk_is_proposition_three():
    gamma, L, eps = 0.8, 7, 0.2
    assert float(sl.linear_risk(L, gamma, eps)) == pytest.approx(eps**2 + gamma**2 - gamma**4 / (gamma**2 + L - 1), rel=1e-14)


def test_small_lambda_limit_is_the_null_predictor():
    # the expression is continuous at λ = 0 (ζ(0, 0) = 0), so the limit is the value there
    limit = sl.oracle_risk_derivation().result("oracle_risk").rhs.subs(sl.lam, 0)
    assert sympy.simplify(limit - (sl.gamma**2 + sl.eps**2)) == 0


def test_population_risk_from_vectors_uses_the_overlaps():
    rng = np.random.default_rng(3)
    basis, _ = np.linalg.qr(rng.normal(size=(9, 4)))
    k_star, v_star = basis[:, 0], basis[:, 1]
    k = rng.normal(size=9); k /= np.linalg.norm(k)
    v = rng.normal(size=9); v /= np.linalg.norm(v)
    direct = sl.population_risk(k, v, k_star, v_star, 0.4, 0.7, 9, 3, 0.1)
    via = sl.population_risk_from_overlaps(k @ k_star, v @ v_star, v @ k_star, k @ v_star, k @ v, lam=0.4, gamma=0.7, d=9, L=3, eps=0.1)
    assert float(direct) == float(via)


@pytest.mark.parametrize(
    "kwargs, name",
    [({"lam": 0.0}, "lam"), ({"gamma": -1.0}, "gamma"), ({"d": 0.5}, "d"), ({"L": 0}, "L"), ({"eps": -0.1}, "eps"), ({"lam": float("nan")}, "lam")],
)
def test_bad_parameters_name_themselves(kwargs, name):
    base = {"lam": 0.1, "gamma": 0.7, "d": 10, "L": 3, "eps": 0.1}
    with pytest.raises(ValueError, match=name):
        sl.population_risk_from_overlaps(0.1, 0.1, 0.1, 0.1, 0.1, **{**base, **kwargs})


def test_overlaps_out_of_range_are_refused():
    with pytest.raises(ValueError, match="rho"):
        sl.population_risk_from_overlaps(0.1, 0.1, 0.1, 0.1, 1.5, lam=0.1, gamma=0.7, d=10, L=3, eps=0.1)


def test_non_unit_vectors_are_refused():
    k = np.array([2.0, 0, 0, 0])
    e = np.eye(4)
    with pytest.raises(ValueError, match="unit vector"):
        sl.population_risk(k, e[1], e[0], e[1], 0.1, 0.7, 4, 2, 0.1)


def test_every_derivation_records_its_steps():
    from attnverify.theories.single_location.theory import theory

    for derivation in theory.derivation_list():
        assert len(derivation.steps) >= 3
        assert all(step.description for step in derivation.steps)


# --------------------------------------------------------------------------- the boundary


def _orthonormal_pair(d, seed=3):
    basis, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, 4)))
    rng = np.random.default_rng(seed + 1)
    k = rng.normal(size=d)
    v = rng.normal(size=d)
    return k / np.linalg.norm(k), v / np.linalg.norm(v), basis[:, 0], basis[:, 1]


def test_population_risk_refuses_a_d_that_disagrees_with_the_vectors():
    k, v, k_star, v_star = _orthonormal_pair(8)
    assert np.isfinite(float(sl.population_risk(k, v, k_star, v_star, 0.4, 0.7, 8, 3, 0.1)))
    with pytest.raises(ValueError, match=r"^d must equal the vectors' length 8"):
        sl.population_risk(k, v, k_star, v_star, 0.4, 0.7, 100, 3, 0.1)


@pytest.mark.parametrize("k_star_shape", [(7,), (2, 8)])
def test_population_risk_names_k_star_when_its_shape_is_wrong(k_star_shape):
    k, v, _, v_star = _orthonormal_pair(8)
    k_star = np.zeros(k_star_shape)
    k_star[..., 0] = 1.0
    with pytest.raises(ValueError, match="k_star"):
        sl.population_risk(k, v, k_star, v_star, 0.4, 0.7, 8, 3, 0.1)
    with pytest.raises(ValueError, match="k_star"):
        sl.overlaps(k, v, np.ones(7) / np.sqrt(7), v_star)


@pytest.mark.parametrize("call, name", [
    (lambda: sl.oracle_risk(0.5, 8, 2.5, 0.7, 0.1), "L"),
    (lambda: sl.oracle_risk(0.5, 8.5, 4, 0.7, 0.1), "d"),
    (lambda: sl.linear_risk(2.5, 0.7, 0.1), "L"),
    (lambda: sl.linear_risk(np.array([1.0, 2.5]), 0.7, 0.1), "L"),
    (lambda: sl.population_risk_from_overlaps(0.1, 0.1, 0.1, 0.1, 0.1, lam=0.1, gamma=0.7, d=10.5, L=3, eps=0.1), "d"),
])
def test_non_integer_lengths_are_refused(call, name):
    with pytest.raises(ValueError, match=f"^{name} must"):
        call()


@pytest.mark.parametrize("call, name", [
    (lambda: sl.oracle_risk(True, 8, 4, 0.7, 0.1), "lam"),
    (lambda: sl.oracle_risk(0.5, 8, True, 0.7, 0.1), "L"),
    (lambda: sl.linear_risk(4, True, 0.1), "gamma"),
    (lambda: sl.population_risk_from_overlaps(0.1, 0.1, 0.1, 0.1, 0.1, lam=True, gamma=0.7, d=10, L=3, eps=0.1), "lam"),
    (lambda: sl.oracle_excess_risk_high_precision(True, 8, 4, 0.7), "lam"),
    (lambda: sl.oracle_risk(np.array([True, False]), 8, 4, 0.7, 0.1), "lam"),
])
def test_booleans_are_not_numbers(call, name):
    with pytest.raises(TypeError, match=f"^{name} must"):
        call()


def test_backend_may_be_named():
    assert float(sl.oracle_risk(0.5, 8, 4, 0.7, 0.1, backend="numpy")) == float(sl.oracle_risk(0.5, 8, 4, 0.7, 0.1))
    with pytest.raises(ValueError, match="backend"):
        sl.linear_risk(4, 0.7, 0.1, backend="numpi")


@pytest.mark.parametrize("dps", [0, -5, 19, 151, 30.5, "50"])
def test_high_precision_refuses_a_dps_outside_its_range(dps):
    with pytest.raises((ValueError, TypeError), match=r"^dps must be an integer in \[20, 150\]"):
        sl.oracle_excess_risk_high_precision(1.0, 8, 4, 0.7, dps=dps)


def test_high_precision_refuses_too_few_digits_for_the_cancellation():
    # λ²d = 1000: the bracket cancels ~434 digits, beyond MAX_DPS
    with pytest.raises(ValueError, match=r"^dps=100 is too few digits at lam=1, d=1000.*needs dps ≥ 454"):
        sl.oracle_excess_risk_high_precision(1.0, 1000, 4, 0.7, dps=100)


def test_high_precision_default_equals_mpmath_of_the_derived_expression():
    # the erfc form (float64, no cancellation) against the derived Theorem-1 expression at 150 digits;
    # 1e-12: the quadrature's relative tolerance is 1e-13, float64 inputs add ~|log value|·1e-16
    for lam, d, L, gamma in [(1.0, 8, 4, 0.7), (1.3, 100, 1, 0.7), (1.0, 250, 1, 0.7), (0.5, 500, 1, 0.7),
                             (0.8, 120, 3, 1.4), (2.0, 40, 1, 0.3), (0.05, 50, 1, 0.7)]:
        fast = sl.oracle_excess_risk_high_precision(lam, d, L, gamma)
        digits = sl.oracle_excess_risk_high_precision(lam, d, L, gamma, dps=150)
        assert fast == pytest.approx(digits, rel=1e-12), (lam, d, L, gamma)


def test_erfc_square_mean_is_the_cancelling_bracket_evaluated_in_mpmath():
    # E erfc(a + bZ)² = 1 − 2erf(a/√(1+2b²)) + ζ(a, b), the left side evaluated with enough digits
    import mpmath

    from attnverify.derivations.gaussian import zeta_mpmath
    from attnverify.theories.single_location.tail_derivations import log_erfc_square_mean

    for a in (0.0, 1e-3, 0.5, 2.0, 4.0, 6.0):
        for b in (0.0, 1e-3, 0.3, 1.0, 3.0, 30.0, 1000.0):
            with mpmath.workdps(int(30 + 0.9 * a * a)):
                A, Bm = mpmath.mpf(a), mpmath.mpf(b)
                bracket = 1 - 2 * mpmath.erf(A / mpmath.sqrt(1 + 2 * Bm**2)) + zeta_mpmath(A, Bm)
                expected = float(mpmath.log(bracket))
            assert np.exp(log_erfc_square_mean(a, b) - expected) == pytest.approx(1.0, abs=1e-12), (a, b)


@pytest.mark.parametrize("lam, d", [(1.0, 10**5), (1.0, 10**7), (5.0, 10**9)])
def test_high_precision_answers_at_once_where_mpmath_needed_thousands_of_digits(lam, d):
    # the bracket is below e^-30000: the excess is the noise tokens' (L − 1)ζ(0, λ) to float64 precision
    gamma = 0.7
    zeta0 = 2 / np.pi * np.arcsin(2 * lam**2 / (1 + 2 * lam**2))
    assert sl.oracle_excess_risk_high_precision(lam, d, 4, gamma) == pytest.approx(3 * zeta0, rel=1e-14)
    with pytest.raises(ValueError, match=r"excess risk at lam=.* is about 1e-\d+, below the float64 range .*its "
                                         r"natural log is oracle_log_excess_risk\(\.\.\.\) = -\d"):
        sl.oracle_excess_risk_high_precision(lam, d, 1, gamma)
    # its log is finite there; where the excess is a float64, the log is its log
    assert np.isfinite(sl.oracle_log_excess_risk(lam, d, 1, gamma))
    assert math.exp(sl.oracle_log_excess_risk(lam, d, 4, gamma)) == pytest.approx(3 * zeta0, rel=1e-14)


def test_oracle_risk_at_huge_lambda_is_its_limit():
    # λ → ∞: erf(λx)² → 1, so ℛ → ε² + 2γ²erfc(√d/(2γ)) + (L − 1); no NaN from 2λ² overflowing
    lam, d, L, gamma, eps = 1e200, 8, 4, 0.7, 0.1
    limit = eps**2 + 2 * gamma**2 * math.erfc(math.sqrt(d) / (2 * gamma)) + L - 1
    assert float(sl.oracle_risk(lam, d, L, gamma, eps)) == pytest.approx(limit, rel=1e-14)
    assert float(sl.oracle_risk(np.array([1e30, 1e200, 1e300]), d, L, gamma, eps)[2]) == pytest.approx(limit, rel=1e-14)
    overlaps = (0.3, -0.2, 0.5, -0.4, 0.1)
    far = sl.population_risk_from_overlaps(*overlaps, lam=1e300, gamma=gamma, d=d, L=L, eps=eps)
    near = sl.population_risk_from_overlaps(*overlaps, lam=1e25, gamma=gamma, d=d, L=L, eps=eps)
    assert np.isfinite(float(far)) and float(far) == pytest.approx(float(near), rel=1e-14)
    assert np.all(np.isfinite(sl.risk_gradient_from_overlaps(*overlaps, lam=1e300, gamma=gamma, d=d, L=L, eps=eps)))


def test_linear_risk_for_one_token_and_small_gamma_is_the_noise():
    # L = 1: the best linear predictor is exact up to ε²; γ² + L − 1 must not lose γ²
    for gamma in (1e-30, 1e-9, 1e-5, 0.7):
        assert float(sl.linear_risk(1, gamma, 0.1)) == pytest.approx(0.01, rel=1e-12)


@pytest.mark.parametrize("kwargs, name", [({"gamma": 1e-40}, "gamma"), ({"gamma": 1e40}, "gamma"),
                                          ({"eps": 1e40}, "eps"), ({"d": 10**16}, "d")])
def test_parameters_outside_the_float64_ranges_are_refused_with_the_range(kwargs, name):
    base = {"lam": 0.1, "gamma": 0.7, "d": 10, "L": 3, "eps": 0.1}
    with pytest.raises(ValueError, match=rf"^{name} must .*in \["):
        sl.oracle_risk(**{**base, **kwargs})
