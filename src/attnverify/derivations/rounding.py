"""The size of the terms an expression is made of: the scale of its float64 round-off.

A float64 evaluation of an expression errs by a few ulps of its *terms*, not of its value: where terms
cancel (sin θ + (π − θ)cos θ at θ = π, (1 + x) − 1 at small x) the value is far below the error. First-order
running error analysis (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.3) bounds the error by
γ·M(e), where M replaces every sum by the sum of its terms' sizes and propagates each input's rounding
through the functions it passes:

    M(number) = |number|,  M(x) = |x|,  M(a + b) = M(a) + M(b),  M(a·b) = M(a)·M(b),
    M(aⁿ) = |a|ⁿ·(M(a)/|a|)^|n|  (n a number),  M(f(u₁, …)) = |f| + Σᵢ |∂f/∂uᵢ|·M(uᵢ).

[`rounding_scale`][attnverify.derivations.codegen.rounding_scale] turns M(e) into a generated evaluator, whose value
is the ``scale=`` that [`within_error`][attnverify.checks.comparisons.within_error], ``close`` and ``at_most`` take for
their round-off floor; a generated evaluator's results carry it by themselves (`.rounded`).

M also counts how a function amplifies the rounding of its inputs (|f′(u)|·M(u)), which belongs in a round-off
floor but not in the size a relative error is measured against. The *term size* T(e) is M without that part:
T(f(u)) = |f(u)| and T(aᵖ) = |aᵖ| for an exponent that is not a number, so T = |e| unless a sum in it cancels
(T of sin θ + (π − θ)cos θ is |sin θ| + (π + |θ|)|cos θ|; of e^{β²/2}, e^{β²/2} itself, where M is
(1 + β²/2)e^{β²/2}).
[`term_size`][attnverify.derivations.codegen.term_size] generates it.
"""

from __future__ import annotations

import sympy


def magnitude(expression: sympy.Expr, inputs: bool = True) -> sympy.Expr:
    """M(e) of the module docstring: the size of the terms ``expression`` is made of (≥ |e|); with ``inputs=False``
    the term size T(e), without the functions' amplification of their inputs' rounding (|e| ≤ T ≤ M)."""
    e = sympy.sympify(expression)
    if isinstance(e, sympy.Eq):
        return magnitude(e.lhs, inputs) + magnitude(e.rhs, inputs)
    if e.is_Number or e.is_NumberSymbol or e.is_Symbol:
        return sympy.Abs(e)
    if e.is_Add:
        return sympy.Add(*(magnitude(term, inputs) for term in e.args))
    if e.is_Mul:
        return sympy.Mul(*(magnitude(factor, inputs) for factor in e.args))
    if e.is_Pow:
        base, exponent = e.args
        if exponent.is_Number:
            return sympy.Abs(base) ** exponent * (magnitude(base, inputs) / sympy.Abs(base)) ** sympy.Abs(exponent)
        if not inputs:
            return sympy.Abs(e)
        return sympy.Abs(e) * (1 + sympy.Abs(exponent) * magnitude(base) / sympy.Abs(base)
                               + sympy.Abs(sympy.log(sympy.Abs(base))) * magnitude(exponent))
    if isinstance(e, sympy.Abs):
        return magnitude(e.args[0], inputs)
    if isinstance(e, sympy.Function) or e.is_Function:
        if not inputs:
            return sympy.Abs(e)
        return sympy.Abs(e) + sympy.Add(*(sympy.Abs(_partial(e, i)) * magnitude(u) for i, u in enumerate(e.args)
                                          if not u.is_Number))
    raise NotImplementedError(f"no rounding magnitude for {type(e).__name__}: {e}")


def _partial(e: sympy.Expr, index: int) -> sympy.Expr:
    """∂f/∂(argument ``index``) of f(u_1, …) at its arguments (which may be expressions, as in erfc(σ/√2))."""
    slot = sympy.Dummy("u")
    arguments = list(e.args)
    arguments[index] = slot
    return sympy.diff(e.func(*arguments), slot).subs(slot, e.args[index])
