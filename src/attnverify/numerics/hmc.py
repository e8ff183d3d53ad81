r"""Hamiltonian Monte Carlo for a batch of chains, in coordinates where the prior is $\mathcal{N}(0, I)$.

One transition (Neal 2011, "MCMC using Hamiltonian dynamics", §5.3.2): draw a momentum $p \sim \mathcal{N}(0, M)$,
take ``steps`` leapfrog steps of size $\varepsilon$ on $H(x, p) = \Phi(x) + p^\top M^{-1} p/2$, accept with probability
$\min(1, \exp(-\Delta H))$ (Metropolis–Hastings), else stay. The mass starts as the identity in prior-whitened
coordinates (directions the data do not constrain have unit scale); with ``mass_matrix="diagonal"`` its
inverse $M^{-1}$ is adapted during warm-up to the posterior variance of each coordinate, pooled over chains, in
Stan's windows (a fast window of 15% of warm-up for the step size, slow windows of 25, 50, 100, … draws that
each end with a new $M^{-1}$ and a restart of the step-size adaptation, a final fast window of 10%; Stan
Reference Manual, "HMC algorithm parameters", with its regularisation
$(n/(n+5)) \cdot \operatorname{var} + 10^{-3} \cdot 5/(n+5)$).

Every chain is a row of ``x`` (shape (chains, dimension)); each chain has its own step size, all share the
number of leapfrog steps so the batch stays one array operation. Step sizes are adapted only during
warm-up, by the dual averaging of Hoffman & Gelman (2014, JMLR 15, Algorithm 5, their constants $\gamma = 0.05$,
$t_0 = 10$, $\kappa = 0.75$), then frozen, so the sampling phase is an exact MH kernel.
A transition with $\Delta H >$ ``DIVERGENCE`` is recorded as divergent (and rejected, as MH would anyway).
For many chains, ``adapt="chees"`` adapts one step size and the trajectory length across all chains instead
(`TrajectoryLengthAdaptation`, ChEES: Hoffman, Radul & Sountsov
2021, AISTATS); the adaptations are `attnverify.numerics.hmc_adaptation`.
Runs unchanged on numpy or cupy: every operation on the chains goes through ``backend.xp`` (ChEES's shared step
and trajectory length, scalars, are adapted on the host).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Callable

import numpy as np

from ..base import arguments
from ..base.backend import Backend, array_module, fused, on_device, to_numpy
from .hmc_adaptation import (ACCEPTANCE_FLOOR, ADAPTATIONS, DualAveraging, TrajectoryLengthAdaptation,
                             adaptation_windows, chees_gradient, van_der_corput)

#: Potential and its gradient, batched over chains: x (C, d) -> (Φ (C,), ∇Φ (C, d)).
PotentialAndGradient = Callable[[Any], tuple[Any, Any]]

DIVERGENCE = 1000.0
"""Energy error above which a trajectory counts as divergent (Stan's and numpyro's threshold)."""


@dataclass(frozen=True)
class KernelState:
    """Everything the HMC kernel changes as its chains move: the per-chain step sizes, the leapfrog steps, the
    inverse mass, the step-size adaptation, the warm-up iteration and the draws of the current mass window. A
    value: kept with the random generator's state, it replays the chains from there. With ChEES (``adapt="chees"``)
    also the trajectory-length adaptation, the frozen longest length after warm-up (a host float) and the transitions
    made (the index of the next jitter fraction); the step sizes (all equal) and both adaptations are then host
    (numpy) arrays, whatever the backend."""

    step: Any
    steps: int
    inverse_mass: Any = 1.0
    adaptation: DualAveraging | None = None
    iteration: int = 0
    window: tuple = ()
    warming: bool = True
    trajectory: TrajectoryLengthAdaptation | None = None
    length: float | None = None
    transitions: int = 0


@dataclass
class TransitionStats:
    """What one batched transition did: acceptance probability, acceptance, divergence, energy error; the proposal
    and its end momentum (before the MH decision) and the leapfrog steps taken."""

    acceptance_probability: Any
    accepted: Any
    divergent: Any
    energy_error: Any
    proposal: Any = None
    momentum: Any = None
    steps: int = 0


def leapfrog(x, p, gradient, step, steps: int, potential_and_gradient: PotentialAndGradient, inverse_mass=1.0):
    r"""``steps`` leapfrog steps of per-chain size ``step`` (C,) from $(x, p)$ with $\nabla\Phi(x) =$ ``gradient``,
    for the kinetic energy $p^\top M^{-1} p/2$ with diagonal ``inverse_mass`` $M^{-1}$ (d,) (or 1, the identity).

    Returns $(x, p, \Phi(x), \nabla\Phi(x))$ at the end of the trajectory. Every operation is one array operation over
    all chains: a step costs the potential's own operations plus two fused ones (one kernel each on cupy), the drift
    $x + \varepsilon M^{-1}p$ and the kick $p - \varepsilon\nabla\Phi$, each a new array (the potential may keep
    its $x$, e.g. return it as its gradient). ``x``, ``p`` and ``gradient`` are left as they are.
    """
    eps = step[:, None]
    half = 0.5 * eps
    velocity = eps if _identity(inverse_mass) else eps * inverse_mass  # ε M⁻¹: (C, 1) for M = I, else (C, d)
    xp = array_module(x)
    drift, kick = fused(_drift, xp), fused(_kick, xp)
    p = kick(p, half, gradient)
    potential = None
    for k in range(steps):
        x = drift(x, velocity, p)
        potential, gradient = potential_and_gradient(x)
        if k < steps - 1:
            p = kick(p, eps, gradient)
    p = kick(p, half, gradient)
    return x, p, potential, gradient


def _drift(xp, x, velocity, p):
    r"""$x + \varepsilon M^{-1}p$, as $\varepsilon M^{-1}p + x$."""
    return velocity * p + x


def _kick(xp, p, size, gradient):
    r"""$p - \varepsilon\nabla\Phi$ for the (half) step ``size``."""
    return p - size * gradient


def _identity(inverse_mass) -> bool:
    """Whether ``inverse_mass`` is the identity (the number 1), so that multiplying by it is left out (exact)."""
    return isinstance(inverse_mass, (int, float)) and inverse_mass == 1


def _kinetic_energy(xp, p):
    """½|p|² per chain (C,), as Σ ½p²: halving is exact, so the bits of ½Σp²."""
    return xp.sum(0.5 * (p * p), axis=1)


def _weighted_kinetic_energy(xp, inverse_mass, p):
    """½ pᵀM⁻¹p per chain (C,) for a diagonal M⁻¹ (d,), as Σ ½(M⁻¹p)p."""
    return xp.sum(0.5 * ((inverse_mass * p) * p), axis=1)


def _energy_error(xp, kinetic, potential, start_kinetic, start_potential):
    """ΔH = (K₁ + Φ₁) − (K₀ + Φ₀) per chain, +∞ where it is not finite (an overflowing trajectory, rejected)."""
    energy_error = (kinetic + potential) - (start_kinetic + start_potential)
    return xp.where(xp.isfinite(energy_error), energy_error, xp.inf)


def _acceptance_probability(xp, energy_error):
    """min(1, exp(−ΔH))."""
    return xp.exp(xp.minimum(0.0, -energy_error))


def _accepts(xp, uniform, energy_error):
    """Metropolis–Hastings: ln u < min(0, −ΔH) for u ~ U(0, 1)."""
    return xp.log(uniform) < xp.minimum(0.0, -energy_error)


def hmc_transition(x, potential, gradient, step, steps: int, potential_and_gradient: PotentialAndGradient,
                   rng, backend: Backend, inverse_mass=1.0):
    r"""One HMC transition for every chain, momentum $p \sim \mathcal{N}(0, M)$ with diagonal $M = 1/$``inverse_mass``.
    Returns ($x$, $\Phi$, $\nabla\Phi$, TransitionStats). Its bookkeeping (kinetic energies, $\Delta H$, acceptance)
    is fused operations: one kernel each on cupy, whatever the chains."""
    xp = backend.xp
    p0 = rng.standard_normal(x.shape)
    if _identity(inverse_mass):
        kinetic = backend.fused(_kinetic_energy)
    else:
        p0 /= xp.sqrt(inverse_mass)
        kinetic = partial(backend.fused(_weighted_kinetic_energy), inverse_mass)
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging trajectory overflows; it is rejected
        x1, p1, potential1, gradient1 = leapfrog(x, p0, gradient, step, steps, potential_and_gradient, inverse_mass)
        energy_error = backend.fused(_energy_error)(kinetic(p1), potential1, kinetic(p0), potential)
    accepted = backend.fused(_accepts)(rng.uniform(size=x.shape[0]), energy_error)
    divergent = energy_error > DIVERGENCE
    keep = accepted[:, None]
    x = xp.where(keep, x1, x)
    gradient = xp.where(keep, gradient1, gradient)
    potential = xp.where(accepted, potential1, potential)
    stats = TransitionStats(backend.fused(_acceptance_probability)(energy_error), accepted, divergent, energy_error,
                            x1, p1, steps)
    return x, potential, gradient, stats


def steps_for(trajectory_length: float, step, max_steps: int, backend: Backend) -> int:
    """Leapfrog steps so that the median chain integrates for ``trajectory_length`` (capped)."""
    return _steps_for_median(trajectory_length, float(backend.to_numpy(backend.xp.median(step))), max_steps)


def _steps_for_median(trajectory_length: float, median: float, max_steps: int) -> int:
    """[`steps_for`][attnverify.numerics.hmc.steps_for] from the median step, a host float."""
    return int(min(max_steps, max(1, math.ceil(trajectory_length / median))))


def initial_step_size(x, potential, gradient, potential_and_gradient: PotentialAndGradient, rng,
                      backend: Backend, start: float = 1.0) -> Any:
    """Per-chain step at which one leapfrog step is accepted with probability about 1/2, by doubling or
    halving from ``start`` (the prior scale in whitened coordinates); Hoffman & Gelman 2014, Alg. 4."""
    return _step_size_search(x, potential, gradient, potential_and_gradient, rng, backend, start)[0]


def _step_size_search(x, potential, gradient, potential_and_gradient: PotentialAndGradient, rng, backend: Backend,
                      start: float = 1.0) -> tuple[Any, float | None]:
    """[`initial_step_size`][attnverify.numerics.hmc.initial_step_size]'s step and its median, a host float read with
    the check that ends the search (None if the search ran out of trials). One host read a trial from the second on: the
    first settles no chain, each chain's direction being that trial's own, so it is not checked."""
    xp = backend.xp
    kinetic = backend.fused(_kinetic_energy)
    step = xp.full(x.shape[0], float(start))
    settled = xp.zeros(x.shape[0], dtype=bool)
    direction = factor = None
    for _ in range(60):
        p = rng.standard_normal(x.shape)
        with np.errstate(over="ignore", invalid="ignore"):  # a too-large trial step may overflow: rejected
            x1, p1, potential1, _ = leapfrog(x, p, gradient, step, 1, potential_and_gradient)
            # Φ − Φ₁ + (½|p|² − ½|p₁|²): the bits of Φ − Φ₁ + ½(|p|² − |p₁|²), halving being exact
            log_ratio = potential - potential1
            log_ratio += kinetic(p) - kinetic(p1)
        log_ratio = xp.where(xp.isfinite(log_ratio), log_ratio, -xp.inf)
        up = log_ratio > math.log(0.5)
        if direction is None:
            direction, factor = up, xp.where(up, 2.0, 0.5)  # each chain doubles or halves until its trial flips
        else:
            settled |= up != direction
            done, median = to_host_at_once((xp.all(settled), xp.median(step)))
            if bool(done):
                return step, float(median)
        step = xp.where(settled, step, step * factor)
    return step, None


def _jitter_factor(xp, uniform, jitter):
    """1 + jitter·(2u − 1), as ((2u − 1)·jitter) + 1."""
    return (uniform * 2.0 - 1.0) * jitter + 1.0


MASS_MATRICES = ("identity", "diagonal")


class HMCKernel:
    r"""Batched HMC with per-chain step sizes (and, on request, a diagonal mass matrix shared by the chains)
    adapted during warm-up only, then frozen. The kernel holds its settings; what changes is a
    [`KernelState`][attnverify.numerics.hmc.KernelState] value, passed in and returned.

    `start` is the state at the given step sizes; ``transition(state, …)`` moves every chain once and
    returns the next state: while warming it feeds acceptances to dual averaging and recomputes the number of
    leapfrog steps, and with ``mass_matrix="diagonal"`` and a ``warmup`` length it collects the draws of each slow
    window and ends it with a new $M^{-1}$ (module docstring); ``end_warmup(state)`` freezes the averaged step sizes,
    the mass and the steps.

    ``adapt="chees"`` (for many chains): one step size for all chains, dual-averaged on the harmonic mean of the
    chains' acceptance (starting from the median of the given steps; the harmonic mean follows the chains that accept
    least, so a chain started where the shared step diverges pulls the step down until it moves, where the arithmetic
    mean left one start in 64 of the attention-path posterior at $T = 0.01$ at acceptance 0 for a whole run), and the
    longest trajectory $T$ adapted by ChEES (`TrajectoryLengthAdaptation`, from ``trajectory_length``); each
    transition, in warm-up and after it, takes $\lceil h \cdot T/\varepsilon\rceil$ leapfrog steps (at most
    ``max_steps``) for the next jitter fraction $h$ (`van_der_corput`), a choice independent of the state, which keeps
    the frozen kernel exact. The shared step, $T$ and their adaptation are scalars, kept and updated on the host
    (numpy arrays in the state, as on the numpy backend, so the same bits): a warm-up iteration reads the three sums
    over the chains they need in one transfer (as dual averaging reads its median step); sampling reads nothing.

    ``step_median``: the median of ``step`` as a host float, where the caller has read it already
    ([`run_chains`][attnverify.numerics.hmc.run_chains], from the step-size search); ``step`` is then used as given,
    without the checks (and host reads) of a step passed in from outside.
    """

    def __init__(self, step, *, backend: Backend | str | None = None, trajectory_length: float = math.pi / 2,
                 target_acceptance: float = 0.8, max_steps: int = 1024, jitter: float = 0.1,
                 mass_matrix: str = "identity", warmup: int | None = None, adapt: str = "dual_averaging",
                 step_median: float | None = None):
        self.backend = backend = arguments.backend(backend)
        if step_median is None:
            step = arguments.array("step", backend.to_numpy(step) if hasattr(step, "dtype") else step, backend,
                                   ndim=1)
            if not bool(backend.xp.all(step > 0)):
                raise ValueError("step must hold one step size > 0 per chain")
        self.trajectory_length = arguments.positive("trajectory_length", trajectory_length)
        self.max_steps = arguments.integer("max_steps", max_steps, 1)
        self.jitter = arguments.real("jitter", jitter, low=0, high=1, open_high=True)
        self.target_acceptance = arguments.real("target_acceptance", target_acceptance, low=0, high=1,
                                                open_low=True, open_high=True)
        self.mass_matrix = arguments.one_of("mass_matrix", mass_matrix, MASS_MATRICES)
        self.adapt = arguments.one_of("adapt", adapt, ADAPTATIONS)
        self.windows: list[tuple[int, int]] = []
        if self.mass_matrix == "diagonal":
            if warmup is None:
                raise ValueError("mass_matrix='diagonal' needs the warm-up length (warmup=…) to lay out its windows")
            self.windows = adaptation_windows(arguments.integer("warmup", warmup, 1))
        if step_median is None:
            step_median = backend.to_numpy(backend.xp.median(step))
        if self.adapt == "chees":  # the shared step and its adaptation live on the host (class docstring)
            log_step = np.log(step_median).reshape(1)
            self.start = KernelState(np.exp(log_step) * np.ones(step.shape[0]), 1,
                                     adaptation=DualAveraging.start(log_step, np),
                                     trajectory=TrajectoryLengthAdaptation.start(self.trajectory_length, np))
            return
        self.start = KernelState(step, _steps_for_median(trajectory_length, float(step_median), max_steps),
                                 adaptation=DualAveraging.start(backend.xp.log(step), backend.xp))

    def _adapt_mass(self, state: KernelState, x) -> KernelState:
        """Collect x during a slow window; at its end, M⁻¹ ← regularised pooled variance and the step-size
        adaptation restarts from the current steps."""
        window = next(((start, end) for start, end in self.windows if start < state.iteration <= end), None)
        if window is None:
            return state
        if state.iteration < window[1]:
            return replace(state, window=state.window + (x,))
        xp = self.backend.xp
        draws = xp.concatenate(state.window + (x,), axis=0)  # (window length · chains, d)
        n = draws.shape[0]
        inverse_mass = (n / (n + 5.0)) * xp.var(draws, axis=0, ddof=1) + 1e-3 * (5.0 / (n + 5.0))
        if self.adapt == "chees":
            adaptation = DualAveraging.start(np.log(state.step[:1]), np)
        else:
            adaptation = DualAveraging.start(xp.log(state.step), xp)
        return replace(state, inverse_mass=inverse_mass, window=(), adaptation=adaptation)

    def _jitter(self, rng, chains: int):
        """The step factors 1 + jitter·(2u − 1), u ~ U(0, 1) (C,), in one fused operation."""
        return self.backend.fused(_jitter_factor)(rng.uniform(size=chains), self.jitter)

    def transition(self, state: KernelState, x, potential, gradient, potential_and_gradient: PotentialAndGradient,
                   rng) -> tuple[KernelState, Any, Any, Any, TransitionStats]:
        r"""One MH-corrected transition of every chain (step sizes jittered by $\pm\text{jitter}$, independently
        of the state, which keeps the kernel exact). Returns (the next state, $x$, $\Phi$, $\nabla\Phi$,
        TransitionStats)."""
        if self.adapt == "chees":
            return self._chees_transition(state, x, potential, gradient, potential_and_gradient, rng)
        xp = self.backend.xp
        step = self._jitter(rng, x.shape[0])
        step *= state.step
        x, potential, gradient, stats = hmc_transition(x, potential, gradient, step, state.steps,
                                                       potential_and_gradient, rng, self.backend, state.inverse_mass)
        if state.warming:
            adaptation = state.adaptation.updated(stats.acceptance_probability, self.target_acceptance)
            state = replace(state, iteration=state.iteration + 1, step=xp.exp(adaptation.log_step),
                            adaptation=adaptation)
            state = self._adapt_mass(state, x)
            state = replace(state, steps=steps_for(self.trajectory_length, state.step, self.max_steps, self.backend))
        return state, x, potential, gradient, stats

    def _chees_transition(self, state: KernelState, x, potential, gradient,
                          potential_and_gradient: PotentialAndGradient, rng):
        """[`transition`][attnverify.numerics.hmc.HMCKernel.transition] with ``adapt="chees"`` (class docstring). The
        step, T and their adaptation are host values; a warm-up iteration brings the chains' three sums they need
        (`chees_gradient` and the mean inverse acceptance) to the host in one read, and sampling reads nothing."""
        xp = self.backend.xp
        fraction = van_der_corput(state.transitions + 1)
        if state.warming:
            ratio = float(np.exp(state.trajectory.log_length - state.adaptation.log_step)[0])
        else:
            ratio = state.length
        steps = int(min(self.max_steps, max(1, math.ceil(fraction * ratio))))
        step = self._jitter(rng, x.shape[0])
        jittered_fraction = fraction * step if state.warming else None
        step *= float(state.step[0])  # every chain's step is the shared one
        start = x
        x, potential, gradient, stats = hmc_transition(x, potential, gradient, step, steps,
                                                       potential_and_gradient, rng, self.backend, state.inverse_mass)
        state = replace(state, steps=steps, transitions=state.transitions + 1)
        if not state.warming:
            return state, x, potential, gradient, stats
        inverse_acceptance = xp.mean(1.0 / xp.maximum(stats.acceptance_probability, ACCEPTANCE_FLOOR))
        velocity = stats.momentum if _identity(state.inverse_mass) else state.inverse_mass * stats.momentum
        with np.errstate(over="ignore", invalid="ignore"):
            weighted, weights = chees_gradient(start, stats.proposal, velocity, stats.acceptance_probability,
                                               jittered_fraction)
        sums = to_numpy(xp.stack([inverse_acceptance, weighted, weights]))  # the one host read of the iteration
        adaptation = state.adaptation.updated(1.0 / sums[0:1], self.target_acceptance)  # the harmonic mean
        step = np.exp(adaptation.log_step)
        slope = sums[1:2] / np.maximum(sums[2:3], 1e-300)
        trajectory = state.trajectory.updated(np.exp(state.trajectory.log_length) * slope, shortest=step,
                                              longest=self.max_steps * step)
        state = replace(state, iteration=state.iteration + 1, step=step * np.ones(state.step.shape[0]),
                        adaptation=adaptation, trajectory=trajectory)
        return self._adapt_mass(state, x), x, potential, gradient, stats

    def end_warmup(self, state: KernelState) -> KernelState:
        """The state sampling runs with: the averaged step sizes, their leapfrog steps, adaptation over (with ChEES:
        the averaged step and longest trajectory, $T/\varepsilon$, all on the host already)."""
        if self.adapt == "chees":
            log_step = state.adaptation.log_step_average
            ratio = float(np.exp(state.trajectory.log_length_average - log_step)[0])
            return replace(state, step=np.exp(log_step) * np.ones(state.step.shape[0]),
                           length=min(ratio, float(self.max_steps)), warming=False)
        step = self.backend.xp.exp(state.adaptation.log_step_average)
        return replace(state, step=step, steps=steps_for(self.trajectory_length, step, self.max_steps, self.backend),
                       warming=False)


@dataclass
class ChainRun:
    r"""What [`run_chains`][attnverify.numerics.hmc.run_chains] kept after warm-up: ``records`` (one ``record(x)`` per
    kept draw), acceptance probabilities and divergences (chains, draws), the final step sizes and number of leapfrog
    steps, and the number of gradient evaluations (leapfrog steps, plus one per iteration after a Gibbs step); with
    ChEES the longest trajectory length $T$ that warm-up adapted (``steps`` is then $\lceil T/\varepsilon\rceil$)."""

    records: list
    acceptance: np.ndarray
    divergences: np.ndarray
    step_size: np.ndarray
    steps: int
    gradient_evaluations: int
    trajectory_length: float | None = None


def to_host_at_once(values):
    r"""``values`` (arrays nested in lists, tuples and dicts; other leaves kept as they are) with every device array
    brought to the host by one transfer: raveled, cast to float64 and concatenated on the device, fetched once, and
    cut back to each array's shape and type (exact for float64, integer below $2^{53}$ and bool arrays)."""
    leaves = []

    def collect(value):
        if isinstance(value, dict):
            return {key: collect(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(collect(item) for item in value)
        if on_device(value):
            leaves.append(value)
            return _Leaf(len(leaves) - 1)
        return value

    skeleton = collect(values)
    if not leaves:
        return values
    xp = array_module(leaves[0])
    parts = [leaf.reshape(-1).astype(xp.float64, copy=False) for leaf in leaves]  # float64 leaves are not copied
    flat = to_numpy(parts[0] if len(parts) == 1 else xp.concatenate(parts))
    ends = np.cumsum([leaf.size for leaf in leaves])
    host = [flat[end - leaf.size:end].reshape(leaf.shape).astype(leaf.dtype) for leaf, end in zip(leaves, ends)]

    def fill(value):
        if isinstance(value, dict):
            return {key: fill(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(fill(item) for item in value)
        return host[value.index] if isinstance(value, _Leaf) else value

    return fill(skeleton)


@dataclass(frozen=True)
class _Leaf:
    index: int


def run_chains(potential_and_gradient: PotentialAndGradient, x, *, rng, warmup: int, draws: int, backend: Backend,
               record: Callable[[Any], Any], after_transition: Callable[[Any], Any] | None = None,
               progress: Callable[[str], None] | None = None, draws_per_transfer: int = 1,
               **kernel_options) -> ChainRun:
    r"""The one HMC driver: warm-up (step sizes, and the mass on request, adapted:
    [`HMCKernel`][attnverify.numerics.hmc.HMCKernel]), then ``draws`` transitions of every chain from ``x`` (C, d),
    keeping ``record(x)`` after each. The kept draws stay on the device until ``draws_per_transfer`` of them (or the
    last) are kept, then come to the host with their acceptance and divergence in one transfer
    ([`to_host_at_once`][attnverify.numerics.hmc.to_host_at_once]), the last with the final step sizes.

    Host synchronisations on a device: one a step-size search trial from the second on
    ([`initial_step_size`][attnverify.numerics.hmc.initial_step_size]; the last brings the median step), one a warm-up
    iteration (with dual averaging the median step, which sets the number of leapfrog steps; with ChEES the sums its
    adaptation needs), one a transfer of kept draws; ``progress`` two more, 20 times a run.

    ``after_transition`` (optional) is a further exact move after each HMC transition (a Gibbs step of
    variables outside $x$, e.g. the readout); the potential and gradient are then evaluated again at its result.
    ``progress`` gets a status line 20 times per run. Arguments are trusted: the public entry points
    ([`sample`][attnverify.numerics.hmc.sample], ``attention_paths.sampling.sample_posterior``) check them.
    """
    xp = backend.xp
    potential, gradient = potential_and_gradient(x)
    evaluations = 1
    step, median = _step_size_search(x, potential, gradient, potential_and_gradient, rng, backend)
    kernel = HMCKernel(step, backend=backend, warmup=warmup, step_median=median, **kernel_options)
    state = kernel.start
    records, accepted, divergent, kept = [], [], [], []
    total = warmup + draws
    report_every = max(1, total // 20)
    for iteration in range(total):
        if iteration == warmup:
            state = kernel.end_warmup(state)
        state, x, potential, gradient, stats = kernel.transition(state, x, potential, gradient, potential_and_gradient,
                                                                 rng)
        evaluations += stats.steps
        if after_transition is not None:
            x = after_transition(x)
            potential, gradient = potential_and_gradient(x)
            evaluations += 1
        if not state.warming:
            kept.append((record(x), stats.acceptance_probability, stats.divergent))
            last = iteration == total - 1
            if last or len(kept) == draws_per_transfer:
                kept, step = to_host_at_once((kept, state.step if last else None))
                for values in kept:
                    records.append(values[0])
                    accepted.append(values[1])
                    divergent.append(values[2])
                kept = []
        if progress is not None and (iteration + 1) % report_every == 0:
            phase = "warm-up" if state.warming else "sampling"
            progress(f"{phase} {iteration + 1}/{total}: {state.steps} leapfrog steps, "
                     f"step {float(np.median(backend.to_numpy(state.step))):.3g}, "
                     f"acceptance {float(backend.to_numpy(xp.mean(stats.acceptance_probability))):.2f}")
    if state.length is None:
        return ChainRun(records, np.stack(accepted).T, np.stack(divergent).T, step, state.steps, evaluations)
    return ChainRun(records, np.stack(accepted).T, np.stack(divergent).T, step, int(math.ceil(state.length)),
                    evaluations, state.length * float(step[0]))


MOST_TRANSITIONS = 10**7
"""The most transitions one chain may be asked for, warm-up and draws together (each takes at least one evaluation
of the potential and its gradient: hours at a millisecond each)."""


def refuse_what_cannot_fit(chains: int, dimension: int, *, warmup: int, draws: int, record_bytes: int,
                           mass_matrix: str = "identity", backend: Backend | None = None) -> None:
    """Refuse, before the first transition, a run of [`run_chains`][attnverify.numerics.hmc.run_chains] whose kept draws
    cannot fit in memory: ``draws`` kept records of ``record_bytes`` bytes each (all chains together) plus the (chains,
    draws) float64 acceptance and bool divergences, counted twice (the list of draws and the array they are stacked
    into), on the host; with ``mass_matrix="diagonal"`` also the longest slow window of ``warmup`` draws (chains ×
    dimension float64, counted twice for its concatenation) on ``backend``'s device. Named ``draws`` and ``warmup``.
    Also refused: more than `MOST_TRANSITIONS` transitions a chain (warm-up and draws), work no run finishes."""
    kept = 2 * draws * (record_bytes + 9 * chains)
    arguments.fits_in_memory("draws", kept, f"{draws} kept draws of {chains} chains ({record_bytes} bytes a draw, "
                             "and their acceptances; stored, then stacked)", value=draws)
    if mass_matrix == "diagonal":
        window = max((end - start for start, end in adaptation_windows(warmup)), default=0)
        arguments.fits_in_memory("warmup", 2 * 8 * window * chains * dimension,
                                 f"the {window} draws of warm-up's longest mass window ({chains} chains × {dimension} "
                                 "float64, kept, then concatenated)", value=warmup, backend=backend)
    name, value = ("warmup", warmup) if warmup >= draws else ("draws", draws)
    arguments.at_most_work(name, value, MOST_TRANSITIONS, "transitions a chain (warm-up and draws)",
                           work=warmup + draws)


def sample(potential_and_gradient: PotentialAndGradient, x0, *, seed: int, warmup: int, draws: int,
           backend: Backend | str | None = None, **kernel_options) -> tuple[Any, dict]:
    r"""Plain batched HMC on $\Phi$ from $x_0$ (C, d): draws shaped (d, C, draws) on the host, and statistics.

    ``kernel_options`` are those of [`HMCKernel`][attnverify.numerics.hmc.HMCKernel] (trajectory_length,
    target_acceptance, max_steps, jitter, mass_matrix, adapt). Everything is checked here, once;
    [`run_chains`][attnverify.numerics.hmc.run_chains] trusts it.
    """
    arguments.function("potential_and_gradient", potential_and_gradient, "a function x (C, d) -> (Φ (C,), ∇Φ (C, d))")
    backend = arguments.backend(backend)
    seed = arguments.integer("seed", seed, 0)
    warmup = arguments.integer("warmup", warmup, 1)
    draws = arguments.integer("draws", draws, 1)
    unknown = sorted(set(kernel_options) - {"trajectory_length", "target_acceptance", "max_steps", "jitter",
                                            "mass_matrix", "adapt"})
    if unknown:
        raise TypeError(f"sample got unknown kernel options {unknown}; HMCKernel takes trajectory_length, "
                        "target_acceptance, max_steps, jitter, mass_matrix and adapt")
    rng = backend.random(seed)
    x = arguments.array("x0", backend.to_numpy(x0) if hasattr(x0, "dtype") else x0, backend, ndim=2)
    refuse_what_cannot_fit(x.shape[0], x.shape[1], warmup=warmup, draws=draws, record_bytes=8 * x.size,
                           mass_matrix=kernel_options.get("mass_matrix", "identity"), backend=backend)
    potential, gradient = potential_and_gradient(x)
    if np.shape(potential) != x.shape[:1] or np.shape(gradient) != x.shape:
        raise ValueError(f"potential_and_gradient must return Φ of shape {x.shape[:1]} and ∇Φ of shape {x.shape} "
                         f"at x0, got {np.shape(potential)} and {np.shape(gradient)}")
    if not (bool(backend.xp.all(backend.xp.isfinite(potential))) and bool(backend.xp.all(backend.xp.isfinite(gradient)))):
        raise ValueError("x0 must be a point where the potential and its gradient are finite")
    run = run_chains(potential_and_gradient, x, rng=rng, warmup=warmup, draws=draws, backend=backend,
                     record=lambda x: x, **kernel_options)
    draws_array = np.moveaxis(np.stack(run.records), 0, -1)  # (C, d, draws)
    return np.swapaxes(draws_array, 0, 1), {
        "mean_acceptance": float(np.mean(run.acceptance)), "divergences": int(np.sum(run.divergences)),
        "steps": run.steps, "step_size": run.step_size, "trajectory_length": run.trajectory_length}
