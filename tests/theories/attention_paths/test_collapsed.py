"""The attention network on the saddle engine's collapsed posterior (Z_0 integrated out): its potential against a
direct evaluation, its gradient against finite differences, and its kernel routes (path kernels, features) against
each other and against the engine's default route through Φ."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from attnverify.saddle.network import CollapsedNetworkPosterior, Network
from attnverify.theories.attention_paths.collapsed import collapsed_posterior
from attnverify.theories.attention_paths.features import path_kernels
from attnverify.theories.attention_paths.posterior import network_posterior
from theories.attention_paths.problems import random_features
from seeds import seeded

problems = st.fixed_dictionaries({
    "heads": st.lists(st.integers(1, 3), min_size=1, max_size=3).filter(lambda h: math.prod(h) <= 8),
    "width": st.integers(1, 4),
    "P": st.sampled_from([3, 20]),
    "temperature": st.floats(0.05, 2.0),
    "seed": st.integers(0, 2**16),
})


def build(p, representation):
    paths = math.prod(p["heads"])
    X, y = random_features(p["P"], 3, paths, p["seed"])
    post = network_posterior(X, y, heads=p["heads"], width=p["width"], temperature=p["temperature"])
    collapsed = collapsed_posterior(post, representation)
    theta = np.random.default_rng(p["seed"]).normal(size=(2, collapsed.size))
    return collapsed, theta, X, y


@settings(max_examples=20)
@given(problems)
def test_the_potential_is_half_the_energy_at_the_sampled_order_parameter_plus_the_prior(p):
    """Φ(θ) = ½[yᵀ(K+TI)⁻¹y + ln det(K+TI)] + ½|θ|², K = Σ U_ab(θ) C_ab, evaluated here by slogdet and solve."""
    for representation in ("kernels", "features"):
        collapsed, theta, X, y = build(p, representation)
        potential, _ = collapsed.potential_and_gradient(theta)
        C = path_kernels(X)
        for c in range(theta.shape[0]):
            U = collapsed.order_parameters(theta[c:c + 1])["U1"][0]
            G = np.einsum("ab,abpq->pq", U, C) + p["temperature"] * np.eye(p["P"])
            direct = 0.5 * (y @ np.linalg.solve(G, y) + np.linalg.slogdet(G)[1]) + 0.5 * theta[c] @ theta[c]
            assert potential[c] == pytest.approx(direct, rel=1e-10)


@settings(max_examples=20)
@given(problems)
def test_the_two_representations_agree(p):
    kernels, theta, *_ = build(p, "kernels")
    features, *_ = build(p, "features")
    for a, b in zip(kernels.potential_and_gradient(theta), features.potential_and_gradient(theta)):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11 * np.abs(a).max())


@settings(max_examples=20)
@given(problems)
def test_the_kernel_routes_equal_the_engines_route_through_the_features(p):
    """The engine without the network's kernel, kernel VJP and kernel-times (K = ΦΦᵀ, ∂Ψ/∂Φ = 2GΦ through
    features_vjp, the predictor Φ_t vΦᵀα) gives the same Ψ, ∇Ψ and posterior-mean predictor to 1e-10."""
    X_test, _ = random_features(5, 3, math.prod(p["heads"]), p["seed"] + 7)
    for representation in ("kernels", "features"):
        collapsed, theta, X, y = build(p, representation)
        made = collapsed.network
        plain = CollapsedNetworkPosterior(Network(made.features, made.features_vjp, made.weight_shape,
                                                  made.readout_variance, made.order_parameters, prepare=made.prepare,
                                                  reads_readout=False), X, y, p["temperature"])
        for a, b in zip(collapsed.potential_and_gradient(theta), plain.potential_and_gradient(theta)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * np.abs(a).max())
        a, b = collapsed.predictive_mean(theta, X_test), plain.predictive_mean(theta, X_test)
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * np.abs(a).max())


@settings(max_examples=15)
@given(problems, st.sampled_from(["kernels", "features"]))
def test_the_gradient_matches_finite_differences(p, representation):
    collapsed, theta, *_ = build(p, representation)
    _, gradient = collapsed.potential_and_gradient(theta)
    direction = np.random.default_rng(p["seed"] + 1).normal(size=theta.shape)
    h = 1e-5

    def at(t):
        return collapsed.potential_and_gradient(theta + t * direction)[0]

    fd = (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h)
    analytic = np.sum(gradient * direction, axis=1)
    np.testing.assert_allclose(analytic, fd, rtol=1e-6, atol=1e-6 * (1 + np.abs(analytic).max()))


def test_auto_forms_the_kernels_only_while_they_are_small():
    X, y = random_features(20, 3, 4, 0)
    post = collapsed_posterior(network_posterior(X, y, heads=(2, 2), width=3, temperature=0.5))
    assert post.inputs.representation == "kernels"  # 8·(4·20)² bytes
    big_X, big_y = random_features(600, 2, 16, 0)  # C would be 8·(16·600)² = 737 MB
    big = collapsed_posterior(network_posterior(big_X, big_y, heads=(4, 4), width=3, temperature=0.5))
    assert big.inputs.representation == "features"
    assert big.inputs._kernels is None  # and never formed them


@pytest.mark.parametrize("representation", ["kernels", "features"])
@pytest.mark.parametrize("scale", [1e40, 1e200])  # K + TI finite but not positive definite in floats; U overflows
def test_a_diverging_state_has_infinite_potential_and_leaves_the_other_chains_alone(representation, scale):
    """A leapfrog step far out (a diverging trajectory) gives that chain Φ = +∞, which HMC rejects, instead of
    stopping the sampler with numpy's LinAlgError; the other chains' Φ and ∇Φ are unchanged (to round-off: a
    batch of one chain takes other BLAS paths)."""
    p = {"heads": [2, 2], "width": 2, "P": 20, "temperature": 0.5, "seed": seeded(3)}
    collapsed, theta, *_ = build(p, representation)
    far = theta.copy()
    far[1] *= scale
    with np.errstate(over="ignore", invalid="ignore"):
        potential, gradient = collapsed.potential_and_gradient(far)
    reference, reference_gradient = collapsed.potential_and_gradient(theta[:1])
    assert np.isposinf(potential[1])
    assert potential[0] == pytest.approx(reference[0], rel=1e-12)
    np.testing.assert_allclose(gradient[0], reference_gradient[0], rtol=1e-12, atol=1e-12)
