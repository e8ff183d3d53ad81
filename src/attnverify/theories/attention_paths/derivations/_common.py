"""Symbols, sizes and small helpers shared by the attention-path derivations.

Part of `attnverify.theories.attention_paths.derivations` (see its docstring for the spec and sources).
"""

from __future__ import annotations

from typing import Sequence

import sympy
from sympy import ImmutableMatrix, Symbol

from ....base import arguments


from ..theory import SOURCE  # noqa: F401  (re-exported: the source every derivation cites)

T = Symbol("T", positive=True)
U_a = Symbol("U_a", positive=True)
sigma_a2 = Symbol("sigma_a^2", positive=True)
temperature_symbol, readout_symbol = T, U_a


def width_symbol(level: int) -> Symbol:
    """n_ℓ, the width after layer ℓ (n_0: after the input projection V^(0))."""
    return Symbol(f"n_{level}", positive=True)


def variance_symbol(level: int) -> Symbol:
    """σ_ℓ², the prior variance of V^(ℓ) (ℓ = 1..L)."""
    return Symbol(f"sigma_{level}^2", positive=True)


def variance_symbols(depth: int) -> tuple[Symbol, ...]:
    """(σ_1², …, σ_L², σ_a²), in the order of ``ActionConfig.variances``."""
    return tuple(variance_symbol(level) for level in range(1, depth + 1)) + (sigma_a2,)


def width_symbols(depth: int) -> tuple[Symbol, ...]:
    """(n_0, …, n_L)."""
    return tuple(width_symbol(level) for level in range(depth + 1))


def checked_heads(heads: Sequence[int]) -> tuple[int, ...]:
    """(H_1, …, H_L), each an integer ≥ 1 (``2.7`` is refused, not truncated)."""
    return arguments.integers("heads", heads, 1)



def dimensions(heads: Sequence[int]) -> tuple[int, ...]:
    """(D_1, …, D_L, D_{L+1} = 1), D_ℓ = Π_{k≥ℓ} H_k: the sizes of U_1, …, U_L, U_a."""
    heads = checked_heads(heads)
    dims = [1]
    for h in reversed(heads):
        dims.append(dims[-1] * h)
    return tuple(reversed(dims))


def partial_trace(matrix: sympy.MatrixBase, heads: int) -> ImmutableMatrix:
    """Tr_h over the SLOW index: (Tr_h U)_{ij} = Σ_{h} U_{(h,i),(h,j)}, flat index h·D + i (§2.1)."""
    size = matrix.shape[0]
    if size % heads:
        raise ValueError(f"a {size}×{size} matrix has no slow index of size heads={heads}")
    d = size // heads
    return ImmutableMatrix(d, d, lambda i, j: sum(matrix[h * d + i, h * d + j] for h in range(heads)))


def kron_identity(heads: int, matrix: sympy.MatrixBase) -> ImmutableMatrix:
    """I_H ⊗ B with the identity's index slow: block-diagonal with H copies of B."""
    return ImmutableMatrix(sympy.diag(*([matrix] * heads)))
