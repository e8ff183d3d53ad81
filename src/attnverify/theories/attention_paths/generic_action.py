"""The attention-path action written as a saddle-point theory of one's own (:mod:`attnverify.saddle`): the proof
that the generic solver reaches the built-in one's order parameters (spec §2.1, in the convention S = ½E + 𝓛):

    𝓛 = ½ { n_L [U_a/σ_a² − ln U_a]
           + Σ_{ℓ=1}^{L} n_{ℓ−1} [ (1/σ_ℓ²) Tr(U_{ℓ+1}^{-1} Tr_{h_ℓ} U_ℓ) − ln det U_ℓ + H_ℓ ln det U_{ℓ+1} ] },

U_{L+1} ≡ U_a, every width n_ℓ = N, the kernel linear in U_1 (K = Σ_ππ' (U_1)_ππ' C_ππ'). The built-in solver
(:mod:`.saddle_point`) minimises twice this action with U_a profiled out and hand-written Hessians; this one is
declared in sympy and differentiated there.
"""

from __future__ import annotations

from typing import Sequence

import sympy

from ...base import arguments
from ...saddle import SaddlePointAction, positive, positive_definite


def _partial_trace(U: sympy.MatrixBase, heads_here: int) -> sympy.Matrix:
    """Tr_{h_ℓ} U_ℓ: the trace over the slow (head) index of U_ℓ, of size H_ℓ·D_{ℓ+1}."""
    rest = U.shape[0] // heads_here
    return sympy.Matrix(rest, rest, lambda a, b: sum(U[h * rest + a, h * rest + b] for h in range(heads_here)))


def attention_paths_action(heads: Sequence[int]) -> SaddlePointAction:
    """The action of the attention network with ``heads`` = (H_1, …, H_L): order parameters U_1, …, U_L
    (D_ℓ × D_ℓ, D_ℓ = Π_{k≥ℓ} H_k; a positive scalar where D_ℓ = 1) and U_a; parameters N (every width),
    sigma1…sigmaL (σ_ℓ²) and sigma_a (σ_a²)."""
    heads = arguments.integers("heads", heads, 1)
    L = len(heads)
    N = sympy.Symbol("N", positive=True)
    variances = [sympy.Symbol(f"sigma{level}", positive=True) for level in range(1, L + 1)]
    sigma_a = sympy.Symbol("sigma_a", positive=True)
    sizes = [int(sympy.prod(heads[level:])) for level in range(L)]
    names = [f"U{level}" for level in range(1, L + 1)]
    order = {name: positive(name) if D == 1 else positive_definite(name, D) for name, D in zip(names, sizes)}
    order["Ua"] = U_a = positive("Ua")
    as_matrix = [sympy.Matrix([[order[n]]]) if D == 1 else sympy.Matrix(order[n]) for n, D in zip(names, sizes)]
    as_matrix.append(sympy.Matrix([[U_a]]))
    entropy = N * (U_a / sigma_a - sympy.log(U_a))
    for level in range(L):
        U, upper = as_matrix[level], as_matrix[level + 1]
        traced = _partial_trace(U, heads[level])
        entropy += N * ((upper.inv() * traced).trace() / variances[level] - sympy.log(U.det())
                        + heads[level] * sympy.log(upper.det()))
    return SaddlePointAction(order_parameters=order, entropy=entropy / 2, kernel="U1", width=N)
