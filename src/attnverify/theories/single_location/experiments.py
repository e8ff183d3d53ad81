"""Experiments of single-location regression (Marion, Berthier, Biau, Boyer, ICLR 2025) that the report
draws: risks against the sequence length (closed forms and Monte Carlo), population projected gradient
descent from the authors' configurations, and SGD on sampled batches (spec ``docs/papers/single_location.md``
§2, §3, §4.2). Pure functions of plain parameters, asked for through the run's store; every seed comes from
``SeedSequence(seed)`` (children 0, 1, 2: risks, PGD, SGD), as the report's always did.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
from scipy.optimize import minimize_scalar

from . import derivations as derived
from .theory import theory
from .. import single_location as sim
from ...base.arguments import integer, one_of
from ...base.backend import Backend, get_backend
from ...execution import tasks
from ...execution.tasks import integer_seed
from ...execution.store import Planned, planned
from ...execution.settings import RunSettings

GAMMA = math.sqrt(0.5)  # the paper's γ² = 1/2 in every experiment (spec §1)

PGD_CONFIGS = {
    "small_lambda": (0.1, False, 4e-3, 20_000),
    "schedule": (1.0, True, 4e-3, 120_000),
    "large_lambda": (0.9, False, 1e-3, 120_000),
}
"""The authors' projected-gradient configurations: (λ0, scheduled, step size, steps) (spec §4.2)."""
PGD_DIMENSION, PGD_LENGTH = 400, 10

EPS = 0.1
"""Label noise ε of the authors' experiments (spec §1)."""

RISK_DIMENSION = 400
"""Token dimension d of the risk-against-L figure (the authors' population-PGD dimension)."""

LENGTHS = (1, 2, 4, 7, 11, 17, 26, 40)
"""Sequence lengths L of the risk-against-L figure (roughly geometric from 1 to 40)."""

MONTE_CARLO_SAMPLES = {"quick": 100_000, "thorough": 1_000_000}
"""Monte Carlo sequences per point of the risk-against-L figure."""

LAMBDA_BOUNDS = (1e-3, 10.0)
"""Search interval of the λ minimising the closed-form oracle risk."""

EXCESS_DIMENSIONS = (100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000)
"""Token dimensions d of the oracle-excess figure."""

EXCESS_SCALE = 2.0
"""c in λ = c·√(log(d/L)/d): λ√d → ∞ and, for L = o(d/log d), λ√L → 0 (Corollary 2)."""

PGD_RUNS = {"quick": 10, "thorough": 30}
"""Random starts per (configuration, initialisation) of population PGD."""

PGD_SECTION_CONFIGS = {"quick": ("small_lambda",), "thorough": tuple(PGD_CONFIGS)}
"""The authors' PGD configurations run in each profile (quick: the 2·10⁴-step one only)."""

STARTS = ("manifold", "sphere")
"""Initialisations of PGD: on M (θ = η = ρ = 0), and uniform on the sphere (spec §3.2)."""

DISTANCE_FLOOR = 1e-17
"""The distance to M is plotted as max(distance, this) on its log axis (exact zeros on M)."""

SGD_CONFIG = {
    "d": 80, "L": 10, "lam0": 2.0, "scheduled": True, "step_size": 1e-3, "batch_size": 5,
    "steps": 200_000, "runs": 10, "test_size": 1000, "record_every": 500,
}
"""The authors' ``sgd_init_sphere_schedule`` (spec §4.2), with 10 runs instead of 30."""

# reached ±(k*, v*): aligned with the oracle pair, with the same sign, and back on M
ALIGNED, ON_MANIFOLD = 0.95, 0.05


def optimal_lambda(d: int, L: int, gamma: float = GAMMA, eps: float = EPS) -> float:
    """argmin_λ ℛ(T_λ^{k*,v*}) of the closed-form oracle risk (Theorem 1, spec §2.2) on
    λ ∈ `LAMBDA_BOUNDS`: a grid of 61 values of log λ locates the minimum, then
    ``minimize_scalar`` (bounded, on log λ) refines it between the neighbouring grid points.

    Ties within float64 round-off (10⁻¹² of the risk) go to the smallest λ: for L = 1 there is no
    uninformative token, the risk decreases in λ and reaches ε² to round-off once erfc(λ√(d/2))² is
    negligible, so any larger λ is as good.
    """
    def risk(log_lam):
        return np.asarray(derived.oracle_risk(np.exp(log_lam), d, L, gamma, eps), dtype=float)

    grid = np.linspace(math.log(LAMBDA_BOUNDS[0]), math.log(LAMBDA_BOUNDS[1]), 61)
    values = risk(grid)
    tolerance = 1e-12 * float(np.min(values))
    best = int(np.flatnonzero(values <= np.min(values) + tolerance)[0])
    low, high = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    result = minimize_scalar(lambda x: float(risk(x)), bounds=(low, high), method="bounded",
                             options={"xatol": 1e-6})
    chosen = result.x if result.fun < values[best] - tolerance else grid[best]
    return float(math.exp(chosen))


def risks_against_length(*, samples: int, seed: int, backend: str = "numpy") -> dict:
    """Risks against L at d = ``RISK_DIMENSION`` (Theorem 1, Proposition 3): per L of ``LENGTHS`` the optimal
    λ, the oracle's closed form and Monte Carlo, the Bayes risk by Monte Carlo, the best linear predictor's
    closed form and Monte Carlo (``samples`` sequences each, with standard errors); and the closed-form
    curves on 40 lengths between. Seeds: the first child of ``SeedSequence(seed)``."""
    be = get_backend(backend)
    d, n = RISK_DIMENSION, integer("samples", samples, 2)
    task_seed, *point_seeds = np.random.SeedSequence(seed).spawn(3)[0].spawn(1 + len(LENGTHS))
    task0 = sim.make_task(d, 1, gamma=GAMMA, eps=EPS, seed=integer_seed(task_seed), backend=be)
    rows: dict[str, list] = {key: [] for key in (
        "L", "lambda", "oracle_closed_form", "oracle_mc", "oracle_se", "bayes_mc", "bayes_se",
        "linear_closed_form", "linear_mc", "linear_se")}
    for L, point in zip(LENGTHS, point_seeds):
        tasks.progress(f"single_location: risks at L = {L}, d = {d} ({n:,} Monte Carlo sequences each)")
        task = sim.RegressionTask(d, L, GAMMA, EPS, task0.k_star, task0.v_star)
        lam = optimal_lambda(d, L)
        s_oracle, s_bayes, s_linear = (integer_seed(s) for s in point.spawn(3))
        oracle = sim.risk_monte_carlo(task, task.k_star, task.v_star, lam, n, s_oracle, backend=be)
        bayes = sim.bayes_risk_monte_carlo(task, n, s_bayes, backend=be, conditional=True)
        beta = sim.linear_oracle_coefficients(task, backend=be)
        linear = sim.linear_risk_monte_carlo(task, beta, n, s_linear, backend=be)
        for key, value in (("L", L), ("lambda", lam),
                           ("oracle_closed_form", float(derived.oracle_risk(lam, d, L, GAMMA, EPS))),
                           ("oracle_mc", oracle.mean), ("oracle_se", oracle.standard_error),
                           ("bayes_mc", bayes.mean), ("bayes_se", bayes.standard_error),
                           ("linear_closed_form", float(derived.linear_risk(L, GAMMA, EPS))),
                           ("linear_mc", linear.mean), ("linear_se", linear.standard_error)):
            rows[key].append(value)
    data = {key: np.asarray(value) for key, value in rows.items()}
    curve_L = np.unique(np.round(np.geomspace(1, LENGTHS[-1], 40)).astype(int))
    curve_lam = np.array([optimal_lambda(d, int(L)) for L in curve_L])
    curve_oracle = np.array([float(derived.oracle_risk(lm, d, int(L), GAMMA, EPS)) for lm, L in zip(curve_lam, curve_L)])
    curve_linear = np.asarray(derived.linear_risk(curve_L.astype(float), GAMMA, EPS), dtype=float) * np.ones(curve_L.size)
    return {"points": data, "curve_L": curve_L, "curve_lambda": curve_lam, "curve_oracle": curve_oracle,
            "curve_linear": curve_linear}


def _length_rules() -> list[tuple[str, Callable[[int], int]]]:
    return [("L = 1", lambda d: 1), ("L = 10", lambda d: 10), ("L = ⌈√d⌉", lambda d: math.ceil(math.sqrt(d)))]


def oracle_excess_against_dimension() -> dict:
    """The oracle's excess risk ℛ − ε² against d at λ = c·√(log(d/L)/d) for L = 1, 10, ⌈√d⌉ (Corollary 2), in
    extended precision, with the best linear predictor's excess (Proposition 3) and, for L > 1, the oracle at the
    λ minimising its risk (float64 is enough there: the excess is ≳ 10⁻³); the L = 1 log–log slope; where the
    oracle first beats the linear predictor; whether it does at every d at the optimal λ."""
    d = np.asarray(EXCESS_DIMENSIONS, dtype=float)
    curves, crossings, optimal_ahead, single_slope = [], [], True, math.nan
    for label, rule in _length_rules():
        L = np.array([rule(int(x)) for x in d], dtype=float)
        lam = EXCESS_SCALE * np.sqrt(np.log(d / L) / d)
        excess = np.array([derived.oracle_excess_risk_high_precision(lm, dd, ll, GAMMA) for lm, dd, ll in zip(lam, d, L)])
        linear = GAMMA**2 * (L - 1) / (GAMMA**2 + L - 1)
        curve = {"rule": label, "L": L, "lambda": lam, "oracle_excess": excess, "linear_excess": linear,
                 "lambda_sqrt_d": lam * np.sqrt(d), "lambda_sqrt_L": lam * np.sqrt(L)}
        if np.all(L == 1):
            single_slope = float(np.polyfit(np.log(d), np.log(excess), 1)[0])
            curve["loglog_slope"] = single_slope
        else:
            lam_opt = np.array([optimal_lambda(int(dd), int(ll), GAMMA, 0.0) for dd, ll in zip(d, L)])
            optimal = np.array([float(derived.oracle_risk(lm, dd, ll, GAMMA, 0.0)) for lm, dd, ll in zip(lam_opt, d, L)])
            curve.update(lambda_optimal=lam_opt, oracle_excess_optimal_lambda=optimal)
            beaten = np.flatnonzero(excess < linear)
            crossings.append(f"{label}: from d = {int(d[beaten[0]]):,}" if beaten.size else f"{label}: never on this grid")
            optimal_ahead &= bool(np.all(optimal < linear))
        curves.append(curve)
    return {"d": d, "curves": curves, "crossings": crossings, "optimal_ahead": optimal_ahead,
            "single_slope": single_slope}


def _record_every(steps: int) -> int:
    # the authors log every 200 steps for 2·10⁴ steps and every 300 for 1.2·10⁵ (spec §4.2)
    return 200 if steps <= 20_000 else 300


def _reached(kappa, nu, distance) -> np.ndarray:
    return (np.abs(kappa) >= ALIGNED) & (np.abs(nu) >= ALIGNED) & (kappa * nu > 0) & (distance <= ON_MANIFOLD)


def _band(values: np.ndarray, centre: str = "mean") -> dict[str, np.ndarray]:
    """Per-record centre (mean or median over runs) and 5–95% percentile band; values (records, runs)."""
    middle = values.mean(axis=1) if centre == "mean" else np.median(values, axis=1)
    return {centre: middle, "q05": np.percentile(values, 5, axis=1), "q95": np.percentile(values, 95, axis=1)}


def _shown_runs(reached: np.ndarray, final_kappa: np.ndarray, count: int = 3) -> list[int]:
    """Runs whose (κ, ν) path is drawn, as varied as the runs allow: the first that missed ±(k*, v*),
    the first that reached (k*, v*), the first that reached −(k*, v*), then the first ones."""
    groups = (~reached, reached & (final_kappa > 0), reached & (final_kappa < 0), np.ones_like(reached))
    chosen: list[int] = []
    for group in groups:
        for i in np.flatnonzero(group):
            if int(i) not in chosen:
                chosen.append(int(i))
                break
    for i in range(reached.size):
        if i not in chosen:
            chosen.append(i)
    return sorted(chosen[:count])


def _summarise_path(path, *, runs_slice: slice, k_star, v_star, d: int, L: int, be: Backend) -> dict:
    """Everything the PGD/SGD panels plot, for the runs ``runs_slice`` of a trajectory."""
    kappa, nu, theta, eta, rho = overlap_values = [
        np.asarray(be.to_numpy(x), dtype=float)[:, runs_slice]
        for x in sim.overlaps(path.k, path.v, k_star, v_star, backend=be)]
    lam = np.asarray(path.lam, dtype=float)
    # host arrays in (the argument checks are numpy's), evaluated on the backend; overlaps of unit
    # vectors are clipped to [−1, 1] against round-off
    risk = np.asarray(be.to_numpy(derived.population_risk_from_overlaps(
        *(np.clip(x, -1.0, 1.0) for x in overlap_values), lam=lam[:, None], gamma=GAMMA, d=d, L=L, eps=EPS,
        backend=be)), dtype=float)
    distance = np.sqrt(theta**2 + eta**2 + rho**2)
    oracle = np.asarray(derived.oracle_risk(lam, d, L, GAMMA, EPS), dtype=float) * np.ones(lam.size)
    reached = _reached(kappa[-1], nu[-1], distance[-1])
    shown = _shown_runs(reached, kappa[-1])
    return {
        "steps": np.asarray(path.steps), "lambda": lam, "runs": int(kappa.shape[1]),
        "excess_risk": _band(risk - EPS**2), "abs_kappa": _band(np.abs(kappa)), "abs_nu": _band(np.abs(nu)),
        "distance": _band(np.maximum(distance, DISTANCE_FLOOR), "median"),
        "oracle_excess": oracle - EPS**2,
        "trajectories": [{"run": i, "kappa": kappa[:, i], "nu": nu[:, i]} for i in shown],
        "final": {"kappa": kappa[-1], "nu": nu[-1], "theta": theta[-1], "eta": eta[-1], "rho": rho[-1],
                  "distance": distance[-1], "risk": risk[-1], "reached": reached},
        "final_lambda": float(lam[-1]), "oracle_risk_final_lambda": float(oracle[-1]),
    }


def pgd_runs(*, configs: tuple[str, ...], runs: int, seed: int, backend: str = "numpy") -> tuple[dict, ...]:
    """Population projected gradient descent from the authors' configurations ``configs`` (names of
    ``PGD_CONFIGS``), ``runs`` starts on M and on the sphere each, in the exact 4-dimensional reduction (spec
    §3.2, §4.2): one summary per (configuration, start) with everything figure 3 plots. Seeds: the second child
    of ``SeedSequence(seed)`` (the report's), then one per configuration of ``PGD_CONFIGS``, whichever run."""
    be = get_backend(backend)
    progress = tasks.progress
    seeds = np.random.SeedSequence(seed).spawn(3)[1]
    runs = integer("runs", runs, 1)
    for name in configs:
        one_of("configs", name, tuple(PGD_CONFIGS))
    d, L = PGD_DIMENSION, PGD_LENGTH
    task_seed, *config_seeds = seeds.spawn(1 + len(PGD_CONFIGS))
    task = sim.make_task(d, L, gamma=GAMMA, eps=EPS, seed=integer_seed(task_seed), backend=be)
    results = []
    for name, config_seed in zip(PGD_CONFIGS, config_seeds):  # seeds fixed per config, whatever the profile
        if name not in configs:
            continue
        lam0, scheduled, step_size, steps = PGD_CONFIGS[name]
        s_manifold, s_sphere = (integer_seed(s) for s in config_seed.spawn(2))
        k_m, v_m = sim.initialize_on_manifold(runs, task.k_star, task.v_star, s_manifold, backend=be)
        k_s, v_s = sim.initialize_on_sphere(runs, d, s_sphere, backend=be)
        (k4, v4), (e1, e2) = sim.reduce_to_four_dimensions(
            be.xp.concatenate([k_m, k_s]), be.xp.concatenate([v_m, v_s]), task.k_star, task.v_star, backend=be)
        progress(f"single_location: population PGD '{name}' (λ0 = {lam0:g}{', scheduled' if scheduled else ''}, "
                 f"α = {step_size:g}, {steps:,} steps, {runs} manifold + {runs} sphere starts)")
        quarter = max(steps // 4, 1)

        def report(t: int, total: int, name: str = name) -> None:
            if t and t % quarter == 0 and t < total:
                progress(f"single_location: PGD '{name}' step {t:,}/{total:,}")

        path = sim.population_projected_gradient_descent(
            k4, v4, lam0=lam0, scheduled=scheduled, step_size=step_size, steps=steps, d=d, L=L, gamma=GAMMA,
            eps=EPS, record_every=_record_every(steps), backend=be, progress=report)
        for index, start in enumerate(STARTS):
            summary = _summarise_path(path, runs_slice=slice(index * runs, (index + 1) * runs), k_star=e1, v_star=e2,
                                      d=d, L=L, be=be)
            summary.update(config=name, start=start, lam0=lam0, scheduled=scheduled, step_size=step_size,
                           total_steps=steps, d=d, L=L)
            results.append(summary)
    return tuple(results)


def sgd_run(*, seed: int, backend: str = "numpy") -> dict:
    """Projected SGD on fresh batches, the authors' ``sgd_init_sphere_schedule`` (``SGD_CONFIG``), from sphere
    starts: the summary figure 4 plots, with the test excess risk. Seeds: the third child of ``SeedSequence(seed)``."""
    be = get_backend(backend)
    c = SGD_CONFIG
    s_task, s_start, s_batches = (integer_seed(s) for s in np.random.SeedSequence(seed).spawn(3)[2].spawn(3))
    task = sim.make_task(c["d"], c["L"], gamma=GAMMA, eps=EPS, seed=s_task, backend=be)
    k0, v0 = sim.initialize_on_sphere(c["runs"], c["d"], s_start, backend=be)
    tasks.progress(f"single_location: SGD (d = {c['d']}, L = {c['L']}, B = {c['batch_size']}, λ0 = {c['lam0']:g} "
                       f"scheduled, α = {c['step_size']:g}, {c['steps']:,} steps, {c['runs']} runs)")
    quarter = c["steps"] // 4

    def report(t: int, total: int) -> None:
        if t and t % quarter == 0 and t < total:
            tasks.progress(f"single_location: SGD step {t:,}/{total:,}")

    path = sim.stochastic_gradient_descent(
        task, k0, v0, lam_schedule=sim.lambda_schedule(c["lam0"], c["scheduled"]), step_size=c["step_size"],
        batch_size=c["batch_size"], steps=c["steps"], rng=s_batches, test_size=c["test_size"],
        record_every=c["record_every"], backend=be, progress=report)
    run = _summarise_path(path, runs_slice=slice(None), k_star=task.k_star, v_star=task.v_star, d=c["d"], L=c["L"], be=be)
    test = np.asarray(be.to_numpy(path.test_risk), dtype=float)
    run.update(config="sgd", start="sphere", lam0=c["lam0"], scheduled=c["scheduled"], step_size=c["step_size"],
               total_steps=c["steps"], d=c["d"], L=c["L"], test_excess_risk=_band(test - EPS**2))
    return run


def risks_against_length_of(settings: RunSettings) -> Planned:
    """`risks_against_length` with the profile's ``MONTE_CARLO_SAMPLES``, at the run's seed, on its backend."""
    return planned(risks_against_length, samples=settings.choose(**MONTE_CARLO_SAMPLES), seed=settings.seed,
                   backend=settings.backend)


def pgd_runs_of(settings: RunSettings) -> Planned:
    """`pgd_runs` of the profile's ``PGD_SECTION_CONFIGS`` and ``PGD_RUNS``, at the run's seed, on its backend."""
    return planned(pgd_runs, configs=settings.choose(**PGD_SECTION_CONFIGS), runs=settings.choose(**PGD_RUNS),
                   seed=settings.seed, backend=settings.backend)


def sgd_run_of(settings: RunSettings) -> Planned:
    """`sgd_run` at the run's seed, on its backend."""
    return planned(sgd_run, seed=settings.seed, backend=settings.backend)


@theory.experiments
def plan_experiments(settings: RunSettings) -> list[Planned]:
    """The single-location section's experiments, longest first (computed as tasks ahead of the section)."""
    plan = [pgd_runs_of(settings), risks_against_length_of(settings), planned(oracle_excess_against_dimension)]
    if settings.profile == "thorough":  # the SGD figure (2·10⁵ steps) is in the thorough section only
        plan.insert(0, sgd_run_of(settings))
    return plan
