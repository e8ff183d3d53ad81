"""The network posterior: potential and closed-form gradients, readout Gibbs step, sampled order parameters."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from attnverify.theories.attention_paths.posterior import Weights, network_posterior
from theories.attention_paths.problems import random_features

Z = 5.0


def unwhitened_outputs(post, weights, X, variances):
    """f(x) from the spec's §1.1 formula literally: V^eff_π = n_L^{-1/2} aᵀ Π_ℓ (H_ℓ n_{ℓ−1})^{-1/2} V^(ℓ)_{h_ℓ}
    N0^{-1/2} V^(0), f = Σ_π V^eff_π · ξ^π, with ξ^π = X_π sqrt(N0 𝓗)/σ_0 (σ_0 = 1 here)."""
    heads, n = post.config.heads, post.widths
    N0, paths = X.shape[1], X.shape[2]
    xi = X * math.sqrt(N0 * paths)
    z0, *layers = [b[0] for b in post.blocks(weights.hidden[:1])]
    V = [math.sqrt(variances[l]) * Z for l, Z in enumerate(layers)]
    a = math.sqrt(variances[-1]) * weights.readout[0]
    f = np.zeros(X.shape[0])
    for pi, hs in enumerate(np.ndindex(*heads)):
        v = a / math.sqrt(n[-1])
        for level in reversed(range(len(heads))):
            v = v @ V[level][hs[level]] / math.sqrt(heads[level] * n[level])
        v_eff = v @ z0 / math.sqrt(N0)
        f += xi[:, :, pi] @ v_eff
    return f


problems = st.fixed_dictionaries({
    "heads": st.lists(st.integers(1, 3), min_size=1, max_size=3).filter(lambda h: math.prod(h) <= 8),
    "width": st.integers(1, 4),
    "P": st.sampled_from([3, 30]),
    "temperature": st.floats(0.05, 2.0),
    "variance": st.floats(0.5, 2.0),
    "seed": st.integers(0, 2**16),
})


def build(p, chains=2):
    paths = math.prod(p["heads"])
    X, y = random_features(p["P"], 3, paths, p["seed"])
    variances = [p["variance"]] * (len(p["heads"]) + 1)
    post = network_posterior(X, y, heads=p["heads"], width=p["width"] + np.arange(len(p["heads"]) + 1),
                             temperature=p["temperature"], prior_var=variances)
    rng = np.random.default_rng(p["seed"])
    return post, post.prior_draw(chains, rng), X, y, variances


@settings(max_examples=25)
@given(problems)
def test_potential_matches_the_spec_forward_pass(p):
    post, w, X, y, variances = build(p)
    f = unwhitened_outputs(post, w, X, variances)
    np.testing.assert_allclose(post.outputs(w, X)[0], f, rtol=1e-10, atol=1e-12)
    potential, _ = post.potential_and_gradient(w)
    direct = np.sum((f - y) ** 2) / (2 * p["temperature"]) + 0.5 * (np.sum(w.hidden[0] ** 2) + np.sum(w.readout[0] ** 2))
    assert potential[0] == pytest.approx(direct, rel=1e-10)


@settings(max_examples=25)
@given(problems)
def test_gradients_match_finite_differences(p):
    post, w, *_ = build(p)
    _, gradient, readout_gradient = post.potential_and_gradient(w, readout_gradient=True)
    rng = np.random.default_rng(p["seed"] + 1)
    h = 1e-5
    for direction_hidden, direction_readout in [(rng.normal(size=w.hidden.shape), np.zeros_like(w.readout)),
                                                (np.zeros_like(w.hidden), rng.normal(size=w.readout.shape))]:
        def at(t):
            return post.potential_and_gradient(Weights(w.hidden + t * direction_hidden, w.readout + t * direction_readout))[0]
        fd = (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h)
        analytic = np.sum(gradient * direction_hidden, axis=1) + np.sum(readout_gradient * direction_readout, axis=1)
        np.testing.assert_allclose(analytic, fd, rtol=1e-6, atol=1e-6 * (1 + np.abs(analytic).max()))


def test_readout_gibbs_step_is_gp_regression():
    """Given the hidden weights, f = φ(x)·z_a is Bayesian linear regression: the draws of f(x_test) must
    have the GP-regression posterior mean k*ᵀ(K+TI)⁻¹y and variance k** − k*ᵀ(K+TI)⁻¹k* (kernel space,
    P×P solve), computed independently of the sampler's n_L×n_L weight-space precision."""
    X, y = random_features(6, 3, 2, 4)
    X_test, _ = random_features(3, 3, 2, 5)
    T = 0.3
    post = network_posterior(X, y, heads=(2,), width=(3, 4), temperature=T)
    rng = np.random.default_rng(0)
    hidden = np.repeat(post.prior_draw(1, rng).hidden, 20000, axis=0)
    draws = post.outputs(Weights(hidden, post.draw_readout(hidden, rng)), X_test)
    basis = np.eye(post.readout_width)
    phi_train = np.stack([post.outputs(Weights(hidden[:1], e[None]), X)[0] for e in basis], axis=1)
    phi_test = np.stack([post.outputs(Weights(hidden[:1], e[None]), X_test)[0] for e in basis], axis=1)
    K = phi_train @ phi_train.T + T * np.eye(6)
    k = phi_train @ phi_test.T
    chol = np.linalg.cholesky(K)
    solved = np.linalg.solve(chol.T, np.linalg.solve(chol, np.column_stack([y, k])))
    mean = k.T @ solved[:, 0]
    covariance = phi_test @ phi_test.T - k.T @ solved[:, 1:]
    n = draws.shape[0]
    assert np.all(np.abs(draws.mean(0) - mean) <= Z * np.sqrt(np.diag(covariance) / n))
    var = draws.var(0, ddof=1)
    assert np.all(np.abs(var - np.diag(covariance)) <= Z * np.diag(covariance) * np.sqrt(2 / (n - 1)))


def test_prior_order_parameter_is_the_gp_value():
    """Under the prior, E[U_ℓ] = σ_a² Π_{k≥ℓ} σ_k² I and E[U_a] = σ_a² (spec §3, GP limit)."""
    X, y = random_features(4, 3, 4, 6)
    variances = (1.5, 0.7, 2.0)
    post = network_posterior(X, y, heads=(2, 2), width=(3, 4, 5), temperature=1.0, prior_var=variances)
    w = post.prior_draw(40000, np.random.default_rng(1))
    U1, U2, Ua = post.order_parameters(w)
    for U, expected in [(U1, 1.5 * 0.7 * 2.0 * np.eye(4)), (U2, 0.7 * 2.0 * np.eye(2)), (Ua, 2.0)]:
        se = U.std(0, ddof=1) / np.sqrt(U.shape[0])
        assert np.all(np.abs(U.mean(0) - expected) <= Z * se)


def test_order_parameter_from_effective_weights():
    """U_{ππ'} = w_π·w_π'/n_0 with w_π = (n_L⋯n_1)^{-1/2} aᵀ V^(L)_{h_L}⋯V^(1)_{h_1} (spec §1.2), literally."""
    X, y = random_features(4, 3, 6, 7)
    post = network_posterior(X, y, heads=(3, 2), width=(2, 3, 4), temperature=1.0, prior_var=(1.3, 0.6, 1.7))
    w = post.prior_draw(1, np.random.default_rng(2))
    z0, Z1, Z2 = [b[0] for b in post.blocks(w.hidden)]
    a = math.sqrt(1.7) * w.readout[0]
    weights = []
    for h1, h2 in np.ndindex(3, 2):
        weights.append(a @ (math.sqrt(0.6) * Z2[h2]) @ (math.sqrt(1.3) * Z1[h1]) / math.sqrt(4 * 3))
    weights = np.array(weights)
    np.testing.assert_allclose(post.order_parameters(w)[0][0], weights @ weights.T / 2, rtol=1e-12)


def test_compressed_likelihood_equals_the_full_one():
    """P > N0·𝓗 uses the QR square root; the potential must equal the plain sum of squares."""
    X, y = random_features(50, 2, 2, 8)
    post = network_posterior(X, y, heads=(2,), width=3, temperature=0.2)
    assert post.design.shape == (4, 4)
    w = post.prior_draw(3, np.random.default_rng(3))
    f = post.outputs(w, X)
    direct = np.sum((f - y) ** 2, axis=1) / 0.4 + 0.5 * (np.sum(w.hidden**2, 1) + np.sum(w.readout**2, 1))
    np.testing.assert_allclose(post.potential_and_gradient(w)[0], direct, rtol=1e-11)


@pytest.mark.parametrize("kwargs, match", [
    (dict(width=2.5), "whole numbers"),
    (dict(heads=(3,)), "paths"),
    (dict(temperature=0.0), "temperature"),
])
def test_bad_input_is_named(kwargs, match):
    X, y = random_features(4, 3, 2, 9)
    args = dict(heads=(2,), width=3, temperature=0.5) | kwargs
    with pytest.raises(ValueError, match=match):
        network_posterior(X, y, **args)
    with pytest.raises(ValueError, match="y must be shaped"):
        network_posterior(X, y[:3], heads=(2,), width=3, temperature=0.5)


def test_a_width_too_large_to_sample_is_refused_at_the_constructor():
    """width = 1e9 is refused here, not later in numpy. The message gives the weight count, the limit and why, and
    the largest equal width that fits."""
    from attnverify.theories.attention_paths.posterior import MAX_WEIGHTS, _largest_equal_width

    X, y = random_features(4, 3, 2, 9)
    with pytest.raises(ValueError, match=r"width \(n_0, …, n_L\) = \(1e\+09, 1e\+09\) gives 2e\+18 weights per chain .*at most 1e\+08 .*"
                                         r"width must be ≤ \d+ when every layer has the same width"):
        network_posterior(X, y, heads=(2,), width=1e9, temperature=0.5)
    largest = _largest_equal_width((2,), 3)
    def weights(N):  # n_0·N0 + H_1 n_1 n_0 + n_1 with N0 = 3, H_1 = 2
        return 3 * N + 2 * N * N + N

    assert weights(largest) <= MAX_WEIGHTS < weights(largest + 1)
    network_posterior(X, y, heads=(2,), width=(largest, 1), temperature=0.5)  # a valid width is not refused


def test_backend_by_name_and_bad_features():
    X, y = random_features(4, 3, 2, 9)
    assert network_posterior(X, y, heads=(2,), width=3, temperature=0.5, backend="numpy").backend.name == "numpy"
    with pytest.raises(ValueError, match="backend"):
        network_posterior(X, y, heads=(2,), width=3, temperature=0.5, backend="numpi")
    X[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="X must contain only finite numbers"):
        network_posterior(X, y, heads=(2,), width=3, temperature=0.5)
