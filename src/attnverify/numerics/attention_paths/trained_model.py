"""The gradient-descent-trained attention network of the paper's figure 3 (PyTorch, optional extra).

Spec: ``shared/papers/attention_paths.md`` §1 (forward pass) and §4.2 (training). Same architecture as
the Bayesian network, now with query/key weights learned too:

    z⁽⁰⁾ = V⁽⁰⁾x/√N0,   z⁽ℓ⁾_{:,t} = (H n)^{-1/2} Σ_h Σ_s V⁽ℓ⁾_h z⁽ℓ⁻¹⁾_{:,s} Ω⁽ℓ⁾_h(x)_{st},
    Ω⁽ℓ⁾_h(x)_{st} = softmax_s((K⁽ℓ⁾_h x_s)·(Q⁽ℓ⁾_h x_t)/√d_qk),   f(x) = n^{-1/2} a·mean_t z⁽ᴸ⁾_{:,t}

(attention reads the bare input x in every layer; linear values; no residual, MLP or bias; average
pooling readout). Trained by Adam on the mean-squared error to y = ±1. ``torch`` is imported only
inside these functions: install the ``[train]`` extra to use them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..arguments import integer, real


@dataclass(frozen=True)
class ArchitectureConfig:
    """Layers L, heads H per layer, value width n, query/key dimension d_qk, token dimension N0."""

    layers: int = 2
    heads: int = 4
    width: int = 512
    qk_dim: int = 128
    token_dim: int = 64

    def __post_init__(self) -> None:
        for name in ("layers", "heads", "width", "qk_dim", "token_dim"):
            integer(name, getattr(self, name), 1)


@dataclass(frozen=True)
class TrainingConfig:
    """Adam with learning rate ``learning_rate``, ``epochs`` passes in batches of ``batch_size`` (§4.2)."""

    learning_rate: float = 3e-4
    epochs: int = 10
    batch_size: int = 128
    seed: int = 0

    def __post_init__(self) -> None:
        real("learning_rate", self.learning_rate, low=0.0, open_low=True)
        integer("epochs", self.epochs, 1)
        integer("batch_size", self.batch_size, 1)
        integer("seed", self.seed, 0)


def _torch():
    try:
        import torch
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise ImportError("training the attention network needs PyTorch: pip install -e '.[train]'") from error
    return torch


def build_network(config: ArchitectureConfig, seed: int):
    """The network as a ``torch.nn.Module`` with N(0, 1) weights (the 1/√fan-in factors are in the
    forward pass, as in the Bayesian network's priors)."""
    torch = _torch()
    nn = torch.nn

    class AttentionNetwork(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            generator = torch.Generator().manual_seed(integer("seed", seed, 0))

            def normal(*shape, scale=1.0):
                return nn.Parameter(scale * torch.randn(*shape, generator=generator, dtype=torch.float64))

            c = config
            self.config = c
            self.input_projection = normal(c.width, c.token_dim)
            self.values = nn.ParameterList([normal(c.heads, c.width, c.width) for _ in range(c.layers)])
            self.queries = nn.ParameterList([normal(c.heads, c.qk_dim, c.token_dim, scale=c.token_dim**-0.5) for _ in range(c.layers)])
            self.keys = nn.ParameterList([normal(c.heads, c.qk_dim, c.token_dim, scale=c.token_dim**-0.5) for _ in range(c.layers)])
            self.readout = normal(c.width)
            self.register_buffer("head_mask", torch.ones(c.layers, c.heads, dtype=torch.float64))

        def attention(self, x, layer: int):
            """Ω (B, H, S_key, S_query) from the bare input x (B, S, N0)."""
            q = torch.einsum("hdi,bti->bhtd", self.queries[layer], x)
            k = torch.einsum("hdi,bsi->bhsd", self.keys[layer], x)
            scores = torch.einsum("bhsd,bhtd->bhst", k, q) / math.sqrt(self.config.qk_dim)
            return torch.softmax(scores, dim=2)

        def forward(self, x):
            c = self.config
            z = torch.einsum("ni,bsi->bsn", self.input_projection, x) / math.sqrt(c.token_dim)
            for layer in range(c.layers):
                omega = self.attention(x, layer) * self.head_mask[layer][None, :, None, None]
                mixed = torch.einsum("bhst,bsn->bhtn", omega, z)
                z = torch.einsum("hmn,bhtn->btm", self.values[layer], mixed) / math.sqrt(c.heads * c.width)
            return z.mean(dim=1) @ self.readout / math.sqrt(c.width)

    return AttentionNetwork()


@dataclass
class TrainingResult:
    """The trained network, its training-loss history (one mean per epoch) and the seconds spent."""

    network: Any
    losses: list[float]
    seconds: float


def train_network(tokens: Any, y: Any, architecture: ArchitectureConfig, training: TrainingConfig,
                  progress: Callable[[str], None] | None = None) -> TrainingResult:
    """Adam on the mean-squared error to y = ±1 (§4.2), float64 on the CPU, seeded by ``training.seed``."""
    import time

    torch = _torch()
    x = torch.as_tensor(np.asarray(tokens, dtype=np.float64))
    target = torch.as_tensor(np.asarray(y, dtype=np.float64))
    if x.ndim != 3 or x.shape[2] != architecture.token_dim or target.shape != (x.shape[0],):
        raise ValueError(f"tokens must have shape (P, S, {architecture.token_dim}) and y shape (P,), "
                         f"got {tuple(x.shape)} and {tuple(target.shape)}")
    network = build_network(architecture, training.seed)
    optimiser = torch.optim.Adam(network.parameters(), lr=training.learning_rate)
    shuffle = torch.Generator().manual_seed(training.seed + 1)
    losses, start = [], time.perf_counter()
    for epoch in range(training.epochs):
        order = torch.randperm(x.shape[0], generator=shuffle)
        total = 0.0
        for batch in order.split(training.batch_size):
            optimiser.zero_grad()
            loss = torch.mean((network(x[batch]) - target[batch]) ** 2)
            loss.backward()
            optimiser.step()
            total += float(loss.detach()) * batch.numel()
        losses.append(total / x.shape[0])
        if progress is not None:
            progress(f"epoch {epoch + 1}/{training.epochs}: training loss {losses[-1]:.4f}")
    return TrainingResult(network, losses, time.perf_counter() - start)


def accuracy(network: Any, tokens: Any, y: Any) -> float:
    """Fraction of sign(f(x)) = y."""
    torch = _torch()
    with torch.no_grad():
        f = network(torch.as_tensor(np.asarray(tokens, dtype=np.float64))).numpy()
    return float(np.mean(np.sign(f) == np.asarray(y)))


def export_query_key(network: Any) -> tuple[np.ndarray, np.ndarray]:
    """(Q, K), each (L, H, d_qk, N0): the trained query/key weights for the path features."""
    queries = np.stack([q.detach().numpy() for q in network.queries])
    keys = np.stack([k.detach().numpy() for k in network.keys])
    return queries, keys
