"""The collapsed posterior's leapfrog step on the device, counted on the strict cupy stand-in (tests/cupy_standin):
the arrays one leapfrog step creates do not grow with the number of chains, a sampling iteration of
numerics.hmc.run_chains synchronises with the host once (its record, acceptance and divergence in one transfer), and
a whole run of the public samplers launches at most 50 kernels a leapfrog step (arrays allocated and in-place writes;
a fused operation is one) and reads at most once an iteration."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify.base.backend import cupy_works
from attnverify.numerics import hmc

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cupy_works(), reason="no working cupy (GPU or stand-in)")]

LAUNCHES_PER_STEP = 50
"""Kernels a leapfrog step may launch, counted as the arrays it allocates (views aside) and the writes into existing
arrays: the potential's own operations and the step's fused drift and kick."""


def _attention_network(P: int):
    from attnverify.theories.attention_paths.posterior import network_posterior

    rng = np.random.default_rng(0)
    return network_posterior(rng.normal(size=(P, 8, 4)), np.sign(rng.normal(size=P)), heads=(2, 2), width=10,
                             temperature=0.1, backend="cupy")


def _attention(P: int):
    from attnverify.theories.attention_paths.collapsed import collapsed_posterior

    return [collapsed_posterior(_attention_network(P), representation) for representation in ("kernels", "features")]


def _one_hidden_layer(P: int):
    from attnverify.saddle.network import CollapsedNetworkPosterior, one_hidden_layer

    rng = np.random.default_rng(1)
    return [CollapsedNetworkPosterior(one_hidden_layer(5, 3), rng.normal(size=(P, 3)), rng.normal(size=P), 0.2,
                                      backend="cupy")]


def _count_launches(cupy, monkeypatch) -> dict:
    """``{"allocated": n, "written": m}``: the device arrays allocated from now on (a view allocates nothing and
    launches nothing on a GPU, so views are left out; a fused operation's arrays in between are its one kernel's, so
    only its result counts), and the writes into existing arrays (in-place operators, a ufunc's ``out=``, item
    assignment), each a kernel launch on a GPU as an allocating operation is."""
    counts = {"allocated": 0, "written": 0}
    original = cupy.ndarray.__init__

    def counted(self, array):
        original(self, array)
        counts["allocated"] += array.base is None and not cupy.fusing()

    monkeypatch.setattr(cupy.ndarray, "__init__", counted)
    for name in ("__iadd__", "__isub__", "__imul__", "__itruediv__", "__ipow__", "__setitem__"):
        def written(self, *args, _original=getattr(cupy.ndarray, name)):
            counts["written"] += 1
            return _original(self, *args)

        monkeypatch.setattr(cupy.ndarray, name, written)
    ufunc = cupy.ndarray.__array_ufunc__

    def into(self, function, method, *inputs, **kwargs):
        counts["written"] += "out" in kwargs
        return ufunc(self, function, method, *inputs, **kwargs)

    monkeypatch.setattr(cupy.ndarray, "__array_ufunc__", into)
    return counts


def _per_step(cupy, monkeypatch, posterior, chains: int) -> tuple[int, int, int]:
    """(arrays created, arrays allocated, launches: allocated and written) by one more leapfrog step: a trajectory of
    2 steps less one of 1."""
    counts = _count_launches(cupy, monkeypatch)
    rng = cupy.random.default_rng(0)
    x, p = 0.3 * rng.standard_normal((chains, posterior.size)), rng.standard_normal((chains, posterior.size))
    _, gradient = posterior.potential_and_gradient(x)
    step = cupy.full(chains, 0.01)
    made = []
    for steps in (1, 2):
        created, allocated, written = cupy.created(), counts["allocated"], counts["written"]
        hmc.leapfrog(x, p, gradient, step, steps, posterior.potential_and_gradient)
        made.append((cupy.created() - created, counts["allocated"] - allocated,
                     counts["allocated"] - allocated + counts["written"] - written))
    return tuple(two - one for one, two in zip(*made))


@pytest.mark.parametrize("network", [_attention, _one_hidden_layer])
def test_a_leapfrog_step_makes_as_many_arrays_for_2048_chains_as_for_64(cupy, monkeypatch, network):
    """P = 65 > 64, where the triangular solves could go chain by chain; 64, 512 and 2,048 chains: the same arrays
    and launches, at most 50 launches a step, in-place writes included (a batched factorisation or solve counted
    as one: the stand-in cannot see cuSOLVER's kernels; a fused operation as one)."""
    for posterior in network(65):
        few, many, most = (_per_step(cupy, monkeypatch, posterior, chains) for chains in (64, 512, 2048))
        assert few == many == most, (few, many, most)
        assert few[2] <= LAUNCHES_PER_STEP, few


WARMUP, DRAWS = 10, 8
"""A whole run's length: every adaptation of warm-up (the initial step-size search, ChEES's shared step and
trajectory length, the frozen kernel) and a few kept draws (sized to fit a 2,048-chain run at P = 65 into about a
minute on the stand-in's CPU)."""


def _attention_run(chains: int):
    """The attention-path posterior sampled by its public sampler (collapsed, representation ``"auto"``: here the
    path kernels), its trajectories capped at 32 leapfrog steps (``max_leapfrog``; uncapped, ChEES takes ~130 here):
    a run, returning its gradient evaluations."""
    from attnverify.theories.attention_paths.sampling import SamplerSettings, sample_posterior

    network = _attention_network(65)
    settings = SamplerSettings(chains=chains, warmup=WARMUP, draws=DRAWS, max_leapfrog=32)
    return lambda: sample_posterior(network, seed=0, settings=settings).gradient_evaluations


def _one_hidden_layer_run(chains: int):
    """The one-hidden-layer network's collapsed posterior sampled as ``saddle.network.sample_order_parameters`` runs
    it (the same start, record and sizes), its trajectories capped at 24 leapfrog steps as ``max_leapfrog`` caps the
    attention sampler's: a run, returning its gradient evaluations."""
    from attnverify.saddle.sampling import run_sampler

    (posterior,) = _one_hidden_layer(65)
    rng = posterior.backend.random(0)

    def run():
        return run_sampler(posterior.potential_and_gradient,
                           lambda chains: rng.standard_normal((chains, posterior.size)),
                           lambda x: posterior.order_parameters(x, None, None), chains=chains, warmup=WARMUP,
                           draws=DRAWS, rng=rng, backend=posterior.backend, chain_bytes=posterior.chain_bytes(0),
                           what="weights", max_steps=24).gradient_evaluations

    return run


@pytest.mark.parametrize("sampler", [_attention_run, _one_hidden_layer_run])
def test_a_whole_run_launches_at_most_50_kernels_a_leapfrog_step_and_reads_once_an_iteration(
        cupy, monkeypatch, host_synchronisations, sampler):
    """A whole sampling run at 64, 512 and 2,048 chains, counted from the sampler's call to its return (the
    posterior's set-up, the step-size search, warm-up and its adaptation, the draws and their transfer to the host):
    the kernels it launches (arrays allocated and in-place writes) over the leapfrog steps it reports (its gradient
    evaluations, which leave out the search's) are at most LAUNCHES_PER_STEP, its host synchronisations over its
    iterations (warm-up and draws) at most 1, and both flat in the chains: per step within 3 launches, per run within
    2 reads of each other. A leapfrog step, an iteration and a search trial make the same operations and reads
    whatever the chains (the per-step test above counts a step exactly); what differs between the runs is how many
    leapfrog steps ChEES chose (up to ~20 % fewer at 2,048 chains, over which each iteration's fixed launches are
    spread) and how many trials the step-size search took, both from the chains' draws.

    The bounds are for this run length: its set-up (the search's trials, the posterior's checks) is amortised over
    ~100 leapfrog steps and 18 iterations, and a warm-up iteration's launches (~40, most of them ChEES's sums) over its
    ~6 leapfrog steps; in longer runs, and with longer trajectories, both weigh less. The public samplers' default
    ``progress=None`` is what is counted: a progress callback adds two reads 20 times a run."""
    counts = _count_launches(cupy, monkeypatch)
    syncs = host_synchronisations
    per_step, reads = {}, {}
    for chains in (64, 512, 2048):
        run = sampler(chains)
        launched, read = counts["allocated"] + counts["written"], syncs[0]
        steps = run()
        per_step[chains] = (counts["allocated"] + counts["written"] - launched) / steps
        reads[chains] = syncs[0] - read
    assert max(per_step.values()) <= LAUNCHES_PER_STEP, per_step
    assert max(reads.values()) <= WARMUP + DRAWS, reads
    assert max(per_step.values()) - min(per_step.values()) <= 3, per_step
    assert max(reads.values()) - min(reads.values()) <= 2, reads


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
