"""Evidence: what one example of a claim measured, and whether the claim held there.

Every stochastic comparison states its tolerance as ``z · standard_error + bias_budget`` with
z ≥ 5 by default; exact identities use a relative tolerance near float64 round-off.

Evidence validates itself: ``holds`` is a real bool, both sides are finite, the tolerance and the
standard error are finite and ≥ 0. It also carries the *relation* between its two sides and any
further named *conditions*, so its verdict is recomputed from the figures when it is made: a
``holds`` that disagrees with them is an error, never a pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Real
from typing import Any, Mapping

import numpy as np

from ..numerics.backend import to_numpy
from ..numerics.statistics import Estimate

#: Default number of standard errors in a stochastic tolerance.
DEFAULT_Z = 5.0

#: How the two sides relate when the claim holds (θ: theory, o: observed, τ: tolerance).
RELATIONS = {
    "equal": "|θ − o| ≤ τ",
    "at_most": "θ ≤ o + τ",
    "above": "o − θ > τ",
    "below": "θ − o > τ",
    "custom": "the conditions (none: stated by the check alone)",
}


class EvidenceError(ValueError):
    """Evidence that cannot be trusted: a non-bool verdict, a non-finite side or tolerance, or a
    verdict that disagrees with the figures it was given."""


def _number(name: str, value: Any, *, nonnegative: bool = False, optional: bool = True) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, (bool, np.bool_)) or not (
        isinstance(value, (Real, np.floating, np.integer)) or getattr(value, "shape", None) == ()
    ):
        raise EvidenceError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise EvidenceError(f"{name} must be a real number, got {value!r}") from None
    if not math.isfinite(x):
        raise EvidenceError(f"{name} must be finite, got {x}; the computation behind it broke down "
                            "(or the tolerance does not bound anything)")
    if nonnegative and x < 0:
        raise EvidenceError(f"{name} must be ≥ 0, got {x}")
    return x


def _bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise EvidenceError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return bool(value)


def relation_holds(relation: str, theory: float, observed: float, tolerance: float) -> bool:
    """The verdict of ``relation`` (a key of :data:`RELATIONS` other than ``custom``) on the two sides."""
    if relation == "equal":
        return abs(theory - observed) <= tolerance
    if relation == "at_most":
        return theory <= observed + tolerance
    if relation == "above":
        return observed - theory > tolerance
    if relation == "below":
        return theory - observed > tolerance
    raise ValueError(f"relation must be one of {tuple(RELATIONS)}, got {relation!r}")


@dataclass(frozen=True)
class Evidence:
    """One example's verdict: the two sides, the tolerance, and the figures behind them.

    ``relation`` says how the sides compare when the claim holds (:data:`RELATIONS`); left as
    ``None`` it is ``"equal"`` when theory, observed and tolerance are all given, else ``"custom"``.
    ``conditions`` names further facts the verdict needs (``{"Hessian positive": True}``). The
    verdict is ``relation(theory, observed, tolerance) and all(conditions)``; ``holds`` must equal it.
    With ``relation="custom"`` and no conditions the check's own ``holds`` is taken as it is.
    """

    holds: bool
    theory: float | None = None
    observed: float | None = None
    tolerance: float | None = None
    standard_error: float | None = None
    note: str = ""
    figures: dict[str, Any] = field(default_factory=dict)
    relation: str | None = None
    conditions: Mapping[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "holds", _bool("Evidence.holds", self.holds))
        set_(self, "theory", _number("Evidence.theory", self.theory))
        set_(self, "observed", _number("Evidence.observed", self.observed))
        set_(self, "tolerance", _number("Evidence.tolerance", self.tolerance, nonnegative=True))
        set_(self, "standard_error", _number("Evidence.standard_error", self.standard_error, nonnegative=True))
        if not isinstance(self.note, str):
            raise EvidenceError(f"Evidence.note must be a string, got {type(self.note).__name__}")
        if not isinstance(self.figures, Mapping):
            raise EvidenceError(f"Evidence.figures must be a dict, got {type(self.figures).__name__}")
        if not isinstance(self.conditions, Mapping):
            raise EvidenceError(f"Evidence.conditions must be a dict of name → bool, got {self.conditions!r}")
        set_(self, "conditions", {str(k): _bool(f"Evidence.conditions[{k!r}]", v) for k, v in self.conditions.items()})
        sides = (self.theory, self.observed, self.tolerance)
        relation = self.relation
        if relation is None:
            relation = "equal" if all(s is not None for s in sides) else "custom"
        if relation not in RELATIONS:
            raise EvidenceError(f"Evidence.relation must be one of {tuple(RELATIONS)}, got {relation!r}")
        if relation != "custom" and any(s is None for s in sides):
            raise EvidenceError(f"Evidence.relation {relation!r} needs theory, observed and tolerance")
        set_(self, "relation", relation)
        verdict = self.verdict()
        if verdict is not None and verdict != self.holds:
            raise EvidenceError(
                f"Evidence says holds={self.holds}, but its figures say {verdict}: {self.explain()}"
            )

    def verdict(self) -> bool | None:
        """The verdict recomputed from the sides, the tolerance and the conditions (None: not recomputable)."""
        if self.relation == "custom":
            return all(self.conditions.values()) if self.conditions else None
        return relation_holds(self.relation, self.theory, self.observed, self.tolerance) and all(self.conditions.values())

    def explain(self) -> str:
        """The relation and conditions with their values, for messages."""
        parts = []
        if self.relation != "custom":
            parts.append(f"{RELATIONS[self.relation]} with θ = {self.theory!r}, o = {self.observed!r}, "
                         f"τ = {self.tolerance!r}")
        parts += [f"{name}: {value}" for name, value in self.conditions.items()]
        return "; ".join(parts) or "no figures"

    def _rows(self) -> list[tuple[str, str]]:
        left, right = ("value", "bound") if self.relation == "at_most" else ("theory", "observed")
        rows = [("verdict", "holds" if self.holds else "fails"), ("relation", RELATIONS[self.relation])]
        rows += [(name, f"{value:.6g}") for name, value in ((left, self.theory), (right, self.observed),
                                                              ("tolerance", self.tolerance),
                                                              ("standard error", self.standard_error))
                 if value is not None]
        rows += [(f"condition: {name}", str(value)) for name, value in self.conditions.items()]
        if self.note:
            rows.append(("note", self.note))
        return rows

    def _repr_markdown_(self) -> str:
        """A notebook shows the evidence as a two-column table (sides named by the relation)."""
        cells = [f"| {name} | {str(value).replace('|', '&#124;')} |" for name, value in self._rows()]
        return "\n".join(["| | |", "|---|---|", *cells])

    def _repr_html_(self) -> str:
        import html

        cells = "".join(f"<tr><th>{html.escape(name)}</th><td>{html.escape(value)}</td></tr>"
                        for name, value in self._rows())
        return f"<table>{cells}</table>"

    def as_dict(self) -> dict:
        return {
            "holds": self.holds,
            "theory": self.theory,
            "observed": self.observed,
            "tolerance": self.tolerance,
            "standard_error": self.standard_error,
            "relation": self.relation,
            "conditions": dict(self.conditions),
            "note": self.note,
            "figures": self.figures,
        }


def _tolerance_part(name: str, value: Any) -> float:
    """A finite, non-negative number that goes into a tolerance (rtol, atol, z, a bias budget)."""
    x = _number(name, value, optional=False)
    if x < 0:
        raise EvidenceError(f"{name} must be a finite number ≥ 0, got {value!r}")
    return x


def within_error(
    theory: float,
    estimate: Estimate,
    *,
    z: float = DEFAULT_Z,
    bias_budget: float = 0.0,
    note: str = "",
    figures: dict | None = None,
    conditions: Mapping[str, bool] | None = None,
) -> Evidence:
    """Holds when |theory − estimate.mean| ≤ z·SE + bias_budget (a stochastic equality)."""
    z = _tolerance_part("z", z)
    if z < 5:
        raise EvidenceError(f"z must be a finite number ≥ 5 for a claim's tolerance, got {z}")
    if not isinstance(estimate, Estimate):
        raise TypeError(f"estimate must be an Estimate (e.g. from mean_estimate), got {type(estimate).__name__}")
    bias_budget = _tolerance_part("bias_budget", bias_budget)
    standard_error = _tolerance_part("estimate.standard_error", estimate.standard_error)
    mean = _number("estimate.mean", estimate.mean, optional=False)
    theory = _number("theory", theory, optional=False)
    tolerance = z * standard_error + bias_budget
    gap = abs(theory - mean)
    return Evidence(
        holds=gap <= tolerance and all((conditions or {}).values()),
        theory=theory,
        observed=mean,
        tolerance=tolerance,
        standard_error=standard_error,
        note=note or f"|gap| = {gap:.3g}, tolerance = {z:g}·SE + {bias_budget:.3g}",
        figures={"z": z, "bias_budget": bias_budget, "samples": estimate.samples, **(figures or {})},
        relation="equal",
        conditions=dict(conditions or {}),
    )


def close(
    lhs,
    rhs,
    *,
    rtol: float = 1e-12,
    atol: float = 0.0,
    note: str = "",
    figures: dict | None = None,
    conditions: Mapping[str, bool] | None = None,
) -> Evidence:
    """Holds when |lhs − rhs| ≤ atol + rtol·|rhs| (an exact identity up to round-off).

    ``lhs`` and ``rhs`` are numbers or arrays of one shape (a number against an array compares it with
    every entry): an array identity holds when every entry does, and the evidence shows the worst entry
    (the largest |lhs − rhs| − tolerance), its index, and how many entries are outside."""
    if np.ndim(lhs) or np.ndim(rhs):
        return _close_arrays(lhs, rhs, rtol, atol, note, figures, conditions)
    lhs, rhs = _number("lhs", lhs, optional=False), _number("rhs", rhs, optional=False)
    rtol, atol = _tolerance_part("rtol", rtol), _tolerance_part("atol", atol)
    tolerance = _number("tolerance (atol + rtol·|rhs|)", atol + rtol * abs(rhs), optional=False)
    return Evidence(
        holds=abs(lhs - rhs) <= tolerance and all((conditions or {}).values()),
        theory=lhs,
        observed=rhs,
        tolerance=tolerance,
        note=note or f"rtol = {rtol:g}, atol = {atol:g}",
        figures=dict(figures or {}),
        relation="equal",
        conditions=dict(conditions or {}),
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


def _close_arrays(lhs, rhs, rtol, atol, note, figures, conditions) -> Evidence:
    lhs, rhs = _real_array("lhs", lhs), _real_array("rhs", rhs)
    if lhs.shape != rhs.shape and lhs.ndim and rhs.ndim:
        raise EvidenceError(f"lhs and rhs must have one shape (or one of them be a number), got {lhs.shape} and "
                            f"{rhs.shape}")
    lhs, rhs = np.broadcast_arrays(lhs, rhs)
    rtol, atol = _tolerance_part("rtol", rtol), _tolerance_part("atol", atol)
    with np.errstate(over="ignore"):
        tolerance = atol + rtol * np.abs(rhs)
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
    )


def at_most(
    smaller: float,
    larger: float,
    *,
    tolerance: float = 0.0,
    standard_error: float | None = None,
    note: str = "",
    figures: dict | None = None,
    conditions: Mapping[str, bool] | None = None,
) -> Evidence:
    """Holds when smaller ≤ larger + tolerance (an inequality, e.g. a bound or an optimality)."""
    smaller, larger = _number("smaller side", smaller, optional=False), _number("larger side", larger, optional=False)
    tolerance = _tolerance_part("tolerance", tolerance)
    return Evidence(
        holds=smaller <= larger + tolerance and all((conditions or {}).values()),
        theory=smaller,
        observed=larger,
        tolerance=tolerance,
        standard_error=standard_error,
        note=note,
        figures=dict(figures or {}),
        relation="at_most",
        conditions=dict(conditions or {}),
    )
