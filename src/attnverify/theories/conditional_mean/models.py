"""Exchangeable token models with a closed-form conditional mean or latent posterior (note §2.3, §3.2).

* `GaussianKeyValueModel`: k ~ N(μ, Σ), v = Ak + b + σξ (E[v | k = q] = Aq + b).
* `SineValueModel`: 1-D k ~ N(0, s²), v = sin(ωk) + σ_v ξ (a non-linear conditional mean).
* `ConjugateGaussianModel` (M1), `FiniteLatentModel` (M2) and
  `LinearGaussianLatentModel` (M3): latent z, tokens i.i.d. given z.

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

from ...base.arguments import array, backend as backend_argument, fits_in_memory, generator, integer, nonnegative
from ...base.arguments import Checked, checked, positive
from ...base.arguments import positive_definite_factor, real
from ...base.backend import Backend
from ._stable import backend_of, finite_result

#: Gaussian conditioning by Cholesky (``posterior_by_conditioning``) keeps about 16 − log10(1 + Lτ²/σ²)
#: digits; beyond this condition number it is refused (the closed form has no such limit).
CONDITIONING_LIMIT = 1e8


def refuse_what_cannot_fit(length: int, replicates: int, per_token: int, per_replicate: int = 0,
                            backend: Backend | None = None, names: tuple[str, str] = ("length", "replicates")) -> None:
    """Refuse, before drawing, a sample of ``replicates`` sequences of ``length`` tokens that cannot fit: each token
    takes ``per_token`` float64 numbers (draws, results and temporaries) and each sequence ``per_replicate`` more.
    One sequence that cannot fit names ``names[0]`` (its length); more of them name ``names[1]`` (their count)."""
    one = 8 * (length * per_token + per_replicate)
    fits_in_memory(names[0], one, f"one sequence of {length} tokens ({per_token} float64 numbers each, with "
                   f"temporaries; {per_replicate} more per sequence)", value=length, backend=backend)
    fits_in_memory(names[1], replicates * one, f"{replicates} sequences of {length} tokens ({per_token} float64 "
                   f"numbers each, with temporaries; {per_replicate} more per sequence)", value=replicates,
                   backend=backend)


@dataclass(frozen=True, eq=False)
class GaussianKeyValueModel(Checked):
    """Keys k ~ N(μ, Σ) in R^d, values v = Ak + b + σξ in R^{d_v}, ξ ~ N(0, I) (note §3.2)."""

    key_mean: Any = checked(array, shape=(None,), read_only=True)
    key_covariance: Any
    value_map: Any
    value_offset: Any
    noise_sd: float = checked(nonnegative)

    def _check_fields(self) -> None:  # the shapes follow d = len(key_mean) and the rows of value_map
        d = self.key_mean.shape[0]
        sigma = array("key_covariance", self.key_covariance, shape=(d, d), read_only=True)
        A = array("value_map", self.value_map, shape=(None, d), read_only=True)
        b = array("value_offset", self.value_offset, shape=(A.shape[0],), read_only=True)
        object.__setattr__(self, "key_covariance", sigma)
        object.__setattr__(self, "value_map", A)
        object.__setattr__(self, "value_offset", b)
        object.__setattr__(self, "_factor", positive_definite_factor("key_covariance", sigma))

    @property
    def d(self) -> int:
        return self.key_mean.shape[0]

    @property
    def d_v(self) -> int:
        return self.value_map.shape[0]

    def _vector(self, name: str, x: Any) -> np.ndarray:
        return array(name, x, shape=(self.d,))

    def conditional_mean(self, query: Any) -> np.ndarray:
        """E[v | k = q] = Aq + b."""
        return _finite(self.value_map @ self._vector("query", query) + self.value_offset, "conditional_mean", "query")

    def desired_score(self, query: Any) -> np.ndarray:
        """a = Σ⁻¹(q − μ): the score vector whose attention limit is E[v | k = q] (Cholesky solve)."""
        return _finite(cho_solve(self._factor, self._vector("query", query) - self.key_mean), "desired_score", "query")

    def attention_limit(self, score: Any) -> np.ndarray:
        """m∞(a) = E[v e^{aᵀk}]/E[e^{aᵀk}] = A(μ + Σa) + b."""
        a = self._vector("score", score)
        return _finite(self.value_map @ (self.key_mean + self.key_covariance @ a) + self.value_offset,
                       "attention_limit", "score")

    def invariants(self, score: Any) -> tuple[float, float, float, float]:
        """(s², ‖β‖², τ², ν²) = (aᵀΣa, ‖AΣa‖², tr(AΣAᵀ), d_v σ²): the error constants' arguments."""
        a = self._vector("score", score)
        shift = self.key_covariance @ a
        beta = self.value_map @ shift
        spread = float(np.einsum("ij,jk,ik->", self.value_map, self.key_covariance, self.value_map))
        with np.errstate(over="ignore"):  # an overflow is refused by name just below
            values = np.array([a @ shift, beta @ beta, spread, self.d_v * np.float64(self.noise_sd) ** 2])
        return tuple(_finite(values, "invariants", "score and model parameters").tolist())

    def shift_direction(self, score: Any) -> np.ndarray:
        """β = AΣa: the direction of the O(1/L) bias of attention."""
        return _finite(self.value_map @ (self.key_covariance @ self._vector("score", score)), "shift_direction", "score")

    def sample(self, length: int, replicates: int, rng: Any, backend: Backend | str | None = None) -> tuple[Any, Any]:
        """(keys (R, L, d), values (R, L, d_v)) for R i.i.d. sequences of L tokens; ``rng`` a Generator
        or an integer seed."""
        be = backend_argument(backend)
        L, R = integer("length", length, 1), integer("replicates", replicates, 1)
        # per token: z, keys and a temporary (d each); noise, values and two temporaries (d_v each)
        refuse_what_cannot_fit(L, R, 3 * self.d + 4 * self.d_v, backend=be)
        rng = generator(rng, be)
        chol = be.asarray(np.tril(self._factor[0]))
        z = be.asarray(rng.standard_normal(size=(R, L, self.d)))
        keys = be.asarray(self.key_mean) + z @ chol.T
        noise = be.asarray(rng.standard_normal(size=(R, L, self.d_v)))
        values = keys @ be.asarray(self.value_map).T + be.asarray(self.value_offset) + self.noise_sd * noise
        return keys, values


@dataclass(frozen=True)
class SineValueModel(Checked):
    """1-D keys k ~ N(0, s²), values v = sin(ωk) + σ_v ξ: E[v | k = q] = sin(ωq) (note P6)."""

    key_sd: float = checked(positive)
    frequency: float = checked(positive)
    noise_sd: float = checked(nonnegative)

    @property
    def d(self) -> int:
        """Keys are one-dimensional."""
        return 1

    @property
    def d_v(self) -> int:
        return 1

    def conditional_mean(self, query: float) -> float:
        """E[v | k = q] = sin(ωq)."""
        return math.sin(_finite(self.frequency * real("query", query), "frequency·query", "query"))

    def sample(self, length: int, replicates: int, rng: Any, backend: Backend | str | None = None) -> tuple[Any, Any]:
        """(keys (R, L, 1), values (R, L, 1)); ``rng`` a Generator or an integer seed."""
        be = backend_argument(backend)
        L, R = integer("length", length, 1), integer("replicates", replicates, 1)
        refuse_what_cannot_fit(L, R, 5, backend=be)  # per token: keys, sin, noise, values and a temporary
        rng = generator(rng, be)
        keys = self.key_sd * be.asarray(rng.standard_normal(size=(R, L, 1)))
        values = be.xp.sin(self.frequency * keys) + self.noise_sd * be.asarray(rng.standard_normal(size=(R, L, 1)))
        return keys, values


@dataclass(frozen=True)
class ConjugateGaussianModel(Checked):
    """M1: z ~ N(0, τ²I_d), x_ℓ | z ~ N(z, σ²I_d) i.i.d."""

    prior_sd: float = checked(positive)
    token_sd: float = checked(positive)
    d: int = checked(integer, 1)

    def sample(self, length: int, replicates: int, rng: Any) -> tuple[np.ndarray, np.ndarray]:
        """(z (R, d), tokens (R, L, d)); ``rng`` a numpy Generator or an integer seed."""
        L, R = integer("length", length, 0), integer("replicates", replicates, 1)
        fits_in_memory("d", 8 * 4 * self.d, "one token and its latent (float64, with temporaries)", value=self.d)
        refuse_what_cannot_fit(L, R, 3 * self.d, 2 * self.d)  # per token: draw, scaled, tokens; per sequence: z
        rng = generator(rng)
        z = self.prior_sd * rng.standard_normal((R, self.d))
        return z, z[:, None, :] + self.token_sd * rng.standard_normal((R, L, self.d))

    def posterior_by_conditioning(self, tokens: Any) -> tuple[np.ndarray, np.ndarray]:
        """(E[z | X], sd[z | X]) of one sequence (L, d) by Gaussian conditioning of the joint
        (z, x_1..x_L), coordinate by coordinate, in units of σ²: with r = τ²/σ², M = Cov(x)/σ² = r11ᵀ + I
        and Cov(z, x)/σ² = r1ᵀ, E[z | X] = r1ᵀM⁻¹X and Var(z | X) = τ²(1 − r1ᵀw) with Mw = 1, solved by
        Cholesky. Row i of Mw = 1 reads r1ᵀw + w_i = 1, so 1 − r1ᵀw is read off as the mean of w,
        free of the cancellation in 1 − r1ᵀw.

        Refused (ValueError) where 1 + Lr > ``CONDITIONING_LIMIT``: the solve would lose the digits.
        """
        X = array("tokens", tokens, shape=(None, self.d), allow_empty=True)
        L = X.shape[0]
        if L == 0:
            return np.zeros(self.d), np.full(self.d, self.prior_sd)
        with np.errstate(over="ignore"):  # an infinite r is refused just below
            r = float(np.float64(self.prior_sd / self.token_sd) ** 2)
        if not 1 + L * r <= CONDITIONING_LIMIT:
            raise ValueError(f"posterior_by_conditioning needs 1 + L·(prior_sd/token_sd)² ≤ {CONDITIONING_LIMIT:g} "
                             f"for a Cholesky solve that keeps 8 digits, got {1 + L * r:.3g} (L = {L} tokens, "
                             f"prior_sd = {self.prior_sd!r}, token_sd = {self.token_sd!r}); the closed form "
                             "derivations.conditional_mean.conjugate_posterior has no such limit")
        # r11ᵀ, I, their sum and its factor: four L × L float64 matrices
        fits_in_memory("tokens", 4 * 8 * L * L, f"the L × L covariance of its L = {L} tokens and its Cholesky factor")
        factor = cho_factor(r * np.ones((L, L)) + np.eye(L), lower=True)
        cross = np.full(L, r)
        mean = _finite(cross @ cho_solve(factor, X), "posterior_by_conditioning", "tokens")
        shrink = float(np.mean(cho_solve(factor, np.ones(L))))  # = 1 − r1ᵀw = 1/(1 + Lr) ∈ (0, 1]
        return mean, np.full(self.d, self.prior_sd * math.sqrt(shrink))


@dataclass(frozen=True, eq=False)
class FiniteLatentModel(Checked):
    """M2: z ∈ {1..M} with prior π, x_ℓ | z = m ~ N(μ_m, I_d) i.i.d."""

    prior: Any = checked(array, shape=(None,), read_only=True)
    means: Any

    def _check_fields(self) -> None:
        prior = self.prior
        if prior.shape[0] < 2 or np.any(prior <= 0) or abs(prior.sum() - 1) > 1e-12:
            raise ValueError(f"prior must be a probability vector over M ≥ 2 latents with positive entries "
                             f"(summing to 1 within 1e-12), got {prior}")
        object.__setattr__(self, "means", array("means", self.means, shape=(prior.shape[0], None), read_only=True))

    @property
    def latents(self) -> int:
        return self.prior.shape[0]

    @property
    def d(self) -> int:
        return self.means.shape[1]

    def sample(self, length: int, replicates: int, rng: Any, backend: Backend | str | None = None) -> tuple[Any, Any]:
        """(z (R,) in 0..M−1, tokens (R, L, d)) on the backend; ``rng`` a Generator of the backend or an integer
        seed. (cupy's Generator has no ``choice``: there z is the inverse CDF of the prior at a uniform draw.)"""
        be = backend_argument(backend)
        L, R = integer("length", length, 1), integer("replicates", replicates, 1)
        # per token: the draws and tokens (d each); per sequence: z and its latent's mean (d)
        refuse_what_cannot_fit(L, R, 2 * self.d, self.d + 2, backend=be)
        rng = generator(rng, be)
        if be.name == "numpy":
            z = rng.choice(self.latents, size=R, p=self.prior)
        else:
            edges = be.asarray(np.cumsum(self.prior)[:-1])
            z = be.xp.searchsorted(edges, rng.random(R), side="right")
        return z, be.asarray(self.means)[z][:, None, :] + rng.standard_normal((R, L, self.d))

    def posterior_by_bayes(self, tokens: Any) -> np.ndarray:
        """P(z = m | X) for tokens (..., L, d) by Bayes' rule token by token:
        log π_m + Σ_ℓ log N(x_ℓ; μ_m, I) = log π_m + Σ_ℓ (x_ℓᵀμ_m − ‖μ_m‖²/2) + (terms free of m),
        normalised by log-sum-exp over m.

        Tokens and means are scaled by powers of two before the sums, so tokens of any finite
        magnitude (1e200) give the exact posterior (there, one-hot on the latent that explains them).
        """
        be = backend_of(tokens)
        xp = be.xp
        X = array("tokens", tokens, be, min_ndim=2, allow_empty=True)
        if X.shape[-1] != self.d:
            raise ValueError(f"tokens must have shape (..., L, {self.d}), got {tuple(X.shape)}")
        # power-of-two exponents of the tokens (per sequence) and of the means
        largest = xp.max(xp.abs(X), axis=(-2, -1)) if X.size else xp.zeros(X.shape[:-2])
        ex = xp.frexp(largest)[1][..., None]  # (..., 1)
        em = int(np.frexp(np.max(np.abs(self.means)))[1])
        mu = be.asarray(np.ldexp(self.means, -em))
        cross = xp.einsum("...ld,md->...m", xp.ldexp(X, -ex[..., None]), mu)  # Σ_ℓ x_ℓᵀμ_m / 2^(ex+em)
        norms = X.shape[-2] * (mu * mu).sum(axis=-1) / 2  # L‖μ_m‖²/2 / 2^(2em)
        top = xp.maximum(ex + em, 2 * em)
        scaled = xp.ldexp(cross, ex + em - top) - xp.ldexp(norms, 2 * em - top)
        with np.errstate(over="ignore"):  # −∞ for latents the tokens rule out: posterior 0
            log_joint = be.asarray(np.log(self.prior)) + xp.ldexp(scaled - scaled.max(axis=-1, keepdims=True), top)
        if be.name == "numpy":
            return np.exp(log_joint - logsumexp(log_joint, axis=-1, keepdims=True))
        top_joint = xp.max(log_joint, axis=-1, keepdims=True)  # scipy's logsumexp, on the device
        log_norm = top_joint + xp.log(xp.sum(xp.exp(log_joint - top_joint), axis=-1, keepdims=True))
        return xp.exp(log_joint - log_norm)


#: Bounds on noise_sd/prior_sd: the ridge λ = (noise_sd/prior_sd)² must be a normal float64.
RIDGE_RATIO_RANGE = (1e-150, 1e150)


@dataclass(frozen=True)
class LinearGaussianLatentModel(Checked):
    """M3: latent A ∈ R^{d_v×d} with rows i.i.d. N(0, τ²I); k_ℓ ~ N(0, I_d); v_ℓ = Ak_ℓ + σξ_ℓ."""

    prior_sd: float = checked(positive)
    noise_sd: float = checked(positive)
    d: int = checked(integer, 1)
    d_v: int = checked(integer, 1)

    def _check_fields(self) -> None:
        low, high = RIDGE_RATIO_RANGE
        if not low <= self.noise_sd / self.prior_sd <= high:
            raise ValueError(f"noise_sd/prior_sd must lie in [{low:g}, {high:g}] so that the ridge (noise_sd/prior_sd)² "
                             f"is a normal float64, got noise_sd = {self.noise_sd!r}, prior_sd = {self.prior_sd!r}")

    @property
    def ridge(self) -> float:
        """λ = σ²/τ²."""
        return (self.noise_sd / self.prior_sd) ** 2

    def sample(self, length: int, rng: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(A (d_v, d), keys (L, d), values (L, d_v)) of one sequence; ``rng`` a numpy Generator or a seed."""
        L = integer("length", length, 1)
        latent = 2 * self.d_v * self.d  # A and its unscaled draw
        fits_in_memory("d", 8 * (latent + self.d + 3 * self.d_v), f"the latent A (d_v × d float64, d_v = {self.d_v}) "
                       "and one token", value=self.d)
        # per token: the key (d), the noise, its scaled copy and the value (d_v each)
        fits_in_memory("length", 8 * (latent + L * (self.d + 3 * self.d_v)), f"{L} tokens (keys and values, with "
                       f"temporaries; d = {self.d}, d_v = {self.d_v}) and A", value=L)
        rng = generator(rng)
        A = self.prior_sd * rng.standard_normal((self.d_v, self.d))
        keys = rng.standard_normal((L, self.d))
        return A, keys, keys @ A.T + self.noise_sd * rng.standard_normal((L, self.d_v))

    def posterior_mean(self, keys: Any, values: Any) -> np.ndarray:
        """E[A | K, V] = ((KᵀK + λI)⁻¹KᵀV)ᵀ: the posterior precision I/τ² + KᵀK/σ² times σ²
        (Gaussian conjugacy), solved by Cholesky."""
        K = array("keys", keys, shape=(None, self.d))
        V = array("values", values, shape=(K.shape[0], self.d_v))
        # KᵀK, λI, the precision and its factor: four d × d float64 matrices
        fits_in_memory("d", 4 * 8 * self.d * self.d, "the d × d posterior precision and its Cholesky factor",
                       value=self.d)
        precision = _finite(K.T @ K + self.ridge * np.eye(self.d), "the posterior precision KᵀK + λI", "keys")
        try:
            factor = cho_factor(precision, lower=True)
        except np.linalg.LinAlgError:
            raise ValueError(f"the ridge (noise_sd/prior_sd)² = {self.ridge:.3g} is too small for these keys: "
                             f"KᵀK + λI is not numerically positive definite (λ must be at least about "
                             f"1e-15·‖K‖_F² = {1e-15 * float(np.sum(K * K)):.3g})") from None
        return _finite(cho_solve(factor, K.T @ V).T, "posterior_mean", "keys and values")


def _finite(value: Any, what: str, inputs: str) -> Any:
    return finite_result(np, value, what, inputs)
