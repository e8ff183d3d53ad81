"""Expectations that evaluate themselves (:mod:`attnverify.derivations.gaussian`): Gaussian laws by exact
moments and quadrature, unspecified laws by linearity."""

from __future__ import annotations

import pickle

import mpmath
import pytest
import sympy
from sympy import Rational, Symbol, erf, exp, sqrt

from attnverify.derivations.gaussian import Expectation, by_linearity, gaussian, gaussian_mean

z, w1 = sympy.symbols("z w_1", real=True)
t, m = sympy.symbols("t m", real=True)
s, a, b = sympy.symbols("s a b", positive=True)


def value(expression, point, digits=30):
    return sympy.N(expression.xreplace(point), digits)


def test_a_gaussian_mean_is_its_closed_form_to_25_digits():
    """E[e^{ty}], y ~ N(m, s²), = e^{tm + s²t²/2}; E erf(a + bZ) = erf(a/√(1 + 2b²)); far in the tails too."""
    mgf = Expectation(exp(t * z), gaussian(z, m, s**2))
    for point in ({t: Rational(23, 10), m: Rational(-7, 5), s: Rational(12, 5)},
                  {t: Rational(-1, 3), m: 1, s: Rational(1, 10)}):
        assert value(mgf, point) == pytest.approx(value(exp(t * m + s**2 * t**2 / 2), point), rel=1e-25)
    smoothed = Expectation(erf(a + b * z), gaussian(z))
    point = {a: Rational(3, 2), b: Rational(6)}  # a transition of width 1/6 away from 0
    assert value(smoothed, point) == pytest.approx(value(erf(a / sqrt(1 + 2 * b**2)), point), rel=1e-25)


def test_polynomial_variables_are_averaged_exactly():
    assert gaussian_mean(z**4 + 3 * z * w1**2, [z, w1]) == 3
    mixed = Expectation((erf(a * z) + w1) ** 2, gaussian(z), gaussian(w1))
    point = {a: Rational(7, 5)}
    expected = sympy.N(1 + 2 / sympy.pi * sympy.asin(2 * a**2 / (1 + 2 * a**2)), 30).xreplace(point)
    assert value(mixed, point) == pytest.approx(sympy.N(expected.xreplace(point), 30), rel=1e-25)


def test_a_narrow_or_shifted_bulk_is_resolved():
    """The integrand's bulk far from 0 or much narrower than the Gaussian: found by the scan, panels put there."""
    narrow = exp(-3 * (Rational(7, 10) - Rational(5, 2) * z) ** 2 / (2 * Rational(1, 10) ** 2))
    with mpmath.workdps(45):
        f = sympy.lambdify(z, narrow, "mpmath")
        reference = mpmath.quad(lambda x: f(x) * mpmath.npdf(x), mpmath.linspace(-3, 3, 61))
    with mpmath.workdps(30):
        assert abs(gaussian_mean(narrow, [z]) - reference) < 1e-26 * abs(reference)
    assert value(Expectation(exp(6 * z), gaussian(z)), {}) == pytest.approx(float(sympy.exp(18)), rel=1e-14)


def test_variables_are_bound():
    e = Expectation(exp(t * z), gaussian(z, m, s**2))
    assert e.free_symbols == {t, m, s}
    assert e.xreplace({z: 5, t: 2}) == Expectation(exp(2 * z), gaussian(z, m, s**2))
    assert pickle.loads(pickle.dumps(e)) == e
    assert r"\mathbb{E}_{z \sim \mathcal{N}" in sympy.latex(e)


def test_an_expectation_refuses_what_it_cannot_mean():
    with pytest.raises(ValueError, match="at least one"):
        Expectation(z)
    with pytest.raises(ValueError, match="all Gaussian"):
        Expectation(z * w1, gaussian(z), w1)
    with pytest.raises(TypeError, match="Symbol or gaussian"):
        Expectation(z, 3)
    with pytest.raises(ValueError, match="once"):
        Expectation(z, gaussian(z), gaussian(z))


def test_a_law_with_a_negative_or_complex_variance_is_refused_and_undefined_where_negative():
    """N(0, −1) would turn z into i·x and make E[z²] = −1 "hold": a variance known to be negative or non-real, or a
    non-real mean, is refused by name, by gaussian() and as a tuple; a variance negative at some values of its
    parameters only (1 − s) leaves the expectation undefined there (no value), defined elsewhere."""
    for law in (lambda: gaussian(z, 0, -1), lambda: gaussian(z, 0, -s), lambda: gaussian(z, 0, sympy.I),
                lambda: Expectation(z**2, (z, 0, -1))):
        with pytest.raises(ValueError, match="^the variance of z must be real and ≥ 0, got"):
            law()
    with pytest.raises(ValueError, match="^the mean of z must be real, got I"):
        gaussian(z, sympy.I, 1)
    assert gaussian(z, 0, 0) == sympy.Tuple(z, 0, 0)  # a point mass is a law
    partly = Expectation(z**2 + z**4, gaussian(z, 0, 1 - s))
    assert partly.value_at({s: Rational(1, 2)}, 100) == pytest.approx(Rational(1, 2) + 3 * Rational(1, 4), rel=1e-25)
    assert partly.value_at({s: 2}, 100) is None


def test_unspecified_laws_are_expanded_by_linearity():
    """E[w(v − E[wv]/E[w])] = E[wv] − E[wv]E[w]/E[w] = 0: inner expectations are constants."""
    w, v, c = sympy.symbols("w v c", real=True)
    mean_w, mean_wv = Expectation(w, w), Expectation(w * v, w, v)
    assert sympy.simplify(by_linearity(Expectation(w * (v - mean_wv / mean_w), w, v))) == 0
    assert by_linearity(Expectation(c * w**2 + 3, w)) == c * Expectation(w**2, w) + 3
    assert Expectation(w * v, w, v).free_symbols == set()
    assert Symbol("x") not in by_linearity(Expectation(w, w)).free_symbols


def test_the_arcsine_kernel_reaches_30_digits_in_seconds_with_an_honest_error_estimate():
    """E[erf(aZ) erf(bZ)] = (2/π) asin(2ab/√((1 + 2a²)(1 + 2b²))) (Williams 1997): at the checker's precision the
    value is right to 30 digits, within its own error estimate, which also leaves 30 digits."""
    import time

    mean = Expectation(erf(a * z) * erf(t * z), gaussian(z))
    exact = 2 / sympy.pi * sympy.asin(2 * a * t / sqrt((1 + 2 * a**2) * (1 + 2 * t**2)))
    for point in ({a: Rational(7, 10), t: Rational(13, 10)}, {a: Rational(3, 2), t: Rational(-1, 3)},
                  {a: Rational(5), t: Rational(2)}):
        start = time.process_time()
        value, error = mean.estimate_at(point, 111)
        assert time.process_time() - start < 3
        truth = sympy.N(exact.xreplace(point), 60)
        assert abs(value - truth) <= error <= 1e-30 * abs(truth)


def test_an_integral_whose_bounds_are_exact_numbers_is_evaluated():
    """Bounds such as θ − π/2 at a drawn θ are exact numbers, not floats: ∫_{θ−π/2}^{π/2} cos φ cos(φ − θ) dφ =
    ((π − θ) cos θ + sin θ)/2 (the arc-cosine kernel's angular integral) to 30 digits, with its error estimate."""
    from attnverify.derivations.gaussian import integral_estimate

    phi, theta = Symbol("phi", real=True), Rational(123531, 100000)
    integral = sympy.Integral(sympy.cos(phi) * sympy.cos(phi - theta), (phi, theta - sympy.pi / 2, sympy.pi / 2))
    value, error = integral_estimate(integral, 108)
    exact = ((sympy.pi - theta) * sympy.cos(theta) + sympy.sin(theta)) / 2
    with mpmath.workprec(120):
        assert abs(value - mpmath.mpf(sympy.Float(sympy.N(exact, 40), 40))) <= 1e-30 and error <= 1e-30


def test_a_jump_is_cut_at_so_that_the_error_estimate_holds():
    """E[H(c − sU)] = Φ(c/s): panels that miss the step gave a value wrong in the 4th digit with an estimate of
    1e-27; cut at the step, value and estimate are right to 25 digits. Abs and Max bend: cut there too."""
    u = sympy.Symbol("u", real=True)
    c = sympy.Symbol("c", real=True)
    prec = 120
    for point in ({c: Rational("-1.853244"), s: Rational("1.867245")}, {c: Rational(1, 3), s: Rational(1, 7)},
                  {c: 40, s: 2}):
        estimate, error = Expectation(sympy.Heaviside(c - s * u), gaussian(u)).estimate_at(point, prec)
        exact = value((1 + erf(c / (s * sqrt(2)))) / 2, point, 40)
        assert abs(estimate - exact) <= error + sympy.Float(1e-30) and error < 1e-25
    kinked = Expectation(sympy.Abs(z - c) + sympy.Max(z, 2 * z + c), gaussian(z))
    point = {c: Rational(-13, 10)}
    phi, Phi = sympy.exp(-c**2 / 2) / sqrt(2 * sympy.pi), (1 + erf(c / sqrt(2))) / 2
    # E|Z − c| = 2φ(c) + c(2Φ(c) − 1); max(z, 2z + c) = z + max(0, z + c), E max(0, Z + c) = φ(c) + cΦ(c)
    exact = value(2 * phi + c * (2 * Phi - 1) + phi + c * Phi, point, 40)
    estimate, error = kinked.estimate_at(point, prec)
    assert abs(estimate - exact) <= error + sympy.Float(1e-30) and error < 1e-25


def test_a_piecewise_integrand_is_cut_at_its_condition():
    """E[Piecewise((Z − c, Z > c), (0, True))] = φ(c) − c(1 − Φ(c)): the ReLU of a shifted normal, its pair with
    no variable (the otherwise branch) kept as it is."""
    c = sympy.Symbol("c", real=True)
    point = {c: Rational(1, 2)}
    relu = Expectation(sympy.Piecewise((z - c, z > c), (0, True)), gaussian(z))
    estimate, error = relu.estimate_at(point, 120)
    exact = value(sympy.exp(-c**2 / 2) / sqrt(2 * sympy.pi) - c * (1 - erf(c / sqrt(2))) / 2, point, 40)
    assert abs(estimate - exact) <= error + 1e-30 and error < 1e-25


def test_a_jump_in_two_variables_is_rotated_to_one():
    """E[H(√2(aZ + b) − W)] = Φ(√2 b/√(1 + 2a²)) over two variables: rotated to one, then cut at the step."""
    point = {a: Rational(6, 5), b: Rational(13, 10)}
    jump = Expectation(sympy.Heaviside(sqrt(2) * (a * z - b) - w1), gaussian(z), gaussian(w1))
    estimate, error = jump.estimate_at(point, 120)
    assert abs(estimate - value((1 - erf(b / sqrt(1 + 2 * a**2))) / 2, point, 40)) <= error + 1e-30


def test_a_jump_that_cannot_be_placed_leaves_the_value_unknown():
    """A step at z² = c (not affine) or a floor: no error estimate would hold, so no value is given."""
    from attnverify.derivations.gaussian import QuadratureShort

    c = sympy.Symbol("c", positive=True)
    for integrand in (sympy.Heaviside(z**2 - c), sympy.floor(3 * z)):
        expectation = Expectation(integrand, gaussian(z))
        with pytest.raises(QuadratureShort, match="cannot cut"):
            expectation.estimate_at({c: 2}, 120)
        assert expectation.value_at({c: 2}, 120) is None


def arc_cosine(angle):
    """E[relu(X) relu(cos t X + sin t Y)] over independent standard normals X, Y, 0 ≤ t ≤ π: the arc-cosine kernel
    of degree 1 (Cho & Saul 2009) between unit vectors at the angle t."""
    return (sympy.sin(angle) + (sympy.pi - angle) * sympy.cos(angle)) / (2 * sympy.pi)


def test_kinks_on_lines_through_the_origin_are_integrated_by_sectors():
    """Every kink of relu(X) relu(cos t X + sin t Y) lies on a line through the origin: cut into sectors at those
    angles, each sector's radial integral exact and its angular one by panels, the value is the arc-cosine kernel to
    30 digits, within its own error estimate, for t on either side of π/2 (t < 0 is the kernel at |t|); as a
    dx dy integral with its Gaussian weight too."""
    from attnverify.derivations.gaussian import integral_estimate

    x, y = sympy.symbols("x y", real=True)
    relus = sympy.Max(0, x) * sympy.Max(0, sympy.cos(t) * x + sympy.sin(t) * y)
    mean = Expectation(relus, gaussian(x), gaussian(y))
    for angle in (Rational(7, 10), Rational(5, 2), Rational(-2, 3)):
        estimate, error = mean.estimate_at({t: angle}, 111)
        truth = sympy.N(arc_cosine(abs(angle)), 40)
        assert abs(estimate - truth) <= error <= 1e-30 * truth
    angle = Rational(123531, 100000)
    integral = sympy.Integral(relus.xreplace({t: angle}) * exp(-(x**2 + y**2) / 2) / (2 * sympy.pi),
                              (x, -sympy.oo, sympy.oo), (y, -sympy.oo, sympy.oo))
    value, error = integral_estimate(integral, 111)
    with mpmath.workprec(140):
        truth = mpmath.mpf(sympy.Float(sympy.N(arc_cosine(angle), 40), 40))
        assert abs(value - truth) <= error <= 1e-30 * truth


def test_a_sector_term_that_is_not_homogeneous_gets_its_radial_integral_by_panels():
    """relu(X) e^{X/3} relu(Y) is not ρᵏ A(φ) in a sector: its radial integral is taken by panels; E = e^{a²/2}(aΦ(a)
    + φ(a)) φ(0) at a = 1/3, to 30 digits within the error estimate. A kink off the origin (relu(X − 1)) still
    leaves the value unknown."""
    from attnverify.derivations.gaussian import QuadratureShort

    x, y = sympy.symbols("x y", real=True)
    third = Rational(1, 3)
    estimate, error = Expectation(sympy.Max(0, x) * exp(x / 3) * sympy.Max(0, y), gaussian(x),
                                  gaussian(y)).estimate_at({}, 111)
    density = sympy.exp(-third**2 / 2) / sqrt(2 * sympy.pi)
    truth = sympy.N(exp(third**2 / 2) * (third * (1 + erf(third / sqrt(2))) / 2 + density) / sqrt(2 * sympy.pi), 40)
    assert abs(estimate - truth) <= error <= 1e-30 * truth
    with pytest.raises(QuadratureShort, match="cannot cut"):
        Expectation(sympy.Max(0, x - 1) * sympy.Max(0, y), gaussian(x), gaussian(y)).estimate_at({}, 111)


def test_a_switch_that_is_no_relation_is_not_integrated_by_sectors():
    """Piecewise((1, y ∈ [0, 1]), (0, True)) switches where no relation's sides vanish: the sectors cannot
    separate its branches, so they are not used (the value is not 0.5 with a tight error estimate)."""
    from sympy import Contains, Heaviside, Interval, Piecewise

    from attnverify.derivations.gaussian.polar import sector_estimate

    x, y = sympy.symbols("x y", real=True)
    with mpmath.workprec(120):
        assert sector_estimate(Heaviside(x) * Piecewise((1, Contains(y, Interval(0, 1))), (0, True)), [x, y]) is None
        value, error = sector_estimate(Heaviside(x) * Piecewise((1, y > 0), (0, True)), [x, y])
    assert abs(value - mpmath.mpf(1) / 4) <= error <= 1e-30
