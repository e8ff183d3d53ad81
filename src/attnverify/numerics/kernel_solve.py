"""A batch of Gram matrices G = K + T·I solved once per chain by Cholesky, G = LLᵀ: the factors, the whitened labels
L⁻¹y, α = G⁻¹y, ½ ln det G = Σ_j ln L_jj and yᵀG⁻¹y = |L⁻¹y|², and, from them, the energy's gradient
∂/∂K [½ yᵀG⁻¹y + ½ ln det G] = ½(G⁻¹ − ααᵀ). What the sampled networks' collapsed potential and the action's energy
for many chains share (`attnverify.saddle.network`, `attnverify.numerics.kernel_energy`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from ..base.backend import Backend


@dataclass(frozen=True)
class KernelSolve:
    """G = K + T·I of every chain, solved once: its lower Cholesky factors L (C, P, P), ``whitened`` = L⁻¹y (C, P),
    ``half_logdet`` ½ ln det G and ``quadratic`` yᵀG⁻¹y (C,), and ``failed`` (C,): the chains whose G has no factor
    in floating point (not finite, or not positive definite), which carry the identity's factor so that every solve
    stays finite (`Backend.cholesky_each`); α = G⁻¹y (C, P) when first asked for."""

    factor: Any
    whitened: Any
    half_logdet: Any
    quadratic: Any
    failed: Any
    backend: Backend
    identity: Any

    @functools.cached_property
    def alpha(self):
        """α = G⁻¹y = L⁻ᵀ(L⁻¹y) per chain (C, P): one triangular solve, made once and only where it is read (the
        Woodbury energy reads only L⁻¹y)."""
        return self.backend.solve_lower(self.factor, self.whitened, transpose=True)

    def whiten(self, rhs, *, shared: bool = False):
        """L⁻¹B per chain (B (C, P, k), or one B (P, k) for every chain when ``shared``)."""
        return self.backend.solve_lower(self.factor, rhs, shared=shared)

    def energy_gradient(self, scale: float = 1.0):
        """``scale`` × ½(G⁻¹ − ααᵀ) (C, P, P), the inverse from the factors (`Backend.cholesky_inverse`): on a device
        one fused operation (one kernel), on numpy in place."""
        inverse = self.backend.cholesky_inverse(self.factor, self.identity)
        if self.backend.name == "numpy":
            # in place in the inverse: the fused form's bits without its two (C, P, P) temporaries, which cost
            # ~8 % of the gradient at P = 100 on one core
            inverse -= self.alpha[:, :, None] * self.alpha[:, None, :]
            if 0.5 * scale != 1.0:
                inverse *= 0.5 * scale
            return inverse
        return self.backend.fused(_energy_gradient)(inverse, self.alpha[:, :, None], self.alpha[:, None, :],
                                                    0.5 * scale)


def solve_each(backend: Backend, G, labels, identity=None) -> KernelSolve:
    """`KernelSolve` of the batch G (C, P, P) for the labels y (P,), one for every chain, or (C, P), one per chain;
    ``identity`` the (P, P) identity where the caller keeps one."""
    be, xp = backend, backend.xp
    identity = xp.eye(G.shape[-1]) if identity is None else identity
    factor, failed = be.cholesky_each(G, identity)
    labels = xp.broadcast_to(labels, G.shape[:2])
    whitened = be.solve_lower(factor, labels)
    half_logdet = be.fused(_half_logdet)(xp.diagonal(factor, axis1=1, axis2=2))
    quadratic = xp.einsum("cp,cp->c", whitened, whitened)
    return KernelSolve(factor, whitened, half_logdet, quadratic, failed, be, identity)


def _half_logdet(xp, pivots):
    """½ ln det G = Σ_j ln L_jj per chain, from the factors' diagonals (C, P)."""
    return xp.sum(xp.log(pivots), axis=1)


def _energy_gradient(xp, inverse, alpha_column, alpha_row, scale):
    """``scale`` × (G⁻¹ − ααᵀ) per chain (C, P, P)."""
    return (inverse - alpha_column * alpha_row) * scale
