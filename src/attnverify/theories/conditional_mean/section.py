"""Report section of attention as a conditional mean (Zhang, Liu, Cai, Wang, Wang, 2022).

It draws only (the theory adds its title, introduction and derivations, `.theory`), on the note's standard
configuration G2 (``docs/papers/conditional_mean.md`` §6):

1. log-log root-mean-squared error of softmax attention against L, with the desired parameter
   a = Σ⁻¹(q − μ) and with W = I, against the derived √(C/L + D/L²) and the wrong limit;
2. L·MSE against L approaching the derived constant C;
3. fixed-bandwidth RBF attention on a sine conditional mean: the estimate against L for three
   bandwidths, converging to the derived m_h(q), not to sin(ωq);
4. the generalisation gap of the empirical-risk minimiser Ŵ against L (supervised and masked).

Every random seed is derived from ``seed`` through ``numpy.random.SeedSequence``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from . import claims  # noqa: F401  (registers the theory's claims: the registry loads this module)
from .claims._common import gaussian_constants
from .theory import theory
from .. import conditional_mean as sim
from .experiments import (BANDWIDTHS, G2_QUERY, LEARNING, LENGTHS, REPLICATES, SINE, bandwidth_errors_of, g2_model,
                          generalisation_gaps_of, rate_errors_of)
from ...report.figures import pyplot, save_figure
from ...execution.settings import RunSettings
from ...report.section import Figure, Section, Table


def _rate_figures(out_dir: Path, settings: RunSettings, progress) -> tuple[list[Figure], Table]:
    model = g2_model()
    query = np.array(G2_QUERY)
    desired = model.desired_score(query)
    constants = gaussian_constants(model, desired)
    naive = gaussian_constants(model, query)
    target = model.conditional_mean(query)
    lengths = np.array(LENGTHS, dtype=float)
    progress(f"conditional_mean: Monte Carlo error at L = {LENGTHS} ({settings.choose(**REPLICATES)} sequences each)")
    measured = settings.store.result(rate_errors_of(settings))
    errors, naive_errors = measured["errors"], measured["naive_errors"]
    rmse = np.sqrt([e.mse.mean for e in errors])
    rmse_se = np.array([e.mse.standard_error for e in errors]) / (2 * rmse)
    fit = measured["fit"]  # the slope over the claim's grid (L ≥ 64), fitted by the experiment
    naive_rmse = np.sqrt([e.mse.mean for e in naive_errors])
    naive_se = np.array([e.mse.standard_error for e in naive_errors]) / (2 * naive_rmse)
    fine = np.geomspace(lengths[0], lengths[-1], 100)
    offset = float(np.linalg.norm(model.attention_limit(query) - target))

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.2, 4.4))
    ax.errorbar(lengths, rmse, yerr=2 * rmse_se, fmt="o", color="C0", label="desired parameter a = Σ⁻¹(q − μ): Monte Carlo")
    ax.plot(fine, np.sqrt(constants["constant"] / fine), color="C0", lw=1, label="√(C/L) (derived)")
    # the two-term expansion is shown only where its correction is at most half the leading term
    shown = fine >= 2 * abs(constants["second_order"]) / constants["constant"]
    two_term = np.sqrt(constants["constant"] / fine[shown] + constants["second_order"] / fine[shown] ** 2)
    ax.plot(fine[shown], two_term, color="C0", ls="--", lw=1, label="√(C/L + D/L²) (derived, |D|/L ≤ C/2)")
    ax.errorbar(lengths, naive_rmse, yerr=2 * naive_se, fmt="s", color="C3", label="W = I: Monte Carlo")
    ax.axhline(offset, color="C3", ls=":", lw=1, label="|A(μ + Σq) − Aq| (derived limit of W = I)")
    ax.set(xscale="log", yscale="log", xlabel="sequence length L", ylabel="RMSE of attention against E[v | k = q]",
           title=f"G2: slope over L ≥ 64: {fit.slope:.3f} ± {fit.slope_standard_error:.3f} (derived: −1/2, "
                 f"{measured['derived_slope']:.3f} with D/L²)")
    ax.legend(fontsize=7)
    rate = save_figure(fig, out_dir, "conditional_mean_rate.png",
                       "Root-mean-squared error of softmax attention on the note's configuration G2 against the "
                       "sequence length (± 2 SE): with the desired parameter it falls like L^(−1/2) onto the derived "
                       "√(C/L + D/L²); with W = I it stalls at the distance to the wrong limit A(μ + Σq) + b.",
                       {"lengths": lengths.tolist(), "rmse": rmse.tolist(), "rmse_se": rmse_se.tolist(),
                        "naive_rmse": naive_rmse.tolist(), "naive_rmse_se": naive_se.tolist(), "fit": fit.as_dict(),
                        "constant": constants["constant"], "second_order": constants["second_order"],
                        "naive_offset": offset})

    scaled = np.array([e.scaled_mse().mean for e in errors])
    scaled_se = np.array([e.scaled_mse().standard_error for e in errors])
    fig, ax = plt.subplots(figsize=(6.2, 4.0))
    ax.errorbar(lengths, scaled, yerr=2 * scaled_se, fmt="o", label="L·MSE (Monte Carlo)")
    ax.axhline(constants["constant"], color="k", lw=1, label=f"C = {constants['constant']:.4f} (derived)")
    ax.plot(fine[shown], constants["constant"] + constants["second_order"] / fine[shown], "k--", lw=1, label="C + D/L (derived)")
    ax.set(xscale="log", xlabel="sequence length L", ylabel="L · E‖attn − E[v|k=q]‖²", ylim=(0, 1.3 * constants["constant"]),
           title="The error constant (G2, desired parameter)")
    ax.legend(fontsize=8)
    constant_figure = save_figure(fig, out_dir, "conditional_mean_constant.png",
                                  "L·MSE of attention with the desired parameter (± 2 SE) approaching the derived "
                                  "constant C = e^{s²}(‖AΣa‖² + tr(AΣAᵀ) + σ²), with the derived 1/L correction D.",
                                  {"lengths": lengths.tolist(), "scaled_mse": scaled.tolist(), "scaled_mse_se": scaled_se.tolist()})
    rows = []
    for e in errors:
        L = e.length
        rows.append([L, f"{e.scaled_mse().mean:.3f} ± {e.scaled_mse().standard_error:.3f}",
                     f"{constants['constant'] + constants['second_order'] / L:.3f}",
                     f"{e.scaled_bias(constants['direction']).mean:.3f} ± {e.scaled_bias(constants['direction']).standard_error:.3f}",
                     f"{constants['bias'] + constants['second_order_bias'] / L:.3f}"])
    rows.append(["L ≥ 64", f"RMSE slope {fit.slope:.4f} ± {fit.slope_standard_error:.4f}", "−0.5", "", ""])
    table = Table(
        f"G2 with the desired parameter: measured against derived (C = {constants['constant']:.4f}, "
        f"D = {constants['second_order']:.2f}, B = {constants['bias']:.4f}, B₂ = {constants['second_order_bias']:.3f}; "
        f"s² = aᵀΣa = {model.invariants(desired)[0]:.4f}; W = I has C = {naive['constant']:.3f})",
        ["L", "L·MSE (MC ± SE)", "C + D/L", "L·bias along β (MC ± SE)", "B + B₂/L"], rows)
    return [rate, constant_figure], table


def _bandwidth_figure(out_dir: Path, settings: RunSettings, progress) -> tuple[Figure, Table]:
    model = sim.SineValueModel(SINE["key_sd"], SINE["frequency"], SINE["noise_sd"])
    q = SINE["query"]
    lengths = np.array(LENGTHS)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.2, 4.2))
    data, rows = {"lengths": lengths.tolist()}, []
    progress(f"conditional_mean: fixed bandwidths h = {BANDWIDTHS}")
    for i, point in enumerate(settings.store.result(bandwidth_errors_of(settings))):
        h, constants, means, ses = point["h"], point["constants"], point["mean"], point["standard_error"]
        ax.errorbar(lengths, means, yerr=2 * ses, fmt="o", color=f"C{i}", label=f"h = {h}: Monte Carlo")
        ax.axhline(constants["limit"], color=f"C{i}", lw=1, ls="--", label=f"m_h = {constants['limit']:.4f} (derived)")
        data[f"h={h}"] = {"mean": means.tolist(), "standard_error": ses.tolist(), **constants}
        rows.append([h, f"{means[-1]:.5f} ± {ses[-1]:.5f}", f"{constants['limit'] + constants['bias_constant'] / lengths[-1]:.5f}",
                     f"{constants['bias_to_truth']:.4f}"])
    truth = model.conditional_mean(q)
    ax.axhline(truth, color="k", lw=1.2, label=f"E[v | k = q] = sin(ωq) = {truth:.4f}")
    ax.set(xscale="log", xlabel="sequence length L", ylabel="RBF attention at q = 0.7",
           title="Fixed bandwidth: a persistent bias m_h(q) − sin(ωq)")
    ax.legend(fontsize=7, ncol=2)
    figure = save_figure(fig, out_dir, "conditional_mean_bandwidth.png",
                         "RBF (Nadaraya–Watson) attention with fixed bandwidths on k ~ N(0, 1), v = sin(2k) + 0.3ξ "
                         "(± 2 SE): each converges to its derived limit m_h(q), not to the conditional mean sin(ωq).",
                         data)
    table = Table(f"Fixed bandwidth at L = {lengths[-1]}: measured mean against the derived m_h + B/L, and the bias to sin(ωq) = {truth:.4f}",
                  ["h", "measured mean ± SE", "m_h + B/L (derived)", "m_h − sin(ωq) (derived)"], rows)
    return figure, table


def _learning_figure(out_dir: Path, settings: RunSettings, progress) -> tuple[Figure, Table]:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.2, 4.0))
    data, rows = {}, []
    progress(f"conditional_mean: ERM of W at L = {LEARNING['lengths']}")
    measured = settings.store.result(generalisation_gaps_of(settings))
    target = measured["desired_parameter"]  # the desired W = Σ⁻¹, shown in the data
    for i, objective in enumerate(("supervised", "masked")):
        gaps = measured[objective]["gap"]
        ses = measured[objective]["standard_error"]
        distances = measured[objective]["distance"]
        for L, gap, se, distance in zip(LEARNING["lengths"], gaps, ses, distances):
            rows.append([objective, L, f"{gap:.4f} ± {se:.4f}", f"{distance:.3f}"])
        fit = measured[objective]["fit"]
        ax.errorbar(LEARNING["lengths"], gaps, yerr=2 * np.array(ses), fmt="o-", color=f"C{i}",
                    label=f"{objective}: slope in log L {fit.slope:.4f} ± {fit.slope_standard_error:.4f}")
        data[objective] = {"gap": gaps, "standard_error": ses, "distance_to_inverse_covariance": distances, "fit": fit.as_dict()}
    ax.axhline(0, color="k", lw=0.8)
    ax.set(xscale="log", xlabel="sequence length L", ylabel="test risk − training risk of Ŵ",
           title=f"ERM of the attention parameter (N = {LEARNING['train_sequences']} sequences)")
    ax.legend(fontsize=8)
    figure = save_figure(fig, out_dir, "conditional_mean_learning.png",
                         "Generalisation gap of the empirical-risk minimiser Ŵ (± 2 SE over independent training sets) "
                         "against the sequence length, for the supervised and the masked objective: it does not grow with L.",
                         {**data, "lengths": list(LEARNING["lengths"]), "desired_parameter": target.tolist()})
    table = Table("Generalisation gap of Ŵ and its distance to the desired parameter Σ⁻¹",
                  ["objective", "L", "gap ± SE", "mean ‖Ŵ − Σ⁻¹‖_F"], rows)
    return figure, table




@theory.section
def build_section(out_dir: Path, settings: RunSettings, progress: Callable[[str], None]) -> Section:
    """The rate, constant, bandwidth and learning figures and their tables, written as ``conditional_mean_*.png``
    into ``out_dir``; every draw comes from ``seed`` through SeedSequence(seed).spawn (these simulations are
    small and run on numpy)."""
    figures, rate_table = _rate_figures(out_dir, settings, progress)
    bandwidth_figure, bandwidth_table = _bandwidth_figure(out_dir, settings, progress)
    learning_figure, learning_table = _learning_figure(out_dir, settings, progress)
    return Section(figures=[*figures, bandwidth_figure, learning_figure],
                   tables=[rate_table, bandwidth_table, learning_table])
