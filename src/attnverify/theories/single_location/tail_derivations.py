"""Float64 forms without cancellation, for the tails where the closed forms lose every digit: log E[erfc(a + bZ)²]
by Laplace-centred quadrature and log ζ(0, g) written so that nothing overflows (Marion et al. 2025, Theorem 1's
informative-token bracket; docs/papers/single_location.md §2.2)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.special
from scipy.integrate import IntegrationWarning, quad
from scipy.optimize import brentq

from ...base.arguments import nonnegative


_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
#: The integral of e^{f} stops where f has fallen this far below its peak: by concavity the part
#: left out is below e^{-100}/(1 − e^{-100}) of the part kept.
_LOG_DROP = 100.0
#: Beyond |z*| = 1e6 (so a/√s > 5e5 and log E erfc² < −5e11) the peak is placed by its leading
#: Laplace term C − ½log s + 2 log erfcx(a/s), within O(1) of the log: far outside float64 anyway.
_FAR_CENTRE = 1e6


def _breakpoints(centre: float, scale: float, left: float, right: float) -> list[float]:
    """centre ± scale·2^k inside (left, right): quad's panels follow a feature of width ``scale``."""
    found = [centre] if left < centre < right else []
    for sign in (-1.0, 1.0):
        step = scale
        while step < right - left:
            z = centre + sign * step
            if left < z < right:
                found.append(z)
            step *= 2.0
    return found


def log_erfc_square_mean(a: float, b: float) -> float:
    """log E_Z[erfc(a + bZ)²] for a, b ≥ 0, Z ~ N(0, 1), in float64 (about 1e-13 relative to the mean).

    The informative-token bracket of Theorem 1 (spec §2.2) is 1 − 2erf(a/√(1+2b²)) + ζ(a, b) =
    E[erfc(a + bZ)²] (expand erf = 1 − erfc and use E erfc(a + bZ) = erfc(a/√(1+2b²))); the left side
    cancels below 1e-16 once a ≳ 4, the right side is a positive integral without cancellation.
    With x = a + bz, s = 1 + 4b² and z* = −4ab/s, its log-integrand is C + g(z), C = −2a²/s, where
    g = −½s(z − z*)² + 2 log erfcx(x) − log√(2π) for x ≥ 0 (erfc = e^{−x²}erfcx) and
    g = −½z² − C + 2 log erfc(x) − log√(2π) for x < 0, so no large number is exponentiated. g is
    concave with g'' ≤ −1: the integral is taken around its peak (a root of g'), over the interval
    where g stays within 100 of the peak (the rest is below e^{−100} of it), by adaptive quadrature
    with panels following the widths 1/√s of the peak and 1/b of erfc's turn at x = 0. Checked
    against the mpmath evaluation of the left side to 1e-13 (tests/theories/single_location/test_derivations.py).
    """
    a, b = nonnegative("a", a), nonnegative("b", b)
    s = 1.0 + 4.0 * b * b
    centre = -4.0 * a * b / s
    C = -2.0 * a * a / s
    if abs(centre) > _FAR_CENTRE:  # the peak's position swamps its width in float64; here C < −5e11
        return C - 0.5 * math.log(s) + 2.0 * math.log(scipy.special.erfcx(a / s))

    def g(z: float) -> float:
        x = a + b * z
        if x >= 0.0:
            return -0.5 * s * (z - centre) ** 2 + 2.0 * math.log(scipy.special.erfcx(x)) - _LOG_SQRT_2PI
        return -0.5 * z * z - C + 2.0 * math.log(scipy.special.erfc(x)) - _LOG_SQRT_2PI

    def slope(z: float) -> float:  # g'(z) = −z − 4b/(√π·erfcx(x)); erfcx = ∞ (erfc ≈ 2) gives −z
        return -z - 4.0 * b / (math.sqrt(math.pi) * scipy.special.erfcx(a + b * z))

    start = slope(0.0)  # ≤ 0, and g' ≥ start − z (g'' ≤ −1), so the root lies in [start, 0]
    peak = 0.0 if start == 0.0 else brentq(slope, start, 0.0, xtol=1e-300, rtol=4 * np.finfo(float).eps,
                                           maxiter=2000)
    top = g(peak)

    def edge(direction: float) -> float:  # g = top − _LOG_DROP, within √(2·_LOG_DROP) of the peak
        far = peak + direction * math.sqrt(2.0 * _LOG_DROP) * 1.01
        if g(far) - top + _LOG_DROP >= 0.0:  # only round-off keeps it above
            return far
        return brentq(lambda z: g(z) - top + _LOG_DROP, peak, far, xtol=1e-300, rtol=1e-12, maxiter=2000)

    left, right = edge(-1.0), edge(1.0)
    points = _breakpoints(peak, 0.25 / math.sqrt(s), left, right)
    if b > 0.0:
        points += _breakpoints(-a / b, 0.25 / b, left, right)
    with np.errstate(under="ignore"), warnings.catch_warnings():
        # quadpack flags round-off when 1e-13 is at the floor of e^{g − top}'s own float64 accuracy
        warnings.simplefilter("ignore", IntegrationWarning)
        integral, _ = quad(lambda z: math.exp(g(z) - top), left, right, points=sorted(set(points)),
                           epsabs=0.0, epsrel=1e-13, limit=50 + 4 * len(points))
    return C + top + math.log(integral)


def erfc_square_mean(a: float, b: float) -> float:
    """E_Z[erfc(a + bZ)²] = 1 − 2erf(a/√(1+2b²)) + ζ(a, b) for a, b ≥ 0 (see `log_erfc_square_mean`);
    0.0 where it is below the float64 range."""
    return math.exp(log_erfc_square_mean(a, b))


def log_zeta_at_zero(g: float) -> float:
    """log ζ(0, g) = log[(2/π)·arcsin(2g²/(1+2g²))] for g ≥ 0 (−∞ at g = 0), in float64 for any g.

    Written as (2/π)·arctan(2g²/√(1+4g²)) = (2/π)·arctan(g·r), r = 2g/√(1+4g²), so that neither g²
    overflows nor 2g² underflows.
    """
    g = nonnegative("g", g)
    if g == 0.0:
        return -math.inf
    r = 2.0 * g / math.hypot(1.0, 2.0 * g) if g <= 1.0 else 1.0 / math.hypot(0.5 / g, 1.0)
    w = g * r
    ratio = math.atan(w) / w if w > 0.0 else 1.0  # → 1 as w → 0
    return math.log(2.0 / math.pi) + math.log(ratio) + math.log(g) + math.log(r)
