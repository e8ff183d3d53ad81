"""Saddle points over a grid of widths and temperatures by continuation: the same answers as solving each point
from the GP point, with the energy's precomputation shared over the grid."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from theories.attention_paths.problems import random_features

from attnverify.saddle import solve, sweep
from attnverify.theories.attention_paths.action import ActionConfig, attention_paths_action
from boundary_harness import assert_refused_as_endless
from seeds import seeded

WIDTHS = (1000, 50, 10)
TEMPERATURES = (1.0, 0.1, 0.02)
PRIORS = dict(sigma1=1.0, sigma2=1.0, sigma_a=1.0)


@pytest.mark.parametrize("space", ["feature", "kernel"])
def test_continuation_reaches_each_points_own_saddle_point(space, monkeypatch):
    """Every grid point equals the independent solve from the GP point (both to tolerance 1e-11, the minimum's
    smallest Hessian eigenvalue ≳ 1e-3 bounds their distance by ~1e-8), and the energy (its Gram matrix in the
    feature space) is built once for the whole grid."""
    import importlib
    module = importlib.import_module("attnverify.saddle.sweep")
    built = []
    original = module.data_energy
    monkeypatch.setattr(module, "data_energy", lambda *a, **k: built.append(1) or original(*a, **k))
    X, y = random_features(60 if space == "feature" else 20, 3, 4, seed=seeded(11))
    action = attention_paths_action((2, 2), equal_widths=True)
    grid = sweep(action, dict(X=X, y=y), widths=WIDTHS, temperatures=TEMPERATURES, space=space, tolerance=1e-11,
                 **PRIORS)
    assert len(built) == 1
    assert grid.space == space and set(grid.solutions) == {(float(N), float(T)) for N in WIDTHS for T in TEMPERATURES}
    for N in WIDTHS:
        for T in TEMPERATURES:
            alone = solve(action, dict(X=X, y=y), temperature=T, N=N, space=space, tolerance=1e-11, **PRIORS)
            point = grid.at(N, T)
            assert point.converged and point.is_minimum
            for name in ("U1", "U2", "Ua"):
                assert_allclose(point[name], alone[name], atol=1e-7)


def test_a_grid_over_one_width_per_layer_keeps_their_ratios():
    """N sets the largest width; the others keep their ratio to it (n = (N/2, N, N) here)."""
    X, y = random_features(30, 3, 4, seed=seeded(3))
    config = ActionConfig.build((2, 2), (5, 10, 10), 0.1)
    grid = sweep(config.action, dict(X=X, y=y), widths=[40], temperatures=[0.1], tolerance=1e-11,
                 **config.parameters())
    point = grid.at(40, 0.1)
    assert point.parameters["n0"] == 20 and point.parameters["n1"] == 40
    alone = solve(config.action, dict(X=X, y=y), temperature=0.1, tolerance=1e-11,
                  **ActionConfig.build((2, 2), (20, 40, 40), 0.1).parameters())
    assert_allclose(point.matrix("U1"), alone.matrix("U1"), atol=1e-8)


def test_the_grid_is_checked_by_name():
    X, y = random_features(30, 2, 2, seed=seeded(1))
    action = attention_paths_action((2,), equal_widths=True)
    priors = dict(sigma1=1.0, sigma_a=1.0)
    with pytest.raises(ValueError, match=r"widths\[1\] must be"):
        sweep(action, dict(X=X, y=y), widths=[10, -1], temperatures=[0.1], **priors)
    with pytest.raises(ValueError, match="temperatures must be a non-empty sequence"):
        sweep(action, dict(X=X, y=y), widths=[10], temperatures=[], **priors)
    with pytest.raises(KeyError, match="not on the grid"):
        sweep(action, dict(X=X, y=y), widths=[10], temperatures=[0.1], **priors).at(11, 0.1)
    with pytest.raises(TypeError, match="^progress must be a function of one line of text"):
        sweep(action, dict(X=X, y=y), widths=[10], temperatures=[0.1], progress=3, **priors)
    with pytest.raises(ValueError, match=r"U1 is 3 × 3 but the data have 2 paths: give C of shape \(3, 3, P, P\) or X of shape \(P, N0, 3\)"):
        sweep(attention_paths_action((3,), equal_widths=True), dict(X=X, y=y), widths=[10], temperatures=[0.1],
              **priors)


@pytest.mark.parametrize("widths, temperatures, named", [
    (np.arange(1, 10**4 + 1), np.logspace(-3, 0, 10**4), "len(widths) = 10,000"),
    ([10], np.logspace(-3, 0, 2 * 10**6), "len(temperatures) = 2,000,000"),
    (range(1, 10**12), [0.1], "len(widths) = 999,999,999,999"),
], ids=["10⁴ × 10⁴", "1 × 2·10⁶", "a range of 10¹² widths, never made an array"])
def test_a_grid_no_run_finishes_is_refused_before_the_energy_is_built(widths, temperatures, named, monkeypatch):
    """More grid points than MOST_GRID_POINTS (a saddle-point solve each) are refused in one line naming the longer
    axis, before the energy is built or any solve starts."""
    import importlib

    def never(*args, **kwargs):
        raise AssertionError("the energy was built before the refusal")

    monkeypatch.setattr(importlib.import_module("attnverify.saddle.sweep"), "data_energy", never)
    X, y = random_features(30, 2, 2, seed=seeded(1))
    assert_refused_as_endless(lambda: sweep(attention_paths_action((2,), equal_widths=True), dict(X=X, y=y),
                                            widths=widths, temperatures=temperatures, sigma1=1.0, sigma_a=1.0), named)
