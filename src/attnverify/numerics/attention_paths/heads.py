"""Kernel–task alignment, head scores and theory pruning from an order parameter U (spec §2.4, §2.5)."""

from __future__ import annotations

import itertools
from typing import Iterable, Sequence

import numpy as np

from .predictor import factor


def kernel_task_alignment(U, X, y, components: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues of K(U) (descending, no temperature) and overlaps |φ_kᵀ Y| / sqrt(P) of its unit
    eigenvectors with the labels (authors' ``PLOT_kernel_alignment.py``; the paper's "cosine
    similarity"). Computed from the thin SVD of Φ = X(I ⊗ R), K = ΦΦᵀ, without forming C."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    Phi = (X @ factor(U)).reshape(X.shape[0], -1)
    left, singular, _ = np.linalg.svd(Phi, full_matrices=False)
    eigenvalues = singular**2
    overlaps = np.abs(left.T @ y) / np.sqrt(len(y))
    if components is not None:
        if not (isinstance(components, int) and components >= 1):
            raise ValueError(f"components must be an int ≥ 1, got {components!r}")
        eigenvalues, overlaps = eigenvalues[:components], overlaps[:components]
    return eigenvalues, overlaps


def path_index(heads: Sequence[int]) -> list[tuple[int, ...]]:
    """The path (h_1, …, h_L) of each flat index π, row-major with h_1 slowest (0-based heads)."""
    return list(itertools.product(*(range(H) for H in heads)))


def _check(U, heads: Sequence[int]) -> np.ndarray:
    U = np.asarray(U, dtype=float)
    paths = int(np.prod(heads))
    if U.shape != (paths, paths):
        raise ValueError(f"U must be {paths}×{paths} for heads = {tuple(heads)}, got shape {U.shape}")
    return U


def head_scores(U, heads: Sequence[int]) -> dict[tuple[int, int], float]:
    """score(ℓ, h) = Σ_{ππ'} |U_{ππ'}| 1[π_ℓ = h or π'_ℓ = h], divided by the largest score
    (authors' ``compute_heads_score``). Keys are (layer, head), both 0-based."""
    U = np.abs(_check(U, heads))
    paths = path_index(heads)
    raw = {}
    for layer, H in enumerate(heads):
        through = np.array([p[layer] for p in paths])
        for h in range(H):
            mask = through == h
            raw[(layer, h)] = float(U[mask, :].sum() + U[:, mask].sum() - U[np.ix_(mask, mask)].sum())
    top = max(raw.values())
    if top <= 0:
        raise ValueError("U is zero: no head has a score")
    return {key: value / top for key, value in raw.items()}


def prune_heads(U, heads: Sequence[int], pruned: Iterable[tuple[int, int]]) -> np.ndarray:
    """U with every row and column of a path through a pruned head (layer, head) set to zero
    (the theory pruning of the authors' code)."""
    U = _check(U, heads).copy()
    pruned = list(pruned)
    for layer, h in pruned:
        if not (0 <= layer < len(heads) and 0 <= h < heads[layer]):
            raise ValueError(f"pruned head (layer, head) = {(layer, h)} is outside heads = {tuple(heads)}")
    dead = [i for i, p in enumerate(path_index(heads)) if any(p[layer] == h for layer, h in pruned)]
    U[dead, :] = 0.0
    U[:, dead] = 0.0
    return U
