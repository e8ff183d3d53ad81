"""Monte Carlo error of attention as an estimator: bias and mean-squared error at a sequence length L.

Replicates are a batch axis, processed in chunks so that memory stays bounded; the moments are
accumulated exactly across chunks (pairwise update), so any chunking gives the same estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from typing import Any, Callable

from ...base.arguments import MOST_NUMBERS_DRAWN, array, at_most_work, backend as backend_argument, fits_in_memory
from ...base.arguments import function, generator, integer
from ...base.backend import Backend
from ...numerics.statistics import Estimate, RunningMoments, fit_line
from .attention import unchecked_weighted_mean

#: keys × length × dimension numbers held at once per chunk.
CHUNK_NUMBERS = 4_000_000


@dataclass(frozen=True)
class AttentionError:
    """Error of attention against a fixed ``target`` at sequence length ``length``.

    ``bias[j]`` estimates E[attn_j − target_j]; ``mse`` estimates E‖attn − target‖².
    """

    length: int
    bias: tuple[Estimate, ...]
    mse: Estimate

    def scaled_mse(self) -> Estimate:
        """L·MSE with its standard error."""
        return Estimate(self.length * self.mse.mean, self.length * self.mse.standard_error, self.mse.samples)

    def scaled_bias(self, direction: Any) -> Estimate:
        """L·E[attn − target] projected on ``direction`` (a unit vector of R^{d_v})."""
        u = array("direction", direction, shape=(len(self.bias),))
        mean = sum(float(c) * b.mean for c, b in zip(u, self.bias))
        # the components are estimated from the same draws; bound the error by the sum of parts
        se = sum(abs(float(c)) * b.standard_error for c, b in zip(u, self.bias))
        return Estimate(self.length * mean, self.length * se, self.mse.samples)


def attention_error(
    sample: Callable[[int, int, Any], tuple[Any, Any]],
    logits: Callable[[Any], Any],
    target: Any,
    length: int,
    replicates: int,
    rng: Any,
    *,
    backend: Backend | str | None = None,
) -> AttentionError:
    """Bias and MSE of Σ softmax(logits(keys)) v against ``target`` over ``replicates`` sequences.

    ``sample(L, n, rng)`` returns keys (n, L, d) and values (n, L, d_v) on the backend;
    ``logits(keys)`` returns the attention logits (n, L), finite. ``rng`` is a Generator or an
    integer seed (a Generator of the backend is made from it). More than ``MOST_NUMBERS_DRAWN`` numbers (replicates ×
    length × (1 + d_v)) are refused before the first draw.
    """
    be = backend_argument(backend)
    for name, f in (("sample", sample), ("logits", logits)):
        function(name, f)
    target = array("target", target, be, shape=(None,))
    L, R = integer("length", length, 1), integer("replicates", replicates, 2)
    rng = generator(rng, be)
    xp = be.xp
    chunk, d_v = max(1, CHUNK_NUMBERS // (4 * L)), int(target.shape[0])
    fits_in_memory("length", 8 * 4 * min(chunk, R) * L * (1 + d_v),
                   f"one chunk of {min(chunk, R)} sequences (keys, values and weights in float64)", value=L, backend=be)
    at_most_work("replicates", R, MOST_NUMBERS_DRAWN, f"numbers drawn (replicates × length × (1 + d_v) at the least: "
                 f"a key and d_v values a token, length = {L:,}, d_v = {d_v:,})", work=R * L * (1 + d_v))
    components = [RunningMoments() for _ in range(d_v)]
    squared = RunningMoments()
    done = 0
    while done < R:
        n = min(chunk, R - done)
        drawn = sample(L, n, rng)
        if not (isinstance(drawn, tuple) and len(drawn) == 2):
            raise TypeError(f"sample({L}, {n}, rng) must return the pair (keys, values), got "
                            f"{type(drawn).__name__}")
        keys, values = drawn
        values = _numbers(be, values, f"the values from sample({L}, {n}, rng)")
        if values.ndim != 3 or values.shape[:-1] != (n, L) or values.shape[-1] != target.shape[0]:
            raise ValueError(f"sample({L}, {n}, rng) must return values of shape ({n}, {L}, d_v) with d_v = "
                             f"{target.shape[0]} components like target, got {tuple(values.shape)}")
        weights = _numbers(be, logits(keys), "logits(keys)")
        if weights.shape != (n, L):
            raise ValueError(f"logits(keys) must return shape ({n}, {L}), got {tuple(weights.shape)}")
        if not (bool(xp.all(xp.isfinite(weights))) and bool(xp.all(xp.isfinite(values)))):
            raise ValueError("logits(keys) and the values from sample must be finite, got NaN or infinity")
        error = unchecked_weighted_mean(weights, values) - target
        for j, acc in enumerate(components):
            acc.add(error[:, j], xp)
        squared.add((error**2).sum(axis=-1), xp)
        done += n
    return AttentionError(L, tuple(acc.estimate() for acc in components), squared.estimate())


def _numbers(be: Backend, value: Any, what: str):
    """``value`` as a float array of the backend, or a TypeError naming ``what`` returned it (text, None, …)."""
    try:
        array_ = be.asarray(value)
    except (TypeError, ValueError):
        array_ = None
    if array_ is None or array_.dtype.kind not in "iuf":
        raise TypeError(f"{what} must return an array of real numbers, got {type(value).__name__} {value!r}"[:200])
    return array_


def score_attention_error(model: Any, score: Any, target: Any, length: int, replicates: int, rng: Any, *,
                          backend: Backend | str | None = None) -> AttentionError:
    """`attention_error` of softmax attention with a fixed score vector a (logits aᵀk_ℓ) on
    sequences drawn by ``model.sample(L, n, rng, backend)``; ``score`` has the model's key dimension d."""
    be = backend_argument(backend)
    if not callable(getattr(model, "sample", None)) or not isinstance(getattr(model, "d", None), int):
        raise TypeError(f"model must be a token model with a sample method and a key dimension d "
                        f"(GaussianKeyValueModel, SineValueModel), got {type(model).__name__}")
    a = array("score", score, be, shape=(model.d,))
    d_v = getattr(model, "d_v", None)
    if isinstance(d_v, int):
        array("target", target, be, shape=(d_v,))
    return attention_error(lambda L, n, r: model.sample(L, n, r, be), lambda keys: keys @ a, target, length,
                           replicates, rng, backend=be)


def rate_fit(model, score, target, lengths, replicates, rng, backend=None) -> tuple[list[AttentionError], object]:
    """MSE at each length and the weighted fit of log RMSE against log L (SE of log RMSE = SE/(2 MSE)); ``lengths`` at
    least two distinct whole numbers ≥ 1."""
    if isinstance(lengths, (str, bytes)) or not hasattr(lengths, "__iter__"):
        raise TypeError(f"lengths must be a sequence of sequence lengths L ≥ 1, got {lengths!r}"[:200])
    lengths = [integer(f"lengths[{i}]", L, 1) for i, L in enumerate(lengths)]
    if len(set(lengths)) < 2:
        raise ValueError(f"lengths must hold at least two different lengths for the fit of log RMSE against log L, "
                         f"got {lengths}"[:200])
    errors = [score_attention_error(model, score, target, L, replicates, rng, backend=backend) for L in lengths]
    mse = np.array([e.mse.mean for e in errors])
    se = np.array([e.mse.standard_error for e in errors])
    if not np.all(mse > 0):
        raise ValueError(f"the attention's mean squared error is 0 at L = {lengths[int(np.argmin(mse > 0))]}: log RMSE "
                         "has no fit (the model's values are exact there)")
    fit = fit_line(np.log(lengths), 0.5 * np.log(mse), standard_errors=se / (2 * mse))
    return errors, fit
