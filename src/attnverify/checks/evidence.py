"""Evidence: what one example of a claim measured, and whether the claim held there.

A stochastic comparison's tolerance is ``z · standard_error + bias_budget`` (z ≥ 5 by default), plus the round-off
floor of `.roundoff`; `.comparisons` builds each kind of comparison's evidence. The verdict (`STATUSES`) is *holds*,
*refuted* or *inconclusive* (a bound short of z SE, an error bar wider than the gap it must resolve, a sampler not
converged: with ``needed``, what would decide it). Evidence validates itself (a real bool, finite sides, tolerance
and standard error ≥ 0) and recomputes its verdict from its *relation* and named *conditions*: a ``holds`` that
disagrees with its figures is an error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Any, Mapping

import numpy as np

from ..base.arguments import Checked, checked

#: Default number of standard errors in a stochastic tolerance.
DEFAULT_Z = 5.0

#: The verdicts of a piece of evidence (and of a claim: ``"error"`` besides, for a check that failed to run).
STATUSES = ("holds", "refuted", "inconclusive")

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


def real_number(name: str, value: Any, *, nonnegative: bool = False, optional: bool = True) -> float | None:
    """``value`` as a finite float (≥ 0 where ``nonnegative``; None passes where ``optional``), else EvidenceError
    naming ``name``: a side, tolerance or figure of a comparison."""
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


def _text(name: str, value: Any, *, why: bool = False) -> str:
    if not isinstance(value, str):
        raise EvidenceError(f"{name} must be a string{' (why it is)' if why else ''}, got "
                            + (repr(value) if why else type(value).__name__))
    return value


def _figures(name: str, value: Any) -> dict:
    if not isinstance(value, Mapping):
        raise EvidenceError(f"{name} must be a dict, got {type(value).__name__}")
    return value


def _entries(name: str, value: Any, what: str, entry) -> dict:
    """``value`` as a dict of name (a string) → ``entry(f"{name}[key]", item)`` (a dict of name → ``what``)."""
    if not isinstance(value, Mapping):
        raise EvidenceError(f"{name} must be a dict of name → {what}, got {value!r}")
    return {str(k): entry(f"{name}[{k!r}]", v) for k, v in value.items()}


def positive_count(name: str, value: Any) -> int:
    """``value`` as an int ≥ 1 (a count of draws, seeds, examples), else EvidenceError naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise EvidenceError(f"{name} must be a positive int, got {value!r}")
    return int(value)


def _labels(name: str, value: Any) -> tuple[str, str]:
    labels = tuple(value) if isinstance(value, (tuple, list)) else ()
    if len(labels) != 2 or not all(isinstance(x, str) and x.strip() for x in labels):
        raise EvidenceError(f"{name} must be two non-empty strings (the sides' names), got {value!r}")
    return labels


def relation_holds(relation: str, theory: float, observed: float, tolerance: float) -> bool:
    """The verdict of ``relation`` (a key of `RELATIONS` other than ``custom``) on the two sides."""
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
class Evidence(Checked):
    """One example's verdict: the two sides, the tolerance, and the figures behind them.

    ``relation`` says how the sides compare when the claim holds (`RELATIONS`); left as
    ``None`` it is ``"equal"`` when theory, observed and tolerance are all given, else ``"custom"``.
    ``conditions`` names further facts the verdict needs (``{"Hessian positive": True}``). The
    verdict is ``relation(theory, observed, tolerance) and all(conditions)``; ``holds`` must equal it.
    With ``relation="custom"`` and no conditions the check's own ``holds`` is taken as it is.

    ``inconclusive`` (a sentence: why) makes evidence that does not hold *inconclusive* instead of a
    refutation; ``needed`` says what would decide it (``{"draws": 120_000}``, ``{"seeds": 16}``).
    ``labels`` names the two sides where "theory"/"observed" (and "value"/"bound" for ``at_most``) would not fit
    (``close(lhs, rhs, labels=("generated", "sympy"))``).
    ``vacuous`` (a sentence: why) marks evidence that holds but could not have told the claim from a false one
    (its resolution, or the round-off floor that decided it, exceeds both sides); a claim that holds on vacuous
    examples alone is inconclusive
    ([`run_claim`][attnverify.checks.runner.run_claim]).
    """

    holds: bool = checked(_bool, named="Evidence.holds")
    theory: float | None = checked(real_number, default=None, named="Evidence.theory")
    observed: float | None = checked(real_number, default=None, named="Evidence.observed")
    tolerance: float | None = checked(real_number, default=None, nonnegative=True, named="Evidence.tolerance")
    standard_error: float | None = checked(real_number, default=None, nonnegative=True, named="Evidence.standard_error")
    note: str = checked(_text, default="", named="Evidence.note")
    figures: dict[str, Any] = checked(_figures, default_factory=dict, named="Evidence.figures")
    relation: str | None = None
    conditions: Mapping[str, bool] = checked(_entries, "bool", _bool, default_factory=dict, named="Evidence.conditions")
    inconclusive: str = checked(_text, default="", named="Evidence.inconclusive", why=True)
    needed: Mapping[str, int] = checked(_entries, "count", positive_count, default_factory=dict,
                                        named="Evidence.needed")
    labels: tuple[str, str] | None = checked(_labels, default=None, optional=True, named="Evidence.labels")
    vacuous: str = ""

    def _check_fields(self) -> None:
        """The relation (given, else equal with three sides, else custom); vacuous only if it holds; verdict = holds."""
        sides = (self.theory, self.observed, self.tolerance)
        relation = self.relation
        if relation is None:
            relation = "equal" if all(side is not None for side in sides) else "custom"
        if relation not in RELATIONS:
            raise EvidenceError(f"Evidence.relation must be one of {tuple(RELATIONS)}, got {relation!r}")
        if relation != "custom" and any(side is None for side in sides):
            raise EvidenceError(f"Evidence.relation {relation!r} needs theory, observed and tolerance")
        object.__setattr__(self, "relation", relation)
        if not isinstance(self.vacuous, str) or (self.vacuous and not self.holds):
            raise EvidenceError(f"Evidence.vacuous must be a string (why), and given only where it holds, got "
                                f"{self.vacuous!r} with holds={self.holds}")
        if self.inconclusive and self.holds:
            raise EvidenceError("Evidence cannot both hold and be inconclusive: holds must be False when "
                                f"inconclusive is given ({self.inconclusive!r})")
        verdict = self.verdict()
        if self.inconclusive:  # holds is False; an equality or bound the figures contradict is refuted, not undecided
            if verdict is False and relation in ("equal", "at_most"):
                raise EvidenceError(f"Evidence says inconclusive, but its figures contradict the claim: {self.explain()}")
        elif verdict is not None and verdict != self.holds:
            raise EvidenceError(f"Evidence says holds={self.holds}, but its figures say {verdict}: {self.explain()}")

    @property
    def status(self) -> str:
        """``"holds"``, ``"inconclusive"`` or ``"refuted"`` (`STATUSES`)."""
        return "holds" if self.holds else ("inconclusive" if self.inconclusive else "refuted")

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

    @property
    def side_names(self) -> tuple[str, str]:
        """The names of the two sides (`side_names`)."""
        return side_names(self.relation, self.labels)

    def as_dict(self) -> dict:
        return {
            "holds": self.holds,
            "status": self.status,
            "inconclusive": self.inconclusive,
            **({"vacuous": self.vacuous} if self.vacuous else {}),
            "needed": dict(self.needed),
            "theory": self.theory,
            "observed": self.observed,
            "tolerance": self.tolerance,
            "standard_error": self.standard_error,
            "relation": self.relation,
            "labels": list(self.side_names),
            "conditions": dict(self.conditions),
            "note": self.note,
            "figures": self.figures,
        }


def side_names(relation: str | None, labels=None) -> tuple[str, str]:
    """The names of an evidence's two sides: its ``labels``, else ("value", "bound") for an inequality ``at_most``
    (its smaller side is not a theory, nor its larger an observation), ("bound", "observed") for a one-sided
    [`exceeds`][attnverify.checks.comparisons.exceeds] (its first side is the bound the mean must pass), else ("theory",
    "observed")."""
    if labels and len(labels) == 2:
        return tuple(labels)
    return {"at_most": ("value", "bound"), "above": ("bound", "observed")}.get(relation, ("theory", "observed"))
