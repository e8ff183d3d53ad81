"""The round-off floor every comparison of a claim adds to its tolerance: a few ulps of the magnitudes compared or of
the terms that produced them ([`roundoff_floor`][attnverify.checks.roundoff.roundoff_floor], `terms_scale`), so that an
exact identity or a Monte Carlo standard error of 0 never becomes bitwise equality (the ulps:
`ROUNDOFF_ULPS`; the terms' sizes: `attnverify.derivations.rounding`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..base.backend import to_numpy
from ..derivations.rounded import ROUNDOFF_ULPS, carried_scale

_EPSILON = float(np.finfo(np.float64).eps)
_TINY = float(np.finfo(np.float64).tiny)


def roundoff_floor(*magnitudes, scale: float | None = None):
    r"""The floating-point floor of a comparison: ``ROUNDOFF_ULPS·ε·max(|m| for m in magnitudes, scale) +
    ROUNDOFF_ULPS·tiny``, with $\varepsilon = 2^{-52}$ and tiny the smallest normal float64.

    A float64 result of a few dozen operations carries a relative error of a few $\varepsilon$ of the *terms* it was
    made from, not of itself: $\sin(\theta) + (\pi - \theta)\cos(\theta)$ at $\theta = \operatorname{fl}(\pi)$ is
    $1.2 \cdot 10^{-16}$ although its exact value there is $\sim 10^{-32}$, because $\pi - \theta$ rounds to 0. So
    ``scale`` names the size of the terms that produced the sides when they cancel ($\lvert x\rvert\lvert y\rvert$ for a
    kernel that vanishes); without it, the sides' own magnitudes are the scale.
    The second term covers results below the normal range, where float64 keeps an absolute, not a relative,
    precision.

    A value from a generated evaluator carries the size of its terms
    ([`Rounded`][attnverify.derivations.rounded.Rounded], through any arithmetic done on it since): the comparisons below
    take it as ``scale`` by themselves (`terms_scale`)."""
    sizes = [np.abs(np.asarray(m, dtype=float)) for m in magnitudes if m is not None]
    sizes.append(0.0 if scale is None else np.abs(np.asarray(scale, dtype=float)))
    largest = np.maximum.reduce(np.broadcast_arrays(*sizes))  # entrywise for arrays (close on arrays)
    floor = ROUNDOFF_ULPS * _EPSILON * largest + ROUNDOFF_ULPS * _TINY
    return float(floor) if np.ndim(floor) == 0 else floor


def terms_scale(scale: Any, *sides: Any) -> Any:
    """The scale of a comparison's round-off floor: the larger of the stated ``scale`` and the term sizes the sides
    carry (`carried_scale`), entrywise for arrays; None when neither is known."""
    found = [np.abs(np.asarray(to_numpy(scale), dtype=float))] if scale is not None else []
    found += [np.asarray(c) for c in (carried_scale(side) for side in sides) if c is not None]
    if not found:
        return None
    largest = np.maximum.reduce(np.broadcast_arrays(*found)) if len(found) > 1 else found[0]
    return float(largest) if np.ndim(largest) == 0 else largest


def floor_decides(gap: float, statistical: float, floor: float) -> bool:
    """Whether a comparison holds by the round-off floor alone: the gap exceeds the rest of the tolerance
    (``statistical``) and lies within it plus the floor."""
    return statistical < gap <= statistical + floor


def floor_note(gap: float, statistical: float, floor: float, scale: Any) -> str:
    """Says so where the round-off floor decides the verdict (`floor_decides`)."""
    if not floor_decides(gap, statistical, floor):
        return ""
    size = "" if scale is None else f" of terms of size {float(np.max(scale)):.3g}"
    return (f"; holds by the round-off floor alone: |gap| {gap:.3g} exceeds the tolerance without it "
            f"({statistical:.3g}), within {ROUNDOFF_ULPS} ulps{size} ({floor:.3g})")


def floor_vacuity(gap: float, statistical: float, floor: float, *sides: Any) -> str:
    """Why a comparison that holds by the round-off floor alone says nothing, or "": where the floor also exceeds
    both sides, any values as small would hold (round-off is no evidence). A claim that holds only on such
    examples is inconclusive (`vacuous`)."""
    largest = max((float(np.max(np.abs(np.asarray(to_numpy(side), dtype=float)))) for side in sides), default=0.0)
    if not floor_decides(gap, statistical, floor) or not largest < floor:
        return ""
    return (f"it holds by the round-off floor alone ({floor:.3g}), which exceeds both sides (at most {largest:.3g}): "
            "round-off is no evidence")
