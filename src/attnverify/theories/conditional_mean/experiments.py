"""Experiments of attention as a conditional mean (Zhang, Liu, Cai, Wang, Wang, 2022; reconstruction in
``docs/papers/conditional_mean.md``) that the report draws: the Monte Carlo error against the sequence
length on configuration G2, RBF attention with fixed bandwidths, and the generalisation gap of the ERM of W.
Pure functions of their sizes and seed, asked for through the run's store by the value the theory's plan makes
(``settings.store.result(rate_errors_of(settings))``); seeds come from ``SeedSequence(seed)``
(children 0 and 1: rate, bandwidth) and ``seed + 7919·L + i`` (learning), as the report's always did.
"""

from __future__ import annotations

import numpy as np

from . import derivations as derived
from .theory import theory
from .. import conditional_mean as sim
from . import learning
from ...base.arguments import integer
from ...numerics.statistics import fit_line
from ...execution import tasks
from ...execution.store import Planned, planned
from ...execution.settings import RunSettings

G2 = dict(key_mean=[0.5, -0.5], key_covariance=[[1.0, 0.3], [0.3, 0.5]], value_map=[[1.0, -2.0]],
          value_offset=[0.5], noise_sd=0.5)
"""The note's standard configuration G2 (§6), with the query q = (0.8, 0.2)."""
G2_QUERY = (0.8, 0.2)

LENGTHS = (16, 64, 256, 1024, 4096)
"""Sequence lengths of the rate figures."""

REPLICATES = {"quick": 4_000, "thorough": 40_000}
"""Independent sequences per length, per profile."""

SINE = dict(key_sd=1.0, frequency=2.0, noise_sd=0.3, query=0.7)
"""The note's fixed-bandwidth example (§3.2): k ~ N(0, 1), v = sin(2k) + 0.3ξ, q = 0.7."""
BANDWIDTHS = (1.0, 0.5, 0.25)

LEARNING = dict(lengths=(16, 64, 256), train_sequences=128, test_sequences=2_000,
                replicates={"quick": 6, "thorough": 30})
"""Generalisation-gap experiment: N = 128 training sequences, fresh test sequences, repeated fits."""


def g2_model() -> sim.GaussianKeyValueModel:
    return sim.GaussianKeyValueModel(**G2)


RATE_LENGTHS = (64, 256, 1024, 4096)
"""The grid of the rate's slope (claim ``error_rate_slope``, and the figure's fit): at L = 16, C/L + D/L² is not yet
asymptotic on G2."""


def rate_errors(*, replicates: int, seed: int) -> dict:
    """Attention's error against E[v | k = q] on G2 at each of ``LENGTHS``, with the desired parameter
    a = Σ⁻¹(q − μ) and with W = I (``replicates`` sequences each), and the weighted fit of log RMSE
    against log L over ``RATE_LENGTHS`` (SE of log RMSE = SE/(2 MSE)), with the slope the derived C/L + D/L² has
    there."""
    replicates = integer("replicates", replicates, 2)
    model = g2_model()
    query = np.array(G2_QUERY)
    target = model.conditional_mean(query)
    lengths = np.array(LENGTHS, dtype=float)
    rng_desired, rng_naive = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)[0].spawn(2))
    tasks.progress(f"conditional_mean: Monte Carlo error at L = {LENGTHS} ({replicates} sequences each)")
    errors, _ = sim.rate_fit(model, model.desired_score(query), target, lengths, replicates, rng_desired)
    naive_errors, _ = sim.rate_fit(model, query, target, lengths, replicates, rng_naive)
    rmse = np.sqrt([e.mse.mean for e in errors])
    rmse_se = np.array([e.mse.standard_error for e in errors]) / (2 * rmse)
    asymptotic = lengths >= min(RATE_LENGTHS)
    fit = fit_line(np.log(lengths[asymptotic]), np.log(rmse[asymptotic]), standard_errors=(rmse_se / rmse)[asymptotic])
    # the slope of the derived √(C/L + D/L²) on the fit's grid: what the fit is to be compared with beside −1/2
    constants = derived.gaussian_error_constants(*model.invariants(model.desired_score(query)))
    C, D, grid = float(constants["constant"]), float(constants["second_order"]), np.array(RATE_LENGTHS, dtype=float)
    two_term = fit_line(np.log(grid), 0.5 * np.log(C / grid + D / grid**2))
    return {"errors": tuple(errors), "naive_errors": tuple(naive_errors), "fit": fit, "derived_slope": two_term.slope}


def bandwidth_errors(*, replicates: int, seed: int) -> tuple[dict, ...]:
    """RBF attention with each fixed bandwidth of ``BANDWIDTHS`` on the sine model at q = 0.7: the derived
    constants and the measured mean (± SE over ``replicates`` sequences) at each of ``LENGTHS``."""
    replicates = integer("replicates", replicates, 2)
    model = sim.SineValueModel(SINE["key_sd"], SINE["frequency"], SINE["noise_sd"])
    q = SINE["query"]
    lengths = np.array(LENGTHS)
    out = []
    for h, s in zip(BANDWIDTHS, np.random.SeedSequence(seed).spawn(2)[1].spawn(len(BANDWIDTHS))):
        tasks.progress(f"conditional_mean: fixed bandwidth h = {h}")
        rng = np.random.default_rng(s)
        constants = {k: float(v) for k, v in derived.fixed_bandwidth_constants(
            q, SINE["key_sd"], h, SINE["frequency"], SINE["noise_sd"]).items()}
        logits = lambda K, h=h: -((K[..., 0] - q) ** 2) / (2 * h * h)  # noqa: E731
        measured = [sim.attention_error(lambda L, n, r: model.sample(L, n, r), logits, [0.0], int(L),
                                        replicates, rng) for L in lengths]
        out.append({"h": h, "constants": constants, "mean": np.array([m.bias[0].mean for m in measured]),
                    "standard_error": np.array([m.bias[0].standard_error for m in measured])})
    return tuple(out)


def generalisation_gaps(*, replicates: int, seed: int) -> dict:
    """The ERM of W (supervised and masked objectives) at each of ``LEARNING["lengths"]``: the generalisation
    gap (± SE over ``replicates`` repeated fits), its weighted fit against log L, and the mean distance of W to Σ⁻¹
    (under ``"desired_parameter"``)."""
    replicates = integer("replicates", replicates, 2)
    task = learning.LatentLinearTask(key_covariance=G2["key_covariance"], prior_sd=1.0, noise_sd=0.5)
    out = {}
    for i, objective in enumerate(("supervised", "masked")):
        gaps, ses, distances = [], [], []
        for L in LEARNING["lengths"]:
            tasks.progress(f"conditional_mean: ERM of W, {objective}, L = {L}")
            result = learning.generalization_gap(task, objective, L, LEARNING["train_sequences"],
                                                 LEARNING["test_sequences"], replicates,
                                                 seed + 7919 * L + i)
            gaps.append(result.gap.mean)
            ses.append(result.gap.standard_error)
            distances.append(float(np.mean(result.distances)))
        out[objective] = {"gap": gaps, "standard_error": ses, "distance": distances,
                          "fit": fit_line(np.log(LEARNING["lengths"]), gaps, standard_errors=ses)}
    covariance = np.asarray(G2["key_covariance"], dtype=float)
    out["desired_parameter"] = np.linalg.solve(covariance, np.eye(covariance.shape[0]))  # W = Σ⁻¹, shown as data
    return out


def rate_errors_of(settings: RunSettings) -> Planned:
    """`rate_errors` at the run's seed with the profile's ``REPLICATES``."""
    return planned(rate_errors, replicates=settings.choose(**REPLICATES), seed=settings.seed)


def bandwidth_errors_of(settings: RunSettings) -> Planned:
    """`bandwidth_errors` at the run's seed with the profile's ``REPLICATES``."""
    return planned(bandwidth_errors, replicates=settings.choose(**REPLICATES), seed=settings.seed)


def generalisation_gaps_of(settings: RunSettings) -> Planned:
    """`generalisation_gaps` at the run's seed with the profile's ``LEARNING["replicates"]``."""
    return planned(generalisation_gaps, replicates=settings.choose(**LEARNING["replicates"]), seed=settings.seed)


@theory.experiments
def plan_experiments(settings: RunSettings) -> list[Planned]:
    """The conditional-mean section's experiments (computed as tasks ahead of the section; numpy only)."""
    return [generalisation_gaps_of(settings), rate_errors_of(settings), bandwidth_errors_of(settings)]
