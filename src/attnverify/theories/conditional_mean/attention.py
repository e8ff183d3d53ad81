"""Attention maps as estimators of a conditional mean (note §3.1).

All maps act on a batch: keys (..., L, d), values (..., L, d_v); queries/scores (..., d) and biases
(..., L) with at most as many batch axes as the keys, broadcasting against them (one query may
serve a batch of sequences).
Softmax weights are computed with the maximum subtracted (log-sum-exp), in float64; the logits are
formed in power-of-two scaled form, so finite inputs of any magnitude give the right weights
(a bandwidth of 1e-200 puts all the weight on the nearest key) and never a NaN.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...base.arguments import array, backend as backend_argument, fits_in_memory, integer, positive
from ...base.backend import Backend, array_module
from ...numerics.kernel_energy import cholesky_solve
from ._stable import backend_of, exponent, finite_result


def softmax_weights(logits: Any, axis: int = -1) -> Any:
    """softmax of already-checked finite logits (internal: hot loops call this)."""
    xp = array_module(logits)
    weights = xp.exp(logits - xp.max(logits, axis=axis, keepdims=True))
    return weights / xp.sum(weights, axis=axis, keepdims=True)


def softmax(logits: Any, axis: int = -1) -> Any:
    """exp(logits − max)/Σ exp(logits − max) along ``axis`` (log-sum-exp stable)."""
    z = array("logits", logits, backend_of(logits), min_ndim=1)
    axis = integer("axis", axis, -z.ndim, z.ndim - 1)
    with np.errstate(over="ignore"):  # logits − max below −1.8e308 is −inf: a weight of exactly 0, as it should be
        return softmax_weights(z, axis)


def unchecked_weighted_mean(logits: Any, values: Any) -> Any:
    """`weighted_mean` on arrays its caller has checked (the Monte Carlo loop)."""
    return (softmax_weights(logits)[..., None] * values).sum(axis=-2)


def weighted_mean(logits: Any, values: Any) -> Any:
    """Σ_ℓ softmax(logits)_ℓ v_ℓ: the self-normalised (Nadaraya–Watson) average of the values.

    logits (..., L), values (..., L, d_v).
    """
    be = backend_of(logits, values)
    V = array("values", values, be, min_ndim=2)
    z = array("logits", logits, be)
    if z.shape != V.shape[:-1]:
        raise ValueError(f"logits must have shape (..., L) = {V.shape[:-1]} to match values (..., L, d_v) = {V.shape}, "
                         f"got {z.shape}")
    return unchecked_weighted_mean(z, V)


def _tokens(keys: Any, values: Any, be: Backend) -> tuple[Any, Any]:
    K = array("keys", keys, be, min_ndim=2)
    V = array("values", values, be, min_ndim=2)
    if K.shape[:-1] != V.shape[:-1]:
        raise ValueError(f"keys and values must hold the same tokens, with shapes (..., L, d) and (..., L, d_v), "
                         f"got {K.shape} and {V.shape}")
    return K, V


def _per_token(name: str, value: Any, K: Any, be: Backend, last: int, what: str) -> Any:
    """A (..., ``last``) array whose batch axes broadcast against those of the keys (..., L, d), never adding one."""
    x = array(name, value, be)
    if not 1 <= x.ndim <= K.ndim - 1 or x.shape[-1] != last:
        raise ValueError(f"{name} must have shape (..., {what}) = (..., {last}) with at most the batch axes of keys "
                         f"{tuple(K.shape)}, got {tuple(x.shape)}")
    try:
        np.broadcast_shapes(tuple(x.shape[:-1]), tuple(K.shape[:-2]))
    except ValueError:
        raise ValueError(f"the batch axes of {name} {tuple(x.shape[:-1])} and of keys {tuple(K.shape[:-2])} "
                         "do not broadcast") from None
    return x


def softmax_attention(scores: Any, keys: Any, values: Any, bias: Any = None) -> Any:
    """attn(a, K, V) = Σ_ℓ softmax_ℓ(aᵀk_ℓ + b_ℓ) v_ℓ, with a = Wq the score vector (note §3.1).

    scores (..., d), keys (..., L, d), values (..., L, d_v), bias (..., L) or None; lists are
    accepted. The logits are scaled by powers of two before they are formed, so they never overflow.
    """
    be = backend_of(scores, keys, values, bias)
    K, V = _tokens(keys, values, be)
    a = _per_token("scores", scores, K, be, K.shape[-1], "d")
    b = None if bias is None else _per_token("bias", bias, K, be, K.shape[-2], "L")
    xp = be.xp
    ek = exponent(xp, K, (-2, -1))[..., 0]  # (..., 1): max|k| < 2^ek per sequence
    ea = exponent(xp, a, -1)
    u = (xp.ldexp(K, -ek[..., None]) * xp.ldexp(a, -ea)[..., None, :]).sum(axis=-1)  # aᵀk_ℓ / 2^(ek+ea)
    top = ek + ea
    if b is not None:
        top = xp.maximum(top, exponent(xp, b, -1))
        u = xp.ldexp(u, ek + ea - top) + xp.ldexp(b, -top)  # (aᵀk_ℓ + b_ℓ) / 2^top, |·| ≤ d + 1
    else:
        u = xp.ldexp(u, ek + ea - top)
    with np.errstate(over="ignore"):  # a logit far below the maximum becomes −inf: weight 0, as it should
        shifted = xp.ldexp(u - xp.max(u, axis=-1, keepdims=True), top)  # logits − max, exact scaling back
    return unchecked_weighted_mean(shifted, V)


def rbf_attention(query: Any, keys: Any, values: Any, bandwidth: float) -> Any:
    """Σ_ℓ softmax_ℓ(−‖q − k_ℓ‖²/(2h²)) v_ℓ: Gaussian-kernel Nadaraya–Watson attention.

    The squared distances are formed on keys and query scaled by a power of two and shifted by
    their minimum, so a bandwidth as small as 1e-200 gives the nearest key's value (the limit h → 0)
    and a huge one the plain mean.
    """
    be = backend_of(query, keys, values)
    K, V = _tokens(keys, values, be)
    q = _per_token("query", query, K, be, K.shape[-1], "d")
    h = positive("bandwidth", bandwidth)
    xp = be.xp
    e = xp.maximum(exponent(xp, K, (-2, -1))[..., 0], exponent(xp, q, -1))  # (..., 1)
    diff = xp.ldexp(K, -e[..., None]) - xp.ldexp(q, -e)[..., None, :]
    distance = (diff * diff).sum(axis=-1)  # ‖q − k_ℓ‖² / 4^e
    gap = distance - xp.min(distance, axis=-1, keepdims=True)
    mantissa, power = math.frexp(h)  # h = m·2^power
    with np.errstate(over="ignore"):  # −∞ for keys much farther than the nearest: weight 0 (h → 0 limit)
        logits = xp.ldexp(-gap / (2 * mantissa * mantissa), 2 * (e - power))
    return unchecked_weighted_mean(logits, V)


def ridge_attention(query: Any, keys: Any, values: Any, ridge: float, backend: Backend | str | None = None) -> Any:
    """CME attention with the linear kernel: Vᵀ(KKᵀ + λI)⁻¹Kq (note §3.1), one sequence.

    keys (L, d), values (L, d_v), query (d,). Solved through the Cholesky factor of the L × L
    kernel matrix KKᵀ + λI (λ > 0 makes it positive definite).
    """
    be = backend_argument(backend)
    lam = positive("ridge", ridge)
    K, V = _tokens(keys, values, be)
    if K.ndim != 2:
        raise ValueError(f"ridge_attention takes one sequence: keys (L, d) and values (L, d_v), got shapes "
                         f"{tuple(K.shape)} and {tuple(V.shape)}")
    q = array("query", query, be)
    if q.shape != (K.shape[1],):
        raise ValueError(f"query must have shape (d,) = ({K.shape[1]},) to match keys (L, d) = {tuple(K.shape)}, "
                         f"got {tuple(q.shape)}")
    xp = be.xp
    # With K = 2^e K', q = 2^f q', V = 2^g V': Vᵀ(KKᵀ + λI)⁻¹Kq = 2^(g+f−e) V'ᵀ(K'K'ᵀ + μI)⁻¹K'q', μ = λ/4^e,
    # which rounds exactly as the unscaled solve and cannot overflow in KKᵀ
    e, f, g = (int(xp.frexp(xp.max(xp.abs(x)))[1]) for x in (K, q, V))
    Ks, qs, Vs = xp.ldexp(K, -e), xp.ldexp(q, -f), xp.ldexp(V, -g)
    with np.errstate(over="ignore"):
        mu = float(np.ldexp(lam, -2 * e))
        if math.isinf(mu):  # λ ≫ ‖K‖²: (KKᵀ + λI)⁻¹ = I/λ to float64 precision
            out = xp.ldexp(Vs.T @ (Ks @ qs) / lam, g + f + e)
            return finite_result(xp, out, "ridge_attention", "keys, values and query")
        L, d, d_v = (int(n) for n in (K.shape[0], K.shape[1], V.shape[1]))
        fits_in_memory("L", 8 * (3 * L * L + L * (d + d_v)), f"the L × L matrix KKᵀ + ridge·I with a temporary and "
                       f"its Cholesky factor (float64), and the scaled keys and values (d = {d}, d_v = {d_v})",
                       value=L, backend=be)
        try:
            factor = be.cholesky(Ks @ Ks.T + mu * xp.eye(K.shape[0]))
        except np.linalg.LinAlgError:
            bound = math.log10(float(xp.sum(Ks * Ks))) + 2 * e * math.log10(2) - 15  # log10(1e-15·‖K‖_F²)
            raise ValueError(f"ridge must be at least about 1e-15·‖K‖_F² = {10 ** (bound % 1):.3g}e{math.floor(bound):+d} "
                             f"for KKᵀ + ridge·I to be numerically positive definite with these keys (L > d makes KKᵀ "
                             f"singular; smaller keys lower the bound), got {lam!r}") from None
        out = xp.ldexp(Vs.T @ cholesky_solve(be, factor, Ks @ qs), g + f - e)
    return finite_result(xp, out, "ridge_attention", "keys, values and query")

