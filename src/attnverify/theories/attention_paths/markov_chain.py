"""Hidden-Markov-chain sequence classification (Tiberi et al., NeurIPS 2024, Fig. 2; spec §4.1).

Transcribed from the authors' code (``prepare_dataset_markov_optionE``, ``generate_markov_chain``,
``generate_attention_weights_markov_optionE`` and the TRAIN script of
``hidden_markov_chain_classification/4paths``):

* a hidden chain s_t ∈ {+1, −1}, t = 1..S, first state uniform; class a (y = +1) stays in its state with
  probability p_a, class b (y = −1) with probability p_b; labels balanced and ordered, +1 first;
* tokens x_t = v_{s_t} + ε_t with v_+ = √2 (1_{F/2}, 0_{F/2}), v_− = √2 (0_{F/2}, 1_{F/2}) (|v|² = F);
  ε_t ~ N(0, I_F) split by projection: strength ``noise_along_difference`` along e_d ∝ v_+ − v_− (the code's
  "perpendicular" noise), ``noise_along_sum`` along e_s ∝ v_+ + v_− (the code's "parallel" noise) and
  ``out_of_plane_noise`` σ⊥ in the (F − 2)-dimensional complement (the paper's "perpendicular noise");
* a BOS token with zero features at position 0, and a one-hot position of dimension S + 1 appended to every
  token, so a sequence is x ∈ R^{N0×(S+1)} with N0 = F + S + 1 (231 for F = 200, S = 30);
* fixed heads W (N0×N0), block diagonal (features, positions), all multiplied by β: good ("same_token",
  shift −1), uniform, and random ("blank" plus a perturbation p).

Randomness comes from numpy Generators with explicit seeds. The authors' torch seeds (27 train, 59 test;
127, 147, 217, 247 for the heads) cannot be reproduced outside torch, so data and random heads here are a
different realisation of the same distributions.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from numbers import Integral
from typing import Any, Mapping

import numpy as np

from ...base import arguments
from ...base.arguments import Checked, checked
from ...base.arguments import integer as _integer
from .features import attention_matrix, chunk_numbers, default_chunk, fits_largest, path_features

__all__ = [
    "MarkovChainTask",
    "HEAD_KINDS",
    "NETWORKS",
    "sample_sequences",
    "good_head",
    "uniform_head",
    "random_head",
    "network_heads",
    "path_names",
    "markov_path_features",
    "markov_dataset",
]

HEAD_KINDS = ("good", "uniform", "random", "blank")
"""Head kinds: good (same_token, shift −1), uniform, random (blank + perturbation p), blank (random with p = 0)."""

NETWORKS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    "4paths": (("good", "random"), ("uniform", "random")),
    "2paths": (("good", "blank"), ("uniform",)),
    "good": (("good",), ("uniform",)),
    "good_denoising": (("good", "random"), ("uniform",)),
}
"""The networks of spec §4.1 (Fig. 2c, 2e and its GP reference lines), layer by layer, as head kinds.

"4paths" paths (h1 slowest): 0 = (good, uniform) "g", 1 = (good, random) "a1", 2 = (random, uniform) "d",
3 = (random, random) "a2". "2paths" (Fig. 2e, run with σ⊥ = 5 in the paper): (good, uniform) and
(blank, uniform), the blank head being the p = 0 random head, i.e. exactly uniform attention.
"""

_BOS_STRENGTH = 1.5
"""(position + informative + max(position − informative, informative)) / 2 with both strengths 1 (spec §4.1)."""


# --------------------------------------------------------------------------- argument checks


def _generator(name: str, seed: Any) -> np.random.Generator:
    """numpy Generator from an integer seed, a SeedSequence or a Generator; None is refused (explicit seeds)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.SeedSequence):
        return np.random.default_rng(seed)
    if isinstance(seed, Integral) and not isinstance(seed, bool) and seed >= 0:
        return np.random.default_rng(int(seed))
    raise ValueError(
        f"{name} must be an integer ≥ 0, a numpy SeedSequence or a numpy Generator, got {seed!r}; "
        "randomness must be explicit"
    )


def _one_head_fits(task: MarkovChainTask) -> None:
    """Refuse a task whose N0 × N0 head weights cannot be built, naming the larger of ``tokens`` and ``features``."""
    n0 = task.input_width
    fits_largest([("tokens", task.tokens), ("features", task.features)], 4 * 8 * n0 * n0,
                 f"one head W (N0 × N0 float64 with its temporaries, N0 = F + S + 1 = {n0})", None)


def _data_set_bytes(task: MarkovChainTask, heads: int, paths: int, P: int) -> int:
    """Peak bytes of `markov_path_features` on P sequences besides the head weights: the sampling
    (P × (S + 1) × (N0 + 3F) float64), then the sequences x with the attention matrices of all ``heads``
    (P × (S + 1)² float64 each), and with the larger of one head's score products (2 P × (S + 1) × N0) and the path
    features (P × N0 × 𝓗, with `features.path_features`'s chunk of attention vectors)."""
    S1, n0, F = task.sequence_length, task.input_width, task.features
    features = P * n0 * paths + min(P, default_chunk(paths, n0, S1)) * chunk_numbers(paths, n0, S1)
    held = P * n0 * S1 + heads * P * S1 * S1
    return 8 * max(P * S1 * (n0 + 3 * F), held + max(2 * P * S1 * n0, features))


def _refuse_what_cannot_fit(task: MarkovChainTask, layers: tuple[tuple[str, ...], ...],
                            sets: tuple[tuple[str, int], ...]) -> None:
    """Refuse, before any work, data sets of ``network`` that cannot fit: one head by ``tokens`` or ``features``;
    the weights of all heads (with one head's temporaries) and two sequences' features by ``network``; then the
    data sets ``sets`` ((name, P) pairs, made in order, each one's features X (P × N0 × 𝓗) kept while the next is
    made) by the larger P."""
    _one_head_fits(task)
    n0 = task.input_width
    heads, paths = sum(len(layer) for layer in layers), math.prod(len(layer) for layer in layers)
    weights = 8 * (heads + 3) * n0 * n0
    shapes = f"ΣH = {heads} heads of N0 × N0 float64, N0 = {n0}; 𝓗 = {paths} paths"
    arguments.fits_in_memory("network", weights + _data_set_bytes(task, heads, paths, 2),
                             f"the head weights and two sequences' path features ({shapes})")
    kept = peak = 0
    for _, P in sets:
        peak = max(peak, kept + _data_set_bytes(task, heads, paths, P))
        kept += 8 * P * (n0 * paths + 1)
    fits_largest(sets, weights + peak, f"{' and '.join(f'{n} = {P}' for n, P in sets)} sequences, their attention "
                 f"matrices and path features with the head weights ({shapes}, S = {task.tokens})", None)


# --------------------------------------------------------------------------- task


@dataclass(frozen=True)
class MarkovChainTask(Checked):
    """Configuration of the hidden-Markov-chain task and its heads (spec §4.1; defaults = Fig. 2c).

    ``tokens`` S (chain length, without BOS), ``features`` F = N0_feat (even), ``p_a`` / ``p_b`` stay
    probabilities of classes a (y = +1) / b (y = −1), noise strengths along e_d (``noise_along_difference``,
    code ``perpendicular_noise_strength``), along e_s (``noise_along_sum``, code ``parallel_noise_strength``)
    and out of plane (``out_of_plane_noise`` σ⊥), inverse softmax temperature ``beta`` β of every head, and
    the random-head ``perturbation`` p.
    """

    tokens: int = checked(_integer, 1, default=30)
    features: int = checked(_integer, 2, default=200)
    p_a: float = checked(arguments.real, low=0.0, high=1.0, default=0.7)
    p_b: float = checked(arguments.real, low=0.0, high=1.0, default=0.3)
    noise_along_difference: float = checked(arguments.nonnegative, default=1.0)
    noise_along_sum: float = checked(arguments.nonnegative, default=1.0)
    out_of_plane_noise: float = checked(arguments.nonnegative, default=1.0)
    beta: float = checked(arguments.nonnegative, default=10.0)
    perturbation: float = checked(arguments.nonnegative, default=1.0)

    def _check_fields(self) -> None:
        if self.features % 2:
            raise ValueError(f"features must be even (v_± fill one half each), got {self.features}")

    @property
    def sequence_length(self) -> int:
        """S + 1: the chain's tokens plus the BOS token."""
        return self.tokens + 1

    @property
    def input_width(self) -> int:
        """N0 = F + S + 1, features plus one-hot positions (the N0 of every normalisation, spec §5 quirk 5)."""
        return self.features + self.tokens + 1

    def states(self) -> tuple[np.ndarray, np.ndarray]:
        """(v_+, v_−): √2 (1_{F/2}, 0_{F/2}) and √2 (0_{F/2}, 1_{F/2}), so |v_±|² = F."""
        half = self.features // 2
        v_plus = np.concatenate([np.ones(half), np.zeros(half)]) * math.sqrt(2.0)
        return v_plus, v_plus[::-1].copy()


# --------------------------------------------------------------------------- data


def _hidden_states(task: MarkovChainTask, stay: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """s (P, S) ∈ {±1}: s_1 uniform, then s_{t+1} = s_t with probability ``stay`` (per example)."""
    first = np.where(rng.random(stay.shape[0]) >= 0.5, 1, -1)
    flips = rng.random((stay.shape[0], task.tokens - 1)) >= stay[:, None]
    parity = np.concatenate([np.zeros((stay.shape[0], 1), dtype=np.int64), np.cumsum(flips, axis=1)], axis=1)
    return first[:, None] * (1 - 2 * (parity % 2))


def sample_sequences(
    task: MarkovChainTask, P: int, seed: Any, *, return_states: bool = False
) -> tuple[np.ndarray, ...]:
    """P sequences x (P, N0, S+1) and labels y (P,) of the task (``prepare_dataset_markov_optionE``).

    y = +1 for the first P/2 examples (stay probability p_a), −1 for the rest (p_b). Token t ≥ 1 has
    features v_{s_t} + n_t with n = a_d e_d(e_d·ε) + a_s e_s(e_s·ε) + σ⊥(ε − e_d(e_d·ε) − e_s(e_s·ε)),
    ε ~ N(0, I_F); the BOS token (t = 0) has zero features; rows F..N0−1 hold the one-hot position of each
    token. ``P`` must be even. Draw order (for reproducibility with ``seed``): first states, transitions,
    noise. With ``return_states`` the hidden states s (P, S) ∈ {±1} come third.
    """
    if not isinstance(task, MarkovChainTask):
        raise TypeError(f"task must be a MarkovChainTask, got {type(task).__name__}")
    P = _integer("P", P, 2)
    if P % 2:
        raise ValueError(f"P must be even (balanced classes, P/2 each), got {P}")
    F, S = task.features, task.tokens
    arguments.fits_in_memory("P", 8 * P * (S + 1) * (task.input_width + 3 * F),
                             f"the sequences and their noise (P × (S + 1) × (N0 + 3F) float64, S = {S}, F = {F})",
                             value=P)
    rng = _generator("seed", seed)
    half = P // 2
    y = np.concatenate([np.ones(half), -np.ones(half)])
    stay = np.where(y > 0, task.p_a, task.p_b)
    states = _hidden_states(task, stay, rng)

    v_plus, v_minus = task.states()
    e_d = (v_plus - v_minus) / np.linalg.norm(v_plus - v_minus)
    e_s = (v_plus + v_minus) / np.linalg.norm(v_plus + v_minus)
    eps = rng.standard_normal((P, F, S))
    along_d = np.einsum("i,pit->pt", e_d, eps)
    along_s = np.einsum("i,pit->pt", e_s, eps)
    noise = task.out_of_plane_noise * eps
    noise += (task.noise_along_difference - task.out_of_plane_noise) * e_d[None, :, None] * along_d[:, None, :]
    noise += (task.noise_along_sum - task.out_of_plane_noise) * e_s[None, :, None] * along_s[:, None, :]

    x = np.zeros((P, task.input_width, S + 1))
    plus = (states > 0)[:, None, :]
    x[:, :F, 1:] = np.where(plus, v_plus[None, :, None], v_minus[None, :, None]) + noise
    x[:, F:, :] = np.eye(S + 1)
    if return_states:
        return x, y, states
    return x, y


# --------------------------------------------------------------------------- heads


def _check_task(task: Any) -> MarkovChainTask:
    if not isinstance(task, MarkovChainTask):
        raise TypeError(f"task must be a MarkovChainTask, got {type(task).__name__}")
    return task


def good_head(task: MarkovChainTask) -> np.ndarray:
    """Good head W (N0, N0): "same_token", shift −1 (``generate_attention_weights_markov_optionE``), times β.

    Feature block q qᵀ with q = (v_+ − v_−)/(|v_+ − v_−|²/2) = (v_+ − v_−)/F (F = 200), so clean tokens
    score s_s s_t. Position block (key row, query column): 1 at (t−1, t) for t = 2..S, BOS row
    P[0, t] = 1.5 for t ≥ 1 (it also covers (0, 1)), P[0, 0] = 0. A query attends to the previous token when
    its state is the same, otherwise mostly to the BOS, whose features are zero.
    """
    task = _check_task(task)
    _one_head_fits(task)
    F, S = task.features, task.tokens
    v_plus, v_minus = task.states()
    q = (v_plus - v_minus) / (np.dot(v_plus - v_minus, v_plus - v_minus) / 2.0)
    w = np.zeros((task.input_width, task.input_width))
    w[:F, :F] = np.outer(q, q)
    positions = np.zeros((S + 1, S + 1))
    t = np.arange(2, S + 1)
    positions[t - 1, t] = 1.0
    positions[0, 1:] = _BOS_STRENGTH
    w[F:, F:] = positions
    return task.beta * w


def uniform_head(task: MarkovChainTask) -> np.ndarray:
    """Uniform head W (N0, N0): zero feature block, all-ones position block, times β.

    Every score equals β (one-hot positions), so Ω_{st} = 1/(S+1) exactly, BOS included.
    """
    task = _check_task(task)
    _one_head_fits(task)
    F = task.features
    w = np.zeros((task.input_width, task.input_width))
    w[F:, F:] = 1.0
    return task.beta * w


def random_head(task: MarkovChainTask, perturbation: float | None, seed: Any) -> np.ndarray:
    """Random head W (N0, N0): "blank" plus perturbation p, times β (spec §4.1).

    Feature block p·N(0,1)/F, position block p·N(0,1), off-diagonal (feature–position) blocks p·N(0,1)/√F,
    all entries independent. ``perturbation`` None takes ``task.perturbation``. With p = 0, W = 0 and the
    attention is exactly uniform. The code scales the cross blocks by its features perturbation (spec §5,
    quirk 1); all perturbations are equal here, so that is the same p.
    """
    task = _check_task(task)
    _one_head_fits(task)
    p = task.perturbation if perturbation is None else arguments.nonnegative("perturbation", perturbation)
    rng = _generator("seed", seed)
    F, n0 = task.features, task.input_width
    scale = np.full((n0, n0), 1.0 / math.sqrt(F))
    scale[:F, :F] = 1.0 / F
    scale[F:, F:] = 1.0
    return task.beta * p * scale * rng.standard_normal((n0, n0))


def _network(network: Any) -> tuple[tuple[str, ...], ...]:
    if isinstance(network, str):
        if network not in NETWORKS:
            raise ValueError(f"network must be one of {tuple(NETWORKS)} or a sequence of layers, got {network!r}")
        return NETWORKS[network]
    try:
        layers = tuple(tuple(layer) for layer in network)
    except TypeError:
        layers = ()
    if not layers or any(not layer for layer in layers) or any(
        kind not in HEAD_KINDS for layer in layers for kind in layer
    ):
        raise ValueError(
            f"network must be one of {tuple(NETWORKS)} or a non-empty sequence of non-empty layers of "
            f"head kinds {HEAD_KINDS}, got {network!r}"
        )
    return layers


def network_heads(task: MarkovChainTask, network: Any, head_seed: int = 0) -> list[list[np.ndarray]]:
    """The heads W of ``network`` (a name in `NETWORKS` or layers of head kinds), layer by layer.

    The random head at (layer ℓ, head h) draws from SeedSequence((head_seed, ℓ, h)), so it is the same head
    in every network that has a random head there (e.g. "4paths" and "good_denoising" share layer 1).
    """
    task = _check_task(task)
    layers = _network(network)
    head_seed = _integer("head_seed", head_seed, 0)
    _one_head_fits(task)
    heads_total, n0 = sum(len(layer) for layer in layers), task.input_width
    arguments.fits_in_memory("network", 8 * (heads_total + 3) * n0 * n0, f"the weights of its {heads_total} heads "
                             f"(N0 × N0 float64, N0 = {n0}, with one head's temporaries)")
    heads = []
    for ell, layer in enumerate(layers):
        row = []
        for h, kind in enumerate(layer):
            if kind == "good":
                row.append(good_head(task))
            elif kind == "uniform":
                row.append(uniform_head(task))
            else:
                p = None if kind == "random" else 0.0
                row.append(random_head(task, p, np.random.SeedSequence((head_seed, ell, h))))
        heads.append(row)
    return heads


def path_names(network: Any) -> list[tuple[str, ...]]:
    """Head kinds along each path, in the packing order of `features.path_features` (h_1 slowest)."""
    return list(itertools.product(*_network(network)))


# --------------------------------------------------------------------------- path features


def markov_path_features(
    task: MarkovChainTask,
    network: Any,
    P: int,
    seed: Any,
    *,
    head_seed: int = 0,
    prior_var0: float = 1.0,
    backend: Any = None,
) -> tuple[Any, np.ndarray]:
    """Path features X (P, N0, 𝓗) and labels y (P,) of ``network`` on P fresh sequences, last-token readout.

    X^μ_π = sqrt(σ0²/(N0 𝓗)) x^μ Ω^{(1)}_{h1} ω^{(2)}_{h2} (spec §1.2), ω the last query's column. The data
    depend on ``seed`` only and the heads on ``head_seed`` only, so train and test sets drawn with different
    seeds share their heads. X lives on ``backend`` (numpy by default); y is numpy.
    """
    task = _check_task(task)
    P = _integer("P", P, 2)
    _refuse_what_cannot_fit(task, _network(network), (("P", P),))
    heads = network_heads(task, network, head_seed)
    x, y = sample_sequences(task, P, seed)
    layers = [[attention_matrix(x, w, backend=backend) for w in layer] for layer in heads]
    return path_features(x, layers, readout="last_token", prior_var0=prior_var0, backend=backend), y


def markov_dataset(
    task: MarkovChainTask,
    network: Any,
    P_train: int = 100,
    P_test: int = 1000,
    seed: Any = 0,
    *,
    head_seed: int = 0,
    prior_var0: float = 1.0,
    backend: Any = None,
) -> tuple[Any, np.ndarray, Any, np.ndarray]:
    """(X_train, y_train, X_test, y_test) for ``network``: independent train and test draws, shared heads.

    The train and test data come from the two children of SeedSequence(``seed``) (the authors used torch
    seeds 27 and 59, which cannot be reproduced here); sizes default to the paper's P = 100 and 1000.
    """
    if isinstance(seed, np.random.Generator):
        raise ValueError("seed must be an integer ≥ 0 or a numpy SeedSequence here (it is split into two streams)")
    if not isinstance(seed, np.random.SeedSequence):
        seed = np.random.SeedSequence(_integer("seed", seed, 0))
    train_seed, test_seed = seed.spawn(2)
    for name, value in (("P_train", P_train), ("P_test", P_test)):
        if _integer(name, value, 2) % 2:
            raise ValueError(f"{name} must be even (balanced classes, half each), got {value}")
    _refuse_what_cannot_fit(_check_task(task), _network(network),
                            (("P_train", _integer("P_train", P_train, 2)), ("P_test", _integer("P_test", P_test, 2))))
    kwargs = dict(head_seed=head_seed, prior_var0=prior_var0, backend=backend)
    X_train, y_train = markov_path_features(task, network, P_train, train_seed, **kwargs)
    X_test, y_test = markov_path_features(task, network, P_test, test_seed, **kwargs)
    return X_train, y_train, X_test, y_test
