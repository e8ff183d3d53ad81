"""Token models: validation at the boundary, and sampled moments against the model's parameters."""

import numpy as np
import pytest

from attnverify.numerics.conditional_mean import (
    ConjugateGaussianModel,
    FiniteLatentModel,
    GaussianKeyValueModel,
    LinearGaussianLatentModel,
    SineValueModel,
)

G2 = dict(key_mean=[0.5, -0.5], key_covariance=[[1.0, 0.3], [0.3, 0.5]], value_map=[[1.0, -2.0]], value_offset=[0.5], noise_sd=0.5)


def test_g2_figures_of_the_note():
    """Note §6: q' = (−0.146341, 1.487805), E[v | k = q] = 0.9, wrong-parameter limit 2.18."""
    model = GaussianKeyValueModel(**G2)
    q = np.array([0.8, 0.2])
    np.testing.assert_allclose(model.desired_score(q), [-0.146341, 1.487805], atol=1e-6)
    np.testing.assert_allclose(model.conditional_mean(q), [0.9], rtol=1e-12)
    np.testing.assert_allclose(model.attention_limit(model.desired_score(q)), [0.9], rtol=1e-12)
    np.testing.assert_allclose(model.attention_limit(q), [2.18], rtol=1e-12)


def test_sampled_key_and_value_moments():
    model = GaussianKeyValueModel(**G2)
    keys, values = model.sample(50, 4000, np.random.default_rng(0))
    k = keys.reshape(-1, 2)
    n = k.shape[0]
    assert np.all(np.abs(k.mean(axis=0) - model.key_mean) < 5 * np.sqrt(np.diag(model.key_covariance) / n))
    cov = np.cov(k.T)
    assert np.all(np.abs(cov - model.key_covariance) < 5 * np.sqrt(2.0 / n))  # SE of a covariance entry ≤ √(2/n)·σ²
    residual = values.reshape(-1) - k @ model.value_map[0] - model.value_offset[0]
    assert abs(residual.std() - 0.5) < 5 * 0.5 / np.sqrt(2 * n)


@pytest.mark.parametrize(
    "change, name",
    [
        (dict(key_covariance=[[1.0, 2.0], [2.0, 1.0]]), "key_covariance"),
        (dict(key_covariance=[[1.0, 0.3], [0.2, 0.5]]), "key_covariance"),
        (dict(value_map=[[1.0, -2.0, 3.0]]), "value_map"),
        (dict(noise_sd=-0.1), "noise_sd"),
        (dict(key_mean=[np.nan, 0.0]), "key_mean"),
        (dict(value_offset=[0.5, 1.0]), "value_offset"),
    ],
)
def test_bad_gaussian_models_are_named(change, name):
    with pytest.raises(ValueError, match=name):
        GaussianKeyValueModel(**{**G2, **change})


def test_bad_latent_models_are_named():
    with pytest.raises(ValueError, match="prior"):
        FiniteLatentModel([0.5, 0.6], [[0.0], [1.0]])
    with pytest.raises(ValueError, match="means"):
        FiniteLatentModel([0.5, 0.5], [[0.0], [1.0], [2.0]])
    with pytest.raises(ValueError, match="token_sd"):
        ConjugateGaussianModel(1.0, 0.0, 2)
    with pytest.raises(ValueError, match="d_v"):
        LinearGaussianLatentModel(1.0, 1.0, 2, 0)
    with pytest.raises(ValueError, match="frequency"):
        SineValueModel(1.0, -2.0, 0.1)
    with pytest.raises(ValueError, match="length"):
        GaussianKeyValueModel(**G2).sample(0, 3, np.random.default_rng(0))


def test_finite_latent_posterior_is_normalised_and_stable_for_long_sequences():
    model = FiniteLatentModel([0.25, 0.75], [[0.0, 0.0], [3.0, 0.0]])
    _, tokens = model.sample(5000, 3, np.random.default_rng(1))
    post = model.posterior_by_bayes(tokens)
    assert np.all(np.isfinite(post))
    np.testing.assert_allclose(post.sum(axis=-1), 1.0, rtol=1e-14)


def test_linear_gaussian_posterior_mean_tends_to_the_latent():
    model = LinearGaussianLatentModel(1.0, 0.3, 3, 2)
    A, keys, values = model.sample(20000, np.random.default_rng(2))
    assert np.max(np.abs(model.posterior_mean(keys, values) - A)) < 5 * 0.3 / np.sqrt(20000) * 3
