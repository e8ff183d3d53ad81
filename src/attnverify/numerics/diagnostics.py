"""MCMC convergence diagnostics and Monte Carlo standard errors, from arviz-stats.

Rank-normalised split R-hat and bulk/tail effective sample sizes are those of Vehtari, Gelman, Simpson,
Carpenter & Bürkner (2021, Bayesian Analysis 16, "Rank-normalization, folding, and localization"),
computed by ``arviz_stats.base.array_stats``. Draws are arrays (..., chains, draws); the MCSE of a
posterior mean is sd / sqrt(bulk ESS) (their eq. for the mean, arviz's ``mcse(method='mean')``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from arviz_stats.base import array_stats

from . import arguments
from .backend import to_numpy

TAIL_PROBABILITIES = (0.05, 0.95)
"""Quantiles of the tail ESS (Vehtari et al. 2021 §4.3)."""

RHAT_LIMIT = 1.01
ESS_MINIMUM = 400
"""Vehtari et al.'s recommendations: R-hat < 1.01 and bulk/tail ESS > 100 per chain, 400 in all."""


def _draws(values, name: str) -> np.ndarray:
    x = np.ascontiguousarray(arguments.array(name, to_numpy(values) if hasattr(values, "dtype") else values))
    if x.ndim < 2 or x.shape[-2] < 2 or x.shape[-1] < 4:
        raise ValueError(f"{name} must be shaped (..., chains ≥ 2, draws ≥ 4), got {x.shape}")
    return x


def _constant(x: np.ndarray) -> np.ndarray:
    """Elements whose draws are all equal (no variance: R-hat and ESS are 0/0 in their formulas)."""
    return np.all(x == x[..., :1, :1], axis=(-2, -1))


def _rhat(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.asarray(array_stats.rhat(x, method="rank"), dtype=float)
    return np.where(_constant(x), 1.0, r)


def _ess(x: np.ndarray, method: str) -> np.ndarray:
    options = {"prob": TAIL_PROBABILITIES} if method == "tail" else {}
    with np.errstate(invalid="ignore", divide="ignore"):
        ess = np.asarray(array_stats.ess(x, method=method, **options), dtype=float)
    return np.where(_constant(x), float(x.shape[-2] * x.shape[-1]), ess)


def rhat(values) -> np.ndarray:
    """Rank-normalised split R-hat of draws (..., chains, draws), the max of bulk and folded
    (1 for an element constant across all draws)."""
    return _rhat(_draws(values, "values"))


def ess_bulk(values) -> np.ndarray:
    """Bulk effective sample size of draws (..., chains, draws) (all draws for a constant element)."""
    return _ess(_draws(values, "values"), "bulk")


def ess_tail(values) -> np.ndarray:
    """Tail effective sample size at the 5% and 95% quantiles (all draws for a constant element)."""
    return _ess(_draws(values, "values"), "tail")


@dataclass(frozen=True)
class ChainSummary:
    """Posterior mean with its MCSE and the convergence diagnostics, element-wise over the leading axes."""

    mean: np.ndarray
    standard_deviation: np.ndarray
    mcse: np.ndarray
    rhat: np.ndarray
    ess_bulk: np.ndarray
    ess_tail: np.ndarray

    @property
    def converged(self) -> bool:
        """R-hat < 1.01 and bulk and tail ESS ≥ 400 for every element."""
        return bool(np.all(self.rhat < RHAT_LIMIT) and np.all(self.ess_bulk >= ESS_MINIMUM)
                    and np.all(self.ess_tail >= ESS_MINIMUM))

    def worst(self) -> dict:
        """The least converged element's figures (for tables and notes)."""
        return {"max_rhat": float(np.max(self.rhat)), "min_ess_bulk": float(np.min(self.ess_bulk)),
                "min_ess_tail": float(np.min(self.ess_tail))}


def summarize(values) -> ChainSummary:
    """Mean, sd, MCSE = sd/√ESS_bulk, R-hat and ESS of draws (..., chains, draws).

    An element constant across all draws (zero variance) gets MCSE 0, R-hat 1 and ESS = number of draws.
    """
    x = _draws(values, "values")
    mean = x.mean(axis=(-2, -1))
    sd = x.std(axis=(-2, -1), ddof=1)
    constant = _constant(x)
    bulk, tail, r = _ess(x, "bulk"), _ess(x, "tail"), _rhat(x)
    mcse = np.where(constant, 0.0, sd / np.sqrt(np.maximum(bulk, 1.0)))
    return ChainSummary(mean, sd, mcse, r, bulk, tail)
