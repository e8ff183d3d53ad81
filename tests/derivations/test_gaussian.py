"""The Gaussian expectation engine and ζ against quadrature, including hard corners."""

import pytest
import sympy

from attnverify.derivations import gaussian


@pytest.mark.parametrize(
    "first, second",
    [(1.0, 1 / 32), (4.0, 0.01), (-4.0, 4.0), (0.0, 0.01), (0.3, 2.5)],  # (1, 1/32): erf's turn lies at Z = −32, far outside the bulk
)
def test_every_identity_matches_quadrature(first, second):
    for identity in gaussian.identity_table():
        a, b = identity["parameters"]
        values = {a: first, b: second}
        exact = float(identity["closed_form"].subs(values).evalf(30))
        assert gaussian.gaussian_quadrature(identity["integrand"], values) == pytest.approx(exact, rel=1e-12, abs=1e-14), identity["name"]


def test_engine_refuses_two_different_erf_arguments():
    z = gaussian.Z
    with pytest.raises(ValueError, match="more than one erf argument"):
        gaussian.gaussian_expectation(sympy.erf(z) * sympy.erf(2 * z + 1), z)


def test_engine_gives_gaussian_moments_without_erf():
    z = gaussian.Z
    assert gaussian.gaussian_expectation(z**4 + 3 * z**2 + z, z) == 6


def test_zeta_special_values():
    t, g = sympy.symbols("t g", real=True)
    assert gaussian.ErfSquareMean(0, g) == gaussian.zeta_at_zero(g)
    assert gaussian.ErfSquareMean(sympy.oo, g) == 1
    assert gaussian.ErfSquareMean(-t, g) == gaussian.ErfSquareMean(t, g)


def test_zeta_differentiates_at_composite_arguments():
    """∂ζ/∂t and ∂ζ/∂g at ζ(2x, y) (the oracle risk has ζ(λ√(d/2), λγ), and its rounding magnitude, a sum of
    |∂f/∂u|·M(u), needs them): fdiff differentiates in a slot, never by the expression 2x. Against a central
    difference of the generated evaluator (step 1e-5: error ~1e-10 relative)."""
    from attnverify.derivations.codegen import evaluator

    x, y = sympy.Symbol("x", real=True), sympy.Symbol("y", positive=True)
    zeta = gaussian.ErfSquareMean(2 * x, y)
    for variable in (x, y):
        derivative = evaluator(sympy.diff(zeta, variable), [x, y])
        value = evaluator(zeta, [x, y])
        h, point = 1e-5, {x: 0.3, y: 0.7}
        up, down = dict(point), dict(point)
        up[variable] += h
        down[variable] -= h
        central = (value(*up.values()) - value(*down.values())) / (2 * h)
        assert abs(float(derivative(*point.values())) - float(central)) <= 1e-8 * abs(float(central))


def test_the_rounding_magnitude_of_the_oracle_risk_bounds_its_value():
    import numpy as np

    from attnverify.derivations.codegen import rounding_scale
    from attnverify.theories.single_location import derivations as sl

    expression = sl.oracle_risk_derivation().result("oracle_risk").rhs
    lam, d, L = np.array([0.05, 0.2]), np.array([100.0, 1600.0]), np.array([10.0, 40.0])
    scale = rounding_scale(expression, sl.PARAMETERS)(lam, 0.7, d, L, 0.0)
    value = sl.oracle_risk(lam, d, L, 0.7, 0.0)
    assert np.all(np.isfinite(scale)) and np.all(scale >= np.abs(value))
