"""Saddle points over a grid of widths N and temperatures T, by continuation.

The path features X enter the action only through the energy, whose precomputation (the Gram matrix
Γ = XᵀX of the feature space, or the checked X of the kernel space) is done once for the whole grid;
each temperature shares it (``energy.at_temperature``). The grid is solved from the widest width and the
highest temperature down: N → ∞ is the GP point (spec §3), where the first solve starts, and every later
solve starts from its solved neighbour — the next wider width at the same T, else the same width at the
next higher T, or the GP point where its residual is smaller — so a trust-region Newton solve
(:func:`.saddle_point.solve`) takes a few steps. Every
returned point passed the solver's own tests (residual ≤ tolerance, exact Hessian positive definite).

With a :class:`.solution_store.SolutionStore`, a stored solution is the start of its own solve: it is
re-verified (zero Newton steps and one exact Hessian when it still solves the equations) instead of
trusted, and every new solution is filed as soon as it is found, so an interrupted sweep resumes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ...base import arguments, blas
from .energy import FeatureSpaceEnergy, energy_for
from .entropy import ActionConfig
from .saddle_point import Action, SaddlePoint, _check_paths, _start_factors, gp_start, solve
from .solution_store import SolutionStore, fingerprint


@dataclass(frozen=True)
class SaddlePointSweep:
    """Solutions on the grid ``widths`` × ``temperatures`` (as given, duplicates dropped), keyed by (N, T);
    ``stored`` holds the keys whose solve started from the store; ``seconds`` is the whole sweep's time."""

    widths: tuple[float, ...]
    temperatures: tuple[float, ...]
    solutions: dict
    space: str
    seconds: float
    stored: frozenset = frozenset()

    def at(self, width: float, temperature: float) -> SaddlePoint:
        """The solution at (N, T), which must be on the grid."""
        key = (float(width), float(temperature))
        if key not in self.solutions:
            raise KeyError(f"(width, temperature) = {key} is not on the grid widths {self.widths} × "
                           f"temperatures {self.temperatures}")
        return self.solutions[key]

    def order_parameter(self, width: float, temperature: float) -> np.ndarray:
        """U = U_1 at (N, T)."""
        return self.at(width, temperature).order_parameter

    @property
    def iterations(self) -> int:
        """Trust-region Newton iterations over the whole grid."""
        return sum(s.iterations for s in self.solutions.values())


def _closest_start(action: Action, candidates: list) -> list | None:
    """Of the solved neighbours' factors and the GP point (None), the one where the saddle-point equations'
    residual max |∂(S/n)/∂U| is smallest: a neighbour is usually closer, but not always (a trust-region
    solve from the GP point takes 2–5 Newton steps, and a far neighbour can take more)."""
    best, best_residual = None, action.gradient_norm(action.parametrisation.theta(gp_start(action.config)))
    for factors in candidates:
        residual = action.gradient_norm(action.parametrisation.theta(factors))
        if residual < best_residual:
            best, best_residual = factors, residual
    return best


def _grid(name: str, values) -> tuple[float, ...]:
    if isinstance(values, (str, bytes)) or np.ndim(values) != 1 or len(values) == 0:
        raise ValueError(f"{name} must be a non-empty sequence of positive numbers, got {values!r}"[:300])
    out = tuple(arguments.positive(f"{name}[{k}]", v) for k, v in enumerate(values))
    return tuple(dict.fromkeys(out))


def saddle_points(
    X,
    y,
    *,
    heads: Sequence[int],
    widths: Sequence[float],
    temperatures: Sequence[float],
    prior_var=1.0,
    space: str = "auto",
    tolerance: float = 1e-9,
    store: SolutionStore | None = None,
    progress: Callable[[str], None] | None = None,
    backend=None,
) -> SaddlePointSweep:
    """The saddle point at every (N, T) of ``widths`` × ``temperatures`` (equal widths n_0 = … = n_L = N),
    from the path features X (P, N0, 𝓗) and labels y, by continuation (see the module docstring).

    Raises :class:`.saddle_point.SaddlePointError` for the first grid point whose solve fails. The P-sized work
    runs on ``backend`` (numpy by default), the Newton steps on the host.
    """
    widths, temperatures = _grid("widths", widths), _grid("temperatures", temperatures)
    tolerance = arguments.positive("tolerance", tolerance)
    if store is not None and not isinstance(store, SolutionStore):
        raise TypeError(f"store must be a SolutionStore or None, got {type(store).__name__}")
    t0 = time.perf_counter()
    base = energy_for(X=X, y=y, temperature=temperatures[0], space=space, backend=backend)
    chosen = "feature" if isinstance(base, FeatureSpaceEnergy) else "kernel"
    features = fingerprint(X, y) if store is not None else ""
    solutions: dict = {}
    stored = set()
    by_width = sorted(widths, reverse=True)
    by_temperature = sorted(temperatures, reverse=True)
    with blas.threads(1):  # as inside every solve (numerics.blas); the start's residuals too
        for t_index, T in enumerate(by_temperature):
            energy = base.at_temperature(T)
            for n_index, N in enumerate(by_width):
                config = ActionConfig.build(heads, N, T, prior_var)
                if t_index == 0 and n_index == 0:
                    _check_paths(config, base.paths, "X.shape[2]")
                action = Action(config, energy)
                start = store.get(features, heads, N, T, tolerance) if store is not None else None
                if start is not None:
                    stored.add((N, T))
                    factors = _start_factors(start[0], config)
                else:
                    neighbours = [solutions[key].order_parameters for key in
                                  ((by_width[n_index - 1], T) if n_index else None,
                                   (N, by_temperature[t_index - 1]) if t_index else None) if key is not None]
                    factors = _closest_start(action, [_start_factors(U, config) for U in neighbours])
                solution = solve(action, tolerance=tolerance, start=factors, space=chosen)
                if store is not None and (N, T) not in stored:
                    store.put(features, heads, N, T, tolerance, solution.order_parameters, solution.seconds)
                solutions[(N, T)] = solution
                if progress is not None:
                    progress(f"N = {N:g}, T = {T:g}: {solution.iterations} Newton iterations "
                             f"({solution.seconds:.2f} s{', from the store' if (N, T) in stored else ''})")
    return SaddlePointSweep(widths, temperatures, solutions, chosen, time.perf_counter() - t0, frozenset(stored))
