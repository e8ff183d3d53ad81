"""The NNGP kernel by quadrature (attnverify.saddle.nngp_quadrature): the closed forms against the quadrature over
sectors, tanh against the expectation engine, half the circle for an odd or even φ, the kinks that cut the rays, the
kernel's symmetry and progress, and inputs, points and activations it refuses by name."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from activation_cases import HARD_TANH, USER, inputs, spec

from attnverify.saddle import activations, nngp_quadrature
from attnverify.saddle.activations import activation, closed_form_kernel, kernel_derivation
from attnverify.saddle.network import nngp_kernel
from attnverify.saddle.nngp_quadrature import kernel_quadrature

GRID = dict(a=np.array([0.0, 1e-3, 0.2, 1.0, 3.0, 25.0]), b=np.array([0.5, 1.0, 4.0]),
            r=np.array([-1.0, -0.8, -0.3, 0.0, 1e-6, 0.5, 0.99, 1.0]))
"""Variances |x|²/d, |y|²/d and correlations cos θ, the ends included (x = 0, x ∥ ±y)."""


@pytest.mark.parametrize("name", ["relu", "linear", "erf", pytest.param("cube", marks=pytest.mark.thorough)])
def test_closed_forms_equal_the_quadrature_over_sectors(name):
    """The closed form (arc-cosine, x·y/d, arcsine, Gaussian moments of z³) against the float64 quadrature of
    E[φ(u)φ(v)] over sectors, on the grid: within the quadrature's own error estimate plus 4 ulps of the scale, and
    that estimate within 1e-12 of E|φ(u)φ(v)| (measured: agreement ≤ 4e-15 of it)."""
    a, b, r = np.meshgrid(GRID["a"], GRID["b"], GRID["r"], indexing="ij")
    a, b, r = a.ravel(), b.ravel(), r.ravel()
    values, errors, sizes = kernel_quadrature(spec(name), a, b, r)
    closed = closed_form_kernel(spec(name), a, b, r)
    scale = 4 * np.finfo(float).eps * sizes
    assert np.all(np.abs(values - closed) <= errors + scale), np.max(np.abs(values - closed) - errors)
    assert np.all(errors <= 1e-12 * sizes)


@pytest.mark.thorough
def test_the_quadrature_of_tanh_equals_the_expectation_engine():
    """No closed form for tanh: the float64 quadrature against the project's Expectation (nested tanh-sinh in mpmath,
    about 25 s at one point), within the quadrature's error estimate (measured 8e-16 apart)."""
    unit = activation("tanh")
    expectation = kernel_derivation(unit).steps[0].expression.rhs
    a, b, r = 2.99, 1.9, 0.776
    value, error, _ = kernel_quadrature(unit, a, b, r)
    point = {activations.A: sympy.Float(a, 30), activations.B: sympy.Float(b, 30),
             activations.THETA: sympy.acos(sympy.Float(r, 30))}
    exact, exact_error = expectation.estimate_at(point, 53)
    assert abs(float(exact) - value[0]) <= error[0] + float(exact_error)


def test_kernels_by_quadrature_are_symmetric_and_agree_between_their_two_calls():
    """K(X) by its upper triangle, mirrored, against K(X, X) pair by pair, where (x, y) and (y, x) are integrated
    with u and v's roles swapped: the same to 1e-13 (round-off)."""
    X = inputs(P=4)
    K = nngp_kernel(X, activation=HARD_TANH)
    assert np.array_equal(K, K.T)
    np.testing.assert_allclose(K, nngp_kernel(X, X.copy(), activation=HARD_TANH), rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("spec, symmetric", [("tanh", True), ("erf", True), (lambda z: z**3, True),
                                             (lambda z: sympy.tanh(z) + z / 4, True), (lambda z: sympy.Abs(z), True),
                                             (lambda z: sympy.cosh(z / 3), True), ("relu", False),
                                             (USER["softplus"], False), (lambda z: sympy.tanh(z + 1), False)])
def test_half_the_circle_serves_an_odd_or_even_activation_as_the_whole(spec, symmetric):
    """φ odd or even: φ(−u)φ(−v) = φ(u)φ(v), so the integrand has period π in ψ and half the circle, twice weighted, is
    the whole integral. Both on the same grid (|z|'s kink at 0 on a sector's edge): within the whole circle's error
    estimate plus 8 ulps of E|φφ| (measured: ≤ 0.18 of the estimate, 2.7e-15 of E|φφ|). Neither odd nor even: the
    whole circle."""
    unit = activation(spec)
    assert nngp_quadrature._flip_symmetric(unit) is symmetric
    if not symmetric:
        return
    a, b, r = (v.ravel() for v in np.meshgrid(GRID["a"], GRID["b"], GRID["r"], indexing="ij"))
    phi, points = (lambda u: activations._unit_code(unit.expression, False)(u)[0]), nngp_quadrature.kinks(unit)
    with np.errstate(all="ignore"):
        whole, size, _ = nngp_quadrature._sector_sums(phi, points, a, b, r, nngp_quadrature.RULE, False)
        half = nngp_quadrature._sector_sums(phi, points, a, b, r, nngp_quadrature.RULE, True)[0]
    _, errors, _ = kernel_quadrature(unit, a, b, r)
    assert np.all(np.abs(half - whole) <= errors + 8 * np.finfo(float).eps * size)


def test_nested_max_and_min_are_one_piecewise_with_its_kinks():
    """Hard tanh written Max(−1, Min(1, z)): its kinks at ±1 are found (the rays are cut there) and its kernel is the
    Piecewise form's, bit for bit; the clipped ReLU Min(Max(z, 0), 1) has its kink at 1 (0 is every sector's edge)."""
    nested = activation(lambda z: sympy.Max(-1, sympy.Min(1, z)))
    assert nngp_quadrature.kinks(nested) == (-1.0, 1.0)
    assert nngp_quadrature.kinks(activation(lambda z: sympy.Min(sympy.Max(z, 0), 1))) == (1.0,)
    X = 2 * inputs(P=4)
    assert np.array_equal(nngp_kernel(X, activation=nested), nngp_kernel(X, activation=HARD_TANH))


def test_the_quadrature_tells_its_progress_in_pairs():
    """Told at every twentieth of the chunks, the last line naming every pair; a progress that is no function is
    refused by name before any work."""
    lines = []
    nngp_kernel(inputs(P=4), activation="tanh", progress=lines.append)
    assert lines and lines[-1].endswith("10 of 10 pairs")
    with pytest.raises(TypeError, match="^progress must be a function"):
        nngp_kernel(inputs(P=4), activation="tanh", progress="yes")


def test_a_long_quadrature_without_progress_tells_the_runs_display(monkeypatch):
    """Given no progress, a call of PROGRESS_PAIRS pairs or more (lowered here to 10) tells the run's display, and a
    shorter one says nothing."""
    from attnverify.execution import tasks

    shown = []
    monkeypatch.setattr(tasks, "say", shown.append)
    nngp_kernel(inputs(P=4), activation="tanh")  # 10 pairs, below the default 10,000
    assert shown == []
    monkeypatch.setattr(nngp_quadrature, "PROGRESS_PAIRS", 10)
    nngp_kernel(inputs(P=4), activation="tanh")
    assert shown and shown[-1].endswith("10 of 10 pairs")


@pytest.mark.parametrize("activation, scale", [("relu", 1e200), ("tanh", 1e200), (lambda z: z**3, 1e150),
                                               (lambda z: z**3 + sympy.tanh(z), 1e150)])
def test_inputs_whose_kernel_overflows_are_refused_by_name(activation, scale):
    """|x|²/d or the kernel itself beyond float64 (z³'s E[u³v³] ~ |x|⁶ at |x| ~ 10¹⁵⁰, by its closed form or by the
    quadrature): one line naming X, not a matrix of ±inf or a message about an internal argument."""
    X = scale * np.ones((3, 2))
    with pytest.raises(ValueError, match=r"^X is too large"):
        nngp_kernel(X, activation=activation)


@pytest.mark.parametrize("a, b, r, says", [([1.0], [1.0], [2.0], "r must be finite and in [-1, 1], got 2.0"),
                                           ([-1.0], [1.0], [0.5], "a must be finite and in [0, inf), got -1.0"),
                                           ([1.0], [np.nan], [0.5], "b must be finite and in [0, inf), got nan"),
                                           ([1.0, 2.0], [1.0, 2.0, 3.0], [0.5], "must be numbers or arrays of one")])
def test_the_kernel_quadrature_refuses_points_outside_its_domain(a, b, r, says):
    with pytest.raises(ValueError) as refused:
        kernel_quadrature("tanh", a, b, r)
    assert says in str(refused.value)


def test_a_kernel_the_quadrature_cannot_resolve_is_refused_by_name():
    """|z² − 1| bends at ±1 where no affine switch says so (the rays are not cut there), and exp(z² sin² z) grows
    past every Gaussian where sympy finds no limit: the quadrature's error estimate refuses both, by name."""
    X = np.array([[1.0, 0.5], [0.3, -2.0]])
    for unresolved in (lambda z: sympy.Abs(z**2 - 1), lambda z: sympy.exp(z**2 * sympy.sin(z)**2)):
        with pytest.raises(ValueError, match=r"^activation .*: the quadrature of its kernel at x_0, y_1 .* 1e-10"):
            nngp_kernel(X, activation=unresolved)
