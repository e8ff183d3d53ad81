"""Synthetic attention-path problems: random tokens, random fixed heads, a teacher on one path.

Used where a claim needs generic path features of any depth and head count (the equations of the
theory hold for any fixed heads), and as the stand-in of the one-shot image task's shapes
(L = 2, H = 4, N0 = 64, S = 48, average pooling) for scaling benchmarks.
"""

from __future__ import annotations

import math
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np

from ...base import arguments, blas
from .features import READOUTS, fixed_head_path_features


def _refuse_what_cannot_fit(P: int, heads: tuple[int, ...], input_width: int, tokens: int, chunk: int,
                            workers: int) -> None:
    """Refuse, before drawing, sizes whose arrays cannot fit, each by the argument that makes it: the head weights
    and one example's features (ΣH_ℓ × N0² + N0·𝓗 float64) by ``input_width`` or ``heads``, the larger; one
    example's tokens, scores and features (N0·S + 2·S²·ΣH_ℓ + N0·𝓗 float64, scores with their softmax) by
    ``tokens``; the chunks in flight (2·workers + 1 of ``chunk`` examples) by ``chunk``; and X (P × N0 × 𝓗), its
    signal and labels with all of that by ``P``."""
    paths, heads_total = math.prod(heads), sum(heads)
    weights = 8 * heads_total * input_width * input_width
    example = 8 * (input_width * tokens + 2 * tokens * tokens * heads_total + input_width * paths)
    # the head weights and one example's features grow with N0 and with the heads: the larger factor names them
    name, value = ("heads", heads) if max(heads_total, paths) > input_width else ("input_width", input_width)
    arguments.fits_in_memory(name, weights + 8 * input_width * paths, f"the head weights ({heads_total} matrices "
                             f"N0 × N0, N0 = {input_width}) and one example's {paths} path features", value=value)
    arguments.fits_in_memory("tokens", weights + example, f"one example's tokens and scores (N0 = {input_width}, "
                             f"ΣH = {heads_total}) with the head weights", value=tokens)
    in_flight = weights + (2 * workers + 1) * chunk * example
    arguments.fits_in_memory("chunk", in_flight, f"{2 * workers + 1} chunks in flight of {chunk} examples each",
                             value=chunk)
    arguments.fits_in_memory("P", in_flight + 8 * P * (input_width * paths + 3),
                             f"the features X (P × N0 × 𝓗 = P × {input_width} × {paths} float64) with the chunks in "
                             "flight", value=P)


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
    chunk: int = 64,
    workers: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Path features X (P, N0, 𝓗) and labels y = sign(w·ξ^{π=0}(x) + noise) (P,).

    Tokens x ~ N(0, I_{N0}) (S of them), head weights W ~ score_scale·N(0, 1)/N0 per head, the
    teacher w ~ N(0, I_{N0}) reads the first path; the random generator is seeded by ``seed``
    only, and heads and teacher come first, so problems with the same seed share them.

    Memory and time: the tokens are drawn ``chunk`` examples at a time, in order (the same numbers as one
    draw of all P), and each chunk's features (`.features.fixed_head_path_features`) are computed on
    ``workers`` threads (default: the CPU count, at most 8) with one BLAS thread each; at most 2·workers
    chunks are in flight, so beyond X itself (8·P·N0·𝓗 bytes) memory stays at a few chunks' scores
    (8·chunk·S²·ΣH_ℓ bytes each) whatever P is.
    """
    P, input_width, tokens = (arguments.integer(name, value, 1) for name, value in
                              (("P", P), ("input_width", input_width), ("tokens", tokens)))
    heads = arguments.integers("heads", heads, 1)
    score_scale = arguments.nonnegative("score_scale", score_scale)
    label_noise = arguments.nonnegative("label_noise", label_noise)
    readout = arguments.one_of("readout", readout, READOUTS)
    chunk = arguments.integer("chunk", chunk, 1)
    workers = min(8, os.cpu_count() or 1) if workers is None else arguments.integer("workers", workers, 1)
    _refuse_what_cannot_fit(P, heads, input_width, tokens, min(chunk, P), workers)
    rng = np.random.default_rng(arguments.integer("seed", seed, 0))
    weights = [[score_scale * rng.normal(size=(input_width, input_width)) / input_width for _ in range(H)]
               for H in heads]
    teacher = rng.normal(size=input_width)
    X = np.empty((P, input_width, int(np.prod(heads))))

    def features(start: int, x: np.ndarray) -> None:
        X[start:start + len(x)] = fixed_head_path_features(x, weights, readout=readout)

    with blas.threads(1), ThreadPoolExecutor(workers) as pool:
        pending: deque = deque()
        for start in range(0, P, chunk):
            x = rng.normal(size=(min(chunk, P - start), input_width, tokens))  # drawn in order, on this thread
            pending.append(pool.submit(features, start, x))
            while len(pending) > 2 * workers:
                pending.popleft().result()
        for job in pending:
            job.result()
    signal = X[:, :, 0] @ teacher
    signal /= np.std(signal) + 1e-300
    y = np.sign(signal + label_noise * rng.normal(size=P))
    y[y == 0] = 1.0
    return X, y
