"""Report section of single-location regression (Marion, Berthier, Biau, Boyer, ICLR 2025).

It draws only (the theory adds its title, introduction and derivations, `.theory`), four figures:

1. risk against the sequence length L at d = 400 — oracle closed form (Theorem 1) and Monte Carlo,
   Bayes risk by Monte Carlo, best linear predictor closed form (Proposition 3) and Monte Carlo;
2. the oracle excess ℛ(T*) − ε² against d for several L at λ = 2·√(log(d/L)/d) (Corollary 2);
3. population projected gradient descent in the exact 4-dimensional reduction, from the authors'
   configurations (``experiments.PGD_CONFIGS``), started on M and on the sphere;
4. (thorough profile only) projected SGD on sampled batches, the authors' SGD configuration.

Spec: ``docs/papers/single_location.md`` §2, §3, §4.2. Every risk includes ε²; γ² = 1/2 and ε = 0.1
as in the authors' experiments. Every random seed is derived from the ``seed`` argument through
``numpy.random.SeedSequence`` so the report is reproducible.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import claims  # noqa: F401  (registers the theory's claims: the registry loads this module)
from .theory import theory
from .experiments import (ALIGNED, ON_MANIFOLD, DISTANCE_FLOOR, EPS, EXCESS_SCALE, LAMBDA_BOUNDS,
                          LENGTHS, MONTE_CARLO_SAMPLES, PGD_CONFIGS, PGD_SECTION_CONFIGS, RISK_DIMENSION, SGD_CONFIG,
                          GAMMA, PGD_DIMENSION, PGD_LENGTH, oracle_excess_against_dimension, pgd_runs_of,
                          risks_against_length_of, sgd_run_of)
from ...execution.settings import RunSettings
from ...report.figures import pyplot, save_figure
from ...report.section import Figure, Section, Table




# ---------------------------------------------------------------------------------------------
# seeds
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Figure 1: risk against L
# ---------------------------------------------------------------------------------------------


def _risk_vs_length(out_dir: Path, settings: RunSettings, progress: Callable[[str], None]) -> tuple[Figure, Table]:
    d, n = RISK_DIMENSION, settings.choose(**MONTE_CARLO_SAMPLES)
    progress(f"single_location: risks against L at d = {d} ({n:,} Monte Carlo sequences each)")
    risks = settings.store.result(risks_against_length_of(settings))
    data = risks["points"]
    curve_L, curve_lam = risks["curve_L"], risks["curve_lambda"]
    curve_oracle, curve_linear = risks["curve_oracle"], risks["curve_linear"]

    plt = pyplot()
    fig, (ax, ax_lam) = plt.subplots(1, 2, figsize=(11.5, 5.2), gridspec_kw={"width_ratios": [2.2, 1]})
    ax.plot(curve_L, curve_oracle, color="C0", label="oracle T* at optimal λ, closed form (Thm 1)")
    ax.plot(curve_L, curve_linear, color="C1", label="best linear β*, closed form (Prop. 3)")
    ax.axhline(EPS**2, color="k", ls="--", lw=1, label="ε² (noise floor)")
    L_arr = data["L"].astype(float)
    ax.errorbar(L_arr, data["oracle_mc"], yerr=2 * data["oracle_se"], fmt="o", color="C0", ms=5, capsize=3,
                label="oracle, Monte Carlo ± 2 SE")
    ax.errorbar(L_arr, data["linear_mc"], yerr=2 * data["linear_se"], fmt="s", color="C1", ms=5, capsize=3,
                label="linear β*, Monte Carlo ± 2 SE")
    ax.errorbar(L_arr * 1.04, data["bayes_mc"], yerr=2 * data["bayes_se"], fmt="^", color="C2", ms=6, capsize=3,
                label="Bayes predictor, Monte Carlo ± 2 SE")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("sequence length L")
    ax.set_ylabel("risk E[(Y − f(X))²]  (ε² included)")
    ax.set_title(f"Risk against L (d = {d}, γ² = 1/2, ε = {EPS})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    ax_lam.plot(curve_L, curve_lam, color="C0")
    ax_lam.plot(L_arr, data["lambda"], "o", color="C0", ms=5)
    ax_lam.set_xscale("log")
    ax_lam.set_yscale("log")
    ax_lam.set_xlabel("sequence length L")
    ax_lam.set_ylabel("λ minimising the oracle risk")
    ax_lam.set_title("Optimal inverse temperature")
    ax_lam.grid(True, which="both", alpha=0.3)
    fig.tight_layout()

    z_oracle = (data["oracle_mc"] - data["oracle_closed_form"]) / data["oracle_se"]
    z_linear = (data["linear_mc"] - data["linear_closed_form"]) / data["linear_se"]
    ahead = [int(L) for L, o, li in zip(data["L"], data["oracle_closed_form"], data["linear_closed_form"]) if o < li]
    caption = (
        f"Risk (ε² included) against L at d = {d}, γ² = 1/2, ε = {EPS}. Lines: closed forms of the oracle "
        f"T* = T_λ^{{k*,v*}} (Theorem 1) at the λ minimising it (right panel; found by a grid on log λ in "
        f"[{LAMBDA_BOUNDS[0]:g}, {LAMBDA_BOUNDS[1]:g}] refined by scipy's bounded minimize_scalar), and of the best "
        f"linear predictor β*_ℓ = γ²/(γ²+L−1)·v* (Proposition 3). Points: Monte Carlo with {n:,} sequences each, "
        "error bars ± 2 standard errors; the Bayes risk averages the conditional risk "
        "ε² + Σ_ℓ p_ℓu_ℓ² − (Σ_ℓ p_ℓu_ℓ)² (conditional=True, lower variance than (Y − f)²), drawn slightly "
        f"right of its L. Largest |MC − closed form|/SE: oracle {np.max(np.abs(z_oracle)):.2f}, linear "
        f"{np.max(np.abs(z_linear)):.2f}. The oracle's closed-form risk is below the linear one at L = "
        f"{', '.join(map(str, ahead)) or 'none'}; at L = 1 the linear predictor β* = v* is exact (risk ε²) and "
        "the oracle risk decreases in λ to ε² (within round-off) for λ ≳ "
        f"{data['lambda'][0]:.2g}, the smallest such λ being shown."
    )
    figure = save_figure(fig, out_dir, "single_location_risk_vs_L.png", caption, {
        "d": d, "gamma": GAMMA, "eps": EPS, "samples_per_point": n, **data,
        "z_oracle": z_oracle, "z_linear": z_linear,
        "curve_L": curve_L, "curve_lambda": curve_lam, "curve_oracle_closed_form": curve_oracle,
        "curve_linear_closed_form": curve_linear,
    })
    table = Table(
        f"Risks against L (d = {d}, γ² = 1/2, ε = {EPS}; ε² included; MC with {n:,} sequences, SE = standard error; "
        "Bayes by the conditional estimator)",
        ["L", "λ (optimal)", "oracle closed form", "oracle MC", "oracle SE", "Bayes MC", "Bayes SE",
         "linear closed form", "linear MC", "linear SE"],
        [[int(data["L"][i]), *(float(data[key][i]) for key in (
            "lambda", "oracle_closed_form", "oracle_mc", "oracle_se", "bayes_mc", "bayes_se",
            "linear_closed_form", "linear_mc", "linear_se"))] for i in range(len(LENGTHS))],
    )
    return figure, table


# ---------------------------------------------------------------------------------------------
# Figure 2: oracle excess against d
# ---------------------------------------------------------------------------------------------


def _oracle_excess(out_dir: Path, *, progress: Callable[[str], None], store) -> Figure:
    progress("single_location: oracle excess against d (extended precision)")
    computed = store.get(oracle_excess_against_dimension)
    d = computed["d"]
    data: dict[str, Any] = {"d": d, "scale_c": EXCESS_SCALE, "gamma": GAMMA, "curves": computed["curves"]}
    plt = pyplot()
    fig, (ax_noise, ax_single) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [1.4, 1]})
    crossings, optimal_ahead, single_slope = computed["crossings"], computed["optimal_ahead"], computed["single_slope"]
    for colour, curve in enumerate(computed["curves"]):
        label, excess, linear = curve["rule"], curve["oracle_excess"], curve["linear_excess"]
        if "loglog_slope" in curve:
            ax_single.plot(d, excess, "o-", color=f"C{colour}", ms=4, label=f"oracle, {label}, λ = c·√(log d/d)")
        else:
            ax_noise.plot(d, excess, "o-", color=f"C{colour}", ms=4, label=f"oracle, {label}, λ = c·√(log(d/L)/d)")
            ax_noise.plot(d, curve["oracle_excess_optimal_lambda"], ":", color=f"C{colour}", lw=1.6,
                          label=f"oracle, {label}, optimal λ")
            ax_noise.plot(d, linear, "--", color=f"C{colour}", label=f"best linear, {label}")
    for ax in (ax_noise, ax_single):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("token dimension d")
        ax.set_ylabel("excess risk ℛ − ε²")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    ax_noise.set_title(f"Oracle (Cor. 2) vs best linear (Prop. 3), c = {EXCESS_SCALE:g}")
    ax_single.set_title("L = 1: no uninformative token")
    fig.tight_layout()
    caption = (
        f"Excess risk ℛ − ε² against d (log–log), γ² = 1/2. Solid: the oracle T* (Theorem 1) at "
        f"λ = c·√(log(d/L)/d) with c = {EXCESS_SCALE:g}, so that λ√d → ∞ and λ√L → 0 when L = o(d) (Corollary 2), "
        "evaluated in extended precision (mpmath) because the informative-token term decays like erfc(λ√(d/2))², far "
        "below float64 resolution of its O(1) parts. Left: L = 10 and L = ⌈√d⌉; dotted, for reference, the oracle at "
        "the λ minimising its risk; dashed, the best linear predictor's excess γ²(L−1)/(γ²+L−1) (Proposition 3), "
        "which does not decrease with d. With c = 2 the oracle beats the linear predictor "
        f"({'; '.join(crossings)}); at the optimal λ it is "
        f"{'ahead at every d shown' if optimal_ahead else 'not ahead at every d shown'}. Right: L = 1, where the "
        "linear excess is 0 (the linear predictor v* is exact) and the oracle excess is only the informative-token "
        f"term, with λ√(d/2) = √(2 log d): fitted log–log slope {single_slope:.2f}."
    )
    return save_figure(fig, out_dir, "single_location_oracle_excess.png", caption, data)


# ---------------------------------------------------------------------------------------------
# Figure 3: population projected gradient descent
# ---------------------------------------------------------------------------------------------


def _describe(run: dict) -> str:
    lam = f"λ_t = {run['lam0']:g}/(1+10⁻⁴t)" if run["scheduled"] else f"λ = {run['lam0']:g}"
    return f"{run['config']}, {run['start']} start: {lam}, α = {run['step_size']:g}, {run['runs']} runs"


def _draw_dynamics_row(axes, run: dict, *, risk_label: str) -> None:
    """The authors' four panels (plot.py): excess risk, |κ| and |ν|, (κ, ν) paths, distance to M."""
    steps = run["steps"]
    ax = axes[0]
    band = run["excess_risk"]
    ax.plot(steps, band["mean"], color="C3", label="mean over runs")
    ax.fill_between(steps, band["q05"], band["q95"], color="C3", alpha=0.25, label="5–95% of runs")
    ax.plot(steps, run["oracle_excess"], "k--", lw=1, label="oracle ℛ(T*) − ε² at λ_t")
    ax.set_ylabel(risk_label)
    shown = np.concatenate([band["q05"], band["q95"], run["oracle_excess"]])
    if np.all(shown > 0) and shown.max() > 10 * shown.min():  # log only where it spans a decade
        ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax = axes[1]
    for key, colour, label in (("abs_kappa", "C0", "|κ| = |⟨k,k*⟩|"), ("abs_nu", "C1", "|ν| = |⟨v,v*⟩|")):
        ax.plot(steps, run[key]["mean"], color=colour, label=label)
        ax.fill_between(steps, run[key]["q05"], run[key]["q95"], color=colour, alpha=0.2)
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel("alignment with oracle (mean, 5–95%)")
    ax.legend(fontsize=7, loc="center right")
    ax = axes[2]
    scatter = None
    for marker, trajectory in zip("ovs", run["trajectories"]):
        ax.plot(trajectory["kappa"], trajectory["nu"], color="0.7", lw=0.8, zorder=1)
        scatter = ax.scatter(trajectory["kappa"], trajectory["nu"], c=steps, cmap="viridis", s=9, marker=marker,
                             zorder=2, label=f"run {trajectory['run']}")
    ax.plot([1, -1], [1, -1], "r*", ms=11, zorder=3, label="±(k*, v*)")
    ax.set_xlim(-1.1, 1.1)
    ax.set_ylim(-1.1, 1.1)
    ax.set_xlabel("κ")
    ax.set_ylabel("ν")
    ax.legend(fontsize=7, loc="lower right")
    if scatter is not None:
        axes[2].figure.colorbar(scatter, ax=ax, label="step")
    ax = axes[3]
    band = run["distance"]
    ax.plot(steps, band["median"], color="C4", label="median over runs")
    ax.fill_between(steps, band["q05"], band["q95"], color="C4", alpha=0.25, label="5–95% of runs")
    ax.set_yscale("log")
    ax.set_ylim(max(DISTANCE_FLOOR, float(np.min(band["q05"]))) / 10, 2)
    ax.set_ylabel("distance to M  √(θ²+η²+ρ²)")
    ax.legend(fontsize=7, loc="lower left")
    for a in (axes[0], axes[1], axes[3]):
        a.set_xlabel("step t")
        a.grid(True, which="both", alpha=0.3)
    axes[2].grid(True, alpha=0.3)


def _panel_data(run: dict) -> dict:
    keys = ("config", "start", "lam0", "scheduled", "step_size", "total_steps", "d", "L", "runs", "steps", "lambda",
            "excess_risk", "abs_kappa", "abs_nu", "distance", "oracle_excess", "trajectories", "final",
            "final_lambda", "oracle_risk_final_lambda")
    return {key: run[key] for key in keys}


def _pgd_figure(out_dir: Path, runs: list[dict], settings: RunSettings) -> Figure:
    plt = pyplot()
    fig, axes = plt.subplots(len(runs), 4, figsize=(19, 3.9 * len(runs)), squeeze=False)
    for row, run in zip(axes, runs):
        _draw_dynamics_row(row, run, risk_label="excess risk ℛ − ε²")
        row[0].set_title(_describe(run), loc="left", fontsize=10)
    fig.tight_layout()
    reached = ", ".join(f"{r['config']}/{r['start']} {int(np.sum(r['final']['reached']))}/{r['runs']}" for r in runs)
    names = list(dict.fromkeys(r["config"] for r in runs))
    configurations = "; ".join(
        f"{name}: λ0 = {PGD_CONFIGS[name][0]:g}{' (scheduled)' if PGD_CONFIGS[name][1] else ''}, "
        f"α = {PGD_CONFIGS[name][2]:g}, {PGD_CONFIGS[name][3]:,} steps" for name in names)
    caption = (
        f"Population projected gradient descent (d = {PGD_DIMENSION}, L = {PGD_LENGTH}, γ² = 1/2), the authors' "
        f"configuration{'s' if len(names) > 1 else ''} ({configurations}), run in the exact "
        "4-dimensional reduction: starts drawn in d = 400 (initialize_on_manifold: θ = η = ρ = 0; initialize_on_sphere: "
        "uniform) and mapped by reduce_to_four_dimensions. One row per configuration and start; panels as in the "
        "authors' plot.py: excess risk ℛ − ε² (mean and 5–95% band over runs; dashed: oracle at the same λ_t), "
        "|κ| and |ν| (mean and 5–95% band), the (κ, ν) paths of three runs coloured by step (where the runs allow: one "
        "that missed ±(k*, v*), one that reached +(k*, v*) and one −(k*, v*)), and the distance to M (median and 5–95% band, floored at "
        f"{DISTANCE_FLOOR:g} for the log axis; starts on M stay at round-off). Runs reaching ±(k*, v*) "
        f"(|κ|, |ν| ≥ {ALIGNED}, κν > 0, distance ≤ {ON_MANIFOLD}): {reached}."
        + (" Quick profile: only the 'small_lambda' configuration (2·10⁴ steps), 10 runs per start; the "
           "thorough profile adds 'schedule' and 'large_lambda' (1.2·10⁵ steps) with 30 runs, and the SGD figure."
           if settings.profile == "quick" else "")
    )
    return save_figure(fig, out_dir, "single_location_pgd.png", caption,
                       {"d": PGD_DIMENSION, "L": PGD_LENGTH, "gamma": GAMMA, "eps": EPS,
                        "distance_floor": DISTANCE_FLOOR, "panels": [_panel_data(r) for r in runs]})


def _endpoint_tables(runs: list[dict]) -> list[Table]:
    summary, others = [], []
    for run in runs:
        final = run["final"]
        reached = np.asarray(final["reached"], dtype=bool)
        summary.append([
            run["config"], run["start"], run["runs"], int(reached.sum()), float(reached.mean()),
            run["final_lambda"], run["oracle_risk_final_lambda"],
            float(np.mean(final["risk"][reached])) if reached.any() else None,
        ])
        for i in np.flatnonzero(~reached):
            others.append([run["config"], run["start"], int(i),
                           *(round(float(final[key][i]), 4) for key in ("kappa", "nu", "theta", "eta", "rho")),
                           round(float(final["risk"][i]), 5)])
    tables = [Table(
        "End points of projected descent: runs that reached ±(k*, v*) (|κ|, |ν| ≥ 0.95, κν > 0, distance to "
        "M ≤ 0.05); risks include ε², population risk at the final λ (SGD rows: population risk of the final (k, v))",
        ["config", "start", "runs", "reached", "fraction", "final λ", "oracle risk at final λ",
         "mean final risk of reached runs"],
        summary,
    )]
    tables.append(Table(
        "End points that did not reach ±(k*, v*): overlaps (κ, ν, θ, η, ρ) = (⟨k,k*⟩, ⟨v,v*⟩, ⟨v,k*⟩, ⟨k,v*⟩, "
        "⟨k,v⟩) and population risk (ε² included) at the final λ" + ("" if others else " — none: every run reached it"),
        ["config", "start", "run", "κ", "ν", "θ", "η", "ρ", "risk"],
        others,
    ))
    return tables


# ---------------------------------------------------------------------------------------------
# Figure 4: SGD (thorough only)
# ---------------------------------------------------------------------------------------------


def _sgd_figure(out_dir: Path, settings: RunSettings, progress: Callable[[str], None]) -> tuple[Figure, dict]:
    c = SGD_CONFIG
    progress(f"single_location: SGD ({c['steps']:,} steps, {c['runs']} runs)")
    run = settings.store.result(sgd_run_of(settings))
    # the first panel shows the test excess risk of the authors' SGD plot, not the population one
    shown = dict(run, excess_risk=run["test_excess_risk"])
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(19, 4.2), squeeze=False)
    _draw_dynamics_row(axes[0], shown, risk_label=f"test MSE − ε² ({c['test_size']} samples)")
    axes[0][0].set_title(f"SGD: d = {c['d']}, L = {c['L']}, B = {c['batch_size']}, λ_t = {c['lam0']:g}/(1+10⁻⁴t), "
                         f"α = {c['step_size']:g}, {c['runs']} runs", loc="left", fontsize=10)
    fig.tight_layout()
    final = run["final"]
    caption = (
        f"Projected SGD on fresh batches (the authors' sgd_init_sphere_schedule: d = {c['d']}, L = {c['L']}, ε = {EPS}, "
        f"B = {c['batch_size']}, λ_t = {c['lam0']:g}/(1 + 10⁻⁴t), α = {c['step_size']:g}, {c['steps']:,} steps; "
        f"{c['runs']} runs instead of 30), sphere starts. Panels: test MSE − ε² on one fixed batch of {c['test_size']} "
        "samples (mean and 5–95% band; dashed: population oracle excess at λ_t), |κ| and |ν|, three (κ, ν) paths, "
        f"distance to M. {int(np.sum(final['reached']))}/{c['runs']} runs reached ±(k*, v*)."
    )
    data = _panel_data(run)
    data["test_excess_risk"] = run["test_excess_risk"]
    return save_figure(fig, out_dir, "single_location_sgd.png", caption, data), run


# ---------------------------------------------------------------------------------------------
# the section
# ---------------------------------------------------------------------------------------------




@theory.section
def build_section(out_dir: Path, settings: RunSettings, progress: Callable[[str], None]) -> Section:
    """Four figures (three in the quick profile: no SGD) and tables of the risks against L and of the descent end
    points, written as ``single_location_*.png`` into ``out_dir``; every simulation runs on the settings' backend and
    every random draw comes from their seed through SeedSequence(seed).spawn."""
    profile = settings.profile
    risk_figure, risk_table = _risk_vs_length(out_dir, settings, progress)
    excess_figure = _oracle_excess(out_dir, progress=progress, store=settings.store)
    progress(f"single_location: population PGD, configurations {', '.join(settings.choose(**PGD_SECTION_CONFIGS))}")
    runs = settings.store.result(pgd_runs_of(settings))
    progress("single_location: drawing the PGD figure")
    figures = [risk_figure, excess_figure, _pgd_figure(out_dir, list(runs), settings)]
    endpoint_runs = list(runs)
    if profile == "thorough":
        sgd_figure, sgd = _sgd_figure(out_dir, settings, progress)
        figures.append(sgd_figure)
        endpoint_runs.append(sgd)
    quick = ("\nThis is the quick profile: the SGD figure (2·10⁵ steps on sampled batches) and the PGD "
             "configurations with 1.2·10⁵ steps are only in the thorough profile.\n")
    return Section(introduction=theory.introduction + quick if profile == "quick" else "",
                   figures=figures, tables=[risk_table, *_endpoint_tables(endpoint_runs)])
