"""One example's evidence from several cases (lengths, components, seeds): the case closest to failing decides."""

from __future__ import annotations

import math
from typing import Sequence

from .evidence import Evidence


def worst_case(cases: Sequence[tuple[str, Evidence]]) -> Evidence:
    """The evidence of the case closest to failing, labelled with it: refuted if any case is, else inconclusive if any
    case is (needing the most draws any case needs), else holds; among cases of one status, the largest gap over its
    tolerance. The conditions say which cases are not refuted; every case's evidence and status are in the figures
    (``worst_case([("L=64", within_error(…)), ("L=512", within_error(…))])``)."""
    if isinstance(cases, (str, bytes)) or not hasattr(cases, "__iter__"):
        raise TypeError(f"cases must be a non-empty sequence of (label, Evidence) pairs, got {cases!r}"[:200])
    cases = list(cases)
    if not cases or not all(isinstance(c, tuple) and len(c) == 2 and isinstance(c[0], str) and
                            isinstance(c[1], Evidence) for c in cases):
        raise TypeError("cases must be a non-empty sequence of (label, Evidence) pairs")
    labels = [label for label, _ in cases]
    if len(set(labels)) != len(labels):
        raise ValueError(f"cases must have distinct labels, got {labels}")

    def ratio(e: Evidence) -> float:
        gap = abs((e.theory or 0.0) - (e.observed or 0.0))
        return gap / e.tolerance if e.tolerance else math.inf

    rank = {"refuted": 2, "inconclusive": 1, "holds": 0}
    label, worst = max(cases, key=lambda item: (rank[item[1].status], ratio(item[1])))
    needed: dict[str, int] = {}
    for _, e in cases:
        if e.status == "inconclusive":
            for key, count in e.needed.items():
                needed[key] = max(needed.get(key, 0), count)
    return Evidence(
        all(e.holds for _, e in cases), worst.theory, worst.observed, worst.tolerance, worst.standard_error,
        relation=worst.relation, conditions={lab: e.status != "refuted" for lab, e in cases},
        note=f"worst case {label}: {worst.note}",
        figures={"cases": {lab: e.as_dict() for lab, e in cases}, "statuses": {lab: e.status for lab, e in cases}},
        inconclusive=f"{label}: {worst.inconclusive}" if worst.status == "inconclusive" else "",
        needed=needed if worst.status == "inconclusive" else {},
    )
