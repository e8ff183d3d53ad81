"""The Gaussian expectation engine and ζ against quadrature, including hard corners."""

import pytest
import sympy

from attnverify.derivations import gaussian


@pytest.mark.parametrize(
    "first, second",
    [(1.0, 1 / 32), (4.0, 0.01), (-4.0, 4.0), (0.0, 0.01), (0.3, 2.5)],  # (1, 1/32) once broke the quadrature split
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
