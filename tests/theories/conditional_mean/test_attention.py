"""Attention maps: stability, shapes, and errors at the boundary; the Monte Carlo error driver."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from attnverify.theories.conditional_mean import (GaussianKeyValueModel, attention_error, rbf_attention,
                                                  ridge_attention, score_attention_error, softmax, softmax_attention,
                                                  weighted_mean)
from attnverify.numerics.statistics import RunningMoments, mean_estimate
from seeds import seeded


def test_softmax_survives_huge_logits():
    w = softmax(np.array([1e4, 1e4 - 1.0, -1e4]))
    np.testing.assert_allclose(w, [1 / (1 + np.exp(-1.0)), np.exp(-1.0) / (1 + np.exp(-1.0)), 0.0], rtol=1e-14)


def test_batched_softmax_attention_equals_the_loop():
    rng = np.random.default_rng(seeded(0))
    keys, values, scores = rng.standard_normal((5, 7, 3)), rng.standard_normal((5, 7, 2)), rng.standard_normal((5, 3))
    batched = softmax_attention(scores, keys, values)
    for r in range(5):
        w = np.exp(keys[r] @ scores[r])
        # the weighted mean can cancel (values of both signs): its round-off is relative to Σ w|v|/Σ w, not to the
        # result (a fresh seed gave 6.5e-4 with a relative error 7.6e-13 against rtol 1e-13)
        np.testing.assert_allclose(batched[r], w @ values[r] / w.sum(), rtol=1e-13,
                                   atol=1e-13 * np.max(w @ np.abs(values[r]) / w.sum()))


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
    x = np.random.default_rng(seeded(3)).standard_normal(1001) ** 3
    acc = RunningMoments()
    for chunk in np.array_split(x, 7):
        acc.add(chunk)
    one = mean_estimate(x)
    assert abs(acc.estimate().mean - one.mean) < 1e-14 and abs(acc.estimate().standard_error - one.standard_error) < 1e-14


def test_attention_error_replays_from_its_seed_and_is_unbiased_at_length_one():
    """At L = 1 attention returns the token's value: the mean error is E[v] − target exactly in law."""
    model = GaussianKeyValueModel([0.0], [[1.0]], [[2.0]], [0.5], 0.3)
    run = lambda: attention_error(lambda L, n, r: model.sample(L, n, r), lambda K: K[..., 0], [0.0], 1, 20000,  # noqa: E731
                                  np.random.default_rng(seeded(5)))
    first, second = run(), run()
    assert first == second
    assert abs(first.bias[0].mean - 0.5) < 5 * first.bias[0].standard_error
    expected_mse = 0.5**2 + 4.0 + 0.09
    assert abs(first.mse.mean - expected_mse) < 5 * first.mse.standard_error


# --------------------------------------------------------------------------- the boundary

KEYS = [[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]]
VALUES = [[1.0], [2.0], [3.0]]


def _direct_softmax_attention(a, K, V, b=0.0):
    logits = np.asarray(K) @ np.asarray(a) + b
    w = np.exp(logits - logits.max())
    return w @ np.asarray(V) / w.sum()


def test_softmax_attention_refuses_infinite_scores_and_nan_values_by_name():
    with pytest.raises(ValueError, match="scores must contain only finite numbers"):
        softmax_attention([np.inf, 0.0], KEYS, VALUES)
    with pytest.raises(ValueError, match="values must contain only finite numbers"):
        softmax_attention([1.0, 0.0], KEYS, [[1.0], [np.nan], [3.0]])
    with pytest.raises(ValueError, match="bias must contain only finite numbers"):
        softmax_attention([1.0, 0.0], KEYS, VALUES, bias=[0.0, -np.inf, 0.0])


def test_softmax_attention_takes_lists_of_numbers():
    expected = _direct_softmax_attention([0.3, -0.7], KEYS, VALUES, np.array([0.1, 0.0, -0.2]))
    out = softmax_attention([0.3, -0.7], KEYS, VALUES, bias=[0.1, 0.0, -0.2])
    np.testing.assert_allclose(out, expected, rtol=1e-15)
    with pytest.raises(TypeError, match="scores must be an array of real numbers"):
        softmax_attention(["a", "b"], KEYS, VALUES)


def test_softmax_attention_gives_the_argmax_limit_when_the_logits_exceed_float64():
    """Logits ~1e400 overflow float64; the weights are then exactly the limit: all the mass on the
    largest logit (ties shared equally), and a bias of 1e300 decides between tied dot products."""
    K = np.array(KEYS) * 1e200
    np.testing.assert_array_equal(softmax_attention([1e200, 0.0], K, VALUES), [1.0])
    np.testing.assert_array_equal(softmax_attention([1e200, 1e200], K, VALUES), [1.5])  # tokens 1 and 2 tie
    np.testing.assert_array_equal(softmax_attention([0.0, -1e200], K, VALUES), [3.0])
    np.testing.assert_array_equal(softmax_attention([0.0, 0.0], K, VALUES, bias=[0.0, 1e300, 0.0]), [2.0])


def test_softmax_attention_refuses_biases_and_scores_of_the_wrong_shape_by_name():
    with pytest.raises(ValueError, match="bias must have shape"):
        softmax_attention([1.0, 0.0], KEYS, VALUES, bias=[0.0, 0.0])
    with pytest.raises(ValueError, match="bias must have shape"):
        softmax_attention([1.0, 0.0], KEYS, VALUES, bias=[[0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="scores must have shape"):
        softmax_attention([[1.0, 0.0]], KEYS, VALUES)
    with pytest.raises(ValueError, match="batch axes of scores"):
        softmax_attention(np.zeros((3, 2)), np.zeros((2, 4, 2)), np.zeros((2, 4, 1)))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), st.floats(-30, 30), st.integers(0, 2**32 - 1))
def test_scaled_logits_round_like_the_direct_formula(L, d, log_scale, seed):
    """Power-of-two scaling is exact: on ordinary inputs the result equals the direct formula to round-off."""
    rng = np.random.default_rng(seed)
    K, V, b = rng.standard_normal((L, d)), rng.standard_normal((L, 2)), rng.standard_normal(L)
    a = rng.standard_normal(d) * 10.0**log_scale
    np.testing.assert_allclose(softmax_attention(a, K, V, bias=b), _direct_softmax_attention(a, K, V, b), rtol=1e-12, atol=1e-14)


def test_rbf_attention_at_a_tiny_bandwidth_returns_the_nearest_value():
    """h = 1e-200: h² underflows, yet the weights are the h → 0 limit (the nearest key, ties shared)."""
    np.testing.assert_array_equal(rbf_attention([0.9, 0.1], KEYS, VALUES, 1e-200), [1.0])
    np.testing.assert_array_equal(rbf_attention([0.5, 0.5], KEYS, VALUES, 1e-200), [1.5])  # keys 1 and 2 tie
    np.testing.assert_array_equal(rbf_attention([0.9e200, 0.1e200], np.array(KEYS) * 1e200, VALUES, 1e-200), [1.0])
    np.testing.assert_allclose(rbf_attention([0.9, 0.1], KEYS, VALUES, 1e200), [2.0], rtol=1e-15)  # plain mean


def test_rbf_attention_refuses_a_nan_query_by_name():
    with pytest.raises(ValueError, match="query must contain only finite numbers"):
        rbf_attention([np.nan, 0.1], KEYS, VALUES, 1.0)
    with pytest.raises(ValueError, match="query must have shape"):
        rbf_attention([0.1, 0.1, 0.1], KEYS, VALUES, 1.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), st.floats(0.05, 20.0), st.integers(0, 2**32 - 1))
def test_rbf_attention_equals_the_direct_formula(L, d, h, seed):
    rng = np.random.default_rng(seed)
    K, V, q = rng.standard_normal((L, d)), rng.standard_normal((L, 2)), rng.standard_normal(d)
    logits = -((K - q) ** 2).sum(axis=1) / (2 * h * h)
    w = np.exp(logits - logits.max())
    np.testing.assert_allclose(rbf_attention(q, K, V, h), w @ V / w.sum(), rtol=1e-12, atol=1e-14)


def test_softmax_and_weighted_mean_refuse_bad_logits_by_name():
    with pytest.raises(ValueError, match="logits must contain only finite numbers"):
        softmax([0.0, np.inf])
    with pytest.raises(ValueError, match="axis"):
        softmax([0.0, 1.0], axis=1)
    with pytest.raises(ValueError, match="logits must have shape"):
        weighted_mean([0.0, 1.0], VALUES)
    np.testing.assert_allclose(weighted_mean([0.0, 0.0, 0.0], VALUES), [2.0], rtol=1e-15)


def test_ridge_attention_takes_the_backend_by_name_and_refuses_a_ridge_too_small_to_solve():
    K = np.array(KEYS)
    np.testing.assert_allclose(ridge_attention([0.3, -0.7], KEYS, VALUES, 0.5, backend="numpy"),
                               ridge_attention([0.3, -0.7], K, np.array(VALUES), 0.5), rtol=0)
    with pytest.raises(ValueError, match="ridge must be at least"):
        ridge_attention([0.3, -0.7], KEYS, VALUES, 1e-300)  # L = 3 > d = 2: KKᵀ is singular
    with pytest.raises(ValueError, match="backend"):
        ridge_attention([0.3, -0.7], KEYS, VALUES, 0.5, backend="numpi")
    with pytest.raises(ValueError, match="keys and values must hold the same tokens"):
        ridge_attention([0.3, -0.7], KEYS, VALUES[:2], 0.5)


def test_monte_carlo_error_checks_its_callables_rng_and_backend():
    model = GaussianKeyValueModel([0.0], [[1.0]], [[2.0]], [0.5], 0.3)
    sample = lambda L, n, r: model.sample(L, n, r)  # noqa: E731
    with pytest.raises(TypeError, match="^sample must be callable, got"):
        attention_error(None, lambda K: K[..., 0], [0.0], 2, 10, 0)
    with pytest.raises(TypeError, match="^logits must be callable, got"):
        attention_error(sample, "K", [0.0], 2, 10, 0)
    with pytest.raises(ValueError, match="logits"):
        attention_error(sample, lambda K: K[..., 0] * np.inf, [0.0], 2, 10, 0)
    with pytest.raises(ValueError, match="target"):
        attention_error(sample, lambda K: K[..., 0], [0.0, 1.0], 2, 10, 0)
    with pytest.raises(TypeError, match="rng"):
        attention_error(sample, lambda K: K[..., 0], [0.0], 2, 10, None)
    seeded = attention_error(sample, lambda K: K[..., 0], [0.0], 2, 10, 7, backend="numpy")
    assert seeded == attention_error(sample, lambda K: K[..., 0], [0.0], 2, 10, np.random.default_rng(7))


def test_score_attention_error_names_its_arguments():
    model = GaussianKeyValueModel([0.0, 0.0], np.eye(2), [[1.0, 1.0]], [0.0], 0.3)
    with pytest.raises(ValueError, match="score must have shape"):
        score_attention_error(model, [1.0, 0.0, 0.0], [0.0], 4, 10, 1)
    with pytest.raises(ValueError, match="target must have shape"):
        score_attention_error(model, [1.0, 0.0], [0.0, 0.0], 4, 10, 1)
    with pytest.raises(TypeError, match="model must be a token model"):
        score_attention_error("model", [1.0, 0.0], [0.0], 4, 10, 1)
    with pytest.raises(TypeError, match="rng"):
        score_attention_error(model, [1.0, 0.0], [0.0], 4, 10, None)
    assert score_attention_error(model, [1.0, 0.0], [0.0], 4, 10, 1, backend="numpy").mse.samples == 10


def test_one_query_and_one_bias_serve_a_batch_of_sequences():
    rng = np.random.default_rng(seeded(1))
    K, V, a, b = rng.standard_normal((4, 5, 2)), rng.standard_normal((4, 5, 3)), rng.standard_normal(2), rng.standard_normal(5)
    batched = softmax_attention(a, K, V, bias=b)
    rbf = rbf_attention(a, K, V, 0.7)
    for r in range(4):
        np.testing.assert_allclose(batched[r], _direct_softmax_attention(a, K[r], V[r], b), rtol=1e-13)
        np.testing.assert_allclose(rbf[r], rbf_attention(a, K[r], V[r], 0.7), rtol=1e-13)


def test_ridge_attention_is_scale_free_far_beyond_the_range_where_KKT_fits_in_float64():
    """Vᵀ(KKᵀ + λI)⁻¹Kq is unchanged by (q, K, λ) → (cq, cK, c²λ); at c = 1e150 KKᵀ alone overflows."""
    rng = np.random.default_rng(seeded(2))
    K, V, q = rng.standard_normal((3, 2)), rng.standard_normal((3, 2)), rng.standard_normal(2)
    reference = ridge_attention(q, K, V, 0.7)
    for c in (1e-150, 1e150):
        np.testing.assert_allclose(ridge_attention(c * q, c * K, V, c * c * 0.7), reference, rtol=1e-13)


def test_the_rate_fit_takes_whole_lengths_it_can_fit():
    """The fit is over the lengths simulated: a fractional length (simulated at int(L), fitted at L), one length
    alone, a number, and an exact model (MSE 0, log 0) are refused in one line."""
    from attnverify.theories.conditional_mean import rate_fit

    model = GaussianKeyValueModel([0.0, 0.0], np.eye(2), [[1.0, 1.0]], [0.0], 0.3)
    exact = GaussianKeyValueModel([0.0, 0.0], np.eye(2), [[0.0, 0.0]], [0.0], 0.0)
    for lengths, error, says in (([10.2, 10.9], ValueError, r"lengths\[0\] must be an integer"),
                                 ([10, 10], ValueError, "at least two different lengths"),
                                 (10, TypeError, "lengths must be a sequence")):
        with pytest.raises(error, match=says):
            rate_fit(model, [0.5, 0.5], [0.0], lengths, 100, 0)
    with pytest.raises(ValueError, match="mean squared error is 0 at L = 4"):
        rate_fit(exact, [0.5, 0.5], [0.0], [4, 8], 100, 0)


def test_callbacks_that_return_no_numbers_are_named():
    keys_and_values = lambda L, n, rng: (np.zeros((n, L)), np.ones((n, L, 1)))  # noqa: E731
    with pytest.raises(TypeError, match=r"^sample\(4, 10, rng\) must return the pair \(keys, values\), got NoneType"):
        attention_error(lambda L, n, rng: None, lambda keys: keys, [0.0], 4, 10, 0)
    with pytest.raises(TypeError, match="^logits\\(keys\\) must return an array of real numbers, got str 'x'"):
        attention_error(keys_and_values, lambda keys: "x", [0.0], 4, 10, 0)
    assert attention_error(keys_and_values, lambda keys: keys, [1.0], 4, 10, 0).mse.mean == 0.0


def test_softmax_of_logits_spread_beyond_float64_is_exact_and_silent():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(softmax(np.array([1e308, -1e308, 3.0])), [1.0, 0.0, 0.0])
