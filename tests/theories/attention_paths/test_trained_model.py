"""The gradient-descent network (PyTorch): its path-form forward pass equals the layer-by-layer network
and the theory's own path features with the exported heads, pruned or not; training lowers the loss.
Skipped without torch."""

import math

import numpy as np
import pytest
from seeds import seeded

torch = pytest.importorskip("torch")

from attnverify.theories.attention_paths import features  # noqa: E402
from attnverify.theories.attention_paths.one_shot import task as one_shot, trained_model  # noqa: E402

SMALL = trained_model.ArchitectureConfig(layers=2, heads=3, width=6, qk_dim=3, token_dim=64)
DEEP = trained_model.ArchitectureConfig(layers=3, heads=2, width=5, qk_dim=4, token_dim=8)


def _tokens(config, seed, batch=5, tokens=7):
    return np.random.default_rng(seed).standard_normal((batch, tokens, config.token_dim))


@pytest.mark.parametrize("config", [SMALL, DEEP])
def test_path_form_equals_the_layerwise_network(config):
    network = trained_model.build_network(config, seed=seeded(3))
    x = torch.as_tensor(_tokens(config, 0))
    with torch.no_grad():
        np.testing.assert_allclose(network(x).numpy(), network.layerwise(x).numpy(), rtol=1e-10, atol=1e-13)
        network.head_mask[0, 1] = 0.0
        network.head_mask[-1, 0] = 0.0
        np.testing.assert_allclose(network(x).numpy(), network.layerwise(x).numpy(), rtol=1e-10, atol=1e-13)


def test_forward_pass_is_the_path_sum_with_exported_query_key():
    """f(x) = Σ_π V^eff_π · ξ^π(x), ξ^π = x Ω⁽¹⁾_{h1} ω⁽²⁾_{h2} built by the theory's own feature code from the
    exported Q and K, and V^eff = aᵀV⁽²⁾_{h2}V⁽¹⁾_{h1}V⁽⁰⁾ multiplied out here in numpy."""
    network = trained_model.build_network(SMALL, seed=seeded(3))
    x = _tokens(SMALL, 1)
    with torch.no_grad():
        f = network.layerwise(torch.as_tensor(x)).numpy()
    Q, K = trained_model.export_query_key(network)
    xt = np.swapaxes(x, 1, 2)  # (B, N0, S) for the feature code
    layers = [[features.attention_matrix_qk(xt, Q[l, h], K[l, h]) for h in range(SMALL.heads)] for l in range(SMALL.layers)]
    X = features.path_features(xt, layers, readout="average_pooling")  # (B, N0, 𝓗) with √(1/(N0𝓗))
    xi = X * math.sqrt(SMALL.token_dim * SMALL.heads**2)
    V0 = network.input_projection.detach().numpy()
    V = [v.detach().numpy() for v in network.values]
    a = network.readout.detach().numpy()
    H = SMALL.heads
    total = np.zeros(x.shape[0])
    for h1 in range(H):
        for h2 in range(H):
            effective = a @ V[1][h2] @ V[0][h1] @ V0 / H
            total += xi[:, :, h1 * H + h2] @ effective
    np.testing.assert_allclose(f, total, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("pruned", [[], [(0, 1)], [(1, 0), (1, 2)], [(0, 0), (0, 2), (1, 1)]])
def test_exported_heads_reproduce_the_network_pruned_or_not(pruned):
    """TrainedHeads (score forms + effective path weights, numpy) gives the torch network's f, with the
    layers' sum of heads renormalised to (H − #pruned)^{-1/2} (spec §2.5)."""
    network = trained_model.build_network(SMALL, seed=seeded(5))
    heads = trained_model.export_heads(network)
    x = _tokens(SMALL, 2)
    with torch.no_grad():
        for layer, h in pruned:
            network.head_mask[layer, h] = 0.0
        expected = network.layerwise(torch.as_tensor(x)).numpy()
    np.testing.assert_allclose(heads.outputs(heads.path_features(x), pruned), expected, rtol=1e-10, atol=1e-13)


def test_pruning_every_head_of_a_layer_silences_the_network():
    network = trained_model.build_network(SMALL, seed=seeded(4))
    x = torch.as_tensor(_tokens(SMALL, 3))
    with torch.no_grad():
        network.head_mask[1] = 0.0
        assert torch.all(network(x) == 0.0) and torch.all(network.layerwise(x) == 0.0)


def test_training_on_digit_episodes_lowers_the_loss():
    data = one_shot.load_digits()
    train_classes, _ = one_shot.split_classes(data, 0.4, seed=seeded(0))
    episodes = one_shot.draw_episodes(data, train_classes, 512, seed=seeded(0))
    config = trained_model.TrainingConfig(learning_rate=3e-3, epochs=4, batch_size=64, seed=seeded(0))
    messages = []
    result = trained_model.train_network(episodes.tokens, episodes.y, SMALL, config, progress=messages.append,
                                         validation=(episodes.tokens[:64], episodes.y[:64]))
    assert len(result.losses) == 4 and len(messages) == 4 and len(result.validation_accuracy) == 4
    assert result.losses[-1] < result.losses[0]
    assert 0.0 <= trained_model.accuracy(result.network, episodes.tokens, episodes.y) <= 1.0


def test_training_is_reproducible_from_its_seed():
    data = one_shot.load_digits()
    episodes = one_shot.draw_episodes(data, [0, 1, 2], 128, seed=seeded(1))
    config = trained_model.TrainingConfig(learning_rate=1e-3, epochs=2, batch_size=32, seed=seeded(7))
    first, second = (trained_model.export_heads(trained_model.train_network(episodes.tokens, episodes.y, SMALL, config).network)
                     for _ in range(2))
    np.testing.assert_array_equal(first.path_weights, second.path_weights)
    np.testing.assert_array_equal(first.score_forms, second.score_forms)


def test_bad_configs_are_named():
    with pytest.raises(ValueError, match="heads"):
        trained_model.ArchitectureConfig(heads=0)
    with pytest.raises(ValueError, match="learning_rate"):
        trained_model.TrainingConfig(learning_rate=-1.0)
    with pytest.raises(ValueError, match="tokens"):
        trained_model.train_network(np.zeros((4, 3, 5)), np.zeros(4), SMALL, trained_model.TrainingConfig(epochs=1))
