"""Networks sampled from the posterior with the readout integrated out (attnverify.saddle.network): the collapsed
potential's gradient against finite differences, the readout's conditional second moment against its closed form,
and the sampler's estimate of Q = Σ a_i² against quadrature of a one-unit network."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate
from seeds import seeded

from attnverify.saddle.network import CollapsedNetworkPosterior, one_hidden_layer, sample_order_parameters


def _problem(P=12, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((P, d))
    return X, np.maximum(X @ rng.standard_normal(d) / np.sqrt(d), 0.0) - 0.4


def test_the_readouts_second_moment_is_the_gaussian_posteriors():
    """E[aaᵀ | Z, y] = mmᵀ + Λ⁻¹ with Λ = I/v + ΦᵀΦ/T, m = Λ⁻¹Φᵀy/T: against numpy's solve, to 1e-10."""
    X, y = _problem()
    network = one_hidden_layer(4, 3, readout_variance_total=1.5)
    posterior = CollapsedNetworkPosterior(network, X, y, 0.2)
    x = np.random.default_rng(2).standard_normal((3, posterior.size))
    moments = posterior.readout_second_moment(x)
    for c in range(3):
        Phi = network.features(x[c].reshape(1, 4, 3), X)[0]
        precision = np.eye(4) / network.readout_variance + Phi.T @ Phi / 0.2
        mean = np.linalg.solve(precision, Phi.T @ y / 0.2)
        expected = np.outer(mean, mean) + np.linalg.solve(precision, np.eye(4))
        np.testing.assert_allclose(moments[c], expected, rtol=1e-10, atol=1e-12)


def test_the_generalisation_error_given_the_weights_is_the_gaussian_readouts():
    """mean_t E[(f(x_t) − y_t)² | Z, y] with a | Z, y ~ N(m, Λ⁻¹): against (Φ_t m − y_t)² + diag(Φ_t Λ⁻¹ Φ_tᵀ) by numpy's
    solve, and against the mean over 4·10⁵ readouts drawn from that Gaussian (within 5 standard errors)."""
    X, y = _problem()
    X_test, y_test = _problem(P=7, seed=5)
    network = one_hidden_layer(4, 3, readout_variance_total=1.5)
    posterior = CollapsedNetworkPosterior(network, X, y, 0.2)
    x = np.random.default_rng(2).standard_normal((3, posterior.size))
    errors = posterior.generalisation_error(x, X_test, y_test)
    for c in range(3):
        Phi, Phi_test = (network.features(x[c].reshape(1, 4, 3), inputs)[0] for inputs in (X, X_test))
        precision = np.eye(4) / network.readout_variance + Phi.T @ Phi / 0.2
        mean = np.linalg.solve(precision, Phi.T @ y / 0.2)
        covariance = np.linalg.solve(precision, np.eye(4))
        expected = np.mean((Phi_test @ mean - y_test) ** 2 + np.diag(Phi_test @ covariance @ Phi_test.T))
        np.testing.assert_allclose(errors[c], expected, rtol=1e-10)
        readouts = np.random.default_rng(seeded(7 + c)).multivariate_normal(mean, covariance, size=400_000)
        draws = np.mean((readouts @ Phi_test.T - y_test) ** 2, axis=1)
        assert abs(draws.mean() - errors[c]) <= 5 * draws.std() / np.sqrt(draws.size)


def test_the_sampled_readout_norm_of_a_one_unit_network_equals_quadrature():
    """N = 1, d = 1: the posterior of the one hidden weight z is one-dimensional, so E[Q | y] = ∫ p(z | y) E[a² | z, y]
    dz by quadrature (2.716 here, where averaging over the prior of z would give 9.64). The sampler (8 chains, 600
    draws after 400 of warm-up) must pass the project's convergence gate (R-hat limit for the maximum at a false alarm
    of 10⁻³, bulk and tail ESS ≥ 400) and agree within z MCSE (z ≥ 5, Student's t with the MCSE's own degrees of
    freedom: ``mcse_z``); over seeds 0–9 the deviation was within 1.8 MCSE."""
    X, y = np.array([[1.0], [-0.5], [2.0]]), np.array([2.4, -0.3, 4.5])
    T, v = 0.1, 1.0
    network = one_hidden_layer(1, 1, readout_variance_total=v)

    def weight_density_and_moment(z):
        phi = np.maximum(z * X[:, 0], 0.0)
        K = v * np.outer(phi, phi) + T * np.eye(3)
        sign, logdet = np.linalg.slogdet(K)
        density = np.exp(-0.5 * y @ np.linalg.solve(K, y) - 0.5 * logdet - 0.5 * z * z)
        precision = 1.0 / v + phi @ phi / T
        mean = (phi @ y / T) / precision
        return density, mean**2 + 1.0 / precision

    norm = integrate.quad(lambda z: weight_density_and_moment(z)[0], -12, 12, points=[0.0], limit=200)[0]
    first = integrate.quad(lambda z: np.prod(weight_density_and_moment(z)), -12, 12, points=[0.0], limit=200)[0]
    expected = first / norm
    sampled = sample_order_parameters(network, X, y, temperature=T, chains=8, warmup=400, draws=600, seed=seeded(3))
    Q = sampled.summaries["Q"]
    assert Q.converged, Q.worst()
    assert abs(float(Q.mean) - expected) <= float(Q.mcse_z()) * float(Q.mcse)


def test_inputs_the_network_cannot_read_and_a_test_that_is_no_pair_are_named():
    """X with the wrong number of columns for the network's hidden weights is named at once (not by numpy's matmul
    inside the sampler), and test= must be the pair (X_test, y_test)."""
    from attnverify.saddle.network import one_hidden_layer, sample_order_parameters

    X, y = np.ones((6, 3)), np.linspace(-1.0, 1.0, 6)
    with pytest.raises(ValueError, match=r"^X of shape \(6, 3\) does not fit the network \(hidden weights \(4, 2\)"
                                         r".*; X has 3 columns where they read 2$"):
        sample_order_parameters(one_hidden_layer(4, 2), X, y, temperature=0.1, chains=2, warmup=4, draws=4)
    for name, X_, y_ in (("X", 1e200 * X, y), ("y", X, 1e200 * y)):
        with pytest.raises(ValueError, match=f"^{name} is too large: the sum of its squares overflows float64"):
            sample_order_parameters(one_hidden_layer(4, 3), X_, y_, temperature=0.1, chains=2, warmup=4, draws=4)
    with pytest.raises(ValueError, match=r"^test must be the pair \(X_test, y_test\), got tuple of 1 items"):
        sample_order_parameters(one_hidden_layer(4, 3), X, y, temperature=0.1, chains=2, warmup=4, draws=4,
                                test=(X,))


def test_a_network_function_may_keep_defaults_of_its_own():
    """``network=lambda N, act=act: …`` (a loop's closure over an activation): a parameter with a default that the
    theory does not draw keeps its default; one without a default that the theory does not know is named."""
    from types import SimpleNamespace

    from attnverify.saddle.network_claims import _network_arguments

    setting = SimpleNamespace(declaration=SimpleNamespace(parameter_names=("N", "sigma2")),
                              data=SimpleNamespace(__name__="teacher"), data_parameters=("P",), structure=())
    values = dict(N=10, sigma2=1.0, P=5)
    assert _network_arguments(setting, lambda N, act="tanh": None, values) == dict(N=10)
    assert _network_arguments(setting, lambda N, P=3: None, values) == dict(N=10, P=5)
    with pytest.raises(TypeError, match="^network names act, which is not a parameter of the action"):
        _network_arguments(setting, lambda N, act: None, values)
