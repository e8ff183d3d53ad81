"""The warm-up's adaptations of [`attnverify.numerics.hmc`][attnverify.numerics.hmc], each a value updated once per
transition: the per-chain step size by dual averaging toward a target acceptance (Hoffman & Gelman 2014, JMLR 15,
Algorithm 5), the shared trajectory length by ChEES (Hoffman, Radul & Sountsov 2021, AISTATS) with its
acceptance-weighted gradient, and Stan's windows for the mass matrix's estimate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..base.backend import array_module

@dataclass(frozen=True)
class DualAveraging:
    """The state of the per-chain step-size adaptation toward a target acceptance (Hoffman & Gelman 2014, Alg. 5):
    a value; `updated` gives the next one."""

    log_step: Any
    mu: Any
    error_sum: Any
    log_step_average: Any
    iteration: int = 0

    @classmethod
    def start(cls, log_step, xp) -> "DualAveraging":
        """The state before the first transition, from the log step sizes ``log_step`` (C,)."""
        return cls(log_step, log_step + math.log(10.0), xp.zeros_like(log_step), xp.zeros_like(log_step))

    def updated(self, acceptance, target: float, gamma: float = 0.05, t0: float = 10.0,
                kappa: float = 0.75) -> "DualAveraging":
        """The state after one transition with acceptance probabilities ``acceptance``; its ``log_step`` is the
        next log step sizes, its ``log_step_average`` the ones warm-up ends with."""
        m = self.iteration + 1
        eta = 1.0 / (m + t0)
        error_sum = (1 - eta) * self.error_sum + eta * (target - acceptance)
        log_step = self.mu - math.sqrt(m) / gamma * error_sum
        weight = m ** (-kappa)
        return DualAveraging(log_step, self.mu, error_sum, weight * log_step + (1 - weight) * self.log_step_average, m)


ADAPTATIONS = ("dual_averaging", "chees")

ACCEPTANCE_FLOOR = 1e-12
"""The least acceptance probability ChEES's harmonic mean counts (a chain that accepts nothing gives 0, whose inverse
is infinite): the mean is then about this floor times the chains, and the step size falls at dual averaging's rate."""


def van_der_corput(index: int) -> float:
    """The base-2 radical inverse of ``index`` ≥ 1 (1/2, 1/4, 3/4, 1/8, …): the low-discrepancy fractions h ∈ (0, 1)
    of the trajectory length that ChEES jitters by (Hoffman et al. 2021 use a Halton sequence)."""
    value, scale = 0.0, 0.5
    while index:
        value += scale * (index & 1)
        index >>= 1
        scale *= 0.5
    return value


@dataclass(frozen=True)
class TrajectoryLengthAdaptation:
    r"""The state of ChEES trajectory-length adaptation (Hoffman, Radul & Sountsov 2021): a value; `updated`
    gives the next. The length T is the longest trajectory; each transition integrates for h·T, h from
    `van_der_corput`, and T climbs the ChEES criterion E[(‖θ' − E θ'‖² − ‖θ − E θ‖²)²]/4 (θ' the proposal) by
    Adam on log T (β₁ = 0, β₂ = ``decay``) with the acceptance-weighted gradient estimate `chees_gradient`.
    ``log_length_average`` is the m^(−κ)-weighted average that warm-up ends with, as dual averaging's."""

    log_length: Any
    second_moment: Any
    log_length_average: Any
    iteration: int = 0

    @classmethod
    def start(cls, length, xp) -> "TrajectoryLengthAdaptation":
        log_length = xp.log(xp.asarray([float(length)]))
        return cls(log_length, xp.zeros_like(log_length), log_length)

    def updated(self, gradient, *, rate: float = 0.05, decay: float = 0.95, kappa: float = 0.75,
                shortest=None, longest=None) -> "TrajectoryLengthAdaptation":
        """After a transition whose ChEES gradient in log T is ``gradient`` (1,): one Adam ascent step of ``rate``
        (so log T moves by about ``rate`` an iteration), T kept within [``shortest``, ``longest``]."""
        xp = array_module(gradient)
        m = self.iteration + 1
        # a far chain's term can be enormous (|θ|⁴ in a funnel): clipped at 10 running RMS, so that one outlier
        # neither overflows the second moment nor freezes the length for the many iterations it takes to decay
        rms = xp.sqrt(self.second_moment / (1 - decay ** max(self.iteration, 1)))
        bound = xp.where(self.second_moment > 0, 10 * rms, 1e150)
        gradient = xp.clip(xp.where(xp.isfinite(gradient), gradient, 0.0), -bound, bound)
        second_moment = decay * self.second_moment + (1 - decay) * gradient * gradient
        scale = xp.sqrt(second_moment / (1 - decay**m)) + 1e-12
        log_length = self.log_length + rate * gradient / scale
        if shortest is not None:
            log_length = xp.clip(log_length, xp.log(shortest), xp.log(longest))
        weight = m ** (-kappa)
        return TrajectoryLengthAdaptation(log_length, second_moment,
                                          weight * log_length + (1 - weight) * self.log_length_average, m)


def chees_gradient(x, proposal, velocity, acceptance, fraction):
    r"""The acceptance-weighted estimate of d ChEES/dT over the chains (rows) of one transition from x to
    ``proposal``, whose end velocity M⁻¹p' is ``velocity``, integrated for h·T with h = ``fraction`` (a number, or one
    per chain), as its numerator and denominator (Σ a_i g_i, Σ a_i), two 0-d arrays: the estimate is their quotient,
    the denominator floored at 10⁻³⁰⁰ (the caller divides where the adaptation runs, on the host).

    With θ̃ the chains' positions about their mean, d/dT (‖θ̃'‖² − ‖θ̃‖²)²/4 = (‖θ̃'‖² − ‖θ̃‖²)·θ̃'·dθ'/dT and
    dθ'/dT = h·M⁻¹p' (Hoffman et al. 2021, eq. 6; the proposal θ' moves with the end of the trajectory). Each chain's
    term is weighted by its acceptance probability a_i, Σ a_i g_i/Σ a_i (their eq. 7); chains whose proposal or term
    is not finite (a diverging trajectory) weigh nothing and are left out of the proposals' mean. Temporaries are
    updated in place (the same operations in the same order, so the same bits)."""
    xp = array_module(x)
    finite = xp.isfinite(xp.sum(proposal, axis=1))
    finite &= xp.isfinite(xp.sum(velocity, axis=1))
    kept = finite[:, None]
    proposal = xp.where(kept, proposal, 0.0)
    centred = x - xp.mean(x, axis=0)
    mean = xp.sum(proposal, axis=0)
    mean /= xp.maximum(xp.sum(finite), 1)
    proposal -= mean  # the proposals about their mean
    change = xp.sum(proposal * proposal, axis=1)
    centred *= centred
    change -= xp.sum(centred, axis=1)
    terms = change
    terms *= fraction
    terms *= xp.sum(proposal * velocity, axis=1)  # a left-out chain's term is not used: its velocity is not zeroed
    finite &= xp.isfinite(terms)  # a finite but far proposal can overflow its term
    weights = xp.where(finite, acceptance, 0.0)
    weighted = xp.where(finite, terms, 0.0)
    weighted *= weights
    return xp.sum(weighted), xp.sum(weights)


def adaptation_windows(warmup: int) -> list[tuple[int, int]]:
    """The slow windows (start, end] of warm-up iterations (1-based) whose draws estimate M⁻¹: Stan's
    schedule of a 15% initial fast window, slow windows of 25, 50, 100, … iterations (the last stretched to
    meet the final 10% fast window). Empty when warm-up is too short (< 20 iterations): M stays the identity."""
    if warmup < 20:
        return []
    position, end = int(0.15 * warmup), warmup - max(1, int(0.1 * warmup))
    windows, size = [], 25
    while position + size <= end:
        if position + 3 * size > end:  # the next (doubled) window would not fit: this one takes the rest
            size = end - position
        windows.append((position, position + size))
        position += size
        size *= 2
    return windows
