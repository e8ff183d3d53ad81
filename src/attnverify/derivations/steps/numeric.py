"""The numeric check of a comparison: both sides at `POINTS` admissible points in
`WORKING_DIGITS`-digit arithmetic (Gaussian expectations and definite integrals by quadrature with an error
estimate carried through the side), agreeing to `AGREEMENT_DIGITS` digits of their terms or within the
estimate, a mismatch checked again at twice the precision (docs/derivation_steps.md, step 2 of a comparison)."""

from __future__ import annotations

import math
import random

import mpmath
import sympy

from ..gaussian import Expectation, QuadratureShort, integral_estimate
from .outcome import StepCheck, unchecked
from .budget import CLOCK
from .expressions import carried_out, entries_of, is_matrix, substituted
from .points import POINTS, REDRAWS, draw_point, draw_scalars, point_text, sign_plan, sums_done, value_text


WORKING_DIGITS = 30
"""Decimal digits of the numeric evaluation."""


AGREEMENT_DIGITS = 20
"""Digits two sides must share at a point (relative to the size of their terms)."""

RECHECK_DIGITS = (2 * WORKING_DIGITS, 3 * WORKING_DIGITS // 2)
"""Digits a mismatch is evaluated again at, in turn: a difference that shrinks there is round-off (a definite
integral by mpmath.quad of bounded degree reaches about 50 digits, so 45 are tried after 60)."""


def numeric_check(a, b, rng: random.Random, points: int = POINTS) -> StepCheck:
    """a = b at ``points`` admissible random points (30 digits), or the first point where they differ. The digits
    of agreement at a point are at most those its evaluation established (the sides' quadrature error estimates,
    `_agreed`); a difference within them is agreement to those digits, never a failure, and fewer than
    `AGREEMENT_DIGITS` established leave the step unchecked."""
    structured = _is_structured(a) or _is_structured(b)
    if not (_free(a) or _free(b)):
        points = 1  # both sides are numbers: every point is the same one
    plan = sign_plan(a, b, rng, points)
    agreements = []
    for number in range(1, points + 1):
        CLOCK.trying = f"the numeric check at point {number} of {points}, {WORKING_DIGITS} digits"
        drawn = _admissible(a, b, rng, structured, plan[number - 1])
        if isinstance(drawn, str):
            return unchecked(drawn)
        point, (left, right), error = drawn
        agreement = _agreed(left, right, error)
        if agreement is None:
            agreement = _recheck(a, b, point, left, right, error)
            if agreement is None:
                return StepCheck("failed", f"the sides differ in the {_ordinal(_agreement(left, right))} digit",
                                 points=number, point=point_text(point), values=(value_text(left), value_text(right)))
            if isinstance(agreement, str):
                return unchecked(f"{agreement} (point {number})")
        digits, limited = agreement
        if digits < AGREEMENT_DIGITS:
            return unchecked(f"its quadrature reached only {math.floor(digits)} digits at point {number} (the "
                              f"sides agree within its error estimate; {AGREEMENT_DIGITS} are needed)")
        agreements.append(agreement)
    digits, limited = min(agreements)
    return StepCheck("numeric", f"{points} points", points=points, digits=digits, limited=limited)


def _free(side) -> bool:
    """Whether a side has a free symbol (a point to draw)."""
    return bool(getattr(side, "free_symbols", ()))


def _established(error, scale) -> float:
    """Digits that an absolute ``error`` (the sides' quadrature error estimates together) leaves of values of
    size ``scale``: `WORKING_DIGITS` when nothing was estimated."""
    if not error:
        return float(WORKING_DIGITS)
    if not scale:
        return 0.0
    return max(0.0, min(float(WORKING_DIGITS), float(-sympy.log(sympy.sympify(error) / scale, 10))))


def _agreed(left, right, error, scale=None) -> tuple[float, bool] | None:
    """(digits, quadrature-limited) if the sides agree at this point: to `AGREEMENT_DIGITS` digits relative
    to ``scale`` (default: the larger side), or within their combined error estimate ``error``; the digits are
    then the fewer of those agreeing and those ``error`` establishes, quadrature-limited where the latter are
    fewer. None if they differ beyond both."""
    scale = max(_size(left), _size(right)) if scale is None else scale
    agreement, established = _agreement(left, right, scale), _established(error, scale)
    if agreement < AGREEMENT_DIGITS and not _gap(left, right) <= error:
        return None
    return min(agreement, established), established <= agreement and established < WORKING_DIGITS


def _admissible(a, b, rng: random.Random, structured: bool, signs: dict):
    """(point, (left, right), their combined error estimate): a point where both sides are finite, real where
    possible (a point where a side is not real while the symbols are lies outside the domain: drawn again, with
    free signs after half the tries); a string if none can be had."""
    fallback = None
    for attempt in range(REDRAWS + 1):
        signs = signs if attempt < REDRAWS // 2 else {}
        point = draw_point(a, b, rng, signs) if structured else draw_scalars(a, b, rng, signs)
        if isinstance(point, str):
            return point
        estimates = [_estimated(side, point, WORKING_DIGITS) for side in (a, b)]
        why = next((v for v in estimates if isinstance(v, str)), None)
        if why:
            return why
        if any(v is None for v in estimates):
            continue
        values, error = [v for v, _ in estimates], sum(e for _, e in estimates)
        if all(_is_real(v) for v in values):
            return point, tuple(v.applyfunc(sympy.re) if is_matrix(v) else sympy.re(v) for v in values), error
        fallback = fallback or (point, tuple(values), error)
    return fallback or f"no point among {REDRAWS + 1} drawn where both sides are finite"


def _is_real(value) -> bool:
    """Real up to the working precision (evalf leaves an imaginary part of 1e-40 from a real square root)."""
    return all(v.is_real or abs(sympy.im(v)) <= 10.0 ** (5 - WORKING_DIGITS) * (abs(v) + 1e-300)
               for v in entries_of(value))


def _size(value):
    """The largest absolute value (of the entries of a matrix)."""
    return max(abs(v) for v in entries_of(value))


def _gap(left, right):
    if is_matrix(left) != is_matrix(right) or (is_matrix(left) and left.shape != right.shape):
        return sympy.oo
    return max(abs(l - r) for l, r in zip(entries_of(left), entries_of(right)))


def _agreement(left, right, scale=None) -> float:
    """Digits shared by the two values (matrices: their worst entry), relative to ``scale`` (default: the larger
    of them)."""
    gap = _gap(left, right)
    if gap == sympy.oo:
        return 0.0
    scale = max(_size(left), _size(right)) if scale is None else scale
    if gap == 0 or scale == 0:
        return float(WORKING_DIGITS)
    return max(0.0, min(float(WORKING_DIGITS), float(-sympy.log(gap / scale, 10))))


def _ordinal(digits: float) -> str:
    k = max(1, int(math.floor(digits)) + 1)
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(k, f"{k}th")


def _recheck(a, b, point: dict, left, right, error=0) -> tuple[float, bool] | str | None:
    """(digits, quadrature-limited) as `_agreed`, relative to the size of the sides' terms, if the
    difference is round-off of an exact zero (it shrinks when the precision rises, `RECHECK_DIGITS`) or, at
    the higher precision, within the sides' error estimates; None if it is a real difference (it stays). A
    difference small beside the terms is no agreement by itself: 2·erfc(7) against 1 − erf(7) differ by 4e-23, 22
    digits of terms of size 1, and that difference stays at any precision. Where the sides cannot be evaluated at
    a higher precision, a difference the terms' digits would pass is undecided (a string: why), never agreement."""
    terms = max(_term_scale(a, point), _term_scale(b, point), _size(left), _size(right))
    gap = _gap(left, right)
    if gap == sympy.oo:
        return None
    for digits in RECHECK_DIGITS:
        CLOCK.trying = f"the {digits}-digit re-check of a mismatch"
        again = [_estimated(side, point, digits) for side in (a, b)]
        if any(v is None or isinstance(v, str) for v in again):
            continue  # a quadrature short of these digits: fewer
        (left2, error2), (right2, other2) = again
        gap2 = _gap(left2, right2)
        if gap2 <= gap * 10.0 ** (-(digits - WORKING_DIGITS) / 2) or gap2 <= error2 + other2:
            established = _established(error2 + other2, terms)
            agreement = float(WORKING_DIGITS) if gap2 == 0 else min(float(WORKING_DIGITS),
                                                                      _agreement(left2, right2, terms))
            return min(agreement, established), established <= agreement and established < WORKING_DIGITS
        return None
    agreement = _agreed(left, right, error, terms)
    if agreement is None:
        return None
    return (f"the sides differ by {value_text(gap)}, {agreement[0]:.0f} digits of terms of size {value_text(terms)}, "
            f"and could not be evaluated at {' or '.join(map(str, RECHECK_DIGITS))} digits to tell round-off from a "
            "difference")


def _term_scale(expression, point: dict) -> float:
    """The size of the largest top-level term of ``expression`` at ``point`` (what a cancellation started from)."""
    explicit = _explicit(expression, point)
    terms = sympy.Add.make_args(explicit) if isinstance(explicit, sympy.Expr) and not is_matrix(explicit) else ()
    sizes = []
    for term in terms:
        value = sympy.N(term, WORKING_DIGITS)
        if value.is_number and value.is_finite:
            sizes.append(abs(value))
    return max(sizes, default=sympy.S.Zero)


def _evaluate(expression, point: dict, digits: int):
    """The value of ``expression`` at ``point`` to ``digits`` digits (sympy's evalf over mpmath); None where it
    is not finite; a string (why) where it is not a number."""
    estimate = _estimated(expression, point, digits)
    return estimate[0] if isinstance(estimate, tuple) else estimate


def _estimated(expression, point: dict, digits: int):
    """(the value of ``expression`` at ``point`` to ``digits`` digits, an estimate of its absolute error from
    quadrature: each Gaussian expectation's and definite integral's own estimate times the side's sensitivity to
    it, `_propagated`; 0 where there is none); None where it is not finite; a string (why) where it is not a
    number."""
    try:
        expression, quadratures = _expectations_at(expression, point, digits)
        if expression is None:
            return None
        explicit, integrals = _integrals_at(_explicit(expression, point), digits)
        quadratures.update(integrals)
        value = _number(explicit, {d: v for d, (v, _) in quadratures.items()}, digits)
    except QuadratureShort as short:
        return f"its quadrature falls short: {short}"
    except (ZeroDivisionError, ValueError, OverflowError, TypeError, ArithmeticError, mpmath.libmp.NoConvergence):
        return None
    for entry in entries_of(value):
        if entry.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
            return None
        if not entry.is_number or entry.free_symbols or entry.atoms(sympy.Integral, sympy.Sum, sympy.Product):
            return f"evalf leaves {entry if len(str(entry)) < 80 else type(entry).__name__} unevaluated"
    try:
        return value, _propagated(explicit, quadratures, value, digits)
    except (ZeroDivisionError, ValueError, OverflowError, TypeError, ArithmeticError):
        return None


def _number(explicit, values: dict, digits: int):
    """``explicit`` with the quadratures' stand-ins replaced by ``values``, to ``digits`` digits."""
    explicit = explicit.xreplace(values) if values else explicit
    return explicit.applyfunc(lambda e: sympy.N(e, digits)) if is_matrix(explicit) else sympy.N(explicit, digits)


def _propagated(explicit, quadratures: dict, value, digits: int):
    """Σ |∂side/∂qᵢ| εᵢ over the quadratures qᵢ (stand-in → (value, error estimate εᵢ)) of a side: each derivative
    a difference quotient, qᵢ moved by max(εᵢ, 10⁻¹² |qᵢ|) so that the difference stands clear of the evaluation's
    rounding."""
    values = {d: v for d, (v, _) in quadratures.items()}
    total = 0
    for d, (v, error) in quadratures.items():
        if not error:
            continue
        error = sympy.Float(error, 5)
        step = max(error, sympy.Float(10.0 ** -12) * max(abs(v), 1))
        moved = _number(explicit, {**values, d: v + step}, digits)
        total += _gap(moved, value) / step * error
    return total


def _integrals_at(expression, digits: int):
    """(``expression`` with each definite integral free of symbols replaced by a stand-in symbol, stand-in →
    (value, error estimate)) (`..gaussian.integral_estimate`: a Gaussian weight's expectation, exactly
    where it can be conditioned, else mpmath.quad of bounded degree whose error estimate is checked)."""
    if not isinstance(expression, sympy.Basic) or not expression.has(sympy.Integral):
        return expression, {}
    prec = sympy.core.evalf.dps_to_prec(digits) + 8
    found: dict = {}

    def value(e):
        number, error = integral_estimate(e, prec)
        if mpmath.im(number) == 0:
            number = sympy.Float(mpmath.re(number), prec)
        else:
            number = sympy.Float(mpmath.re(number), prec) + sympy.I * sympy.Float(mpmath.im(number), prec)
        stand_in = sympy.Dummy("integral")
        found[stand_in] = (number, error)
        return stand_in

    return expression.replace(lambda e: isinstance(e, sympy.Integral) and not e.free_symbols, value), found


def _expectations_at(expression, point: dict, digits: int):
    """(``expression`` with each Gaussian expectation replaced by a stand-in symbol, stand-in → (its value at
    ``point``, its error estimate)) (a quadrature, with the expectation compiled once for all points:
    `..gaussian.Expectation.estimate_at`); (None, {}) where one is not finite there."""
    if not isinstance(expression, sympy.Basic) or not expression.has(Expectation):
        return expression, {}
    values = point if "integers" not in point else {**point["integers"], **point["scalars"]}
    replaced, found = {}, {}
    for e in expression.atoms(Expectation):
        if e.is_gaussian and not any(isinstance(s, sympy.MatrixSymbol) for s in e.free_symbols):
            estimate = e.estimate_at(values, sympy.core.evalf.dps_to_prec(digits) + 8)
            if estimate is None:
                return None, {}
            replaced[e] = sympy.Dummy("expectation")
            found[replaced[e]] = estimate
    return expression.xreplace(replaced), found


def _explicit(expression, point: dict):
    """``expression`` at ``point``: symbols, indexed entries and matrix symbols replaced, matrix operations done."""
    if "integers" not in point:  # a plain point: scalar symbols only
        return carried_out(substituted(expression, point))
    expression = sums_done(substituted(expression, point["integers"]))
    for group in ("indexed", "matrices", "scalars"):
        expression = substituted(expression, point[group])
    expression = _differenced(expression)
    if isinstance(expression, sympy.MatrixExpr) or expression.has(sympy.MatrixExpr):
        expression = _matrix_done(expression)
    return carried_out(expression)


STEP = sympy.Rational(1, 10**25)
"""The step of a central difference: its error, of order STEP² (10⁻⁵⁰), is far below the 20 digits compared."""


def _differenced(expression):
    """A derivative by a scalar of a matrix expression at an explicit point, d/dε f(ε) at ε = p, written as the
    central difference (f(p + h) − f(p − h))/2h with an exact h = `STEP`: each side is then a matrix
    expression in explicit rational matrices, carried out exactly (sympy's derivative of a symbolic inverse or
    determinant takes seconds; evalf then resolves the cancellation of the difference)."""
    if not isinstance(expression, sympy.Basic) or not expression.has(sympy.Subs):
        return expression

    def difference(e):
        derivative, (variable,), (at,) = e.args[0], e.variables, e.point
        if not (isinstance(derivative, sympy.Derivative) and derivative.variable_count == ((variable, 1),)
                and at.is_number):
            return e
        body = derivative.expr
        if body.free_symbols - {variable} or not (body.has(sympy.MatrixExpr, sympy.Trace, sympy.Determinant)
                                                  or isinstance(body, sympy.MatrixBase)):
            return e
        return (body.xreplace({variable: at + STEP}) - body.xreplace({variable: at - STEP})) / (2 * STEP)

    return expression.replace(lambda e: isinstance(e, sympy.Subs) and len(e.variables) == 1, difference)


def _matrix_done(expression):
    """Matrix operations on explicit matrices carried out (``doit``, which multiplies, inverts and traces explicit
    matrices directly; ``as_explicit``, entry by entry, where that leaves a matrix expression); a 1×1 result is its
    entry."""

    def explicit(e):
        try:
            done = e.doit()
        except Exception:  # sympy cannot carry it out: entry by entry below
            done = e
        if isinstance(done, sympy.MatrixExpr) and not isinstance(done, sympy.MatrixBase):
            done = done.as_explicit()
        return done

    special = {m: m.as_explicit() for m in expression.atoms(sympy.Identity, sympy.ZeroMatrix, sympy.OneMatrix)
               if all(n.is_Integer for n in m.shape)}
    expression = expression.xreplace(special) if special else expression
    matrix_operation = (lambda e: (isinstance(e, sympy.MatrixExpr) and not isinstance(e, sympy.MatrixBase))
                        or isinstance(e, (sympy.Trace, sympy.Determinant)))
    expression = explicit(expression) if matrix_operation(expression) else expression.replace(matrix_operation,
                                                                                               explicit)
    if isinstance(expression, sympy.MatrixBase) and expression.shape == (1, 1):
        return expression[0, 0]
    return expression


def _is_structured(expression) -> bool:
    """Holds matrices, indexed entries, sums or products (whose sizes and limits are drawn first)."""
    return isinstance(expression, sympy.MatrixExpr) or expression.has(
        sympy.MatrixSymbol, sympy.Indexed, sympy.Sum, sympy.Product, sympy.Identity)
