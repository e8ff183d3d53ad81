"""Attention maps as estimators of a conditional mean (note §3.1).

All maps act on a batch: keys (..., L, d), values (..., L, d_v); queries/scores (..., d).
Softmax weights are computed with the maximum subtracted (log-sum-exp), in float64.
"""

from __future__ import annotations

from typing import Any

from ..arguments import real
from ..backend import Backend, array_module, get_backend


def softmax(logits: Any, axis: int = -1) -> Any:
    """exp(logits − max)/Σ exp(logits − max) along ``axis`` (log-sum-exp stable)."""
    xp = array_module(logits)
    shifted = logits - xp.max(logits, axis=axis, keepdims=True)
    weights = xp.exp(shifted)
    return weights / xp.sum(weights, axis=axis, keepdims=True)


def _check_tokens(keys: Any, values: Any) -> None:
    if keys.ndim < 2 or values.ndim < 2:
        raise ValueError(f"keys and values must have shape (..., L, d) and (..., L, d_v), got {keys.shape}, {values.shape}")
    if keys.shape[:-1] != values.shape[:-1]:
        raise ValueError(f"keys and values must hold the same tokens, got shapes {keys.shape} and {values.shape}")
    if keys.shape[-2] < 1:
        raise ValueError("attention needs at least one token (L ≥ 1)")


def weighted_mean(logits: Any, values: Any) -> Any:
    """Σ_ℓ softmax(logits)_ℓ v_ℓ: the self-normalised (Nadaraya–Watson) average of the values."""
    weights = softmax(logits)
    return (weights[..., None] * values).sum(axis=-2)


def softmax_attention(scores: Any, keys: Any, values: Any, bias: Any = None) -> Any:
    """attn(a, K, V) = Σ_ℓ softmax_ℓ(aᵀk_ℓ + b_ℓ) v_ℓ, with a = Wq the score vector (note §3.1)."""
    _check_tokens(keys, values)
    if scores.shape[-1] != keys.shape[-1]:
        raise ValueError(f"scores must have the key dimension {keys.shape[-1]} last, got shape {scores.shape}")
    logits = (keys * scores[..., None, :]).sum(axis=-1)
    if bias is not None:
        logits = logits + bias
    return weighted_mean(logits, values)


def rbf_attention(query: Any, keys: Any, values: Any, bandwidth: float) -> Any:
    """Σ_ℓ softmax_ℓ(−‖q − k_ℓ‖²/(2h²)) v_ℓ: Gaussian-kernel Nadaraya–Watson attention."""
    _check_tokens(keys, values)
    h = real("bandwidth", bandwidth, low=0.0, open_low=True)
    logits = -((keys - query[..., None, :]) ** 2).sum(axis=-1) / (2 * h * h)
    return weighted_mean(logits, values)


def ridge_attention(query: Any, keys: Any, values: Any, ridge: float, backend: Backend | str | None = None) -> Any:
    """CME attention with the linear kernel: Vᵀ(KKᵀ + λI)⁻¹Kq (note §3.1), one sequence.

    Solved through the Cholesky factor of the L × L kernel matrix KKᵀ + λI (λ > 0 makes it
    positive definite).
    """
    be = get_backend(backend)
    lam = real("ridge", ridge, low=0.0, open_low=True)
    K, V, q = be.asarray(keys), be.asarray(values), be.asarray(query)
    if K.ndim != 2 or V.ndim != 2 or q.ndim != 1:
        raise ValueError(f"ridge_attention takes one sequence: keys (L, d), values (L, d_v), query (d,); got {K.shape}, {V.shape}, {q.shape}")
    _check_tokens(K, V)
    gram = K @ K.T + lam * be.xp.eye(K.shape[0])
    factor = be.xp.linalg.cholesky(gram)
    kq = K @ q
    solved = _cholesky_solve(factor, kq, be)
    return V.T @ solved


def _cholesky_solve(factor: Any, rhs: Any, be: Backend) -> Any:
    if be.name == "numpy":
        from scipy.linalg import solve_triangular
    else:  # pragma: no cover - GPU only
        from cupyx.scipy.linalg import solve_triangular
    forward = solve_triangular(factor, rhs, lower=True)
    return solve_triangular(factor.T, forward, lower=False)
