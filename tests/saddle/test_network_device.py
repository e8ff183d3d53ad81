"""The collapsed posterior's leapfrog step on the device, counted on the strict cupy stand-in (tests/cupy_standin):
the arrays one leapfrog step creates do not grow with the number of chains, and a sampling iteration of
numerics.hmc.run_chains synchronises with the host once (its record, acceptance and divergence in one transfer)."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify.base.backend import cupy_works
from attnverify.numerics import hmc

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cupy_works(), reason="no working cupy (GPU or stand-in)")]

ALLOCATIONS_PER_STEP = 50
"""Arrays a leapfrog step may allocate (views aside): the potential's own operations and the step's four."""


def _attention(P: int):
    from attnverify.theories.attention_paths.collapsed import collapsed_posterior
    from attnverify.theories.attention_paths.posterior import network_posterior

    rng = np.random.default_rng(0)
    posterior = network_posterior(rng.normal(size=(P, 8, 4)), np.sign(rng.normal(size=P)), heads=(2, 2), width=10,
                                  temperature=0.1, backend="cupy")
    return [collapsed_posterior(posterior, representation) for representation in ("kernels", "features")]


def _one_hidden_layer(P: int):
    from attnverify.saddle.network import CollapsedNetworkPosterior, one_hidden_layer

    rng = np.random.default_rng(1)
    return [CollapsedNetworkPosterior(one_hidden_layer(5, 3), rng.normal(size=(P, 3)), rng.normal(size=P), 0.2,
                                      backend="cupy")]


def _per_step(cupy, monkeypatch, posterior, chains: int) -> tuple[int, int]:
    """(arrays created, arrays allocated) by one more leapfrog step: a trajectory of 2 steps less one of 1."""
    counts = {"allocated": 0}
    original = cupy.ndarray.__init__

    def counted(self, array):
        original(self, array)
        counts["allocated"] += array.base is None  # a view allocates nothing (and launches nothing on a GPU)

    monkeypatch.setattr(cupy.ndarray, "__init__", counted)
    rng = cupy.random.default_rng(0)
    x, p = 0.3 * rng.standard_normal((chains, posterior.size)), rng.standard_normal((chains, posterior.size))
    _, gradient = posterior.potential_and_gradient(x)
    step = cupy.full(chains, 0.01)
    made = []
    for steps in (1, 2):
        created, allocated = cupy.created(), counts["allocated"]
        hmc.leapfrog(x, p, gradient, step, steps, posterior.potential_and_gradient)
        made.append((cupy.created() - created, counts["allocated"] - allocated))
    return made[1][0] - made[0][0], made[1][1] - made[0][1]


@pytest.mark.parametrize("network", [_attention, _one_hidden_layer])
def test_a_leapfrog_step_makes_as_many_arrays_for_2048_chains_as_for_64(cupy, monkeypatch, network):
    """P = 65 > 64, where the triangular solves could go chain by chain; 64, 512 and 2,048 chains."""
    for posterior in network(65):
        few, many, most = (_per_step(cupy, monkeypatch, posterior, chains) for chains in (64, 512, 2048))
        assert few == many == most, (few, many, most)
        assert few[1] <= ALLOCATIONS_PER_STEP, few


def test_a_sampling_iteration_synchronises_with_the_host_once(host_synchronisations):
    """Every way a device value reaches the host (get, float, int, bool, item) is counted: a run with 6 more kept
    draws synchronises 6 more times."""
    syncs = host_synchronisations
    from attnverify.base.backend import get_backend

    be = get_backend("cupy")
    (posterior, _) = _attention(20)
    posterior.potential_and_gradient(be.random(0).standard_normal((2, posterior.size)))  # its kernels, made once
    counts = []
    for draws in (4, 10):
        before = syncs[0]
        x = be.random(0).standard_normal((64, posterior.size))
        hmc.run_chains(posterior.potential_and_gradient, x, rng=be.random(1), warmup=20, draws=draws, backend=be,
                       record=lambda x: posterior.order_parameters(x))
        counts.append(syncs[0] - before)
    assert counts[1] - counts[0] == 6, counts


@pytest.mark.parametrize("scale", [1e40, 1e200])  # K + TI finite but not positive definite in floats; U overflows
def test_a_diverging_chain_has_infinite_potential_on_the_device_as_on_numpy(cupy, scale):
    """The device factorisation flags the chain without a factor (no host read of cuSOLVER's info): its Ψ is +∞, and
    the other chain's Ψ and ∇Ψ equal numpy's (1e-12)."""
    from theories.attention_paths.problems import random_features

    from attnverify.theories.attention_paths.collapsed import collapsed_posterior
    from attnverify.theories.attention_paths.posterior import network_posterior

    X, y = random_features(20, 3, 4, 3)
    for representation in ("kernels", "features"):
        host, device = (collapsed_posterior(network_posterior(X, y, heads=(2, 2), width=2, temperature=0.5,
                                                              backend=backend), representation)
                        for backend in ("numpy", "cupy"))
        theta = np.random.default_rng(3).normal(size=(2, host.size))
        theta[1] *= scale
        with np.errstate(over="ignore", invalid="ignore"):
            expected = host.potential_and_gradient(theta)
            potential, gradient = (value.get() for value in device.potential_and_gradient(cupy.asarray(theta)))
        assert np.isposinf(potential[1]) and np.isposinf(expected[0][1])
        np.testing.assert_allclose(potential[0], expected[0][0], rtol=1e-12)
        np.testing.assert_allclose(gradient[0], expected[1][0], rtol=1e-12, atol=1e-12)
