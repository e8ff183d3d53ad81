"""Where an integrand is not smooth in its variable: the points a quadrature must cut at so that its error estimate
holds (:mod:`.panels`). A rule that integrates a jump it does not straddle agrees with a finer rule that does not
either, and both are wrong: Heaviside(√2 b − s u) integrated over panels that miss its step gave a value wrong in
the 4th digit with an error estimate of 10⁻²⁷.
"""

from __future__ import annotations

import sympy

from .panels import QuadratureShort

NON_SMOOTH = (sympy.Heaviside, sympy.sign, sympy.Abs, sympy.Max, sympy.Min, sympy.Piecewise)
"""Functions with a jump or a kink where an argument (a difference of arguments, a condition's two sides) is 0."""
UNPLACED = (sympy.floor, sympy.ceiling, sympy.frac, sympy.Mod, sympy.DiracDelta)
"""Functions whose jumps are not cut at: a quadrature of them is not trusted."""


def _switches(f: sympy.Expr) -> list[sympy.Expr]:
    """The expressions whose zeros are where ``f`` (one of :data:`NON_SMOOTH`) may jump or bend."""
    if isinstance(f, (sympy.Max, sympy.Min)):
        return [a - b for i, a in enumerate(f.args) for b in f.args[i + 1:]]
    if isinstance(f, sympy.Piecewise):
        return [r.lhs - r.rhs for _, condition in f.args for r in sympy.sympify(condition).atoms(sympy.Rel)]
    return [f.args[0]]


def jump_lines(expression: sympy.Expr, variable: sympy.Symbol) -> list[tuple[sympy.Expr, sympy.Expr]]:
    """(offset, slope) of each point α + βx = 0 where ``expression`` may jump or bend in ``variable`` x, α and β
    free of it; [] where it is smooth. Raises :class:`QuadratureShort` where a switch is not affine in x or a function
    of :data:`UNPLACED` depends on it: the points cannot be placed, so no error estimate would hold."""
    if any(f.has(variable) for f in expression.atoms(*UNPLACED)):
        raise QuadratureShort(f"its integrand jumps in {variable} where the quadrature cannot cut "
                              f"({', '.join(sorted({type(f).__name__ for f in expression.atoms(*UNPLACED)}))})")
    lines = []
    for f in expression.atoms(*NON_SMOOTH):
        for switch in _switches(f):
            switch = sympy.expand(switch)
            if not switch.has(variable):
                continue
            slope = switch.coeff(variable)
            offset = sympy.expand(switch - slope * variable)
            if slope.has(variable) or offset.has(variable):
                raise QuadratureShort(f"its integrand jumps where {switch} = 0, not affine in {variable}: the "
                                      "quadrature cannot cut there")
            lines.append((offset, slope))
    return lines


def is_smooth(expression: sympy.Expr, variables) -> bool:
    """Whether no function of :data:`NON_SMOOTH` or :data:`UNPLACED` in ``expression`` depends on ``variables``."""
    return not any(f.has(*variables) for f in expression.atoms(*NON_SMOOTH, *UNPLACED))
