"""The Gaussian/erf identities the single-location derivation uses (docs/papers/single_location.md §5), each a
closed form from `.closed_forms` beside its integrand, and the quadrature of `.expectation` they are
checked against (the claim ``single_location.gaussian_identities``)."""

from __future__ import annotations

from functools import lru_cache

import sympy
from sympy import Rational, asin, erf, pi, sqrt

from .closed_forms import ErfSquareMean, erf_prime, gaussian_expectation
from .expectation import Expectation, gaussian


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



@lru_cache(maxsize=64)
def _identity_mean(integrand: sympy.Expr) -> Expectation:
    """E_Z[integrand] as an expectation in its parameters, compiled once for every point it is asked at."""
    return Expectation(integrand, gaussian(Z))


def gaussian_quadrature(integrand: sympy.Expr, values: dict, dps: int = 16) -> float:
    """E_Z[integrand] at the parameter ``values`` by the quadrature of
    [`.expectation.Expectation`][attnverify.derivations.gaussian.expectation.Expectation] (panels over the Gaussian bulk
    and each erf's transition, two rules agreeing to about 2⁻⁵² of the integral) at ``dps`` digits (default 16: 4 beyond
    the 1e-12 checks; measured within 2.1e-15 of the 30-digit closed forms)."""
    mean = _identity_mean(integrand)
    point = {symbol: sympy.Float(value, dps + 5) for symbol, value in values.items()}
    value = mean.value_at(point, sympy.core.evalf.dps_to_prec(dps))
    if value is None:
        raise ValueError(f"the quadrature of E[{integrand}] at {values} did not converge")
    return float(value)


HALF = Rational(1, 2)
