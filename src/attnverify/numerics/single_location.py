"""Single-location regression (Marion, Berthier, Biau, Boyer, ICLR 2025): data, predictors, risks, training.

Model (spec ``single_location.md`` §1): J0 ~ Uniform{1..L}; X_{J0} ~ N(√(d/2)·k*, γ²I_d); X_ℓ ~ N(0, I_d)
for ℓ ≠ J0; Y = ⟨X_{J0}, v*⟩ + ε·ξ with ξ ~ N(0, 1); k*, v* orthonormal. Names as in the paper:
``k_star`` (k*), ``v_star`` (v*), ``gamma`` (γ), ``eps`` (ε), ``lam`` (λ, inverse temperature of the erf),
``d`` (token dimension), ``L`` (sequence length).

Every risk here is the full mean squared error E[(Y − f(X))²], ε² included (the authors' code logs the
excess ℛ − ε²; subtract it yourself). All arrays are float64 on the chosen backend (numpy or cupy);
randomness enters only through an explicit seed or Generator.

Exact dimension reduction (spec §6): a predictor that reads X only through ⟨X_ℓ, u⟩ for u in a set U
sees the tokens only through their coordinates on an orthonormal basis Q (d×r) of span{k*, v*, U}.
Those coordinates are N(0, I_r) for the noise tokens and N(√(d/2)·Qᵀk*, γ²I_r) for the informative one,
and the part of each token orthogonal to the span has squared norm χ²_{d−r} (noise) or γ²·χ²_{d−r}
(informative), independent of the coordinates. Monte Carlo risks use this, so their cost does not grow
with d.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..derivations import single_location as theory
from ..derivations.single_location import _overlaps as _unchecked_overlaps  # for descent loops, inputs checked
from . import arguments
from .backend import Backend, to_numpy
from .arguments import generator as _generator, integer as _integer
from .statistics import Estimate, RunningMoments

__all__ = [
    "Task",
    "make_task",
    "sample",
    "ReducedSample",
    "sample_reduced",
    "predict",
    "risk_monte_carlo",
    "risk_monte_carlo_full",
    "bayes_posterior",
    "bayes_predict",
    "bayes_risk_monte_carlo",
    "linear_fit_least_squares",
    "linear_predict",
    "linear_risk_monte_carlo",
    "linear_oracle_coefficients",
    "overlaps",
    "overlap_gradient_to_vectors",
    "reduce_to_four_dimensions",
    "lambda_schedule",
    "Trajectory",
    "projected_gradient_descent",
    "initialize_on_sphere",
    "initialize_on_manifold",
    "empirical_risk",
    "empirical_risk_gradient",
    "stochastic_gradient_descent",
]

UNIT_TOLERANCE = theory.UNIT_TOLERANCE
"""How far ‖k‖ may be from 1 (and ⟨k*, v*⟩ from 0) before an input is rejected as off the sphere."""

_RANK_TOLERANCE = 1e-13
"""A Gram–Schmidt residual below this fraction of the vector's norm counts as inside the span."""

_NUMBERS_PER_BATCH = 2**22
"""Default Monte Carlo batch: about this many float64 numbers (32 MiB) per drawn array."""

_SQRT_PI = math.sqrt(math.pi)


# --------------------------------------------------------------------------- argument checks


def _backend(backend: Any) -> Backend:
    return arguments.backend(backend)


def _task(task: Any) -> "Task":
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task (see make_task), got {task!r:.80}")
    return task


def _lam(lam: Any, name: str = "lam") -> float:
    return arguments.positive(name, lam)


def _finite_result(compute: Callable[[], Any], be: Backend, name: str) -> Any:
    """``compute()`` when finite; else a ValueError naming the input whose size overflowed float64
    (numpy's overflow warnings are silenced: the overflow is reported here, by name)."""
    quiet = np.errstate(over="ignore", invalid="ignore") if be.name == "numpy" else contextlib.nullcontext()
    with quiet:
        value = compute()
    for part in value if isinstance(value, tuple) else (value,):
        if not bool(be.xp.all(be.xp.isfinite(part))):
            raise ValueError(f"{name} is too large in magnitude: the result overflows float64 (got infinity or NaN)")
    return value


def _unit_rows(name: str, x: Any, be: Backend, dim: int | None = None, *, batched: bool) -> Any:
    """``x`` as float64 of shape (dim,) (or (runs, dim) when ``batched``), each row of unit norm."""
    arr = arguments.array(name, x, be, min_ndim=1)
    if batched and arr.ndim == 1:
        arr = arr[None, :]
    want = 2 if batched else 1
    if arr.ndim != want or (dim is not None and arr.shape[-1] != dim) or arr.shape[-1] < 1:
        expected = ("(runs, " if batched else "(") + (f"{dim})" if dim is not None else "dim)")
        raise ValueError(f"{name} must have shape {expected}, got {tuple(arr.shape)}")
    norms = to_numpy(be.xp.linalg.norm(arr, axis=-1))
    worst = float(np.max(np.abs(norms - 1.0)))
    if worst > UNIT_TOLERANCE:
        raise ValueError(
            f"{name} must have unit norm (|‖{name}‖ − 1| ≤ {UNIT_TOLERANCE:g}), got a norm of "
            f"{float(norms.ravel()[np.argmax(np.abs(norms.ravel() - 1.0))])!r}"
        )
    return arr


def _unit_pair(
    name_a: str, a: Any, name_b: str, b: Any, be: Backend, dim: int | None = None, *, batched: bool
) -> tuple[Any, Any]:
    """Two unit-row arrays checked each on its own, then against each other (same shape)."""
    a = _unit_rows(name_a, a, be, dim, batched=batched)
    b = _unit_rows(name_b, b, be, dim, batched=batched)
    if a.shape != b.shape:
        raise ValueError(f"{name_a} and {name_b} must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    return a, b


def _schedule(lam_schedule: Any) -> Callable[[int], float]:
    if callable(lam_schedule):
        return lam_schedule
    return _LambdaSchedule(_lam(lam_schedule, "lam_schedule"), False)


def _lam_at(schedule: Callable[[int], float], t: int) -> float:
    return _lam(schedule(t), f"lam_schedule({t})")


def _progress(progress: Any) -> Callable[[int, int], Any] | None:
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be None or a callable (t, steps), got {progress!r:.80}")
    return progress


# --------------------------------------------------------------------------- random draws


def _normal(rng: Any, shape: tuple[int, ...], be: Backend) -> Any:
    return be.asarray(rng.standard_normal(size=shape))


def _integers(rng: Any, high: int, n: int, be: Backend) -> Any:
    return be.asarray(rng.integers(0, high, size=n), dtype=be.xp.int64)


def _chisquare(rng: Any, df: int, shape: tuple[int, ...], be: Backend) -> Any:
    if df == 0:  # the span already fills R^d: nothing is orthogonal to it
        return be.xp.zeros(shape, dtype=be.xp.float64)
    return be.asarray(rng.chisquare(df, size=shape))


def _batch_sizes(n: int, batch: int | None, numbers_per_sample: int) -> list[int]:
    if batch is None:
        batch = max(256, _NUMBERS_PER_BATCH // max(1, numbers_per_sample))
    else:
        batch = _integer("batch", batch, 1)
    full, rest = divmod(n, batch)
    return [batch] * full + ([rest] if rest else [])


_Moments = RunningMoments


# --------------------------------------------------------------------------- the task


@dataclass(frozen=True, eq=False)
class Task:
    """One single-location regression problem (Marion et al. 2025, §1 of the spec).

    ``d`` token dimension, ``L`` sequence length, ``gamma`` (γ) the informative token's spread,
    ``eps`` (ε) the label noise, ``k_star``/``v_star`` (k*, v*) orthonormal vectors of shape (d,).
    Compared by identity (it holds arrays).
    """

    d: int
    L: int
    gamma: float
    eps: float
    k_star: Any
    v_star: Any

    def __post_init__(self) -> None:
        d = _integer("d", self.d, 2, theory.COUNT_MAX)
        object.__setattr__(self, "d", d)
        object.__setattr__(self, "L", _integer("L", self.L, 1, theory.COUNT_MAX))
        object.__setattr__(self, "gamma", arguments.real("gamma", self.gamma, low=theory.GAMMA_RANGE[0],
                                                          high=theory.GAMMA_RANGE[1]))
        object.__setattr__(self, "eps", arguments.nonnegative("eps", self.eps, high=theory.EPS_MAX))
        host = lambda x: to_numpy(x) if getattr(x, "dtype", None) is not None else x  # noqa: E731
        k_star = arguments.array("k_star", host(self.k_star), shape=(d,))
        v_star = arguments.array("v_star", host(self.v_star), shape=(d,))
        for name, vector in (("k_star", k_star), ("v_star", v_star)):
            norm = float(np.linalg.norm(vector))
            if abs(norm - 1.0) > UNIT_TOLERANCE:
                raise ValueError(f"{name} must have unit norm (within {UNIT_TOLERANCE:g}), got {norm!r}")
        inner = float(k_star @ v_star)
        if abs(inner) > UNIT_TOLERANCE:
            raise ValueError(
                f"k_star and v_star must be orthogonal (within {UNIT_TOLERANCE:g}), got ⟨k*, v*⟩ = {inner!r}"
            )


def make_task(
    d: int, L: int, *, gamma: float = math.sqrt(0.5), eps: float = 0.1, seed: Any, backend: Any = None
) -> Task:
    """A task with random orthonormal k*, v* drawn as in the authors' ``dynamics.init_star``.

    k* = g/‖g‖ and v* = (h − ⟨h, k*⟩k*)/‖·‖ with g, h ~ N(0, I_d) (spec §1, [CODE]); γ = √0.5, ε = 0.1
    are the paper's experimental values.
    """
    be = _backend(backend)
    d = _integer("d", d, 2, theory.COUNT_MAX)
    L = _integer("L", L, 1, theory.COUNT_MAX)
    rng = _generator(seed, be, "seed")
    k_star = _normal(rng, (d,), be)
    k_star = k_star / be.xp.linalg.norm(k_star)
    v_star = _normal(rng, (d,), be)
    v_star = v_star - (v_star @ k_star) * k_star
    v_star = v_star / be.xp.linalg.norm(v_star)
    return Task(d, L, gamma, eps, k_star, v_star)


def _task_vectors(task: Task, be: Backend) -> tuple[Any, Any]:
    return be.asarray(task.k_star), be.asarray(task.v_star)


def _draw_full(task: Task, n: int, rng: Any, be: Backend) -> tuple[Any, Any, Any]:
    xp = be.xp
    k_star, v_star = _task_vectors(task, be)
    X = _normal(rng, (n, task.L, task.d), be)
    J0 = _integers(rng, task.L, n, be)
    rows = xp.arange(n)
    X[rows, J0] = math.sqrt(task.d / 2) * k_star + task.gamma * X[rows, J0]
    y = X[rows, J0] @ v_star + task.eps * _normal(rng, (n,), be)
    return X, y, J0


def sample(task: Task, n: int, rng: Any, *, backend: Any = None) -> tuple[Any, Any, Any]:
    """n draws (X, y, J0) of the single-location model, X of shape (n, L, d) (spec §1).

    J0 ~ U{0..L−1}; X_{J0} = √(d/2)·k* + γ·g, the other tokens g ~ N(0, I_d); y = ⟨X_{J0}, v*⟩ + ε·ξ.
    """
    be = _backend(backend)
    task = _task(task)
    n = _integer("n", n, 1)
    return _draw_full(task, n, _generator(rng, be), be)


# --------------------------------------------------------------------------- exact reduction


def _orthonormal_basis(vectors: Sequence[Any], xp: Any) -> Any:
    """Orthonormal columns Q (d×r) spanning ``vectors``: Gram–Schmidt, each vector orthogonalised twice.

    Two passes keep Q orthonormal to round-off even for nearly dependent vectors; a vector whose
    residual is below ``_RANK_TOLERANCE`` of its norm is taken as inside the span (rank deficiency,
    e.g. k = k*).
    """
    columns: list[Any] = []
    for u in vectors:
        scale = float(xp.linalg.norm(u))
        if scale == 0.0:
            continue
        w = u
        for _ in range(2):
            for q in columns:
                w = w - (q @ w) * q
        size = float(xp.linalg.norm(w))
        if size > _RANK_TOLERANCE * scale:
            columns.append(w / size)
    return xp.stack(columns, axis=1)


@dataclass(frozen=True, eq=False)
class _Reduction:
    basis: Any  # Q, (d, r)
    k_star: Any  # Qᵀk*, (r,)
    v_star: Any  # Qᵀv*, (r,)

    @property
    def r(self) -> int:
        return int(self.basis.shape[1])


def _reduction(task: Task, extra: Sequence[Any], be: Backend) -> _Reduction:
    k_star, v_star = _task_vectors(task, be)
    Q = _orthonormal_basis([k_star, v_star, *extra], be.xp)
    return _Reduction(Q, Q.T @ k_star, Q.T @ v_star)


def _draw_reduced(
    task: Task, reduction: _Reduction, n: int, rng: Any, be: Backend, *, orthogonal: bool
) -> tuple[Any, Any, Any, Any]:
    """Coordinates Z (n, L, r) on Q, J0, orthogonal squared norms (n, L) or None, labels y."""
    xp = be.xp
    r = reduction.r
    Z = _normal(rng, (n, task.L, r), be)
    J0 = _integers(rng, task.L, n, be)
    rows = xp.arange(n)
    Z[rows, J0] = math.sqrt(task.d / 2) * reduction.k_star + task.gamma * Z[rows, J0]
    y = Z[rows, J0] @ reduction.v_star + task.eps * _normal(rng, (n,), be)
    orth = None
    if orthogonal:
        orth = _chisquare(rng, task.d - r, (n, task.L), be)
        orth[rows, J0] = task.gamma**2 * orth[rows, J0]
    return Z, J0, orth, y


@dataclass(frozen=True, eq=False)
class ReducedSample:
    """Tokens written on an orthonormal basis Q of span{k*, v*, k, v} (spec §6, last bullet).

    ``basis`` Q (d, r); ``Z`` (n, L, r) = coordinates QᵀX_ℓ; ``orthogonal_sq_norm`` (n, L) =
    ‖(I − QQᵀ)X_ℓ‖²; ``y`` (n,); ``J0`` (n,); ``k_star``, ``v_star``, ``k``, ``v`` the (r,) coordinates
    of those vectors on Q (``k``/``v`` None when not given). ⟨X_ℓ, u⟩ = ⟨Z_ℓ, Qᵀu⟩ for u in the span and
    ‖X_ℓ‖² = ‖Z_ℓ‖² + orthogonal_sq_norm.
    """

    basis: Any
    Z: Any
    orthogonal_sq_norm: Any
    y: Any
    J0: Any
    k_star: Any
    v_star: Any
    k: Any
    v: Any


def sample_reduced(
    task: Task, k: Any, v: Any, n: int, rng: Any, *, backend: Any = None
) -> ReducedSample:
    """n draws of the model in the exact reduction to span{k*, v*, k, v} (spec §6).

    Noise tokens: Z_ℓ ~ N(0, I_r), ‖X_ℓ^⊥‖² ~ χ²_{d−r}; informative token: Z_{J0} ~ N(√(d/2)Qᵀk*, γ²I_r),
    ‖X_{J0}^⊥‖² ~ γ²χ²_{d−r}; y = ⟨Z_{J0}, Qᵀv*⟩ + εξ. ``k`` and ``v`` (unit vectors) may be None.
    Cost O(n·L·r) per draw plus O(d) once: it does not grow with d.
    """
    be = _backend(backend)
    task = _task(task)
    n = _integer("n", n, 1)
    extra = {}
    for name, u in (("k", k), ("v", v)):
        if u is not None:
            extra[name] = _unit_rows(name, u, be, task.d, batched=False)
    reduction = _reduction(task, list(extra.values()), be)
    Z, J0, orth, y = _draw_reduced(task, reduction, n, _generator(rng, be), be, orthogonal=True)
    Q = reduction.basis
    return ReducedSample(
        Q,
        Z,
        orth,
        y,
        J0,
        reduction.k_star,
        reduction.v_star,
        Q.T @ extra["k"] if "k" in extra else None,
        Q.T @ extra["v"] if "v" in extra else None,
    )


# --------------------------------------------------------------------------- the erf predictor


def _erf_prime(x: Any, xp: Any) -> Any:
    return (2.0 / _SQRT_PI) * xp.exp(-(x**2))


def _predict(X: Any, k: Any, v: Any, lam: float, be: Backend) -> Any:
    return be.xp.sum(be.special.erf(lam * (X @ k)) * (X @ v), axis=-1)


def predict(X: Any, k: Any, v: Any, lam: float, *, backend: Any = None) -> Any:
    """The simplified attention predictor T_λ^{k,v}(X) = Σ_ℓ erf(λ⟨X_ℓ, k⟩)⟨X_ℓ, v⟩ (spec §2.1).

    X of shape (..., L, d); k, v unit vectors of shape (d,); returns shape (...). Equals
    erf(λ𝕏k)ᵀ𝕏v, the authors' ``dynamics.T``.
    """
    be = _backend(backend)
    lam = _lam(lam)
    X = arguments.array("X", X, be, min_ndim=2)
    k = _unit_rows("k", k, be, X.shape[-1], batched=False)
    v = _unit_rows("v", v, be, X.shape[-1], batched=False)
    return _finite_result(lambda: _predict(X, k, v, lam, be), be, "X")


def risk_monte_carlo(
    task: Task, k: Any, v: Any, lam: float, n: int, rng: Any, *, backend: Any = None, batch: int | None = None
) -> Estimate:
    """Monte Carlo ℛ(T_λ^{k,v}) = E[(Y − T_λ^{k,v}(X))²], ε² included, in the exact reduction (spec §3.1, §6).

    Draws only the r ≤ 4 coordinates of each token on span{k*, v*, k, v}; processed in batches of
    ``batch`` samples (default: about 2²² numbers per batch) so memory stays bounded for any n.
    """
    be = _backend(backend)
    xp = be.xp
    task = _task(task)
    lam = _lam(lam)
    n = _integer("n", n, 2)
    k = _unit_rows("k", k, be, task.d, batched=False)
    v = _unit_rows("v", v, be, task.d, batched=False)
    rng = _generator(rng, be)
    reduction = _reduction(task, [k, v], be)
    Q = reduction.basis
    k_q, v_q = Q.T @ k, Q.T @ v
    moments = _Moments()
    for size in _batch_sizes(n, batch, task.L * (reduction.r + 2)):
        Z, _, _, y = _draw_reduced(task, reduction, size, rng, be, orthogonal=False)
        moments.add((y - _predict(Z, k_q, v_q, lam, be)) ** 2, xp)
    return moments.estimate()


def risk_monte_carlo_full(
    task: Task, k: Any, v: Any, lam: float, n: int, rng: Any, *, backend: Any = None, batch: int | None = None
) -> Estimate:
    """Monte Carlo ℛ(T_λ^{k,v}) from full d-dimensional tokens (spec §1, §2.1); ε² included.

    The unreduced reference for :func:`risk_monte_carlo`: cost O(n·L·d).
    """
    be = _backend(backend)
    xp = be.xp
    task = _task(task)
    lam = _lam(lam)
    n = _integer("n", n, 2)
    k = _unit_rows("k", k, be, task.d, batched=False)
    v = _unit_rows("v", v, be, task.d, batched=False)
    rng = _generator(rng, be)
    moments = _Moments()
    for size in _batch_sizes(n, batch, task.L * (task.d + 2)):
        X, y, _ = _draw_full(task, size, rng, be)
        moments.add((y - _predict(X, k, v, lam, be)) ** 2, xp)
    return moments.estimate()


# --------------------------------------------------------------------------- Bayes predictor


def _posterior(sq_norm: Any, along_k_star: Any, task: Task, xp: Any) -> Any:
    """softmax_ℓ s_ℓ with s = (½ − 1/(2γ²))‖x‖² + √(d/2)⟨x, k*⟩/γ², as exp(s − logsumexp(s))."""
    g2 = task.gamma**2
    s = (0.5 - 0.5 / g2) * sq_norm + (math.sqrt(task.d / 2) / g2) * along_k_star
    top = xp.max(s, axis=-1, keepdims=True)
    log_normaliser = top + xp.log(xp.sum(xp.exp(s - top), axis=-1, keepdims=True))
    return xp.exp(s - log_normaliser)


def _check_tokens(X: Any, task: Task, be: Backend) -> Any:
    X = arguments.array("X", X, be, min_ndim=2)
    if X.shape[-2:] != (task.L, task.d):
        raise ValueError(f"X must have shape (..., L, d) = (..., {task.L}, {task.d}), got {tuple(X.shape)}")
    return X


def bayes_posterior(X: Any, task: Task, *, backend: Any = None) -> Any:
    """P(J0 = ℓ | X) = softmax_ℓ s(X_ℓ), s(x) = (½ − 1/(2γ²))‖x‖² + √(d/2)⟨x, k*⟩/γ² (spec §2.5).

    s is the log-likelihood ratio log N(x; √(d/2)k*, γ²I)/N(x; 0, I) up to a constant; the softmax is
    taken as exp(s − logsumexp(s)), finite for any finite X. X (..., L, d) → (..., L).
    """
    be = _backend(backend)
    X = _check_tokens(X, _task(task), be)
    k_star, _ = _task_vectors(task, be)
    return _finite_result(lambda: _posterior(be.xp.sum(X * X, axis=-1), X @ k_star, task, be.xp), be, "X")


def bayes_predict(X: Any, task: Task, *, backend: Any = None) -> Any:
    """Bayes predictor f(X) = E[Y | X] = Σ_ℓ P(J0 = ℓ | X)⟨X_ℓ, v*⟩ (spec §2.5). X (..., L, d) → (...)."""
    be = _backend(backend)
    X = _check_tokens(X, _task(task), be)
    k_star, v_star = _task_vectors(task, be)

    def compute() -> Any:
        p = _posterior(be.xp.sum(X * X, axis=-1), X @ k_star, task, be.xp)
        return be.xp.sum(p * (X @ v_star), axis=-1)

    return _finite_result(compute, be, "X")


def bayes_risk_monte_carlo(
    task: Task,
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
    be = _backend(backend)
    xp = be.xp
    task = _task(task)
    n = _integer("n", n, 2)
    rng = _generator(rng, be)
    conditional = arguments.flag("conditional", conditional)
    reduction = _reduction(task, [], be)
    moments = _Moments()
    for size in _batch_sizes(n, batch, task.L * (reduction.r + 3)):
        Z, _, orth, y = _draw_reduced(task, reduction, size, rng, be, orthogonal=True)
        p = _posterior(xp.sum(Z * Z, axis=-1) + orth, Z @ reduction.k_star, task, xp)
        u = Z @ reduction.v_star
        f = xp.sum(p * u, axis=-1)
        if conditional:
            values = task.eps**2 + xp.maximum(xp.sum(p * u * u, axis=-1) - f * f, 0.0)
        else:
            values = (y - f) ** 2
        moments.add(values, xp)
    return moments.estimate()


# --------------------------------------------------------------------------- linear predictors


def linear_fit_least_squares(X: Any, y: Any, *, backend: Any = None) -> Any:
    """Least-squares β (L, d) minimising Σ_i (y_i − Σ_ℓ⟨β_ℓ, X_{iℓ}⟩)² (spec §2.4, Prop. 3).

    Solved by ``lstsq`` on the n×(L·d) design (SVD, no explicit inverse); needs n ≥ L·d and a design of
    full column rank.
    """
    be = _backend(backend)
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
    return _finite_result(lambda: beta.reshape(L, d), be, "X")


def _check_beta(beta: Any, L: int, d: int, be: Backend) -> Any:
    beta = arguments.array("beta", beta, be)
    if beta.shape != (L, d):
        raise ValueError(f"beta must have shape (L, d) = ({L}, {d}), got {tuple(beta.shape)}")
    return beta


def linear_predict(X: Any, beta: Any, *, backend: Any = None) -> Any:
    """Linear predictor f_β(X) = Σ_ℓ ⟨β_ℓ, X_ℓ⟩ (spec §2.4). X (..., L, d), β (L, d) → (...)."""
    be = _backend(backend)
    X = arguments.array("X", X, be, min_ndim=2)
    beta = _check_beta(beta, X.shape[-2], X.shape[-1], be)
    return _finite_result(lambda: be.xp.sum(X * beta, axis=(-2, -1)), be, "X (or beta)")


def linear_risk_monte_carlo(
    task: Task, beta: Any, n: int, rng: Any, *, backend: Any = None, batch: int | None = None
) -> Estimate:
    """Monte Carlo ℛ(f_β) = E[(Y − Σ_ℓ⟨β_ℓ, X_ℓ⟩)²], ε² included (spec §2.4).

    Exact reduction to span{k*, v*, β_1, …, β_L} (r ≤ min(d, L + 2)).
    """
    be = _backend(backend)
    xp = be.xp
    task = _task(task)
    n = _integer("n", n, 2)
    beta = _check_beta(beta, task.L, task.d, be)
    rng = _generator(rng, be)
    reduction = _reduction(task, [beta[l] for l in range(task.L)], be)
    beta_q = beta @ reduction.basis  # (L, r): row ℓ holds Qᵀβ_ℓ
    moments = _Moments()
    for size in _batch_sizes(n, batch, task.L * (reduction.r + 1)):
        Z, _, _, y = _draw_reduced(task, reduction, size, rng, be, orthogonal=False)
        moments.add((y - xp.sum(Z * beta_q, axis=(-2, -1))) ** 2, xp)
    return moments.estimate()


def linear_oracle_coefficients(task: Task, *, backend: Any = None) -> Any:
    """Best linear predictor β*_ℓ = γ²/(γ² + L − 1)·v* for every ℓ (spec §2.4, Prop. 3), shape (L, d)."""
    be = _backend(backend)
    _, v_star = _task_vectors(_task(task), be)
    g2 = task.gamma**2
    return be.xp.tile((g2 / (g2 + task.L - 1)) * v_star, (task.L, 1))


# --------------------------------------------------------------------------- overlaps and reductions


def overlaps(k: Any, v: Any, k_star: Any, v_star: Any, *, backend: Any = None) -> tuple[Any, Any, Any, Any, Any]:
    """The five overlaps (κ, ν, θ, η, ρ) = (⟨k,k*⟩, ⟨v,v*⟩, ⟨v,k*⟩, ⟨k,v*⟩, ⟨k,v⟩) (spec §3.1).

    k, v of shape (..., dim); each overlap has shape (...).
    """
    return theory.overlaps(k, v, k_star, v_star, backend=_backend(backend))


def _chain_rule(partials: Sequence[Any], k: Any, v: Any, k_star: Any, v_star: Any) -> tuple[Any, Any]:
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
    be = _backend(backend)
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
    return _chain_rule(partials, *vectors.values())


def _residual(w: Any, basis: Sequence[Any], xp: Any) -> Any:
    """w minus its projection on the (row-wise) orthonormal ``basis`` vectors, done twice."""
    for _ in range(2):
        for q in basis:
            w = w - xp.sum(q * w, axis=-1, keepdims=True) * q
    return w


def _normalised_or_zero(w: Any, reference: Any, xp: Any) -> Any:
    size = xp.linalg.norm(w, axis=-1, keepdims=True)
    keep = size > _RANK_TOLERANCE * xp.linalg.norm(reference, axis=-1, keepdims=True)
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
    be = _backend(backend)
    xp = be.xp
    k = arguments.array("k", k, be, min_ndim=1)
    single = k.ndim == 1
    k, v = _unit_pair("k", k, "v", v, be, batched=True)
    k_star, v_star = _unit_pair("k_star", k_star, "v_star", v_star, be, k.shape[-1], batched=False)
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


# --------------------------------------------------------------------------- projected gradient descent


@dataclass(frozen=True)
class _LambdaSchedule:
    lam0: float
    scheduled: bool
    increment: float = 1e-4

    def __call__(self, t: int) -> float:
        return self.lam0 / (1.0 + self.increment * t) if self.scheduled else self.lam0


def lambda_schedule(lam0: float, scheduled: bool) -> Callable[[int], float]:
    """λ_t = λ0/(1 + 10⁻⁴·t) if ``scheduled`` else λ0 (spec §3.2; the authors' ``utils.lambd_value``)."""
    return _LambdaSchedule(_lam(lam0, "lam0"), arguments.flag("scheduled", scheduled))


@dataclass(frozen=True, eq=False)
class Trajectory:
    """Recorded states of a projected descent on S^{dim−1} × S^{dim−1}.

    ``steps`` (records,) step indices t; ``k``, ``v`` (records, runs, dim) the states (k_t, v_t);
    ``lam`` (records,) λ_t; ``test_risk`` (records, runs) test MSE at (k_t, v_t, λ_t), ε² included
    (SGD only, else None). ``steps``/``lam`` are numpy, the others on the run's backend.
    """

    steps: np.ndarray
    k: Any
    v: Any
    lam: np.ndarray
    test_risk: Any = None

    def overlaps(self, k_star: Any, v_star: Any, *, backend: Any = None) -> tuple[Any, Any, Any, Any, Any]:
        """(κ, ν, θ, η, ρ) at every record, each of shape (records, runs)."""
        return overlaps(self.k, self.v, k_star, v_star, backend=backend)


def _projected_step(x: Any, g: Any, alpha: float, xp: Any) -> Any:
    """x_{t+1} = (x − α(g − ⟨x, g⟩x))/‖·‖, row-wise (spec §3.2, the authors' ``pgd_step``)."""
    y = x - alpha * (g - xp.sum(x * g, axis=-1, keepdims=True) * x)
    return y / xp.linalg.norm(y, axis=-1, keepdims=True)


def _descend(
    k: Any,
    v: Any,
    gradient: Callable[[Any, Any, float], tuple[Any, Any]],
    *,
    steps: int,
    step_size: float,
    schedule: Callable[[int], float],
    record_every: int,
    be: Backend,
    progress: Callable[[int, int], Any] | None,
    extra: Callable[[Any, Any, float], Any] | None = None,
) -> Trajectory:
    xp = be.xp
    recorded = list(range(0, steps + 1, record_every))
    if recorded[-1] != steps:
        recorded.append(steps)
    K = xp.empty((len(recorded),) + tuple(k.shape), dtype=xp.float64)
    V = xp.empty_like(K)
    lams = np.empty(len(recorded))
    risks = xp.empty((len(recorded), k.shape[0]), dtype=xp.float64) if extra is not None else None
    slot = 0
    for t in range(steps + 1):
        lam = _lam_at(schedule, t)
        if t == recorded[slot]:
            if not (bool(xp.all(xp.isfinite(k))) and bool(xp.all(xp.isfinite(v)))):
                raise ValueError(f"the descent produced NaN or infinity by step {t}; check gradient and step_size")
            K[slot], V[slot], lams[slot] = k, v, lam
            if extra is not None:
                risks[slot] = extra(k, v, lam)
            slot += 1
            if progress is not None:
                progress(t, steps)
        if t == steps:
            break
        g_k, g_v = gradient(k, v, lam)
        if t == 0 and (tuple(g_k.shape) != tuple(k.shape) or tuple(g_v.shape) != tuple(v.shape)):
            raise ValueError(
                f"gradient must return arrays shaped like k and v {tuple(k.shape)}, "
                f"got {tuple(g_k.shape)} and {tuple(g_v.shape)}"
            )
        k, v = _projected_step(k, g_k, step_size, xp), _projected_step(v, g_v, step_size, xp)
    return Trajectory(np.asarray(recorded), K, V, lams, risks)


def _start(k0: Any, v0: Any, be: Backend, dim: int | None = None) -> tuple[Any, Any]:
    return _unit_pair("k0", k0, "v0", v0, be, dim, batched=True)


def projected_gradient_descent(
    k0: Any,
    v0: Any,
    gradient: Callable[[Any, Any, float], tuple[Any, Any]],
    *,
    steps: int,
    step_size: float,
    lam_schedule: Callable[[int], float] | float,
    record_every: int,
    backend: Any = None,
    progress: Callable[[int, int], Any] | None = None,
) -> Trajectory:
    """Projected gradient descent on S^{dim−1} × S^{dim−1}, generic in the gradient (spec §3.2).

    Simultaneous updates with (g_k, g_v) = gradient(k_t, v_t, λ_t):
    k_{t+1} = (k_t − α(g_k − ⟨k_t, g_k⟩k_t))/‖·‖, and the same for v. k0, v0 of shape (runs, dim) (or
    (dim,) for one run), unit rows; ``gradient`` takes and returns (runs, dim) arrays; λ_t =
    ``lam_schedule(t)`` (a number means a constant λ). Records t = 0, record_every, 2·record_every, …
    and the last step; ``progress(t, steps)`` is called at each record.
    """
    be = _backend(backend)
    k, v = _start(k0, v0, be)
    if not callable(gradient):
        raise TypeError(f"gradient must be callable (k, v, lam) -> (g_k, g_v), got {gradient!r}")
    return _descend(
        k,
        v,
        gradient,
        steps=_integer("steps", steps, 0),
        step_size=arguments.nonnegative("step_size", step_size),
        schedule=_schedule(lam_schedule),
        record_every=_integer("record_every", record_every, 1),
        be=be,
        progress=_progress(progress),
    )


# --------------------------------------------------------------------------- initialisations


def _normalise_rows(x: Any, xp: Any) -> Any:
    return x / xp.linalg.norm(x, axis=-1, keepdims=True)


def initialize_on_sphere(runs: int, d: int, rng: Any, *, backend: Any = None) -> tuple[Any, Any]:
    """k0, v0 of shape (runs, d), independent and uniform on S^{d−1} (spec §3.2, ``initialize_on_sphere``)."""
    be = _backend(backend)
    runs = _integer("runs", runs, 1)
    d = _integer("d", d, 2, theory.COUNT_MAX)
    rng = _generator(rng, be)
    k0 = _normalise_rows(_normal(rng, (runs, d), be), be.xp)
    v0 = _normalise_rows(_normal(rng, (runs, d), be), be.xp)
    return k0, v0


def initialize_on_manifold(runs: int, k_star: Any, v_star: Any, rng: Any, *, backend: Any = None) -> tuple[Any, Any]:
    """k0, v0 (runs, d) on M = {θ = η = ρ = 0} as in the authors' ``initialize_on_manifold`` (spec §3.2).

    k0 = normalise(g − ⟨g, v*⟩v*); v0: h − ⟨h, k*⟩k*, then minus its component along u = k0 − ⟨k0, k*⟩k*
    (the part of k0 orthogonal to k*), normalised. Hence ⟨k0, v*⟩ = ⟨v0, k*⟩ = ⟨k0, v0⟩ = 0.
    """
    be = _backend(backend)
    xp = be.xp
    runs = _integer("runs", runs, 1)
    k_star, v_star = _unit_pair("k_star", k_star, "v_star", v_star, be, batched=False)
    d = int(k_star.shape[0])
    if d < 3:
        raise ValueError(f"k_star must have dimension d ≥ 3 for the manifold initialisation, got {d}")
    rng = _generator(rng, be)
    g = _normal(rng, (runs, d), be)
    k0 = _normalise_rows(g - (g @ v_star)[:, None] * v_star, xp)
    h = _normal(rng, (runs, d), be)
    v0 = h - (h @ k_star)[:, None] * k_star
    u = _normalise_rows(k0 - (k0 @ k_star)[:, None] * k_star, xp)
    v0 = v0 - xp.sum(u * v0, axis=-1, keepdims=True) * u
    return k0, _normalise_rows(v0, xp)


# --------------------------------------------------------------------------- SGD on samples


def _scores(X: Any, u: Any) -> Any:
    """⟨X_{…bℓ}, u_{…}⟩ for X (..., B, L, d) and u (..., d), broadcast over the leading axes."""
    return (X @ u[..., None, :, None])[..., 0]


def _check_empirical(X: Any, y: Any, k: Any, v: Any, lam: Any, be: Backend) -> tuple[Any, Any, Any, Any, float]:
    lam = _lam(lam)
    X = arguments.array("X", X, be, min_ndim=3)
    y = arguments.array("y", y, be, min_ndim=1)
    k = arguments.array("k", k, be, min_ndim=1)
    v = arguments.array("v", v, be, min_ndim=1)
    d = X.shape[-1]
    for name, u in (("k", k), ("v", v)):
        if u.shape[-1] != d:
            raise ValueError(f"{name} must have last axis d = {d} like X, got shape {tuple(u.shape)}")
    if y.shape[-1] != X.shape[-3]:
        raise ValueError(f"y must have shape (..., B) with B = {X.shape[-3]}, got {tuple(y.shape)}")
    leading = {"X": X.shape[:-3], "y": y.shape[:-1], "k": k.shape[:-1], "v": v.shape[:-1]}
    try:
        np.broadcast_shapes(*(tuple(shape) for shape in leading.values()))
    except ValueError:
        raise ValueError("the leading (run) axes of X, y, k and v must broadcast together, got "
                         + ", ".join(f"{name} {tuple(shape)}" for name, shape in leading.items())) from None
    return X, y, k, v, lam


def _empirical_risk(X: Any, y: Any, k: Any, v: Any, lam: float, be: Backend) -> Any:
    xp = be.xp
    T = xp.sum(be.special.erf(lam * _scores(X, k)) * _scores(X, v), axis=-1)
    return xp.mean((T - y) ** 2, axis=-1)


def _empirical_gradient(X: Any, y: Any, k: Any, v: Any, lam: float, be: Backend) -> tuple[Any, Any]:
    xp = be.xp
    a, b = _scores(X, k), _scores(X, v)
    e = be.special.erf(lam * a)
    r = xp.sum(e * b, axis=-1) - y  # residuals T(X_b) − y_b, (..., B)
    B, L, d = X.shape[-3:]
    flat_X = X.reshape(tuple(X.shape[:-3]) + (B * L, d))

    def contract(w: Any) -> Any:  # Σ_{b,ℓ} w_{bℓ} X_{bℓ}, (..., d)
        flat_w = w.reshape(tuple(w.shape[:-2]) + (B * L,))
        return (flat_w[..., None, :] @ flat_X)[..., 0, :]

    g_k = (2.0 / B) * contract(r[..., None] * lam * _erf_prime(lam * a, xp) * b)
    g_v = (2.0 / B) * contract(r[..., None] * e)
    return g_k, g_v


def empirical_risk(X: Any, y: Any, k: Any, v: Any, lam: float, *, backend: Any = None) -> Any:
    """Empirical MSE (1/B)Σ_b (T_λ^{k,v}(X_b) − y_b)² (spec §3.2, the authors' ``risk_fn``).

    X (..., B, L, d), y (..., B), k, v (..., d); leading axes broadcast (e.g. k of shape (runs, d) on
    one shared batch). k, v may be any vectors of R^d (no unit-norm check), so that it can be
    differentiated numerically.
    """
    be = _backend(backend)
    X, y, k, v, lam = _check_empirical(X, y, k, v, lam, be)
    return _finite_result(lambda: _empirical_risk(X, y, k, v, lam, be), be, "X (or y)")


def empirical_risk_gradient(X: Any, y: Any, k: Any, v: Any, lam: float, *, backend: Any = None) -> tuple[Any, Any]:
    """Euclidean gradient of :func:`empirical_risk` in k and v (spec §3.2, SGD variant).

    ∂/∂k = (2/B)Σ_b r_b Σ_ℓ λ erf'(λ⟨X_ℓ,k⟩)⟨X_ℓ,v⟩X_ℓ,  ∂/∂v = (2/B)Σ_b r_b Σ_ℓ erf(λ⟨X_ℓ,k⟩)X_ℓ,
    r_b = T(X_b) − y_b, erf'(x) = 2e^{−x²}/√π. Shapes as in :func:`empirical_risk`; returns (g_k, g_v)
    with the broadcast leading shape of k, v and X's batch axes, last axis d.
    """
    be = _backend(backend)
    X, y, k, v, lam = _check_empirical(X, y, k, v, lam, be)
    return _finite_result(lambda: _empirical_gradient(X, y, k, v, lam, be), be, "X (or y)")


def stochastic_gradient_descent(
    task: Task,
    k0: Any,
    v0: Any,
    *,
    lam_schedule: Callable[[int], float] | float,
    step_size: float,
    batch_size: int,
    steps: int,
    rng: Any,
    test_size: int = 1000,
    record_every: int,
    backend: Any = None,
    progress: Callable[[int, int], Any] | None = None,
) -> Trajectory:
    """Projected SGD on the empirical MSE of a fresh batch per step and per run (spec §3.2, §3.4).

    Each step every run draws its own batch of ``batch_size`` samples, takes (g_k, g_v) from
    :func:`empirical_risk_gradient` at λ_t and makes the projected step of
    :func:`projected_gradient_descent`. k0, v0 (runs, d). Records (k_t, v_t), λ_t and the test MSE at
    λ_t on one fixed test batch of ``test_size`` samples drawn first (ε² included; the authors log
    test MSE − ε², and evaluate it at the λ of the step just taken).
    """
    be = _backend(backend)
    task = _task(task)
    k, v = _start(k0, v0, be, task.d)
    batch_size = _integer("batch_size", batch_size, 1)
    test_size = _integer("test_size", test_size, 1)
    rng = _generator(rng, be)
    runs, d, L = int(k.shape[0]), task.d, task.L
    X_test, y_test, _ = _draw_full(task, test_size, rng, be)

    def gradient(k: Any, v: Any, lam: float) -> tuple[Any, Any]:
        X, y, _ = _draw_full(task, runs * batch_size, rng, be)
        return _empirical_gradient(
            X.reshape(runs, batch_size, L, d), y.reshape(runs, batch_size), k, v, lam, be
        )

    def test_risk(k: Any, v: Any, lam: float) -> Any:
        return _empirical_risk(X_test, y_test, k, v, lam, be)

    return _descend(
        k,
        v,
        gradient,
        steps=_integer("steps", steps, 0),
        step_size=arguments.nonnegative("step_size", step_size),
        schedule=_schedule(lam_schedule),
        record_every=_integer("record_every", record_every, 1),
        be=be,
        progress=_progress(progress),
        extra=test_risk,
    )


# --------------------------------------------------------------------------- population dynamics


def population_gradient(*, d: int, L: int, gamma: float, eps: float, backend: Any = None) -> Callable:
    """(k, v, λ) ↦ (∇_kℛ, ∇_vℛ) of the closed-form population risk in R⁴ with k* = e1, v* = e2.

    The partials in the overlaps are the sympy derivatives of the derived risk
    (:func:`attnverify.derivations.single_location.risk_gradient_from_overlaps`), pulled back to
    (k, v) by :func:`overlap_gradient_to_vectors` (spec §3.2). d, L, γ, ε are checked here, once;
    the returned function takes the (runs, 4) states of a descent and a checked λ, and checks nothing.
    """
    be = _backend(backend)
    partials_at = theory.risk_gradient_function(gamma=gamma, d=d, L=L, eps=eps, backend=be)
    e1, e2 = be.asarray([1.0, 0.0, 0.0, 0.0]), be.asarray([0.0, 1.0, 0.0, 0.0])

    def gradient(k: Any, v: Any, lam: float) -> tuple[Any, Any]:
        partials = partials_at(*_unchecked_overlaps(k, v, e1, e2, be.xp), lam)
        return _chain_rule(partials, k, v, e1, e2)

    return gradient


def population_projected_gradient_descent(
    k0: Any,
    v0: Any,
    *,
    lam0: float,
    scheduled: bool,
    step_size: float,
    steps: int,
    d: int,
    L: int,
    gamma: float,
    eps: float,
    record_every: int,
    backend: Any = None,
    progress: Callable[[int, int], Any] | None = None,
) -> Trajectory:
    """Population PGD (spec §3.2) in the exact 4-dimensional reduction: k0, v0 of shape (runs, 4)
    are coordinates on (k*, v*, e3, e4) (see :func:`reduce_to_four_dimensions`); d enters only
    through the risk."""
    k0, v0 = _start(k0, v0, _backend(backend), 4)
    return projected_gradient_descent(
        k0,
        v0,
        population_gradient(d=d, L=L, gamma=gamma, eps=eps, backend=backend),
        steps=steps,
        step_size=step_size,
        lam_schedule=lambda_schedule(lam0, scheduled),
        record_every=record_every,
        backend=backend,
        progress=progress,
    )

