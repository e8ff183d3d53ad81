"""Figure 3 (b)–(f) of the attention-path paper: one-shot image classification with trained heads.

Part of the attention-paths section (`attnverify.theories.attention_paths.section`). Spec
``docs/papers/attention_paths.md`` §4.2 and §2.5. The attention comes from the gradient-descent
networks cached in the package (``attnverify train-one-shot``); the theory is solved on their path
features, with the temperature chosen on validation episodes (held-out images of the training classes),
and the trained networks are pruned head by head in order of the theory's head scores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from .experiments import (COMPONENTS, SAMPLED_WIDTH, one_shot_analyses_of, one_shot_network_of,
                          one_shot_sampled_comparison_of, one_shot_sampled_networks_of, one_shot_width_sweep_of)
from ....execution.settings import RunSettings
from . import analysis as experiment
from ..heads import path_index
from ....report.figures import pyplot, save_figure
from ....report.section import Figure, Table


def _label(head) -> str:
    return f"{head[0] + 1}-{head[1] + 1}"


def figure3(out_dir: Path, settings: RunSettings, progress: Callable[[str], None]) -> tuple[list[Figure], list[Table]]:
    """Figures 3b–3f and their tables, for the first cached network (3e–3f: every seed); the networks and their
    analyses come from the run's store (the one-shot claims read the same)."""
    store = settings.store
    progress("attention_paths: figures 3b-f, the one-shot theory, sampled networks, head scores and pruning")
    theory = store.result(one_shot_width_sweep_of(settings))
    sampled_plan = one_shot_sampled_networks_of(settings)  # None where the profile samples none
    sampled = None if sampled_plan is None else store.result(sampled_plan)
    first, P = theory.seed, theory.P
    network = store.result(one_shot_network_of(first)).network
    test_size = theory.test_size
    sweep, gp, gd, small = list(theory.points), theory.gp, theory.gradient_descent_accuracy, theory.small
    if sampled is None:
        U_sampled = sampled_accuracy = diagnostics = None
    else:
        U_sampled, sampled_accuracy, diagnostics = sampled.order_parameter, sampled.accuracy, sampled.diagnostics

    plt = pyplot()
    widths = [p.width for p in sweep]
    accuracy = [p.test.accuracy.mean for p in sweep]
    errors = [p.test.accuracy.standard_error for p in sweep]
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    ax.errorbar(widths, accuracy, yerr=2 * np.asarray(errors), color="C0", marker="x", label="theory (FW)")
    ax.axhline(gp.test.accuracy.mean, color="C3", label=f"GP limit (T = {gp.temperature:g})")
    if sampled_accuracy is not None:
        ax.errorbar([SAMPLED_WIDTH], [sampled_accuracy.mean], yerr=[2 * sampled_accuracy.standard_error], color="k",
                    marker="o", linestyle="none", label="sampled networks")
    sampled_text = ("networks sampled from the posterior at N = {} (black: {:.3f} ± {:.3f})".format(
        SAMPLED_WIDTH, sampled_accuracy.mean, sampled_accuracy.standard_error) if sampled_accuracy is not None
        else "no sampled networks (thorough profile only: the sampler is too slow for the quick tier)")
    ax.axhline(gd, color="C2", linestyle="--", label="gradient-descent network")
    ax.set_xscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("test accuracy (unseen classes)")
    ax.set_title(f"Fig. 3b: one-shot digits, P = {P}, seed {first}", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig_b = save_figure(fig, out_dir, "attention_paths_fig3b.png",
        f"Figure 3b. Test accuracy on one-shot episodes of digit classes never seen in training, against the width N: "
        f"the finite-width theory (blue; at each N the temperature with the best accuracy on validation episodes), the "
        f"GP limit (red; T = {gp.temperature:g}, chosen on validation from {experiment.GP_TEMPERATURES}), {sampled_text}, "
        f"and the gradient-descent network whose heads fix the attention "
        f"(green dashed: {gd:.3f}). Error bars: ± 2 binomial standard errors over the {test_size} test episodes.",
        {"widths": widths, "accuracy": accuracy, "standard_error": errors,
         "temperature": [p.temperature for p in sweep], "validation_accuracy": [p.validation_accuracy for p in sweep],
         "gp": {"temperature": gp.temperature, "accuracy": gp.test.accuracy.as_dict(),
                "validation_accuracy": gp.validation_accuracy},
         "sampled": None if sampled_accuracy is None else {"width": SAMPLED_WIDTH, "accuracy": sampled_accuracy.as_dict(),
                                                           "diagnostics": diagnostics},
         "gradient_descent_accuracy": gd, "P": P, "seed": first})

    names = [f"{h1 + 1}{h2 + 1}" for h1, h2 in path_index(experiment.HEADS)]
    panels = {"theory": small.test.order_parameter, "gradient descent": network.order_parameter()}
    if U_sampled is not None:
        panels = {"theory": panels["theory"], "sampled": U_sampled.mean, "gradient descent": panels["gradient descent"]}
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4.2))
    for ax, (title, U) in zip(axes, panels.items()):
        image = ax.imshow(U, cmap="RdBu_r", vmin=-np.abs(U).max(), vmax=np.abs(U).max())
        ax.set_title(f"U, {title}" + ("" if title == "gradient descent" else f" (N = {SAMPLED_WIDTH})"), fontsize=10)
        ax.set_xticks(range(len(names)), names, fontsize=6, rotation=90)
        ax.set_yticks(range(len(names)), names, fontsize=6)
        fig.colorbar(image, ax=ax, fraction=0.046)
    fig.tight_layout()
    if U_sampled is not None:
        compared = store.result(one_shot_sampled_comparison_of(settings))
        gap, relative, score_agreement = compared["gap"], compared["relative"], compared["score_agreement"]
        sampled_text = (f"Largest |U_sampled − U_theory| = {gap.max():.3f} (largest MCSE {U_sampled.mcse.max():.3f}), "
                        f"‖U_sampled − U_theory‖_F/‖U_theory‖_F = {relative:.2f}: at N = {SAMPLED_WIDTH} < 𝓗 = "
                        f"{gap.shape[0]} the leading-order theory is an extrapolation and finite-N corrections remain; "
                        f"the head scores of the two agree in rank (Spearman {score_agreement:.2f}). Sampler converged "
                        f"(R-hat below the limit for the largest of its entries at a false alarm of 10⁻³, ESS ≥ 400 for every entry): {U_sampled.converged}.")
    else:
        sampled_text = "The sampled U is drawn in the thorough profile only."
    fig_c = save_figure(fig, out_dir, "attention_paths_fig3c.png",
        f"Figure 3c. Order parameter U over the 16 paths π = (h1, h2) (labels h1h2): the theory at N = {SAMPLED_WIDTH}, "
        f"T = {small.temperature:g}, the sampled networks there, and the gradient-descent network's "
        f"U^GD_ππ' = V^eff_π·V^eff_π' (no normalisation, as in the paper). {sampled_text}",
        {"paths": names, "theory": small.test.order_parameter, "gradient_descent": network.order_parameter(),
         "temperature": small.temperature,
         **({} if U_sampled is None else {"sampled": U_sampled.mean, "sampled_mcse": U_sampled.mcse})})

    theory_values, theory_overlaps = theory.alignment
    gp_values, gp_overlaps = theory.gp_alignment
    k = np.arange(1, theory_overlaps.size + 1)
    fig, ax = plt.subplots(figsize=(9.0, 4.0))
    ax.bar(k - 0.2, theory_overlaps, width=0.4, color="C0", label=f"N = {SAMPLED_WIDTH} (theory U)")
    ax.bar(k + 0.2, gp_overlaps, width=0.4, color="C3", label="GP limit (U = I)")
    ax.set_xlabel("principal component k of K")
    ax.set_ylabel("|φ_kᵀ Y| / √P")
    ax.legend(fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    fig_d = save_figure(fig, out_dir, "attention_paths_fig3d.png",
        f"Figure 3d. Overlap |φ_kᵀY|/√P of the training kernel's principal components with the labels, first "
        f"{COMPONENTS}, at N = {SAMPLED_WIDTH} and in the GP limit. Squared overlap of the first 5: "
        f"{np.sum(theory_overlaps[:5]**2):.3f} (N = {SAMPLED_WIDTH}) and {np.sum(gp_overlaps[:5]**2):.3f} (GP).",
        {"theory_overlap": theory_overlaps, "gp_overlap": gp_overlaps, "theory_eigenvalues": theory_values,
         "gp_eigenvalues": gp_values})

    analyses = store.result(one_shot_analyses_of(settings))
    rho = experiment.rank_correlation_estimate(analyses)
    shown = analyses[0]
    heads = sorted(shown.scores, key=lambda h: shown.scores[h])
    fig, ax = plt.subplots(figsize=(7.0, 4.0))
    x = np.arange(len(heads))
    ax.bar(x - 0.2, [shown.scores[h] for h in heads], width=0.4, color="C0", label="head score")
    drop_axis = ax.twinx()
    drop_axis.bar(x + 0.2, [shown.pruning.drops[h].mean for h in heads], width=0.4, color="C3",
                  yerr=[2 * shown.pruning.drops[h].standard_error for h in heads], label="accuracy drop")
    ax.set_xticks(x, [_label(h) for h in heads])
    ax.set_xlabel("head (layer-head), in increasing order of score")
    ax.set_ylabel("head score", color="C0")
    drop_axis.set_ylabel("accuracy drop when pruned", color="C3")
    ax.set_title(f"Fig. 3e: seed {shown.seed}; Spearman ρ over seeds {rho.mean:.2f} ± {rho.standard_error:.2f}", fontsize=10)
    fig_e = save_figure(fig, out_dir, "attention_paths_fig3e.png",
        f"Figure 3e. Head score (blue; from the theory U at N = {SAMPLED_WIDTH}, T = {shown.theory.temperature:g}) and "
        f"the test accuracy lost when the head alone is pruned from the gradient-descent network (red; ± 2 paired "
        f"standard errors), seed {shown.seed}. Spearman rank correlation between score and drop: "
        f"{shown.pruning.rank_correlation:.2f} for this seed, {rho.mean:.2f} ± {rho.standard_error:.2f} over "
        f"{rho.samples} training seeds.",
        {"seeds": {str(a.seed): a.pruning.as_dict() for a in analyses}, "rank_correlation": rho.as_dict()})

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for a in analyses:
        ax.plot(range(len(a.pruning.cumulative)), [e.mean for e in a.pruning.cumulative], marker="o",
                label=f"seed {a.seed}")
    ax.set_xlabel("heads pruned (lowest score first, at least one per layer kept)")
    ax.set_ylabel("test accuracy")
    ax.legend(fontsize=8)
    ax.grid(True, alpha=0.3)
    fig_f = save_figure(fig, out_dir, "attention_paths_fig3f.png",
        "Figure 3f. Test accuracy of the gradient-descent networks after pruning a growing number of heads in "
        "increasing order of head score (a head whose removal would empty its layer is skipped), one line per "
        "training seed.", {"seeds": {str(a.seed): {"heads": [_label(h) for h in a.pruning.cumulative_heads],
                                                   "accuracy": [e.as_dict() for e in a.pruning.cumulative]}
                                     for a in analyses}})

    accuracy_table = Table(
        f"One-shot digits (seed {first}, P = {P}): test accuracy per width, T chosen on validation",
        ["N", "T", "validation accuracy", "test accuracy", "± SE"],
        [[int(p.width), p.temperature, round(p.validation_accuracy[p.temperature], 3), round(p.test.accuracy.mean, 3),
          round(p.test.accuracy.standard_error, 3)] for p in sweep]
        + [["GP", gp.temperature, round(gp.validation_accuracy[gp.temperature], 3), round(gp.test.accuracy.mean, 3),
            round(gp.test.accuracy.standard_error, 3)],
           *([] if sampled_accuracy is None else
             [[f"sampled N = {SAMPLED_WIDTH}", small.temperature, "", round(sampled_accuracy.mean, 3),
               round(sampled_accuracy.standard_error, 3)]])])
    pruning_rows = []
    for a in analyses:
        meta = store.result(one_shot_network_of(a.seed)).network.metadata
        pruning_rows.append([a.seed, round(meta["validation_accuracy"][-1], 3), round(a.accuracy.mean, 3),
                             " ".join(f"{_label(h)}:{a.pruning.single[h].mean:.3f}" for h in sorted(a.scores, key=a.scores.get)),
                             round(a.pruning.rank_correlation, 2)])
    pruning_table = Table(
        "Gradient-descent networks: validation and test accuracy, test accuracy after pruning each head alone "
        "(heads in increasing order of score), and the Spearman ρ(score, drop)",
        ["seed", "validation", "test", "pruned head: accuracy", "ρ"], pruning_rows)
    return [fig_b, fig_c, fig_d, fig_e, fig_f], [accuracy_table, pruning_table]
