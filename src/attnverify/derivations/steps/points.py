"""The random admissible points of a numeric check: exact rationals by each symbol's assumptions (both signs
over the points for a symbol of no assumed sign), integer dimensions that fit together, symmetric positive
definite matrices, finite sums written out; and the point as text for a failure's report."""

from __future__ import annotations

import random
from decimal import Decimal

import sympy
from sympy.matrices.exceptions import ShapeError

from .expressions import dimensions, is_matrix, names_text, symbols_of


POINTS = 5
"""Random points of a numeric check."""


QUADRATURE_POINTS = 3
"""Random points of a numeric check whose sides hold Gaussian expectations (each a quadrature at every point)."""


REDRAWS = 20
"""Points drawn again, per point, when a side is not finite or not real there."""


def sign_plan(a, b, rng: random.Random, points: int = POINTS) -> list[dict]:
    """For each point, the sign of each real symbol whose sign is not assumed: every such symbol is positive at
    some points and negative at others (an identity true for one sign only, √(x²) = x, cannot pass by luck)."""
    free = sorted((s for s in symbols_of(a) | symbols_of(b) if isinstance(s, sympy.Symbol) and not s.is_integer
                   and s.is_positive is None and s.is_negative is None and s.is_zero is None), key=str)
    plan = [{} for _ in range(points)]
    for symbol in free:
        signs = [(-1) ** k for k in range(points)]
        rng.shuffle(signs)
        for point, sign in zip(plan, signs):
            point[symbol] = sign
    return plan


def draw_scalars(a, b, rng: random.Random, signs: dict) -> dict:
    """A random admissible value for each symbol of ``a`` and ``b`` (by its assumptions, with ``signs``)."""
    symbols = sorted(symbols_of(a) | symbols_of(b), key=str)
    return {s: _integer_value(s, rng) if s.is_integer else _real_value(s, rng, signs.get(s)) for s in symbols}


def draw_point(a, b, rng: random.Random, signs: dict):
    """A random admissible point for the symbols, matrices and indexed entries of ``a`` and ``b`` (see the module
    docstring), as the four substitutions `_explicit` makes; a string if some symbol cannot be given a
    value."""
    both = sympy.Tuple(a, b)
    counting = sorted(_counting_symbols(both), key=str)
    for attempt in range(2 * REDRAWS):  # matrix dimensions must fit together (D_1 = H·D_2): draw until they do
        if attempt < REDRAWS:
            integers = {s: _integer_value(s, rng, counting=True) for s in counting}
        else:  # the same dimension everywhere (1 at last: every product of 1×1 matrices fits)
            integers = dict.fromkeys(counting, sympy.Integer(max(1, 3 - (attempt - REDRAWS) // 4)))
        try:
            fixed = sums_done(both.xreplace(integers))
            break
        except ShapeError:
            continue
    else:
        return f"no matrix dimensions for {names_text(counting)} that fit together"
    integers.update({s: _integer_value(s, rng) for s in sorted(_scalar_symbols(fixed), key=str) if s.is_integer})
    fixed = fixed.xreplace(integers)
    indexed = {e: _real_value(sympy.Symbol("entry", real=True), rng)
               for e in sorted(fixed.atoms(sympy.Indexed), key=str)}
    matrices = {}
    for m in sorted(fixed.atoms(sympy.MatrixSymbol), key=str):
        rows, cols = m.shape
        if not (rows.is_Integer and cols.is_Integer):
            return f"the matrix symbol {m.name} has a shape {m.shape} that is not made of integers"
        matrices[m] = _matrix_value(int(rows), int(cols), rng)
    scalars = {s: _real_value(s, rng, signs.get(s)) for s in sorted(_scalar_symbols(fixed.xreplace(indexed)), key=str)
               if not s.is_integer}
    return {"integers": integers, "indexed": indexed, "matrices": matrices, "scalars": scalars}


SUMMED_TERMS = 1000
"""A finite sum or product with at most this many terms is written out term by term at a point."""


def sums_done(expression):
    """Finite sums and products (of indexed entries, Kronecker deltas, …) written out term by term, each entry then
    getting its value; sums of more than `SUMMED_TERMS` terms are left to evalf."""

    def small(e):
        if not isinstance(e, (sympy.Sum, sympy.Product)):
            return False
        terms = 1
        for _, low, high in e.limits:
            if not (low.is_Integer and high.is_Integer):
                return False
            terms *= max(0, int(high - low) + 1)
        return terms <= SUMMED_TERMS

    return expression.replace(small, lambda e: e.doit())


def _scalar_symbols(expression) -> set:
    return {s for s in expression.free_symbols if isinstance(s, sympy.Symbol)}


def _counting_symbols(expression) -> set:
    """Symbols that count: matrix dimensions, and limits of sums and products."""
    found = dimensions(expression)
    for e in expression.atoms(sympy.Sum, sympy.Product):
        for _, low, high in e.limits:
            found |= low.free_symbols | high.free_symbols
    return {s for s in found if isinstance(s, sympy.Symbol)}


def _integer_value(symbol, rng: random.Random, counting: bool = False) -> sympy.Integer:
    if counting or symbol.is_positive:
        return sympy.Integer(rng.randint(1, 3))
    if symbol.is_nonnegative:
        return sympy.Integer(rng.randint(0, 3))
    if symbol.is_negative:
        return sympy.Integer(rng.randint(-3, -1))
    return sympy.Integer(rng.randint(-3, 3))


def _uniform(rng: random.Random, low: float, high: float) -> sympy.Rational:
    """An exact rational with six decimals, uniform in (low, high)."""
    return sympy.Rational(rng.randint(round(low * 10**6) + 1, round(high * 10**6) - 1), 10**6)


def _real_value(symbol, rng: random.Random, sign: int | None = None) -> sympy.Rational:
    """A value by the symbol's assumptions; ``sign`` (±1) for a symbol whose sign is not assumed."""
    if sign is not None and symbol.is_positive is None and symbol.is_negative is None:
        return sign * _uniform(rng, 0.0, 1.5)
    if symbol.is_positive:
        return _uniform(rng, 0.1, 2.5)
    if symbol.is_negative:
        return _uniform(rng, -2.5, -0.1)
    if symbol.is_nonnegative:
        return _uniform(rng, 0.0, 2.5)
    if symbol.is_nonpositive:
        return _uniform(rng, -2.5, 0.0)
    return _uniform(rng, -1.5, 1.5)


def _matrix_value(rows: int, cols: int, rng: random.Random) -> sympy.ImmutableMatrix:
    """Random rationals; a square matrix is made symmetric positive definite (G Gᵀ + I/2)."""
    entries = sympy.Matrix(rows, cols, lambda i, j: _uniform(rng, -1.0, 1.0))
    if rows == cols:
        entries = entries * entries.T + sympy.eye(rows) / 2
    return sympy.ImmutableMatrix(entries)


def point_text(point: dict) -> dict:
    """The point as name → value text (matrices as nested lists)."""
    if "integers" not in point:
        return {str(k): value_text(v) for k, v in point.items()}
    shown = {}
    for group in ("integers", "scalars", "indexed"):
        shown.update({str(k): value_text(v) for k, v in sorted(point[group].items(), key=lambda kv: str(kv[0]))})
    shown.update({str(k): value_text(v) for k, v in point["matrices"].items()})
    return shown


def value_text(value) -> str:
    """A value in 12 significant digits (an exact rational with few digits as it is)."""
    if is_matrix(value):
        return str([[value_text(v) for v in row] for row in value.tolist()])
    if isinstance(value, (sympy.Integer, int)):
        return str(value)
    if isinstance(value, sympy.Rational) and 10**6 % value.q == 0:  # a drawn value: its six decimals exactly
        return str(Decimal(value.p) / Decimal(value.q))
    return str(sympy.N(value, 12))
