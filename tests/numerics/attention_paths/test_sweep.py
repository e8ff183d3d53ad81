"""Saddle points over a grid of widths and temperatures by continuation: the same answers as solving each
point from the GP point, in fewer Newton iterations, with the energy's precomputation shared."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from numerics.attention_paths.problems import random_features

from attnverify.theories.attention_paths import energy_for, saddle_point_from_features
from attnverify.theories.attention_paths.sweep import saddle_points
from seeds import seeded

WIDTHS = (1000, 50, 10)
TEMPERATURES = (1.0, 0.1, 0.02)


@pytest.mark.parametrize("space", ["feature", "kernel"])
def test_continuation_reaches_each_points_own_saddle_point(space, monkeypatch):
    """Every grid point equals the independent solve from the GP point (both to tolerance 1e-11, the minimum's
    smallest Hessian eigenvalue ≳ 1e-3 bounds their distance by ~1e-8), and the energy (its Gram matrix in
    the feature space) is built once for the whole grid. (Iteration counts are the benchmark's business.)"""
    from attnverify.theories.attention_paths import sweep as sweep_module

    built = []
    monkeypatch.setattr(sweep_module, "energy_for", lambda *a, **k: built.append(1) or energy_for(*a, **k))
    X, y = random_features(60 if space == "feature" else 20, 3, 4, seed=seeded(11))
    sweep = saddle_points(X, y, heads=(2, 2), widths=WIDTHS, temperatures=TEMPERATURES, space=space, tolerance=1e-11)
    assert len(built) == 1
    assert sweep.space == space and set(sweep.solutions) == {(float(N), float(T)) for N in WIDTHS for T in TEMPERATURES}
    for N in WIDTHS:
        for T in TEMPERATURES:
            alone = saddle_point_from_features(X, y, heads=(2, 2), width=N, temperature=T, space=space, tolerance=1e-11)
            point = sweep.at(N, T)
            assert point.converged and point.is_minimum
            for mine, theirs in zip(point.order_parameters, alone.order_parameters):
                assert_allclose(mine, theirs, atol=1e-7)


def test_the_grid_is_checked_by_name():
    X, y = random_features(30, 2, 2, seed=seeded(1))
    with pytest.raises(ValueError, match=r"widths\[1\] must be"):
        saddle_points(X, y, heads=(2,), widths=[10, -1], temperatures=[0.1])
    with pytest.raises(ValueError, match="temperatures must be a non-empty sequence"):
        saddle_points(X, y, heads=(2,), widths=[10], temperatures=[])
    with pytest.raises(KeyError, match="not on the grid"):
        saddle_points(X, y, heads=(2,), widths=[10], temperatures=[0.1]).at(11, 0.1)
    with pytest.raises(ValueError, match="paths"):
        saddle_points(X, y, heads=(3,), widths=[10], temperatures=[0.1])
