"""Gaussian expectations in closed form: exact moments, the erf conditioning rule, ζ and Stein's lemma.

Notation (Marion et al. 2025, docs/papers/single_location.md §5): Z ~ N(0, 1), erf'(x) = (2/√π)e^{−x²} and
ζ(t, g) = E[erf(t + gZ)²], which has no elementary form. A polynomial in Z times erf(α + βZ)^m (m ≤ 2) reduces
to E[1] = 1, E[erf(α + βZ)] = erf(α/√(1 + 2β²)) (`erf_mean`) and ζ(α, β) by Stein's lemma
E[Zⁿ g(α+βZ)] = (n−1)·E[Zⁿ⁻² g] + β·∂_α E[Zⁿ⁻¹ g]; the claim ``single_location.gaussian_identities`` checks
these against the quadrature of `.expectation`.
"""

from __future__ import annotations

from functools import lru_cache

import mpmath
import numpy as np
import sympy
from sympy import asin, erf, exp, pi, sqrt

from .panels import composite_rule

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


# Composite Gauss–Legendre rule on [0, 1] used by the array implementation of ζ on cupy: 8 panels of 16 nodes.
_POINTS, _WEIGHTS = composite_rule(np.linspace(0.0, 1.0, 9), 16)
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
        """ζ at the current mpmath precision (see `zeta_mpmath`)."""
        return zeta_mpmath(t, g)

    @staticmethod
    def array_implementation(backend, t, g):
        """ζ on arrays. On numpy by Owen's T, exactly: with erf(x) = 2Φ(√2x) − 1, E[Φ(a + bZ)] = Φ(h) and
        E[Φ(a + bZ)²] = Φ(h) − 2T(h, 1/√(1 + 2b²)) for h = a/√(1 + b²) (Owen 1956), so that
        ζ(t, g) = 1 − 8 T(√2 t/√(1 + 2g²), 1/√(1 + 4g²)) — one special function a point. cupy has no Owen's T:
        there the closed form at 0 plus composite Gauss–Legendre in s/√(1+2g²) (128 nodes a point)."""
        xp = backend.xp
        t, g = xp.broadcast_arrays(xp.abs(xp.asarray(t, dtype=xp.float64)), xp.asarray(g, dtype=xp.float64))
        if backend.name == "numpy":
            return 1.0 - 8.0 * backend.special.owens_t(np.sqrt(2.0) * t / xp.sqrt(1.0 + 2.0 * g**2),
                                                      1.0 / xp.sqrt(1.0 + 4.0 * g**2))
        s = 1.0 + 2.0 * g**2
        width = xp.sqrt(s)
        upper = xp.minimum(t / width, _SUPPORT)  # in units of the Gaussian width of ∂_sζ
        x, w = xp.asarray(_POINTS), xp.asarray(_WEIGHTS)  # points in [0, 1]
        u = upper[..., None] * x  # u = s/√(1+2g²)
        ratio = xp.sqrt(1.0 + 4.0 * g**2)[..., None]
        integrand = 2.0 * backend.special.erf(u / ratio) * (2.0 / np.sqrt(np.pi)) * xp.exp(-(u**2))
        integral = upper * xp.sum(integrand * w, axis=-1)
        return (2.0 / np.pi) * xp.arcsin(2.0 * g**2 / s) + integral



def erf_mean(alpha: sympy.Expr, beta: sympy.Expr, function=erf) -> sympy.Expr:
    """E_Z[f(α + βZ)] = f(α/√(1 + 2β²)) for f = erf or erfc (erfc = 1 − erf), Z ~ N(0, 1): the Gaussian
    smoothing of erf is erf of a rescaled argument."""
    return function(alpha / sqrt(1 + 2 * beta**2))


def normal_moment(power: int) -> int:
    """E[Zᵏ] for Z ~ N(0, 1): 0 for odd k, (k − 1)!! for even k."""
    return 0 if power % 2 else int(sympy.factorial2(power - 1))


def polynomial_in(expression: sympy.Expr, variable: sympy.Symbol) -> bool:
    """Whether ``expression`` is a polynomial in ``variable`` (or free of it)."""
    return not expression.has(variable) or bool(expression.is_polynomial(variable))


def moments_taken(integrand: sympy.Expr, exact: list) -> sympy.Expr:
    """E over the standard normal variables ``exact``, in which ``integrand`` is a polynomial: each monomial
    Π xᵢ^kᵢ replaced by Π E[Zᵏⁱ] (independent variables)."""
    if not exact:
        return integrand
    poly = sympy.Poly(sympy.expand(integrand), *exact)
    total = sympy.S.Zero
    for powers, coefficient in poly.terms():
        factor = 1
        for k in powers:
            factor *= normal_moment(k)
        if factor:
            total += factor * coefficient
    return total


def _base(power: int) -> sympy.Expr:
    """E[erf(α+βZ)^power] for power 0, 1, 2, in the dummy symbols α, β."""
    if power == 0:
        return sympy.Integer(1)
    if power == 1:
        return erf_mean(_alpha, _beta)
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
    """E over independent standard Gaussians ``variables`` of an expression polynomial in them (each monomial's
    moments, `moments_taken`)."""
    return sympy.expand(moments_taken(sympy.expand(expression), list(variables)))
