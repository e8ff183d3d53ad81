"""Gaussian expectations of erf, symbolically: the function ζ and a Stein-rule expectation engine.

Notation (Marion et al. 2025, spec §5): Z ~ N(0, 1), erf'(x) = (2/√π)e^{−x²}, and
``ζ(t, g) = E[erf(t + gZ)²]``, which has no elementary form. Everything else reduces to three
base expectations by Stein's lemma E[Z f(Z)] = E[f'(Z)]:

* E[1] = 1,
* E[erf(α + βZ)] = erf(α / √(1 + 2β²)),
* E[erf(α + βZ)²] = ζ(α, β),

via E[Zⁿ g(α+βZ)] = (n−1)·E[Zⁿ⁻² g(α+βZ)] + β·∂_α E[Zⁿ⁻¹ g(α+βZ)]. The base facts and ζ's
derivatives are identities checked against quadrature by the claim
``single_location.gaussian_identities``.
"""

from __future__ import annotations

import math
import warnings
from functools import lru_cache

import mpmath
import numpy as np
import scipy.special
import sympy
from scipy.integrate import IntegrationWarning, quad
from scipy.optimize import brentq
from sympy import Rational, asin, erf, exp, pi, sqrt

from ..base.arguments import nonnegative

_alpha, _beta = sympy.symbols("alpha beta", real=True)


def erf_prime(x: sympy.Expr) -> sympy.Expr:
    """erf'(x) = (2/√π) e^{−x²}."""
    return 2 / sqrt(pi) * exp(-(x**2))


def zeta_t_derivative(t: sympy.Expr, g: sympy.Expr) -> sympy.Expr:
    """∂_t ζ(t, g) = (2/√(1+2g²)) erf(t/√((1+2g²)(1+4g²))) erf'(t/√(1+2g²))  (spec §5, ``der_zeta``)."""
    s = 1 + 2 * g**2
    return 2 / sqrt(s) * erf(t / sqrt(s * (1 + 4 * g**2))) * erf_prime(t / sqrt(s))


def zeta_at_zero(g: sympy.Expr) -> sympy.Expr:
    """ζ(0, g) = E[erf(gZ)²] = (2/π) arcsin(2g²/(1+2g²))  (spec §5, the arcsin identity at a = b = g)."""
    return 2 / pi * asin(2 * g**2 / (1 + 2 * g**2))


def zeta_mpmath(t, g):
    """ζ(t, g) in mpmath at the working precision: ζ(0, g) + ∫₀^{|t|} ∂_sζ(s, g) ds."""
    t, g = abs(mpmath.mpf(t)), mpmath.mpf(g)
    s = 1 + 2 * g**2
    c = mpmath.sqrt(s * (1 + 4 * g**2))
    at_zero = 2 / mpmath.pi * mpmath.asin(2 * g**2 / s)
    if t == 0:
        return at_zero
    derivative = lambda u: 4 / mpmath.sqrt(mpmath.pi * s) * mpmath.erf(u / c) * mpmath.exp(-(u**2) / s)  # noqa: E731
    upper = min(t, 12 * mpmath.sqrt(s))  # beyond 12 widths the integrand is below e^-144
    return at_zero + mpmath.quad(derivative, mpmath.linspace(0, upper, 9))


# Composite Gauss–Legendre rule on [0, 1] used by the array implementation of ζ.
_PANELS = 8
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(16)
#: ζ'(s) ∝ erf'(s/√(1+2g²)) is below 1e-40 of its peak beyond 9.6 widths: the integral stops there.
_SUPPORT = 9.6


class ErfSquareMean(sympy.Function):
    r"""ζ(t, g) = E_Z[erf(t + gZ)²] with Z ~ N(0, 1)  (Marion et al. 2025, ``utils.zeta_integ``).

    Evaluated as ζ(t, g) = ζ(0, g) + ∫₀^{|t|} ∂_sζ(s, g) ds, the one-dimensional integral of its
    closed-form t-derivative (ζ is even in t).
    """

    nargs = 2

    @classmethod
    def eval(cls, t, g):
        if t.is_zero:
            return zeta_at_zero(g)
        if t in (sympy.oo, -sympy.oo):
            return sympy.Integer(1)
        if g.is_zero:
            return erf(t) ** 2
        if t.could_extract_minus_sign():
            return cls(-t, g)
        if g.could_extract_minus_sign():
            return cls(t, -g)
        return None

    def fdiff(self, argindex=1):
        t, g = self.args
        if argindex == 1:
            return zeta_t_derivative(t, g)
        if argindex == 2:  # heat equation of a Gaussian smoothing: ∂_g E f(t+gZ) = g ∂²_t E f(t+gZ)
            at = sympy.Dummy("t")  # t may be an expression (ζ(λ√(d/2), λγ)): differentiate in a slot, then put it
            return g * sympy.diff(zeta_t_derivative(at, g), at).subs(at, t)
        raise sympy.ArgumentIndexError(self, argindex)

    def _latex(self, printer):
        return r"\zeta\left(%s, %s\right)" % (printer._print(self.args[0]), printer._print(self.args[1]))

    def _eval_evalf(self, prec):
        t, g = (a.evalf(prec) for a in self.args)
        if not (t.is_real and g.is_real and t.is_number and g.is_number):
            return None
        with mpmath.workprec(prec + 20):
            value = zeta_mpmath(mpmath.mpf(str(t)), mpmath.mpf(str(g)))
        return sympy.Float(value, prec)

    @staticmethod
    def mpmath_implementation(t, g):
        """ζ at the current mpmath precision (see :func:`zeta_mpmath`)."""
        return zeta_mpmath(t, g)

    @staticmethod
    def array_implementation(backend, t, g):
        """ζ on arrays (numpy or cupy): closed form at 0 plus composite Gauss–Legendre in s/√(1+2g²)."""
        xp = backend.xp
        t, g = xp.broadcast_arrays(xp.abs(xp.asarray(t, dtype=xp.float64)), xp.asarray(g, dtype=xp.float64))
        s = 1.0 + 2.0 * g**2
        width = xp.sqrt(s)
        upper = xp.minimum(t / width, _SUPPORT)  # in units of the Gaussian width of ∂_sζ
        nodes = xp.asarray((_NODES + 1.0) / 2.0)
        weights = xp.asarray(_WEIGHTS / 2.0)
        panel = xp.arange(_PANELS, dtype=xp.float64)
        x = ((panel[:, None] + nodes[None, :]) / _PANELS).ravel()  # points in [0, 1]
        w = xp.tile(weights, _PANELS) / _PANELS
        u = upper[..., None] * x  # u = s/√(1+2g²)
        ratio = xp.sqrt(1.0 + 4.0 * g**2)[..., None]
        integrand = 2.0 * backend.special.erf(u / ratio) * (2.0 / np.sqrt(np.pi)) * xp.exp(-(u**2))
        integral = upper * xp.sum(integrand * w, axis=-1)
        return (2.0 / np.pi) * xp.arcsin(2.0 * g**2 / s) + integral


def _base(power: int) -> sympy.Expr:
    """E[erf(α+βZ)^power] for power 0, 1, 2, in the dummy symbols α, β."""
    if power == 0:
        return sympy.Integer(1)
    if power == 1:
        return erf(_alpha / sqrt(1 + 2 * _beta**2))
    if power == 2:
        return ErfSquareMean(_alpha, _beta)
    raise ValueError(f"erf power must be 0, 1 or 2, got {power}")


@lru_cache(maxsize=None)
def _moment(n: int, power: int) -> sympy.Expr:
    """E[Zⁿ erf(α+βZ)^power] by Stein's lemma: (n−1)·M(n−2) + β·∂_α M(n−1)."""
    if n == 0:
        return _base(power)
    lower = (n - 1) * _moment(n - 2, power) if n >= 2 else sympy.Integer(0)
    return lower + _beta * sympy.diff(_moment(n - 1, power), _alpha)


def _split_term(term: sympy.Expr, z: sympy.Symbol) -> tuple[sympy.Expr, int, sympy.Expr | None, int]:
    """term = coefficient · zⁿ · erf(u)^m with u linear in z; returns (coefficient, n, u, m)."""
    coefficient, n, argument, power = sympy.Integer(1), 0, None, 0
    for factor in sympy.Mul.make_args(term):
        base, exponent = factor.as_base_exp()
        if not factor.has(z):
            coefficient *= factor
        elif base == z and exponent.is_Integer and exponent >= 0:
            n += int(exponent)
        elif isinstance(base, erf) and exponent.is_Integer and exponent > 0:
            if argument is not None and sympy.simplify(base.args[0] - argument) != 0:
                raise ValueError(f"more than one erf argument in {term}; condition on one variable")
            argument = base.args[0]
            power += int(exponent)
        else:
            raise ValueError(f"cannot take the Gaussian expectation of the factor {factor} in {z}")
    if argument is not None:
        poly = sympy.Poly(argument, z)
        if poly.degree() != 1:
            raise ValueError(f"erf argument {argument} must be linear in {z}")
    return coefficient, n, argument, power


def gaussian_expectation(expression: sympy.Expr, z: sympy.Symbol) -> sympy.Expr:
    """E_z[expression] for z ~ N(0, 1): a polynomial in z times powers (≤ 2) of one erf(α + βz)."""
    total = sympy.Integer(0)
    for term in sympy.Add.make_args(sympy.expand(expression)):
        coefficient, n, argument, power = _split_term(term, z)
        if argument is None:
            alpha, beta = sympy.Integer(0), sympy.Integer(0)
        else:
            beta = sympy.Poly(argument, z).coeff_monomial(z)
            alpha = sympy.expand(argument - beta * z)
        total += coefficient * _moment(n, power).subs({_alpha: alpha, _beta: beta}, simultaneous=True)
    return total


def gaussian_moments_expectation(expression: sympy.Expr, variables: list[sympy.Symbol]) -> sympy.Expr:
    """E over independent standard Gaussians ``variables`` of an expression polynomial in them."""
    result = sympy.expand(expression)
    for w in variables:
        result = gaussian_expectation(result, w)
    return sympy.expand(result)


# ---------------------------------------------------------------------------------------------
# The identity table: each is E_Z[integrand(Z)] = closed form, checked against quadrature.
# ---------------------------------------------------------------------------------------------

Z = sympy.Symbol("Z", real=True)
a_, b_ = sympy.symbols("a b", real=True)
t_, g_ = sympy.symbols("t g", real=True)


def identity_table() -> list[dict]:
    """The Gaussian/erf identities used by the derivations (spec §5), as integrand/closed-form pairs.

    ``closed_form`` is produced by the same engine the risk derivation uses, so checking it
    against quadrature checks the engine itself; ``parameters`` lists the free symbols.
    """
    return [
        {
            "name": "E erf(a+bZ)",
            "integrand": erf(a_ + b_ * Z),
            "closed_form": gaussian_expectation(erf(a_ + b_ * Z), Z),
            "parameters": (a_, b_),
        },
        {
            "name": "E[Z erf(a+bZ)]",
            "integrand": Z * erf(a_ + b_ * Z),
            "closed_form": gaussian_expectation(Z * erf(a_ + b_ * Z), Z),
            "parameters": (a_, b_),
        },
        {
            "name": "E[Z^2 erf(a+bZ)]",
            "integrand": Z**2 * erf(a_ + b_ * Z),
            "closed_form": gaussian_expectation(Z**2 * erf(a_ + b_ * Z), Z),
            "parameters": (a_, b_),
        },
        {
            "name": "E erf(aZ) erf(bZ)",
            "integrand": erf(a_ * Z) * erf(b_ * Z),
            "closed_form": 2 / pi * asin(2 * a_ * b_ / sqrt((1 + 2 * a_**2) * (1 + 2 * b_**2))),
            "parameters": (a_, b_),
        },
        {
            "name": "zeta(t,g) = E erf(t+gZ)^2",
            "integrand": erf(t_ + g_ * Z) ** 2,
            "closed_form": ErfSquareMean(t_, g_),
            "parameters": (t_, g_),
        },
        {
            "name": "d/dt zeta(t,g) = E[2 erf erf'(t+gZ)]",
            "integrand": 2 * erf(t_ + g_ * Z) * erf_prime(t_ + g_ * Z),
            "closed_form": sympy.diff(ErfSquareMean(t_, g_), t_),
            "parameters": (t_, g_),
        },
        {
            "name": "E[Z erf(t+gZ)^2]",
            "integrand": Z * erf(t_ + g_ * Z) ** 2,
            "closed_form": gaussian_expectation(Z * erf(t_ + g_ * Z) ** 2, Z),
            "parameters": (t_, g_),
        },
        {
            "name": "E[Z^2 erf(t+gZ)^2]",
            "integrand": Z**2 * erf(t_ + g_ * Z) ** 2,
            "closed_form": gaussian_expectation(Z**2 * erf(t_ + g_ * Z) ** 2, Z),
            "parameters": (t_, g_),
        },
        {
            "name": "d/dg zeta(t,g) = E[2 Z erf erf'(t+gZ)]",
            "integrand": 2 * Z * erf(t_ + g_ * Z) * erf_prime(t_ + g_ * Z),
            "closed_form": sympy.diff(ErfSquareMean(t_, g_), g_),
            "parameters": (t_, g_),
        },
    ]


def gaussian_quadrature(integrand: sympy.Expr, values: dict, dps: int = 20) -> float:
    """E_Z[integrand] by mpmath quadrature at ``dps`` digits (default 20: 8 digits beyond the 1e-12 checks), split over the Gaussian bulk and where erf's argument vanishes."""
    f = sympy.lambdify(Z, integrand.subs(values), modules="mpmath")
    # the Gaussian weight's bulk, plus each erf's transition point where it lies within the bulk
    breaks = [-mpmath.inf, -10, -5, -2, 0, 2, 5, 10, mpmath.inf]
    for e in integrand.atoms(erf):
        argument = e.args[0].subs(values)
        slope = sympy.diff(argument, Z)
        if slope != 0:
            centre = float(sympy.N(-(argument - slope * Z) / slope, dps))
            if abs(centre) < 10:
                breaks.append(mpmath.mpf(centre))
    breaks = sorted(set(breaks), key=lambda x: float(x))
    with mpmath.workdps(dps):
        value = mpmath.quad(lambda x: f(x) * mpmath.exp(-(x**2) / 2) / mpmath.sqrt(2 * mpmath.pi), breaks)
    return float(value)


HALF = Rational(1, 2)


# ---------------------------------------------------------------------------------------------
# Float64 forms without cancellation, for the tails where the closed forms lose every digit
# ---------------------------------------------------------------------------------------------

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
    against the mpmath evaluation of the left side to 1e-13 (tests/derivations/test_single_location.py).
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
    """E_Z[erfc(a + bZ)²] = 1 − 2erf(a/√(1+2b²)) + ζ(a, b) for a, b ≥ 0 (see :func:`log_erfc_square_mean`);
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
