"""The derived single-location risk against the authors' closed form, its gradient, its limits."""

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from attnverify.derivations import single_location as sl
from derivations.paper_formula import authors_risk

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
    from derivations.paper_formula import zeta
    from scipy.special import erf

    expected = (eps**2 + gamma**2 * (1 - 2 * erf(lam * np.sqrt(d) / np.sqrt(2 * (1 + 2 * lam**2 * gamma**2)))
                + zeta(lam * np.sqrt(d / 2), lam * gamma)) + (L - 1) * 2 / np.pi * np.arcsin(2 * lam**2 / (1 + 2 * lam**2)))
    assert float(sl.oracle_risk(lam, d, L, gamma, eps)) == pytest.approx(expected, rel=1e-13)


def test_linear_risk_is_proposition_three():
    gamma, L, eps = 0.8, 7, 0.2
    assert float(sl.linear_risk(L, gamma, eps)) == pytest.approx(eps**2 + gamma**2 - gamma**4 / (gamma**2 + L - 1), rel=1e-14)


def test_small_lambda_limit_is_the_null_predictor():
    # the expression is continuous at λ = 0 (ζ(0, 0) = 0), so the limit is the value there
    limit = sl.oracle_risk_derivation().result.rhs.subs(sl.lam, 0)
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
    for derivation in sl.derivations():
        assert len(derivation.steps) >= 3
        assert all(step.description for step in derivation.steps)
