"""What a claim's examples drew: per numeric parameter, the least and greatest value against its declared range
(shown under each result), and the parameters of a failed example drawn huge from a strategy without finite ends
(named in the result's notes)."""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

import numpy as np


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
            and not (isinstance(value, (float, np.floating)) and math.isnan(value)))


def drawn_ranges(examples: Iterable[Any], declared: Mapping[str, tuple | None] | None = None) -> dict[str, dict]:
    """Per numeric parameter of ``examples`` (the runner's examples, each with its ``parameters``; in the order of
    ``declared``, then as the examples name them; NaN left out), the least and the greatest value drawn, and its
    ``declared`` range where its strategy states one:
    ``{"theta": {"drawn": [0.0, 3.14159], "declared": [0.0, 3.14159]}}``. Parameters that are not numbers in
    every example that has them (permutations, dicts) are left out."""
    values: dict[str, list] = {name: [] for name in declared or {}}
    for example in examples:
        for name, value in example.parameters.items():
            values.setdefault(name, []).append(value)
    declared = declared or {}
    ranges = {}
    for name, drawn in values.items():
        if drawn and all(_is_number(v) for v in drawn):
            bounds = declared.get(name)
            ranges[name] = {"drawn": [getattr(v, "item", lambda v=v: v)() for v in (min(drawn), max(drawn))],
                            "declared": None if bounds is None else list(bounds)}
    return ranges


def drawn_text(ranges: Mapping[str, Mapping]) -> str:
    """One line of `drawn_ranges`, e.g. ``theta: drawn 0 … 3.14159 of [0, 3.14159]; d: drawn 2 … 64 of [2, 64]``
    (a value drawn alone: ``d: drawn 2 of [2, 64]``)."""
    def number(value: Any) -> str:
        return "?" if value is None else f"{value:g}" if isinstance(value, float) else str(value)

    parts = []
    for name, shown in ranges.items():
        low, high = shown["drawn"]
        text = f"{name}: drawn {number(low)}" + ("" if low == high else f" … {number(high)}")
        if shown.get("declared") is not None:
            text += f" of [{number(shown['declared'][0])}, {number(shown['declared'][1])}]"
        parts.append(text)
    return "; ".join(parts)


#: a drawn number beyond this size, from a strategy with no finite range, is named when the check fails on it
HUGE_DRAW = 1e100


def unbounded_draws(example: Any, declared: Mapping[str, tuple | None]) -> list[str]:
    """A note for each parameter of a failed example drawn huge or non-finite from a strategy without a finite
    range (``st.floats(0.5, inf)`` reaches 1.8e308): where the claim is meant to hold is then the user's to bound."""
    notes = []
    for name, value in example.parameters.items():
        if (isinstance(value, (float, np.floating)) and declared.get(name) is None
                and not abs(value) < HUGE_DRAW):
            notes.append(f"{name}={float(value):g} was drawn because its strategy has no finite range: give it "
                         f"finite ends where the claim is meant to hold (st.floats(low, high))")
    return notes
