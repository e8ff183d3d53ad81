"""A trained attention network's function, stored without the training library (spec §1.1, §2.5).

With linear values the network is the attention-path sum f(x) = Σ_π V^eff_π · ξ^π(x), so its whole
input-output map is fixed by each head's score form W⁽ℓ⁾_h (score_{st} = x_sᵀ W x_t = (K x_s)·(Q x_t)/√d_qk)
and the 𝓗 effective path weights V^eff_π ∈ R^{N0}. That is all this class keeps (a few hundred kB, so
the cached networks of the one-shot experiment live in the repository). The path features come from
the theory's own `.features` code; pruning a set of heads, the paper's ``--drop_heads``, zeroes
the paths through them and multiplies each layer's remaining sum by √(H_ℓ / H_ℓ,alive).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ....base import arguments
from .. import features
from ..heads import path_index

Head = tuple[int, int]  # (layer, head), 0-based


@dataclass(frozen=True, eq=False)
class TrainedHeads(arguments.Checked):
    """``score_forms`` W (L, H, N0, N0) and ``path_weights`` V^eff (H^L, N0), paths row-major with h1 slowest."""

    score_forms: np.ndarray = arguments.checked(arguments.array, ndim=4)
    path_weights: np.ndarray = arguments.checked(arguments.array, ndim=2)
    metadata: dict = field(default_factory=dict)

    def _check_fields(self) -> None:
        W, V = self.score_forms, self.path_weights
        if W.shape[2] != W.shape[3]:
            raise ValueError(f"score_forms must have shape (L, H, N0, N0), got {W.shape}")
        layers, heads, n0 = W.shape[0], W.shape[1], W.shape[2]
        if V.shape != (heads**layers, n0):
            raise ValueError(f"path_weights must have shape (H^L, N0) = ({heads**layers}, {n0}), got {V.shape}")

    @property
    def heads(self) -> tuple[int, ...]:
        return (self.score_forms.shape[1],) * self.score_forms.shape[0]

    @property
    def token_dim(self) -> int:
        return self.score_forms.shape[2]

    def all_heads(self) -> list[Head]:
        return [(layer, h) for layer, H in enumerate(self.heads) for h in range(H)]

    def path_features(self, tokens: Any) -> np.ndarray:
        """X (P, N0, 𝓗) of spec §1.2 for ``tokens`` (P, S, N0): X_π = ξ^π / √(N0 𝓗), average-pooling readout."""
        tokens = arguments.array("tokens", tokens, ndim=3)
        if tokens.shape[2] != self.token_dim:
            raise ValueError(f"tokens must have shape (P, S, {self.token_dim}), got {tokens.shape}")
        x = np.swapaxes(tokens, 1, 2)
        layers = [[features.attention_matrix(x, W) for W in layer] for layer in self.score_forms]
        return features.path_features(x, layers, readout="average_pooling")

    def path_factors(self, pruned: Iterable[Head] = ()) -> np.ndarray:
        """Per path: 0 through a pruned head, else Π_ℓ √(H_ℓ / H_ℓ,alive) (the layers' renormalisation)."""
        pruned = set(map(tuple, pruned))
        unknown = pruned - set(self.all_heads())
        if unknown:
            raise ValueError(f"pruned heads must be (layer, head) pairs within heads = {self.heads}, got {sorted(unknown)}")
        alive = [H - sum(1 for layer_, _ in pruned if layer_ == layer) for layer, H in enumerate(self.heads)]
        if min(alive) < 1:
            raise ValueError(f"pruned heads {sorted(pruned)} remove every head of a layer; at least one must stay")
        renormalisation = math.prod(math.sqrt(H / a) for H, a in zip(self.heads, alive))
        return np.array([0.0 if any((layer, h) in pruned for layer, h in enumerate(path)) else renormalisation
                         for path in path_index(self.heads)])

    def outputs(self, X: Any, pruned: Iterable[Head] = (), *, backend: Any = None) -> np.ndarray:
        """f(x) (P,) from path features X (P, N0, 𝓗): √(N0 𝓗) Σ_π c_π X_π · V^eff_π, computed on ``backend``
        (numpy by default), returned on the host."""
        be = arguments.backend(backend)
        X = arguments.array("X", X, be, ndim=3)
        if X.shape[1:] != (self.token_dim, self.path_weights.shape[0]):
            raise ValueError(f"X must have shape (P, {self.token_dim}, {self.path_weights.shape[0]}), "
                             f"got {tuple(X.shape)}")
        scale = math.sqrt(self.token_dim * self.path_weights.shape[0])
        return be.to_numpy(scale * be.xp.einsum("nip,pi,p->n", X, be.asarray(self.path_weights),
                                                be.asarray(self.path_factors(pruned))))

    def correct(self, X: Any, y: Any, pruned: Iterable[Head] = (), *, backend: Any = None) -> np.ndarray:
        """1.0 where sign f(x) = y, else 0.0 (per example, for paired comparisons)."""
        outputs = self.outputs(X, pruned, backend=backend)
        return (np.sign(outputs) == arguments.array("y", y, shape=outputs.shape)).astype(float)

    def order_parameter(self) -> np.ndarray:
        """U^GD_{ππ'} = V^eff_π · V^eff_π' (spec §2.5, the "gradient descent" panel of figure 3c)."""
        return self.path_weights @ self.path_weights.T

    # ---------------------------------------------------------------------------------- storage

    def arrays(self, prefix: str = "") -> dict[str, np.ndarray]:
        return {f"{prefix}score_forms": self.score_forms, f"{prefix}path_weights": self.path_weights,
                f"{prefix}metadata": np.array(json.dumps(self.metadata))}

    @classmethod
    def from_arrays(cls, arrays: Any, prefix: str = "") -> "TrainedHeads":
        return cls(arrays[f"{prefix}score_forms"], arrays[f"{prefix}path_weights"],
                   json.loads(str(arrays[f"{prefix}metadata"])))


def save_networks(path: str | Path, networks: dict[int, TrainedHeads], **shared: Any) -> None:
    """Several trained networks (by training seed) in one compressed ``.npz``, with shared metadata."""
    arrays = {"shared": np.array(json.dumps(shared)), "seeds": np.array(sorted(networks))}
    for seed, network in networks.items():
        arrays.update(network.arrays(f"seed{seed}/"))
    np.savez_compressed(path, **arrays)


def stored_seeds(path: str | Path) -> tuple[tuple[int, ...], dict]:
    """(the training seeds, shared metadata) written by `save_networks`, without reading the networks."""
    with np.load(path) as data:
        return tuple(sorted(int(s) for s in data["seeds"])), json.loads(str(data["shared"]))


def load_networks(path: str | Path) -> tuple[dict[int, TrainedHeads], dict]:
    """(networks by training seed, shared metadata) written by `save_networks`."""
    with np.load(path) as data:
        networks = {int(s): TrainedHeads.from_arrays(data, f"seed{int(s)}/") for s in data["seeds"]}
        return networks, json.loads(str(data["shared"]))
