"""The task (spec §1) and its exact reduction to four dimensions.

Part of `attnverify.theories.single_location` (see its docstring for the spec and sources).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import math
import numpy as np

from ...base import arguments
from . import derivations as derived
from ...base.arguments import Checked, checked
from ...base.arguments import generator as _generator, integer as _integer
from ...base.backend import Backend, to_numpy

from ._common import UNIT_TOLERANCE, RANK_TOLERANCE, chisquare_draws, integer_draws, normal_draws, unit_rows


@dataclass(frozen=True, eq=False)
class RegressionTask(Checked):
    """One single-location regression problem (Marion et al. 2025, §1 of the spec).

    ``d`` token dimension, ``L`` sequence length, ``gamma`` (γ) the informative token's spread,
    ``eps`` (ε) the label noise, ``k_star``/``v_star`` (k*, v*) orthonormal vectors of shape (d,).
    Compared by identity (it holds arrays).
    """

    d: int = checked(_integer, 2, derived.COUNT_MAX)
    L: int = checked(_integer, 1, derived.COUNT_MAX)
    gamma: float = checked(arguments.real, low=derived.GAMMA_RANGE[0], high=derived.GAMMA_RANGE[1])
    eps: float = checked(arguments.nonnegative, high=derived.EPS_MAX)
    k_star: Any
    v_star: Any

    def _check_fields(self) -> None:
        host = lambda x: to_numpy(x) if getattr(x, "dtype", None) is not None else x  # noqa: E731
        k_star = arguments.array("k_star", host(self.k_star), shape=(self.d,))
        v_star = arguments.array("v_star", host(self.v_star), shape=(self.d,))
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
) -> RegressionTask:
    """A task with random orthonormal k*, v* drawn as in the authors' ``dynamics.init_star``.

    k* = g/‖g‖ and v* = (h − ⟨h, k*⟩k*)/‖·‖ with g, h ~ N(0, I_d) (spec §1, [CODE]); γ = √0.5, ε = 0.1
    are the paper's experimental values.
    """
    be = arguments.backend(backend)
    d = _integer("d", d, 2, derived.COUNT_MAX)
    L = _integer("L", L, 1, derived.COUNT_MAX)
    arguments.fits_in_memory("d", 3 * 8 * d, "k* and v* (float64 vectors of length d, and one draw at a time)",
                             value=d, backend=be)
    rng = _generator(seed, be, "seed")
    k_star = normal_draws(rng, (d,), be)
    k_star = k_star / be.xp.linalg.norm(k_star)
    v_star = normal_draws(rng, (d,), be)
    v_star = v_star - (v_star @ k_star) * k_star
    v_star = v_star / be.xp.linalg.norm(v_star)
    return RegressionTask(d, L, gamma, eps, k_star, v_star)


def task_vectors(task: RegressionTask, be: Backend) -> tuple[Any, Any]:
    """(k*, v*) of ``task`` as arrays of the backend."""
    return be.asarray(task.k_star), be.asarray(task.v_star)


def draw_full(task: RegressionTask, n: int, rng: Any, be: Backend) -> tuple[Any, Any, Any]:
    """`sample` without its checks: n draws (X, y, J0) of the model, X of shape (n, L, d)."""
    xp = be.xp
    k_star, v_star = task_vectors(task, be)
    X = normal_draws(rng, (n, task.L, task.d), be)
    J0 = integer_draws(rng, task.L, n, be)
    rows = xp.arange(n)
    X[rows, J0] = math.sqrt(task.d / 2) * k_star + task.gamma * X[rows, J0]
    y = X[rows, J0] @ v_star + task.eps * normal_draws(rng, (n,), be)
    return X, y, J0


def sample(task: RegressionTask, n: int, rng: Any, *, backend: Any = None) -> tuple[Any, Any, Any]:
    """n draws (X, y, J0) of the single-location model, X of shape (n, L, d) (spec §1).

    J0 ~ U{0..L−1}; X_{J0} = √(d/2)·k* + γ·g, the other tokens g ~ N(0, I_d); y = ⟨X_{J0}, v*⟩ + ε·ξ.
    """
    be = arguments.backend(backend)
    task = checked_task(task)
    n = _integer("n", n, 1)
    arguments.fits_in_memory("n", 8 * n * task.L * task.d + 24 * n,
                             f"X, y and J0 (n × L × d float64, L = {task.L}, d = {task.d})", value=n, backend=be)
    return draw_full(task, n, _generator(rng, be), be)


# --------------------------------------------------------------------------- exact reduction


def _orthonormal_basis(vectors: Sequence[Any], xp: Any) -> Any:
    """Orthonormal columns Q (d×r) spanning ``vectors``: Gram–Schmidt, each vector orthogonalised twice.

    Two passes keep Q orthonormal to round-off even for nearly dependent vectors; a vector whose
    residual is below ``RANK_TOLERANCE`` of its norm is taken as inside the span (rank deficiency,
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
        if size > RANK_TOLERANCE * scale:
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


def reduction_of(task: RegressionTask, extra: Sequence[Any], be: Backend) -> _Reduction:
    """An orthonormal basis of span{k*, v*, extra} and k*, v* in it (the exact reduction of `sample_reduced`)."""
    k_star, v_star = task_vectors(task, be)
    Q = _orthonormal_basis([k_star, v_star, *extra], be.xp)
    return _Reduction(Q, Q.T @ k_star, Q.T @ v_star)


def draw_reduced(
    task: RegressionTask, reduction: _Reduction, n: int, rng: Any, be: Backend, *, orthogonal: bool
) -> tuple[Any, Any, Any, Any]:
    """Coordinates Z (n, L, r) on Q, J0, orthogonal squared norms (n, L) or None, labels y."""
    xp = be.xp
    r = reduction.r
    Z = normal_draws(rng, (n, task.L, r), be)
    J0 = integer_draws(rng, task.L, n, be)
    rows = xp.arange(n)
    Z[rows, J0] = math.sqrt(task.d / 2) * reduction.k_star + task.gamma * Z[rows, J0]
    y = Z[rows, J0] @ reduction.v_star + task.eps * normal_draws(rng, (n,), be)
    orth = None
    if orthogonal:
        orth = chisquare_draws(rng, task.d - r, (n, task.L), be)
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
    task: RegressionTask, k: Any, v: Any, n: int, rng: Any, *, backend: Any = None
) -> ReducedSample:
    """n draws of the model in the exact reduction to span{k*, v*, k, v} (spec §6).

    Noise tokens: Z_ℓ ~ N(0, I_r), ‖X_ℓ^⊥‖² ~ χ²_{d−r}; informative token: Z_{J0} ~ N(√(d/2)Qᵀk*, γ²I_r),
    ‖X_{J0}^⊥‖² ~ γ²χ²_{d−r}; y = ⟨Z_{J0}, Qᵀv*⟩ + εξ. ``k`` and ``v`` (unit vectors) may be None.
    Cost O(n·L·r) per draw plus O(d) once: it does not grow with d.
    """
    be = arguments.backend(backend)
    task = checked_task(task)
    n = _integer("n", n, 1)
    arguments.fits_in_memory("n", 8 * n * task.L * 5 + 24 * n,
                             f"Z and the orthogonal norms (n × L × (r + 1) float64, r ≤ 4, L = {task.L})", value=n,
                             backend=be)
    extra = {}
    for name, u in (("k", k), ("v", v)):
        if u is not None:
            extra[name] = unit_rows(name, u, be, task.d, batched=False)
    reduction = reduction_of(task, list(extra.values()), be)
    Z, J0, orth, y = draw_reduced(task, reduction, n, _generator(rng, be), be, orthogonal=True)
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

def checked_task(task: Any) -> RegressionTask:
    """``task`` if it is a `RegressionTask`; else a TypeError naming what it is."""
    if not isinstance(task, RegressionTask):
        raise TypeError(f"task must be a RegressionTask (see make_task), got {task!r:.80}")
    return task
