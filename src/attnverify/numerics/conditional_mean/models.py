"""Exchangeable token models with a closed-form conditional mean or latent posterior (note §2.3, §3.2).

* :class:`GaussianKeyValueModel`: k ~ N(μ, Σ), v = Ak + b + σξ (E[v | k = q] = Aq + b).
* :class:`SineValueModel`: 1-D k ~ N(0, s²), v = sin(ωk) + σ_v ξ (a non-linear conditional mean).
* :class:`ConjugateGaussianModel` (M1), :class:`FiniteLatentModel` (M2) and
  :class:`LinearGaussianLatentModel` (M3): latent z, tokens i.i.d. given z.

Parameters live on the host (numpy); ``sample`` draws on the requested backend from an explicit
generator. Every sample has shape (replicates, L, ·): replicates are a batch axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.special import logsumexp

from ..arguments import integer, positive_definite_factor, real, shaped_array
from ..backend import Backend, get_backend


@dataclass(frozen=True, eq=False)
class GaussianKeyValueModel:
    """Keys k ~ N(μ, Σ) in R^d, values v = Ak + b + σξ in R^{d_v}, ξ ~ N(0, I) (note §3.2)."""

    key_mean: Any
    key_covariance: Any
    value_map: Any
    value_offset: Any
    noise_sd: float

    def __post_init__(self) -> None:
        mu = shaped_array("key_mean", self.key_mean, (None,))
        d = mu.shape[0]
        if d < 1:
            raise ValueError("key_mean must have at least one coordinate")
        sigma = shaped_array("key_covariance", self.key_covariance, (d, d))
        A = shaped_array("value_map", self.value_map, (None, d))
        b = shaped_array("value_offset", self.value_offset, (A.shape[0],))
        object.__setattr__(self, "key_mean", mu)
        object.__setattr__(self, "key_covariance", sigma)
        object.__setattr__(self, "value_map", A)
        object.__setattr__(self, "value_offset", b)
        object.__setattr__(self, "noise_sd", real("noise_sd", self.noise_sd, low=0.0))
        object.__setattr__(self, "_factor", positive_definite_factor("key_covariance", sigma))

    @property
    def d(self) -> int:
        return self.key_mean.shape[0]

    @property
    def d_v(self) -> int:
        return self.value_map.shape[0]

    def _vector(self, name: str, x: Any) -> np.ndarray:
        return shaped_array(name, x, (self.d,))

    def conditional_mean(self, query: Any) -> np.ndarray:
        """E[v | k = q] = Aq + b."""
        return self.value_map @ self._vector("query", query) + self.value_offset

    def desired_score(self, query: Any) -> np.ndarray:
        """a = Σ⁻¹(q − μ): the score vector whose attention limit is E[v | k = q] (Cholesky solve)."""
        return cho_solve(self._factor, self._vector("query", query) - self.key_mean)

    def attention_limit(self, score: Any) -> np.ndarray:
        """m∞(a) = E[v e^{aᵀk}]/E[e^{aᵀk}] = A(μ + Σa) + b."""
        a = self._vector("score", score)
        return self.value_map @ (self.key_mean + self.key_covariance @ a) + self.value_offset

    def invariants(self, score: Any) -> tuple[float, float, float, float]:
        """(s², ‖β‖², τ², ν²) = (aᵀΣa, ‖AΣa‖², tr(AΣAᵀ), d_v σ²): the error constants' arguments."""
        a = self._vector("score", score)
        shift = self.key_covariance @ a
        beta = self.value_map @ shift
        spread = float(np.einsum("ij,jk,ik->", self.value_map, self.key_covariance, self.value_map))
        return float(a @ shift), float(beta @ beta), spread, self.d_v * self.noise_sd**2

    def shift_direction(self, score: Any) -> np.ndarray:
        """β = AΣa: the direction of the O(1/L) bias of attention."""
        return self.value_map @ (self.key_covariance @ self._vector("score", score))

    def sample(self, length: int, replicates: int, rng: Any, backend: Backend | str | None = None) -> tuple[Any, Any]:
        """(keys (R, L, d), values (R, L, d_v)) for R i.i.d. sequences of L tokens."""
        be = get_backend(backend)
        L, R = integer("length", length, 1), integer("replicates", replicates, 1)
        chol = be.asarray(np.tril(self._factor[0]))
        z = be.asarray(rng.standard_normal(size=(R, L, self.d)))
        keys = be.asarray(self.key_mean) + z @ chol.T
        noise = be.asarray(rng.standard_normal(size=(R, L, self.d_v)))
        values = keys @ be.asarray(self.value_map).T + be.asarray(self.value_offset) + self.noise_sd * noise
        return keys, values


@dataclass(frozen=True)
class SineValueModel:
    """1-D keys k ~ N(0, s²), values v = sin(ωk) + σ_v ξ: E[v | k = q] = sin(ωq) (note P6)."""

    key_sd: float
    frequency: float
    noise_sd: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "key_sd", real("key_sd", self.key_sd, low=0.0, open_low=True))
        object.__setattr__(self, "frequency", real("frequency", self.frequency, low=0.0, open_low=True))
        object.__setattr__(self, "noise_sd", real("noise_sd", self.noise_sd, low=0.0))

    def conditional_mean(self, query: float) -> float:
        return math.sin(self.frequency * real("query", query))

    def sample(self, length: int, replicates: int, rng: Any, backend: Backend | str | None = None) -> tuple[Any, Any]:
        """(keys (R, L, 1), values (R, L, 1))."""
        be = get_backend(backend)
        L, R = integer("length", length, 1), integer("replicates", replicates, 1)
        keys = self.key_sd * be.asarray(rng.standard_normal(size=(R, L, 1)))
        values = be.xp.sin(self.frequency * keys) + self.noise_sd * be.asarray(rng.standard_normal(size=(R, L, 1)))
        return keys, values


@dataclass(frozen=True)
class ConjugateGaussianModel:
    """M1: z ~ N(0, τ²I_d), x_ℓ | z ~ N(z, σ²I_d) i.i.d."""

    prior_sd: float
    token_sd: float
    d: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "prior_sd", real("prior_sd", self.prior_sd, low=0.0, open_low=True))
        object.__setattr__(self, "token_sd", real("token_sd", self.token_sd, low=0.0, open_low=True))
        object.__setattr__(self, "d", integer("d", self.d, 1))

    def sample(self, length: int, replicates: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(z (R, d), tokens (R, L, d))."""
        L, R = integer("length", length, 0), integer("replicates", replicates, 1)
        z = self.prior_sd * rng.standard_normal((R, self.d))
        return z, z[:, None, :] + self.token_sd * rng.standard_normal((R, L, self.d))

    def posterior_by_conditioning(self, tokens: Any) -> tuple[np.ndarray, np.ndarray]:
        """(E[z | X], sd[z | X]) of one sequence (L, d) by Gaussian conditioning of the joint
        (z, x_1..x_L), coordinate by coordinate: Cov(x) = τ²11ᵀ + σ²I solved by Cholesky."""
        X = shaped_array("tokens", tokens, (None, self.d))
        L = X.shape[0]
        tau2, sig2 = self.prior_sd**2, self.token_sd**2
        covariance = tau2 * np.ones((L, L)) + sig2 * np.eye(L)
        cross = tau2 * np.ones(L)
        factor = cho_factor(covariance, lower=True)
        mean = cross @ cho_solve(factor, X) if L else np.zeros(self.d)
        variance = tau2 - (cross @ cho_solve(factor, cross) if L else 0.0)
        return mean, np.full(self.d, math.sqrt(variance))


@dataclass(frozen=True, eq=False)
class FiniteLatentModel:
    """M2: z ∈ {1..M} with prior π, x_ℓ | z = m ~ N(μ_m, I_d) i.i.d."""

    prior: Any
    means: Any

    def __post_init__(self) -> None:
        prior = shaped_array("prior", self.prior, (None,))
        if prior.shape[0] < 2 or np.any(prior <= 0) or abs(prior.sum() - 1) > 1e-12:
            raise ValueError(f"prior must be a probability vector over M ≥ 2 latents with positive entries, got {prior}")
        means = shaped_array("means", self.means, (prior.shape[0], None))
        object.__setattr__(self, "prior", prior)
        object.__setattr__(self, "means", means)

    @property
    def latents(self) -> int:
        return self.prior.shape[0]

    @property
    def d(self) -> int:
        return self.means.shape[1]

    def sample(self, length: int, replicates: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(z (R,) in 0..M−1, tokens (R, L, d))."""
        L, R = integer("length", length, 1), integer("replicates", replicates, 1)
        z = rng.choice(self.latents, size=R, p=self.prior)
        return z, self.means[z][:, None, :] + rng.standard_normal((R, L, self.d))

    def posterior_by_bayes(self, tokens: Any) -> np.ndarray:
        """P(z = m | X) for tokens (..., L, d): log π_m + Σ_ℓ log N(x_ℓ; μ_m, I), normalised by
        log-sum-exp over m (Bayes' rule token by token, no attention form used)."""
        X = np.asarray(tokens, dtype=np.float64)
        if X.ndim < 2 or X.shape[-1] != self.d:
            raise ValueError(f"tokens must have shape (..., L, {self.d}), got {X.shape}")
        diff = X[..., None, :, :] - self.means[:, None, :]  # (..., M, L, d)
        log_lik = -0.5 * (diff**2).sum(axis=(-1, -2)) - 0.5 * X.shape[-2] * self.d * math.log(2 * math.pi)
        log_joint = np.log(self.prior) + log_lik
        return np.exp(log_joint - logsumexp(log_joint, axis=-1, keepdims=True))


@dataclass(frozen=True)
class LinearGaussianLatentModel:
    """M3: latent A ∈ R^{d_v×d} with rows i.i.d. N(0, τ²I); k_ℓ ~ N(0, I_d); v_ℓ = Ak_ℓ + σξ_ℓ."""

    prior_sd: float
    noise_sd: float
    d: int
    d_v: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "prior_sd", real("prior_sd", self.prior_sd, low=0.0, open_low=True))
        object.__setattr__(self, "noise_sd", real("noise_sd", self.noise_sd, low=0.0, open_low=True))
        object.__setattr__(self, "d", integer("d", self.d, 1))
        object.__setattr__(self, "d_v", integer("d_v", self.d_v, 1))

    @property
    def ridge(self) -> float:
        """λ = σ²/τ²."""
        return self.noise_sd**2 / self.prior_sd**2

    def sample(self, length: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(A (d_v, d), keys (L, d), values (L, d_v)) of one sequence."""
        L = integer("length", length, 1)
        A = self.prior_sd * rng.standard_normal((self.d_v, self.d))
        keys = rng.standard_normal((L, self.d))
        return A, keys, keys @ A.T + self.noise_sd * rng.standard_normal((L, self.d_v))

    def posterior_mean(self, keys: Any, values: Any) -> np.ndarray:
        """E[A | K, V] from the posterior precision I/τ² + KᵀK/σ² (Gaussian conjugacy, Cholesky)."""
        K = shaped_array("keys", keys, (None, self.d))
        V = shaped_array("values", values, (K.shape[0], self.d_v))
        precision = np.eye(self.d) / self.prior_sd**2 + K.T @ K / self.noise_sd**2
        return cho_solve(cho_factor(precision, lower=True), K.T @ V / self.noise_sd**2).T
