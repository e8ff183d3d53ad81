"""Synthetic attention-path problems: random tokens, random fixed heads, a teacher on one path.

Used where a claim needs generic path features of any depth and head count (the equations of the
theory hold for any fixed heads), and as the stand-in of the one-shot image task's shapes
(L = 2, H = 4, N0 = 64, S = 48, average pooling) for scaling benchmarks.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import arguments
from .features import attention_matrix, path_features


def synthetic_problem(
    P: int,
    *,
    heads: Sequence[int] = (2, 2),
    input_width: int = 8,
    tokens: int = 6,
    score_scale: float = 1.0,
    label_noise: float = 0.3,
    readout: str = "last_token",
    seed: int = 0,
    chunk: int = 512,
) -> tuple[np.ndarray, np.ndarray]:
    """Path features X (P, N0, 𝓗) and labels y = sign(w·ξ^{π=0}(x) + noise) (P,).

    Tokens x ~ N(0, I_{N0}) (S of them), head weights W ~ score_scale·N(0, 1)/N0 per head, the
    teacher w ~ N(0, I_{N0}) reads the first path; the random generator is seeded by ``seed``
    only, and heads and teacher come first, so problems with the same seed share them.
    """
    P, input_width, tokens = (arguments.integer(name, value, 1) for name, value in
                              (("P", P), ("input_width", input_width), ("tokens", tokens)))
    heads = arguments.integers("heads", heads, 1)
    score_scale = arguments.nonnegative("score_scale", score_scale)
    label_noise = arguments.nonnegative("label_noise", label_noise)
    chunk = arguments.integer("chunk", chunk, 1)
    rng = np.random.default_rng(arguments.integer("seed", seed, 0))
    weights = [[score_scale * rng.normal(size=(input_width, input_width)) / input_width for _ in range(H)]
               for H in heads]
    teacher = rng.normal(size=input_width)
    x = rng.normal(size=(P, input_width, tokens))
    chunks = []
    for start in range(0, P, chunk):  # attention matrices are (chunk, S, S) per head, never (P, S, S)
        part = x[start:start + chunk]
        layers = [[attention_matrix(part, W) for W in layer] for layer in weights]
        chunks.append(np.asarray(path_features(part, layers, readout=readout)))
    X = np.concatenate(chunks)
    signal = X[:, :, 0] @ teacher
    signal /= np.std(signal) + 1e-300
    y = np.sign(signal + label_noise * rng.normal(size=P))
    y[y == 0] = 1.0
    return X, y
