"""3. The GP limit: the minimiser of the entropy alone (§3).

Part of `attnverify.theories.attention_paths.derivations` (see its docstring for the spec and sources).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import sympy
from sympy import ImmutableMatrix, Symbol

from ....base import arguments
from ....theory_form.derived import DerivedFamily

from ._common import checked_heads, dimensions, sigma_a2, variance_symbol, variance_symbols
from .action import SymbolicAction, symbolic_action
from .saddle_equations import variable_derivatives, action_derivatives


def gp_order_parameter_scale(level: int, L: int) -> sympy.Expr:
    """σ_a² Π_{k=ℓ}^{L} σ_k²: U_ℓ = (this)·I at the GP point (§3); ``level`` = L + 1 gives U_a = σ_a²."""
    if int(L) != L or L < 1:
        raise ValueError(f"L must be an int ≥ 1, got {L!r}")
    if int(level) != level or not 1 <= level <= L + 1:
        raise ValueError(f"level must be an int in 1..L+1 = 1..{L + 1}, got {level!r}")
    return sympy.Mul(sigma_a2, *(variance_symbol(k) for k in range(int(level), int(L) + 1)))


def gp_point(sym: SymbolicAction) -> dict:
    """{u symbol: value} at U_a = σ_a², U_ℓ = σ_a² Π_{k≥ℓ} σ_k² I (symbolic in the variances)."""
    L = sym.depth
    point: dict = {sym.readout: gp_order_parameter_scale(L + 1, L)}
    for level, entries in enumerate(sym.entries, start=1):
        scale = gp_order_parameter_scale(level, L)
        point.update({s: (scale if i == j else sympy.S.Zero) for i, j, s in entries})
    return point


def gp_is_stationary(heads: Sequence[int]) -> bool:
    """Every partial of 𝓛 vanishes at the GP point, symbolically in n_ℓ and σ_ℓ² (§3)."""
    sym = symbolic_action(heads, 1)
    point = gp_point(sym)
    return all(sympy.cancel(d.xreplace(point)) == 0 for d in action_derivatives(sym, include_energy=False))


def entropy_hessian_at_gp(heads: Sequence[int], widths: Sequence | None = None, variances: Sequence | None = None) -> ImmutableMatrix:
    """∂²𝓛/∂v∂v' at the GP point over ``symbolic_action(heads, 1).variables``.

    ``widths`` (n_0..n_L) and ``variances`` (σ_1²..σ_L², σ_a²) are substituted when given (use
    exact rationals to keep it exact); otherwise the Hessian is symbolic in them.
    """
    heads = checked_heads(heads)
    sym = symbolic_action(heads, 1)
    numbers: dict = {}
    if widths is not None:
        numbers.update(_named_values("widths", sym.widths, widths))
    if variances is not None:
        numbers.update(_named_values("variances", sym.variances, variances))
    hessian = _gp_hessian(heads)
    return hessian.xreplace(numbers).applyfunc(sympy.cancel) if numbers else hessian


@lru_cache(maxsize=None)
def _gp_hessian(heads: tuple[int, ...]) -> ImmutableMatrix:
    sym = symbolic_action(heads, 1)
    point = gp_point(sym)
    first = variable_derivatives(heads, 1, False)
    return ImmutableMatrix([[sympy.cancel(sympy.diff(d, v).xreplace(point)) for v in sym.variables] for d in first])


def _named_values(name: str, symbols: Sequence[Symbol], values: Sequence) -> dict:
    values = tuple(values)
    if len(values) != len(symbols):
        raise ValueError(f"{name} must have {len(symbols)} entries ({', '.join(map(str, symbols))}), got {len(values)}")
    out = {}
    for s, v in zip(symbols, values):
        v = sympy.nsimplify(v) if not isinstance(v, sympy.Basic) else v
        if not (v.is_positive):
            raise ValueError(f"{name} must be positive, got {s} = {v}")
        out[s] = v
    return out


def is_positive_definite(matrix: sympy.MatrixBase) -> bool:
    """Exact test: symmetric with every pivot of the LDLᵀ factorisation > 0 (Sylvester)."""
    if matrix != matrix.T:
        return False
    _, D = matrix.LDLdecomposition(hermitian=False)
    return all(sympy.cancel(D[i, i]).is_positive for i in range(D.shape[0]))


def gp_hessian_is_positive_definite(heads: Sequence[int], widths: Sequence | None = None, variances: Sequence | None = None) -> bool:
    """The entropy's Hessian at the GP point is positive definite (so the GP point is a minimum).

    Symbolic widths/variances work where sympy can decide the sign of the pivots (small cases);
    give exact rational widths and variances for a decisive check elsewhere.
    """
    return is_positive_definite(entropy_hessian_at_gp(heads, widths, variances))


def prior_variances(prior_var, depth: int) -> tuple[float, ...]:
    """(σ_1², …, σ_L², σ_a²) from a scalar (all equal) or depth + 1 positive numbers."""
    return arguments.positives("prior_var", prior_var, depth + 1, "(σ_1², …, σ_L², σ_a²)")


GP_SCALES = DerivedFamily("attention_paths.gp_limit", "order_parameter_scales", lambda L: (
    [gp_order_parameter_scale(level, L) for level in range(1, L + 2)], variance_symbols(L)))
"""The GP point's scales (`gp_order_parameter_scale` of U_1, …, U_L, U_a) at depth L, functions of σ_1², …, σ_a²."""


def gp_order_parameters(heads: Sequence[int], prior_var=1.0, backend=None) -> tuple:
    """(U_1, …, U_L, U_a) at the GP point: U_ℓ = σ_a² Π_{k≥ℓ} σ_k² I_{D_ℓ}, U_a = σ_a² (§3).

    ``prior_var`` is a scalar (all variances equal) or (σ_1², …, σ_L², σ_a²). Arrays of the
    backend (numpy by default); U_a is 0-dimensional. Generated from `gp_order_parameter_scale`.
    """
    heads = checked_heads(heads)
    L = len(heads)
    variances = prior_variances(prior_var, L)
    f = GP_SCALES.at(L).array_function(backend=backend)
    scales = f(*variances)
    xp = f.xp
    dims = dimensions(heads)
    return tuple(scales[k] * xp.eye(dims[k]) for k in range(L)) + (scales[L],)
