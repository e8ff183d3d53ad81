"""The sampler's size by backend (:func:`attnverify.saddle.sampling.sampler_size`): the host's chains on numpy, many
short chains on a device, for both of its users (the attention-path experiments and the generic saddle claim), and the
chain count that ``$ATTNVERIFY_DEVICE_CHAINS`` sets."""

from __future__ import annotations

import pytest

from attnverify.base.backend import get_backend
from attnverify.numerics.diagnostics import MANY_CHAINS
from attnverify.saddle import sampling
from attnverify.saddle.sampling import DEVICE_CHAINS, DEVICE_CHAINS_VARIABLE, SHORT_CHAIN_DRAWS, sampler_size


@pytest.fixture(autouse=True)
def _no_override(monkeypatch):
    monkeypatch.delenv(DEVICE_CHAINS_VARIABLE, raising=False)


@pytest.mark.parametrize("backend", [None, "numpy", get_backend("numpy")])
def test_the_host_keeps_the_sizes_it_is_given(backend):
    assert sampler_size(backend, chains=8, warmup=150, draws=400) == dict(chains=8, warmup=150, draws=400)


def test_a_device_runs_many_short_chains_with_the_same_warmup_and_at_least_the_hosts_draws():
    """1,024 chains; the warm-up as on the host; 25 draws each where the host's total is smaller (8 × 400 = 3,200),
    more where it is larger (8 × 4,000 = 32,000 → 32 each)."""
    assert DEVICE_CHAINS == 1024 and SHORT_CHAIN_DRAWS == 25
    assert sampler_size("cupy", chains=8, warmup=150, draws=400) == dict(chains=1024, warmup=150, draws=25)
    assert sampler_size("cupy", chains=8, warmup=600, draws=4000) == dict(chains=1024, warmup=600, draws=32)

    class Device:  # a Backend is read by its name only
        name = "cupy"

    assert sampler_size(Device(), chains=8, warmup=300, draws=500)["chains"] == 1024


def test_the_variable_sets_the_device_chains_and_never_below_the_many_chain_path(monkeypatch):
    monkeypatch.setenv(DEVICE_CHAINS_VARIABLE, "64")
    assert sampler_size("cupy", chains=8, warmup=150, draws=400) == dict(chains=64, warmup=150, draws=50)
    assert sampler_size("numpy", chains=8, warmup=150, draws=400)["chains"] == 8  # the host ignores it
    for value in (str(MANY_CHAINS - 1), "many", "64.5"):
        monkeypatch.setenv(DEVICE_CHAINS_VARIABLE, value)
        with pytest.raises(ValueError, match=f"{DEVICE_CHAINS_VARIABLE} must be a whole number ≥ {MANY_CHAINS}"):
            sampler_size("cupy", chains=8, warmup=150, draws=400)


def test_the_attention_path_experiments_take_the_rule():
    from attnverify.theories.attention_paths.experiments import SAMPLER_CHAINS, SAMPLER_STEPS, sampler_settings

    for profile, (warmup, draws) in SAMPLER_STEPS.items():
        host, device = sampler_settings(warmup, draws), sampler_settings(warmup, draws, "cupy")
        assert (host.chains, host.warmup, host.draws) == (SAMPLER_CHAINS, warmup, draws)
        assert (device.chains, device.warmup, device.draws) == tuple(
            sampler_size("cupy", chains=SAMPLER_CHAINS, warmup=warmup, draws=draws).values())


def test_the_generic_network_claim_samples_at_the_rules_size_for_its_backend(monkeypatch):
    """The saddle claim ``sampled_networks_match_theory`` asks the rule with the run's backend: on numpy, with the rule
    forced to the device's answer at 64 chains, the chains the sampler runs are the rule's (and the claim holds)."""
    from claim_helpers import run_seed
    from saddle.test_sampled_networks import _one_layer_theory

    from attnverify.checks import run_claim
    from attnverify.saddle import network

    asked, ran = [], []

    def forced(backend, **host):
        asked.append(backend.name)
        return sampler_size("cupy", **host)

    def recording(*args, chains, **kwargs):
        ran.append(chains)
        return run_sampler(*args, chains=chains, **kwargs)

    run_sampler = network.run_sampler
    monkeypatch.setenv(DEVICE_CHAINS_VARIABLE, "64")
    monkeypatch.setattr(sampling, "sampler_size", forced)
    monkeypatch.setattr(network, "run_sampler", recording)
    result = run_claim(_one_layer_theory(), profile="quick", seed=run_seed(0), examples=1)
    assert asked and set(asked) == {"numpy"}
    assert ran and set(ran) == {64}
    assert result.status == "holds", result
    assert all(0 < e.evidence.figures["worst"] <= 1 for e in result.examples)
