"""Claims of the attention-path theory (Tiberi, Mignacco, Irie, Sompolinsky, NeurIPS 2024).

Each claim states what the theory (docs/papers/attention_paths.md) asserts, in the form of a user's file: it
names its parameters and draws them with ``st`` (both ends of every range included), computes the theory side
from the saddle-point solver or the generated evaluators, and compares it with an independent computation or
with a finite-sample measurement.
"""

from __future__ import annotations

import numpy as np

from . import derivations as derived
from .theory import theory
from . import predictor_statistics, scalar_renormalization
from .action import ActionConfig, solve_paths
from ...saddle import SaddlePointError, data_energy
from ...saddle.action import NumericAction
from .experiments import DENOISING, GOOD, TEMPERATURE, markov_data_of, sampled_markov_networks_of
from . import theory_points as experiments
from .markov_chain import MarkovChainTask, markov_dataset
from .synthetic import synthetic_problem
from ...numerics.statistics import fit_line
from ...checks import st
from ...checks.claim import Context
from ...checks.comparisons import close
from ...checks.evidence import Evidence

SOURCE = derived.SOURCE

#: Head configurations small enough for quick checks, from one head to three layers.
HEADS = st.sampled_from([(1,), (3,), (2, 2), (1, 3), (3, 1), (2, 1, 2)])
MARKOV_TEMPERATURE = TEMPERATURE  # the paper's T for the Markov task (spec §4.1)


# ---------------------------------------------------------------------------------------------
# 1. GP limit: U(N) → U_GP and the predictor → the GP predictor as N → ∞ at fixed P
# ---------------------------------------------------------------------------------------------


@theory.claim(source=f"{SOURCE}, §3 (GP limit)", examples={"quick": 4, "thorough": 25},
              heads=HEADS, P=st.integers(6, 40), input_width=st.integers(2, 6), tokens=st.integers(2, 5),
              temperature=st.floats(0.01, 1.0), seed=st.integers(0, 2**16))
def gp_limit(ctx: Context, heads, P, input_width, tokens, temperature, seed) -> Evidence:
    """As N → ∞ at fixed P, U(N) → U_GP = I and the mean predictor → the GP predictor, both at the
    rate N^{-1} (the energy is O(P) against an O(N) entropy). The fitted log-log slope over
    N = 100·P·4^j (j = 0..4) must be within 5 fit SE + 0.02 of −1 (0.02: the O(P/N) ≤ 1e-2
    next-order curvature budget)."""
    X, y = synthetic_problem(P, heads=heads, input_width=input_width, tokens=tokens, seed=seed)
    widths = [100.0 * P * 4**j for j in range(5)]
    be = ctx.backend
    gp = predictor_statistics(np.eye(X.shape[2]), X, y, X, temperature, backend=be).mean
    distances, predictor_gaps = [], []
    for N in widths:
        s = solve_paths(dict(X=X, y=y), heads=heads, width=N, temperature=temperature, tolerance=1e-13,
                        backend=be).matrix("U1")
        distances.append(np.linalg.norm(s - np.eye(X.shape[2])))
        predictor_gaps.append(np.max(np.abs(predictor_statistics(s, X, y, X, temperature, backend=be).mean - gp)))
    fit_u = fit_line(np.log(widths), np.log(distances))
    fit_f = fit_line(np.log(widths), np.log(predictor_gaps))
    budget = 0.02
    slack = [abs(f.slope + 1) - (5 * f.slope_standard_error + budget) for f in (fit_u, fit_f)]
    return Evidence(
        holds=max(slack) <= 0, theory=-1.0, observed=fit_u.slope, relation="custom",
        conditions={"slope of |U − U_GP| within 5 SE + budget of −1": slack[0] <= 0,
                    "slope of |f − f_GP| within 5 SE + budget of −1": slack[1] <= 0},
        tolerance=5 * fit_u.slope_standard_error + budget, standard_error=fit_u.slope_standard_error,
        note=f"slopes: |U − U_GP| {fit_u.slope:.4f} ± {fit_u.slope_standard_error:.1e}, "
             f"|f − f_GP| {fit_f.slope:.4f} ± {fit_f.slope_standard_error:.1e}",
        figures={"widths": widths, "distance_to_gp": distances, "predictor_gap": predictor_gaps,
                 "slope_order_parameter": fit_u.as_dict(), "slope_predictor": fit_f.as_dict()},
    )


# ---------------------------------------------------------------------------------------------
# 2. H = 1: the matrix theory reduces to the scalar back-propagating kernel renormalization
# ---------------------------------------------------------------------------------------------


@theory.claim(source=f"{SOURCE}, §2.2; Li & Sompolinsky, PRX 11, 031059 (2021)", examples={"quick": 8, "thorough": 50},
              depth=st.integers(1, 3), P=st.integers(4, 50), input_width=st.integers(2, 8), tokens=st.integers(2, 6),
              width=st.integers(2, 1000), temperature=st.floats(1e-3, 1.0),
              variances=st.lists(st.floats(0.3, 3.0), min_size=4, max_size=4), seed=st.integers(0, 2**16))
def single_head_reduction(ctx: Context, depth, P, input_width, tokens, width, temperature, variances, seed) -> Evidence:
    """With one head per layer the matrix saddle point equals the scalar kernel renormalization of a
    deep linear network, solved independently in the eigenbasis of K_0 by root bracketing:
    U_1 = σ_a²Πσ_ℓ²·Π_m (1 − U_1E'(U_1)/n_m). The matrix side is solved to 1e-10, or, where the
    gradient's float64 round-off is above that (small T and widths), to that floor, the trust
    region's own stop, if it is at most 1e-8. Tolerance: 10× the sum of both sides' error
    estimates (one more Newton step; the root's round-off, residual noise over its slope) + the
    backward-error budget of two float64 routes through K_0, each exact for a kernel off by
    ε‖K_0‖₂: 2ε times U_1's first-order sensitivity to such a change
    (`ScalarRenormalization.data_sensitivity`)."""
    L = depth
    X, y = synthetic_problem(P, heads=(1,) * L, input_width=input_width, tokens=tokens, seed=seed)
    variances = tuple(variances[: L + 1])
    C = np.einsum("pia,qib->abpq", X, X)
    matrix = solve_paths(dict(C=C, y=y), heads=(1,) * L, width=width, temperature=temperature,
                         prior_var=variances, tolerance=1e-10, backend=ctx.backend, raise_on_failure=False)
    floor_reached = matrix.at_round_off_floor and matrix.residual <= 1e-8
    if not (matrix.is_minimum and (matrix.converged or floor_reached)):
        raise SaddlePointError(f"the matrix saddle point was not reached: {matrix.message}")
    scalar = scalar_renormalization(C[0, 0], y, depth=L, width=width, temperature=temperature, prior_var=variances)
    top = matrix["U1"] * np.linalg.eigvalsh(C[0, 0])[-1]
    condition = (top + temperature) / temperature  # shown among the figures
    # both sides' own error estimates (the matrix solve's: one more Newton step and its gradient's round-off; the
    # scalar root's: its round-off) and the backward-error budget of two routes through K_0: 2ε·∂U_1/∂K_0 in its
    # worst direction (Frobenius)
    rtol = (10 * (matrix.error_estimate + scalar.error_estimate)
            + 2 * np.finfo(float).eps * scalar.data_sensitivity) / scalar.order_parameter
    same_readout = abs(matrix["Ua"] - scalar.readout_order_parameter) <= rtol * scalar.readout_order_parameter
    # the engine's action is ½E + 𝓛/2 of the scalar's convention E + 𝓛: twice it is comparable
    return close(float(matrix["U1"]), scalar.order_parameter, rtol=rtol,
                 figures={"U_a_matrix": matrix["Ua"], "residual_matrix": matrix.residual,
                          "U_a_scalar": scalar.readout_order_parameter,
                          "action_matrix": 2 * matrix.action, "action_scalar": scalar.action,
                          "condition": condition},
                 conditions={"same readout order parameter U_a": same_readout})


# ---------------------------------------------------------------------------------------------
# 3. the generated action equals the direct numeric evaluation; gradients equal finite differences
# ---------------------------------------------------------------------------------------------


@theory.claim(source=f"{SOURCE}, §2.1 (action)", examples={"quick": 6, "thorough": 40},
              heads=st.sampled_from([(1,), (2,), (3,), (1, 1), (2, 1), (1, 2), (2, 2)]), P=st.integers(1, 2),
              width=st.lists(st.floats(1.0, 100.0), min_size=3, max_size=3),
              variances=st.lists(st.floats(0.3, 3.0), min_size=3, max_size=3), temperature=st.floats(1e-2, 2.0),
              seed=st.integers(0, 2**16))
def generated_action(ctx: Context, heads, P, width, variances, temperature, seed) -> Evidence:
    """At random positive-definite order parameters, the action S generated from the sympy
    derivation equals the numerics' direct evaluation (Cholesky slogdet and solves) to 1e-10
    relative, and the numerics' analytic gradient in the Cholesky parameters equals five-point
    finite differences to 1e-6 relative (truncation ~(h/scale)⁴ at h = 1e-3)."""
    L = len(heads)
    config = ActionConfig.build(heads, tuple(width[: L + 1]), temperature, tuple(variances[: L + 1]))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(P, 3, config.paths)) / np.sqrt(3 * config.paths)
    y = np.sign(rng.normal(size=P))
    declaration = config.action
    action = NumericAction(declaration, data_energy(dict(X=X, y=y), config.temperature, backend=ctx.backend),
                           declaration.parameter_values(config.parameters()))
    theta = rng.normal(scale=0.4, size=action.parametrisation.size)
    E, entropy, u = action.parts(theta)[:3]
    direct = E + 2 * entropy  # the derivation's S = E + 𝓛 is twice the engine's ½E + 𝓛
    order = declaration.split(u)
    C = np.einsum("pia,qib->abpq", X, X)
    generated = derived.evaluate_action(heads, [np.atleast_2d(order[f"U{level}"]) for level in range(1, L + 1)],
                                        order["Ua"], C, y, widths=config.widths, variances=config.variances,
                                        temperature=config.temperature)
    value, grad = action(theta)
    h = 1e-3
    numeric = np.array([(8 * (action(theta + h * e)[0] - action(theta - h * e)[0])
                         - (action(theta + 2 * h * e)[0] - action(theta - 2 * h * e)[0])) / (12 * h)
                        for e in np.eye(theta.size)])
    gradient_error = float(np.max(np.abs(numeric - grad)) / max(np.max(np.abs(grad)), 1e-300))
    return close(float(generated), float(direct), rtol=1e-10,
                 figures={"gradient_relative_error": gradient_error, "parameters": int(theta.size)},
                 conditions={"gradient = finite differences to 1e-6": gradient_error <= 1e-6},
                 note=f"action rtol 1e-10; gradient error {gradient_error:.1e} (≤ 1e-6)")


# ---------------------------------------------------------------------------------------------
# 4. the hidden Markov chain: accuracy vs N between the GP lines (figure 2c)
# ---------------------------------------------------------------------------------------------

# Paths of the 4-path network (flat index, h1 slow): 0 = good (GOOD), 1 = adversarial #1, 2 = denoising
# (DENOISING), 3 = adversarial #2 (spec §4.1).


def markov_data(data) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """The authors' 4-path features (data = "authors", if present) or our own draw with seed ``data``."""
    if data == "authors":
        loaded = experiments.authors_markov_data()
        if loaded is not None:
            return (*loaded, "authors' features (package data)")
        data = 0
    X, y, Xt, yt = markov_dataset(MarkovChainTask(), "4paths", 100, 1000, seed=int(data), head_seed=int(data))
    return np.asarray(X), y, np.asarray(Xt), yt, f"generated, seed {data}"


@theory.claim(
    source=f"{SOURCE}, figure 2c (hidden Markov chain, 4 paths)",
    examples={"quick": 2, "thorough": 8}, shrink_budget=4,
    data=st.one_of(st.just("authors"), st.integers(1, 2**16)),
)
def markov_accuracy_between_gp_lines(ctx: Context, data) -> Evidence:
    """4-path network on the hidden Markov chain task (T = 0.01, P = 100, 1000 test sequences): at
    N = 10 the finite-width theory is at least as accurate as the GP limit of the good + denoising
    paths (paired difference ≥ −5 SE), while the all-paths GP is worse; at N = 10⁴ it is within
    5 paired SE + 0.005 of the all-paths GP (budget: the O(P/N) = 1e-2 drift of U)."""
    X, y, Xt, yt, origin = markov_data(data)
    T = MARKOV_TEMPERATURE
    be = ctx.backend
    gp_all = experiments.gp_point(X, y, Xt, yt, T, backend=be)
    gp_gd = experiments.gp_point(experiments.subnetwork_features(X, [GOOD, DENOISING]), y,
                                 experiments.subnetwork_features(Xt, [GOOD, DENOISING]), yt, T, backend=be)
    small, large = experiments.width_sweep(X, y, Xt, yt, heads=(2, 2), widths=[10, 10_000], temperature=T, backend=be)
    ahead = experiments.paired_difference(small, gp_gd)
    converged = experiments.paired_difference(large, gp_all)
    above_all = experiments.paired_difference(small, gp_all)
    conditions = {
        "N = 10 matches or beats the good + denoising GP (−5 SE)": ahead.mean >= -5 * ahead.standard_error,
        "N = 10 beats the all-paths GP by 5 SE": above_all.mean > 5 * above_all.standard_error,
        "N = 1e4 equals the all-paths GP (5 SE + 0.005)": abs(converged.mean) <= 5 * converged.standard_error + 0.005,
    }
    return Evidence(
        holds=all(conditions.values()), relation="custom", conditions=conditions,
        theory=gp_gd.accuracy.mean, observed=small.accuracy.mean,
        tolerance=5 * ahead.standard_error, standard_error=ahead.standard_error,
        note=(f"{origin}: theory N=10 {small.accuracy.mean:.3f}, N=1e4 {large.accuracy.mean:.3f}; "
              f"GP g+d {gp_gd.accuracy.mean:.3f}, GP all {gp_all.accuracy.mean:.3f}"),
        figures={"data": origin, "accuracy_N10": small.accuracy.as_dict(), "accuracy_N1e4": large.accuracy.as_dict(),
                 "gp_good_denoising": gp_gd.accuracy.as_dict(), "gp_all": gp_all.accuracy.as_dict(),
                 "N10_minus_gp_gd": ahead.as_dict(), "N1e4_minus_gp_all": converged.as_dict(),
                 "U_N10": small.order_parameter.tolist()},
    )


# ---------------------------------------------------------------------------------------------
# 5–6. sampled finite-width networks (posterior sampler) against the theory, and toward the GP limit
# ---------------------------------------------------------------------------------------------

def sampled_points(data, ctx: Context) -> tuple[tuple, str]:
    """Sampled networks and theory at each width of the profile, from the run's store: claims 7 and 8 and
    figure 2c share one sampling (``experiments.sampled_markov_networks_of(settings)``, seeded by the
    run's seed). Only the report's data is sampled: ``data`` must be "authors" (the authors' features when
    present, else the report's own draw)."""
    if data != "authors":
        raise ValueError(f"data must be 'authors' (the data figure 2c samples), got {data!r}")
    points = ctx.store.result(sampled_markov_networks_of(ctx.settings))
    source = ctx.store.result(markov_data_of(ctx.settings, "4paths"))
    origin = ("authors' features (package data)" if source.source == "authors"
              else f"generated from the run's seed {ctx.run_seed}")
    return points, origin


def _point_figures(point) -> dict:
    return {"width": point.width, "U_sampled": point.order_parameter.tolist(),
            "U_mcse": point.order_parameter_mcse.tolist(), "U_theory": point.theory.order_parameter.tolist(),
            "U_prediction": point.prediction.tolist(), "U_prediction_error": point.prediction_error.tolist(),
            "U_wishart_shift": point.wishart_shift.tolist(),
            "accuracy_sampled": point.accuracy.as_dict(),
            "accuracy_theory": point.theory.accuracy.mean, "accuracy_budget": point.accuracy_budget,
            "diagnostics": point.diagnostics, "converged": point.converged}


@theory.claim(
    source=f"{SOURCE}, figures 2c and 3c (theory vs sampled networks)",
    examples={"quick": 1, "thorough": 1}, shrink_budget=1, data=st.just("authors"),
)
def sampled_networks_match_theory(ctx: Context, data) -> Evidence:
    """Networks sampled from the posterior (4-path Markov task, T = 0.01, N = 10, 30 [, 100]) have
    ⟨w_π·w_π'⟩/n_0 equal to the action's own posterior mean E[U] at that width (the next order of the Laplace
    expansion around the saddle point, `attnverify.saddle.posterior_mean`) within z MCSE + that prediction's
    stated error (z ≥ 5: Bonferroni over U's entries at a joint false alarm of 10⁻³, ``ChainSummary.mcse_z``; the
    saddle point alone is printed beside it), and the accuracy of their posterior-mean predictor equals the
    theory's within 5 MCSE + an O(1/N) budget: the accuracy's move when the theory is solved again at the Wishart
    degrees of freedom (``experiments.wishart_shifted_widths``), plus the fraction of test points whose sign neither
    side resolves (the theory's margin within z MCSE of the sampled predictor, or within the predictor's move under
    the shift: such a point may flip either way). The sampler must have converged (R-hat below the limit for the
    maximum over the entries of U, and over the 1000 test points of the predictor, at a false alarm of 10⁻³; bulk
    and tail ESS ≥ 400 for U) for the MCSE to count: unconverged is inconclusive."""
    points, origin = sampled_points(data, ctx)
    worst, conditions, notes = 0.0, {}, []
    for point in points:
        gap = np.abs(point.order_parameter - point.prediction)
        saddle = point.gap_over_allowance(point.theory.order_parameter)
        accuracy_gap = abs(point.accuracy.mean - point.theory.accuracy.mean)
        accuracy_allowed = 5 * point.accuracy.standard_error + point.accuracy_budget
        conditions[f"N = {point.width}: sampler converged"] = point.converged
        conditions[f"N = {point.width}: U within z MCSE + the next order's error (z ≤ "
                   f"{point.mcse_multiple.max():.2f}), accuracy within 5 MCSE + budget"] = \
            bool(np.all(gap <= point.allowance)) and accuracy_gap <= accuracy_allowed
        ratio = point.gap_over_allowance(point.prediction)
        worst = max(worst, ratio)
        notes.append(f"N={point.width}: U_gg {point.order_parameter[0, 0]:.3f}±{point.order_parameter_mcse[0, 0]:.3f} "
                     f"vs next order {point.prediction[0, 0]:.3f}±{point.prediction_error[0, 0]:.2g} (saddle "
                     f"{point.theory.order_parameter[0, 0]:.3f}); U gap {ratio:.2f}× the allowance (the saddle point "
                     f"alone {saddle:.2f}×); acc {point.accuracy.mean:.3f} vs {point.theory.accuracy.mean:.3f}"
                     f"{'' if point.converged else ' (not converged)'}")
    reason, needed = _unconverged(points)
    return Evidence(holds=all(conditions.values()), theory=1.0, observed=worst, tolerance=1.0,
                    relation="custom", conditions=conditions, inconclusive=reason, needed=needed,
                    note=f"{origin}; max gap/allowed {worst:.2f}; " + "; ".join(notes),
                    figures={"data": origin, "points": [_point_figures(q) for q in points]})


def _unconverged(points) -> tuple[str, dict]:
    """Why sampled evidence is inconclusive (a width whose sampler has not converged: its MCSE does not count,
    for the theory or against it) and the draws per chain that would decide it; ("", {}) when all converged."""
    waiting = [q for q in points if not q.converged]
    if not waiting:
        return "", {}
    needed = [int(q.diagnostics.get("draws_needed") or 0) for q in waiting]
    return (f"the sampler has not converged at N = {', '.join(str(q.width) for q in waiting)}: its Monte Carlo "
            "errors do not count, for the theory or against it; draw more",
            {"draws per chain": max(needed)} if max(needed) > 0 else {})


@theory.claim(
    source=f"{SOURCE}, §3 (GP limit) and figure 2c (samples vs N)",
    examples={"quick": 1, "thorough": 1}, shrink_budget=1, data=st.just("authors"),
)
def sampled_networks_approach_gp(ctx: Context, data) -> Evidence:
    """The sampled order parameter moves toward the GP value U_GP = I as N grows: the Frobenius distance
    d(N) = |Û(N) − I| falls between consecutive widths by more than 5 standard errors of the difference
    (SE from the entries' MCSE by the delta method; the widths' runs are independent). A one-sided bound with
    three verdicts: every drop above 5 SE holds; a rise by more than 5 SE refutes; a drop inside ±5 SE is
    inconclusive, with the draws that would resolve it (the SE falls as 1/sqrt(draws))."""
    points, origin = sampled_points(data, ctx)
    distances, errors = [], []
    for point in points:
        delta = point.order_parameter - np.eye(point.order_parameter.shape[0])
        d = float(np.linalg.norm(delta))
        distances.append(d)
        errors.append(float(np.sqrt(np.sum((delta / d) ** 2 * point.order_parameter_mcse**2))))
    drops = [(distances[i] - distances[i + 1], float(np.hypot(errors[i], errors[i + 1])))
             for i in range(len(points) - 1)]
    conditions = {f"d falls from N = {points[i].width} to N = {points[i + 1].width} by > 5 SE": drop > 5 * se
                  for i, (drop, se) in enumerate(drops)}
    conditions["every width converged"] = all(q.converged for q in points)
    smallest = min(drops, key=lambda d: d[0] / d[1])
    reason, needed = _unconverged(points)
    rises = [i for i, (drop, se) in enumerate(drops) if drop < -5 * se]
    short = [i for i, (drop, se) in enumerate(drops) if -5 * se <= drop <= 5 * se]
    if not reason and short and not rises:
        factor = max((5 * drops[i][1] / drops[i][0]) ** 2 if drops[i][0] > 0 else np.inf for i in short)
        draws = int(points[0].diagnostics.get("draws") or 0)
        reason = ("d falls by less than 5 SE (nor rises by 5 SE) from N = "
                  + ", ".join(f"{points[i].width} to {points[i + 1].width}" for i in short)
                  + ": the drop is not resolved at these draws")
        needed = ({"draws per chain": int(np.ceil(factor * draws))} if np.isfinite(factor) and draws
                  else {"draws, as a multiple of the present": float(factor)} if np.isfinite(factor) else {})
    return Evidence(holds=all(conditions.values()), theory=0.0, observed=smallest[0], tolerance=5 * smallest[1],
                    relation="custom", conditions=conditions, inconclusive=reason, needed=needed,
                    standard_error=smallest[1], labels=("no drop", "least drop of |Û − I| between widths"),
                    note=f"{origin}; |Û − I| at N = {[q.width for q in points]}: "
                         + ", ".join(f"{d:.3f}±{e:.3f}" for d, e in zip(distances, errors)),
                    figures={"widths": [q.width for q in points], "distance": distances, "standard_error": errors})


# ---------------------------------------------------------------------------------------------
# 7–9. one-shot image classification with trained heads (figure 3), in their own module (imported here, it
# registers them on the theory after the claims above)
# ---------------------------------------------------------------------------------------------

from .one_shot.claims import (one_shot_cache_is_the_trained_network, one_shot_head_scores_predict_pruning,
                              one_shot_network_generalises_to_new_classes)

# 10–16. the action declared as a saddle-point theory of one's own: the claims every such theory gets
from . import generic_claims  # noqa: E402,F401  (registers them on the theory after the claims above)
