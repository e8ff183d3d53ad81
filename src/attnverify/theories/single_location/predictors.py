"""Predictors: the erf-attention predictor, the Bayes predictor and linear predictors, with their Monte Carlo risks.

Part of `attnverify.theories.single_location` (see its docstring for the spec and sources).
"""

from __future__ import annotations

from typing import Any

import math

from ...base import arguments
from ...base.arguments import generator as _generator, integer as _integer
from ...base.backend import Backend
from ...numerics.statistics import Estimate

from ._common import SQRT_PI, batched_mean, finite_result, checked_lam, unit_rows
from .task import RegressionTask, draw_full, draw_reduced, reduction_of, checked_task, task_vectors


def erf_prime_array(x: Any, xp: Any) -> Any:
    """erf′(x) = (2/√π) e^{−x²}, elementwise on an array of ``xp``."""
    return (2.0 / SQRT_PI) * xp.exp(-(x**2))


def _predict(X: Any, k: Any, v: Any, lam: float, be: Backend) -> Any:
    return be.xp.sum(be.special.erf(lam * (X @ k)) * (X @ v), axis=-1)


def predict(X: Any, k: Any, v: Any, lam: float, *, backend: Any = None) -> Any:
    """The simplified attention predictor T_λ^{k,v}(X) = Σ_ℓ erf(λ⟨X_ℓ, k⟩)⟨X_ℓ, v⟩ (spec §2.1).

    X of shape (..., L, d); k, v unit vectors of shape (d,); returns shape (...). Equals
    erf(λ𝕏k)ᵀ𝕏v, the authors' ``dynamics.T``.
    """
    be = arguments.backend(backend)
    lam = checked_lam(lam)
    X = arguments.array("X", X, be, min_ndim=2)
    k = unit_rows("k", k, be, X.shape[-1], batched=False)
    v = unit_rows("v", v, be, X.shape[-1], batched=False)
    return finite_result(lambda: _predict(X, k, v, lam, be), be, "X")


def _risk_arguments(task, k, v, lam, n, rng, backend) -> tuple:
    """The checked arguments of a Monte Carlo risk: (backend, task, λ, n ≥ 2, unit k, unit v, generator)."""
    be = arguments.backend(backend)
    task = checked_task(task)
    return (be, task, checked_lam(lam), _integer("n", n, 2), unit_rows("k", k, be, task.d, batched=False),
            unit_rows("v", v, be, task.d, batched=False), _generator(rng, be))


def risk_monte_carlo(
    task: RegressionTask, k: Any, v: Any, lam: float, n: int, rng: Any, *, backend: Any = None, batch: int | None = None
) -> Estimate:
    """Monte Carlo ℛ(T_λ^{k,v}) = E[(Y − T_λ^{k,v}(X))²], ε² included, in the exact reduction (spec §3.1, §6).

    Draws only the r ≤ 4 coordinates of each token on span{k*, v*, k, v}; processed in batches of
    ``batch`` samples (default: about 2²² numbers per batch) so memory stays bounded for any n.
    """
    be, task, lam, n, k, v, rng = _risk_arguments(task, k, v, lam, n, rng, backend)
    reduction = reduction_of(task, [k, v], be)
    Q = reduction.basis
    k_q, v_q = Q.T @ k, Q.T @ v

    def squared_errors(size):
        Z, _, _, y = draw_reduced(task, reduction, size, rng, be, orthogonal=False)
        return (y - _predict(Z, k_q, v_q, lam, be)) ** 2

    return batched_mean(squared_errors, n, batch, task.L * (reduction.r + 2), be.xp)


def risk_monte_carlo_full(
    task: RegressionTask, k: Any, v: Any, lam: float, n: int, rng: Any, *, backend: Any = None, batch: int | None = None
) -> Estimate:
    """Monte Carlo ℛ(T_λ^{k,v}) from full d-dimensional tokens (spec §1, §2.1); ε² included.

    The unreduced reference for `risk_monte_carlo`: cost O(n·L·d).
    """
    be, task, lam, n, k, v, rng = _risk_arguments(task, k, v, lam, n, rng, backend)

    def squared_errors(size):
        X, y, _ = draw_full(task, size, rng, be)
        return (y - _predict(X, k, v, lam, be)) ** 2

    return batched_mean(squared_errors, n, batch, task.L * (task.d + 2), be.xp)


# --------------------------------------------------------------------------- Bayes predictor


def _posterior(sq_norm: Any, along_k_star: Any, task: RegressionTask, xp: Any) -> Any:
    """softmax_ℓ s_ℓ with s = (½ − 1/(2γ²))‖x‖² + √(d/2)⟨x, k*⟩/γ², as exp(s − logsumexp(s))."""
    g2 = task.gamma**2
    s = (0.5 - 0.5 / g2) * sq_norm + (math.sqrt(task.d / 2) / g2) * along_k_star
    top = xp.max(s, axis=-1, keepdims=True)
    log_normaliser = top + xp.log(xp.sum(xp.exp(s - top), axis=-1, keepdims=True))
    return xp.exp(s - log_normaliser)


def _check_tokens(X: Any, task: RegressionTask, be: Backend) -> Any:
    X = arguments.array("X", X, be, min_ndim=2)
    if X.shape[-2:] != (task.L, task.d):
        raise ValueError(f"X must have shape (..., L, d) = (..., {task.L}, {task.d}), got {tuple(X.shape)}")
    return X


def bayes_posterior(X: Any, task: RegressionTask, *, backend: Any = None) -> Any:
    """P(J0 = ℓ | X) = softmax_ℓ s(X_ℓ), s(x) = (½ − 1/(2γ²))‖x‖² + √(d/2)⟨x, k*⟩/γ² (spec §2.5).

    s is the log-likelihood ratio log N(x; √(d/2)k*, γ²I)/N(x; 0, I) up to a constant; the softmax is
    taken as exp(s − logsumexp(s)), finite for any finite X. X (..., L, d) → (..., L).
    """
    be = arguments.backend(backend)
    X = _check_tokens(X, checked_task(task), be)
    k_star, _ = task_vectors(task, be)
    return finite_result(lambda: _posterior(be.xp.sum(X * X, axis=-1), X @ k_star, task, be.xp), be, "X")


def bayes_predict(X: Any, task: RegressionTask, *, backend: Any = None) -> Any:
    """Bayes predictor f(X) = E[Y | X] = Σ_ℓ P(J0 = ℓ | X)⟨X_ℓ, v*⟩ (spec §2.5). X (..., L, d) → (...)."""
    be = arguments.backend(backend)
    X = _check_tokens(X, checked_task(task), be)
    k_star, v_star = task_vectors(task, be)

    def compute() -> Any:
        p = _posterior(be.xp.sum(X * X, axis=-1), X @ k_star, task, be.xp)
        return be.xp.sum(p * (X @ v_star), axis=-1)

    return finite_result(compute, be, "X")


def bayes_risk_monte_carlo(
    task: RegressionTask,
    n: int,
    rng: Any,
    *,
    backend: Any = None,
    batch: int | None = None,
    conditional: bool = False,
) -> Estimate:
    """Monte Carlo Bayes risk ℛ_Bayes = E[(Y − f_Bayes(X))²], ε² included (spec §2.5).

    Exact reduction to span{k*, v*} (r = 2) plus the χ²_{d−2} orthogonal norms that enter s through
    ‖x‖². With ``conditional=True`` averages E[(Y − f)² | X] = ε² + Σ_ℓ p_ℓu_ℓ² − (Σ_ℓ p_ℓu_ℓ)²
    (u_ℓ = ⟨X_ℓ, v*⟩) instead of (Y − f)²: the same mean, a smaller standard error.
    """
    be = arguments.backend(backend)
    xp = be.xp
    task = checked_task(task)
    n = _integer("n", n, 2)
    rng = _generator(rng, be)
    conditional = arguments.flag("conditional", conditional)
    reduction = reduction_of(task, [], be)

    def squared_errors(size):
        Z, _, orth, y = draw_reduced(task, reduction, size, rng, be, orthogonal=True)
        p = _posterior(xp.sum(Z * Z, axis=-1) + orth, Z @ reduction.k_star, task, xp)
        u = Z @ reduction.v_star
        f = xp.sum(p * u, axis=-1)
        if conditional:
            return task.eps**2 + xp.maximum(xp.sum(p * u * u, axis=-1) - f * f, 0.0)
        return (y - f) ** 2

    return batched_mean(squared_errors, n, batch, task.L * (reduction.r + 3), xp)


# --------------------------------------------------------------------------- linear predictors


def linear_fit_least_squares(X: Any, y: Any, *, backend: Any = None) -> Any:
    """Least-squares β (L, d) minimising Σ_i (y_i − Σ_ℓ⟨β_ℓ, X_{iℓ}⟩)² (spec §2.4, Prop. 3).

    Solved by ``lstsq`` on the n×(L·d) design (SVD, no explicit inverse); needs n ≥ L·d and a design of
    full column rank.
    """
    be = arguments.backend(backend)
    X = arguments.array("X", X, be, ndim=3)
    n, L, d = (int(s) for s in X.shape)
    if n < L * d:
        raise ValueError(f"n must be ≥ L·d = {L * d} for a unique least-squares fit: X holds n = {n} "
                         f"sequences of shape (L, d) = ({L}, {d})")
    y = arguments.array("y", y, be, shape=(n,))
    design = X.reshape(n, L * d)
    beta, _, rank, _ = be.xp.linalg.lstsq(design, y, rcond=None)
    if int(rank) < L * d:
        raise ValueError(f"X gives a design matrix of rank {int(rank)} < L·d = {L * d}; the fit is not unique")
    return finite_result(lambda: beta.reshape(L, d), be, "X")


def _check_beta(beta: Any, L: int, d: int, be: Backend) -> Any:
    beta = arguments.array("beta", beta, be)
    if beta.shape != (L, d):
        raise ValueError(f"beta must have shape (L, d) = ({L}, {d}), got {tuple(beta.shape)}")
    return beta


def linear_predict(X: Any, beta: Any, *, backend: Any = None) -> Any:
    """Linear predictor f_β(X) = Σ_ℓ ⟨β_ℓ, X_ℓ⟩ (spec §2.4). X (..., L, d), β (L, d) → (...)."""
    be = arguments.backend(backend)
    X = arguments.array("X", X, be, min_ndim=2)
    beta = _check_beta(beta, X.shape[-2], X.shape[-1], be)
    return finite_result(lambda: be.xp.sum(X * beta, axis=(-2, -1)), be, "X (or beta)")


def linear_risk_monte_carlo(
    task: RegressionTask, beta: Any, n: int, rng: Any, *, backend: Any = None, batch: int | None = None
) -> Estimate:
    """Monte Carlo ℛ(f_β) = E[(Y − Σ_ℓ⟨β_ℓ, X_ℓ⟩)²], ε² included (spec §2.4).

    Exact reduction to span{k*, v*, β_1, …, β_L} (r ≤ min(d, L + 2)).
    """
    be = arguments.backend(backend)
    xp = be.xp
    task = checked_task(task)
    n = _integer("n", n, 2)
    beta = _check_beta(beta, task.L, task.d, be)
    rng = _generator(rng, be)
    reduction = reduction_of(task, [beta[l] for l in range(task.L)], be)
    beta_q = beta @ reduction.basis  # (L, r): row ℓ holds Qᵀβ_ℓ

    def squared_errors(size):
        Z, _, _, y = draw_reduced(task, reduction, size, rng, be, orthogonal=False)
        return (y - xp.sum(Z * beta_q, axis=(-2, -1))) ** 2

    return batched_mean(squared_errors, n, batch, task.L * (reduction.r + 1), xp)


def linear_oracle_coefficients(task: RegressionTask, *, backend: Any = None) -> Any:
    """Best linear predictor β*_ℓ = γ²/(γ² + L − 1)·v* for every ℓ (spec §2.4, Prop. 3), shape (L, d)."""
    be = arguments.backend(backend)
    task = checked_task(task)
    arguments.fits_in_memory("L", 8 * task.L * task.d, f"β* (L × d float64, d = {task.d})", value=task.L,
                             backend=be)
    _, v_star = task_vectors(task, be)
    g2 = task.gamma**2
    return be.xp.tile((g2 / (g2 + task.L - 1)) * v_star, (task.L, 1))
