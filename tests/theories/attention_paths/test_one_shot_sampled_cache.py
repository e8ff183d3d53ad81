"""Figure 3's sampled networks are kept in the solution store and reused, not sampled again."""

import numpy as np
import pytest

from attnverify.theories.attention_paths.one_shot import analysis as experiment
from attnverify.theories.attention_paths import sampling
from attnverify.saddle import SolutionStore
from attnverify.theories.attention_paths.one_shot import experiments as one_shot
from seeds import seeded


TINY = sampling.SamplerSettings(chains=4, warmup=10, draws=4)  # 2 groups of 2 chains


def _tiny_paths(seed: int) -> experiment.PathData:
    """8 episodes of random 16-path features (the first 5 are the test set)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((8, 2, int(np.prod(experiment.HEADS)))) / 4
    y = np.sign(rng.standard_normal(8))
    return experiment.PathData(X, y, X, y, X[:5], y[:5])


def test_sampled_networks_are_stored_and_reused(tmp_path, monkeypatch):
    paths, tiny = _tiny_paths(seeded(3)), TINY
    store = SolutionStore(tmp_path)
    first = one_shot.sampled_networks(paths, 0.5, seeded(7), store, settings=tiny)
    assert len(store) == 1

    def no_sampling(*args, **kwargs):
        raise AssertionError("stored samples were drawn again")

    monkeypatch.setattr(sampling, "sample_posterior", no_sampling)
    again = one_shot.sampled_networks(paths, 0.5, seeded(7), store, settings=tiny)
    for name in ("mean", "mcse", "rhat", "ess_bulk"):
        np.testing.assert_array_equal(getattr(again.order_parameter, name), getattr(first.order_parameter, name))
    assert again.accuracy == first.accuracy and again.diagnostics == first.diagnostics
    with pytest.raises(AssertionError, match="drawn again"):  # another seed is another run
        one_shot.sampled_networks(paths, 0.5, seeded(8), store, settings=tiny)


def test_the_chain_groups_are_tasks_of_their_own_and_pool_to_the_direct_result(tmp_path, monkeypatch):
    """The thorough run's sampled networks: each chain group a stored experiment (a task on a cluster), pooled to
    what one call of sampled_networks gives; once kept, a group has nothing left to sample."""
    from attnverify.execution.store import Store

    paths, tiny = _tiny_paths(4), TINY
    monkeypatch.setattr(one_shot, "SAMPLER", tiny)
    monkeypatch.setattr(one_shot, "_sampling_inputs", lambda sweep, store: (paths, 0.5))
    kept = SolutionStore(tmp_path / "kept")
    monkeypatch.setattr(one_shot, "solution_store", lambda store: kept)
    store = Store(tmp_path / "run")
    sweep = dict(training_seed=0, P=8, widths=(10,), temperatures=(0.5,))  # the inputs _sampling_inputs gives
    groups = [store.get(one_shot.one_shot_chain_group, seed=7, group=g, **sweep) for g in range(2)]
    pooled = store.get(one_shot.one_shot_sampled_networks, seed=7, **sweep)
    direct = one_shot.sampled_networks(paths, 0.5, 7, SolutionStore(tmp_path / "direct"), settings=tiny)
    np.testing.assert_array_equal(pooled.order_parameter.mean, direct.order_parameter.mean)
    assert pooled.diagnostics == direct.diagnostics | {"seconds": pooled.diagnostics["seconds"]}
    assert [g.seed for g in groups] == [sampling.chain_group_seed(7, g) for g in range(2)] == pooled.diagnostics["seed"]
    assert one_shot.one_shot_chain_group(seed=7, group=0, **sweep, store=Store(tmp_path / "rerun")) is None
    with pytest.raises(ValueError, match="group must be an integer"):
        one_shot.one_shot_chain_group(seed=7, group=2, **sweep, store=store)
