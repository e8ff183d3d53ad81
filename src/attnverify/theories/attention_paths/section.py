"""Report section of attention paths (Tiberi, Mignacco, Irie, Sompolinsky, NeurIPS 2024), figures 2 and 3.

Contract: `attnverify.report.section` (``build_section``). The section shows the derivations of
`attnverify.theories.attention_paths.derivations` and the finite-width theory on the hidden Markov chain
task (spec ``docs/papers/attention_paths.md`` §2.3, §2.4, §3, §4.1):

1. "2c": the 4-path network, accuracy of the mean predictor against the width N with the GP lines of
   all paths, the good path and the good + denoising paths, and the matrix elements of U against N;
2. "2d": overlaps of the kernel's principal components with the labels, N = 10 against the GP limit;
3. "2e": the 2-path network (good + denoising) with out-of-plane noise σ⊥ = 5, as in 2c;
4. "3b"–"3f": one-shot image classification with trained heads (`attnverify.theories.attention_paths.one_shot.section`).

The numbers come from the run's store of experiments (`attnverify.theories.attention_paths.experiments` and
`attnverify.theories.attention_paths.one_shot.experiments`); this module only draws them. The 4-path features are the
authors' own (``experiments.authors_markov_data``) when the package data holds them, else drawn by ``markov_dataset``;
the 2-path data are always drawn. Every random seed is derived from the ``seed`` argument through
``numpy.random.SeedSequence``.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Callable

import numpy as np

from . import claims  # noqa: F401  (registers the theory's claims: the registry loads this module)
from .theory import theory
from .experiments import (ALIGNMENT_WIDTH, DENOISING, FOUR_PATH_HEADS, GOOD, OUT_OF_PLANE_NOISE,
                          SUBNETWORKS, TEMPERATURE, TEST_SIZE, TWO_PATH_HEADS, Alignment, MarkovWidthSweep,
                          markov_alignment_of, markov_data_of, markov_width_sweep_of, sampled_markov_networks_of)
from ...execution.settings import RunSettings
from . import theory_points as experiments
from .theory_points import TheoryPoint
from ...report.figures import pyplot, save_figure
from ...report.section import Figure, Section, Table


FOUR_PATH_NAMES = ("g", "a1", "d", "a2")
"""Names of the 4-path network's paths by flat index (h1 slowest): (good, uniform) g, (good, random) a1,
(random, uniform) d "denoising", (random, random) a2 (spec §4.1, authors' ``PLOT_kernels.py``)."""

FOUR_PATH_DISPLAY = (0, 2, 1, 3)
"""Flat indices in the paper's display order [g, d, a1, a2] (``PLOT_order_parameter.py`` swaps 1 ↔ 2)."""

TWO_PATH_NAMES = ("g", "d")
"""Names of the 2-path network's paths: (good, uniform) g and (uniform, uniform) d."""

ALIGNMENT_COMPONENTS = 30
"""Principal components shown in figure 2d (the paper shows the first 30)."""

CUMULATIVE_COMPONENTS = 5
"""Leading principal components whose squared overlaps are summed in figure 2d's summary."""

GP_STYLES = {"all_paths": "-", "good": "--", "good_denoising": ":"}
"""Line styles of the GP reference lines (the paper's: all paths solid, good dashed, good + denoising dotted)."""

GP_LABELS = {"all_paths": "all paths", "good": "good path (g)", "good_denoising": "good + denoising (g, d)"}
"""Legend and table names of the GP reference lines."""


# ---------------------------------------------------------------------------------------------
# seeds and data
# ---------------------------------------------------------------------------------------------


def _estimate(point: TheoryPoint) -> dict:
    return {"accuracy": point.accuracy.mean, "standard_error": point.accuracy.standard_error,
            "generalisation_error": point.generalisation_error.mean,
            "generalisation_error_standard_error": point.generalisation_error.standard_error}


def _sweep_data(points: list[TheoryPoint], names: tuple[str, ...], display: tuple[int, ...]) -> dict:
    """Accuracies, U (flat path order and display order) and its named entries against N."""
    U = np.array([p.order_parameter for p in points])
    order = list(display)
    shown = [names[i] for i in order]
    diagonal = {names[i]: U[:, i, i] for i in order}
    off_diagonal = {f"{names[i]}-{names[j]}": U[:, i, j] for i, j in itertools.combinations(order, 2)}
    return {
        "widths": np.array([p.width for p in points]),
        "theory_accuracy": np.array([p.accuracy.mean for p in points]),
        "theory_standard_error": np.array([p.accuracy.standard_error for p in points]),
        "theory_generalisation_error": np.array([p.generalisation_error.mean for p in points]),
        "solver_seconds": np.array([p.seconds for p in points]),
        "path_names": list(names),
        "display_order": shown,
        "order_parameter": U,
        "order_parameter_display": U[:, order][:, :, order],
        "diagonal": diagonal,
        "off_diagonal": off_diagonal,
    }


# ---------------------------------------------------------------------------------------------
# figures 2c and 2e: accuracy and U against N
# ---------------------------------------------------------------------------------------------


def _draw_sweep(data: dict, gp: dict[str, TheoryPoint], title: str, sampled=()):
    """Top: accuracy of the mean predictor against N (theory ± 2 SE, GP lines); bottom: U against N."""
    plt = pyplot()
    fig, (ax, ax_u) = plt.subplots(2, 1, figsize=(8.2, 9.0), sharex=True, gridspec_kw={"height_ratios": [1.15, 1]})
    N = data["widths"]
    ax.errorbar(N, data["theory_accuracy"], yerr=2 * data["theory_standard_error"], fmt="x-", color="C0", ms=8,
                mew=2, capsize=3, label="theory, finite width (± 2 SE)")
    if sampled:
        ax.errorbar([q.width for q in sampled], [q.accuracy.mean for q in sampled],
                    yerr=[2 * q.accuracy.standard_error for q in sampled], fmt="o", color="k", ms=6, capsize=3,
                    zorder=5, label="sampled networks (HMC, ± 2 MCSE)")
    for name, point in gp.items():
        ax.axhline(point.accuracy.mean, color="C3", ls=GP_STYLES[name], lw=1.6,
                   label=f"GP limit, {GP_LABELS[name]}: {point.accuracy.mean:.3f}")
    ax.set_xscale("log")
    ax.set_ylabel(f"test accuracy of ⟨f⟩ ({TEST_SIZE} sequences)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="best")

    colours = itertools.count()
    for name, values in data["diagonal"].items():
        ax_u.plot(N, values, "o-", color=f"C{next(colours) % 10}", ms=4, lw=1.6, label=f"U[{name},{name}]")
    for name, values in data["off_diagonal"].items():
        a, b = name.split("-")
        ax_u.plot(N, values, "s--", color=f"C{next(colours) % 10}", ms=3, lw=1.1, label=f"U[{a},{b}]")
    for k, q in enumerate(sampled):
        for i, j in [(a, a) for a in FOUR_PATH_DISPLAY] + [(GOOD, DENOISING)]:
            first = k == 0 and i == j == FOUR_PATH_DISPLAY[0]
            ax_u.errorbar(q.width, q.order_parameter[i, j], yerr=2 * q.order_parameter_mcse[i, j], fmt="o",
                          color="k", ms=4, capsize=2, zorder=5, label="sampled U (± 2 MCSE)" if first else None)
            ax_u.errorbar(q.width * 1.08, q.prediction[i, j], yerr=q.prediction_error[i, j], fmt="D", mfc="none",
                          color="C3", ms=5, capsize=2, zorder=6,
                          label="next order of the action (± its stated error)" if first else None)
    ax_u.axhline(1.0, color="0.5", ls=":", lw=1)
    ax_u.axhline(0.0, color="0.5", ls=":", lw=1)
    ax_u.set_xscale("log")
    ax_u.set_xlabel("width N (= n₀ = n₁ = n₂)")
    ax_u.set_ylabel("matrix elements of U (GP limit: I, grey)")
    ax_u.grid(True, which="both", alpha=0.3)
    ax_u.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    return fig


def _accuracy_table(caption: str, data: dict, gp: dict[str, TheoryPoint]) -> Table:
    rows = [[int(N), float(a), float(s), float(e)] for N, a, s, e in zip(
        data["widths"], data["theory_accuracy"], data["theory_standard_error"], data["theory_generalisation_error"])]
    rows += [[f"GP, {GP_LABELS[name]}", p.accuracy.mean, p.accuracy.standard_error, p.generalisation_error.mean]
             for name, p in gp.items()]
    return Table(caption, ["N (or GP line)", "accuracy of ⟨f⟩", "SE", "generalisation error ε_g"], rows)


def _paired(points: list[TheoryPoint], gp: dict[str, TheoryPoint]) -> dict:
    """Accuracy at the smallest and largest N minus each GP line, on the same test sequences (paired SE)."""
    out = {}
    for label, point in (("smallest_width", points[0]), ("largest_width", points[-1])):
        out[label] = {"width": point.width, **{
            name: experiments.paired_difference(point, line).as_dict() for name, line in gp.items()}}
    return out


def _next_order_sentence(sampled) -> str:
    """How far the networks lie from the next order and from the saddle point, in units of the claim's allowance."""
    parts = []
    for q in sampled:
        parts.append(f"N = {q.width}: {q.gap_over_allowance(q.prediction):.2f}× the allowance from the next order, "
                     f"{q.gap_over_allowance(q.theory.order_parameter):.2f}× from the saddle point")
    return (" Largest gap of the sampled U over z MCSE + the next order's error: " + "; ".join(parts) + ".") \
        if parts else ""


def _sampled_table(source: str, sampled) -> Table:
    rows = []
    for q in sampled:
        allowed = q.allowance
        for name, (i, j) in (("U[g,g]", (0, 0)), ("U[d,d]", (2, 2)), ("U[g,d]", (0, 2)), ("U[a1,a1]", (1, 1)),
                             ("U[a2,a2]", (3, 3))):
            rows.append([q.width, name, float(q.theory.order_parameter[i, j]), float(q.prediction[i, j]),
                         float(q.order_parameter[i, j]), float(q.order_parameter_mcse[i, j]), float(allowed[i, j])])
        rows.append([q.width, "accuracy", q.theory.accuracy.mean, "", q.accuracy.mean, q.accuracy.standard_error,
                     5 * q.accuracy.standard_error + q.accuracy_budget])
    return Table(f"Theory vs sampled networks (4-path network, {source} data, collapsed HMC; seeds, R-hat and ESS "
                 "in results.json): the claim allows U z MCSE + the next order's stated error around the next order, "
                 "and the accuracy 5 MCSE + its O(1/N) budget around the saddle point's",
                 ["N", "quantity", "saddle point", "next order", "sampled", "MCSE", "allowance"], rows)


def _gp_data(sweep: MarkovWidthSweep) -> dict:
    return {name: {"paths": list(paths), **_estimate(sweep.gp[name])} for name, paths in SUBNETWORKS[sweep.network].items()}


def _four_path_figure(out_dir: Path, markov, sweep: MarkovWidthSweep, sampled=()) -> tuple[Figure, list[Table]]:
    X, Xt, source, description = markov.X, markov.X_test, markov.source, markov.description
    gp, points = sweep.gp, list(sweep.points)
    data = _sweep_data(points, FOUR_PATH_NAMES, FOUR_PATH_DISPLAY)
    data["sampled"] = [{"width": q.width, "U": q.order_parameter.tolist(), "U_mcse": q.order_parameter_mcse.tolist(),
                        "U_saddle": q.theory.order_parameter.tolist(), "U_next_order": q.prediction.tolist(),
                        "U_next_order_error": q.prediction_error.tolist(),
                        "accuracy": q.accuracy.as_dict(), "diagnostics": q.diagnostics, "converged": q.converged}
                       for q in sampled]
    paired = _paired(points, gp)
    data.update(data_source=source, data_description=description, temperature=TEMPERATURE, train_size=X.shape[0],
                test_size=Xt.shape[0], heads=list(FOUR_PATH_HEADS), out_of_plane_noise=1.0, gp=_gp_data(sweep),
                paired_differences=paired)
    fig = _draw_sweep(data, gp, f"Fig. 2c: 4 paths [good, random] × [uniform, random], σ⊥ = 1, P = {X.shape[0]}, "
                                f"T = {TEMPERATURE:g} ({source} data)", sampled)
    first, last = points[0], points[-1]
    small = paired["smallest_width"]
    caption = (
        f"Figure 2c. Hidden Markov chain task, 4-path network (layer 1: good and random heads; layer 2: uniform and "
        f"random heads; paths g, a1, d, a2), P = {X.shape[0]} training and {Xt.shape[0]} test sequences, T = "
        f"{TEMPERATURE:g}, all prior variances 1. Data: {description}. Top: test accuracy of the mean predictor "
        "⟨f(x)⟩ = k(x)ᵀ(K + T I)⁻¹Y at the saddle point U(N) (blue crosses joined by a line; error bars ± 2 SE, the SE "
        f"being the standard deviation of the 0/1 correctness over the {Xt.shape[0]} test sequences divided by "
        f"√{Xt.shape[0]}); red: GP limit U = I of the network of all paths (solid, {gp['all_paths'].accuracy.mean:.3f}), "
        f"of the good path alone (dashed, {gp['good'].accuracy.mean:.3f}) and of the good + denoising paths "
        f"(dotted, {gp['good_denoising'].accuracy.mean:.3f}); each subnetwork's features are those of the same "
        "sequences and heads, normalised for its own number of paths. Theory: "
        f"{first.accuracy.mean:.3f} ± {first.accuracy.standard_error:.3f} at N = {first.width:g}, "
        f"{last.accuracy.mean:.3f} ± {last.accuracy.standard_error:.3f} at N = {last.width:g}. Paired differences "
        f"(same test sequences) at N = {first.width:g}: {small['all_paths']['mean']:+.3f} ± "
        f"{small['all_paths']['standard_error']:.3f} against the all-paths GP, {small['good_denoising']['mean']:+.3f} ± "
        f"{small['good_denoising']['standard_error']:.3f} against the good + denoising GP. Bottom: matrix elements "
        "of U against N, diagonal (solid) and off-diagonal (dashed), paths in the paper's display order "
        "[g, d, a1, a2]; grey dotted lines mark the GP values 1 and 0. Black dots: networks sampled from the "
        "posterior at finite N (collapsed HMC, V⁽⁰⁾ integrated out exactly; ± 2 MCSE from the bulk ESS): accuracy of "
        "their posterior-mean predictor (top) and ⟨w_π·w_π'⟩/n₀ (bottom: diagonal entries and U[g,d]). Red open "
        "diamonds (drawn just right of their width): the action's own posterior mean of U at that width, the next "
        "order of the Laplace expansion around the saddle point, with its stated error; the networks are compared "
        "with these, the lines being the saddle point alone." + _next_order_sentence(sampled)
    )
    figure = save_figure(fig, out_dir, "attention_paths_fig2c.png", caption, data)
    index = {N: k for k, N in enumerate(data["widths"])}
    U10 = data["order_parameter_display"][index[ALIGNMENT_WIDTH]] if ALIGNMENT_WIDTH in index else None
    tables = [_accuracy_table(
        f"Figure 2c: accuracy of the mean predictor against N, 4-path network ({source} data), with the GP lines; "
        f"SE over {Xt.shape[0]} test sequences", data, gp)]
    if U10 is not None:
        names = data["display_order"]
        tables.append(Table(f"Figure 2c: order parameter U at N = {ALIGNMENT_WIDTH} (4-path network, {source} data), "
                            "paths in display order [g, d, a1, a2]; GP limit: U = I",
                            [f"U (N = {ALIGNMENT_WIDTH})", *names],
                            [[name, *(float(v) for v in row)] for name, row in zip(names, U10)]))
    if sampled:
        tables.append(_sampled_table(source, sampled))
    return figure, tables


def _two_path_figure(out_dir: Path, markov, sweep: MarkovWidthSweep) -> tuple[Figure, Table]:
    X, Xt = markov.X, markov.X_test
    gp, points = sweep.gp, list(sweep.points)
    data = _sweep_data(points, TWO_PATH_NAMES, (0, 1))
    paired = _paired(points, gp)
    data.update(data_source="generated", temperature=TEMPERATURE, train_size=X.shape[0], test_size=Xt.shape[0],
                heads=list(TWO_PATH_HEADS), out_of_plane_noise=OUT_OF_PLANE_NOISE, gp=_gp_data(sweep),
                paired_differences=paired)
    fig = _draw_sweep(data, gp, f"Fig. 2e: 2 paths [good, uniform] × [uniform], σ⊥ = {OUT_OF_PLANE_NOISE:g}, "
                                f"P = {X.shape[0]}, T = {TEMPERATURE:g} (generated data)")
    first, last = points[0], points[-1]
    small = paired["smallest_width"]
    caption = (
        f"Figure 2e. As figure 2c, for out-of-plane noise σ⊥ = {OUT_OF_PLANE_NOISE:g} and the network of the good "
        "and denoising paths only (layer 1: good head and a uniform head, i.e. the random head with perturbation 0; "
        "layer 2: uniform head; paths g = (good, uniform), d = (uniform, uniform)). Data drawn here by "
        f"markov_dataset ({X.shape[0]} training, {Xt.shape[0]} test sequences; seeds from the report seed), a "
        f"different realisation than the paper's. Red: GP limit of both paths (solid, {gp['all_paths'].accuracy.mean:.3f}) "
        f"and of the good path alone (dashed, {gp['good'].accuracy.mean:.3f}). Theory: "
        f"{first.accuracy.mean:.3f} ± {first.accuracy.standard_error:.3f} at N = {first.width:g}, "
        f"{last.accuracy.mean:.3f} ± {last.accuracy.standard_error:.3f} at N = {last.width:g}; paired difference at "
        f"N = {first.width:g} against the all-paths GP {small['all_paths']['mean']:+.3f} ± "
        f"{small['all_paths']['standard_error']:.3f}. Error bars ± 2 SE. Bottom: U[g,g], U[d,d] and U[g,d] against N."
    )
    figure = save_figure(fig, out_dir, "attention_paths_fig2e.png", caption, data)
    table = _accuracy_table(
        f"Figure 2e: accuracy of the mean predictor against N, 2-path network, σ⊥ = {OUT_OF_PLANE_NOISE:g} "
        f"(generated data), with the GP lines; SE over {Xt.shape[0]} test sequences", data, gp)
    return figure, table


# ---------------------------------------------------------------------------------------------
# figure 2d: kernel–task alignment
# ---------------------------------------------------------------------------------------------


def _alignment_figure(out_dir: Path, alignment: Alignment, source: str) -> Figure:
    k = ALIGNMENT_COMPONENTS
    theory_values, theory_overlaps = alignment.theory_eigenvalues, alignment.theory_overlaps
    gp_values, gp_overlaps = alignment.gp_eigenvalues, alignment.gp_overlaps
    U = alignment.order_parameter
    c = CUMULATIVE_COMPONENTS
    cumulative = {"theory": float(np.sum(theory_overlaps[:c] ** 2)), "gp": float(np.sum(gp_overlaps[:c] ** 2))}
    total = {"theory": float(np.sum(theory_overlaps**2)), "gp": float(np.sum(gp_overlaps**2))}
    components = np.arange(1, k + 1)

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9.0, 4.4))
    ax.bar(components - 0.2, theory_overlaps[:k], width=0.4, color="C0", label=f"N = {ALIGNMENT_WIDTH} (theory U)")
    ax.bar(components + 0.2, gp_overlaps[:k], width=0.4, color="C1", label="GP limit (U = I)")
    ax.set_xlabel("principal component k of K (eigenvalues descending)")
    ax.set_ylabel("|φ_kᵀ Y| / √P")
    ax.set_xlim(0.3, k + 0.7)
    ax.set_title(f"Fig. 2d: kernel–task alignment, 4-path network ({source} data); "
                 f"overlap² summed over PCs 1–{c}: {cumulative['theory']:.3f} at N = {ALIGNMENT_WIDTH}, "
                 f"{cumulative['gp']:.3f} in the GP limit",
                 fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=9)
    fig.tight_layout()
    caption = (
        f"Figure 2d. Normalised overlap (cosine similarity) |φ_kᵀY|/√P between the k-th unit eigenvector φ_k of the "
        f"training kernel K(U) (no temperature added, eigenvalues descending) and the labels Y, for the first {k} "
        f"principal components: the 4-path network of figure 2c at N = {ALIGNMENT_WIDTH} (blue, U from the saddle "
        f"point) and in the GP limit (orange, U = I). Cumulative squared overlap of the first {c} PCs: "
        f"{cumulative['theory']:.3f} at N = {ALIGNMENT_WIDTH} and {cumulative['gp']:.3f} in the GP limit (over all "
        f"{len(theory_overlaps)} PCs both sum to |Y|²/P = 1: {total['theory']:.6f} and {total['gp']:.6f})."
    )
    return save_figure(fig, out_dir, "attention_paths_fig2d.png", caption, {
        "width": ALIGNMENT_WIDTH, "components": components, "data_source": source,
        "theory_overlap": theory_overlaps[:k], "gp_overlap": gp_overlaps[:k],
        "theory_eigenvalues": theory_values[:k], "gp_eigenvalues": gp_values[:k],
        "order_parameter": np.asarray(U, dtype=float),
        "cumulative_components": c, "cumulative_overlap2": cumulative, "total_overlap2": total,
    })


# ---------------------------------------------------------------------------------------------
# the section
# ---------------------------------------------------------------------------------------------


INTRODUCTION = """\
**Model.** A transformer of L attention layers whose attention matrices Ω^(ℓ)_h(x) are fixed functions of \
the bare input x (softmax over keys of x_sᵀW_h x_t, W not learned), with learned linear value weights \
V^(0), V^(ℓ)_h and readout a, Gaussian priors of variance 1 and a Gibbs posterior at temperature T on the squared \
error. Multiplying out the layers, the output is a sum over **attention paths** π = (h_1, …, h_L), one head per \
layer: f(x) = Σ_π V^eff_π · ξ^π(x), with ξ^π(x) = x Ω^(1)_{h_1} ⋯ ω^(L)_{h_L} the input carried along the path \
and V^eff_π the product of the value weights along it.

**Order parameter.** In the limit N, P → ∞ at fixed α = P/N (N the width of every layer), the posterior over \
the weights concentrates on a saddle point of an action S(U) = ln det(K + TI) + Yᵀ(K + TI)⁻¹Y + 𝓛(U), where \
the **order parameter** U_{ππ'} is the overlap of the effective weights of two paths and the kernel is \
K(U) = Σ_{ππ'} U_{ππ'} C_{ππ'}, a U-weighted sum of the path–path kernels C_{ππ'} = X_π · X_{π'}. The entropy 𝓛 \
(the Wishart priors of the weights) pulls U to the identity with a strength proportional to N; the energy, \
proportional to P, pulls it towards path combinations aligned with the labels. The predictor is the kernel \
regression ⟨f(x)⟩ = k(x)ᵀ(K + TI)⁻¹Y with the renormalised kernel.

**GP limit.** As N → ∞ at fixed P the entropy wins and U → I: cross-path kernels drop out and every path \
counts equally (the Gaussian-process limit). At finite N the theory can weigh up useful paths, weigh down \
harmful ones and combine paths through off-diagonal elements of U.

**Figures below** (paper's figure 2, hidden Markov chain task: sequences of 30 noisy tokens from a two-state \
chain, class +1 staying in its state with probability 0.7, class −1 with probability 0.3; P = 100, T = 0.01). \
*2c*: the 4-path network (a good head that attends to the previous token when its state is the same, random \
heads and a uniform head, giving paths g = good, d = denoising, a1 and a2 = adversarial), accuracy of the mean \
predictor against N with the GP lines of all paths, the good path and the good + denoising paths, and the \
elements of U against N. *2d*: how well the leading principal components of K align with the labels, at \
N = 10 and in the GP limit. *2e*: the network of the good and denoising paths with strong out-of-plane noise \
σ⊥ = 5. Every accuracy is the theory's (the saddle point solved by this package), not a sampled network's; \
numbers are in the captions and tables.

**Figure 3, on real images** (paper: Omniglot; here scikit-learn's handwritten digits, which ship with the package). Two-way one-shot episodes [support of class A + label embedding, support of class B + label embedding, query + "unknown" embedding], images resized to 32 × 32 and cut into 16 layer-normalised 8 × 8 patches with sinusoidal positions, 48 tokens of dimension 64, target ±1. Test episodes use digit classes never seen in training; the training classes are multiplied by four by quarter turns (6 and 9 kept on one side of the split). A 2-layer × 4-head network with linear values is trained by gradient descent (Adam, MSE; ``attnverify train-one-shot``, cached in the package); its query/key weights fix the attention of the Bayesian network, whose theory is solved on P of its path features. The temperature is chosen on validation episodes (held-out images of the training classes), not on the test set. *3b*: accuracy against N with the GP line, sampled networks and the trained network; *3c*: U theory, sampled and gradient-descent; *3d*: kernel–task alignment; *3e*: head scores against the accuracy lost when the head is pruned from the trained network; *3f*: accuracy while pruning heads in order of score.
"""


@theory.section
def build_section(out_dir: Path, settings: RunSettings, progress: Callable[[str], None]) -> Section:
    """The attention-paths section: derivations, figures 2c, 2d and 2e, and tables of the accuracies
    against N, of U at N = 10 and of the solver's time.

    Writes ``attention_paths_fig2{c,d,e}.png`` into ``out_dir``. The settings' backend computes the attention and
    path features of the data drawn here, the saddle points, the predictor and the sampled networks (the trust-region
    steps over U on the host). Their seed fixes every random draw through SeedSequence(seed).spawn; the authors'
    4-path features, when present, do not depend on it.
    """
    profile, store = settings.profile, settings.store

    progress("attention_paths: deriving the action, saddle-point equations and GP limit (sympy)")
    derivations = theory.derivation_list()

    progress("attention_paths: figure 2c, the 4-path features, the theory against N and the sampled networks")
    four = store.result(markov_data_of(settings, "4paths"))
    sweep_c = store.result(markov_width_sweep_of(settings, "4paths"))
    sampled = store.result(sampled_markov_networks_of(settings))
    fig_c, tables_c = _four_path_figure(out_dir, four, sweep_c, sampled)
    progress(f"attention_paths: figure 2d, kernel PCs' overlap with Y (N = {ALIGNMENT_WIDTH} vs GP)")
    alignment = store.result(markov_alignment_of(settings))
    fig_d = _alignment_figure(out_dir, alignment, four.source)
    progress(f"attention_paths: figure 2e, the 2-path data (σ⊥ = {OUT_OF_PLANE_NOISE:g}) and the theory against N")
    two = store.result(markov_data_of(settings, "2paths"))
    sweep_e = store.result(markov_width_sweep_of(settings, "2paths"))
    fig_e, table_e = _two_path_figure(out_dir, two, sweep_e)

    from .one_shot.section import figure3

    figures_3, tables_3 = figure3(out_dir, settings, progress)

    timing = Table(
        "Saddle-point solver time per width N (seconds, one solve each, started at the GP point)",
        ["N", "2c: 4 paths (s)", "2e: 2 paths (s)"],
        [[int(c.width), round(c.seconds, 3), round(e.seconds, 3)] for c, e in zip(sweep_c.points, sweep_e.points)],
    )
    introduction = INTRODUCTION + (
        "\nThis is the quick profile: the widths are the paper's, N = 10 … 1000; the thorough profile adds "
        "N = 5000 and 10000.\n" if profile == "quick" else "")
    return Section(
        introduction=introduction,
        derivations=derivations,
        figures=[fig_c, fig_d, fig_e, *figures_3],
        tables=[*tables_c, table_e, timing, *tables_3],
    )
