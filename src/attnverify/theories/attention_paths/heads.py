"""Kernel–task alignment, head scores and theory pruning from an order parameter U (spec §2.4, §2.5)."""

from __future__ import annotations

import itertools
from typing import Iterable, Sequence

import numpy as np

from ...base import arguments
from ...numerics.kernel_predictor import factor, lifted_features, principal_components


def kernel_task_alignment(U, X, y, components: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues of K(U) (descending, no temperature) and overlaps |φ_kᵀ Y| / sqrt(P) of its unit
    eigenvectors with the labels (authors' ``PLOT_kernel_alignment.py``; the paper's "cosine
    similarity"), the first ``components`` of the P. From the features Φ = X(I ⊗ R), K = ΦΦᵀ, without forming C
    (`principal_components`)."""
    X = arguments.array("X", X, ndim=3)
    y = arguments.array("y", y, shape=(X.shape[0],))
    if components is not None:
        components = arguments.integer("components", components, 1)
    R = factor(U)
    if R.shape[0] != X.shape[2]:
        raise ValueError(f"U must be {X.shape[2]}×{X.shape[2]} to match the paths of X, got shape {R.shape}")
    eigenvalues, vectors = principal_components(features=lifted_features(X, R))
    overlaps = np.abs(vectors.T @ y) / np.sqrt(len(y))
    if components is not None:
        eigenvalues, overlaps = eigenvalues[:components], overlaps[:components]
    return eigenvalues, overlaps


def path_index(heads: Sequence[int]) -> list[tuple[int, ...]]:
    """The path (h_1, …, h_L) of each flat index π, row-major with h_1 slowest (0-based heads)."""
    return list(itertools.product(*(range(H) for H in arguments.integers("heads", heads, 1))))


def _check(U, heads: Sequence[int]) -> tuple[np.ndarray, tuple[int, ...]]:
    heads = arguments.integers("heads", heads, 1)
    paths = int(np.prod(heads))
    U = arguments.array("U", U, ndim=2)
    if U.shape != (paths, paths):
        raise ValueError(f"U must be {paths}×{paths} for heads = {tuple(heads)}, got shape {U.shape}")
    return U, heads


def head_scores(U, heads: Sequence[int]) -> dict[tuple[int, int], float]:
    """score(ℓ, h) = Σ_{ππ'} |U_{ππ'}| 1[π_ℓ = h or π'_ℓ = h], divided by the largest score
    (authors' ``compute_heads_score``). Keys are (layer, head), both 0-based."""
    U, heads = _check(U, heads)
    U = np.abs(U)
    largest = float(U.max())
    if largest == 0:
        raise ValueError("U is zero: no head has a score")
    U = U / largest  # the scores are ratios: scaling first keeps the sums finite for any finite U
    paths = path_index(heads)
    raw = {}
    for layer, H in enumerate(heads):
        through = np.array([p[layer] for p in paths])
        for h in range(H):
            mask = through == h
            raw[(layer, h)] = float(U[mask, :].sum() + U[:, mask].sum() - U[np.ix_(mask, mask)].sum())
    top = max(raw.values())
    return {key: value / top for key, value in raw.items()}


def _pruned(pruned, heads: tuple[int, ...]) -> list[tuple[int, int]]:
    """The pruned heads as (layer, head) pairs of ints inside ``heads``."""
    if isinstance(pruned, (str, bytes)) or not hasattr(pruned, "__iter__"):
        raise TypeError(f"pruned must be an iterable of (layer, head) pairs, got {pruned!r}")
    out = []
    for i, item in enumerate(pruned):
        if isinstance(item, (str, bytes)) or not hasattr(item, "__len__") or len(item) != 2:
            raise ValueError(f"pruned[{i}] must be a (layer, head) pair, got {item!r}")
        layer, h = arguments.integer(f"pruned[{i}] layer", item[0]), arguments.integer(f"pruned[{i}] head", item[1])
        if not (0 <= layer < len(heads) and 0 <= h < heads[layer]):
            raise ValueError(f"pruned head (layer, head) = {(layer, h)} is outside heads = {tuple(heads)}")
        out.append((layer, h))
    return out


def prune_heads(U, heads: Sequence[int], pruned: Iterable[tuple[int, int]]) -> np.ndarray:
    """U with every row and column of a path through a pruned head (layer, head) set to zero
    (the theory pruning of the authors' code)."""
    U, heads = _check(U, heads)
    U = U.copy()
    pruned = _pruned(pruned, heads)
    dead = [i for i, p in enumerate(path_index(heads)) if any(p[layer] == h for layer, h in pruned)]
    U[dead, :] = 0.0
    U[:, dead] = 0.0
    return U
