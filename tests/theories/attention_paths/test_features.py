"""Tests for numerics/attention_paths/features.py (attention matrices, path features, path kernels).

Tolerances: every comparison here is exact linear algebra on O(1) numbers, compared at round-off level
(1e-12: a few thousand ulps after O(10–100) float64 operations); the exact identities (uniform first layer,
chunking) are compared at 1e-13 or exactly.
"""

from __future__ import annotations

import itertools
import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from attnverify.theories.attention_paths import features as ft
from attnverify.base.backend import cupy_works
from seeds import seeded

ROUND_OFF = 1e-12


# --------------------------------------------------------------------------- helpers


def naive_softmax_over_keys(scores):
    """exp(score_st) / Σ_s' exp(score_s't), one query column at a time, no max subtraction."""
    out = np.empty_like(scores)
    for b in range(scores.shape[0]):
        for t in range(scores.shape[2]):
            e = np.exp(scores[b, :, t])
            out[b, :, t] = e / e.sum()
    return out


def naive_scores(x, w):
    B, _, S = x.shape
    return np.array([[[x[b, :, s] @ w @ x[b, :, t] for t in range(S)] for s in range(S)] for b in range(B)])


def random_stochastic(rng, B, S):
    """Random attention matrices (B, S, S) whose columns sum to 1 over the key index."""
    a = rng.random((B, S, S)) + 0.01
    return a / a.sum(axis=1, keepdims=True)


def naive_path_features(x, layers, readout, prior_var0):
    """Per example and per path (itertools.product order: h1 slowest), x Ω_{h1} ⋯ ω_{hL} by matrix products."""
    B, n0, S = x.shape
    heads = [range(len(layer)) for layer in layers]
    paths = list(itertools.product(*heads))
    out = np.empty((B, n0, len(paths)))
    for b in range(B):
        for p, path in enumerate(paths):
            last = layers[-1][path[-1]][b]
            omega = {"last_token": last[:, -1], "first_token": last[:, 0], "average_pooling": last.mean(axis=1)}[
                readout
            ]
            m = x[b]
            for ell, h in enumerate(path[:-1]):
                m = m @ layers[ell][h][b]
            out[b, :, p] = m @ omega
    return out * math.sqrt(prior_var0 / (n0 * len(paths)))


def random_layers(rng, B, S, heads):
    return [[random_stochastic(rng, B, S) for _ in range(H)] for H in heads]


shapes = st.tuples(st.integers(1, 4), st.integers(1, 5), st.integers(1, 6))  # B, N0, S
head_counts = st.lists(st.integers(1, 3), min_size=1, max_size=3)  # H_1..H_L, L = 1..3
seeds = st.integers(0, 2**32 - 1)


# --------------------------------------------------------------------------- attention


@settings(max_examples=40)
@given(shape=shapes, seed=seeds, log_scale=st.floats(-3.0, 6.0))
def test_attention_columns_sum_to_one_over_keys(shape, seed, log_scale):
    """Σ_s Ω_{st} = 1 for every query t, Ω ≥ 0 and finite, for scores up to ~1e6 in size."""
    B, n0, S = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, n0, S))
    w = 10.0**log_scale * rng.standard_normal((n0, n0))
    omega = ft.attention_matrix(x, w)
    assert omega.shape == (B, S, S)
    assert np.all(np.isfinite(omega)) and np.all(omega >= 0)
    assert_allclose(omega.sum(axis=1), 1.0, rtol=0, atol=ROUND_OFF)


def test_attention_at_huge_scores_is_the_hardmax():
    """Scores of size 1e5 (naive exp overflows) give the one-hot of the largest key score, no NaN."""
    rng = np.random.default_rng(seeded(1))
    x = rng.standard_normal((3, 4, 7))
    w = 1e5 * rng.standard_normal((4, 4))
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.all(np.isfinite(naive_softmax_over_keys(naive_scores(x, w))))
    omega = ft.attention_matrix(x, w)
    hard = np.zeros_like(omega)
    best = naive_scores(x, w).argmax(axis=1)
    for b in range(3):
        hard[b, best[b], np.arange(7)] = 1.0
    assert_allclose(omega, hard, rtol=0, atol=1e-12)


@settings(max_examples=30)
@given(shape=shapes, seed=seeds)
def test_attention_equals_naive_softmax_at_small_scores(shape, seed):
    """Ω_{st} = exp(x_sᵀWx_t) / Σ_s' exp(x_s'ᵀWx_t), key s first, to 1e-12."""
    B, n0, S = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, n0, S))
    w = 0.5 * rng.standard_normal((n0, n0))
    assert_allclose(ft.attention_matrix(x, w), naive_softmax_over_keys(naive_scores(x, w)), rtol=0, atol=ROUND_OFF)


def test_attention_normalises_over_keys_not_queries():
    """A non-symmetric W: the key index is the first one (softmax(dim=2) of scores[b, h, s, t])."""
    rng = np.random.default_rng(seeded(2))
    x = rng.standard_normal((2, 3, 5))
    w = rng.standard_normal((3, 3))
    omega = ft.attention_matrix(x, w)
    assert_allclose(omega.sum(axis=1), 1.0, atol=ROUND_OFF)
    assert np.max(np.abs(omega.sum(axis=2) - 1.0)) > 1e-3


@settings(max_examples=30)
@given(shape=shapes, seed=seeds, d_qk=st.integers(1, 4))
def test_qk_attention_equals_w_attention_with_w_from_k_and_q(shape, seed, d_qk):
    """(K x_s)·(Q x_t)/√d = x_sᵀ (KᵀQ/√d) x_t, so both parametrisations give the same Ω."""
    B, n0, S = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, n0, S))
    q, k = rng.standard_normal((2, d_qk, n0))
    assert_allclose(
        ft.attention_matrix_qk(x, q, k), ft.attention_matrix(x, k.T @ q / math.sqrt(d_qk)), rtol=0, atol=ROUND_OFF
    )


def test_readout_vectors():
    rng = np.random.default_rng(seeded(3))
    omega = random_stochastic(rng, 2, 4)
    assert_array_equal(ft.readout_vector(omega, "last_token"), omega[:, :, 3])
    assert_array_equal(ft.readout_vector(omega, "first_token"), omega[:, :, 0])
    assert_allclose(ft.readout_vector(omega, "average_pooling"), omega.sum(axis=2) / 4, atol=ROUND_OFF)
    with pytest.raises(ValueError, match="readout"):
        ft.readout_vector(omega, "cls_token")


# --------------------------------------------------------------------------- path features


@settings(max_examples=40)
@given(
    shape=shapes,
    heads=head_counts,
    seed=seeds,
    readout=st.sampled_from(ft.READOUTS),
    prior_var0=st.floats(0.1, 10.0),
)
def test_path_features_equal_naive_products(shape, heads, seed, readout, prior_var0):
    """X_π = sqrt(σ0²/(N0𝓗)) x Ω_{h1} ⋯ ω_{hL}, h_1 slowest, for L = 1, 2, 3 and H_ℓ = 1..3."""
    B, n0, S = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, n0, S))
    layers = random_layers(rng, B, S, heads)
    X = ft.path_features(x, layers, readout=readout, prior_var0=prior_var0)
    assert X.shape == (B, n0, math.prod(heads))
    assert_allclose(X, naive_path_features(x, layers, readout, prior_var0), rtol=0, atol=ROUND_OFF)


def test_path_packing_h1_slowest():
    """For H = (2, 3) the flat index of (h1, h2) is 3·h1 + h2 (``"(h H)"`` in the authors' rearrange)."""
    rng = np.random.default_rng(seeded(4))
    B, n0, S = 2, 3, 4
    x = rng.standard_normal((B, n0, S))
    layers = random_layers(rng, B, S, (2, 3))
    X = ft.path_features(x, layers)
    scale = math.sqrt(1.0 / (n0 * 6))
    for h1, h2 in itertools.product(range(2), range(3)):
        for b in range(B):
            expected = scale * x[b] @ layers[0][h1][b] @ layers[1][h2][b][:, -1]
            assert_allclose(X[b, :, 3 * h1 + h2], expected, atol=ROUND_OFF)
    # and the (h1, h2) = (0, 1) and (1, 0) paths really differ, so a transposed packing would be caught
    assert np.max(np.abs(X[:, :, 1] - X[:, :, 3])) > 1e-3


@settings(max_examples=30)
@given(shape=shapes, heads=head_counts, seed=seeds, readout=st.sampled_from(ft.READOUTS))
def test_uniform_first_layer_gives_the_token_mean(shape, heads, seed, readout):
    """If every layer-1 head is uniform (Ω = 1/S), x Ω_1 = m 1ᵀ with m the token mean, and since every later
    Ω has unit column sums and ω sums to 1, every path gives ξ^π = m: X_π = sqrt(σ0²/(N0𝓗)) · mean_t x_t."""
    B, n0, S = shape
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B, n0, S))
    layers = random_layers(rng, B, S, heads)
    layers[0] = [np.full((B, S, S), 1.0 / S) for _ in layers[0]]
    X = ft.path_features(x, layers, readout=readout, prior_var0=2.0)
    paths = math.prod(heads)
    expected = math.sqrt(2.0 / (n0 * paths)) * x.mean(axis=2)
    assert_allclose(X, np.repeat(expected[:, :, None], paths, axis=2), rtol=0, atol=1e-13)


def test_chunking_does_not_change_the_features():
    rng = np.random.default_rng(seeded(5))
    x = rng.standard_normal((7, 3, 5))
    layers = random_layers(rng, 7, 5, (2, 2))
    whole = ft.path_features(x, layers)
    for batch_size in (1, 3, 7, 100):
        assert_allclose(ft.path_features(x, layers, batch_size=batch_size), whole, rtol=0, atol=1e-15)


def test_path_features_are_memory_frugal():
    """Peak extra memory stays far below B·N0·S·𝓗 numbers (here 196 MB): no (B, N0, S, 𝓗) product is built.

    What is allocated is the output (4 MB) and a few copies of the attention-vector stack (B, 𝓗, S) (3 MB
    each); about 11 MB in all.
    """
    rng = np.random.default_rng(seeded(6))
    B, n0, S, H = 500, 64, 48, (4, 4)
    x = rng.standard_normal((B, n0, S))
    layers = random_layers(rng, B, S, H)
    forbidden = 8 * B * n0 * S * math.prod(H)
    tracemalloc.start()
    try:
        X = ft.path_features(x, layers, readout="average_pooling")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert X.shape == (B, n0, 16)
    assert peak < 0.1 * forbidden, (peak, forbidden)


def test_path_features_validation():
    rng = np.random.default_rng(seeded(7))
    x = rng.standard_normal((2, 3, 4))
    layers = random_layers(rng, 2, 4, (2, 1))
    with pytest.raises(ValueError, match="readout"):
        ft.path_features(x, layers, readout="last")
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="prior_var0"):
            ft.path_features(x, layers, prior_var0=bad)
    with pytest.raises(ValueError, match="layers"):
        ft.path_features(x, [])
    with pytest.raises(ValueError, match=r"layers\[1\]"):
        ft.path_features(x, [layers[0], []])
    with pytest.raises(ValueError, match=r"layers\[0\]\[1\]"):
        ft.path_features(x, [[layers[0][0], layers[0][1][:, :3, :3]]])
    with pytest.raises(ValueError, match="x"):
        ft.path_features(x[0], layers)
    with pytest.raises(ValueError, match="batch_size"):
        ft.path_features(x, layers, batch_size=0)
    with pytest.raises(ValueError, match="weights"):
        ft.attention_matrix(x, np.eye(4))
    with pytest.raises(ValueError, match="key"):
        ft.attention_matrix_qk(x, np.ones((2, 3)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="x"):
        ft.attention_matrix(np.full((2, 3, 4), np.nan), np.eye(3))


# --------------------------------------------------------------------------- kernels


@settings(max_examples=30)
@given(P=st.integers(1, 5), P_other=st.integers(1, 4), n0=st.integers(1, 4), paths=st.integers(1, 5), seed=seeds)
def test_kernels_agree_with_path_kernels(P, P_other, n0, paths, seed):
    """K(U) = Σ_{ππ'} U_{ππ'} C_{ππ'} (with C from path_kernels) without forming C; GP kernel = K(scale·I)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((P, n0, paths))
    Y = rng.standard_normal((P_other, n0, paths))
    U = rng.standard_normal((paths, paths))  # not symmetric: the order of π, π' matters
    C = ft.path_kernels(X, Y)
    assert C.shape == (paths, paths, P, P_other)
    for pi, rho, mu, nu in itertools.product(range(paths), range(paths), range(P), range(P_other)):
        assert abs(C[pi, rho, mu, nu] - X[mu, :, pi] @ Y[nu, :, rho]) <= ROUND_OFF
    K = ft.renormalized_kernel(U, X, Y)
    assert_allclose(K, np.einsum("pq,pqmn->mn", U, C), rtol=0, atol=ROUND_OFF * max(1.0, np.abs(C).sum()))
    assert_allclose(ft.gp_kernel(X, 2.5, X_other=Y), ft.renormalized_kernel(2.5 * np.eye(paths), X, Y), atol=1e-12)
    assert_allclose(ft.gp_kernel(X), ft.renormalized_kernel(np.eye(paths), X), atol=1e-12)
    # X_other defaults to X, and the symmetric kernel of a symmetric U is symmetric
    K_self = ft.renormalized_kernel(U + U.T, X)
    assert_allclose(K_self, K_self.T, atol=1e-12)
    assert_allclose(ft.path_kernels(X), ft.path_kernels(X, X), atol=0)


def test_kernel_validation():
    X = np.ones((3, 2, 4))
    with pytest.raises(ValueError, match="U"):
        ft.renormalized_kernel(np.eye(3), X)
    with pytest.raises(ValueError, match="X_other"):
        ft.renormalized_kernel(np.eye(4), X, np.ones((3, 2, 3)))
    with pytest.raises(ValueError, match="scale"):
        ft.gp_kernel(X, 0.0)
    with pytest.raises(ValueError, match="X"):
        ft.path_kernels(np.ones((3, 2)))


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_works(), reason="no working cupy device")
def test_cupy_matches_numpy():
    rng = np.random.default_rng(seeded(8))
    x = rng.standard_normal((5, 6, 7))
    w = rng.standard_normal((6, 6))
    layers = [[ft.attention_matrix(x, w), random_stochastic(rng, 5, 7)], [random_stochastic(rng, 5, 7)]]
    X = ft.path_features(x, layers)
    Xc = ft.path_features(x, layers, backend="cupy")
    assert_allclose(Xc.get(), X, atol=ROUND_OFF)
    assert_allclose(ft.attention_matrix(x, w, backend="cupy").get(), ft.attention_matrix(x, w), atol=ROUND_OFF)
    U = rng.standard_normal((2, 2))
    assert_allclose(ft.renormalized_kernel(U, X, backend="cupy").get(), ft.renormalized_kernel(U, X), atol=ROUND_OFF)


def test_backend_by_name_and_overflowing_scores():
    """A backend given by name is the backend; scores beyond float64 are refused by name
    rather than returned as a NaN softmax; booleans are not numbers."""
    rng = np.random.default_rng(seeded(3))
    x = rng.standard_normal((2, 3, 4))
    w = rng.standard_normal((3, 3))
    assert_array_equal(ft.attention_matrix(x, w, backend="numpy"), ft.attention_matrix(x, w))
    with pytest.raises(ValueError, match="backend"):
        ft.attention_matrix(x, w, backend="numpi")
    with pytest.raises(ValueError, match="x and weights give attention scores beyond the float64 range"):
        ft.attention_matrix(x, np.full((3, 3), 1e308))
    with pytest.raises(ValueError, match="x and query and key give attention scores"):
        ft.attention_matrix_qk(x, np.full((2, 3), 1e200), np.full((2, 3), 1e200))
    with pytest.raises(TypeError, match="scale"):
        ft.gp_kernel(np.ones((3, 2, 4)), True)
    with pytest.raises(TypeError, match="batch_size"):
        ft.path_features(x, random_layers(rng, 2, 4, (1,)), batch_size=True)
