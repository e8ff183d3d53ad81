"""The independent entries u_k of a symmetric n × n matrix U, i ≤ j in numpy's triu order (the order of a declared
order parameter's symbols): their indices, the basis ∂U/∂u_k = E_ij + E_ji (E_ii on the diagonal), and the weights
that carry a gradient between the matrix and its entries. For a function f of a symmetric U with matrix gradient
M = ∂f/∂U (symmetric), df = Σ_ab M_ab dU_ab = Σ_k w_k M_ij du_k with w = 1 on the diagonal and 2 off it, so
∂f/∂u_k = w_k M_ij (`entry_gradient`); back from the entries, G = g_k·(1, ½) (`gradient_matrix`) satisfies
tr(G dU) = Σ_k g_k du_k. The index arrays and weights are computed once per size and read-only.
"""

from __future__ import annotations

import functools

import numpy as np


@functools.lru_cache(maxsize=None)
def triangle(n: int, upper: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of numpy's triu (or tril) order for an n × n matrix."""
    rows, cols = np.triu_indices(n) if upper else np.tril_indices(n)
    rows.flags.writeable = cols.flags.writeable = False
    return rows, cols


@functools.lru_cache(maxsize=None)
def entry_weights(n: int) -> np.ndarray:
    """w_k over the triu entries: 1 on the diagonal, 2 off it (an off-diagonal entry stands for two of U's)."""
    rows, cols = triangle(n)
    weights = np.where(rows == cols, 1.0, 2.0)
    weights.flags.writeable = False
    return weights


def entry_gradient(matrices: np.ndarray) -> np.ndarray:
    """∂f/∂u_k = w_k M_ij per entry i ≤ j, for a batch of symmetric matrix gradients M (…, n, n) (the module doc)."""
    n = matrices.shape[-1]
    rows, cols = triangle(n)
    return matrices[..., rows, cols] * entry_weights(n)


def gradient_matrix(g: np.ndarray, n: int) -> np.ndarray:
    """G (…, n, n), the symmetric matrix of a gradient g (…, n(n+1)/2) over the entries: g_k on the diagonal, g_k/2
    off it, so that tr(G dU) = Σ_k g_k du_k for every symmetric dU."""
    rows, cols = triangle(n)
    G = np.zeros(g.shape[:-1] + (n, n))
    G[..., rows, cols] = g / entry_weights(n)
    G[..., cols, rows] = G[..., rows, cols]
    return G


def symmetric_basis(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, cols, basis) with basis[k] = ∂U/∂u_k = E_ij + E_ji (E_ii on the diagonal), so that
    dU = Σ_k du_k basis[k]."""
    rows, cols = triangle(n)
    basis = np.zeros((rows.size, n, n))
    k = np.arange(rows.size)
    basis[k, rows, cols] = 1.0
    basis[k, cols, rows] = 1.0
    return rows, cols, basis
