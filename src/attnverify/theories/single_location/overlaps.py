"""Overlaps of (k, v) with (k*, v*) and their gradients.

Part of `attnverify.theories.single_location` (see its docstring for the spec and sources).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...base import arguments
from . import derivations as derived

from ._common import UNIT_TOLERANCE, RANK_TOLERANCE, unit_pair


def overlaps(k: Any, v: Any, k_star: Any, v_star: Any, *, backend: Any = None) -> tuple[Any, Any, Any, Any, Any]:
    """The five overlaps (κ, ν, θ, η, ρ) = (⟨k,k*⟩, ⟨v,v*⟩, ⟨v,k*⟩, ⟨k,v*⟩, ⟨k,v⟩) (spec §3.1).

    k, v of shape (..., dim); each overlap has shape (...).
    """
    return derived.overlaps(k, v, k_star, v_star, backend=arguments.backend(backend))


def chain_rule(partials: Sequence[Any], k: Any, v: Any, k_star: Any, v_star: Any) -> tuple[Any, Any]:
    """`overlap_gradient_to_vectors` on arrays its caller has checked."""
    r_kappa, r_nu, r_theta, r_eta, r_rho = (p[..., None] for p in partials)
    g_k = r_kappa * k_star + r_eta * v_star + r_rho * v
    g_v = r_nu * v_star + r_theta * k_star + r_rho * k
    return g_k, g_v


def overlap_gradient_to_vectors(
    partials: Sequence[Any], k: Any, v: Any, k_star: Any, v_star: Any, *, backend: Any = None
) -> tuple[Any, Any]:
    """Euclidean gradients of ℛ(κ, ν, θ, η, ρ) in k and v by the chain rule (spec §3.2).

    ∇_kℛ = ℛ_κ k* + ℛ_η v* + ℛ_ρ v,   ∇_vℛ = ℛ_ν v* + ℛ_θ k* + ℛ_ρ k,
    with ``partials`` = (ℛ_κ, ℛ_ν, ℛ_θ, ℛ_η, ℛ_ρ), each of shape (runs,) or broadcasting to it (k, v of
    shape (runs, dim)).
    """
    be = arguments.backend(backend)
    if isinstance(partials, (str, bytes)) or not isinstance(partials, (Sequence, np.ndarray)):
        raise TypeError(f"partials must be a sequence of the 5 derivatives (ℛ_κ, ℛ_ν, ℛ_θ, ℛ_η, ℛ_ρ), "
                        f"got {partials!r:.80}")
    if len(partials) != 5:
        raise ValueError(
            f"partials must hold the 5 derivatives (ℛ_κ, ℛ_ν, ℛ_θ, ℛ_η, ℛ_ρ), got {len(partials)}"
        )
    vectors = {name: arguments.array(name, u, be, min_ndim=1)
               for name, u in (("k", k), ("v", v), ("k_star", k_star), ("v_star", v_star))}
    dim = int(vectors["k"].shape[-1])
    for name, u in vectors.items():
        if int(u.shape[-1]) != dim:
            raise ValueError(f"{name} must have a last axis of length {dim} like k, got shape {tuple(u.shape)}")
    try:
        runs = np.broadcast_shapes(*(tuple(u.shape[:-1]) for u in vectors.values()))
    except ValueError:
        raise ValueError("k, v, k_star and v_star must broadcast together, got shapes "
                         f"{[tuple(u.shape) for u in vectors.values()]}") from None
    partials = [arguments.array(f"partials[{i}]", p, be) for i, p in enumerate(partials)]
    for i, p in enumerate(partials):
        try:
            fits = np.broadcast_shapes(tuple(p.shape), tuple(runs)) == tuple(runs)
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"partials[{i}] must have shape {tuple(runs)} (the runs of k, v) or broadcast to it, "
                             f"got {tuple(p.shape)}")
    return chain_rule(partials, *vectors.values())


def _residual(w: Any, basis: Sequence[Any], xp: Any) -> Any:
    """w minus its projection on the (row-wise) orthonormal ``basis`` vectors, done twice."""
    for _ in range(2):
        for q in basis:
            w = w - xp.sum(q * w, axis=-1, keepdims=True) * q
    return w


def _normalised_or_zero(w: Any, reference: Any, xp: Any) -> Any:
    size = xp.linalg.norm(w, axis=-1, keepdims=True)
    keep = size > RANK_TOLERANCE * xp.linalg.norm(reference, axis=-1, keepdims=True)
    return xp.where(keep, w / xp.where(keep, size, 1.0), 0.0)


def reduce_to_four_dimensions(
    k: Any, v: Any, k_star: Any, v_star: Any, *, backend: Any = None
) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """Coordinates of (k, v) on an orthonormal basis (k*, v*, e3, e4) of span{k*, v*, k, v} (spec §3.2).

    Returns ((k4, v4), (e1, e2)) with k4, v4 of shape (runs, 4) (or (4,) for unbatched input) and
    e1, e2 the images of k*, v*; all five overlaps and the norms are preserved to round-off, so
    population PGD from (k, v) can be run in R⁴ for any d. e3 is the Gram–Schmidt direction of k, e4 that
    of v (each orthogonalised twice); an empty direction (e.g. k = k*) gives a zero coordinate.
    """
    be = arguments.backend(backend)
    xp = be.xp
    k = arguments.array("k", k, be, min_ndim=1)
    single = k.ndim == 1
    k, v = unit_pair("k", k, "v", v, be, batched=True)
    k_star, v_star = unit_pair("k_star", k_star, "v_star", v_star, be, k.shape[-1], batched=False)
    inner = float(k_star @ v_star)
    if abs(inner) > UNIT_TOLERANCE:
        raise ValueError(f"k_star and v_star must be orthogonal (within {UNIT_TOLERANCE:g}), got {inner!r}")
    e3 = _normalised_or_zero(_residual(k, [k_star, v_star], xp), k, xp)
    e4 = _normalised_or_zero(_residual(v, [k_star, v_star, e3], xp), v, xp)
    basis = [xp.broadcast_to(k_star, k.shape), xp.broadcast_to(v_star, k.shape), e3, e4]
    k4 = xp.stack([xp.sum(q * k, axis=-1) for q in basis], axis=-1)
    v4 = xp.stack([xp.sum(q * v, axis=-1) for q in basis], axis=-1)
    e1 = be.asarray([1.0, 0.0, 0.0, 0.0])
    e2 = be.asarray([0.0, 1.0, 0.0, 0.0])
    if single:
        k4, v4 = k4[0], v4[0]
    return (k4, v4), (e1, e2)
