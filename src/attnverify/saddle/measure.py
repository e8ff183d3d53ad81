"""The measure a declared action's e^{−S} is a density against: one log-density term per order parameter.

The saddle point reads only S, whose O(N) part fixes the minimum; the posterior mean beyond it (the O(1/N) term of
the Laplace expansion, or the integral itself) also needs the O(1) density of the order parameters that S leaves
out. For the engine's entropies, the large-deviation functions of a Gaussian weight's squared norm
(`priors`), that density is the Wishart's: U = Σ_i a_i a_iᵀ over n i.i.d. N(0, V/n) vectors
in d dimensions has the exact density

    p(U) ∝ det(U)^{(n − d − 1)/2} exp(−(n/2) tr(V⁻¹U)) = e^{−𝓛(U)} · det(U)^{−(d+1)/2}

(Wishart 1928; Anderson, An Introduction to Multivariate Statistical Analysis, §7.2) with 𝓛 = (n/2)[tr(V⁻¹U) −
ln det U] + const: e^{−𝓛} against the measure dμ(U) = det(U)^{−(d+1)/2} dU, which for a scalar Q (d = 1, χ²) is
dQ/Q. That holds for every entropy whose −ln det U term carries the Wishart's n/2, built by
[`wishart_entropy`][attnverify.saddle.wishart_entropy] or by hand (``examples/relu_saddle.py``,
``examples/deep_linear_saddle.py``, the attention-path action, where each U_ℓ given U_{ℓ+1} is Wishart with n_{ℓ−1}
degrees of freedom and the H_ℓ ln det U_{ℓ+1} term is the normalisation of that conditional density). It is therefore
the default; a theory whose entropy comes from another prior states its own.

A measure is written as its log-density m(u) in the order parameter's independent entries, dμ = e^{m(u)} du:
``"wishart"`` (−ln Q for a scalar, −(d+1)/2 · ln det U for a d × d matrix), ``"flat"`` (0: du), or a sympy
expression in that order parameter's entries alone (``-sympy.log(Q)``, ``-2 * log_det(U)``): it is the O(1) part of
the density, so it may depend neither on another order parameter nor on the width or the other parameters.
"""

from __future__ import annotations

from typing import Mapping

import sympy

from .matrix_functions import log_det

NAMED = ("wishart", "flat")


def named_term(op, name: str) -> sympy.Expr:
    """The log-density of a named measure for one order parameter (module docstring)."""
    if name == "flat":
        return sympy.S.Zero
    if op.size == 0:
        return -sympy.log(op.symbols[0])
    matrix = sympy.ImmutableMatrix(op.size, op.size, lambda i, j: op.symbols[_triu_position(op.size, i, j)])
    return -sympy.Rational(op.size + 1, 2) * log_det(matrix)


def _triu_position(n: int, i: int, j: int) -> int:
    """The position of entry (min(i, j), max(i, j)) in numpy's triu order of an n × n matrix."""
    i, j = min(i, j), max(i, j)
    return i * n - i * (i - 1) // 2 + (j - i)


def measure_terms(measure, order_parameters: tuple) -> dict[str, sympy.Expr]:
    """name → log-density term m_name(u) for ``measure``: a name of `NAMED` for every order parameter, or a
    mapping naming each order parameter once, to a name of `NAMED` or a sympy expression in its own entries.
    ValueError or TypeError, in one line naming ``measure``, for anything else."""
    names = [op.name for op in order_parameters]
    if isinstance(measure, str):
        if measure not in NAMED:
            raise ValueError(f"measure must be one of {', '.join(map(repr, NAMED))} or a dict of order parameter → "
                             f"log-density term, got {measure!r}")
        return {op.name: named_term(op, measure) for op in order_parameters}
    if not isinstance(measure, Mapping):
        raise TypeError(f"measure must be one of {', '.join(map(repr, NAMED))} or a dict of order parameter → "
                        f"log-density term, got {type(measure).__name__}")
    missing = [n for n in names if n not in measure]
    unknown = [str(k) for k in measure if k not in names]
    if missing or unknown:
        raise ValueError(f"measure must name each order parameter ({', '.join(names)}) once; "
                         + "; ".join(filter(None, [missing and f"missing {', '.join(missing)}",
                                                   unknown and f"unknown {', '.join(unknown)}"])))
    return {op.name: _term(op, measure[op.name]) for op in order_parameters}


def _term(op, value) -> sympy.Expr:
    if isinstance(value, str):
        if value not in NAMED:
            raise ValueError(f"measure[{op.name!r}] must be one of {', '.join(map(repr, NAMED))} or a sympy "
                             f"expression, got {value!r}")
        return named_term(op, value)
    try:
        term = sympy.sympify(value)
    except (sympy.SympifyError, TypeError):
        raise TypeError(f"measure[{op.name!r}] must be a sympy expression (the log-density), got {value!r}") from None
    if not isinstance(term, sympy.Expr) or term.is_Matrix:
        raise TypeError(f"measure[{op.name!r}] must be a scalar sympy expression (the log-density), got "
                        f"{type(term).__name__}")
    stray = sorted(str(s) for s in term.free_symbols - set(op.symbols))
    if stray:
        raise ValueError(f"measure[{op.name!r}] must be a log-density in {op.name}'s own entries (the O(1) part of "
                         f"its density: no width, parameter or other order parameter), got one in {', '.join(stray)}")
    return term
