"""The conditional-mean derivations: generated evaluators against sympy, the generic ratio expansion
against exact finite-L sums, and the invariant form against a brute-force component derivation."""

import math

import numpy as np
import pytest
import sympy
from hypothesis import given, settings, strategies as st
from scipy.stats import binom

from attnverify.theories.conditional_mean import derivations as theory


@settings(max_examples=30, deadline=None)
@given(st.floats(0.0, 1.5), st.floats(0.0, 4.0), st.floats(0.0, 4.0), st.floats(0.0, 2.0))
def test_gaussian_evaluator_equals_sympy(s2, b2, t2, n2):
    values = theory.gaussian_error_constants(s2, b2, t2, n2)
    subs = dict(zip(theory.GAUSSIAN_INVARIANTS, (s2, b2, t2, n2)))
    for name, expr in zip(theory.GAUSSIAN_CONSTANT_NAMES, theory.gaussian_constant_expressions()):
        exact = float(expr.evalf(30, subs=subs))
        assert math.isclose(float(values[name]), exact, rel_tol=1e-12, abs_tol=1e-12)


@settings(max_examples=20, deadline=None)
@given(st.floats(-1.5, 1.5), st.floats(0.5, 2.0), st.floats(0.2, 2.0), st.floats(0.3, 3.0), st.floats(0.0, 0.5))
def test_fixed_bandwidth_evaluator_equals_sympy(q, s, h, w, sv):
    values = theory.fixed_bandwidth_constants(q, s, h, w, sv)
    subs = dict(zip(theory.BANDWIDTH_PARAMETERS, (q, s, h, w, sv)))
    for name, expr in theory.fixed_bandwidth_expressions().items():
        exact = float(expr.evalf(30, subs=subs))
        assert math.isclose(float(values[name]), exact, rel_tol=1e-11, abs_tol=1e-12)


def test_the_limit_is_the_note_table():
    """Note §3.2 lists m_h at s = 1, ω = 2, q = 0.7 (computed there independently)."""
    m = theory.fixed_bandwidth_constants(0.7, 1.0, np.array([1.0, 0.5, 0.25]), 2.0, 0.0)["limit"]
    np.testing.assert_allclose(m, [0.23699, 0.60336, 0.86068], atol=5e-6)


def _two_atom_exact(p, w, v, L):
    """Exact E[attn − m∞] and E[(attn − m∞)²] for tokens taking (w₁, v₁) w.p. p, else (w₂, v₂)."""
    n = np.arange(L + 1)
    pmf = binom.pmf(n, L, p)
    attn = (n * w[0] * v[0] + (L - n) * w[1] * v[1]) / (n * w[0] + (L - n) * w[1])
    limit = (p * w[0] * v[0] + (1 - p) * w[1] * v[1]) / (p * w[0] + (1 - p) * w[1])
    return float(pmf @ (attn - limit)), float(pmf @ (attn - limit) ** 2), limit


def test_ratio_expansion_matches_exact_sums_on_two_atoms():
    """The generic expansion (C, D, B, B₂ in the weight moments) against exact binomial sums: the
    remainders L²(L·MSE − C − D/L) and L²(L·bias − B − B₂/L) stay bounded, so they are O(L⁻³)."""
    p, w, v = 0.3, np.array([2.5, 0.7]), np.array([1.0, -0.4])
    _, _, limit = _two_atom_exact(p, w, v, 10)
    prob = np.array([p, 1 - p])
    wn = w / (prob @ w)
    err = v - limit
    moments = {"mu_uu": prob @ (wn**2 * err**2), "mu_uus": prob @ (wn**2 * err**2 * (wn - 1)),
               "mu_ss": prob @ (wn - 1) ** 2, "mu_us": prob @ (wn * err * (wn - 1)), "mu_uss": prob @ (wn * err * (wn - 1) ** 2)}
    symbols, expressions = theory.ratio_constants_in_moments()
    subs = {s: moments[str(s)] for s in symbols}
    C, D, B, B2 = (float(e.evalf(30, subs=subs)) for e in expressions)
    rem_mse, rem_bias = [], []
    for L in (400, 800, 1600, 3200):
        bias, mse, _ = _two_atom_exact(p, w, v, L)
        rem_mse.append(L**2 * (L * mse - C - D / L))
        rem_bias.append(L**2 * (L * bias - B - B2 / L))
    # the remainder times L² converges: successive values change by less than 10% at the end
    assert abs(rem_mse[-1] - rem_mse[-2]) < 0.1 * abs(rem_mse[-1]) + 1e-6
    assert abs(rem_bias[-1] - rem_bias[-2]) < 0.1 * abs(rem_bias[-1]) + 1e-6
    # and a wrong D (10% off) would leave a remainder growing like L
    L = 3200
    _, mse, _ = _two_atom_exact(p, w, v, L)
    assert abs(L**2 * (L * mse - C - 1.1 * D / L)) > 10 * abs(rem_mse[-1])


def test_invariant_form_equals_component_derivation_in_two_dimensions():
    """C, D, B, B₂ from the Gaussian MGF differentiated component by component (d = 2, d_v = 1)
    equal the invariant form e^{s²}(‖β‖² + τ² + ν²) etc. exactly."""
    a = sympy.Matrix(sympy.symbols("a1:3", real=True))
    mu = sympy.Matrix(sympy.symbols("m1:3", real=True))
    S = sympy.Matrix(2, 2, lambda i, j: sympy.Symbol(f"S{min(i, j)}{max(i, j)}", real=True))
    A = sympy.Matrix(1, 2, sympy.symbols("A1:3", real=True))
    b, sig = sympy.Symbol("b", real=True), sympy.Symbol("sig", positive=True)
    t = sympy.Matrix(sympy.symbols("t1:3", real=True))
    k = sympy.Matrix(sympy.symbols("k1:3", real=True))
    mgf = sympy.exp((t.T * mu)[0] + (t.T * S * t)[0] / 2)

    def expect(poly, at):
        out = 0
        for monomial, coefficient in sympy.Poly(sympy.expand(poly), *k).terms():
            term = mgf
            for i, power in enumerate(monomial):
                term = sympy.diff(term, t[i], power) if power else term
            out += coefficient * term
        return out.subs(dict(zip(t, at)))

    ew = expect(sympy.Integer(1), a)
    limit = sympy.simplify(expect((A * k)[0] + b, a) / ew)
    err = (A * k)[0] + b - limit
    raw = {
        "mu_uu": expect(err**2 + sig**2, 2 * a) / ew**2,
        "mu_uus": expect(err**2 + sig**2, 3 * a) / ew**3 - expect(err**2 + sig**2, 2 * a) / ew**2,
        "mu_ss": expect(sympy.Integer(1), 2 * a) / ew**2 - 1,
        "mu_us": expect(err, 2 * a) / ew**2,
        "mu_uss": expect(err, 3 * a) / ew**3 - 2 * expect(err, 2 * a) / ew**2,
    }
    symbols, expressions = theory.ratio_constants_in_moments()
    component = [e.subs({s: raw[str(s)] for s in symbols}) for e in expressions]
    beta = (A * S * a)[0]
    invariants = dict(zip(theory.GAUSSIAN_INVARIANTS, ((a.T * S * a)[0], beta**2, (A * S * A.T)[0], sig**2)))
    closed = [e.subs(invariants) for e in theory.gaussian_constant_expressions()]
    closed[2] *= beta  # B/‖β‖ · β: the bias along the one value direction
    closed[3] *= beta
    point = {s: sympy.Rational(v) for s, v in zip(
        [*a, *mu, S[0, 0], S[0, 1], S[1, 1], *A, b, sig],
        ["3/10", "-1/2", "1/2", "-1/2", "1", "3/10", "1/2", "1", "-2", "1/2", "1/2"])}
    for lhs, rhs in zip(component, closed):
        assert abs(float((lhs - rhs).subs(point).evalf(40))) < 1e-25


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="score_var"):
        theory.gaussian_error_constants(-1.0, 0.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="bandwidth"):
        theory.fixed_bandwidth_constants(0.0, 1.0, 0.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="prior_sd"):
        theory.conjugate_posterior(3, 0.0, -1.0, 1.0)


def test_conjugate_posterior_shrinks_like_sigma_over_root_L():
    _, sd = theory.conjugate_posterior(np.array([1e2, 1e4, 1e6]), 0.0, 1.0, 2.0)
    np.testing.assert_allclose(sd * np.sqrt([1e2, 1e4, 1e6]), 2.0, rtol=2e-2)


# --------------------------------------------------------------------------- the boundary


def test_backend_by_name_and_lists_are_accepted():
    by_name = theory.gaussian_error_constants(0.4, 0.5, 1.2, 0.25, backend="numpy")
    default = theory.gaussian_error_constants(0.4, 0.5, 1.2, 0.25)
    assert all(float(by_name[k]) == float(default[k]) for k in default)
    listed = theory.fixed_bandwidth_constants(0.7, 1.0, [1.0, 0.5, 0.25], 2.0, 0.0, backend="numpy")["limit"]
    np.testing.assert_allclose(listed, [0.23699, 0.60336, 0.86068], atol=5e-6)
    with pytest.raises(ValueError, match="backend"):
        theory.conjugate_posterior(3, 0.0, 1.0, 1.0, backend="numpi")
    with pytest.raises(TypeError, match="backend"):
        theory.conjugate_posterior(3, 0.0, 1.0, 1.0, backend=3)


def test_bad_values_are_named_with_their_range():
    with pytest.raises(ValueError, match=r"xbar must be a finite number in \(-inf, inf\)"):
        theory.conjugate_posterior(3, np.nan, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"length must hold numbers in \[0, inf\), got -1.0"):
        theory.conjugate_posterior([3, -1], 0.0, 1.0, 1.0)
    with pytest.raises(TypeError, match="noise"):
        theory.gaussian_error_constants(0.1, 0.1, 0.1, True)
    with pytest.raises(ValueError, match="must broadcast together, got shapes query \\(2,\\)"):
        theory.fixed_bandwidth_constants([0.1, 0.2], 1.0, [1.0, 0.5, 0.2], 2.0, 0.0)


def test_overflow_is_refused_by_name_never_a_nan():
    """e^{3s²} overflows float64 beyond s² ≈ 236, and h² underflows below h ≈ 1e-154."""
    assert np.isfinite(theory.gaussian_error_constants(200.0, 1.0, 1.0, 1.0)["second_order"])
    with pytest.raises(ValueError, match="gaussian_error_constants overflows float64 at score_var"):
        theory.gaussian_error_constants(300.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="fixed_bandwidth_constants overflows float64 at query, key_sd, bandwidth"):
        theory.fixed_bandwidth_constants(0.7, 1.0, 1e-200, 2.0, 0.1)
    with pytest.raises(ValueError, match="conjugate_posterior overflows float64"):
        theory.conjugate_posterior(3, 0.1, 1e200, 1.0)
