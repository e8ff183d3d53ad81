""" k = q] (rate, constants), and a fixed bandwidth keeps a bias (note P6).

Part of `attnverify.theories.conditional_mean.claims` (see its docstring for the spec and sources).
"""

from __future__ import annotations

import numpy as np

from ... import conditional_mean as sim
from ....numerics.statistics import fit_line, mean_estimate
from ....checks import st
from ....checks.claim import Context
from ..theory import theory
from ....checks.comparisons import at_most
from ....checks.evidence import DEFAULT_Z, Evidence

from ._common import SOURCE, seeds


# 6. Posterior concentration and the L-independent Lipschitz constant
# ---------------------------------------------------------------------------------------------


CONCENTRATION_LENGTHS = (1, 2, 4, 8, 16, 32)


@theory.claim(
    source=f"{SOURCE}; abstract (posterior as sufficient representation), note P8",
    examples={"quick": 4, "thorough": 25},
    latents=st.integers(2, 5), d=st.integers(1, 3), model_seed=seeds, spread=st.floats(0.2, 2.0),
)
def latent_posterior_concentrates(ctx: Context, latents, d, model_seed, spread) -> Evidence:
    """In the finite-latent model the expected posterior mass on the true latent, E[P(z* | x_1..x_L)],
    does not decrease as tokens are added (L = 1, 2, 4, …, 32 on nested prefixes): every increment
    is ≥ −5 standard errors. (A theorem: Σ_m P(m | X)² is convex in the posterior, a martingale.)"""
    rng = np.random.default_rng(model_seed)
    prior = np.maximum(rng.dirichlet(np.ones(latents)), 0.02)
    model = sim.FiniteLatentModel(prior / prior.sum(), spread * rng.standard_normal((latents, d)))
    replicates = ctx.choose(quick=4_000, thorough=20_000)
    be = ctx.backend
    z, tokens = model.sample(max(CONCENTRATION_LENGTHS), replicates, ctx.backend_rng(), backend=be)
    rows = be.xp.arange(replicates)
    mass = be.to_numpy(be.xp.stack([model.posterior_by_bayes(tokens[:, :L])[rows, z] for L in CONCENTRATION_LENGTHS]))
    evidences = []
    for i in range(1, len(CONCENTRATION_LENGTHS)):
        increment = mean_estimate(mass[i] - mass[i - 1])
        evidences.append((f"L {CONCENTRATION_LENGTHS[i-1]}→{CONCENTRATION_LENGTHS[i]}",
                          at_most(-increment.mean, 0.0, standard_error=increment.standard_error, z=DEFAULT_Z,
                                  note=f"increment {increment.mean:.4g} ± {increment.standard_error:.2g}")))
    holds = all(e.holds for _, e in evidences)
    label, worst = min(evidences, key=lambda item: item[1].observed - item[1].theory)
    return Evidence(holds, worst.theory, worst.observed, 0.0, worst.standard_error, note=f"tightest step {label}",
                    relation="at_most", conditions={lab: e.holds for lab, e in evidences},
                    figures={"mean_mass": mass.mean(axis=1).tolist(), "lengths": list(CONCENTRATION_LENGTHS)})


@theory.claim(
    source=f"{SOURCE}; note §4.1 (why the generalisation error does not depend on L), P9",
    examples={"quick": 20, "thorough": 200},
    L=st.integers(2, 4096), d=st.integers(1, 4), bound_q=st.floats(0.1, 3.0), bound_k=st.floats(0.1, 3.0),
    bound_v=st.floats(0.1, 3.0), step=st.floats(1e-4, 2.0), seed=seeds,
)
def lipschitz_in_parameter(ctx: Context, L, d, bound_q, bound_k, bound_v, step, seed) -> Evidence:
    """For any L, queries ‖q‖ ≤ B_Q, keys ‖k‖ ≤ B_K and values |v| ≤ B_V, softmax attention with scores
    qᵀWk satisfies |attn(W + ΔW) − attn(W)| ≤ 2B_V B_Q B_K ‖ΔW‖_op: a Lipschitz constant free of L."""
    rng = np.random.default_rng(seed)
    keys = rng.standard_normal((L, d))
    keys *= bound_k * rng.uniform(0.5, 1.0, (L, 1)) / np.linalg.norm(keys, axis=1, keepdims=True)
    values = bound_v * rng.choice([-1.0, 1.0], size=(L, 1))  # extreme values make the bound tight
    query = rng.standard_normal(d)
    query *= bound_q / np.linalg.norm(query)
    W = rng.standard_normal((d, d))
    delta = rng.standard_normal((d, d))
    delta *= step / np.linalg.norm(delta, 2)
    on = ctx.backend.asarray  # the attention on the run's backend
    keys, values = on(keys), on(values)
    change = abs(float(sim.softmax_attention(on((W + delta).T @ query), keys, values)[0]
                       - sim.softmax_attention(on(W.T @ query), keys, values)[0]))
    bound = 2 * bound_v * bound_q * bound_k * step
    return at_most(change, bound, tolerance=1e-12 * bound, note=f"ratio {change / bound:.3g}")


# ---------------------------------------------------------------------------------------------
# 7. Learning: the generalisation gap of ERM does not grow with L (abstract, note §4, P10)
# ---------------------------------------------------------------------------------------------


LEARNING_LENGTHS = (16, 64, 256)
LEARNING_TRAIN_SEQUENCES = 128
LEARNING_TEST_SEQUENCES = 2_000

learning_parameters = dict(d=st.integers(1, 2), model_seed=seeds, prior_sd=st.floats(0.5, 1.5),
                           noise_sd=st.floats(0.2, 1.0))


def _gap_does_not_grow(ctx: Context, objective: str, d: int, model_seed: int, prior_sd: float,
                       noise_sd: float) -> Evidence:
    from .. import learning

    rng = np.random.default_rng(model_seed)
    raw = rng.standard_normal((d, d))
    task = learning.LatentLinearTask(raw @ raw.T / d + 0.3 * np.eye(d), prior_sd, noise_sd)
    replicates = ctx.choose(quick=8, thorough=30)
    seeds_ = ctx.rng.integers(0, 2**32, size=len(LEARNING_LENGTHS))
    results = [learning.generalization_gap(task, objective, L, LEARNING_TRAIN_SEQUENCES, LEARNING_TEST_SEQUENCES,
                                           replicates, int(s), backend=ctx.backend) for L, s in zip(LEARNING_LENGTHS, seeds_)]
    gaps = [r.gap.mean for r in results]
    ses = [r.gap.standard_error for r in results]
    fit = fit_line(np.log(LEARNING_LENGTHS), gaps, standard_errors=ses)
    return at_most(fit.slope, 0.0, standard_error=fit.slope_standard_error, z=DEFAULT_Z,
                   note=f"slope of the gap in log L: {fit.slope:.3g} ± {fit.slope_standard_error:.2g} (must be ≤ 5 SE)",
                   figures={"lengths": list(LEARNING_LENGTHS), "gap": gaps, "standard_error": ses,
                            "distance_to_inverse_covariance": [float(np.mean(r.distances)) for r in results]})


@theory.claim(
    source=f"{SOURCE}; abstract ('a generalization error, which is independent of input sizes'), note §4.1",
    **learning_parameters,
    examples={"quick": 3, "thorough": 10},
)
def generalization_gap_flat_supervised(ctx: Context, d, model_seed, prior_sd, noise_sd) -> Evidence:
    """Supervised ERM of the attention parameter W (label y = Aq + noise, A drawn per sequence, N = 128
    training sequences): the generalisation gap E[test risk − training risk] of Ŵ does not grow with
    the sequence length L = 16, 64, 256 — its fitted slope in log L is at most 5 standard errors."""
    return _gap_does_not_grow(ctx, "supervised", d, model_seed, prior_sd, noise_sd)


@theory.claim(
    source=f"{SOURCE}; abstract (self-supervised objective), note §4.2, P10",
    **learning_parameters,
    examples={"quick": 3, "thorough": 10},
)
def generalization_gap_flat_masked(ctx: Context, d, model_seed, prior_sd, noise_sd) -> Evidence:
    """Masked self-supervised ERM of W (8 tokens per sequence predicted in turn from the L others):
    the generalisation gap of Ŵ does not grow with L = 16, 64, 256 (fitted slope in log L at most 5
    standard errors)."""
    return _gap_does_not_grow(ctx, "masked", d, model_seed, prior_sd, noise_sd)
