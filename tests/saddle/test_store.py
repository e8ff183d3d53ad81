"""The folder of finished saddle-point solutions: round trip, keys, and reuse by a sweep and the one-shot experiment."""

import numpy as np
import pytest

from attnverify.saddle import SolutionStore, sweep
from attnverify.saddle.store import fingerprint
from attnverify.theories.attention_paths.one_shot import analysis as experiment
from attnverify.theories.attention_paths.action import ActionConfig, attention_paths_action


def test_round_trip_and_keys(tmp_path):
    store = SolutionStore(tmp_path / "store")
    action = attention_paths_action((2,), equal_widths=True)  # U1 (2 × 2), Ua; parameters N, sigma1, sigma_a
    values = (10.0, 1.0, 1.0)
    assert len(store) == 0 and store.get("abc", action, values, 0.5, 1e-6) is None
    order = {"U1": np.eye(2) * 2.0, "Ua": 0.7}
    store.put("abc", action, values, 0.5, 1e-6, order, 12.5)
    stored, seconds = store.get("abc", action, values, 0.5, 1e-6)
    assert seconds == 12.5 and set(stored) == {"U1", "Ua"}
    np.testing.assert_array_equal(stored["U1"], order["U1"])
    assert stored["Ua"] == 0.7
    # any change of data, action, parameters or settings is another solution
    other_action = attention_paths_action((3,), equal_widths=True)
    for other in [("abd", action, values, 0.5, 1e-6), ("abc", other_action, values, 0.5, 1e-6),
                  ("abc", action, (20.0, 1.0, 1.0), 0.5, 1e-6), ("abc", action, values, 0.25, 1e-6),
                  ("abc", action, values, 0.5, 1e-9)]:
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
    """A stored solution starts its own solve and is re-verified there (zero Newton iterations), never solved again
    from the GP point; a width not in the store is solved and filed."""
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
    config = ActionConfig.build((2,), 1.0, 0.1)
    grid = sweep(config.action, dict(X=X, y=y), widths=[5], temperatures=(0.1, 1.0),
                 tolerance=experiment.SOLVER_TOLERANCE, store=store, **config.parameters())
    assert grid.stored == {(5.0, 0.1), (5.0, 1.0)} and grid.iterations == 0
    experiment.validated_point(paths, 6, (0.1,), heads=(2,), store=store)
    assert len(store) == 3


def test_a_record_of_what_is_no_array_is_refused_by_name(tmp_path):
    with pytest.raises(TypeError, match=r"^arrays\['a'\] must be an array of numbers"):
        SolutionStore(tmp_path).save("x", {"a": "not an array"}, {})
