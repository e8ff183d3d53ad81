"""The entropy 𝓛(U_a, U_L, …, U_1) of the attention-path action and its matrix gradients.

𝓛 = n_L [U_a/σ_a² − ln U_a]
    + Σ_{ℓ=1}^{L} n_{ℓ−1} [ (1/σ_ℓ²) Tr(U_{ℓ+1}^{-1} Tr_{h_ℓ} U_ℓ) − ln det U_ℓ + H_ℓ ln det U_{ℓ+1} ],
U_{L+1} ≡ U_a, with h_ℓ the slow index of U_ℓ (paths packed row-major, h_1 slowest).
Tiberi et al. (NeurIPS 2024), authors' code ``compute_entropy_action``; docs/papers/attention_paths.md
§2.1 (the gradients are §2.2, proven equal to sympy's derivatives in
``attnverify.theories.attention_paths.derivations``).

Every U_ℓ enters through its lower Cholesky factor R_ℓ (U_ℓ = R_ℓ R_ℓᵀ), so ln det is a sum of
logs and U_{ℓ+1}^{-1} B is a pair of triangular solves; no inverse is formed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy.linalg import cho_solve

from ...base import arguments


@dataclass(frozen=True)
class ActionConfig:
    """Architecture and priors of the action.

    heads       (H_1, …, H_L): heads per layer
    widths      (n_0, …, n_L): widths after V^(0) and after each attention layer
    variances   (σ_1², …, σ_L², σ_a²): prior variances of V^(ℓ) and of the readout a
                (σ_0² enters only through the path features X = sqrt(σ_0²/(N0𝓗)) ξ)
    temperature T > 0 of the Gibbs posterior
    """

    heads: tuple[int, ...]
    widths: tuple[float, ...]
    variances: tuple[float, ...]
    temperature: float

    @property
    def depth(self) -> int:
        return len(self.heads)

    @property
    def paths(self) -> int:
        """𝓗 = Π H_ℓ, the number of attention paths."""
        return int(np.prod(self.heads))

    def dimension(self, level: int) -> int:
        """D_ℓ = Π_{k ≥ ℓ} H_k, the size of U_ℓ (level 1..L)."""
        return int(np.prod(self.heads[level - 1:]))

    @classmethod
    def build(cls, heads: Sequence[int], width, temperature: float, prior_var=1.0) -> "ActionConfig":
        """Validate and normalise the public arguments (width and prior_var may be scalars)."""
        heads = arguments.integers("heads", heads, 1)
        L = len(heads)
        widths = arguments.positives("width", width, L + 1, "(n_0, …, n_L)")
        variances = arguments.positives("prior_var", prior_var, L + 1, "(σ_1², …, σ_L², σ_a²)")
        temperature = arguments.positive("temperature", temperature)
        return cls(heads, widths, variances, temperature)


def partial_trace(U: np.ndarray, heads_here: int) -> np.ndarray:
    """Tr_{h_ℓ} U_ℓ: trace over the slow index h_ℓ of U_ℓ (size H_ℓ·D_{ℓ+1}); leading axes are a batch."""
    rest = U.shape[-1] // heads_here
    return np.einsum("...hahb->...ab", U.reshape(U.shape[:-2] + (heads_here, rest, heads_here, rest)))


def entropy(config: ActionConfig, factors: Sequence[np.ndarray], U_a: float) -> float:
    """𝓛 at U_ℓ = R_ℓ R_ℓᵀ (``factors`` = (R_1, …, R_L), lower triangular) and U_a."""
    n, s2, H, L = config.widths, config.variances, config.heads, config.depth
    value = n[L] * (U_a / s2[L] - np.log(U_a))
    for level in range(1, L + 1):
        R = factors[level - 1]
        traced = partial_trace(R @ R.T, H[level - 1])
        if level < L:
            R_next = factors[level]
            tr = np.trace(cho_solve((R_next, True), traced))
            logdet_next = 2.0 * np.sum(np.log(np.diag(R_next)))
        else:
            tr = float(traced[0, 0]) / U_a
            logdet_next = np.log(U_a)
        logdet = 2.0 * np.sum(np.log(np.diag(R)))
        value += n[level - 1] * (tr / s2[level - 1] - logdet + H[level - 1] * logdet_next)
    return float(value)


def entropy_gradients(config: ActionConfig, factors: Sequence[np.ndarray], U_a: float) -> tuple[list[np.ndarray], float]:
    """(∂𝓛/∂U_1, …, ∂𝓛/∂U_L) as symmetric matrices, and ∂𝓛/∂U_a (§2.2 of the spec)."""
    n, s2, H, L = config.widths, config.variances, config.heads, config.depth
    inverses = []  # U_ℓ^{-1} by Cholesky solves (small D_ℓ × D_ℓ, needed entry-wise by the gradient)
    for R in factors:
        inverses.append(cho_solve((R, True), np.eye(R.shape[0])))
    inverses.append(np.array([[1.0 / U_a]]))
    grads = []
    for level in range(1, L + 1):
        own = n[level - 1] * (np.kron(np.eye(H[level - 1]), inverses[level]) / s2[level - 1] - inverses[level - 1])
        if level >= 2:
            R_up = factors[level - 2]
            traced = partial_trace(R_up @ R_up.T, H[level - 2])
            Uinv = inverses[level - 1]
            own = own + n[level - 2] * (H[level - 2] * Uinv - Uinv @ traced @ Uinv / s2[level - 2])
        grads.append(0.5 * (own + own.T))
    trace_last = float(np.sum(factors[L - 1] ** 2))
    grad_a = n[L] * (1.0 / s2[L] - 1.0 / U_a) + n[L - 1] * (H[L - 1] / U_a - trace_last / (s2[L - 1] * U_a**2))
    return grads, float(grad_a)
