"""Exact second derivatives of the attention-path action S = E(U_1) + 𝓛(U_a, U_L, …, U_1).

Three layers of the same object, each exact (no finite differences):

* :func:`order_parameter_hessian`: ∂²S/∂u∂u' in the independent entries u = (U_ℓ)_{ij}, i ≤ j, of every
  U_ℓ, then U_a — the coordinates of ``derivations.attention_paths.symbolic_action``, so that it can be
  compared with sympy's second derivatives exactly. The energy block is
  ``energy.hessian`` (−Tr(A C A C) + label terms, spec §2.2 differentiated once more); the entropy blocks
  differentiate the §2.2 gradients with dU^{-1} = −U^{-1} dU U^{-1}.
* :func:`profiled_hessian`: U_a profiled out (U_a = U_a*(Tr U_L) solves ∂S/∂U_a = 0), i.e. the Schur
  complement H_UU − h h ᵀ / H_aa with h = ∂²S/∂U∂U_a (implicit-function theorem).
* :func:`cholesky_hessian`: the same in the solver's coordinates θ (U_ℓ = R_ℓ R_ℓᵀ, log-diagonal), by the
  chain rule  ∂²S/∂θ_i∂θ_j = J_iᵀ H J_j + Σ_ab G_ab ∂²U_ab/∂θ_i∂θ_j, G = ∂S/∂U.

At a stationary point the second term vanishes (G = 0), so the inertia in θ and in U agree: either
decides whether the saddle point is a minimum.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy.linalg import cho_solve

from ...numerics.kernel_energy import entry_gradient, symmetric_basis
from .entropy import ActionConfig, partial_trace


def _kron_identity(heads: int, blocks: np.ndarray) -> np.ndarray:
    """I_heads ⊗ B for a batch of B (k, d, d) → (k, heads·d, heads·d) (slow index = the head)."""
    k, d, _ = blocks.shape
    out = np.zeros((k, heads, d, heads, d))
    for h in range(heads):
        out[:, h, :, h, :] = blocks
    return out.reshape(k, heads * d, heads * d)


def entropy_hessian(config: ActionConfig, factors: Sequence[np.ndarray], U_a: float) -> np.ndarray:
    """∂²𝓛/∂u∂u' over (entries of U_1, …, U_L, U_a), U_ℓ = R_ℓ R_ℓᵀ, U_a as given (not profiled).

    With V_ℓ = U_ℓ (ℓ ≤ L), V_{L+1} = U_a and B_ℓ = Tr_{h_ℓ} U_ℓ, the gradients of §2.2 are
        ∂𝓛/∂V_ℓ = n_{ℓ−1}[(I ⊗ V_{ℓ+1}^{-1})/σ_ℓ² − V_ℓ^{-1}] + n_{ℓ−2}[H_{ℓ−1} V_ℓ^{-1} − V_ℓ^{-1} B_{ℓ−1} V_ℓ^{-1}/σ_{ℓ−1}²]
    (the first bracket's Kronecker term is the constant n_L/σ_a² at ℓ = L + 1), and a direction dV_m
    moves the gradients of levels m − 1, m and m + 1.
    """
    n, s2, H, L = config.widths, config.variances, config.heads, config.depth
    V = [R @ R.T for R in factors] + [np.array([[U_a]])]
    inverses = [cho_solve((R, True), np.eye(R.shape[0])) for R in factors] + [np.array([[1.0 / U_a]])]
    traced = [partial_trace(V[level - 1], H[level - 1]) for level in range(1, L + 1)]  # B_1 … B_L
    layout = [symmetric_basis(v.shape[0]) for v in V]
    offsets = np.concatenate([[0], np.cumsum([rows.size for rows, _, _ in layout])])
    hessian = np.zeros((offsets[-1], offsets[-1]))
    for m in range(1, L + 2):  # direction in V_m
        basis = layout[m - 1][2]
        inverse = inverses[m - 1]
        d_inverse = -inverse @ basis @ inverse
        moved = {m: -n[m - 1] * d_inverse}
        if m >= 2:
            B = traced[m - 2]
            moved[m] = moved[m] + n[m - 2] * (H[m - 2] * d_inverse
                                              - (d_inverse @ B @ inverse + inverse @ B @ d_inverse) / s2[m - 2])
            moved[m - 1] = n[m - 2] * _kron_identity(H[m - 2], d_inverse) / s2[m - 2]
        if m <= L:
            d_traced = partial_trace(basis, H[m - 1])
            above = inverses[m]
            moved[m + 1] = -n[m - 1] * (above @ d_traced @ above) / s2[m - 1]
        columns = slice(offsets[m - 1], offsets[m])
        for level, d_gradient in moved.items():
            rows, cols, _ = layout[level - 1]
            hessian[offsets[level - 1]:offsets[level], columns] += entry_gradient(d_gradient, rows, cols).T
    return 0.5 * (hessian + hessian.T)


def energy_block(energy_tensor: np.ndarray) -> np.ndarray:
    """The energy's ∂²E/∂u∂u' over the entries of U_1 from its tensor ∂²E/∂U_ab∂U_cd (symmetrised)."""
    rows, cols = np.triu_indices(energy_tensor.shape[0])
    weight = np.where(rows == cols, 1.0, 2.0)
    return energy_tensor[rows, cols][:, rows, cols] * np.outer(weight, weight)


def order_parameter_hessian(config: ActionConfig, energy, factors: Sequence[np.ndarray], U_a: float) -> np.ndarray:
    """∂²S/∂u∂u' over (entries of U_1, …, U_L, U_a) at U_ℓ = R_ℓ R_ℓᵀ and the given U_a (see module doc)."""
    hessian = entropy_hessian(config, factors, U_a)
    block = energy_block(energy.hessian(factors[0]))
    hessian[:block.shape[0], :block.shape[0]] += block
    return hessian


def profiled_hessian(hessian: np.ndarray) -> np.ndarray:
    """U_a profiled out: H_UU − h hᵀ/H_aa (U_a last), the Hessian of S(U, U_a*(U)) where ∂S/∂U_a = 0."""
    h = hessian[:-1, -1]
    return hessian[:-1, :-1] - np.outer(h, h) / hessian[-1, -1]


def _cholesky_directions(R: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(dU/dθ_i for the θ entries of R (lower, log-diagonal), scale s_i, row p_i, column q_i):
    dU_i = s_i (e_p e_qᵀ Rᵀ + R e_q e_pᵀ), s_i = R_pp on the diagonal (θ = ln R_pp), else 1."""
    size = R.shape[0]
    rows, cols = np.tril_indices(size)
    scale = np.where(rows == cols, np.diag(R)[rows], 1.0)
    E = np.zeros((rows.size, size, size))
    E[np.arange(rows.size), rows, cols] = scale
    dU = E @ R.T
    return dU + dU.transpose(0, 2, 1), scale, rows, cols


def cholesky_hessian(profiled: np.ndarray, factors: Sequence[np.ndarray], gradients: Sequence[np.ndarray]) -> np.ndarray:
    """∂²S/∂θ∂θ from the profiled Hessian over the entries of (U_1, …, U_L) and the gradients G_ℓ = ∂S/∂U_ℓ.

    Σ_ab G_ab ∂²U_ab/∂θ_i∂θ_j = 2 s_i s_j δ(q_i, q_j) G_{p_i p_j}  (+ ∂S/∂θ_i when i = j is a diagonal
    entry, from d(e^θ)/dθ = e^θ), within one layer.
    """
    blocks, second = [], []
    for R, G in zip(factors, gradients):
        dU, scale, rows, cols = _cholesky_directions(R)
        urows, ucols = np.triu_indices(R.shape[0])
        blocks.append(dU[:, urows, ucols].T)  # (entries, θ) Jacobian of this layer
        term = 2.0 * np.outer(scale, scale) * (cols[:, None] == cols[None, :]) * G[rows[:, None], rows[None, :]]
        gradient = 2.0 * scale * (G @ R)[rows, cols]
        term[np.diag_indices_from(term)] += np.where(rows == cols, gradient, 0.0)
        second.append(term)
    J = np.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)))
    i = j = 0
    for b in blocks:
        J[i:i + b.shape[0], j:j + b.shape[1]] = b
        i, j = i + b.shape[0], j + b.shape[1]
    hessian = J.T @ profiled @ J
    j = 0
    for term in second:
        hessian[j:j + term.shape[0], j:j + term.shape[0]] += term
        j += term.shape[0]
    return 0.5 * (hessian + hessian.T)
