"""Figure 3's sampled networks are kept in the solution store and reused, not sampled again."""

import numpy as np
import pytest

from attnverify.numerics.attention_paths import one_shot_experiment as experiment
from attnverify.numerics.attention_paths import sampling
from attnverify.numerics.attention_paths.solution_store import SolutionStore
from attnverify.experiments import one_shot


def test_sampled_networks_are_stored_and_reused(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    paths_count = int(np.prod(experiment.HEADS))
    X = rng.standard_normal((8, 2, paths_count)) / 4
    y = np.sign(rng.standard_normal(8))
    paths = experiment.PathData(X, y, X, y, X[:5], y[:5])
    tiny = sampling.SamplerSettings(chains=2, warmup=10, draws=4)
    store = SolutionStore(tmp_path)
    first = one_shot.sampled_networks(paths, 0.5, 7, store, settings=tiny)
    assert len(store) == 1

    def no_sampling(*args, **kwargs):
        raise AssertionError("stored samples were drawn again")

    monkeypatch.setattr(sampling, "sample_posterior", no_sampling)
    again = one_shot.sampled_networks(paths, 0.5, 7, store, settings=tiny)
    for name in ("mean", "mcse", "rhat", "ess_bulk"):
        np.testing.assert_array_equal(getattr(again.order_parameter, name), getattr(first.order_parameter, name))
    assert again.accuracy == first.accuracy and again.diagnostics == first.diagnostics
    with pytest.raises(AssertionError, match="drawn again"):  # another seed is another run
        one_shot.sampled_networks(paths, 0.5, 8, store, settings=tiny)
