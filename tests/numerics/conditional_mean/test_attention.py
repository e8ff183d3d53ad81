"""Attention maps: stability, shapes, and errors at the boundary; the Monte Carlo error driver."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from attnverify.numerics.conditional_mean import (
    GaussianKeyValueModel,
    attention_error,
    rbf_attention,
    ridge_attention,
    softmax,
    softmax_attention,
)
from attnverify.numerics.statistics import RunningMoments, mean_estimate


def test_softmax_survives_huge_logits():
    w = softmax(np.array([1e4, 1e4 - 1.0, -1e4]))
    np.testing.assert_allclose(w, [1 / (1 + np.exp(-1.0)), np.exp(-1.0) / (1 + np.exp(-1.0)), 0.0], rtol=1e-14)


def test_batched_softmax_attention_equals_the_loop():
    rng = np.random.default_rng(0)
    keys, values, scores = rng.standard_normal((5, 7, 3)), rng.standard_normal((5, 7, 2)), rng.standard_normal((5, 3))
    batched = softmax_attention(scores, keys, values)
    for r in range(5):
        w = np.exp(keys[r] @ scores[r])
        np.testing.assert_allclose(batched[r], w @ values[r] / w.sum(), rtol=1e-13)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 30), st.integers(1, 4), st.floats(0.01, 10.0), st.integers(0, 2**32 - 1))
def test_ridge_attention_tends_to_the_mean_for_large_ridge_and_solves_the_normal_equations(L, d, ridge, seed):
    rng = np.random.default_rng(seed)
    K, V, q = rng.standard_normal((L, d)), rng.standard_normal((L, 2)), rng.standard_normal(d)
    out = ridge_attention(q, K, V, ridge)
    alpha = np.linalg.solve(K @ K.T + ridge * np.eye(L), K @ q)
    np.testing.assert_allclose(out, V.T @ alpha, rtol=1e-9, atol=1e-12)


def test_bad_inputs_are_named():
    K, V = np.zeros((4, 2)), np.zeros((3, 1))
    with pytest.raises(ValueError, match="same tokens"):
        softmax_attention(np.zeros(2), K, V)
    with pytest.raises(ValueError, match="bandwidth"):
        rbf_attention(np.zeros(2), K, np.zeros((4, 1)), 0.0)
    with pytest.raises(ValueError, match="ridge"):
        ridge_attention(np.zeros(2), K, np.zeros((4, 1)), -1.0)
    with pytest.raises(ValueError, match="scores"):
        softmax_attention(np.zeros(3), K, np.zeros((4, 1)))


def test_running_moments_equal_one_pass():
    x = np.random.default_rng(3).standard_normal(1001) ** 3
    acc = RunningMoments()
    for chunk in np.array_split(x, 7):
        acc.add(chunk)
    one = mean_estimate(x)
    assert abs(acc.estimate().mean - one.mean) < 1e-14 and abs(acc.estimate().standard_error - one.standard_error) < 1e-14


def test_attention_error_replays_from_its_seed_and_is_unbiased_at_length_one():
    """At L = 1 attention returns the token's value: the mean error is E[v] − target exactly in law."""
    model = GaussianKeyValueModel([0.0], [[1.0]], [[2.0]], [0.5], 0.3)
    run = lambda: attention_error(lambda L, n, r: model.sample(L, n, r), lambda K: K[..., 0], [0.0], 1, 20000,  # noqa: E731
                                  np.random.default_rng(5))
    first, second = run(), run()
    assert first == second
    assert abs(first.bias[0].mean - 0.5) < 5 * first.bias[0].standard_error
    expected_mse = 0.5**2 + 4.0 + 0.09
    assert abs(first.mse.mean - expected_mse) < 5 * first.mse.standard_error
