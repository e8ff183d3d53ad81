"""Predictor statistics (kernel space = feature space = the textbook GP formulas), alignment,
head scores and pruning."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from theories.attention_paths.problems import random_factor, random_features

from attnverify.theories.attention_paths import head_scores, kernel_task_alignment, predictor_statistics, prune_heads
from seeds import seeded


def textbook(U, X, y, Xt, T):
    K = np.einsum("ab,pia,qib->pq", U, X, X)
    k = np.einsum("ab,pia,qib->pq", U, X, Xt)
    kxx = np.einsum("ab,qia,qib->q", U, Xt, Xt)
    G = K + T * np.eye(len(y))
    return k.T @ np.linalg.solve(G, y), kxx - np.sum(k * np.linalg.solve(G, k), axis=0)


@pytest.mark.parametrize("space", ["kernel", "feature"])
def test_predictor_matches_the_textbook_formulas(space):
    X, y = random_features(80, 3, 4, seed=seeded(1))
    Xt, yt = random_features(30, 3, 4, seed=seeded(2))
    R = random_factor(4, np.random.default_rng(seeded(0)))
    stats = predictor_statistics(R @ R.T, X, y, Xt, 0.05, space=space)
    mean, variance = textbook(R @ R.T, X, y, Xt, 0.05)
    assert_allclose(stats.mean, mean, rtol=1e-9, atol=1e-12)
    assert_allclose(stats.variance, variance, rtol=1e-7, atol=1e-12)
    accuracy = stats.accuracy(yt)
    assert accuracy.mean == np.mean(np.sign(mean) == yt)


def test_pruned_order_parameter_is_singular_but_usable():
    X, y = random_features(60, 3, 4, seed=seeded(3))
    R = random_factor(4, np.random.default_rng(seeded(1)))
    pruned = prune_heads(R @ R.T, (2, 2), [(0, 1)])  # paths (1, 0), (1, 1) → flat 2, 3
    assert np.all(pruned[2:, :] == 0) and np.all(pruned[:, 2:] == 0)
    assert_allclose(pruned[:2, :2], (R @ R.T)[:2, :2])
    stats = predictor_statistics(pruned, X, y, X[:10], 0.1)
    mean, _ = textbook(pruned, X, y, X[:10], 0.1)
    assert_allclose(stats.mean, mean, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="outside heads"):
        prune_heads(R @ R.T, (2, 2), [(2, 0)])


def test_head_scores_count_every_entry_touching_the_head_once():
    heads = (2, 3)
    U = np.random.default_rng(seeded(5)).normal(size=(6, 6))
    U = U + U.T
    scores = head_scores(U, heads)
    raw = {}
    for layer, H in enumerate(heads):
        for h in range(H):
            total = 0.0
            for i, p in enumerate(np.ndindex(*heads)):
                for j, q in enumerate(np.ndindex(*heads)):
                    if p[layer] == h or q[layer] == h:
                        total += abs(U[i, j])
            raw[(layer, h)] = total
    top = max(raw.values())
    assert scores == pytest.approx({k: v / top for k, v in raw.items()}, rel=1e-12)


def test_alignment_is_the_eigendecomposition_of_the_kernel():
    X, y = random_features(40, 3, 2, seed=seeded(4))
    U = np.array([[1.0, 0.3], [0.3, 0.5]])
    values, overlaps = kernel_task_alignment(U, X, y)
    K = np.einsum("ab,pia,qib->pq", U, X, X)
    expected_values, vectors = np.linalg.eigh(K)
    order = np.argsort(expected_values)[::-1]
    assert values.shape == (40,)  # all P, those beyond Φ's rank 6 zero
    assert_allclose(values, expected_values[order], rtol=1e-9, atol=1e-12 * values[0])
    # each of the 6 leading components' overlap; in the null space of K only their total is defined
    assert_allclose(overlaps[:6], np.abs(vectors[:, order[:6]].T @ y) / np.sqrt(40), rtol=1e-8, atol=1e-10)
    null = vectors[:, order[6:]]
    assert np.sum(overlaps[6:] ** 2) == pytest.approx(np.sum((null.T @ y) ** 2) / 40, rel=1e-10)
    # the overlaps of all P eigenvectors are the coordinates of Y/√P in an orthonormal basis
    assert np.sum(overlaps**2) == pytest.approx(y @ y / 40, rel=1e-12)


def test_bad_inputs_are_named():
    """NaN targets and test features are refused by name, never turned into a NaN or a 0 accuracy."""
    X, y = random_features(10, 2, 2, seed=seeded(1))
    Xt, yt = random_features(4, 2, 2, seed=seeded(2))
    stats = predictor_statistics(np.eye(2), X, y, Xt, 0.5)
    with pytest.raises(ValueError, match="y must contain only finite numbers"):
        stats.accuracy(np.full(4, np.nan))
    with pytest.raises(ValueError, match="y must have shape"):
        stats.generalisation_error(yt[:3])
    Xt[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="X_test must contain only finite numbers"):
        predictor_statistics(np.eye(2), X, y, Xt, 0.5)
    with pytest.raises(ValueError, match="U must be positive semi-definite, got smallest eigenvalue"):
        predictor_statistics(-np.eye(2), X, y, X, 0.5)
    with pytest.raises(ValueError, match=r"heads\[0\] must be an integer ≥ 1, got 1.5"):
        head_scores(np.eye(2), (1.5,))
    with pytest.raises(ValueError, match=r"pruned\[0\] must be a \(layer, head\) pair"):
        prune_heads(np.eye(2), (2,), [(0,)])
    # scores are ratios: U at the edge of float64 still gives finite scores
    scores = head_scores(np.full((2, 2), 1e308), (2,))
    assert scores == {(0, 0): 1.0, (0, 1): 1.0}


@pytest.mark.parametrize("scale", [1e-8, 1.0, 1e8])
def test_the_factor_of_u_judges_its_definiteness_relative_to_its_scale(scale):
    """U = c·diag(1, −δ): a round-off δ = 1e-12 is clipped to 0 and a real one, δ = 1e-6, refused, at every scale c
    (an absolute floor would accept the second at c = 1e-8 and refuse the first at c = 1e8)."""
    from attnverify.numerics.kernel_predictor import factor

    R = factor(scale * np.diag([1.0, -1e-12]))
    np.testing.assert_allclose(R @ R.T, scale * np.diag([1.0, 0.0]), rtol=0, atol=1e-15 * scale)
    with pytest.raises(ValueError, match="^U must be positive semi-definite, got smallest eigenvalue"):
        factor(scale * np.diag([1.0, -1e-6]))
