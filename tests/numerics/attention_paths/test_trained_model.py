"""The gradient-descent network (PyTorch): its forward pass is the attention-path form with the exported
query/key weights, and training on one-shot digit episodes lowers the loss. Skipped without torch."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from attnverify.numerics.attention_paths import features, one_shot, trained_model  # noqa: E402

SMALL = trained_model.ArchitectureConfig(layers=2, heads=2, width=6, qk_dim=3, token_dim=64)


def test_forward_pass_is_the_path_sum_with_exported_query_key():
    """f(x) = Σ_π V^eff_π · ξ^π(x), ξ^π = x Ω⁽¹⁾_{h1} ω⁽²⁾_{h2} built by the theory's own feature code."""
    network = trained_model.build_network(SMALL, seed=3)
    x = np.random.default_rng(0).standard_normal((5, 7, 64))  # (B, S, N0)
    with torch.no_grad():
        f = network(torch.as_tensor(x)).numpy()
    Q, K = trained_model.export_query_key(network)
    xt = np.swapaxes(x, 1, 2)  # (B, N0, S) for the feature code
    layers = [[features.attention_matrix_qk(xt, Q[l, h], K[l, h]) for h in range(SMALL.heads)] for l in range(SMALL.layers)]
    X = features.path_features(xt, layers, readout="average_pooling")  # (B, N0, 𝓗) with √(1/(N0𝓗))
    paths = SMALL.heads**SMALL.layers
    xi = X * math.sqrt(SMALL.token_dim * paths)
    V0 = network.input_projection.detach().numpy()
    V = [v.detach().numpy() for v in network.values]
    a = network.readout.detach().numpy()
    n, H = SMALL.width, SMALL.heads
    total = np.zeros(x.shape[0])
    for h1 in range(H):
        for h2 in range(H):
            effective = a @ V[1][h2] @ V[0][h1] @ V0 / math.sqrt(n * H * n * H * n * SMALL.token_dim)
            total += xi[:, :, h1 * H + h2] @ effective
    np.testing.assert_allclose(f, total, rtol=1e-10, atol=1e-12)


def test_pruning_a_head_removes_its_paths():
    network = trained_model.build_network(SMALL, seed=4)
    x = torch.as_tensor(np.random.default_rng(1).standard_normal((3, 5, 64)))
    with torch.no_grad():
        network.head_mask[:] = 0.0
        assert torch.all(network(x) == 0.0)


def test_training_on_digit_episodes_lowers_the_loss():
    data = one_shot.load_digits()
    train_classes, _ = one_shot.split_classes(data, 0.4, seed=0)
    episodes = one_shot.draw_episodes(data, train_classes, 512, seed=0)
    config = trained_model.TrainingConfig(learning_rate=3e-3, epochs=4, batch_size=64, seed=0)
    messages = []
    result = trained_model.train_network(episodes.tokens, episodes.y, SMALL, config, progress=messages.append)
    assert len(result.losses) == 4 and len(messages) == 4
    assert result.losses[-1] < result.losses[0]
    assert 0.0 <= trained_model.accuracy(result.network, episodes.tokens, episodes.y) <= 1.0


def test_bad_configs_are_named():
    with pytest.raises(ValueError, match="heads"):
        trained_model.ArchitectureConfig(heads=0)
    with pytest.raises(ValueError, match="learning_rate"):
        trained_model.TrainingConfig(learning_rate=-1.0)
    with pytest.raises(ValueError, match="tokens"):
        trained_model.train_network(np.zeros((4, 3, 5)), np.zeros(4), SMALL, trained_model.TrainingConfig(epochs=1))
