"""Trust-region Newton minimisation on an exact Hessian, for problems of a few hundred unknowns.

Each iteration solves the trust-region subproblem  min_p gᵀp + ½ pᵀHp  subject to ‖p‖ ≤ Δ  exactly from
the eigendecomposition H = V diag(w) Vᵀ (Moré & Sorensen 1983; Nocedal & Wright, Numerical Optimization,
§4.3): p(λ) = −V (Vᵀg)/(w + λ) with λ ≥ max(0, −w_min) chosen so that ‖p‖ = Δ when the Newton step is
longer than Δ or H is indefinite (the "hard case", Vᵀg ⟂ the lowest eigenvector, adds that eigenvector).

Steps are accepted on the ratio ρ of actual to predicted decrease (> 0.1), and the radius follows ρ
(Nocedal & Wright, Algorithm 4.1). Near the minimum the predicted decrease drops below the round-off of
the objective, where ρ is noise: a step is then accepted when it does not raise the objective beyond its
round-off or it lowers the residual of the stationarity equations, the quantity the caller's tolerance
is on; a step ρ rejects whose predicted decrease and actual change are within `VALUE_NOISE` of the objective is
taken when it halves the residual. The loop stops at that tolerance, at ``max_iterations``, or when two
such round-off steps in a row fail to halve the residual (the round-off floor of the gradient).

A trial point whose objective or gradient is not finite (NaN, ±inf) is rejected like a bad step; a start
whose objective, gradient or residual is not finite is refused (``ValueError``), so that a NaN can never
pass the test ``residual ≤ tolerance`` by failing it (NaN compares false both ways).

One eigendecomposition per iteration (O(n³), n = number of unknowns) and one objective + gradient per
trial point; no line search, no finite differences.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..base import arguments


VALUE_NOISE = 1e-10
"""Relative to the objective, the predicted decrease and the actual change below which a step the ratio test
rejects is judged by the residual. An objective summed from many terms (a log-determinant of a P × P matrix, P in
the hundreds) carries round-off of ε·P times its terms and more: 1e-12 of it was seen to turn ρ of a Newton step
near the minimum negative (P = 600), and 1e-10 leaves a margin of 100 above that."""

ROUND_OFF_FLOOR = "round-off floor of the gradient (two steps without halving the residual)"
"""Why the loop stopped where the residual cannot be brought lower in float64: ``TrustRegionResult.stopped``."""


@dataclass
class TrustRegionResult:
    """``x`` the last accepted point, ``residual`` its stationarity residual; ``iterations`` counts
    subproblems solved (accepted or not), ``round_off_steps`` the steps accepted by the round-off rule;
    ``history`` the objective after every accepted step; ``stopped`` says why the loop ended."""

    x: np.ndarray
    residual: float
    iterations: int
    round_off_steps: int
    stopped: str
    history: list[float] = field(default_factory=list)


def subproblem_step(gradient: np.ndarray, eigenvalues: np.ndarray, vectors: np.ndarray,
                    radius: float) -> tuple[np.ndarray, float]:
    """(p, predicted change gᵀp + ½pᵀHp) minimising the quadratic model within ‖p‖ ≤ ``radius``."""
    a = vectors.T @ gradient
    w = eigenvalues
    lowest = w[0]
    if lowest > 0:
        s = -a / w
        if np.linalg.norm(s) <= radius:
            return vectors @ s, float(a @ s + 0.5 * (w * s) @ s)
    floor = max(0.0, -lowest)
    norm_a = float(np.linalg.norm(a))
    with np.errstate(divide="ignore", invalid="ignore"):
        at_floor = np.where(np.abs(a) > 0, a / (w + floor), 0.0)
    if norm_a == 0.0 or (lowest <= 0 and np.linalg.norm(at_floor) <= radius):
        # hard case: the boundary is reached only along the lowest eigenvector
        s = -np.where(w + floor > 0, at_floor, 0.0)
        s[0] += np.sqrt(max(radius**2 - float(s @ s), 0.0)) * (1.0 if a[0] <= 0 else -1.0)
        return vectors @ s, float(a @ s + 0.5 * (w * s) @ s)
    low, high = floor, norm_a / radius + floor  # ‖p(low⁺)‖ > Δ ≥ ‖p(high)‖
    lam = high
    for _ in range(100):
        shifted = w + lam
        s = -a / shifted
        norm_s = float(np.linalg.norm(s))
        if abs(norm_s - radius) <= 1e-3 * radius:
            break
        if norm_s > radius:
            low = lam
        else:
            high = lam
        # Newton on 1/‖p(λ)‖ − 1/Δ, which is nearly linear in λ; bisect where it leaves the bracket
        derivative = float(np.sum(a**2 / shifted**3))
        lam_next = lam + (norm_s - radius) * norm_s**2 / (radius * derivative)
        lam = lam_next if low < lam_next < high else 0.5 * (low + high)
    return vectors @ s, float(a @ s + 0.5 * (w * s) @ s)


def minimise(
    objective: Callable[[np.ndarray], tuple[float, np.ndarray]],
    hessian: Callable[[np.ndarray], np.ndarray],
    residual: Callable[[np.ndarray], float],
    x: np.ndarray,
    *,
    tolerance: float,
    max_iterations: int,
    radius: float = 1.0,
    max_radius: float = 1e3,
) -> TrustRegionResult:
    """Minimise ``objective`` (x ↦ (value, gradient); +inf where undefined) from ``x`` until
    ``residual(x) ≤ tolerance`` (see the module doc). The start must be a point where the objective, its
    gradient and the residual are finite."""
    tolerance = arguments.nonnegative("tolerance", tolerance)
    max_iterations = arguments.integer("max_iterations", max_iterations, 0)
    x = np.array(x, dtype=float)
    value, gradient = objective(x)
    current = residual(x)
    _check_start(x, value, gradient, current)
    history: list[float] = []
    iterations = round_off_steps = stalls = 0
    stopped = "tolerance reached"
    while current > tolerance:
        if iterations >= max_iterations:
            stopped = f"{max_iterations} iterations"
            break
        if radius < 1e-15 * max(1.0, float(np.linalg.norm(x))):
            stopped = "trust radius below round-off"
            break
        iterations += 1
        matrix = np.asarray(hessian(x), dtype=float)
        if not np.all(np.isfinite(matrix)):
            stopped = "non-finite Hessian (NaN or inf) at the current point"
            break
        eigenvalues, vectors = np.linalg.eigh(matrix)
        step, predicted = subproblem_step(gradient, eigenvalues, vectors, radius)
        length = float(np.linalg.norm(step))
        trial = x + step
        trial_value, trial_gradient = objective(trial)
        rounding = 1e-13 * max(1.0, abs(value))
        actual = trial_value - value
        ratio = actual / predicted if predicted < 0 else -np.inf
        trial_residual = None
        if not (np.isfinite(trial_value) and np.all(np.isfinite(trial_gradient))):
            accept = False
        elif predicted > -rounding:  # the model's decrease is round-off: judge by the residual
            trial_residual = residual(trial)
            accept = actual <= rounding or trial_residual < current
            stalls = stalls + 1 if not accept or trial_residual > 0.5 * current else 0
            round_off_steps += accept
        else:
            accept, stalls = ratio > 0.1, 0
            noise = VALUE_NOISE * max(1.0, abs(value))
            if not accept and predicted > -noise and actual <= noise:
                # a decrease this small, and a change this small, are within what round-off of a sum of many
                # terms can move the objective by, and ρ may be noise: a step that halves the residual is taken
                trial_residual = residual(trial)
                accept = trial_residual < 0.5 * current
                round_off_steps += accept
        if not accept:
            radius = 0.25 * length
        elif ratio > 0.75 and length >= 0.99 * radius:
            radius = min(2.0 * radius, max_radius)
        if accept:
            trial_residual = residual(trial) if trial_residual is None else trial_residual
            if not np.isfinite(trial_residual):  # the step itself is fine; the caller's residual is not
                stopped = f"non-finite residual ({trial_residual}) at an accepted point"
                break
            x, value, gradient, current = trial, trial_value, trial_gradient, float(trial_residual)
            history.append(float(value))
        if stalls >= 2 and current > tolerance:
            stopped = ROUND_OFF_FLOOR
            break
    return TrustRegionResult(x, current, iterations, round_off_steps, stopped, history)


def _check_start(x: np.ndarray, value, gradient, residual) -> None:
    """Refuse a start where the objective, its gradient or the residual is not finite (a NaN residual would
    otherwise fail ``residual > tolerance`` and read as "tolerance reached")."""
    if not np.isfinite(value):
        raise ValueError(f"objective must be finite at the starting point x, got objective value {value}")
    gradient = np.asarray(gradient, dtype=float)
    if gradient.shape != x.shape or not np.all(np.isfinite(gradient)):
        raise ValueError(f"objective's gradient must be finite with the shape {x.shape} of x at the starting "
                         f"point, got {np.array2string(gradient, threshold=6)}")
    if not np.isfinite(residual):
        raise ValueError(f"residual must be finite at the starting point x, got {residual}")
