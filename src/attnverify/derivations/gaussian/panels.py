"""One-dimensional Gaussian quadrature in mpmath with an error estimate: Gauss–Legendre panels, each halved until
two rules agree, over an integrand's bulk and features, tanh-sinh on the tails, and nested tanh-sinh for several
variables. The numbers under `.expectation` and `.integrals`. The same composite Gauss–Legendre rule in
float64, for arrays (`composite_rule`: the saddle package's quadratures)."""

from __future__ import annotations

from functools import lru_cache

import mpmath
import numpy as np
from mpmath.calculus.quadrature import GaussLegendre


class QuadratureShort(ArithmeticError):
    """A quadrature that did not reach the digits asked of it within its bounded effort, or whose error estimate
    cannot be trusted (the check is then left undecided, never failed)."""


SCAN = 14.0
"""The standard variable is scanned over [−SCAN, SCAN] for the integrand's bulk (φ(14) ≈ 1e-43 of φ(0))."""

RULES = (4, 5)
"""Degrees of the two Gauss–Legendre rules a panel is integrated with (24 and 48 nodes); they must agree, else the
panel is halved."""

BULK_CUTS = (-12, -4, -1, 0, 1, 4, 12)
"""Cut points around the bulk of the integrand, in its half-widths from its peak."""

FEATURE_CUTS = (-2, 0, 2)
"""Cut points around an erf's transition, in its widths."""

MAX_HALVINGS = 14
"""How often a panel may be halved before the quadrature gives up (NoConvergence)."""


@lru_cache(maxsize=None)
def _float_rule(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    x, w = np.polynomial.legendre.leggauss(nodes)
    x.flags.writeable = w.flags.writeable = False
    return x, w


def composite_rule(breaks: np.ndarray, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre in float64 with ``nodes`` nodes on each panel [breaks[…, i], breaks[…, i+1]] (along the last
    axis): (points, weights), the panels' nodes one after the other."""
    x, w = _float_rule(nodes)
    breaks = np.asarray(breaks, dtype=float)
    low, high = breaks[..., :-1, None], breaks[..., 1:, None]
    shape = breaks.shape[:-1] + (-1,)
    return ((low + high) / 2 + (high - low) / 2 * x).reshape(shape), ((high - low) / 2 * w).reshape(shape)


def gauss_legendre_rule(degree: int, precision: int) -> tuple[tuple, tuple]:
    """Gauss–Legendre nodes and weights on [−1, 1] (3·2^(degree−1) of them, mpmath's Newton iteration) at
    ``precision`` bits, cached."""
    key = (degree, precision)
    if key not in _RULES:
        with mpmath.workprec(precision + 8):
            pairs = GaussLegendre(mpmath.mp).calc_nodes(degree, precision + 8)
        _RULES[key] = (tuple(x for x, _ in pairs), tuple(w for _, w in pairs))
    return _RULES[key]


_RULES: dict = {}


def panels(g, a, b, tolerance) -> tuple[mpmath.mpf, mpmath.mpf]:
    """(∫_a^b g, its error estimate) by Gauss–Legendre on panels, each halved until its two rules agree to
    ``tolerance`` (absolute). The estimate sums, over the panels, the two rules' difference (the error of the
    coarser rule, so it bounds the finer one's generously) or the rounding of the sum where that is larger."""
    rules = [gauss_legendre_rule(n, mpmath.mp.prec) for n in RULES]
    stack, total, error = [(mpmath.mpf(a), mpmath.mpf(b), 0)], mpmath.mpf(0), mpmath.mpf(0)
    while stack:
        lo, hi, depth = stack.pop()
        half, middle = (hi - lo) / 2, (hi + lo) / 2
        values = [[w * g(middle + half * x) for x, w in zip(*rule)] for rule in rules]
        coarse, fine = (half * mpmath.fsum(v) for v in values)
        rounding = abs(half) * mpmath.fsum(abs(v) for v in values[1]) * mpmath.mpf(2) ** (8 - mpmath.mp.prec)
        if abs(fine - coarse) <= max(tolerance, rounding):
            total += fine
            error += max(abs(fine - coarse), rounding)
        elif depth >= MAX_HALVINGS:
            raise mpmath.libmp.NoConvergence(f"a panel of width {mpmath.nstr(hi - lo, 3)} did not converge")
        else:
            stack += [(lo, middle, depth + 1), (middle, hi, depth + 1)]
    return total, error


def panel_tolerance(size) -> mpmath.mpf:
    """The absolute tolerance a panel's two rules must agree to for an integral of about ``size``: 2¹² units of its
    last place at the current precision."""
    return mpmath.mpf(2) ** (12 - mpmath.mp.prec) * mpmath.mpf(size)


def line_integral(g, bulk, features=(), jumps=()) -> tuple[mpmath.mpf, mpmath.mpf]:
    """(∫_ℝ g, its error estimate) for g = f φ: Gauss–Legendre panels over the bulk (centre ± 1, 4, 12 half-widths,
    f's ``features`` and [−SCAN, SCAN]), tanh-sinh on the two tails beyond (with mpmath.quad's own estimate).
    ``jumps``: the points where f or a derivative jumps (mpmath numbers), each an end of its panels or tails, so
    that every rule integrates a smooth function and the two rules' agreement measures its error (a jump between
    a panel's last nodes and its end passes both rules unseen)."""
    centre, width, peak = bulk
    cuts = sorted({*(centre + k * width for k in BULK_CUTS), -SCAN, SCAN, *features})
    cuts = [mpmath.mpf(c) for c in cuts if min(-SCAN, centre - 12 * width) <= c <= max(SCAN, centre + 12 * width)]
    inside = [j for j in jumps if cuts[0] < j < cuts[-1]]
    cuts = sorted({*cuts, *inside})
    # the integral's size is about peak·width (the float64 scan): it sets the absolute tolerance
    tolerance = panel_tolerance(peak * width)
    parts = [panels(g, lo, hi, tolerance) for lo, hi in zip(cuts, cuts[1:])]
    below = sorted(j for j in jumps if j < cuts[0])
    above = sorted(j for j in jumps if j > cuts[-1])
    parts += [mpmath.quad(g, [-mpmath.inf, *below, cuts[0]], error=True),
              mpmath.quad(g, [cuts[-1], *above, mpmath.inf], error=True)]
    return mpmath.fsum(value for value, _ in parts), mpmath.fsum(abs(error) for _, error in parts)



def nested(f, depth: int) -> tuple[mpmath.mpc, mpmath.mpf]:
    """(∫ f(x₁, …, x_depth) φ(x₁)…φ(x_depth) by nested tanh-sinh quadrature over ℝ, its error estimate: the outer
    quadrature's own plus the largest of the inner ones', which the outer integral's probability weight cannot
    enlarge)."""
    density = 1 / mpmath.sqrt(2 * mpmath.pi)
    tolerance = mpmath.mpf(2) ** (16 - mpmath.mp.prec)
    inner_errors = [mpmath.mpf(0)]

    def integrate(prefix):
        def inner(x):
            point = (*prefix, x)
            value = f(*point) if len(point) == depth else integrate(point)
            return value * density * mpmath.exp(-x * x / 2)

        value, error = mpmath.quad(inner, [-mpmath.inf, 0, mpmath.inf], error=True)
        if error > tolerance * max(1, abs(value)):
            raise mpmath.libmp.NoConvergence(f"quadrature error {mpmath.nstr(error, 3)}")
        if prefix:
            inner_errors[0] = max(inner_errors[0], abs(error))
        else:
            inner_errors.append(abs(error))
        return value

    value = mpmath.mpmathify(integrate(()))
    return value, inner_errors[-1] + inner_errors[0] + rounding(value)


def rounding(value) -> mpmath.mpf:
    """The rounding error allowed a number computed at the current precision (exact moments, a closed form after
    a rotation in floating point): 2¹⁶ units of its last place."""
    return mpmath.mpf(2) ** (16 - mpmath.mp.prec) * abs(value)
