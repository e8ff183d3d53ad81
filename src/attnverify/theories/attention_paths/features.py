"""Attention matrices, attention-path features and path-path kernels (Tiberi et al., NeurIPS 2024).

Spec ``attention_paths.md`` §1 (network), §1.1 (paths) and §1.2 (kernels), transcribed from the authors'
code (``LIB_convergent_summation_heads.py``: ``compute_attention_matrix_w/_qk``, ``apply_token_readout_style``,
``compute_attentioned_input``). Conventions, as in that code:

* a sequence is x ∈ R^{N0×S}, its columns x_s are the tokens; a batch is ``x[b, i, s]`` of shape (B, N0, S);
* an attention matrix is indexed Ω[key s, query t] and normalised over the **key** index:
  Σ_s Ω_{st} = 1 for every query t (``torch.softmax(scores, dim=2)`` on ``scores[b, h, s, t]``);
* a path π = (h_1, …, h_L) is packed row-major, h_1 slowest: for L = 2 the flat index is h_1·H_2 + h_2;
* the path features ("attentioned input") are
  X^μ_π = sqrt(σ0² / (N0·𝓗)) · ξ^π(x^μ),  ξ^π(x) = x Ω^{(1)}_{h1}(x) ⋯ Ω^{(L−1)}_{h_{L−1}}(x) ω^{(L)}_{hL}(x),
  with 𝓗 = Π_ℓ H_ℓ and N0 the full input width;
* path-path kernels C^{μν}_{ππ'} = X^μ_π · X^ν_{π'}, renormalised kernel K^{μν}(U) = Σ_{ππ'} U_{ππ'} C^{μν}_{ππ'}
  and the GP kernel K_GP = scale · Σ_π C_{ππ} (spec §3).

All arrays are float64 on the chosen backend (numpy by default, cupy on request); the code is written
against ``backend.xp`` only, so it runs unchanged on either.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ...base import arguments
from ...base.backend import Backend

__all__ = [
    "READOUTS",
    "attention_matrix",
    "attention_matrices",
    "attention_matrix_qk",
    "readout_vector",
    "path_features",
    "fixed_head_path_features",
    "path_kernels",
    "renormalized_kernel",
    "gp_kernel",
]

READOUTS = ("last_token", "average_pooling", "first_token")
"""Token readout styles of the last layer (``apply_token_readout_style`` in the authors' code)."""

_NUMBERS_PER_CHUNK = 2**24
"""Default batch chunk of `path_features`: about this many float64 numbers (128 MiB) per intermediate."""


# --------------------------------------------------------------------------- argument checks


def _array(name: str, value: Any, be: Backend, ndim: int) -> Any:
    """``value`` as a finite float64 array of ``be`` with ``ndim`` axes (the one boundary check)."""
    return arguments.array(name, value, be, ndim=ndim)


def _readout(readout: Any) -> str:
    return arguments.one_of("readout", readout, READOUTS)


def fits_largest(named: Sequence[tuple[str, int]], nbytes: int, what: str, be: Backend | None) -> None:
    """Refuse ``nbytes`` that cannot fit, naming the largest of the sizes ``named`` ((name, value) pairs)."""
    name, value = max(named, key=lambda pair: pair[1])
    arguments.fits_in_memory(name, nbytes, what, value=value, backend=be)


def _finite_scores(scores: Any, weights: str, xp: Any) -> Any:
    """The scores, unless a product of finite inputs overflowed float64 (then no softmax is defined)."""
    if not bool(xp.all(xp.isfinite(scores))):
        raise ValueError(f"x and {weights} give attention scores beyond the float64 range (|score| > 1.8e308); "
                         "scale them down")
    return scores


def _softmax_over_keys(scores: Any, xp: Any, axis: int = -2) -> Any:
    """softmax over ``axis``, the key index s (axis −2 of scores[..., s, t]); max-subtracted, so exp never
    overflows. Works in place on ``scores`` (a fresh array of the caller's): no temporaries of its size."""
    scores -= xp.max(scores, axis=axis, keepdims=True)
    xp.exp(scores, out=scores)
    scores /= xp.sum(scores, axis=axis, keepdims=True)
    return scores


# --------------------------------------------------------------------------- attention


def _left_multiply(m: Any, x: Any, xp: Any) -> Any:
    """m x for every example, (B, d, S): one (d, N0)·(N0, B·S) product (a broadcast matmul loops over B)."""
    return xp.moveaxis(xp.tensordot(m, x, axes=([1], [1])), 0, 1)


def attention_matrix(x: Any, weights: Any, *, backend: Any = None) -> Any:
    """Attention matrix of a fixed-W head: Ω (B, S, S), normalised over keys.

    Ω_{st}(x) = exp(x_sᵀ W x_t) / Σ_{s'} exp(x_{s'}ᵀ W x_t)   (spec §1; ``compute_attention_matrix_w``),
    with key s (first token index) and query t (second). The maximum over keys is subtracted before
    exponentiating, so scores of any size (β = 10 heads give scores of several hundred) are safe.

    ``x``: (B, N0, S) sequences, columns are tokens. ``weights``: W, (N0, N0).
    """
    return attention_matrices(x, [weights], backend=backend)[0]


def attention_matrices(x: Any, weights: Sequence[Any], *, backend: Any = None) -> list[Any]:
    """The attention matrices Ω_h (B, S, S) of several fixed-W heads on the same sequences (as
    `attention_matrix` for each W_h in ``weights``), computed together: one (B·S, N0)·(N0, H·N0) product
    x_sᵀ[W_1 ⋯ W_H] and one batched (B, S·H, N0)·(B, N0, S) product give scores[b, s, h, t], normalised over
    the key s in place. The Ω_h are views of that one (B, S, H, S) array."""
    be = arguments.backend(backend)
    xp = be.xp
    x = _array("x", x, be, 3)
    if isinstance(weights, (str, bytes)) or not hasattr(weights, "__len__") or len(weights) < 1:
        raise ValueError("weights must be a sequence of H ≥ 1 matrices W_h of shape (N0, N0)")
    n0 = x.shape[1]
    checked = []
    for h, W in enumerate(weights):
        name = "weights" if len(weights) == 1 else f"weights[{h}]"
        w = _array(name, W, be, 2)
        if w.shape != (n0, n0):
            raise ValueError(f"{name} must have shape (N0, N0) = ({n0}, {n0}) to match x, got {tuple(w.shape)}")
        checked.append(w)
    batch, tokens, heads = x.shape[0], x.shape[2], len(checked)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
        tokens_first = xp.ascontiguousarray(xp.swapaxes(x, 1, 2)).reshape(batch * tokens, n0)
        projected = (tokens_first @ xp.concatenate(checked, axis=1)).reshape(batch, tokens * heads, n0)
        scores = xp.matmul(projected, x).reshape(batch, tokens, heads, tokens)  # rows of `projected`: (s, h)
    scores = _softmax_over_keys(_finite_scores(scores, "weights", xp), xp, axis=1)
    return [scores[:, :, h, :] for h in range(heads)]


def attention_matrix_qk(x: Any, query: Any, key: Any, *, backend: Any = None) -> Any:
    """Attention matrix of a query/key head: Ω (B, S, S), normalised over keys.

    score_{st} = (K x_s)·(Q x_t) / sqrt(d_qk),  Ω_{st} = softmax_s(score_{st})   (spec §1;
    ``compute_attention_matrix_qk``). ``query`` Q and ``key`` K have shape (d_qk, N0).
    """
    be = arguments.backend(backend)
    xp = be.xp
    x = _array("x", x, be, 3)
    q = _array("query", query, be, 2)
    k = _array("key", key, be, 2)
    n0 = x.shape[1]
    if q.shape[1] != n0 or q.shape[0] < 1:
        raise ValueError(f"query must have shape (d_qk, N0) with N0 = {n0} and d_qk ≥ 1, got {tuple(q.shape)}")
    if k.shape != q.shape:
        raise ValueError(f"key must have the shape of query, {tuple(q.shape)}, got {tuple(k.shape)}")
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
        queries = _left_multiply(q, x, xp)  # (B, d_qk, S)
        keys = _left_multiply(k, x, xp)
        scores = xp.matmul(xp.swapaxes(keys, 1, 2), queries) / math.sqrt(q.shape[0])
    return _softmax_over_keys(_finite_scores(scores, "query and key", xp), xp)


def readout_vector(omega: Any, readout: str = "last_token", *, backend: Any = None) -> Any:
    """The last layer's attention vector ω (B, S) read out from Ω (B, S, S) (``apply_token_readout_style``).

    ``"last_token"``: ω_s = Ω_{s, S−1};  ``"average_pooling"``: ω_s = (1/S) Σ_t Ω_{st};
    ``"first_token"``: ω_s = Ω_{s, 0}.
    """
    be = arguments.backend(backend)
    readout = _readout(readout)
    omega = _array("omega", omega, be, 3)
    if omega.shape[1] != omega.shape[2]:
        raise ValueError(f"omega must have shape (B, S, S), got {tuple(omega.shape)}")
    return _readout_vector(omega, readout, be.xp)


def _readout_vector(omega: Any, readout: str, xp: Any) -> Any:
    if readout == "last_token":
        return omega[:, :, -1]
    if readout == "first_token":
        return omega[:, :, 0]
    return xp.mean(omega, axis=2)


# --------------------------------------------------------------------------- path features


def _check_layers(layers: Any, batch: int, tokens: int, be: Backend) -> list[list[Any]]:
    if isinstance(layers, (str, bytes)) or not hasattr(layers, "__len__") or len(layers) < 1:
        raise ValueError("layers must be a sequence of L ≥ 1 layers, each a sequence of H_ℓ ≥ 1 attention matrices")
    checked = []
    for ell, heads in enumerate(layers):
        if isinstance(heads, (str, bytes)) or not hasattr(heads, "__len__") or len(heads) < 1:
            raise ValueError(f"layers[{ell}] must be a sequence of H ≥ 1 attention matrices of shape (B, S, S)")
        row = []
        for h, omega in enumerate(heads):
            arr = _array(f"layers[{ell}][{h}]", omega, be, 3)
            if arr.shape != (batch, tokens, tokens):
                raise ValueError(
                    f"layers[{ell}][{h}] must have shape (B, S, S) = ({batch}, {tokens}, {tokens}) to match x, "
                    f"got {tuple(arr.shape)}"
                )
            row.append(arr)
        checked.append(row)
    return checked


def _attention_vectors(layers: list[list[Any]], chunk: slice, readout: str, xp: Any) -> Any:
    """a[b, π, s] with ξ^π = x a[:, π, :]: ω^{(L)} propagated back through Ω^{(L−1)}, …, Ω^{(1)}.

    Going down one layer, a_{(h, π_rest)} = Ω^{(ℓ)}_h a_{π_rest} (``einsum("b h t s, b H s -> b h H t")`` then
    ``"(h H)"`` in ``compute_attentioned_input``), so the head of the lower layer becomes the slower index.
    """
    vectors = xp.stack([_readout_vector(omega[chunk], readout, xp) for omega in layers[-1]], axis=1)
    for heads in reversed(layers[:-1]):
        rest = xp.swapaxes(vectors, 1, 2)  # (b, S, D): columns are the downstream vectors
        vectors = xp.concatenate(
            [xp.swapaxes(xp.matmul(omega[chunk], rest), 1, 2) for omega in heads], axis=1
        )  # (b, H_ℓ·D, S), head h_ℓ slowest
    return vectors


def path_features(
    x: Any,
    layers: Sequence[Sequence[Any]],
    *,
    readout: str = "last_token",
    prior_var0: float = 1.0,
    batch_size: int | None = None,
    backend: Any = None,
) -> Any:
    """Path features ("attentioned input") X (B, N0, 𝓗) of spec §1.2 (``compute_attentioned_input``).

    X^μ_π = sqrt(σ0² / (N0·𝓗)) · x^μ Ω^{(1)}_{h1} ⋯ Ω^{(L−1)}_{h_{L−1}} ω^{(L)}_{hL},   𝓗 = Π_ℓ H_ℓ,

    with ω^{(L)} the ``readout`` of the last layer (`readout_vector`) and the paths packed row-major,
    h_1 slowest (flat index Σ_ℓ h_ℓ Π_{k>ℓ} H_k). ``x``: (B, N0, S); ``layers[ℓ][h]`` = Ω^{(ℓ+1)}_h(x), each
    (B, S, S), for any L ≥ 1 and H_ℓ ≥ 1; ``prior_var0`` = σ0² > 0.

    Memory: besides the inputs and the output, the batch is processed in chunks of ``batch_size``
    examples (default: about 2^24 numbers per intermediate), and the largest intermediate per chunk is the
    stack of attention vectors (chunk, 𝓗, S) — never the (B, N0, S, 𝓗) product.
    """
    be = arguments.backend(backend)
    xp = be.xp
    readout = _readout(readout)
    prior_var0 = arguments.positive("prior_var0", prior_var0)
    x = _array("x", x, be, 3)
    batch, n0, tokens = x.shape
    if batch < 1 or n0 < 1 or tokens < 1:
        raise ValueError(f"x must have shape (B, N0, S) with every axis ≥ 1, got {tuple(x.shape)}")
    checked = _check_layers(layers, batch, tokens, be)
    paths = math.prod(len(heads) for heads in checked)
    batch_size_given = batch_size is not None
    if batch_size is None:
        batch_size = default_chunk(paths, n0, tokens)
    else:
        batch_size = arguments.integer("batch_size", batch_size, 1)
    _refuse_features(batch, n0, tokens, [len(heads) for heads in checked], min(batch, int(batch_size)),
                     batch_size_given, be)

    scale = math.sqrt(prior_var0 / (n0 * paths))
    out = xp.empty((batch, n0, paths), dtype=xp.float64)
    for start in range(0, batch, int(batch_size)):
        chunk = slice(start, min(batch, start + int(batch_size)))
        vectors = _attention_vectors(checked, chunk, readout, xp)  # (b, 𝓗, S)
        out[chunk] = scale * xp.matmul(x[chunk], xp.swapaxes(vectors, 1, 2))
    return out


def default_chunk(paths: int, n0: int, tokens: int) -> int:
    """`path_features`'s default batch chunk: about `_NUMBERS_PER_CHUNK` numbers per intermediate."""
    return max(1, _NUMBERS_PER_CHUNK // (paths * max(tokens, n0)))


def chunk_numbers(paths: int, n0: int, tokens: int) -> int:
    """float64 numbers per example that `path_features` holds for a chunk besides its output, at the larger of two
    moments: the last layer's attention vectors, their parts and the layer below (at most 3 × 𝓗 × S), or the vectors
    with the product x·a and its scaled copy (𝓗 × (S + 2N0))."""
    return paths * max(3 * tokens, tokens + 2 * n0)


def _refuse_features(batch: int, n0: int, tokens: int, heads: list[int], chunk: int, chunk_given: bool,
                     be: Backend) -> None:
    """Refuse, before allocating, path features that cannot fit: the output X (B × N0 × 𝓗 float64) and the
    intermediates of a chunk of b examples (`chunk_numbers`). One example that cannot fit names ``layers``
    (𝓗 = Π H_ℓ); the whole batch names B (x's first axis), or ``batch_size`` when the chunk it gives is the larger
    part."""
    paths = math.prod(heads)
    per_example = 8 * chunk_numbers(paths, n0, tokens)
    shapes = f"𝓗 = {paths} paths of {len(heads)} layers, N0 = {n0}, S = {tokens}"
    arguments.fits_in_memory("layers", 8 * paths * n0 + per_example, "one example's path features and attention "
                             f"vectors (𝓗 × (N0 + max(3S, S + 2N0)) float64, {shapes})", backend=be)
    output, chunks = 8 * batch * n0 * paths, chunk * per_example
    name, value = ("batch_size", chunk) if chunk_given and chunks > output else ("B", batch)
    arguments.fits_in_memory(name, output + chunks, f"the path features X (B × N0 × 𝓗 float64, B = {batch}) and a "
                             f"chunk's attention vectors (b × 𝓗 × max(3S, S + 2N0) float64, b = {chunk}; {shapes})",
                             value=value, backend=be)


def fixed_head_path_features(
    x: Any,
    weights: Sequence[Sequence[Any]],
    *,
    readout: str = "last_token",
    prior_var0: float = 1.0,
    backend: Any = None,
) -> Any:
    """Path features X (B, N0, 𝓗) of a network of fixed-W heads, ``weights[ℓ][h]`` = W^{(ℓ+1)}_h (N0, N0),
    every layer's scores computed from the input tokens x (B, N0, S) as in `path_features` with
    ``layers[ℓ][h] = attention_matrix(x, weights[ℓ][h])``, but with all heads of all layers in one pair of
    products (`attention_matrices`) and no second check of the matrices it made. For a batch that fits
    in memory with its (B, S, ΣH_ℓ, S) scores; larger batches go through it chunk by chunk."""
    be = arguments.backend(backend)
    xp = be.xp
    readout = _readout(readout)
    prior_var0 = arguments.positive("prior_var0", prior_var0)
    x = _array("x", x, be, 3)
    if isinstance(weights, (str, bytes)) or not hasattr(weights, "__len__") or len(weights) < 1 \
            or any(isinstance(layer, (str, bytes)) or not hasattr(layer, "__len__") or len(layer) < 1
                   for layer in weights):
        raise ValueError("weights must be a sequence of L ≥ 1 layers, each a sequence of H_ℓ ≥ 1 matrices (N0, N0)")
    batch, n0, tokens = (int(n) for n in x.shape)
    heads = [len(layer) for layer in weights]
    # the scores of every head of every layer (B × ΣH × S × S, with the softmax's copy), then as path_features
    fits_largest([("B", batch)], 8 * batch * 2 * sum(heads) * tokens * tokens, f"the attention matrices of all "
                 f"{sum(heads)} heads (B × ΣH × S × S float64 and a copy, S = {tokens})", be)
    _refuse_features(batch, n0, tokens, heads, batch, False, be)
    flat = attention_matrices(x, [W for layer in weights for W in layer], backend=be)
    layers, start = [], 0
    for layer in weights:
        layers.append(flat[start:start + len(layer)])
        start += len(layer)
    paths = math.prod(len(layer) for layer in weights)
    vectors = _attention_vectors(layers, slice(None), readout, xp)  # (B, 𝓗, S)
    return math.sqrt(prior_var0 / (x.shape[1] * paths)) * xp.matmul(x, xp.swapaxes(vectors, 1, 2))


# --------------------------------------------------------------------------- kernels


def _features(name: str, X: Any, be: Backend) -> Any:
    arr = _array(name, X, be, 3)
    if min(arr.shape) < 1:
        raise ValueError(f"{name} must have shape (P, N0, 𝓗) with every axis ≥ 1, got {tuple(arr.shape)}")
    return arr


def _sizes(X: Any, X_other: Any, other: Any) -> list[tuple[str, int]]:
    """The sizes a kernel grows with, by name: P (X's first axis) and, when given, P' (X_other's)."""
    return [("P", int(X.shape[0]))] + ([] if X_other is None else [("P'", int(other.shape[0]))])


def _pair(X: Any, X_other: Any, be: Backend) -> tuple[Any, Any]:
    X = _features("X", X, be)
    if X_other is None:
        return X, X
    other = _features("X_other", X_other, be)
    if other.shape[1:] != X.shape[1:]:
        raise ValueError(
            f"X_other must have shape (P', N0, 𝓗) = (P', {X.shape[1]}, {X.shape[2]}) to match X, "
            f"got {tuple(other.shape)}"
        )
    return X, other


def path_kernels(X: Any, X_other: Any = None, *, backend: Any = None) -> Any:
    """Path-path kernels C (𝓗, 𝓗, P, P') with C[π, π', μ, ν] = X^μ_π · X^ν_{π'} (spec §1.2).

    The dot product runs over the N0 input dimensions; ``X_other`` (P', N0, 𝓗) defaults to ``X``.
    For small problems only: C takes 8·𝓗²·P·P' bytes (𝓗 = 16, P = P' = 600: 737 MB). Use
    `renormalized_kernel` or `gp_kernel` to get K without forming C.
    """
    be = arguments.backend(backend)
    xp = be.xp
    X, other = _pair(X, X_other, be)
    (P, n0, paths), P_other = X.shape, other.shape[0]
    nbytes = 8 * (paths * paths * P * P_other + (P + P_other) * n0 * paths)
    fits_largest(_sizes(X, X_other, other) + [("𝓗", int(paths))], nbytes,
                 f"the path-path kernels C (𝓗 × 𝓗 × P × P' float64, 𝓗 = {paths}, P = {P}, P' = {P_other}) and "
                 "contiguous copies of X and X_other", be)
    left = xp.transpose(X, (2, 0, 1))  # (𝓗, P, N0)
    right = xp.transpose(other, (2, 1, 0))  # (𝓗, N0, P')
    return xp.matmul(left[:, None, :, :], right[None, :, :, :])


def renormalized_kernel(U: Any, X: Any, X_other: Any = None, *, backend: Any = None) -> Any:
    """Renormalised kernel K (P, P') = Σ_{ππ'} U_{ππ'} X^μ_π · X^ν_{π'} (spec §1.2, §2.3), without forming C.

    K = X̃ Z̃ᵀ with X̃ = X reshaped to (P, N0·𝓗) and Z̃ the reshape of Z[ν, i, π] = Σ_{π'} U_{ππ'} X^ν_{iπ'}
    (``compute_renormalized_attentioned_input`` in the authors' code). ``U``: order parameter (𝓗, 𝓗),
    not required to be symmetric; ``X_other`` (P', N0, 𝓗) defaults to ``X`` (train–test kernel k(x) otherwise).
    """
    be = arguments.backend(backend)
    xp = be.xp
    X, other = _pair(X, X_other, be)
    paths = X.shape[2]
    u = _array("U", U, be, 2)
    if u.shape != (paths, paths):
        raise ValueError(f"U must have shape (𝓗, 𝓗) = ({paths}, {paths}) to match X, got {tuple(u.shape)}")
    P, P_other, n0 = X.shape[0], other.shape[0], X.shape[1]
    fits_largest(_sizes(X, X_other, other), 8 * (P * P_other + P_other * n0 * paths),
                 f"the kernel K (P × P' float64, P = {P}, P' = {P_other}) and Z (P' × N0 × 𝓗 float64, N0 = {n0}, "
                 f"𝓗 = {paths})", be)
    z = xp.matmul(other, u.T)  # z[ν, i, π] = Σ_π' U_{ππ'} X_other[ν, i, π']
    return xp.matmul(X.reshape(X.shape[0], -1), z.reshape(z.shape[0], -1).T)


def gp_kernel(X: Any, scale: float = 1.0, *, X_other: Any = None, backend: Any = None) -> Any:
    """GP-limit kernel K_GP (P, P') = scale · Σ_π X^μ_π · X^ν_π (spec §3: U = scale·I, cross-paths dropped).

    With unit prior variances scale = σ_a² Π_ℓ σ_ℓ² = 1. ``X_other`` (P', N0, 𝓗) defaults to ``X``.
    """
    be = arguments.backend(backend)
    xp = be.xp
    scale = arguments.positive("scale", scale)
    X, other = _pair(X, X_other, be)
    P, P_other = X.shape[0], other.shape[0]
    fits_largest(_sizes(X, X_other, other), 8 * P * P_other, f"the kernel K (P × P' float64, P = {P}, P' = {P_other})",
                 be)
    kernel = xp.matmul(X.reshape(X.shape[0], -1), other.reshape(other.shape[0], -1).T)
    kernel *= scale  # in place: the one P × P' array the check above counts
    return kernel
