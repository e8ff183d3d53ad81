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


def _gaussian_run(chains, **options):
    from attnverify.base import arguments

    be = arguments.backend("numpy")
    rng = be.random(0)
    asked = []

    def start(count):
        asked.append(count)
        return rng.standard_normal((count, 2))

    def potential_and_gradient(x):
        return 0.5 * np.sum(x * x, axis=1), x

    run = run_sampler(potential_and_gradient, start, lambda x: x, chains=chains, warmup=30, draws=6, rng=rng,
                      backend=be, chain_bytes=(16, 0), what="test", **options)
    return run, asked


def test_many_chains_start_in_superchains_and_adapt_by_chees():
    """64 chains: the starts of chains 0, 8, …, 56, each shared by its block of 8 chains, one step size for all (ChEES); the superchains reach
    the summary. 8 chains: each from its own start, a step size each (dual averaging), no superchains."""
    run, asked = _gaussian_run(64)
    assert asked == [64] and run.superchains == 8
    assert np.all(run.step_size == run.step_size[0])
    from attnverify.numerics.diagnostics import summarize

    assert summarize(run.draws, superchains=run.superchains).superchains == 8
    few, asked = _gaussian_run(8)
    assert asked == [8] and few.superchains is None and len(set(few.step_size)) > 1
    independent, asked = _gaussian_run(64, superchains=None, adapt="dual_averaging")
    assert asked == [64] and independent.superchains is None and len(set(independent.step_size)) > 1


def test_sampled_order_parameters_of_many_chains_are_judged_by_nested_rhat():
    from attnverify.saddle.network import sample_order_parameters

    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(6, 3)), rng.normal(size=6)
    sampled = sample_order_parameters(one_hidden_layer(2, 3), X, y, temperature=0.5, chains=64, warmup=40, draws=8)
    assert all(summary.superchains == 8 for summary in sampled.summaries.values())
