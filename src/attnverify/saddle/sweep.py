r"""Saddle points of a declared action over a grid of widths $N$ and temperatures $T$, by continuation.

The data enter the action only through the energy, whose precomputation (the Gram matrix $\Gamma = X^\top X$ of the
feature space, or the checked kernels) is done once for the whole grid; each temperature shares it
(``energy.at_temperature``). The grid is solved from the widest width and the highest temperature down, toward
the GP point ($N \to \infty$, the entropy's minimum), where the first solve starts; every later solve starts from
whichever of its solved neighbours (the next wider width at the same $T$, the same width at the next higher $T$) and
the GP point has the smallest residual of the saddle-point equations, so a trust-region Newton solve takes a few
steps. Every returned point passed the solver's own tests ($\text{residual} \le \text{tolerance}$, Hessian positive
definite).

With a [`SolutionStore`][attnverify.saddle.store.SolutionStore], a stored solution is the start of its own solve: it is
re-verified (no Newton step and one exact Hessian when it still solves the equations) instead of trusted, and every
new solution is filed as soon as it is found, so an interrupted sweep resumes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from ..base import arguments, blas
from .action import NumericAction
from .declaration import SaddlePointAction
from .solve import Solution, data_energy, gp_point, scaled_widths, solve_energy
from .store import SolutionStore, fingerprint


@dataclass(frozen=True)
class Sweep:
    r"""Solutions on the grid ``widths`` $\times$ ``temperatures`` (as given, duplicates dropped), keyed by $(N, T)$;
    ``stored`` holds the keys whose solve started from the store; ``space`` is the energy's ("feature" or
    "kernel"); ``seconds`` the whole sweep's time."""

    widths: tuple[float, ...]
    temperatures: tuple[float, ...]
    solutions: dict
    space: str
    seconds: float
    stored: frozenset = frozenset()

    def at(self, width: float, temperature: float) -> Solution:
        r"""The solution at $(N, T)$, which must be on the grid."""
        key = (float(width), float(temperature))
        if key not in self.solutions:
            raise KeyError(f"(width, temperature) = {key} is not on the grid widths {self.widths} × "
                           f"temperatures {self.temperatures}")
        return self.solutions[key]

    def __repr__(self) -> str:
        return (f"Sweep({len(self.widths)} widths × {len(self.temperatures)} temperatures, {len(self.solutions)} "
                f"solutions, {self.space} space, {len(self.stored)} from the store, {self.seconds:.3g} s; .at(N, T) "
                "for one)")

    @property
    def iterations(self) -> int:
        """Trust-region Newton iterations over the whole grid."""
        return sum(s.iterations for s in self.solutions.values())


MOST_GRID_POINTS = 10**6
"""The most grid points (widths × temperatures) one sweep may ask for, each a trust-region Newton solve: 1.5 ms
measured on one core for the smallest action (one layer, two paths, P = 30), 0.2–0.8 s at the paper's sizes (16
paths, P = 600), so 10⁶ points take 25 minutes at the least and days at those sizes, and keep 2.4 GB of solutions or
more."""


def _length(name: str, values) -> int:
    """The length of a grid axis: a non-empty sequence (its entries are checked by `_grid`)."""
    try:  # len first: np.ndim of a range of 10¹² would build its array
        length = len(values)
    except TypeError:
        length = 0
    if isinstance(values, (str, bytes)) or length == 0 or getattr(values, "ndim", 1) != 1:
        raise ValueError(f"{name} must be a non-empty sequence of positive numbers, got {values!r}"[:300])
    return length


def _grid(name: str, values) -> tuple[float, ...]:
    out = tuple(arguments.positive(f"{name}[{k}]", v) for k, v in enumerate(values))
    return tuple(dict.fromkeys(out))


def _closest_start(action: NumericAction, gp_entries: np.ndarray, candidates: list) -> np.ndarray:
    """Of the solved neighbours' entries and the GP point's, the one where the residual max |∂(S/N)/∂e| is
    smallest (a neighbour is usually closer, but a far one can take more Newton steps than the GP point)."""
    best, best_residual = gp_entries, np.inf
    for entries in [gp_entries] + candidates:
        try:
            residual = action.residual(action.parametrisation.theta(entries))
        except (np.linalg.LinAlgError, ValueError):
            continue
        if residual < best_residual:
            best, best_residual = entries, residual
    return best


def sweep(declaration: SaddlePointAction, data: Mapping[str, Any], *, widths, temperatures,
          tolerance: float = 1e-9, store: SolutionStore | None = None, space: str = "auto", backend=None,
          progress: Callable[[str], None] | None = None, **parameters) -> Sweep:
    r"""The minimum of the declared action at every $(N, T)$ of ``widths`` $\times$ ``temperatures`` for ``data`` (see
    [`data_energy`][attnverify.saddle.solve.data_energy]), the other parameters given by name. $N$ sets the largest
    width; an action with one width per layer gives its widths by name too, and each grid point scales them all by
    $N/\max n$ (equal widths when they are given equal). Raises
    [`SaddlePointError`][attnverify.saddle.solve.SaddlePointError] for the first grid point whose solve fails. A grid
    of more than `MOST_GRID_POINTS` points is refused before any solve."""
    if not isinstance(declaration, SaddlePointAction):
        raise TypeError(f"declaration must be a SaddlePointAction, got {type(declaration).__name__}")
    n_widths, n_temperatures = _length("widths", widths), _length("temperatures", temperatures)
    longer = "widths" if n_widths >= n_temperatures else "temperatures"
    arguments.at_most_work(f"len({longer})", max(n_widths, n_temperatures), MOST_GRID_POINTS,
                           f"grid points (len(widths) × len(temperatures) = {n_widths:,} × {n_temperatures:,}, a "
                           "saddle-point solve each)", work=n_widths * n_temperatures)
    widths, temperatures = _grid("widths", widths), _grid("temperatures", temperatures)
    tolerance = arguments.positive("tolerance", tolerance)
    if store is not None and not isinstance(store, SolutionStore):
        raise TypeError(f"store must be a SolutionStore or None, got {type(store).__name__}")
    arguments.function("progress", progress, "a function of one line of text", optional=True)
    given = {w.name: parameters.get(w.name, 1.0) for w in declaration.widths}
    values = declaration.parameter_values({**parameters, **given})
    t0 = time.perf_counter()
    base = data_energy(data, temperatures[0], space=space, backend=backend)
    chosen = "feature" if type(base).__name__ == "FeatureSpaceEnergy" else "kernel"
    features = fingerprint(data.get("X", data.get("C")), data["y"]) if store is not None else ""
    solutions: dict = {}
    stored = set()
    by_width, by_temperature = sorted(widths, reverse=True), sorted(temperatures, reverse=True)
    names = declaration.parameter_names
    with blas.threads(1):
        for t_index, T in enumerate(by_temperature):
            energy = base.at_temperature(T)
            for n_index, N in enumerate(by_width):
                here = scaled_widths(declaration, values, N)
                kept = store.get(features, declaration, here, T, tolerance) if store is not None else None
                if kept is not None:
                    stored.add((N, T))
                    start = declaration.join(kept[0])
                else:
                    gp = gp_point(declaration, **dict(zip(names, here))).entries
                    neighbours = [solutions[key].entries for key in
                                  ((by_width[n_index - 1], T) if n_index else None,
                                   (N, by_temperature[t_index - 1]) if t_index else None) if key is not None]
                    start = _closest_start(NumericAction(declaration, energy, here), gp, neighbours)
                solution = solve_energy(declaration, energy, here, temperature=T, start=dict(
                    declaration.split(start)), tolerance=tolerance)
                if store is not None and (N, T) not in stored:
                    store.put(features, declaration, here, T, tolerance, solution.order_parameters, solution.seconds)
                solutions[(N, T)] = solution
                if progress is not None:
                    progress(f"N = {N:g}, T = {T:g}: {solution.iterations} Newton iterations "
                             f"({solution.seconds:.2f} s{', from the store' if (N, T) in stored else ''})")
    return Sweep(widths, temperatures, solutions, chosen, time.perf_counter() - t0, frozenset(stored))
