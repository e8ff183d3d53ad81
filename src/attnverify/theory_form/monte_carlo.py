"""The Monte Carlo claim of a :class:`~attnverify.theory_form.Theory`: E[draws] = expected, sized and compared.

The expected value carries the round-off scale of the derived terms it used (:data:`~.derived.SCALES`); the draws
are taken until 5 SE resolve the asked resolution (:func:`~attnverify.numerics.sized.sized_mean`) and compared
within 5 SE and that round-off (:func:`~attnverify.checks.evidence.within_error`); :func:`sweep` draws the claim's
theory-vs-simulation figure along one parameter.
"""

from __future__ import annotations

import inspect
import math
from typing import Callable

import numpy as np

from ..checks.evidence import Evidence, within_error
from .derived import SCALES
from .figures import TheoryVsSimulation


def simulator(function: Callable, names: tuple[str, ...]) -> Callable:
    parameters = list(inspect.signature(function).parameters)
    if parameters[:2] != ["rng", "n"] or sorted(parameters[2:]) != sorted(names):
        raise TypeError(f"monte_carlo {function.__name__} must take (rng, n, {', '.join(names)}): n draws for the "
                        f"parameters; it takes ({', '.join(parameters)})")
    return function


def figure_axis(figure: dict, names: tuple[str, ...], what: str) -> str:
    if not isinstance(figure, dict) or sorted(figure) != sorted(names):
        raise ValueError(f"figure of {what} must give every parameter ({', '.join(names)}): one as an array (the "
                         f"axis), the rest as numbers; got {figure!r}")
    axes = [n for n, v in figure.items() if np.ndim(v) == 1]
    if len(axes) != 1 or len(figure[axes[0]]) < 2:
        raise ValueError(f"figure of {what}: exactly one parameter must be an array of ≥ 2 values (the axis), "
                         f"got {axes or 'none'}")
    return axes[0]


def expected_value(theory_side: Callable, p: dict, ctx) -> tuple[float, float | None]:
    """``expected(**p)`` and the round-off scale the derivations' terms carry into it (None when it used none):
    the largest of each evaluator's term scale, carried through the factor between its value and the result,
    and never above |result| where the evaluator's value is below its own round-off."""
    from ..derivations.rounded import carried_scale

    token = SCALES.set([])
    try:
        raw = theory_side(p, ctx)
        carried = carried_scale(raw)
        value = float(raw)
        used = SCALES.get()
    finally:
        SCALES.reset(token)
    if carried is not None:  # a generated value carried its terms' size through the user's arithmetic
        return value, float(np.max(carried))
    if not used:
        return value, None
    scales = []
    for inner, scale in used:
        inner, scale = float(np.max(np.abs(inner))), float(np.max(np.abs(scale)))
        scales.append(scale * max(1.0, abs(value) / max(inner, scale, np.finfo(float).tiny)))
    return value, max(scales)


def size_of(value: float, scale: float | None, bounds: tuple | None = None) -> float:
    """What a relative resolution is relative to: the size of the expected value's terms (|expected| itself unless
    they cancel, as sin θ + (π − θ) cos θ does at θ = π, where a fraction of |expected| would ask for ever more
    draws), and never more than the largest magnitude the quantity can take (its stated ``bounds``): an
    ill-conditioned closed form (arcsin near ±1) has terms far larger than the quantity itself."""
    size = max(abs(value), scale or 0.0)
    if bounds is not None and all(math.isfinite(b) for b in bounds):
        size = min(size, max(abs(bounds[0]), abs(bounds[1])))
    return size


def sized(theory_side, simulate, p, ctx, resolution, relative, budget, bounds=None):
    """The expected value at ``p``, its terms' round-off scale, and the Monte Carlo mean drawn until 5 SE resolve
    ``resolution`` + ``relative``·(the size of the terms) or ``budget`` draws are spent."""
    from ..numerics.sized import sized_mean

    expected, scale = expected_value(theory_side, p, ctx)
    estimate = sized_mean(lambda rng, n: simulate(rng, n, **p), ctx.rng, resolution=resolution,
                          relative_resolution=relative, reference=size_of(expected, scale, bounds) if relative else None,
                          budget=budget, bounds=bounds)
    return expected, scale, estimate


def compare(theory_side, simulate, p, ctx, resolution, relative, budget, bounds=None) -> Evidence:
    expected, scale, estimate = sized(theory_side, simulate, p, ctx, resolution, relative, budget, bounds)
    return within_error(expected, estimate, scale=scale, figures=estimate.sizing())


def sweep(theory_side, simulate, figure, axis, resolution, relative, budget, xlabel, ylabel, statement,
           rng, bounds=None) -> TheoryVsSimulation:
    """The theory-vs-simulation figure of a Monte Carlo claim along its axis (the others fixed)."""
    from types import SimpleNamespace

    xs = np.asarray(figure[axis], dtype=float)
    fixed = {n: v for n, v in figure.items() if n != axis}
    ctx = SimpleNamespace(rng=rng)
    integer = isinstance(figure[axis][0], (int, np.integer))

    def at(x) -> dict:
        return {**fixed, axis: int(x) if integer else float(x)}

    estimates = [sized(theory_side, simulate, at(x), ctx, resolution, relative, budget, bounds)[2] for x in xs]
    theory_x = xs if integer else np.linspace(xs.min(), xs.max(), 100)
    theory = [float(theory_side(at(x), ctx)) for x in theory_x]
    draws = [e.samples for e in estimates]
    size = (f"{resolution:g}" if resolution else "") + (" + " if resolution and relative else "") + \
        (f"{relative:.0%} of the theory" if relative else "")
    fixed_text = ", ".join(f"{n} = {v:g}" for n, v in fixed.items())
    return TheoryVsSimulation(
        x=xs, estimates=estimates, theory=theory, theory_x=theory_x, xlabel=xlabel, ylabel=ylabel,
        caption=f"{statement} Line: theory; points: Monte Carlo ({fixed_text}), drawn until 5 SE ≤ {size} "
                f"({min(draws):,}–{max(draws):,} draws per point).")
