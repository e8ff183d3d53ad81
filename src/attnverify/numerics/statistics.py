"""Monte Carlo estimates with standard errors, and weighted line fits with error bars."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import arguments
from .backend import to_numpy


@dataclass(frozen=True)
class Estimate:
    """A Monte Carlo estimate: sample ``mean``, its ``standard_error``, and the sample count."""

    mean: float
    standard_error: float
    samples: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean", arguments.real("Estimate.mean", self.mean))
        object.__setattr__(self, "standard_error", arguments.nonnegative("Estimate.standard_error", self.standard_error))
        object.__setattr__(self, "samples", arguments.integer("Estimate.samples", self.samples, 1))

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        """The interval mean ± z·standard_error."""
        return self.mean - z * self.standard_error, self.mean + z * self.standard_error

    def as_dict(self) -> dict:
        return {"mean": self.mean, "standard_error": self.standard_error, "samples": self.samples}


def mean_estimate(values) -> Estimate:
    """Mean of i.i.d. draws with standard error s/√n (numpy or cupy input, float64)."""
    x = arguments.array("values", to_numpy(values), allow_empty=True).ravel()
    n = x.size
    if n < 2:
        raise ValueError(f"values must hold at least 2 draws to estimate an error, got {n}")
    return Estimate(float(x.mean()), float(x.std(ddof=1) / np.sqrt(n)), int(n))


class RunningMoments:
    """Running mean and sum of squared deviations over batches (Chan et al. pairwise update), so
    that a long simulation in chunks gives the same :class:`Estimate` as one pass."""

    def __init__(self) -> None:
        self.count = 0
        self.mean = 0.0
        self.m2 = 0.0

    def add(self, values, xp=np) -> None:
        """Fold in a batch of draws (numpy or cupy); NaN or infinity is an error."""
        m = int(values.size)
        if m == 0:
            return
        if not bool(xp.all(xp.isfinite(values))):
            raise ValueError("the simulation produced NaN or infinity; check the parameters")
        batch_mean = float(xp.mean(values))
        batch_m2 = float(xp.sum((values - batch_mean) ** 2))
        total = self.count + m
        delta = batch_mean - self.mean
        self.mean += delta * m / total
        self.m2 += batch_m2 + delta * delta * self.count * m / total
        self.count = total

    def estimate(self) -> Estimate:
        """The mean with standard error √(m2/(n−1)/n)."""
        n = self.count
        if n < 2:
            raise ValueError(f"at least 2 draws are needed to estimate an error, got {n}")
        return Estimate(self.mean, math.sqrt(self.m2 / (n - 1) / n), n)


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
    return Estimate(mean, se, int(n.sum()))


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
