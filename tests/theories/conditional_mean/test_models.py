"""Token models: validation at the boundary, and sampled moments against the model's parameters."""

import numpy as np
import pytest

from attnverify.theories.conditional_mean import (ConjugateGaussianModel, FiniteLatentModel, GaussianKeyValueModel,
                                                  LinearGaussianLatentModel, SineValueModel)
from seeds import seeded

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
    keys, values = model.sample(50, 4000, np.random.default_rng(seeded(0)))
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
    _, tokens = model.sample(5000, 3, np.random.default_rng(seeded(1)))
    post = model.posterior_by_bayes(tokens)
    assert np.all(np.isfinite(post))
    np.testing.assert_allclose(post.sum(axis=-1), 1.0, rtol=1e-14)


def test_linear_gaussian_posterior_mean_tends_to_the_latent():
    model = LinearGaussianLatentModel(1.0, 0.3, 3, 2)
    A, keys, values = model.sample(20000, np.random.default_rng(seeded(2)))
    assert np.max(np.abs(model.posterior_mean(keys, values) - A)) < 5 * 0.3 / np.sqrt(20000) * 3


# --------------------------------------------------------------------------- the boundary


def _direct_posterior(model, tokens):
    """log π_m − ½Σ_ℓ‖x_ℓ − μ_m‖², normalised: the textbook form, fine for ordinary tokens."""
    X = np.asarray(tokens)
    log_joint = np.log(model.prior) - 0.5 * ((X[..., None, :, :] - model.means[:, None, :]) ** 2).sum(axis=(-1, -2))
    w = np.exp(log_joint - log_joint.max(axis=-1, keepdims=True))
    return w / w.sum(axis=-1, keepdims=True)


def test_finite_latent_posterior_equals_the_textbook_form_on_ordinary_tokens():
    rng = np.random.default_rng(seeded(4))
    model = FiniteLatentModel([0.2, 0.5, 0.3], rng.standard_normal((3, 2)))
    for L in (1, 7, 60):
        _, tokens = model.sample(L, 5, rng)
        np.testing.assert_allclose(model.posterior_by_bayes(tokens), _direct_posterior(model, tokens), rtol=1e-11, atol=1e-14)


def test_finite_latent_posterior_is_exact_for_tokens_of_1e200():
    """The textbook form gives inf − inf there; the scaled one the exact posterior: log-odds
    x·(μ₂ − μ₁) − (‖μ₂‖² − ‖μ₁‖²)/2, which is 1e200 (one-hot), or exactly 1 when μ₂ − μ₁ = 1e-200."""
    model = FiniteLatentModel([0.5, 0.5], [[0.0], [1.0]])
    np.testing.assert_array_equal(model.posterior_by_bayes([[1e200]]), [0.0, 1.0])
    np.testing.assert_array_equal(model.posterior_by_bayes([[-1e200], [3.0]]), [1.0, 0.0])
    np.testing.assert_array_equal(model.posterior_by_bayes([[1e308], [1e308]]), [0.0, 1.0])
    close = FiniteLatentModel([0.5, 0.5], [[0.0], [1e-200]])
    np.testing.assert_allclose(close.posterior_by_bayes([[1e200]]), [1 / (1 + np.e), np.e / (1 + np.e)], rtol=1e-15)
    np.testing.assert_allclose(model.posterior_by_bayes(np.zeros((0, 1))), [0.5, 0.5], rtol=0)  # no tokens: the prior


def test_finite_latent_posterior_refuses_nan_tokens_by_name():
    model = FiniteLatentModel([0.5, 0.5], [[0.0], [1.0]])
    with pytest.raises(ValueError, match="tokens must contain only finite numbers"):
        model.posterior_by_bayes([[np.nan]])
    with pytest.raises(ValueError, match="tokens must have shape"):
        model.posterior_by_bayes([[1.0, 2.0]])


def test_samplers_take_an_integer_seed_or_a_generator_and_refuse_none():
    model = GaussianKeyValueModel(**G2)
    seeded = model.sample(3, 2, 11, backend="numpy")
    again = model.sample(3, 2, np.random.default_rng(11))
    np.testing.assert_array_equal(seeded[0], again[0])
    for sampler in (lambda r: model.sample(3, 2, r), lambda r: SineValueModel(1.0, 2.0, 0.1).sample(3, 2, r),
                    lambda r: ConjugateGaussianModel(1.0, 1.0, 2).sample(3, 2, r),
                    lambda r: FiniteLatentModel([0.5, 0.5], [[0.0], [1.0]]).sample(3, 2, r),
                    lambda r: LinearGaussianLatentModel(1.0, 1.0, 2, 1).sample(3, r)):
        with pytest.raises(TypeError, match="rng must be an integer seed"):
            sampler(None)
        with pytest.raises(ValueError, match="rng must be a seed ≥ 0"):
            sampler(-3)
        sampler(5)
    with pytest.raises(ValueError, match="backend"):
        model.sample(3, 2, 0, backend="numpi")


def test_model_methods_refuse_vectors_of_the_wrong_shape_by_name():
    model = GaussianKeyValueModel(**G2)
    with pytest.raises(ValueError, match="query must have shape"):
        model.desired_score([0.8, 0.2, 0.1])
    with pytest.raises(ValueError, match="score must have shape"):
        model.invariants([[0.8, 0.2]])
    with pytest.raises(ValueError, match="keys must have shape"):
        LinearGaussianLatentModel(1.0, 0.3, 3, 2).posterior_mean(np.ones((4, 2)), np.ones((4, 2)))


def test_conditioning_keeps_its_digits_or_refuses():
    """Read off the solve, Var(z | X) stays accurate to round-off even where 1 − r1ᵀw cancels; beyond
    1 + Lτ²/σ² = 1e8 the mean would lose more than 8 digits, and the method refuses by name."""
    L, tau, sigma = 1000, 100.0, 1.0
    tokens = np.random.default_rng(seeded(0)).standard_normal((L, 1))
    mean, sd = ConjugateGaussianModel(tau, sigma, 1).posterior_by_conditioning(tokens)
    np.testing.assert_allclose(sd, sigma * tau / np.sqrt(L * tau**2 + sigma**2), rtol=1e-14)
    # 8 digits of the tokens' magnitude: their mean cancels (a fresh seed gave 0.016 from tokens of size 0.8, whose
    # 3e-8 relative error is 5e-10 of the magnitude)
    np.testing.assert_allclose(mean, L * tau**2 * tokens.mean() / (L * tau**2 + sigma**2), rtol=1e-8,
                               atol=1e-8 * np.abs(tokens).mean())
    with pytest.raises(ValueError, match="prior_sd/token_sd"):
        ConjugateGaussianModel(1e5, 1.0, 1).posterior_by_conditioning(tokens)


def test_linear_gaussian_model_keeps_its_ridge_in_range():
    with pytest.raises(ValueError, match="noise_sd/prior_sd must lie in"):
        LinearGaussianLatentModel(1e-200, 1.0, 2, 1)
    assert LinearGaussianLatentModel(1e100, 1e100, 2, 1).ridge == 1.0  # σ²/τ² would be inf/inf
    tiny = LinearGaussianLatentModel(1e10, 1e-100, 3, 1)  # λ = 1e-220, and L = 2 < d = 3 keys
    with pytest.raises(ValueError, match="ridge"):
        tiny.posterior_mean(np.ones((2, 3)), np.ones((2, 1)))
