"""The comparisons a claim's check returns its evidence by: a Monte Carlo mean within its error of a theory
(`within_error`), a mean beyond a bound (`exceeds`), two computed values close (`close`), one value at most another
(`at_most`). Each builds the tolerance from its parts (z standard errors, a bias budget, rtol and atol, the round-off
floor of `.roundoff`), says what would decide an undecided comparison (``needed``), and returns an `Evidence`.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from ..base.backend import to_numpy
from ..numerics.sized import draws_needed
from ..numerics.statistics import TAIL_DRAWS, Estimate, unseen_probability
from .evidence import DEFAULT_Z, Evidence, EvidenceError, positive_count, real_number
from .roundoff import floor_note, floor_vacuity, roundoff_floor, terms_scale


def _unit(value: Any) -> str:
    """What a comparison's samples are ("draws", "seeds"): the word its count of them is told in."""
    if not isinstance(value, str) or not value:
        raise EvidenceError(f"unit must be a non-empty string (what the samples are: 'draws', 'seeds'), got {value!r}")
    return value


def _tolerance_part(name: str, value: Any) -> float:
    """A finite, non-negative number that goes into a tolerance (rtol, atol, z, a bias budget)."""
    x = real_number(name, value, optional=False)
    if x < 0:
        raise EvidenceError(f"{name} must be a finite number ≥ 0, got {value!r}")
    return x


MAX_Z = 1000.0
"""The most standard errors a tolerance may count: a Gaussian tail beyond it is below 10⁻²⁰⁰⁰⁰⁰, and a larger z
only makes every comparison hold."""


def _claim_z(z: Any) -> float:
    """The number of standard errors in a claim's tolerance: finite, in [5, `MAX_Z`]."""
    z = _tolerance_part("z", z)
    if not 5 <= z <= MAX_Z:
        raise EvidenceError(f"z must be a finite number in [5, {MAX_Z:g}] for a claim's tolerance, got {z}")
    return z


def draws_to_resolve(samples: int, spread: float, margin: float) -> int | None:
    """Draws at which ``spread`` (z·SE at ``samples`` draws, shrinking as 1/√n) fits under ``margin``:
    ⌈n·(spread/margin)²⌉; None when ``margin`` ≤ 0 (no number of draws gets there)."""
    if margin <= 0:
        return None
    return max(int(samples) + 1, draws_needed(samples, spread, margin, z=1.0))


def within_error(
    theory: float,
    estimate: Estimate,
    *,
    z: float = DEFAULT_Z,
    bias_budget: float = 0.0,
    resolution: float | None = None,
    scale: float | None = None,
    note: str = "",
    figures: dict | None = None,
    conditions: Mapping[str, bool] | None = None,
) -> Evidence:
    r"""A stochastic equality $\theta = \mathbb{E}[X]$: holds when
    $\lvert\theta - \text{mean}\rvert \le z \cdot \mathrm{SE}$ + ``bias_budget`` + the round-off floor
    ([`roundoff_floor`][attnverify.checks.roundoff_floor] of $\theta$, the mean, the draws' mean magnitude and the
    terms' size: ``scale``, or what a generated $\theta$ carries).

    A larger gap refutes only where the sample can bound what it did not see:

    - every draw the same number $c$: only if no event of probability below $\ln(1/\delta)/n$
      ($\delta = \operatorname{erfc}(z/\sqrt{2})$: $14.4/n$ at $z = 5$), moving the mean at most to the far end of
      the quantity's stated range (``estimate.bounds``), could explain it; with no range stated, nothing can be
      refuted that way;
    - a spread resting on fewer than `TAIL_DRAWS` draws ($n/\text{kurtosis}$: a few
      rare draws carry it, and $z \cdot \mathrm{SE}$ is then no bound): only beyond the empirical-Bernstein bound of a
      stated range ([`bernstein`][attnverify.numerics.statistics.Estimate.bernstein], which needs no central limit
      theorem).

    Otherwise the evidence is *inconclusive*, with the draws that would decide it.

    ``resolution`` is the smallest discrepancy $\lvert\theta - \mathbb{E}[X]\rvert$ the comparison must be able to
    see (absolute; by default the estimate's own, for a sized estimate, else none is stated). Where the gap is inside
    the tolerance but the tolerance is wider than the resolution, the evidence is *inconclusive* and says how
    many draws would resolve it at the measured spread:
    $\lceil n \cdot \big(z \cdot \mathrm{SE} / (\text{resolution} - \text{bias} - \text{floor})\big)^2\rceil$."""
    z = _claim_z(z)
    if not isinstance(estimate, Estimate):
        raise TypeError(f"estimate must be an Estimate (e.g. from mean_estimate), got {type(estimate).__name__}")
    bias_budget = _tolerance_part("bias_budget", bias_budget)
    standard_error = _tolerance_part("estimate.standard_error", estimate.standard_error)
    mean = real_number("estimate.mean", estimate.mean, optional=False)
    scale = terms_scale(None if scale is None else _tolerance_part("scale", scale), theory)
    theory = real_number("theory", theory, optional=False)
    if resolution is None:
        resolution = getattr(estimate, "resolution", None)
    if resolution is not None:
        resolution = _tolerance_part("resolution", resolution)
        if resolution == 0:
            raise EvidenceError("resolution must be > 0: no finite sample resolves a discrepancy of 0")
    floor = roundoff_floor(theory, mean, getattr(estimate, "magnitude", None), scale=scale)
    half, bar = estimate.error_bar(z)
    tolerance = half + bias_budget + floor
    gap = abs(theory - mean)
    refuted = gap > tolerance or not all((conditions or {}).values())
    relation, reason, needed = "equal", "", {}
    if refuted and gap > tolerance and all((conditions or {}).values()):
        unseen = _unseen(estimate, z, gap, bias_budget + floor)
        if unseen is not None:
            refuted, relation, (reason, needed) = False, "custom", unseen
            if estimate.identical and scale is None:  # a floor at the terms' size would decide; none is known
                reason += ("; if the expected value is a generated evaluator's, pass that value itself, not float() "
                           "of it: float() drops the round-off it carries, the floor this comparison lacks")
    if not refuted and not reason and resolution is not None and tolerance > resolution:
        reason = (f"the error bar ({bar}) + bias = {tolerance:.3g} is wider than the discrepancy {resolution:.3g} "
                  "the comparison must resolve")
        draws = draws_to_resolve(estimate.samples, half, resolution - bias_budget - floor)
        if draws is None:
            reason += "; the bias budget alone exceeds it, so no number of draws decides"
        else:
            needed = {"draws": draws}
            reason += "; a larger budget of draws or a coarser resolution decides it"
    text = note or (f"|gap| = {gap:.3g}, tolerance = {bar} {half:.3g} + {bias_budget:.3g} + round-off {floor:.3g}"
                    + (f"; resolves {resolution:.3g}" if resolution is not None and not reason else ""))
    if not reason and not refuted:
        text += floor_note(gap, half + bias_budget, floor, scale)
    if estimate.identical and not reason:
        text += (f"; all {estimate.samples} samples identical (SE 0): compared up to the round-off floor "
                 f"{floor:.3g}" + ("" if scale is not None else
                                   " of the sides' own size (pass scale= when they come from larger terms that cancel)"))
    held = not refuted and not reason
    return Evidence(
        holds=held,
        theory=theory,
        observed=mean,
        tolerance=tolerance,
        standard_error=standard_error,
        # a floor below the stated resolution decides only what the claim does not ask: no vacuity then
        vacuous=floor_vacuity(gap, half + bias_budget, floor, theory, mean)
        if held and (resolution is None or floor > resolution) else "",
        note=text,
        figures={"z": z, "bias_budget": bias_budget, "roundoff_floor": floor, "samples": estimate.samples,
                 "error_bar": bar,
                 **({"roundoff_scale": float(np.max(scale))} if scale is not None else {}),
                 **({"bounds": list(estimate.bounds)} if estimate.bounds is not None else {}),
                 **({"drawn_low": estimate.low, "drawn_high": estimate.high} if estimate.low is not None else {}),
                 **({"tail_draws": estimate.tail_draws} if estimate.tail_draws is not None else {}),
                 **({"resolution": resolution, "achieved_resolution": tolerance} if resolution is not None else {}),
                 **(figures or {})},
        relation=relation,
        conditions=dict(conditions or {}),
        inconclusive=reason,
        needed=needed,
    )


def _unseen(estimate: Estimate, z: float, gap: float, allowance: float) -> tuple[str, dict] | None:
    """Why a gap beyond z·SE + ``allowance`` does not refute, where the sample cannot bound what it did not see
    (None: it refutes). Identical draws c: an event of probability p ≤ ln(1/δ)/n, unseen, moves the mean by up to
    p·D (D the distance from c to the far end of the stated range; unbounded without one). A spread resting on
    fewer than TAIL_DRAWS draws with no range stated: z·SE is no bound (with a range, the caller's error bar was
    already the empirical-Bernstein bound, which needs no central limit theorem)."""
    n = estimate.samples
    if estimate.identical:
        shift = estimate.unseen_shift(z)
        if shift + allowance < gap:
            return None
        probability = unseen_probability(n, z)
        text = (f"all {n} draws identical ({estimate.mean:.6g}): an event of probability below {probability:.3g} "
                f"(ln(1/δ)/n at {z:g} SE) may go unseen")
        if not math.isfinite(shift):
            return (text + ", and with no range stated for the quantity (bounds=) it could move the mean by any "
                    "amount: state the range, or draw until the draws differ", {})
        draws = int(math.ceil(n * shift / (gap - allowance))) + 1  # the shift falls as 1/n
        return (text + f" and move the mean by up to {shift:.3g} within the range "
                f"{list(estimate.bounds)}, more than the gap {gap:.3g}", {"draws": max(draws, n + 1)})
    if estimate.decides:  # the error bar was z·SE on a trusted spread, or the empirical-Bernstein bound
        return None
    rare = estimate.tail_draws
    draws = max(int(math.ceil(n * TAIL_DRAWS / max(rare, 1e-300))) + 1, n + 1)
    return (f"the spread rests on about {rare:.3g} of the {n} draws (n/kurtosis, below {TAIL_DRAWS}): a few rare "
            f"draws carry it, so {z:g}·SE bounds nothing; draw more, or state the quantity's range (bounds=) for a "
            "bound that holds without the central limit theorem", {"draws": draws})


def exceeds(
    estimate: Estimate,
    bound: float,
    *,
    z: float = DEFAULT_Z,
    unit: str = "draws",
    scale: float | None = None,
    note: str = "",
    figures: dict | None = None,
) -> Evidence:
    r"""A one-sided claim $\mathbb{E}[X] > \text{bound}$, at $z$ standard errors: holds when
    $\text{mean} - \text{bound} > z \cdot \mathrm{SE}$ (+ round-off floor), refuted when
    $\text{bound} - \text{mean} > z \cdot \mathrm{SE}$ (+ floor), inconclusive between, with the number of ``unit``
    (draws, seeds, …) at which the measured difference would be $z$ SE from the bound:
    $\lceil n \cdot (z \cdot \mathrm{SE} / \lvert\text{mean} - \text{bound}\rvert)^2\rceil$
    (SE shrinking as $1/\sqrt{n}$ at the measured spread). With the quantity's finite range (``estimate.bounds``) the
    error bar is the empirical-Bernstein one; identical draws, or a spread resting on a few rare draws, decide
    nothing beyond what an unseen event could move ([`within_error`][attnverify.checks.comparisons.within_error])."""
    z = _claim_z(z)
    if not isinstance(estimate, Estimate):
        raise TypeError(f"estimate must be an Estimate (e.g. from mean_estimate), got {type(estimate).__name__}")
    unit = _unit(unit)
    mean = real_number("estimate.mean", estimate.mean, optional=False)
    scale = terms_scale(None if scale is None else _tolerance_part("scale", scale), bound)
    bound = real_number("bound", bound, optional=False)
    standard_error = _tolerance_part("estimate.standard_error", estimate.standard_error)
    floor = roundoff_floor(mean, bound, getattr(estimate, "magnitude", None), scale=scale)
    # identical draws: an unseen event of probability ≤ ln(1/δ)/n may move the mean toward either end
    half = estimate.unseen_shift(z) if estimate.identical else estimate.error_bar(z)[0]
    tolerance = half + floor
    difference = mean - bound
    holds, refuted = difference > tolerance, -difference > tolerance
    reason, needed = "", {}
    if (holds or refuted) and not estimate.trusted_spread and not estimate.identical:
        withheld = _unseen(estimate, z, abs(difference), floor)
        if withheld is not None:
            reason, needed = withheld[0] + f"; the mean is {difference:+.3g} from the bound", withheld[1]
            holds = refuted = False
    elif not holds and not refuted:
        side = "above" if difference > 0 else "below"
        if estimate.identical:
            reason = (f"all {estimate.samples} draws identical: an unseen event of probability below "
                      f"{unseen_probability(estimate.samples, z):.3g} could move the mean past the bound"
                      + ("" if math.isfinite(half) else "; with no range stated for the quantity (bounds=) no number "
                         "of identical draws decides: state it, or draw until the draws differ"))
        else:
            reason = (f"the mean is {abs(difference) / standard_error if standard_error else 0:.2g} SE {side} the "
                      f"bound, short of the {z:g} SE that decides either way")
        count = None if half == 0 or not math.isfinite(half) else draws_to_resolve(estimate.samples, half,
                                                                                    abs(difference) - floor)
        if not math.isfinite(half):
            pass
        elif count is None:
            reason += "; at this mean no number of " + unit + " decides"
        else:
            needed = {unit: count}
    tolerance = tolerance if math.isfinite(tolerance) else floor
    return Evidence(
        holds=holds,
        theory=bound,
        observed=mean,
        tolerance=tolerance,
        standard_error=standard_error,
        note=note or f"mean − bound = {difference:.3g} ± {standard_error:.3g} (SE) over {estimate.samples} {unit}",
        figures={"z": z, "roundoff_floor": floor, "samples": estimate.samples, "unit": unit, "refuted_at_z": refuted,
                 **(figures or {})},
        relation="above",
        inconclusive=reason,
        needed=needed,
    )


def close(
    lhs,
    rhs,
    *,
    rtol: float = 1e-12,
    atol: float = 0.0,
    scale: float | None = None,
    note: str = "",
    figures: dict | None = None,
    conditions: Mapping[str, bool] | None = None,
    labels: tuple[str, str] = ("lhs", "rhs"),
) -> Evidence:
    r"""Holds when $\lvert\text{lhs} - \text{rhs}\rvert \le \text{atol} + \text{rtol} \cdot \lvert\text{rhs}\rvert$ +
    the round-off floor (an exact identity up to round-off; the floor,
    [`roundoff_floor`][attnverify.checks.roundoff_floor] of both sides and ``scale``, keeps
    $\text{rtol} = \text{atol} = 0$ from meaning bitwise equality).

    ``lhs`` and ``rhs`` are numbers or arrays of one shape (a number against an array compares it with
    every entry): an array identity holds when every entry does, and the evidence shows the worst entry
    (the largest $\lvert\text{lhs} - \text{rhs}\rvert - \text{tolerance}$), its index, and how many entries are
    outside. ``labels`` names the sides in tables and messages (default "lhs", "rhs": an identity has no "theory"
    side of its own)."""
    scale = None if scale is None else _tolerance_part("scale", scale)
    if np.ndim(lhs) or np.ndim(rhs):
        return _close_arrays(lhs, rhs, rtol, atol, terms_scale(scale, lhs, rhs), note, figures, conditions, labels)
    scale = terms_scale(scale, lhs, rhs)
    lhs, rhs = real_number("lhs", lhs, optional=False), real_number("rhs", rhs, optional=False)
    rtol, atol = _tolerance_part("rtol", rtol), _tolerance_part("atol", atol)
    floor = roundoff_floor(lhs, rhs, scale=scale)
    tolerance = real_number("tolerance (atol + rtol·|rhs|)", atol + rtol * abs(rhs) + floor, optional=False)
    holds = abs(lhs - rhs) <= tolerance and all((conditions or {}).values())
    return Evidence(
        holds=holds,
        theory=lhs,
        observed=rhs,
        tolerance=tolerance,
        vacuous=floor_vacuity(abs(lhs - rhs), atol + rtol * abs(rhs), floor, lhs, rhs) if holds else "",
        note=(note or f"rtol = {rtol:g}, atol = {atol:g}") + (floor_note(abs(lhs - rhs), atol + rtol * abs(rhs),
                                                                           floor, scale) if holds else ""),
        figures={**({"roundoff_scale": float(scale)} if scale is not None else {}), **dict(figures or {})},
        relation="equal",
        conditions=dict(conditions or {}),
        labels=labels,
    )


def _real_array(name: str, value) -> np.ndarray:
    try:
        array = np.asarray(to_numpy(value))
    except Exception:
        raise EvidenceError(f"{name} must be a real number or an array of them, got {type(value).__name__}") from None
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise EvidenceError(f"{name} must be a real number or an array of them, got dtype {array.dtype}")
    array = array.astype(float)
    if not np.all(np.isfinite(array)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(array))[0])
        raise EvidenceError(f"{name} must be finite, got {array[bad]} at index {bad}; the computation behind it "
                            "broke down")
    return array


def _close_arrays(lhs, rhs, rtol, atol, scale, note, figures, conditions, labels) -> Evidence:
    lhs, rhs = _real_array("lhs", lhs), _real_array("rhs", rhs)
    scale = None if scale is None else _real_array("scale", scale)
    if lhs.size == 0 or rhs.size == 0:
        raise EvidenceError(f"lhs and rhs must hold at least one entry to compare, got shapes {lhs.shape} and "
                            f"{rhs.shape} (an empty identity proves nothing)")
    if lhs.shape != rhs.shape and lhs.ndim and rhs.ndim:
        raise EvidenceError(f"lhs and rhs must have one shape (or one of them be a number), got {lhs.shape} and "
                            f"{rhs.shape}")
    lhs, rhs = np.broadcast_arrays(lhs, rhs)
    rtol, atol = _tolerance_part("rtol", rtol), _tolerance_part("atol", atol)
    with np.errstate(over="ignore"):
        tolerance = atol + rtol * np.abs(rhs) + roundoff_floor(lhs, rhs, scale=scale)
        margin = np.abs(lhs - rhs) - tolerance
    if not np.all(np.isfinite(tolerance)) or not np.all(np.isfinite(margin)):
        raise EvidenceError("tolerance (atol + rtol·|rhs|) or |lhs − rhs| overflows float64 for some entry")
    worst = np.unravel_index(int(np.argmax(margin)), margin.shape)
    index = tuple(int(i) for i in worst)
    outside = int(np.sum(margin > 0))
    return Evidence(
        holds=outside == 0 and all((conditions or {}).values()),
        theory=float(lhs[worst]),
        observed=float(rhs[worst]),
        tolerance=float(tolerance[worst]),
        note=(note + "; " if note else "") + (f"rtol = {rtol:g}, atol = {atol:g}; worst of {lhs.size} entries at "
                                              f"index {index}; {outside} outside the tolerance"),
        figures={**dict(figures or {}), "worst_index": list(index), "shape": list(lhs.shape),
                 "entries_outside": outside},
        relation="equal",
        conditions=dict(conditions or {}),
        labels=labels,
    )


def at_most(
    smaller: float,
    larger: float,
    *,
    tolerance: float = 0.0,
    standard_error: float | None = None,
    z: float = DEFAULT_Z,
    scale: float | None = None,
    note: str = "",
    figures: dict | None = None,
    conditions: Mapping[str, bool] | None = None,
    labels: tuple[str, str] = ("value", "bound"),
    resolution: float | None = None,
    samples: int | None = None,
    unit: str = "draws",
) -> Evidence:
    r"""Holds when $\text{smaller} \le \text{larger} + \text{tolerance} + z \cdot {}$``standard_error`` + the
    round-off floor (an inequality, e.g. a bound or an optimality). ``standard_error``: that of
    $\text{smaller} - \text{larger}$ where a side is a Monte Carlo estimate; it widens the tolerance by $z$ of them
    ($z \ge 5$, as every stochastic tolerance). The floor is
    [`roundoff_floor`][attnverify.checks.roundoff_floor] of both sides and ``scale``, so an equality case computed two
    ways never refutes a $\le$; where the floor alone decides and exceeds both sides, the evidence is vacuous
    (`floor_vacuity`).

    ``resolution``: the smallest excess $\text{smaller} - \text{larger}$ the comparison must be able to see (with a
    ``standard_error``). Where the allowance (tolerance + $z$ SE + floor) is wider, a comparison that is not refuted
    could have missed such an excess: it is *inconclusive*, and with ``samples`` (the count of ``unit`` behind the
    standard error, which shrinks as $1/\sqrt{n}$) says how many would resolve it,
    $\lceil n \cdot \big(z \cdot \mathrm{SE} / (\text{resolution} - \text{tolerance} - \text{floor})\big)^2\rceil$.
    At that count an excess of exactly the resolution is refuted about half the time: state a resolution below the
    excess that matters. The standard error is taken as given; for the mean of draws,
    [`exceeds`][attnverify.checks.comparisons.exceeds] and [`within_error`][attnverify.checks.comparisons.within_error] also
    check that the spread does not rest on a few rare draws (heavy tails)."""
    scale = terms_scale(None if scale is None else _tolerance_part("scale", scale), smaller, larger)
    smaller, larger = real_number("smaller side", smaller, optional=False), real_number("larger side", larger, optional=False)
    given = stated = _tolerance_part("tolerance", tolerance)
    samples = None if samples is None else positive_count("samples", samples)
    unit = _unit(unit)
    if standard_error is not None:
        stated += _claim_z(z) * _tolerance_part("standard_error", standard_error)
    elif resolution is not None:
        raise EvidenceError("resolution needs a standard_error: without one the comparison sees every excess")
    if resolution is not None:
        resolution = _tolerance_part("resolution", resolution)
    floor = roundoff_floor(smaller, larger, scale=scale)
    tolerance = stated + floor
    holds = smaller <= larger + tolerance and all((conditions or {}).values())
    reason, needed = "", {}
    if holds and resolution is not None:
        if tolerance > resolution:
            holds = False
            reason = (f"the allowance {tolerance:.3g} ({_claim_z(z):g} SE {standard_error:.3g}, tolerance {given:.3g}, "
                      f"round-off {floor:.3g}) is wider than the excess {resolution:.3g} the comparison must see")
            margin = resolution - given - floor
            if margin <= 0:
                reason += "; the tolerance and round-off alone exceed it, so no smaller standard error decides"
            elif samples is not None:
                needed = {unit: draws_to_resolve(samples, stated - given, margin)}
                reason += f"; about {needed[unit]:,} {unit} (now {samples:,}) would resolve it"
    return Evidence(
        holds=holds,
        theory=smaller,
        observed=larger,
        tolerance=tolerance,
        standard_error=standard_error,
        vacuous=floor_vacuity(smaller - larger, stated, floor, smaller, larger) if holds else "",
        note=note + (floor_note(smaller - larger, stated, floor, scale).lstrip("; ") if holds else ""),
        figures={**({"roundoff_scale": float(scale)} if scale is not None else {}),
                 **({"resolution": resolution} if resolution is not None else {}), **dict(figures or {})},
        relation="at_most",
        conditions=dict(conditions or {}),
        labels=labels,
        inconclusive=reason,
        needed=needed,
    )
