"""The folder of finished saddle-point solutions: round trip, keys, and reuse by the one-shot experiment."""

import numpy as np
import pytest

from attnverify.theories.attention_paths import one_shot_analysis as experiment
from attnverify.theories.attention_paths.solution_store import SolutionStore, fingerprint


def test_round_trip_and_keys(tmp_path):
    store = SolutionStore(tmp_path / "store")
    assert len(store) == 0 and store.get("abc", (4, 4), 10, 0.5, 1e-6) is None
    U = (np.eye(3) * 2.0, np.eye(2))
    store.put("abc", (4, 4), 10, 0.5, 1e-6, U, 12.5)
    stored, seconds = store.get("abc", (4, 4), 10, 0.5, 1e-6)
    assert seconds == 12.5 and len(stored) == 2
    for a, b in zip(stored, U):
        np.testing.assert_array_equal(a, b)
    # any change of inputs or settings is another solution
    for other in [("abd", (4, 4), 10, 0.5, 1e-6), ("abc", (4, 2), 10, 0.5, 1e-6), ("abc", (4, 4), 20, 0.5, 1e-6),
                  ("abc", (4, 4), 10, 0.25, 1e-6), ("abc", (4, 4), 10, 0.5, 1e-9)]:
        assert store.get(*other) is None
    assert len(store) == 1 and not list((tmp_path / "store").glob("*.part"))


def test_fingerprint_sees_every_value_and_the_shape():
    X, y = np.arange(12.0).reshape(2, 3, 2), np.array([1.0, -1.0])
    base = fingerprint(X, y)
    assert base == fingerprint(X.copy(), y.copy())
    changed = X.copy()
    changed[1, 2, 1] += 1e-12
    assert fingerprint(changed, y) != base
    assert fingerprint(X.reshape(2, 2, 3), y) != base
    assert fingerprint(X, -y) != base


def test_validated_point_reuses_stored_solutions(tmp_path):
    """A stored solution starts its own solve and is re-verified there (zero Newton iterations), never
    solved again from the GP point; a width not in the store is solved and filed."""
    from attnverify.theories.attention_paths.sweep import saddle_points

    rng = np.random.default_rng(2)
    X = rng.standard_normal((40, 3, 2))
    y = np.sign(X[:, 0, 0] + 0.5 * rng.standard_normal(40))
    paths = experiment.PathData(X, y, X, y, X, y)
    store = SolutionStore(tmp_path)
    first = experiment.validated_point(paths, 5, (0.1, 1.0), heads=(2,), store=store)
    assert len(store) == 2
    again = experiment.validated_point(paths, 5, (0.1, 1.0), heads=(2,), store=store)
    assert again.temperature == first.temperature and again.validation_accuracy == first.validation_accuracy
    np.testing.assert_array_equal(again.test.order_parameter, first.test.order_parameter)
    sweep = saddle_points(X, y, heads=(2,), widths=[5], temperatures=(0.1, 1.0),
                          tolerance=experiment.SOLVER_TOLERANCE, store=store)
    assert sweep.stored == {(5.0, 0.1), (5.0, 1.0)} and sweep.iterations == 0
    experiment.validated_point(paths, 6, (0.1,), heads=(2,), store=store)
    assert len(store) == 3
