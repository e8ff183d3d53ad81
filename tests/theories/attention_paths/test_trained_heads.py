"""TrainedHeads (numpy): storage round trip, pruning factors with the layers' renormalisation, the
gradient-descent order parameter, and the one-shot experiment's pruning and temperature selection."""

import math

import numpy as np
import pytest

from attnverify.theories.attention_paths.one_shot import analysis as experiment
from attnverify.theories.attention_paths.one_shot import trained_heads
from attnverify.theories.attention_paths.theory_points import evaluate


def _network(seed=0, layers=2, heads=3, n0=4):
    rng = np.random.default_rng(seed)
    return trained_heads.TrainedHeads(rng.standard_normal((layers, heads, n0, n0)),
                                      rng.standard_normal((heads**layers, n0)), {"seed": seed})


def test_save_and_load_round_trip(tmp_path):
    networks = {0: _network(0), 3: _network(3)}
    path = tmp_path / "nets.npz"
    trained_heads.save_networks(path, networks, settings={"a": 1})
    loaded, shared = trained_heads.load_networks(path)
    assert shared == {"settings": {"a": 1}} and sorted(loaded) == [0, 3]
    for seed in networks:
        np.testing.assert_array_equal(loaded[seed].score_forms, networks[seed].score_forms)
        np.testing.assert_array_equal(loaded[seed].path_weights, networks[seed].path_weights)
        assert loaded[seed].metadata == {"seed": seed}


def test_path_factors_zero_pruned_paths_and_renormalise_layers():
    network = _network()
    factors = network.path_factors([(0, 1), (1, 2)])
    expected = math.sqrt(3 / 2) * math.sqrt(3 / 2)
    for index, (h1, h2) in enumerate(trained_heads.path_index((3, 3))):
        assert factors[index] == (0.0 if h1 == 1 or h2 == 2 else pytest.approx(expected))
    np.testing.assert_array_equal(network.path_factors(), np.ones(9))


def test_outputs_are_the_path_sum_and_pruning_is_linear():
    network = _network(1)
    X = np.random.default_rng(2).standard_normal((5, 4, 9))
    by_hand = math.sqrt(4 * 9) * np.einsum("nip,pi->n", X, network.path_weights)
    np.testing.assert_allclose(network.outputs(X), by_hand, rtol=1e-13)
    pruned = network.outputs(X, [(1, 0)])
    keep = [i for i, (_, h2) in enumerate(trained_heads.path_index((3, 3))) if h2 != 0]
    np.testing.assert_allclose(pruned, math.sqrt(1.5) * math.sqrt(36) * np.einsum("nip,pi->n", X[:, :, keep],
                                                                                    network.path_weights[keep]), rtol=1e-13)


def test_gradient_descent_order_parameter_is_the_weight_overlap():
    network = _network(2)
    U = network.order_parameter()
    assert U[1, 4] == pytest.approx(network.path_weights[1] @ network.path_weights[4])
    assert np.all(np.linalg.eigvalsh(U) > -1e-12)


def test_bad_pruning_and_shapes_are_named():
    network = _network()
    with pytest.raises(ValueError, match="every head of a layer"):
        network.path_factors([(0, 0), (0, 1), (0, 2)])
    with pytest.raises(ValueError, match="pruned heads"):
        network.path_factors([(2, 0)])
    with pytest.raises(ValueError, match="path_weights"):
        trained_heads.TrainedHeads(np.zeros((2, 2, 3, 3)), np.zeros((3, 3)))
    with pytest.raises(ValueError, match="tokens"):
        network.path_features(np.zeros((2, 5, 7)))


def test_pruning_order_keeps_a_head_in_every_layer():
    network = _network(heads=2)
    scores = {(0, 0): 0.1, (0, 1): 0.2, (1, 0): 0.3, (1, 1): 1.0}
    assert experiment.pruning_order(network, scores) == [(0, 0), (1, 0)]


def test_pruning_table_drops_are_paired_differences():
    network = _network(3)
    rng = np.random.default_rng(4)
    X, y = rng.standard_normal((400, 4, 9)), np.sign(rng.standard_normal(400))
    scores = {h: float(i) for i, h in enumerate(network.all_heads())}
    table = experiment.pruning_table(network, X, y, scores)
    for head in network.all_heads():
        assert table.drops[head].mean == pytest.approx(table.baseline.mean - table.single[head].mean, abs=1e-12)
    assert table.cumulative[0].mean == table.baseline.mean and len(table.cumulative) == 5


def test_temperature_is_chosen_on_validation_not_test():
    """With validation = training data and a test set whose labels are flipped, the chosen T is the one best
    on validation even though it is the worst on test."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((30, 3, 1))
    y = np.sign(X[:, 0, 0] + 0.3 * rng.standard_normal(30))
    paths = experiment.PathData(X, y, X, y, X, -y)
    point = experiment.validated_point(paths, np.inf, (0.01, 100.0), heads=(1,))
    best = max(point.validation_accuracy, key=point.validation_accuracy.get)
    assert point.temperature == best
    other = evaluate(np.eye(1), X, y, X, -y, 100.0 if best == 0.01 else 0.01)
    assert point.test.accuracy.mean <= other.accuracy.mean


def test_the_episodes_without_the_training_set_are_the_same():
    """``one_shot_data(training=False)`` (what the experiments use) draws every other set exactly as the full draw."""
    setup = experiment.OneShotSetup(training_episodes=50, theory_episodes=20, validation_episodes=30, test_episodes=30)
    full, lean = experiment.one_shot_data(setup), experiment.one_shot_data(setup, training=False)
    assert lean.training is None and full.training.y.size == 50
    for name in ("theory", "validation", "test"):
        a, b = getattr(full, name), getattr(lean, name)
        assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.y, b.y) and np.array_equal(a.indices, b.indices)
    assert np.array_equal(full.test_classes, lean.test_classes)
