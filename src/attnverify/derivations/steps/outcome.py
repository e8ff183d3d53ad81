"""What the checker says of a step: `StepCheck` (proved symbolically, agreeing numerically, failing at
a shown point, marked, a condition, or unchecked with why) and the counts a report prints.
The rules that produce them: docs/derivation_steps.md."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Iterable

from ...base.arguments import Checked, checked, one_of


OUTCOMES = ("symbolic", "numeric", "failed", "definition", "assumption", "condition", "unchecked")
"""The outcome of a step: proved symbolically, agrees numerically, fails at a shown point, marked (a definition or an
assumption), a condition a later step solves, or unchecked."""


@dataclass(frozen=True)
class StepCheck(Checked):
    """The outcome of a step (or of one comparison): ``outcome`` (`OUTCOMES`), a sentence, the earlier step
    it was compared with (1-based), and for a numeric check the points, the fewest agreeing digits (no more than
    the numeric evaluation of the sides established: ``limited`` when a quadrature's error estimate, not the
    agreement of the sides, set them), and for a failure the point (name → value) and both sides' values there.
    ``cut`` names the time safety net that cut an attempt short ("" where none did): such an outcome may differ on
    another machine, so it is never kept on disk."""

    outcome: str = checked(one_of, OUTCOMES)
    detail: str
    against: int | None = None
    points: int = 0
    digits: float | None = None
    point: dict = field(default_factory=dict)
    values: tuple = ()
    limited: bool = False
    cut: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    @property
    def checked(self) -> bool:
        """Decided by the checker (proved, agreed, or failed), not marked nor left unchecked."""
        return self.outcome in ("symbolic", "numeric", "failed")

    def label(self) -> str:
        """A short phrase for the report: "proved symbolically", "agrees at 5 points to ≥ 29 digits", "agrees at 3
        points to 27 digits (quadrature-limited)", …"""
        against = f" (against step {self.against})" if self.against else ""
        if self.outcome == "symbolic":
            return f"proved symbolically{against}: {self.detail}"
        if self.outcome == "numeric":
            where = "at its one point (no free symbol)" if self.points == 1 else f"at {self.points} random points"
            if self.limited:
                return f"agrees {where} to {math.floor(self.digits)} digits (quadrature-limited){against}"
            return f"agrees {where} to ≥ {self.digits:.0f} digits{against}"
        if self.outcome == "failed":
            where = ", ".join(f"{k} = {v}" for k, v in self.point.items())
            sides = f": left side {self.values[0]}, right side {self.values[1]}" if self.values else ""
            return f"FAILS{against}" + (f" at {where}" if where else "") + f"{sides} ({self.detail})"
        if self.outcome in ("definition", "assumption"):
            return f"{self.outcome} (marked so by the derivation; not checked)"
        if self.outcome == "condition":
            return f"condition: {self.detail}"
        return f"unchecked: {self.detail}"

    def as_dict(self) -> dict:
        return {"outcome": self.outcome, "detail": self.detail, "against": self.against, "points": self.points,
                "digits": self.digits, "point": dict(self.point), "values": list(self.values), "limited": self.limited,
                "cut": self.cut, "label": self.label()}

    @classmethod
    def from_dict(cls, data: dict) -> "StepCheck":
        return cls(data["outcome"], data["detail"], data.get("against"), data.get("points", 0), data.get("digits"),
                   dict(data.get("point") or {}), tuple(data.get("values") or ()), bool(data.get("limited", False)),
                   str(data.get("cut") or _cut_in(data["detail"])))


def _cut_in(detail: str) -> str:
    """The safety net named in an outcome's text written without ``cut`` (a budget spent, symbolic attempts
    stopped), or ""."""
    for marker in ("budget of ", "stopped at "):
        if marker in detail and (" s spent (" in detail or "of the step's budget" in detail):
            return "a time limit"
    return ""


def unchecked(why: str, against: int | None = None) -> StepCheck:
    return StepCheck("unchecked", why, against)


def counts(checks: Iterable[StepCheck]) -> dict[str, int]:
    """How many steps have each outcome (every outcome listed, zeros included)."""
    checks = list(checks)
    return {outcome: sum(1 for c in checks if c.outcome == outcome) for outcome in OUTCOMES}


_COUNTED = {"symbolic": "proved symbolically", "numeric": "agreeing numerically", "definition": "definition",
            "assumption": "assumption", "condition": "condition", "unchecked": "unchecked", "failed": "failed"}


def counts_text(numbers: dict[str, int]) -> str:
    """``17 steps: 5 proved symbolically, 3 agreeing numerically, 2 definitions, 1 assumption, 6 unchecked,
    0 failed``."""
    total = sum(numbers.values())
    parts = [f"{numbers.get(k, 0)} {v}" + ("s" if k in ("definition", "assumption", "condition")
                                              and numbers.get(k, 0) != 1 else "")
             for k, v in _COUNTED.items() if k != "condition" or numbers.get(k, 0)]
    return f"{total} step{'s' * (total != 1)}: " + ", ".join(parts)


def combined(parts: list[StepCheck]) -> StepCheck:
    """One outcome for a step of several relations: the first failure; else proved if all are, agrees if all are
    checked; else unchecked, saying which parts were."""
    if len(parts) == 1:
        return parts[0]
    cut = next((p.cut for p in parts if p.cut), "")
    return replace(_combined(parts), cut=cut)


def _combined(parts: list[StepCheck]) -> StepCheck:
    n = len(parts)
    for k, part in enumerate(parts, 1):
        if part.failed:
            return StepCheck("failed", f"part {k} of {n}: {part.detail}", part.against, part.points, part.digits,
                             part.point, part.values)
    against = next((p.against for p in parts if p.against), None)
    if all(p.outcome == "symbolic" for p in parts):
        return StepCheck("symbolic", "; ".join(sorted({p.detail for p in parts})), against)
    if all(p.checked for p in parts):
        numeric = [p for p in parts if p.outcome == "numeric"]
        weakest = min(numeric, key=lambda p: p.digits)
        return StepCheck("numeric", f"{n} parts", against, max(p.points for p in numeric), weakest.digits,
                         limited=weakest.limited)
    checked = [str(k) for k, p in enumerate(parts, 1) if p.checked]
    reasons = "; ".join(sorted({p.detail for p in parts if not p.checked}))
    prefix = f"parts {', '.join(checked)} of {n} hold, the others: " if checked else ""
    return unchecked(prefix + reasons, against)


def with_against(outcome: StepCheck, against: int | None) -> StepCheck:
    if against is None or outcome.against == against:
        return outcome
    return replace(outcome, against=against)


def noted(outcome: StepCheck, note: str) -> StepCheck:
    return replace(outcome, detail=f"{outcome.detail}; {note}")
