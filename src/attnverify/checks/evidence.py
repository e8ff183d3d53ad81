"""Evidence: what one example of a claim measured, and whether the claim held there.

Every stochastic comparison states its tolerance as ``z · standard_error + bias_budget`` with
z ≥ 5 by default; exact identities use a relative tolerance near float64 round-off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..numerics.statistics import Estimate

#: Default number of standard errors in a stochastic tolerance.
DEFAULT_Z = 5.0


@dataclass(frozen=True)
class Evidence:
    """One example's verdict: the two sides, the tolerance, and the figures behind them."""

    holds: bool
    theory: float | None = None
    observed: float | None = None
    tolerance: float | None = None
    standard_error: float | None = None
    note: str = ""
    figures: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "holds": self.holds,
            "theory": self.theory,
            "observed": self.observed,
            "tolerance": self.tolerance,
            "standard_error": self.standard_error,
            "note": self.note,
            "figures": self.figures,
        }


def _finite(name: str, value: float) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} is not finite ({value}); the computation behind it broke down")
    return value


def within_error(
    theory: float,
    estimate: Estimate,
    *,
    z: float = DEFAULT_Z,
    bias_budget: float = 0.0,
    note: str = "",
    figures: dict | None = None,
) -> Evidence:
    """Holds when |theory − estimate.mean| ≤ z·SE + bias_budget (a stochastic equality)."""
    if z < 5:
        raise ValueError(f"z must be ≥ 5 for a claim's tolerance, got {z}")
    theory = _finite("theory", theory)
    tolerance = z * estimate.standard_error + bias_budget
    gap = abs(theory - estimate.mean)
    return Evidence(
        holds=gap <= tolerance,
        theory=theory,
        observed=estimate.mean,
        tolerance=tolerance,
        standard_error=estimate.standard_error,
        note=note or f"|gap| = {gap:.3g}, tolerance = {z:g}·SE + {bias_budget:.3g}",
        figures={"z": z, "bias_budget": bias_budget, "samples": estimate.samples, **(figures or {})},
    )


def close(
    lhs: float,
    rhs: float,
    *,
    rtol: float = 1e-12,
    atol: float = 0.0,
    note: str = "",
    figures: dict | None = None,
) -> Evidence:
    """Holds when |lhs − rhs| ≤ atol + rtol·|rhs| (an exact identity up to round-off)."""
    lhs, rhs = _finite("lhs", lhs), _finite("rhs", rhs)
    tolerance = atol + rtol * abs(rhs)
    return Evidence(
        holds=abs(lhs - rhs) <= tolerance,
        theory=lhs,
        observed=rhs,
        tolerance=tolerance,
        note=note or f"rtol = {rtol:g}, atol = {atol:g}",
        figures=dict(figures or {}),
    )


def at_most(
    smaller: float,
    larger: float,
    *,
    tolerance: float = 0.0,
    standard_error: float | None = None,
    note: str = "",
    figures: dict | None = None,
) -> Evidence:
    """Holds when smaller ≤ larger + tolerance (an inequality, e.g. a bound or an optimality)."""
    smaller, larger = _finite("smaller side", smaller), _finite("larger side", larger)
    return Evidence(
        holds=smaller <= larger + tolerance,
        theory=smaller,
        observed=larger,
        tolerance=tolerance,
        standard_error=standard_error,
        note=note,
        figures=dict(figures or {}),
    )
