"""The gradient-descent-trained attention network of the paper's figure 3 (PyTorch, optional extra).

Spec: ``docs/papers/attention_paths.md`` §1 (forward pass) and §4.2 (training). Same architecture as
the Bayesian network, now with query/key weights learned too:

    z⁽⁰⁾ = V⁽⁰⁾x,   z⁽ℓ⁾_{:,t} = H^{-1/2} Σ_h Σ_s V⁽ℓ⁾_h z⁽ℓ⁻¹⁾_{:,s} Ω⁽ℓ⁾_h(x)_{st},
    Ω⁽ℓ⁾_h(x)_{st} = softmax_s((K⁽ℓ⁾_h x_s)·(Q⁽ℓ⁾_h x_t)/√d_qk),   f(x) = a·mean_t z⁽ᴸ⁾_{:,t}

(the weights carry their 1/√fan-in, see `build_network`; attention reads the bare input x in
every layer; linear values; no residual, MLP or bias; average pooling readout).

Because the values are linear, f is the attention-path sum (spec §1.1)

    f(x) = Σ_π V^eff_π · ξ^π(x),   V^eff_{(h1…hL)} = aᵀV⁽ᴸ⁾_{hL}⋯V⁽¹⁾_{h1}V⁽⁰⁾ / √(Π_ℓ H_ℓ),

which `forward` evaluates (the same function of the same parameters as the layer-by-layer
`layerwise`, but without the (B, H, S, n) value products, so training at n = 512 is cheap on a
CPU). Pruning head (ℓ, h) zeroes it and renormalises its layer's sum of heads to (H − #pruned)^{-1/2}
(spec §2.5). Trained by Adam on the mean-squared error to y = ±1. ``torch`` is imported only inside
these functions: install the ``[train]`` extra to use them.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np

from ....base import arguments
from ....base.arguments import Checked, checked, integer, real
from .trained_heads import TrainedHeads


@dataclass(frozen=True)
class ArchitectureConfig(Checked):
    """Layers L, heads H per layer, value width n, query/key dimension d_qk, token dimension N0."""

    layers: int = checked(integer, 1, default=2)
    heads: int = checked(integer, 1, default=4)
    width: int = checked(integer, 1, default=512)
    qk_dim: int = checked(integer, 1, default=128)
    token_dim: int = checked(integer, 1, default=64)


@dataclass(frozen=True)
class TrainingConfig(Checked):
    """Adam with learning rate ``learning_rate``, ``epochs`` passes in batches of ``batch_size`` (§4.2)."""

    learning_rate: float = checked(real, low=0.0, open_low=True, default=3e-4)
    epochs: int = checked(integer, 1, default=10)
    batch_size: int = checked(integer, 1, default=128)
    seed: int = checked(integer, 0, default=0)


def _torch():
    try:
        import torch
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise ImportError("training the attention network needs PyTorch: pip install -e '.[train]'") from error
    return torch


def build_network(config: ArchitectureConfig, seed: int):
    """The network as a ``torch.nn.Module``. Weights are stored as PyTorch layers store them, with the
    1/√fan-in inside (V⁽⁰⁾/√N0, V⁽ℓ⁾/√n, a/√n, drawn N(0, 1/fan-in): the Bayesian priors at σ² = 1), so
    Adam moves them at the rate it moves the paper's ``nn.Linear`` layers; only the sum-of-heads factor
    H^{-1/2} is applied in the forward pass. Q and K start at N(0, 1/N0)."""
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
            self.input_projection = normal(c.width, c.token_dim, scale=c.token_dim**-0.5)
            self.values = nn.ParameterList([normal(c.heads, c.width, c.width, scale=c.width**-0.5) for _ in range(c.layers)])
            self.queries = nn.ParameterList([normal(c.heads, c.qk_dim, c.token_dim, scale=c.token_dim**-0.5) for _ in range(c.layers)])
            self.keys = nn.ParameterList([normal(c.heads, c.qk_dim, c.token_dim, scale=c.token_dim**-0.5) for _ in range(c.layers)])
            self.readout = normal(c.width, scale=c.width**-0.5)
            self.register_buffer("head_mask", torch.ones(c.layers, c.heads, dtype=torch.float64))

        def score_forms(self, layer: int):
            """W_h = K_hᵀ Q_h / √d_qk (H, N0, N0): score_{st} = (K x_s)·(Q x_t)/√d_qk = x_sᵀ W x_t."""
            return torch.einsum("hdi,hdj->hij", self.keys[layer], self.queries[layer]) / math.sqrt(self.config.qk_dim)

        def attention(self, x, layer: int):
            """Ω (B, H, S_key, S_query) from the bare input x (B, S, N0), normalised over keys. Scores go
            through W (N0 × N0), three times cheaper than projecting every token to d_qk = 128."""
            keyed = torch.einsum("bsi,hij->bhsj", x, self.score_forms(layer))
            return torch.softmax(torch.einsum("bhsj,btj->bhst", keyed, x), dim=2)

        def head_scales(self):
            """(L, H): H_alive^{-1/2} for a live head, 0 for a pruned one (spec §2.5 renormalisation)."""
            alive = self.head_mask.sum(dim=1, keepdim=True).clamp(min=1.0)
            return self.head_mask / torch.sqrt(alive)

        def path_features(self, x):
            """ξ (B, 𝓗, N0): ξ^π = x Ω⁽¹⁾_{h1}⋯ω⁽ᴸ⁾_{hL} with ω⁽ᴸ⁾ = mean over queries, h1 slowest."""
            vectors = self.attention(x, self.config.layers - 1).mean(dim=3)  # (B, H, S)
            for layer in reversed(range(self.config.layers - 1)):
                vectors = torch.einsum("bhst,bpt->bhps", self.attention(x, layer), vectors).flatten(1, 2)
            return torch.einsum("bps,bsi->bpi", vectors, x)

        def path_weights(self):
            """V^eff (𝓗, N0) with the sum-of-heads factors and the pruning renormalisation folded in."""
            c, scales = self.config, self.head_scales()
            u = self.readout[None, :]  # (paths so far, n)
            for layer in reversed(range(c.layers)):
                scaled = self.values[layer] * scales[layer][:, None, None]
                u = torch.einsum("pm,hmn->hpn", u, scaled).flatten(0, 1)
            return u @ self.input_projection

        def forward(self, x):
            return torch.einsum("bpi,pi->b", self.path_features(x), self.path_weights())

        def layerwise(self, x):
            """The same f, layer by layer (the reference the path form is tested against)."""
            c, scales = self.config, self.head_scales()
            z = torch.einsum("ni,bsi->bsn", self.input_projection, x)
            for layer in range(c.layers):
                mixed = torch.einsum("bhst,bsn->bhtn", self.attention(x, layer), z)
                z = torch.einsum("hmn,bhtn->btm", self.values[layer] * scales[layer][:, None, None], mixed)
            return z.mean(dim=1) @ self.readout

    return AttentionNetwork()


@dataclass
class TrainingResult:
    """The trained network, its training-loss history (one mean per epoch), validation accuracy per
    epoch (if validation data were given) and the seconds spent."""

    network: Any
    losses: list[float]
    validation_accuracy: list[float]
    seconds: float


def _tensor(torch, name: str, value: Any, ndim: int, last: int | None = None):
    array = arguments.array(name, value, ndim=ndim)
    if last is not None and array.shape[-1] != last:
        raise ValueError(f"{name} must have shape (P, S, N0) with N0 = {last}, got shape {array.shape}")
    return torch.as_tensor(array)


def train_network(tokens: Any, y: Any, architecture: ArchitectureConfig, training: TrainingConfig, *,
                  validation: tuple[Any, Any] | None = None, progress: Callable[[str], None] | None = None,
                  progress_bar: bool = False) -> TrainingResult:
    """Adam on the mean-squared error to y = ±1 (§4.2), float64 on the CPU, seeded by ``training.seed``
    (weights from ``seed``, batch order from ``seed + 1``). ``validation`` = (tokens, y) is scored after
    every epoch (it does not steer the training). ``progress_bar`` shows a tqdm bar over the batches."""
    torch = _torch()
    x = _tensor(torch, "tokens", tokens, 3, architecture.token_dim)
    target = _tensor(torch, "y", y, 1)
    if target.shape != (x.shape[0],):
        raise ValueError(f"y must have shape ({x.shape[0]},) to match tokens, got {tuple(target.shape)}")
    network = build_network(architecture, training.seed)
    optimiser = torch.optim.Adam(network.parameters(), lr=training.learning_rate)
    shuffle = torch.Generator().manual_seed(training.seed + 1)
    batches = math.ceil(x.shape[0] / training.batch_size)
    bar = None
    if progress_bar:
        from tqdm.auto import tqdm

        bar = tqdm(total=training.epochs * batches, desc=f"training seed {training.seed}", unit="batch")
    losses, scores, start = [], [], time.perf_counter()
    for epoch in range(training.epochs):
        order = torch.randperm(x.shape[0], generator=shuffle)
        total = 0.0
        for batch in order.split(training.batch_size):
            optimiser.zero_grad()
            loss = torch.mean((network(x[batch]) - target[batch]) ** 2)
            loss.backward()
            optimiser.step()
            total += float(loss.detach()) * batch.numel()
            if bar is not None:
                bar.update()
        losses.append(total / x.shape[0])
        message = f"epoch {epoch + 1}/{training.epochs}: training loss {losses[-1]:.4f}"
        if validation is not None:
            scores.append(accuracy(network, *validation))
            message += f", validation accuracy {scores[-1]:.3f}"
        if bar is not None:
            bar.set_postfix_str(message.split(": ", 1)[1])
        if progress is not None:
            progress(message)
    if bar is not None:
        bar.close()
    return TrainingResult(network, losses, scores, time.perf_counter() - start)


def accuracy(network: Any, tokens: Any, y: Any) -> float:
    """Fraction of sign(f(x)) = y."""
    torch = _torch()
    with torch.no_grad():
        f = network(_tensor(torch, "tokens", tokens, 3, network.config.token_dim)).numpy()
    return float(np.mean(np.sign(f) == np.asarray(y)))


def export_query_key(network: Any) -> tuple[np.ndarray, np.ndarray]:
    """(Q, K), each (L, H, d_qk, N0): the trained query/key weights."""
    queries = np.stack([q.detach().numpy() for q in network.queries])
    keys = np.stack([k.detach().numpy() for k in network.keys])
    return queries, keys


def export_heads(network: Any, **metadata: Any) -> TrainedHeads:
    """The trained network's function as `TrainedHeads`: per head the bilinear score form
    W = Kᵀ Q / √d_qk (score_{st} = x_sᵀ W x_t) and the effective path weights V^eff (no pruning)."""
    torch = _torch()
    mask = network.head_mask.clone()
    with torch.no_grad():
        score_forms = np.stack([network.score_forms(layer).numpy() for layer in range(network.config.layers)])
        network.head_mask.fill_(1.0)
        weights = network.path_weights().numpy().copy()
        network.head_mask.copy_(mask)
    return TrainedHeads(score_forms, weights, metadata={"architecture": asdict(network.config), **metadata})
