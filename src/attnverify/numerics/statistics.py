"""Monte Carlo estimates with standard errors, and weighted line fits with error bars."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..base import arguments
from ..base.backend import to_numpy


@dataclass(frozen=True)
class Estimate:
    """A Monte Carlo estimate: sample ``mean``, its ``standard_error``, and the sample count.

    ``magnitude`` (optional) is the mean of |x| over the draws, the scale of the terms that were summed
    (a comparison's round-off floor is a few ulps of it, not of the mean, which may cancel to 0);
    ``identical`` says that every draw was the same number (so the standard error 0 is exact, not luck).
    """

    mean: float
    standard_error: float
    samples: int
    magnitude: float | None = None
    identical: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean", arguments.real("Estimate.mean", self.mean))
        object.__setattr__(self, "standard_error", arguments.nonnegative("Estimate.standard_error", self.standard_error))
        object.__setattr__(self, "samples", arguments.integer("Estimate.samples", self.samples, 1))
        if self.magnitude is not None:
            object.__setattr__(self, "magnitude", arguments.nonnegative("Estimate.magnitude", self.magnitude))
        object.__setattr__(self, "identical", arguments.flag("Estimate.identical", self.identical))

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        """The interval mean ± z·standard_error."""
        return self.mean - z * self.standard_error, self.mean + z * self.standard_error

    def as_dict(self) -> dict:
        return {"mean": self.mean, "standard_error": self.standard_error, "samples": self.samples,
                "magnitude": self.magnitude, "identical": self.identical}


def mean_estimate(values) -> Estimate:
    """Mean of i.i.d. draws with standard error s/√n (numpy or cupy input, float64)."""
    x = arguments.array("values", to_numpy(values), allow_empty=True).ravel()
    n = x.size
    if n < 2:
        raise ValueError(f"values must hold at least 2 draws to estimate an error, got {n}")
    # scaled by the largest |x| first: the squares of draws near 1e300 overflow float64, their spread does not
    top = float(np.max(np.abs(x)))
    spread = top * float((x / top).std(ddof=1)) if top > 0 else 0.0
    return Estimate(float(x.mean()), spread / math.sqrt(n), int(n),
                    magnitude=float(np.abs(x).mean()), identical=bool(x.min() == x.max()))


class RunningMoments:
    """Running mean and sum of squared deviations over batches (Chan, Golub & LeVeque 1979, pairwise
    update), so that a long simulation in chunks gives the same :class:`Estimate` as one pass; it also
    keeps the running mean of |x| and the smallest and largest draw (for ``magnitude`` and ``identical``)."""

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self.scale = 0.0  # the largest |x| so far: deviations are summed in units of it, so draws near 1e200
        self.scaled_m2 = 0.0  # (whose squares overflow float64) keep a finite spread
        self.absolute = 0.0
        self.low = math.inf
        self.high = -math.inf

    @property
    def m2(self) -> float:
        """The sum of squared deviations from the mean (infinite where it overflows float64)."""
        with np.errstate(over="ignore"):
            return float(np.float64(self.scaled_m2) * np.float64(self.scale) ** 2)

    def add(self, values, xp=np) -> None:
        """Fold in a batch of draws (numpy or cupy); NaN or infinity is an error."""
        m = int(values.size)
        if m == 0:
            return
        if not bool(xp.all(xp.isfinite(values))):
            raise ValueError("the simulation produced NaN or infinity; check the parameters")
        top = float(xp.max(xp.abs(values)))
        if top > self.scale:
            if self.scale > 0:
                self.scaled_m2 *= (self.scale / top) ** 2
            self.scale = top
        batch_mean = float(xp.mean(values))
        if self.scale > 0:
            scaled = values / self.scale
            batch_m2 = float(xp.sum((scaled - batch_mean / self.scale) ** 2))
        else:
            batch_m2 = 0.0
        total = self.count + m
        delta = batch_mean - self.mean
        self.mean += delta * m / total
        if self.scale > 0:
            self.scaled_m2 += batch_m2 + (delta / self.scale) ** 2 * self.count * m / total
        self.absolute += (float(xp.mean(xp.abs(values))) - self.absolute) * m / total
        self.low = min(self.low, float(xp.min(values)))
        self.high = max(self.high, float(xp.max(values)))
        self.count = total

    def estimate(self) -> Estimate:
        """The mean with standard error √(m2/(n−1)/n), computed in units of the largest |x|."""
        n = self.count
        if n < 2:
            raise ValueError(f"at least 2 draws are needed to estimate an error, got {n}")
        return Estimate(self.mean, self.scale * math.sqrt(self.scaled_m2 / (n - 1) / n), n, magnitude=self.absolute,
                        identical=self.low == self.high)


def combine(estimates: list[Estimate]) -> Estimate:
    """Pool independent estimates of the same mean, weighted by their sample counts."""
    if not isinstance(estimates, (list, tuple)) or not all(isinstance(e, Estimate) for e in estimates):
        raise TypeError(f"estimates must be a list of Estimate, got {estimates!r}")
    if not estimates:
        raise ValueError("estimates must not be empty")
    n = np.array([e.samples for e in estimates], dtype=np.float64)
    w = n / n.sum()
    mean = float(np.sum(w * [e.mean for e in estimates]))
    se = float(np.sqrt(np.sum((w * [e.standard_error for e in estimates]) ** 2)))
    magnitudes = [e.magnitude for e in estimates]
    magnitude = None if None in magnitudes else float(np.sum(w * magnitudes))
    identical = all(e.identical and e.mean == estimates[0].mean for e in estimates)
    return Estimate(mean, se, int(n.sum()), magnitude=magnitude, identical=identical)


@dataclass(frozen=True)
class LineFit:
    """y ≈ intercept + slope·x, with standard errors from the weights (or the residuals)."""

    slope: float
    intercept: float
    slope_standard_error: float
    intercept_standard_error: float
    points: int

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def fit_line(x, y, standard_errors=None) -> LineFit:
    """Weighted least-squares line through (x, y).

    With ``standard_errors`` the weights are 1/σ² and the parameter errors are the usual
    (XᵀWX)⁻¹ diagonal (solved, not inverted); without, the residual variance is used.
    """
    x = arguments.array("x", x, ndim=1)
    y = arguments.array("y", y, shape=(x.size,))
    if x.size < 3:
        raise ValueError(f"x and y must hold at least 3 points for a line with error bars, got {x.size}")
    if np.ptp(x) == 0:
        raise ValueError("x must take at least 2 distinct values to fit a slope")
    design = np.stack([np.ones_like(x), x], axis=1)
    if standard_errors is None:
        weights = np.ones_like(x)
    else:
        sigma = arguments.array("standard_errors", standard_errors, shape=(x.size,))
        if np.any(sigma <= 0):
            raise ValueError("standard_errors must be > 0 (one per point)")
        weights = 1.0 / sigma**2
    normal = design.T @ (weights[:, None] * design)
    rhs = design.T @ (weights * y)
    chol = np.linalg.cholesky(normal)
    params = np.linalg.solve(chol.T, np.linalg.solve(chol, rhs))
    covariance = np.linalg.solve(chol.T, np.linalg.solve(chol, np.eye(2)))
    if standard_errors is None:
        residual = y - design @ params
        covariance = covariance * float(residual @ residual) / (x.size - 2)
    errors = np.sqrt(np.diag(covariance))
    return LineFit(float(params[1]), float(params[0]), float(errors[1]), float(errors[0]), int(x.size))
