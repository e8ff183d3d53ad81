"""The approach of a declared saddle point to its GP limit, U(N) = U_GP + c₁/N + c₂/N² + …, measured where the
expansion's first term dominates: the window of widths is chosen from the data by the second-order term's size at
the GP point, and the solves there must resolve the distance to U_GP, else the check says what would decide it.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import scipy.linalg

from .action import NumericAction
from .declaration import SaddlePointAction
from .solve import data_energy, gp_point, solve_energy

SECOND_ORDER = 1e-2
"""The largest r(N) = max|δ₂(N)|/max|δ₁(N)| accepted at both ends of the window (N, 10N). With max|u(N) − u_GP| =
max|δ₁(N)|(1 + ε(N)), |ε| ≤ r + O(r²), the log-log slope over the window is that of max|δ₁| within
(r(N) + r(10N))/ln 10 ≤ 2·10⁻²/ln 10 ≈ 0.009, a fifth of the claim's tolerance 0.05."""

FIRST_ORDER = 1e-1
"""The largest first-order move of u_GP on the entropy's own scale (`relative_move`) accepted at the window's
start: the expansion's parameter, so that the terms beyond the second, O(move²) of δ₁, stay near 10⁻², and the
second-order estimate r, taken with the GP point's Hessian, is off by O(move) only (a larger move can make r small
by a cancellation that the next order undoes)."""

RESOLUTION = 1e-3
"""The largest error estimate of a solve (plus the GP point's) relative to the distance it enters: the slope is then
known to (10⁻³ + 10⁻³)/ln 10 ≈ 0.001."""

FIRST_DECADE = 2
"""The window starts at 10^k times the drawn widths, k ≥ this (all layers' widths scaled alike)."""

RESOLVABLE = 1e-10
"""Decades are tried while the first-order distance max|δ₁(10N)| is at least this fraction of max|u_GP|: float64
solves resolve u to ~10⁻¹⁵ of its scale, so below it the distance is lost in the solver's round-off."""

LAST_DECADE = 30
"""No window starts beyond 10^k times the drawn widths, k ≥ this (an entropy that barely grows with the widths)."""


def expansion_terms(declaration: SaddlePointAction, energy, action_values: Mapping[str, Any],
                    gp_entries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(δ₁, δ₂): the first two terms of u(N) − u_GP at the action's values, from the GP point u₀ (∇𝓛(u₀) = 0).

    With S = ½E + 𝓛 and H_𝓛 = ∂²𝓛/∂u∂u'(u₀) (∝ N for an entropy linear in the widths),
        δ₁ = −H_𝓛⁻¹ ½∇E(u₀),
        δ₂ = −H_𝓛⁻¹ [∇S(u₀ + δ₁) − ∇𝓛(u₀)] = −H_𝓛⁻¹ [½∇²E(u₀)δ₁ + ½𝓛'''(u₀)[δ₁, δ₁]] + O(δ₁³),
    since ∇S(u₀ + δ₁) = ∇𝓛(u₀) + (H_𝓛δ₁ + ½∇E(u₀)) + ½∇²E δ₁ + ½𝓛'''[δ₁, δ₁] + O(δ₁³) and the bracket is zero:
    one gradient of the action at u₀ + δ₁ gives the second order, no third derivative needed. Solved by Cholesky of
    H_𝓛. Raises ``numpy.linalg.LinAlgError`` where u₀ + δ₁ leaves the domain (δ₁ is then not small)."""
    values = declaration.parameter_values(action_values)
    action = NumericAction(declaration, energy, values)
    _, entropy_gradient = declaration.entropy_value_and_gradient(gp_entries, values)
    factor = scipy.linalg.cho_factor(declaration.entropy_hessian(gp_entries, values))
    gradient = action.parts(action.parametrisation.theta(gp_entries))[3]
    first = -scipy.linalg.cho_solve(factor, gradient - entropy_gradient)
    moved = action.parts(action.parametrisation.theta(gp_entries + first))[3]
    second = -scipy.linalg.cho_solve(factor, moved - entropy_gradient)
    return first, second


def _ratio(first: np.ndarray, second: np.ndarray) -> float:
    size = float(np.max(np.abs(first)))
    return float(np.max(np.abs(second))) / size if size > 0 else float("inf")


def relative_move(declaration: SaddlePointAction, gp_entries: np.ndarray, step: np.ndarray) -> float:
    """How far ``step`` moves u_GP on the entropy's own scale, the expansion's parameter: |δq|/q for a scalar,
    ‖R⁻¹ δU R⁻ᵀ‖₂ for a matrix U = R Rᵀ (the largest relative change of U's eigen-directions, the scale on which
    ln det U and tr(V⁻¹U) curve); the largest over the order parameters."""
    moves = []
    for op, value, change in zip(declaration.order_parameters, declaration.split(gp_entries).values(),
                                 declaration.split(step).values()):
        if op.size == 0:
            moves.append(abs(change) / value)
            continue
        R = np.linalg.cholesky(value)
        half = scipy.linalg.solve_triangular(R, change, lower=True)
        whitened = scipy.linalg.solve_triangular(R, half.T, lower=True)
        moves.append(float(np.max(np.abs(np.linalg.eigvalsh(0.5 * (whitened + whitened.T))))))
    return float(max(moves))


def choose_window(declaration: SaddlePointAction, energy, action_values: Mapping[str, Any],
                  gp_entries: np.ndarray) -> dict:
    """The smallest k ≥ `FIRST_DECADE` where the expansion holds at both ends of (10^k N, 10^{k+1} N): the
    first-order move δ₁ is small on the entropy's own scale (`relative_move` ≤ `FIRST_ORDER`) and
    r = max|δ₂|/max|δ₁| ≤ `SECOND_ORDER` (`expansion_terms`; r = ∞ where u₀ + δ₁ leaves the domain),
    among the decades whose first-order distance max|δ₁(10^{k+1} N)| is resolvable (`RESOLVABLE`). Returns
    ``factor`` (10^k, or None where no decade qualifies) and, at the ``factors`` tried, the ``ratios`` r, the
    ``moves`` and the first-order distances ``first_order`` (relative to max|u_GP|)."""
    scale = float(np.max(np.abs(gp_entries)))
    tried = dict(factors=[], ratios=[], moves=[], first_order=[])
    fits = []
    for k in range(FIRST_DECADE, LAST_DECADE + 2):
        factor = 10.0 ** k
        try:
            first, second = expansion_terms(declaration, energy,
                                            declaration.with_widths(action_values, lambda n: n * factor),
                                            gp_entries)
            ratio, move = _ratio(first, second), relative_move(declaration, gp_entries, first)
            distance = float(np.max(np.abs(first))) / scale
        except (np.linalg.LinAlgError, ValueError):  # u₀ + δ₁ outside the domain: far from the expansion
            ratio = move = distance = float("inf")
        for key, value in zip(tried, (factor, ratio, move, distance)):
            tried[key].append(value)
        fits.append(ratio <= SECOND_ORDER and move <= FIRST_ORDER)
        if distance < RESOLVABLE:
            break
        if len(fits) >= 2 and fits[-2] and fits[-1]:
            return dict(factor=tried["factors"][-2], **tried)
    return dict(factor=None, **tried)


def approach_to_gp(declaration: SaddlePointAction, data: Mapping[str, Any], temperature: float,
                   action_values: Mapping[str, Any], backend=None, *, tolerance: float = 1e-11) -> dict:
    """Solve at the two ends of the window (N, 10N) of `choose_window` (every layer's width scaled alike) and
    measure max|u(N) − u_GP|/max|u_GP| there; the log-log ``slope`` between them is −1 where U(N) − U_GP = c₁/N +
    O(1/N²), within (r(N) + r(10N))/ln 10 (`SECOND_ORDER`) and the solves' error (`RESOLUTION`).

    Returns the ``slope`` (None where undecided or a distance is zero), ``widths``, ``distances``, ``errors`` (the
    solves' error estimates plus the GP point's, relative to max|u_GP|), the decades tried for the window
    (``window_factors``, ``window_ratios``, ``window_moves``, ``first_order``: `choose_window`), ``minima``
    (each solve reached a minimum), ``decreasing`` and ``inconclusive`` (why nothing is decided, with what would
    decide it; "" where the slope decides). ``tolerance``: the largest residual max|∂(S/N)/∂e| of a solve, tightened
    to 10⁻⁴ of the residual at u_GP (the first-order force)."""
    width = declaration.width.name
    gp = gp_point(declaration, **action_values)
    scale = float(np.max(np.abs(gp.entries)))
    energy = data_energy(data, temperature, backend=backend)
    window = choose_window(declaration, energy, action_values, gp.entries)
    out = dict(window_factors=window["factors"], window_ratios=window["ratios"], window_moves=window["moves"],
               first_order=window["first_order"], slope=None, widths=[], distances=[], errors=[], minima=True,
               decreasing=True, inconclusive="")
    if window["factor"] is None:
        reached = float(action_values[width]) * window["factors"][-1]
        out["inconclusive"] = (
            f"no decade of widths from 10^{FIRST_DECADE}× the drawn ones to {width} = {reached:.3g} has the "
            f"first-order move ≤ {FIRST_ORDER:g} and the O(1/N²) term ≤ {SECOND_ORDER:g} of the O(1/N) term at both "
            f"ends (at the last: move {window['moves'][-1]:.2g}, r {window['ratios'][-1]:.2g}) while the first-order "
            f"distance stays above {RESOLVABLE:g} of |u_GP|, which float64 solves resolve; a solver in higher "
            f"precision, or a smaller data term (larger temperature, smaller labels), would decide it")
        return out
    distances, errors, widths, start = [], [], [], gp
    for factor in (window["factor"], 10 * window["factor"]):
        values = declaration.parameter_values(declaration.with_widths(action_values, lambda n: n * factor))
        action = NumericAction(declaration, energy, values)
        # the residual at u_GP is the first-order force ½∇E/N: 10⁻⁴ of it leaves an error ~10⁻⁴ of the distance,
        # for any power of N in the entropy (the solver's S/N is not O(1) where 𝓛 is not O(N))
        goal = min(tolerance, 0.1 * RESOLUTION * action.residual(action.parametrisation.theta(gp.entries)))
        solution = solve_energy(declaration, energy, values, temperature=temperature, tolerance=goal,
                                raise_on_failure=False, start=start)
        start = solution
        widths.append(values[declaration.parameter_names.index(width)])
        distances.append(float(np.max(np.abs(solution.entries - gp.entries))) / scale)
        errors.append((solution.error_estimate + gp.error_estimate) / scale)
        out["minima"] = out["minima"] and solution.is_minimum
    out.update(widths=widths, distances=distances, errors=errors, decreasing=distances[0] > distances[1] > 0)
    unresolved = [w for w, d, e in zip(widths, distances, errors) if not e <= RESOLUTION * d]
    if unresolved and out["minima"]:
        out["inconclusive"] = (
            f"the solves' error estimates ({', '.join(f'{e:.2g}' for e in errors)}) exceed {RESOLUTION:g} of the "
            f"distances to u_GP ({', '.join(f'{d:.3g}' for d in distances)}) at {width} = "
            f"{', '.join(f'{w:.3g}' for w in unresolved)}: a tighter solve (or higher precision) would decide it")
        return out
    if distances[0] > 0 and distances[1] > 0:
        out["slope"] = float(np.log10(distances[1] / distances[0]))
    return out
