"""Claims of the one-shot image experiment (attention paths, figure 3), on the cached trained networks.

The networks are trained once by ``attnverify train-one-shot`` (PyTorch) and shipped as
`TrainedHeads`; everything here runs on numpy.
The networks, their path features and their analyses are experiments
(`attnverify.theories.attention_paths.one_shot.experiments`) asked for through the run's store, which figure 3
of the report shares; so the claims draw no parameter: each is a statement about the cached networks of the profile.
The claims are named ``attention_paths.one_shot_*`` and listed with the other attention-path claims.
"""

from __future__ import annotations

from .. import derivations as derived
from ..theory import theory
from .experiments import THEORY_SIZES, one_shot_analyses_of, one_shot_networks
from . import analysis as experiment
from ....numerics.statistics import mean_estimate
from ....checks.claim import Context
from ....checks.comparisons import exceeds
from ....checks.evidence import Evidence

SOURCE = derived.SOURCE


@theory.claim(
    source=f"{SOURCE}, §1.1 (path expansion) and §4.2 (gradient-descent model)",
    examples={"quick": 1, "thorough": 1}, shrink_budget=1
)
def one_shot_cache_is_the_trained_network(ctx: Context):
    """The cached networks (score forms W and effective path weights V^eff, numpy) are the trained ones:
    the test accuracy of f = Σ_π V^eff_π·ξ^π on today's draw of the test episodes equals the accuracy the
    PyTorch network had at the end of training, for every seed (at most one episode apart: a sign of f
    within round-off of 0 may flip)."""
    _, shared = experiment.cached_networks()
    gaps, test_sizes = {}, set()
    for inputs in one_shot_networks(ctx.settings):
        correct = inputs.network.correct(inputs.paths.X_test, inputs.paths.y_test, backend=ctx.backend)
        numpy_accuracy = float(correct.mean())
        gaps[inputs.seed] = (numpy_accuracy, float(inputs.network.metadata["test_accuracy"]))
        test_sizes.add(inputs.paths.y_test.size)
    worst = max(abs(a - b) for a, b in gaps.values())
    allowed = 1.0 / min(test_sizes)
    return Evidence(holds=worst <= allowed, theory=0.0, observed=worst, tolerance=allowed, relation="equal",
                    note="; ".join(f"seed {s}: numpy {a:.4f} vs torch {b:.4f}" for s, (a, b) in sorted(gaps.items())),
                    figures={"accuracy": {str(s): list(v) for s, v in gaps.items()}, "torch": shared.get("torch")})


@theory.claim(
    source=f"{SOURCE}, §4.2 (test episodes from classes never seen in training)",
    examples={"quick": 1, "thorough": 1}, shrink_budget=1
)
def one_shot_network_generalises_to_new_classes(ctx: Context):
    """The gradient-descent network classifies one-shot episodes of digit classes it never saw better
    than chance: for every training seed, test accuracy − 1/2 > 5 standard errors (binomial, per episode)."""
    estimates = {n.seed: mean_estimate(n.network.correct(n.paths.X_test, n.paths.y_test, backend=ctx.backend))
                 for n in one_shot_networks(ctx.settings)}
    conditions = {f"seed {s}: accuracy − 1/2 > 5 SE": (e.mean - 0.5) / e.standard_error > 5
                  for s, e in sorted(estimates.items())}
    worst = min(estimates.values(), key=lambda e: e.mean)
    return Evidence(holds=all(conditions.values()), relation="custom", conditions=conditions,
                    theory=0.5, observed=worst.mean, tolerance=5 * worst.standard_error,
                    standard_error=worst.standard_error,
                    note="test accuracy by seed: " + ", ".join(f"{s}: {e.mean:.3f}±{e.standard_error:.3f}"
                                                              for s, e in sorted(estimates.items())),
                    figures={"accuracy": {str(s): e.as_dict() for s, e in estimates.items()}})


#: Measured, not assumed, at P = 600 with T chosen on validation from the paper's grid: ρ = 0.57 ± 0.17 in the
#: quick tier (seeds 0–4, 3.4 SE) and 0.431 ± 0.094 in the thorough tier (all 13 cached seeds 0–12: 0.90, 0.90,
#: 0.00, 0.67, 0.34, 0.43, 0.34, −0.02, 0.05, 0.83, 0.69, 0.31, 0.17; 4.6 SE). Positive, neither 5 SE above 0 nor
#: 5 SE below it: the evidence supports the statement without reaching the bar, so the verdict is inconclusive,
#: with the seeds it would take at this spread (⌈13·(5·0.094/0.431)²⌉ = 16 in the thorough tier, if the mean
#: held; each seed since the fifth has moved it down). At P = 200 it was 0.18 ± 0.22.
@theory.claim(
    source=f"{SOURCE}, §2.5 and figure 3e (head score vs performance drop)",
    examples={"quick": 1, "thorough": 1}, shrink_budget=1, expect="inconclusive"
)
def one_shot_head_scores_predict_pruning(ctx: Context):
    """Heads with a low score (from the theory U at N = 10, T chosen on validation episodes) cost less test
    accuracy when pruned from the gradient-descent network than heads with a high score: the Spearman rank
    correlation between score and accuracy drop, averaged over training seeds, exceeds 0 by 5 standard
    errors (SE over seeds). Expected inconclusive at the cached seeds: positive, short of 5 SE."""
    analyses = ctx.store.result(one_shot_analyses_of(ctx.settings))
    rho = experiment.rank_correlation_estimate(analyses)
    return exceeds(rho, 0.0, unit="seeds",
                   note=f"Spearman ρ = {rho.mean:.3f} ± {rho.standard_error:.3f} over {rho.samples} seeds: "
                        + ", ".join(f"{a.seed}: {a.pruning.rank_correlation:.2f} (T = {a.theory.temperature:g})"
                                    for a in analyses),
                   figures={"rank_correlation": rho.as_dict(), "P": ctx.settings.choose(**THEORY_SIZES)["P"],
                            "seeds": {str(a.seed): {"temperature": a.theory.temperature,
                                                    "validation_accuracy": a.theory.validation_accuracy,
                                                    "theory_accuracy": a.theory.test.accuracy.as_dict(),
                                                    "pruning": a.pruning.as_dict()} for a in analyses}})
