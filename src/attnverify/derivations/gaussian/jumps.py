"""Where an integrand is not smooth in its variables: the points (lines) a quadrature must cut at so that its error
estimate holds (`.panels`), and the smooth branch it is between them (`branch_at`). A rule that
integrates a jump it does not straddle agrees with a finer rule that does not either, and both are wrong:
Heaviside(√2 b − s u) integrated over panels that miss its step gave a value wrong in the 4th digit with an error
estimate of 10⁻²⁷.
"""

from __future__ import annotations

import sympy

from .panels import QuadratureShort

NON_SMOOTH = (sympy.Heaviside, sympy.sign, sympy.Abs, sympy.Max, sympy.Min, sympy.Piecewise)
"""Functions with a jump or a kink where an argument (a difference of arguments, a condition's two sides) is 0."""
UNPLACED = (sympy.floor, sympy.ceiling, sympy.frac, sympy.Mod, sympy.DiracDelta)
"""Functions whose jumps are not cut at: a quadrature of them is not trusted."""


def _switches(f: sympy.Expr) -> list[sympy.Expr]:
    """The expressions whose zeros are where ``f`` (one of `NON_SMOOTH`) may jump or bend."""
    if isinstance(f, (sympy.Max, sympy.Min)):
        return [a - b for i, a in enumerate(f.args) for b in f.args[i + 1:]]
    if isinstance(f, sympy.Piecewise):
        conditions = [sympy.sympify(condition) for _, condition in f.args]
        unplaced = [c for c in conditions if not _relational(c)]
        if unplaced:  # Contains(y, Interval(0, 1)): its switches are not the zeros of a relation's sides
            raise QuadratureShort(f"its integrand switches where {unplaced[0]} changes, which is no relation the "
                                  "quadrature can cut at")
        return [r.lhs - r.rhs for condition in conditions for r in condition.atoms(sympy.Rel)]
    return [f.args[0]]


def _relational(condition) -> bool:
    """A condition built of relations (x < y, x ≥ 0) with And, Or and Not, or true/false."""
    if isinstance(condition, (sympy.Rel, sympy.logic.boolalg.BooleanAtom)):
        return True
    if isinstance(condition, (sympy.And, sympy.Or, sympy.Not)):
        return all(_relational(c) for c in condition.args)
    return False


def jump_lines(expression: sympy.Expr, variables) -> list[tuple[sympy.Expr, tuple]]:
    """(offset, slopes) of each line α + Σ βᵢxᵢ = 0 where ``expression`` may jump or bend in ``variables`` xᵢ, α and
    the βᵢ free of them; [] where it is smooth. Raises `QuadratureShort` where a switch is not affine in the
    variables or a function of `UNPLACED` depends on them: the lines cannot be placed, so no error estimate
    would hold."""
    variables = list(variables)
    named = ", ".join(map(str, variables))
    if any(f.has(*variables) for f in expression.atoms(*UNPLACED)):
        raise QuadratureShort(f"its integrand jumps in {named} where the quadrature cannot cut "
                              f"({', '.join(sorted({type(f).__name__ for f in expression.atoms(*UNPLACED)}))})")
    lines = []
    for f in expression.atoms(*NON_SMOOTH):
        for switch in _switches(f):
            switch = sympy.expand(switch)
            if not switch.has(*variables):
                continue
            slopes = tuple(switch.coeff(x) for x in variables)
            offset = sympy.expand(switch - sum(b * x for b, x in zip(slopes, variables)))
            if sympy.Tuple(offset, *slopes).has(*variables):
                raise QuadratureShort(f"its integrand jumps where {switch} = 0, not affine in {named}: the "
                                      "quadrature cannot cut there")
            lines.append((offset, slopes))
    return lines


def branch_at(expression: sympy.Expr, point: dict, digits: int) -> sympy.Expr:
    """``expression`` with each function of `NON_SMOOTH` replaced by the branch it takes at ``point`` (each
    switch evaluated there to ``digits`` digits): a smooth expression, equal to ``expression`` wherever every
    switch has the sign it has at ``point`` (none of them may vanish there)."""

    def at(e):
        return sympy.N(e.xreplace(point), digits)

    def branch(f):
        if isinstance(f, (sympy.Max, sympy.Min)):
            values = [at(a) for a in f.args]
            pick = max if isinstance(f, sympy.Max) else min
            return f.args[values.index(pick(values))]
        if isinstance(f, sympy.Piecewise):
            return next((e for e, condition in f.args if sympy.sympify(condition).xreplace(point) == sympy.true),
                        sympy.nan)  # no branch holds there: undefined
        positive = at(f.args[0]) > 0
        if isinstance(f, sympy.Heaviside):
            return sympy.S.One if positive else sympy.S.Zero
        if isinstance(f, sympy.sign):
            return sympy.S.One if positive else sympy.S.NegativeOne
        return f.args[0] if positive else -f.args[0]  # Abs

    return expression.replace(lambda e: isinstance(e, NON_SMOOTH), branch)


def is_smooth(expression: sympy.Expr, variables) -> bool:
    """Whether no function of `NON_SMOOTH` or `UNPLACED` in ``expression`` depends on ``variables``."""
    return not any(f.has(*variables) for f in expression.atoms(*NON_SMOOTH, *UNPLACED))
