"""Posterior sampling of the attention network, two exact kernels (``method``):

``readout_gibbs`` — one iteration per chain is a Metropolis-within-Gibbs sweep (both steps leave p(Θ | D)
invariant):
  1. HMC transition of the hidden weights (Z_0, Z_{ℓ,h}) given z_a, prior-whitened, MH-corrected
     (``numerics.hmc``);
  2. z_a ~ p(z_a | Z, D), drawn exactly from its Gaussian conditional (``NetworkPosterior.draw_readout``).
``collapsed`` (default) — Z_0 is integrated out exactly (``collapsed``); HMC moves (Z_{ℓ,h}, z_a), prior-whitened
and MH-corrected, on the marginal posterior, which sees the data only through U. Much faster mixing.

Warm-up adapts each chain's step size by dual averaging and then freezes it; the number of leapfrog steps is
fixed at the end of warm-up so that the median chain integrates for ``trajectory_length``.

Chains may also run as independent groups, each with its own seed (`chain_group_seed`) and its own warm-up,
for instance as tasks on a cluster; `pooled` puts their chains side by side as one set.

Recorded per draw: the order parameters U_1..U_L, U_a (spec §1.2) and, when test features are given, the
network outputs on them, so the posterior-mean predictor and its MCSE follow. Diagnostics (split R-hat, bulk
and tail ESS, acceptance, divergences, step sizes) and the seed are stored with every result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from ...base import arguments, blas
from ...base.arguments import Checked, checked, integer, one_of, real
from ...numerics.diagnostics import ChainSummary, summarize
from ...numerics.hmc import MASS_MATRICES
from ...numerics.statistics import Estimate
from ...saddle.sampling import run_sampler
from .collapsed import collapsed_posterior
from .posterior import NetworkPosterior, Weights


@dataclass(frozen=True)
class SamplerSettings(Checked):
    """How to sample: chains, warm-up and kept draws per chain, HMC trajectory and target acceptance, and
    the mass matrix ("identity" in prior-whitened coordinates, or "diagonal", adapted in warm-up)."""

    # at least 2 chains for R-hat and 4 draws for split R-hat/ESS; warm-up long enough to adapt a step
    chains: int = checked(integer, 2, default=4)
    warmup: int = checked(integer, 10, default=500)
    draws: int = checked(integer, 4, default=500)
    trajectory_length: float = checked(real, low=0, high=100, open_low=True, open_high=True, default=math.pi / 2)
    target_acceptance: float = checked(real, low=0.1, high=0.99, default=0.8)
    max_leapfrog: int = checked(integer, 1, default=1024)
    step_jitter: float = checked(real, low=0, high=1, open_high=True, default=0.1)
    mass_matrix: str = checked(one_of, MASS_MATRICES, default="identity")


@dataclass
class PosteriorSamples:
    """Draws (…, chains, draws) of the order parameters and test outputs, with diagnostics and provenance."""

    order_parameters: list[np.ndarray]
    test_outputs: np.ndarray | None
    acceptance: np.ndarray
    divergences: np.ndarray
    step_size: np.ndarray
    leapfrog_steps: int | tuple[int, ...]  # of each chain group, when pooled
    seed: int | tuple[int, ...]  # the chain seed (of each group, when pooled)
    settings: SamplerSettings
    seconds: float
    gradient_evaluations: int
    method: str = "collapsed"
    superchains: int | None = None  # the chains' superchains (saddle.sampling.run_sampler), for nested R̂
    _summaries: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def order_parameter(self) -> np.ndarray:
        """Draws of U = U_1, shaped (𝓗, 𝓗, chains, draws)."""
        return self.order_parameters[0]

    def order_parameter_summary(self, level: int = 1) -> ChainSummary:
        """Posterior mean of U_level with MCSE, R-hat and ESS per entry (level L+1 is U_a)."""
        level = arguments.integer("level", level, 1, len(self.order_parameters))
        if level not in self._summaries:  # rank-normalised R-hat and ESS cost seconds: once per level
            self._summaries[level] = summarize(self.order_parameters[level - 1], self.superchains)
        return self._summaries[level]

    def predictor_summary(self) -> ChainSummary:
        """Posterior-mean predictor on the test inputs, per test point, with MCSE and diagnostics."""
        if self.test_outputs is None:
            raise ValueError("no test features were given to the sampler")
        if "predictor" not in self._summaries:
            self._summaries["predictor"] = summarize(self.test_outputs, self.superchains)
        return self._summaries["predictor"]

    def accuracy(self, y_test, *, replicates: int = 2000, seed: int = 0) -> Estimate:
        """Accuracy of sign(posterior-mean predictor) on the test set, with its Monte Carlo standard error.

        The MCSE is the spread of the accuracy when every point's mean is redrawn from N(mean, MCSE²)
        (a parametric bootstrap of the sampler's error; the test set itself is held fixed, as the theory
        is evaluated on the same points).
        """
        summary = self.predictor_summary()
        y = np.sign(arguments.array("y_test", y_test, shape=summary.mean.shape))
        replicates = arguments.integer("replicates", replicates)
        if replicates < 2:
            raise ValueError(f"replicates must be an integer ≥ 2: a standard error needs at least 2 replicates, "
                             f"got {replicates}")
        # the redrawn means, their signs' agreement and a temporary: about 3 float64 numbers per replicate and point
        arguments.fits_in_memory("replicates", 3 * 8 * replicates * y.size,
                                 f"{replicates} redrawn means of {y.size} test points", value=replicates)
        rng = np.random.default_rng(arguments.integer("seed", seed, 0))
        accuracy = float(np.mean(np.sign(summary.mean) == y))
        redrawn = summary.mean + summary.mcse * rng.standard_normal((replicates, y.size))
        spread = float(np.std(np.mean(np.sign(redrawn) == y, axis=1), ddof=1))
        return Estimate(accuracy, spread, int(y.size))

    def diagnostics(self) -> dict:
        """Sampler figures stored with every result (seed, settings, acceptance, divergences, R-hat, ESS)."""
        U = self.order_parameter_summary()
        out = {
            "seed": list(self.seed) if isinstance(self.seed, tuple) else self.seed,
            "method": self.method,
            "chains": self.settings.chains,
            "warmup": self.settings.warmup,
            "draws": self.settings.draws,
            "leapfrog_steps": (list(self.leapfrog_steps) if isinstance(self.leapfrog_steps, tuple)
                               else self.leapfrog_steps),
            "step_size": [float(s) for s in self.step_size],
            "mean_acceptance": float(np.mean(self.acceptance)),
            "divergences": int(np.sum(self.divergences)),
            "seconds": self.seconds,
            "gradient_evaluations": self.gradient_evaluations,
            "order_parameter": U.worst(),
            "draws_needed": U.draws_needed(),  # per chain, for U's gate to pass (the draws themselves when it does)
        }
        if self.test_outputs is not None:
            out["predictor"] = self.predictor_summary().worst()
        return out


def _check_seed(seed: Any) -> int:
    """An integer seed ≥ 0 (a Generator would not replay from the result's record)."""
    return arguments.integer("seed", seed, 0)


def chain_group_seed(seed: int, group: int) -> int:
    """The chain seed of group ``group`` (≥ 0) of a sampling run seeded ``seed``: numpy's SeedSequence of (seed,
    group), so that a group's draws depend on neither the worker that runs it nor the order the groups finish."""
    return int(np.random.SeedSequence([_check_seed(seed), arguments.integer("group", group, 0)])
               .generate_state(1, np.uint32)[0])


def _each(value) -> tuple:
    return tuple(value) if isinstance(value, tuple) else (value,)


def pooled(groups: Sequence[PosteriorSamples]) -> PosteriorSamples:
    """The chains of independently run groups of one posterior (same method and settings, chains aside) as one set
    of chains: draws side by side on the chain axis, each chain's acceptance, divergences and step size, each
    group's leapfrog count and seed; seconds and gradient evaluations summed. R-hat and ESS then compare every
    chain with every other, as for chains run together."""
    if not isinstance(groups, (list, tuple)) or not groups or not all(isinstance(g, PosteriorSamples) for g in groups):
        raise TypeError(f"groups must be a non-empty list of PosteriorSamples, got {groups!r}")
    first = groups[0]
    for k, group in enumerate(groups[1:], 1):
        if group.method != first.method or replace(group.settings, chains=first.settings.chains) != first.settings:
            raise ValueError(f"groups[{k}] was sampled with method {group.method!r} and settings {group.settings}, "
                             f"groups[0] with {first.method!r} and {first.settings}: pool groups of one run only")
        if ((group.test_outputs is None) != (first.test_outputs is None)
                or len(group.order_parameters) != len(first.order_parameters)):
            raise ValueError(f"groups[{k}] records other quantities than groups[0] (test outputs or order parameters)")
    return PosteriorSamples(
        order_parameters=[np.concatenate([g.order_parameters[level] for g in groups], -2)
                          for level in range(len(first.order_parameters))],
        test_outputs=None if first.test_outputs is None else np.concatenate([g.test_outputs for g in groups], -2),
        acceptance=np.concatenate([g.acceptance for g in groups], 0),
        divergences=np.concatenate([g.divergences for g in groups], 0),
        step_size=np.concatenate([np.atleast_1d(g.step_size) for g in groups], 0),
        leapfrog_steps=tuple(s for g in groups for s in _each(g.leapfrog_steps)),
        seed=tuple(s for g in groups for s in _each(g.seed)),
        settings=replace(first.settings, chains=sum(g.settings.chains for g in groups)),
        seconds=sum(g.seconds for g in groups),
        gradient_evaluations=sum(g.gradient_evaluations for g in groups),
        method=first.method,
        # blocks of equal size stay blocks side by side; groups started otherwise are judged chain by chain
        superchains=(sum(g.superchains for g in groups)
                     if all(g.superchains for g in groups)
                     and len({g.settings.chains // g.superchains for g in groups}) == 1 else None),
    )


METHODS = ("collapsed", "readout_gibbs")
"""``collapsed``: HMC on (Z_{ℓ,h}, z_a) with Z_0 integrated out exactly (``collapsed``), Rao–Blackwellised
predictor. ``readout_gibbs``: HMC on (Z_0, Z_{ℓ,h}) + exact Gibbs draw of z_a. Both are exact MCMC kernels
for the same posterior of U; they differ in how fast they mix."""


class _ReadoutGibbs:
    """State: Weights. HMC on the hidden block given z_a, then z_a from its Gaussian conditional."""

    def __init__(self, posterior: NetworkPosterior, rng):
        self.posterior, self.rng = posterior, rng
        self.weights: Weights | None = None

    def start(self, chains: int):
        w = self.posterior.prior_draw(chains, self.rng)
        self.weights = Weights(w.hidden, self.posterior.draw_readout(w.hidden, self.rng))
        return self.weights.hidden

    def potential_and_gradient(self, hidden):
        return self.posterior.potential_and_gradient(Weights(hidden, self.weights.readout))

    def after_transition(self, hidden):
        self.weights = Weights(hidden, self.posterior.draw_readout(hidden, self.rng))
        return hidden

    @property
    def size(self) -> int:
        return self.posterior.dimension

    def chain_bytes(self, tests: int) -> tuple[int, int]:
        """(weights, data) bytes of one chain: the weights with their momentum, gradient and leapfrog copies (6 ×
        dimension float64); at most four P × P matrices (kernel, its Cholesky factor, solves) and the lifted features
        X̃(I ⊗ U) (P·N0·𝓗) of the potential, and the test outputs."""
        p = self.posterior
        return 8 * 6 * p.dimension, 8 * (4 * p.examples**2 + p.examples * p.input_width * p.paths + tests)

    def order_parameters(self, state):
        return self.posterior.order_parameters(self.weights)

    def test_outputs(self, state, X_test):
        return self.posterior.outputs(self.weights, X_test)


class _Collapsed:
    """State: θ = (Z_{ℓ,h}, z_a) with Z_0 integrated out by the saddle engine's collapsed posterior of the attention
    network (`.collapsed.collapsed_posterior`); Rao–Blackwellised test outputs."""

    after_transition = None  # no Gibbs step: the HMC transition is the whole move

    def __init__(self, posterior: NetworkPosterior, rng):
        self.collapsed, self.rng = collapsed_posterior(posterior), rng

    @property
    def size(self) -> int:
        return self.collapsed.size

    def chain_bytes(self, tests: int) -> tuple[int, int]:
        """(weights, data) bytes of one chain: the collapsed posterior's (``CollapsedNetworkPosterior.chain_bytes``;
        the test outputs come from the kernel, with no features formed)."""
        return self.collapsed.chain_bytes()

    def start(self, chains: int):
        return self.rng.standard_normal((chains, self.collapsed.size))

    def potential_and_gradient(self, theta):
        return self.collapsed.potential_and_gradient(theta)

    def order_parameters(self, theta):
        return list(self.collapsed.order_parameters(theta).values())

    def test_outputs(self, theta, X_test):
        return self.collapsed.predictive_mean(theta, X_test)


def sample_posterior(posterior: NetworkPosterior, *, seed: int, settings: SamplerSettings | None = None,
                     X_test=None, progress: Callable[[str], None] | None = None,
                     method: str = "collapsed") -> PosteriorSamples:
    """Run ``settings.chains`` chains from prior draws; keep ``settings.draws`` draws after warm-up.

    ``method`` is one of `METHODS`. The test outputs are f(x_test) per draw (``readout_gibbs``) or
    E[f(x_test) | θ, D] per draw (``collapsed``); either way their average is the posterior-mean predictor.
    ``settings`` may be a `SamplerSettings`, a dict of its fields, or None for the defaults. Every
    argument is checked here, once; the chains' inner loops trust them.
    """
    if not isinstance(posterior, NetworkPosterior):
        raise TypeError(f"posterior must be a NetworkPosterior (network_posterior), got {type(posterior).__name__}")
    settings = arguments.settings("settings", settings, SamplerSettings)
    seed = _check_seed(seed)
    method = arguments.one_of("method", method, METHODS)
    arguments.function("progress", progress, "a function of one line of text", optional=True)
    be = posterior.backend
    rng = be.random(seed)
    if X_test is not None:
        X_test = arguments.array("X_test", be.to_numpy(X_test) if hasattr(X_test, "dtype") else X_test, be,
                                 shape=(None, posterior.input_width, posterior.paths))
    with blas.threads(1):  # the chains' matrices are P × P: one BLAS thread is faster (numerics.blas)
        chain = (_Collapsed if method == "collapsed" else _ReadoutGibbs)(posterior, rng)
        tests = 0 if X_test is None else int(X_test.shape[0])

        def record(state):  # device arrays: run_chains brings a draw's record to the host in one transfer
            return chain.order_parameters(state), (chain.test_outputs(state, X_test) if X_test is not None else None)

        run = run_sampler(chain.potential_and_gradient, chain.start, record, chains=settings.chains,
                          warmup=settings.warmup, draws=settings.draws, rng=rng, backend=be,
                          chain_bytes=chain.chain_bytes(tests), what=f"{chain.size} weights and P × P kernels "
                          f"(P = {posterior.examples})", after_transition=chain.after_transition, progress=progress,
                          trajectory_length=settings.trajectory_length, target_acceptance=settings.target_acceptance,
                          max_steps=settings.max_leapfrog, jitter=settings.step_jitter,
                          mass_matrix=settings.mass_matrix)
    order_parameters, test_outputs = run.draws
    return PosteriorSamples(
        order_parameters=list(order_parameters),
        test_outputs=test_outputs,
        acceptance=run.acceptance,
        divergences=run.divergences,
        step_size=run.step_size,
        leapfrog_steps=run.steps,
        seed=seed,
        settings=settings,
        seconds=run.seconds,
        gradient_evaluations=run.gradient_evaluations,
        method=method,
        superchains=run.superchains,
    )
