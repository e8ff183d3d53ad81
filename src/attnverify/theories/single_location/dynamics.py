"""Dynamics: projected gradient descent, its initialisations, SGD on samples and the population dynamics (spec §3.2).

Part of `attnverify.theories.single_location` (see its docstring for the spec and sources).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...base import arguments
from . import derivations as derived
from .derivations import unchecked_overlaps
from ...base.arguments import generator as _generator, integer as _integer
from ...base.backend import Backend, for_size, to_numpy

from ._common import finite_result, checked_lam, normal_draws, progress_callback, unit_pair
from .task import RegressionTask, draw_full, checked_task
from .predictors import erf_prime_array
from .overlaps import chain_rule, overlaps


@dataclass(frozen=True)
class _LambdaSchedule:
    lam0: float
    scheduled: bool
    increment: float = 1e-4

    def __call__(self, t: int) -> float:
        return self.lam0 / (1.0 + self.increment * t) if self.scheduled else self.lam0


def _schedule(lam_schedule: Any) -> Callable[[int], float]:
    if callable(lam_schedule):
        return lam_schedule
    return _LambdaSchedule(checked_lam(lam_schedule, "lam_schedule"), False)


def _lam_at(schedule: Callable[[int], float], t: int) -> float:
    return checked_lam(schedule(t), f"lam_schedule({t})")


def lambda_schedule(lam0: float, scheduled: bool) -> Callable[[int], float]:
    """λ_t = λ0/(1 + 10⁻⁴·t) if ``scheduled`` else λ0 (spec §3.2; the authors' ``utils.lambd_value``)."""
    return _LambdaSchedule(checked_lam(lam0, "lam0"), arguments.flag("scheduled", scheduled))


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
    # a step too large overflows k or v: the check at the next record (or the gradient's refusal) names it
    with np.errstate(over="ignore", invalid="ignore"):
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
            try:
                returned = gradient(k, v, lam)
            except ValueError:  # a gradient refusing non-finite vectors: say which step made them (too large a step)
                if not (bool(xp.all(xp.isfinite(k))) and bool(xp.all(xp.isfinite(v)))):
                    raise ValueError(f"the descent produced NaN or infinity by step {t}; check gradient and step_size "
                                     f"(= {step_size:g})") from None
                raise
            g_k, g_v = _first_gradient(returned, k, v) if t == 0 else returned
            k, v = _projected_step(k, g_k, step_size, xp), _projected_step(v, g_v, step_size, xp)
    return Trajectory(np.asarray(recorded), K, V, lams, risks)


def _first_gradient(returned: Any, k: Any, v: Any) -> tuple[Any, Any]:
    """The gradient's first value, checked: a pair of arrays shaped like k and v (the later ones are trusted)."""
    if not (isinstance(returned, tuple) and len(returned) == 2):
        raise TypeError(f"gradient(k, v, lam) must return the pair (∂/∂k, ∂/∂v), got {type(returned).__name__}")
    shapes = tuple(getattr(g, "shape", None) for g in returned)
    if shapes[0] is None or shapes[1] is None or tuple(shapes[0]) != tuple(k.shape) or \
            tuple(shapes[1]) != tuple(v.shape):
        given = " and ".join(type(g).__name__ if shape is None else str(tuple(shape))
                             for g, shape in zip(returned, shapes))
        raise ValueError(f"gradient must return arrays shaped like k and v {tuple(k.shape)}, got {given}")
    return returned


def _start(k0: Any, v0: Any, be: Backend, dim: int | None = None) -> tuple[Any, Any]:
    return unit_pair("k0", k0, "v0", v0, be, dim, batched=True)


def _moved(x: Any, source: Backend, target: Backend) -> Any:
    """``x`` of the backend ``source`` on the backend ``target``: one transfer, or ``x`` itself when they agree."""
    return x if target is source or x is None else target.asarray(to_numpy(x))


def _trajectory_on(path: Trajectory, source: Backend, target: Backend) -> Trajectory:
    """``path`` (run on ``source``) with its states and risks on ``target``, as `Trajectory` promises."""
    return Trajectory(path.steps, _moved(path.k, source, target), _moved(path.v, source, target), path.lam,
                      _moved(path.test_risk, source, target))


MOST_STEPS = 10**10
"""The most steps one descent may ask for: a step calls the gradient and makes eight array operations, 16 μs measured
on one core (one run in R⁴, a gradient of zeros), so 10¹⁰ steps take two days (half a day on a core three times as
fast) before the gradient's own work."""

MOST_UPDATES = 10**13
"""The most coordinate updates (steps × runs × dim) one descent may ask for: a step updates k and v, runs × dim
numbers each, and one core makes 9·10⁷ such updates a second (a gradient of zeros, runs = dim = 1,000), so 10¹³ take
over a day before the gradient's own work."""


def _refuse_steps(steps: int, record_every: int, runs: int, dim: int, risks: bool, be: Backend,
                  held: int = 0) -> None:
    """Refuse, before the first step, naming ``steps``, a descent whose records cannot fit (per record the step index,
    a Python int in a list, then in an array, and λ_t on the host, k_t and v_t, runs × dim float64 each, and with
    ``risks`` the test risks, runs float64, on ``be``, besides ``held`` bytes there), then one that no run finishes:
    more than `MOST_STEPS` steps or `MOST_UPDATES` coordinate updates."""
    records = steps // record_every + 1 + (steps % record_every != 0)
    host, arrays = 52 * records, 8 * records * runs * (2 * dim + risks)
    what = (f"{records} records (one every record_every = {record_every} steps) of k_t and v_t (runs × dim float64, "
            f"runs = {runs}, dim = {dim})")
    if be.name == "numpy":
        arguments.fits_in_memory("steps", held + host + arrays, what, value=steps)
    else:
        arguments.fits_in_memory("steps", host, what, value=steps)
        arguments.fits_in_memory("steps", held + arrays, what, value=steps, backend=be)
    arguments.at_most_work("steps", steps, MOST_STEPS, "steps")
    arguments.at_most_work("steps", steps, MOST_UPDATES, f"coordinate updates (steps × runs × dim, runs = {runs:,}, "
                           f"dim = {dim:,})", work=steps * runs * dim)


def _checked_descent(k, v, gradient, be: Backend, steps, step_size, lam_schedule, record_every, progress, *,
                     extra=None) -> Trajectory:
    """`_descend` after checking the descent's own arguments (steps, step size, λ schedule, records)."""
    steps = _integer("steps", steps, 0)
    step_size = arguments.nonnegative("step_size", step_size)
    schedule = _schedule(lam_schedule)
    record_every = _integer("record_every", record_every, 1)
    _refuse_steps(steps, record_every, int(k.shape[0]), int(k.shape[1]), extra is not None, be)
    return _descend(k, v, gradient, steps=steps, step_size=step_size, schedule=schedule, record_every=record_every,
                    be=be, progress=progress_callback(progress), extra=extra)


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
    and the last step; ``progress(t, steps)`` is called at each record. Refused before the first step: more than
    `MOST_STEPS` steps or `MOST_UPDATES` coordinate updates (steps × runs × dim).
    """
    be = arguments.backend(backend)
    k, v = _start(k0, v0, be)
    arguments.function("gradient", gradient, "a function (k, v, lam) -> (g_k, g_v)")
    return _checked_descent(k, v, gradient, be, steps, step_size, lam_schedule, record_every, progress)


# --------------------------------------------------------------------------- initialisations


def _normalise_rows(x: Any, xp: Any) -> Any:
    return x / xp.linalg.norm(x, axis=-1, keepdims=True)


def initialize_on_sphere(runs: int, d: int, rng: Any, *, backend: Any = None) -> tuple[Any, Any]:
    """k0, v0 of shape (runs, d), independent and uniform on S^{d−1} (spec §3.2, ``initialize_on_sphere``)."""
    be = arguments.backend(backend)
    runs = _integer("runs", runs, 1)
    d = _integer("d", d, 2, derived.COUNT_MAX)
    name, value, other = ("runs", runs, f"d = {d}") if runs >= d else ("d", d, f"runs = {runs}")
    arguments.fits_in_memory(name, 3 * 8 * runs * d, f"k0 and v0 (runs × d float64, {other})", value=value,
                             backend=be)
    rng = _generator(rng, be)
    k0 = _normalise_rows(normal_draws(rng, (runs, d), be), be.xp)
    v0 = _normalise_rows(normal_draws(rng, (runs, d), be), be.xp)
    return k0, v0


def initialize_on_manifold(runs: int, k_star: Any, v_star: Any, rng: Any, *, backend: Any = None) -> tuple[Any, Any]:
    """k0, v0 (runs, d) on M = {θ = η = ρ = 0} as in the authors' ``initialize_on_manifold`` (spec §3.2).

    k0 = normalise(g − ⟨g, v*⟩v*); v0: h − ⟨h, k*⟩k*, then minus its component along u = k0 − ⟨k0, k*⟩k*
    (the part of k0 orthogonal to k*), normalised. Hence ⟨k0, v*⟩ = ⟨v0, k*⟩ = ⟨k0, v0⟩ = 0.
    """
    be = arguments.backend(backend)
    xp = be.xp
    runs = _integer("runs", runs, 1)
    k_star, v_star = unit_pair("k_star", k_star, "v_star", v_star, be, batched=False)
    d = int(k_star.shape[0])
    if d < 3:
        raise ValueError(f"k_star must have dimension d ≥ 3 for the manifold initialisation, got {d}")
    overlap = float(k_star @ v_star)
    if abs(overlap) > 1e-10:
        raise ValueError(f"k_star and v_star must be orthogonal, as the model's are (⟨k*, v*⟩ = 0), got "
                         f"⟨k*, v*⟩ = {overlap:.3g}")
    rng = _generator(rng, be)
    g = normal_draws(rng, (runs, d), be)
    k0 = _normalise_rows(g - (g @ v_star)[:, None] * v_star, xp)
    h = normal_draws(rng, (runs, d), be)
    v0 = h - (h @ k_star)[:, None] * k_star
    u = _normalise_rows(k0 - (k0 @ k_star)[:, None] * k_star, xp)
    v0 = v0 - xp.sum(u * v0, axis=-1, keepdims=True) * u
    return k0, _normalise_rows(v0, xp)


# --------------------------------------------------------------------------- SGD on samples


def _scores(X: Any, u: Any) -> Any:
    """⟨X_{…bℓ}, u_{…}⟩ for X (..., B, L, d) and u (..., d), broadcast over the leading axes."""
    return (X @ u[..., None, :, None])[..., 0]


def _check_empirical(X: Any, y: Any, k: Any, v: Any, lam: Any, be: Backend) -> tuple[Any, Any, Any, Any, float]:
    lam = checked_lam(lam)
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

    g_k = (2.0 / B) * contract(r[..., None] * lam * erf_prime_array(lam * a, xp) * b)
    g_v = (2.0 / B) * contract(r[..., None] * e)
    return g_k, g_v


def empirical_risk(X: Any, y: Any, k: Any, v: Any, lam: float, *, backend: Any = None) -> Any:
    """Empirical MSE (1/B)Σ_b (T_λ^{k,v}(X_b) − y_b)² (spec §3.2, the authors' ``risk_fn``).

    X (..., B, L, d), y (..., B), k, v (..., d); leading axes broadcast (e.g. k of shape (runs, d) on
    one shared batch). k, v may be any vectors of R^d (no unit-norm check), so that it can be
    differentiated numerically.
    """
    be = arguments.backend(backend)
    X, y, k, v, lam = _check_empirical(X, y, k, v, lam, be)
    return finite_result(lambda: _empirical_risk(X, y, k, v, lam, be), be, "X (or y)")


def empirical_risk_gradient(X: Any, y: Any, k: Any, v: Any, lam: float, *, backend: Any = None) -> tuple[Any, Any]:
    """Euclidean gradient of `empirical_risk` in k and v (spec §3.2, SGD variant).

    ∂/∂k = (2/B)Σ_b r_b Σ_ℓ λ erf'(λ⟨X_ℓ,k⟩)⟨X_ℓ,v⟩X_ℓ,  ∂/∂v = (2/B)Σ_b r_b Σ_ℓ erf(λ⟨X_ℓ,k⟩)X_ℓ,
    r_b = T(X_b) − y_b, erf'(x) = 2e^{−x²}/√π. Shapes as in `empirical_risk`; returns (g_k, g_v)
    with the broadcast leading shape of k, v and X's batch axes, last axis d.
    """
    be = arguments.backend(backend)
    X, y, k, v, lam = _check_empirical(X, y, k, v, lam, be)
    return finite_result(lambda: _empirical_gradient(X, y, k, v, lam, be), be, "X (or y)")


def stochastic_gradient_descent(
    task: RegressionTask,
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
    `empirical_risk_gradient` at λ_t and makes the projected step of
    `projected_gradient_descent`. k0, v0 (runs, d). Records (k_t, v_t), λ_t and the test MSE at
    λ_t on one fixed test batch of ``test_size`` samples drawn first (ε² included; the authors log
    test MSE − ε², and evaluate it at the λ of the step just taken). With an integer seed ``rng`` the batches
    are drawn and the steps taken where `for_size` puts runs·B·L·d elements (the
    host below 10⁵: the same draws and bits as the numpy backend); the trajectory comes back on ``backend``.
    Refused before any draw: the steps `projected_gradient_descent` refuses, and more than
    ``arguments.MOST_NUMBERS_DRAWN`` numbers drawn (steps × runs × batch_size × L × d).
    """
    be = arguments.backend(backend)
    task = checked_task(task)
    k, v = _start(k0, v0, be, task.d)
    batch_size = _integer("batch_size", batch_size, 1)
    test_size = _integer("test_size", test_size, 1)
    runs, d, L = int(k.shape[0]), task.d, task.L
    # a step draws and contracts (runs·B, L, d) tokens: run where base.backend.for_size puts that size when the
    # batches come from a seed (a Generator draws where it lives: on the caller's backend)
    seeded = isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_))
    run_on = for_size(be, runs * batch_size * L * d) if seeded else be
    # draws of n samples: X (n × L × d), the informative tokens and their temporaries (3 n × d), y, J0 and the rows;
    # a step's gradient adds about 8 numbers per token (scores, erf and their products)
    test = 8 * test_size * (L * d + 3 * d + 3)
    arguments.fits_in_memory("test_size", test, f"the test set (n × L × d float64 with its temporaries, L = {L}, "
                             f"d = {d})", value=test_size, backend=run_on)
    batch = 8 * runs * batch_size * (L * d + 3 * d + 3 + 8 * L)
    arguments.fits_in_memory("batch_size", test + batch, f"one step's batches (runs × batch_size × L × d float64 "
                             f"with the gradient's temporaries, runs = {runs}, L = {L}, d = {d}) and the test set",
                             value=batch_size, backend=run_on)
    steps = _integer("steps", steps, 0)
    _refuse_steps(steps, _integer("record_every", record_every, 1), runs, d, True, run_on, held=test + batch)
    arguments.at_most_work("steps", steps, arguments.MOST_NUMBERS_DRAWN, f"numbers drawn (steps × runs × batch_size × "
                           f"L × d, runs = {runs:,}, batch_size = {batch_size:,}, L = {L:,}, d = {d:,})",
                           work=steps * runs * batch_size * L * d)
    rng = _generator(rng, run_on)
    k, v = _moved(k, be, run_on), _moved(v, be, run_on)
    X_test, y_test, _ = draw_full(task, test_size, rng, run_on)

    def gradient(k: Any, v: Any, lam: float) -> tuple[Any, Any]:
        X, y, _ = draw_full(task, runs * batch_size, rng, run_on)
        return _empirical_gradient(
            X.reshape(runs, batch_size, L, d), y.reshape(runs, batch_size), k, v, lam, run_on
        )

    def test_risk(k: Any, v: Any, lam: float) -> Any:
        return _empirical_risk(X_test, y_test, k, v, lam, run_on)

    path = _checked_descent(k, v, gradient, run_on, steps, step_size, lam_schedule, record_every, progress,
                            extra=test_risk)
    return _trajectory_on(path, run_on, be)


# --------------------------------------------------------------------------- population dynamics


def population_gradient(*, d: int, L: int, gamma: float, eps: float, backend: Any = None) -> Callable:
    """(k, v, λ) ↦ (∇_kℛ, ∇_vℛ) of the closed-form population risk in R⁴ with k* = e1, v* = e2.

    The partials in the overlaps are the sympy derivatives of the derived risk
    (`attnverify.theories.single_location.derivations.risk_gradient_from_overlaps`), pulled back to
    (k, v) by `overlap_gradient_to_vectors` (spec §3.2). d, L, γ, ε are checked here, once;
    the returned function takes the (runs, 4) states of a descent and a checked λ, and checks nothing.
    """
    be = arguments.backend(backend)
    partials_at = derived.risk_gradient_function(gamma=gamma, d=d, L=L, eps=eps, backend=be)
    e1, e2 = be.asarray([1.0, 0.0, 0.0, 0.0]), be.asarray([0.0, 1.0, 0.0, 0.0])

    def gradient(k: Any, v: Any, lam: float) -> tuple[Any, Any]:
        partials = partials_at(*unchecked_overlaps(k, v, e1, e2, be.xp), lam)
        return chain_rule(partials, k, v, e1, e2)

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
    are coordinates on (k*, v*, e3, e4) (see `reduce_to_four_dimensions`); d enters only
    through the risk. A step works on (runs, 4) states, so it runs where `for_size`
    puts that size (on the host below 10⁵ elements: the same bits as the numpy backend); the trajectory comes
    back on ``backend``."""
    be = arguments.backend(backend)
    k0, v0 = _start(k0, v0, be, 4)
    run_on = for_size(be, int(k0.size))
    path = projected_gradient_descent(
        _moved(k0, be, run_on),
        _moved(v0, be, run_on),
        population_gradient(d=d, L=L, gamma=gamma, eps=eps, backend=run_on),
        steps=steps,
        step_size=step_size,
        lam_schedule=lambda_schedule(lam0, scheduled),
        record_every=record_every,
        backend=run_on,
        progress=progress,
    )
    return _trajectory_on(path, run_on, be)
