"""Definite integrals with no free symbols at a point, with an error estimate: over ℝⁿ with a Gaussian weight as the
weight's mass times an expectation (`.expectation.standard_estimate`), else mpmath.quad of bounded degree
whose estimate must reach the working precision (else `QuadratureShort`, a step left undecided)."""

from __future__ import annotations

import mpmath
import sympy

from .expectation import standard_estimate, working_precision
from .panels import QuadratureShort, rounding


INTEGRAL_DEGREE = 7
"""mpmath.quad's largest tanh-sinh degree for an integral at a point (about 2^degree·12 nodes per interval): the
bounded effort of a 1-D integral."""


def integral_value(integral: sympy.Integral, prec: int):
    """A definite integral with no free symbols at ``prec`` bits (the value of `integral_estimate`)."""
    return integral_estimate(integral, prec)[0]


def integral_estimate(integral: sympy.Integral, prec: int) -> tuple:
    """(a definite integral, an estimate of its absolute error): a definite integral with no free symbols, at ``prec``
    bits (an mpmath number). Over ℝⁿ with a Gaussian weight exp(−½zᵀPz + bᵀz + c), P positive definite (the nested
    integrals merged): the weight's mass times E[g(μ + LY)] (LLᵀ = P⁻¹, `standard_mean`); else one variable at a time by
    mpmath.quad (tanh-sinh, at most `INTEGRAL_DEGREE`), whose error estimate must reach the working precision less 16
    bits, else `QuadratureShort`. A Gaussian weight's expectation is carried at the precision an expectation is
    (`working_precision`), so that its panels reach ``prec``."""
    with mpmath.workprec(working_precision(prec)):
        gaussian_form = _gaussian_weight(*_merged(integral))
        if gaussian_form is not None:
            mass, g, variables = gaussian_form
            value, error = standard_estimate(g, variables, mpmath.mp.prec)
            product = mass * value
            return product, abs(mass) * error + rounding(product)
    with mpmath.workprec(working_precision(prec)):
        return _product_estimate(integral, prec)


def pulled_out(integral: sympy.Integral) -> sympy.Expr:
    """``integral`` with every factor free of a variable taken out of that variable's integral, innermost first
    (∫ c·g dx = c ∫ g dx): a separable ∫∫ f(r) g(φ) dφ dr becomes (∫ f dr)(∫ g dφ). Exact; it keeps each
    quadrature's integrand of the size of its value, so that its error estimate, relative to that value, holds
    (r³e^{−r²/2} ∫ g dφ at r = 10⁻¹⁰ left about 10⁻³⁰ to a rule whose estimate is about 10⁻³⁴ absolute)."""
    body = integral.function
    for limit in integral.limits:  # innermost first
        if len(limit) != 3:
            return integral
        constant, dependent = sympy.Mul(*sympy.Mul.make_args(body)).as_independent(limit[0], as_Add=False)
        body = constant * sympy.Integral(dependent, limit)
    return body


def _product_estimate(integral: sympy.Integral, prec: int):
    """(value, error estimate) of ``integral`` as the product of numbers and definite integrals that
    `pulled_out` makes of it: each integral by `_quadrature`, the errors combined as a bound,
    |c| (Π (|Iⱼ| + εⱼ) − Π |Iⱼ|), which holds however small a factor is beside its error."""
    product = pulled_out(integral)
    factors = sympy.Mul.make_args(product)
    integrals = [f for f in factors if isinstance(f, sympy.Integral)]
    numbers = [f for f in factors if not isinstance(f, sympy.Integral)]
    if not integrals or any(f.has(sympy.Integral) for f in numbers):  # an integral inside a function: as written
        return _quadrature(integral, prec)
    constant = sympy.N(sympy.Mul(*numbers), mpmath.mp.dps + 5)._to_mpmath(mpmath.mp.prec)
    estimates = [_quadrature(f, prec) for f in integrals]
    value = constant * mpmath.fprod(v for v, _ in estimates)
    error = abs(constant) * (mpmath.fprod(abs(v) + e for v, e in estimates) - mpmath.fprod(abs(v) for v, _ in estimates))
    return value, error + rounding(value)


def _merged(integral: sympy.Integral):
    """(integrand, variables) of nested integrals all over ℝ, or (None, None)."""
    variables, body = [], integral
    while isinstance(body, sympy.Integral):
        for limit in body.limits:
            if len(limit) != 3 or limit[1] != -sympy.oo or limit[2] != sympy.oo:
                return None, None
            variables.append(limit[0])
        body = body.function
    if body.has(sympy.Integral):
        return None, None
    return body, variables


def _gaussian_weight(integrand, variables):
    """(mass, g(μ + LY), Y) where integrand = g · exp(q), q quadratic with a negative definite part, or None."""
    if integrand is None:
        return None
    exponent, rest = sympy.S.Zero, sympy.S.One
    for factor in sympy.Mul.make_args(sympy.powsimp(integrand)):
        base, power = factor.as_base_exp()
        if isinstance(factor, sympy.exp) or base == sympy.E:
            argument = factor.args[0] if isinstance(factor, sympy.exp) else power
            if argument.has(*variables) and _degree(argument, variables) <= 2:
                exponent += argument
                continue
        rest *= factor
    if exponent == 0:
        return None
    poly = sympy.Poly(sympy.expand(exponent), *variables)
    if poly.total_degree() != 2:
        return None
    n, digits = len(variables), mpmath.mp.dps + 5
    number = lambda e: mpmath.mpf(sympy.Float(e, digits))  # noqa: E731
    try:
        hessian = mpmath.matrix([[number(-sympy.diff(exponent, u, v)) for v in variables] for u in variables])
        b = mpmath.matrix([number(sympy.diff(exponent, u).xreplace(dict.fromkeys(variables, 0))) for u in variables])
        c = number(exponent.xreplace(dict.fromkeys(variables, 0)))
        covariance = mpmath.inverse(hessian)
        lower = mpmath.cholesky(covariance)  # raises unless positive definite
    except (ValueError, ZeroDivisionError, TypeError):
        return None
    mean = covariance * b
    mass = mpmath.exp(c + (b.T * mean)[0] / 2) * mpmath.sqrt((2 * mpmath.pi) ** n * mpmath.det(covariance))
    new = [sympy.Dummy(f"y{i}", real=True) for i in range(n)]
    change = {u: sympy.Float(mean[i], digits) + sum(sympy.Float(lower[i, j], digits) * new[j]
                                                     for j in range(i + 1) if lower[i, j] != 0)
              for i, u in enumerate(variables)}
    return mass, rest.xreplace(change), new


def _degree(expression, variables) -> int:
    """The total degree of a polynomial in ``variables`` (a large number if it is not one)."""
    try:
        return sympy.Poly(sympy.expand(expression), *variables).total_degree()
    except sympy.PolynomialError:
        return 10**9


def _quadrature(integral: sympy.Integral, prec: int):
    """(value, error estimate): one variable at a time, innermost last, by mpmath.quad with its error estimate
    checked; an inner integral's error estimates, at most 2¹⁶ units of its last place relative to its value, are
    added relative to the outer value."""
    (variable, *bounds), *outer = integral.limits[::-1]
    inner = sympy.Integral(integral.function, *integral.limits[:-1]) if outer else integral.function
    low, high = (mpmath.mpf(sympy.Float(sympy.N(v, mpmath.mp.dps + 5), mpmath.mp.dps + 5)) if v.is_finite else
                 (mpmath.inf if v == sympy.oo else -mpmath.inf) for v in bounds)
    if inner.has(sympy.Integral):
        def f(x):
            return _at_number(inner, variable, x, prec)
    else:
        compiled = sympy.lambdify(variable, inner, modules="mpmath")
        f = compiled
    value, error = mpmath.quad(f, [low, high], error=True, maxdegree=INTEGRAL_DEGREE)
    if not error <= mpmath.mpf(2) ** (16 - prec) * max(abs(value), mpmath.mpf(2) ** (-prec // 2)):
        digits = int(max(0, -mpmath.log10(error / max(abs(value), mpmath.mpf(10) ** -100))))
        raise QuadratureShort(f"mpmath.quad reached about {digits} digits of ∫ d{variable} within degree "
                              f"{INTEGRAL_DEGREE}")
    if inner.has(sympy.Integral):
        error = abs(error) + mpmath.mpf(2) ** (16 - prec) * abs(value)
    return value, abs(error) + rounding(value)


def _at_number(inner, variable, x, prec):
    value = inner.xreplace({variable: sympy.Float(x, mpmath.mp.dps + 5)})
    if isinstance(value, sympy.Integral):
        return integral_value(value, prec)
    return mpmath.mpf(sympy.Float(sympy.N(value.replace(
        lambda e: isinstance(e, sympy.Integral) and not e.free_symbols,
        lambda e: sympy.Float(integral_value(e, prec), mpmath.mp.dps + 5)), mpmath.mp.dps + 5), mpmath.mp.dps))
