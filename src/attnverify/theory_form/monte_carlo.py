"""The Monte Carlo claim of a [`Theory`][attnverify.theory_form.Theory]: E[draws] = expected, sized and compared.

The expected value carries the round-off scale of the derived terms it used (`SCALES`); the draws
are taken until 5 SE resolve the asked resolution ([`sized_mean`][attnverify.numerics.sized.sized_mean]) and compared
within 5 SE and that round-off ([`within_error`][attnverify.checks.comparisons.within_error]);
[`sweep`][attnverify.saddle.sweep.sweep] draws the claim's theory-vs-simulation figure along one parameter.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from typing import Any, Callable

import numpy as np

from ..checks.comparisons import within_error
from ..checks.evidence import Evidence
from ..execution.tasks import progress as run_progress
from .derived import SCALES
from .figures import TheoryVsSimulation


def simulator(function: Callable, names: tuple[str, ...]) -> Callable:
    """``prepare(p, ctx, components) -> (draw(rng, size), generator)`` for ``function(rng, count, **p)``: ``count``
    draws at the parameters ``p`` (shape (count,), or (count, components) for a vector of means) from numpy's
    ``ctx.rng``, or, when ``function`` also takes ``backend``, on the run's backend (``backend=ctx.backend``) from a
    Generator of it (``ctx.backend_rng()``). The count is the argument after ``rng``, passed by position whatever its
    name, so that every other name (``n``, ``d``, ``L``) is free for the theory's parameters."""
    signature = inspect.signature(function).parameters
    parameters = list(signature)
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    named = len(parameters) > 1 and parameters[1] not in (*names, "backend")
    count = parameters[1] if named else "n" if "n" not in names else "draws"
    drawn = [n for n in parameters[2:] if n != "backend"]
    if (parameters[:1] != ["rng"] or not named or any(signature[n].kind not in positional for n in parameters[:2])
            or sorted(drawn) != sorted(names)):
        raise TypeError(f"monte_carlo {function.__name__} must take (rng, {', '.join((count, *names))}): rng, the "
                        f"number of draws (the argument after rng, by position, any name), then the parameters (and "
                        f"backend, to draw on the run's backend); it takes ({', '.join(parameters)})")
    on_backend = "backend" in parameters[2:]

    def quantities(draws, size: int, components: int | None):
        shape = getattr(draws, "shape", None)
        shape = np.shape(draws) if shape is None else tuple(shape)
        wanted = (size,) if components is None else (size, components)
        if shape != wanted:
            what = ("of one quantity, shape ({count},)" if components is None else
                    f"of {components} quantities (one per entry of expected), shape ({count}, {components})")
            raise ValueError(f"monte_carlo {function.__name__} must return its draws {what.format(count=count)} = "
                             f"{wanted}, to compare their mean with expected; got shape {shape}")
        return draws

    def prepare(p: dict, ctx, components: int | None = None) -> tuple[Callable, object]:
        extra = {"backend": ctx.backend} if on_backend else {}

        def draw(rng, size):
            return quantities(function(rng, size, **extra, **p), size, components)
        draw.__name__ = function.__name__  # the draws' refusals name the theory's function
        return draw, ctx.backend_rng() if on_backend else ctx.rng

    return prepare


def finite_expected(expected: Callable, call: Callable) -> Callable:
    """``call`` (the theory side ``(p, ctx) -> expected(**p)``), refusing a value that is not a finite number, or a
    vector of them (one per component of the draws), in one line naming ``expected`` and the parameters (an
    overflow at the drawn values, say)."""
    from ..checks.story import format_parameters

    def theory_side(p: dict, ctx):
        value = call(p, ctx)
        named = getattr(expected, "__name__", "<lambda>")
        said = f"expected{'' if named == '<lambda>' else ' ' + named}({format_parameters(p)})"
        # text, booleans and complex numbers convert to float (or to its real part) without meaning one
        if isinstance(value, (str, bytes)) or np.asarray(value).dtype.kind in "USbc":
            raise TypeError(f"{said} returned {value!r} ({type(value).__name__}): the expected value must be a "
                            "number or a vector of numbers"[:300])
        if np.ndim(value) == 0:
            number = float(value)
            finite = math.isfinite(number)
        else:
            number = np.asarray(value, dtype=float)
            if number.ndim != 1 or number.size == 0:
                raise ValueError(f"{said} has shape {number.shape}: the expected value must be a number or a vector of "
                                 "numbers (one per column of the draws)")
            finite = bool(np.all(np.isfinite(number)))
        if not finite:
            raise ValueError(f"{said} = {number}: the expected value must be a finite number"
                             f"{'' if np.ndim(number) == 0 else ' in every component'} (narrow the parameters' "
                             "strategies where it overflows)")
        return value

    return theory_side


def per_profile(value, profile: str):
    """``value[profile]`` for an option given per profile (``{"quick": …, "thorough": …}``), else ``value``."""
    return value[profile] if isinstance(value, dict) else value


@dataclasses.dataclass(frozen=True)
class Sizing:
    """The options of a Monte Carlo claim that size its draws and compare their mean, as `Theory.monte_carlo`
    checked them: each a value, one per profile, or (resolution, bias) a function of the parameters; ``components``
    names the entries of a vector of means."""

    resolution: Any = None
    relative: Any = None
    budget: Any = 1_000_000
    bounds: tuple | None = None
    bias: Any = None
    chunk: Any = None
    components: tuple[str, ...] | None = None


def checked_option(label: str, value, profiles: tuple[str, ...], *, function: bool = False, integer: bool = False,
                   per_component: bool = False, zero: bool = False):
    """``value`` if it is a positive finite number (≥ 0 with ``zero``; an int ≥ 1 with ``integer``; a function of the
    parameters too, with ``function``; a tuple or list of such numbers, one per component of a vector of means, with
    ``per_component``), or a dict giving one for each of ``profiles``; else a ValueError naming ``label``."""
    if value is None:
        return None
    values = value.values() if isinstance(value, dict) else [value]
    if isinstance(value, dict) and sorted(value) != sorted(profiles):
        raise ValueError(f"{label} per profile must give exactly {', '.join(profiles)}, got {sorted(value)}")
    for v in values:
        if function and callable(v):
            continue
        numbers = list(v) if per_component and isinstance(v, (tuple, list)) and v else [v]
        for number in numbers:
            kind = isinstance(number, (int, np.integer)) if integer else isinstance(number, (int, float, np.integer,
                                                                                             np.floating))
            if (isinstance(number, bool) or not kind or not math.isfinite(number) or number < 0
                    or (number == 0 and not zero)):
                raise ValueError(f"{label} must be a {'non-negative' if zero else 'positive'} finite "
                                 f"{'int' if integer else 'number'}{' or a function of the parameters' if function else ''}"
                                 f"{' (or a tuple of them, one per component)' if per_component else ''} (or one per "
                                 f"profile: {{'quick': …, 'thorough': …}}), got {v!r}")
    return value


def figure_axis(figure: dict, names: tuple[str, ...], what: str) -> str:
    if not isinstance(figure, dict) or sorted(figure) != sorted(names):
        from ..base.arguments import name_mismatch

        which = name_mismatch(list(figure), names) if isinstance(figure, dict) else ""
        raise ValueError(f"figure of {what} must give every parameter ({', '.join(names)}): one as an array (the "
                         f"axis), the rest as numbers; got {figure!r}"[:300] + which)
    axes = [n for n, v in figure.items() if np.ndim(v) == 1]
    if len(axes) != 1 or len(figure[axes[0]]) < 2:
        raise ValueError(f"figure of {what}: exactly one parameter must be an array of ≥ 2 values (the axis), "
                         f"got {axes or 'none'}")
    return axes[0]


def expected_value(theory_side: Callable, p: dict, ctx, *, relative: bool) -> tuple[float, float | None, float | None]:
    """``expected(**p)``, the round-off scale the derivations' terms carry into it, and the size of those terms a
    relative resolution is measured against (both None when it used no derived function; the size None too
    without ``relative``, which spares the term sizes' evaluation).

    The scale is the one the value carries ([`Rounded`][attnverify.derivations.rounded.Rounded], through the user's
    arithmetic), else each evaluator's, carried through the factor between its value and the result, and never
    above |result| where the evaluator's value is below its own round-off. The term size is that scale with the
    functions' amplification of their inputs' rounding taken out, by the ratio of the evaluators' term sizes
    T to their scales M (`attnverify.derivations.rounding`; exact for a multiple of one evaluator's value, the
    evaluators' ratios pooled for several), and never below |result|."""
    from ..derivations.rounded import carried_scale

    token = SCALES.set([])
    try:
        raw = theory_side(p, ctx)
        carried = carried_scale(raw)
        value = float(raw) if np.ndim(raw) == 0 else np.asarray(raw, dtype=float)
        used = SCALES.get()
    finally:
        SCALES.reset(token)
    if relative and np.ndim(value):
        raise ValueError(f"relative= sizes one quantity by its terms; expected gives {np.size(value)} values: state "
                         "resolution= for a vector of means (a number, or one per component)")
    if not used and carried is None:
        return value, None, None
    tiny = np.finfo(float).tiny
    largest = [(float(np.max(np.abs(inner))), float(np.max(np.abs(m))), terms) for inner, m, terms in used]
    if carried is not None:  # a generated value carried its terms' size through the user's arithmetic
        scale = float(np.max(carried))
    else:  # one scale for every component of a vector: its largest
        scale = max(m * max(1.0, float(np.max(np.abs(value))) / max(inner, m, tiny)) for inner, m, _ in largest)
    if not relative:
        return value, scale, None
    sizes = sum(float(np.max(np.abs(terms()))) for _, _, terms in largest)
    inflation = sum(m for _, m, _ in largest) / max(sizes, tiny) if largest else 1.0
    return value, scale, max(abs(value), scale / max(inflation, 1.0))


def size_of(value: float, terms: float | None, bounds: tuple | None = None) -> float:
    """What a relative resolution is relative to: the size of the expected value's terms (|expected| itself unless
    they cancel, as sin θ + (π − θ) cos θ does at θ = π, where a fraction of |expected| would ask for ever more
    draws), and never more than the largest magnitude the quantity can take (its stated ``bounds``): an
    ill-conditioned closed form (arcsin near ±1) has terms far larger than the quantity itself."""
    size = max(abs(value), terms or 0.0)
    if bounds is not None and all(math.isfinite(b) for b in bounds):
        size = min(size, max(abs(bounds[0]), abs(bounds[1])))
    return size


def bias_at(bias, p: dict) -> float:
    """The stated bias budget at the parameters ``p`` (0 where none is stated): a number, or a function of the
    parameters whose value must be a finite number ≥ 0."""
    from ..base import arguments
    from ..checks.story import format_parameters

    if bias is None:
        return 0.0
    value = bias(**p) if callable(bias) else bias
    if np.ndim(value) == 0:
        return arguments.nonnegative(f"the bias budget bias({format_parameters(p)})", value)
    return np.array([arguments.nonnegative(f"the bias budget bias({format_parameters(p)})[{j}]", v)
                     for j, v in enumerate(np.ravel(value))])


def sized(theory_side, simulate, p, ctx, sizing: Sizing):
    """The expected value at ``p``, its terms' round-off scale, and the Monte Carlo mean drawn until 5 SE resolve
    ``resolution`` + ``relative``·(the size of its terms, `size_of`) or ``budget`` draws are spent (each option
    per ``ctx.profile`` where given per profile; ``resolution`` and ``bias`` functions of the parameters where given
    one). The stated ``bias`` budget rides on top: the estimate carries it (``bias_budget``), and the draws resolve
    the resolution itself, not what the bias leaves of it. ``chunk``: the most draws per call of the draw (memory).
    A vector of means is checked against ``components`` before anything is drawn."""
    from ..numerics.sized import sized_mean

    resolution, relative, budget, bias, chunk = (per_profile(v, ctx.profile) for v in (
        sizing.resolution, sizing.relative, sizing.budget, sizing.bias, sizing.chunk))
    bounds = sizing.bounds
    if callable(resolution):
        resolution = resolution(**p)
    if resolution is not None:  # a number, or one per component of a vector of means
        resolution = float(resolution) if np.ndim(resolution) == 0 else np.asarray(resolution, dtype=float)
    allowance = bias_at(bias, p)
    expected, scale, terms = expected_value(theory_side, p, ctx, relative=bool(relative))
    if np.ndim(expected) and sizing.components is not None and len(sizing.components) != np.size(expected):
        raise ValueError(f"components names {len(sizing.components)} entries ({', '.join(sizing.components)}), "
                         f"expected gives {np.size(expected)}")
    draw, generator = simulate(p, ctx, None if np.ndim(expected) == 0 else np.size(expected))
    reference = size_of(expected, terms, bounds) if relative else None
    if relative and reference == 0 and not resolution:
        from ..checks.story import format_parameters

        raise ValueError(f"relative={relative:g} of expected({format_parameters(p)}) = {expected:g} is 0, which no "
                         "sample resolves: state an absolute resolution= as well (the smallest discrepancy that "
                         "matters where the expected value vanishes)")
    estimate = sized_mean(draw, generator, resolution=(0.0 if resolution is None else resolution) + allowance,
                          relative_resolution=relative,
                          reference=reference, budget=budget, bounds=bounds, bias_budget=allowance,
                          progress=run_progress, **({} if chunk is None else {"chunk": chunk}))
    return expected, scale, estimate, reference


def compare(theory_side, simulate, p, ctx, sizing: Sizing) -> Evidence:
    """The example's evidence: ``within_error`` of the expected value and the sized mean, marked vacuous where a
    relative resolution, widened to the size of terms that cancel, exceeds both sides (`vacuity`); for a vector of
    means, each component's, the one closest to failing deciding (`worst_case`)."""
    expected, scale, estimate, reference = sized(theory_side, simulate, p, ctx, sizing)
    if np.ndim(expected):
        from ..checks.cases import worst_case

        labels = sizing.components or tuple(f"component {j}" for j in range(np.size(expected)))
        return worst_case([(label, within_error(float(e), s, scale=scale, bias_budget=s.bias_budget,
                                                figures=s.sizing()))
                           for label, e, s in zip(labels, expected, estimate)])
    evidence = within_error(expected, estimate, scale=scale, bias_budget=estimate.bias_budget,
                            figures=estimate.sizing())
    if not evidence.holds or reference is None or per_profile(sizing.resolution, ctx.profile):
        return evidence
    why = vacuity(expected, estimate.mean, reference, per_profile(sizing.relative, ctx.profile))
    return dataclasses.replace(evidence, vacuous=why) if why else evidence


def vacuity(expected: float, observed: float, reference: float, relative: float) -> str:
    """Why a relative comparison cannot tell the expected value from 0 (nor from twice itself), or "": where the
    expected value's terms cancel, the resolution is a fraction of their size (`size_of`), and where that
    exceeds both sides, any value as small would hold. The arc-cosine kernel at θ = π is such a point among
    others; 2(1 − erf(b)) against E[erfc(b + aZ)] for b ∈ [6.5, 8] has only such points, and must not hold."""
    resolved = relative * reference
    if not reference > abs(expected) or not max(abs(expected), abs(observed)) < resolved:
        return ""
    return (f"the expected value's terms (size {reference:.3g}) cancel to {expected:.3g}, and {relative:g} of their "
            f"size ({resolved:.3g}) exceeds both sides: this example cannot tell the value from 0 (write the expected "
            "value without the cancellation, or state an absolute resolution=)")


THEORY_POINTS = 200
"""The most points the theory curve of an integer axis is evaluated at (every integer between the ends where they are
fewer, else as many spread evenly in log, the sampled points always among them)."""


def _integer_curve(xs: np.ndarray) -> np.ndarray:
    """Integers along an integer axis for the theory's curve: every one from the least to the largest sampled where
    they are at most `THEORY_POINTS`, else `THEORY_POINTS` spread evenly in log (evenly where the axis reaches 0),
    with the sampled ones; the theory is then drawn as a curve, not kinked at the samples."""
    low, high = int(xs.min()), int(xs.max())
    if high - low < THEORY_POINTS:
        return np.arange(low, high + 1, dtype=float)
    spread = np.geomspace(low, high, THEORY_POINTS) if low > 0 else np.linspace(low, high, THEORY_POINTS)
    return np.union1d(np.round(spread), xs)


def sweep(theory_side, simulate, figure, axis, sizing: Sizing, xlabel, ylabel, statement, rng) -> TheoryVsSimulation:
    """The theory-vs-simulation figure of a Monte Carlo claim along its axis (the others fixed)."""
    from types import SimpleNamespace

    from ..base.backend import get_backend

    xs = np.asarray(figure[axis], dtype=float)
    fixed = {n: v for n, v in figure.items() if n != axis}
    ctx = SimpleNamespace(rng=rng, profile="quick", backend=get_backend("numpy"), backend_rng=lambda: rng)
    resolution, relative = per_profile(sizing.resolution, "quick"), per_profile(sizing.relative, "quick")
    integer = isinstance(figure[axis][0], (int, np.integer))

    def at(x) -> dict:
        return {**fixed, axis: int(x) if integer else float(x)}

    first = theory_side(at(xs[0]), ctx)
    if np.ndim(first):  # refused before anything is drawn
        raise ValueError(f"figure= draws one quantity against {axis}; expected gives a vector of {np.size(first)}: "
                         "leave figure= out, or make a claim of one component")
    estimates = [sized(theory_side, simulate, at(x), ctx, sizing)[2] for x in xs]
    theory_x = _integer_curve(xs) if integer else np.linspace(xs.min(), xs.max(), 100)
    theory = [float(theory_side(at(x), ctx)) for x in theory_x]
    draws = [e.samples for e in estimates]
    size = ("a resolution of the parameters" if callable(resolution) else f"{resolution:g}" if resolution else "") + (" + " if resolution and relative else "") + \
        (f"{relative:.0%} of the theory's terms" if relative else "")
    fixed_text = f" ({', '.join(f'{n} = {v:g}' for n, v in fixed.items())})" if fixed else ""
    return TheoryVsSimulation(
        x=xs, estimates=estimates, theory=theory, theory_x=theory_x, xlabel=xlabel, ylabel=ylabel,
        caption=f"{statement} Line: theory; points: Monte Carlo{fixed_text}, drawn until 5 SE ≤ {size} "
                f"({min(draws):,}–{max(draws):,} draws per point)."
                + (" The verdict also allows the stated bias budget, which the ± 2 SE bars leave out." if sizing.bias
                   else ""))
