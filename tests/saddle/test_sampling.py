"""The one sampler driver of sampled networks (attnverify.saddle.sampling): its memory refusal by name, and the
per-chain bytes it is given, counted from the features' count M (not the weights' first axis) and, for a network
with a kernel of its own, without features unless the readout's moment is formed."""

import numpy as np
import pytest

from attnverify.saddle.network import CollapsedNetworkPosterior, Network, one_hidden_layer
from attnverify.saddle.sampling import refuse_chains_that_cannot_fit, run_sampler


@pytest.mark.parametrize("chains, weights, data, name", [
    (1, 10**16, 1, "network needs"), (1, 1, 10**16, "X needs"), (10**15, 8, 8, "chains = 1000000000000000")])
def test_chains_that_cannot_fit_are_refused_by_name(chains, weights, data, name):
    with pytest.raises(ValueError, match=name):
        refuse_chains_that_cannot_fit(chains, weights, data, "test")


def _kernel_network(units):
    """Weights z (C, 3) and M = ``units`` equal features Φ_{μi} = x_μ·z, with its own kernel ΦΦᵀ and VJP."""
    def features(Z, X):
        return np.repeat((X[None] @ Z[:, :, None]), units, axis=2)

    def features_vjp(Z, X, dF):
        return (dF.sum(axis=2)[:, :, None] * X[None]).sum(axis=1)

    def kernel(Z, X):
        Phi = features(Z, X)
        return Phi @ Phi.transpose(0, 2, 1), Phi

    def kernel_vjp(Phi, solved):
        return features_vjp(None, None, solved.energy_gradient(2.0) @ Phi)

    return Network(features, features_vjp, (3,), 1.0, lambda Z, m: {}, kernel=kernel, kernel_vjp=kernel_vjp,
                   reads_readout=False, units=units, kernel_memory=lambda P: 7 * P)


def test_chain_bytes_count_the_features_only_where_they_are_formed():
    X, y = np.ones((5, 3)), np.ones(5)
    P, size = 5, 3
    posterior = CollapsedNetworkPosterior(_kernel_network(1000), X, y, 1.0)
    assert posterior.chain_bytes() == (8 * 6 * size, 8 * 5 * P * P + 7 * P)  # no Φ, no M × M: M plays no part
    M, Q = 1000, 2  # a test error forms Φ and the readout's moment: then M counts, not weight_shape[0] = 3
    assert posterior.chain_bytes(Q) == (8 * (6 * size + 4 * M * M), 8 * (5 * P * P + (2 * P + 2 * Q) * M) + 7 * P)
    width, d = 4, 3
    plain = CollapsedNetworkPosterior(one_hidden_layer(width, d), X, y, 1.0)
    assert plain.network.units == width
    assert plain.chain_bytes() == (8 * (6 * width * d + 4 * width**2), 8 * (5 * P * P + 2 * P * width))


def test_the_driver_stacks_records_as_shape_chains_draws():
    from attnverify.base import arguments

    be = arguments.backend("numpy")
    rng = be.random(0)

    def potential_and_gradient(x):
        return 0.5 * np.sum(x * x, axis=1), x

    run = run_sampler(potential_and_gradient, lambda c: rng.standard_normal((c, 2)),
                      lambda x: {"x": x, "outer": x[:, :, None] * x[:, None, :]}, chains=3, warmup=10, draws=5,
                      rng=rng, backend=be, chain_bytes=(48, 0), what="test")
    assert run.draws["x"].shape == (2, 3, 5) and run.draws["outer"].shape == (2, 2, 3, 5)
    assert np.array_equal(run.draws["outer"][0, 1], run.draws["x"][0] * run.draws["x"][1])
    assert run.acceptance.shape == (3, 5) and run.step_size.shape == (3,)
