"""The claims a declared saddle-point theory gets with ``network=``: networks sampled from the posterior against the
action's own prediction (``sampled_networks_match_theory``, and with ``test_error`` the generalisation error against
the saddle point's within an O(1/N) budget), and the network's vector–Jacobian product against finite differences;
with the registration-time checks of what the networks read (widths, data, the network's parameters).

Each check draws the action's parameters, the temperature and the data as `attnverify.saddle.claims` does,
builds the theorist's network at the drawn widths and samples it by HMC with the readout integrated out
(`attnverify.saddle.network`).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from typing import Any, Callable, Mapping

import numpy as np

from ..checks.comparisons import at_most
from ..checks.evidence import Evidence
from .claims import SaddleSetting, against_differences, registration_search, simplest_wrong_draw
from .declaration import SaddlePointAction
from .solve import solve

SAMPLING = {"quick": dict(chains=8, warmup=300, draws=500), "thorough": dict(chains=8, warmup=600, draws=2000)}
"""The sampler's size per profile on the host: chains, warm-up and kept draws per chain (a device backend runs many
short chains instead, `attnverify.saddle.sampling.sampler_size`)."""


TEST_KEYS = ("test_inputs", "y_test")


def prediction_inputs(data: Mapping) -> dict:
    """The test inputs of a data dict as `predict` takes them: X_test, or C_test and C_test_diagonal."""
    return {key: data[key] for key in ("X_test", "C_test", "C_test_diagonal") if key in data}
"""What the data adds for the sampled networks' generalisation error: the raw test inputs and their labels (with the
theory's ``C_test`` and ``C_test_diagonal``, or ``X_test``, as
[`attnverify.saddle.predict.predict`][attnverify.saddle.predict.predict] reads them)."""


def _missing_test_data(data: Mapping) -> list[str]:
    """The keys of `TEST_KEYS` and of the theory's test kernels (or features) that ``data`` lacks."""
    theory_keys = () if "X_test" in data else ("C_test", "C_test_diagonal")
    return [key for key in (*TEST_KEYS, *theory_keys) if key not in data]


def _finite_width_budget(value: np.ndarray, shifted: np.ndarray, D: int, width: int) -> np.ndarray:
    """The O(1/N) budget of a saddle-point prediction, per entry the larger of (D + 1)/N times the entry's scale and
    the theory's own move under N → N − D − 1 (the Wishart degrees of freedom; D the largest order parameter's
    size; N the smallest layer's width, whose 1/N is the largest correction). The scale of a matrix entry is
    √(U_ii U_jj), its Cauchy–Schwarz bound (an off-diagonal entry near 0 still moves on the scale of the diagonal),
    as the built-in attention-path claim has it; of a scalar, |value|."""
    value = np.asarray(value, dtype=float)
    scale = np.sqrt(np.outer(np.diag(value), np.diag(value))) if value.ndim == 2 else np.abs(value)
    return np.maximum((D + 1) / width * scale, np.abs(value - shifted))


def smallest_width(declaration: SaddlePointAction, action_values: Mapping[str, Any]) -> int:
    """The smallest layer's width among ``action_values``: the N of the O(1/N) budget."""
    return int(min(float(action_values[w.name]) for w in declaration.widths))


def theory_at(s: SaddleSetting, action_values: dict, temperature: float, data: Mapping, backend=None) -> dict:
    """The theory's predictions at ``action_values``: the order parameters, and the generalisation error where the
    data has its test inputs and kernels (`_missing_test_data`)."""
    from .network import GENERALISATION_ERROR
    from .predict import predict

    solution = solve(s.declaration, data, temperature=temperature, backend=backend, **action_values)
    values = {name: np.asarray(value, dtype=float) for name, value in solution.order_parameters.items()}
    if not _missing_test_data(data):
        values[GENERALISATION_ERROR] = np.asarray(
            predict(s.declaration, solution, data, prediction_inputs(data)).generalisation_error(data["y_test"]).mean)
    return values


def check_network(s: SaddleSetting, network: Callable) -> None:
    """At registration: every parameter ``network`` names is one of the action's or the data function's."""
    _network_arguments(s, network, dict.fromkeys((*s.declaration.parameter_names, *s.data_parameters,
                                                  *s.structure)))


def not_a_network_width(value, D: int) -> bool:
    """Whether ``value`` cannot be a sampled network's layer width: a whole number above D + 1 (the Wishart shift
    N − D − 1 must leave one); bools and non-numbers cannot."""
    return isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or \
        not np.isfinite(value) or float(value) != int(value) or value <= D + 1


def check_width_strategies(s: SaddleSetting, strategies: Mapping[str, Any]) -> None:
    """At registration, for sampled networks: each width's strategy draws whole numbers above D + 1 (the Wishart
    shift; `simplest_wrong_draw`)."""
    D = s.wishart_size
    for w in s.declaration.widths:
        if w.name not in strategies:
            continue  # the missing strategy is refused by name with the others
        found = simplest_wrong_draw(strategies[w.name], lambda v: not_a_network_width(v, D))
        if found is not None:
            raise ValueError(f"the sampled networks need {w.name} a whole number above {D + 1} (a layer's width, the "
                             f"Wishart shift N − D − 1 below it); its strategy draws {found[0]!r}")


def _network_arguments(s: SaddleSetting, network: Callable, values: dict) -> dict:
    """The parameters the theorist's ``network`` names (any of the action's and the data function's), by name; one
    with a default that no parameter has keeps its default (``lambda N, act=act: …`` in a loop)."""
    parameters = inspect.signature(network).parameters
    wants = [n for n, p in parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
             and (n in values or p.default is inspect.Parameter.empty)]
    unknown = [n for n in wants if n not in values]
    if unknown:
        raise TypeError(f"network names {', '.join(unknown)}, which is not a parameter of the action "
                        f"({', '.join(s.declaration.parameter_names)}), of {s.data.__name__} "
                        f"({', '.join(s.data_parameters) or 'none'})"
                        + (f" or of the family ({', '.join(s.structure)})" if s.structure else ""))
    return {n: values[n] for n in wants}


def _require_network_data(s: SaddleSetting, data: Mapping, test_error: bool) -> None:
    """The data carry what the sampled networks read: the raw ``inputs`` and, with ``test_error``, the test data
    (`_missing_test_data`); else one line naming what the data function must also return."""
    if "inputs" not in data:
        raise ValueError(f"the data function {s.data.__name__} must also return the raw inputs (inputs=X, (P, d)) "
                         "that the sampled networks read")
    missing = _missing_test_data(data)
    if test_error and missing:
        raise ValueError(f"test_error=True: the data function {s.data.__name__} must also return {', '.join(missing)} "
                         "(the raw test inputs and labels for the networks; the test kernels C_test (Q, P) and "
                         "C_test_diagonal (Q,), or the features X_test, for the theory)")


def check_network_data(s: SaddleSetting, strategies: Mapping[str, Any], test_error: bool) -> None:
    """At registration, for sampled networks: the data function, called once at its parameters' simplest draws
    (hypothesis's shrink target), returns what the networks read (`_require_network_data`). A data function
    that fails there is left to the claims, which report it with the example that made it fail."""
    from hypothesis import find, strategies as st

    try:
        parameters = find(st.fixed_dictionaries({n: strategies[n] for n in s.data_parameters}), lambda _: True,
                          settings=registration_search(1))
        data = s.draw(parameters, np.random.default_rng(0))
    except Exception:  # a missing strategy (refused by name with the others) or the data function's own failure,
        return  # which the claims report with the example that made it fail
    _require_network_data(s, data, test_error)


def network_at(s: SaddleSetting, network: Callable, action_values: dict, data_parameters: dict, data: Mapping):
    """The theorist's network at ``action_values`` (every width a whole number, passed as an int), for data that
    carry the raw inputs the network reads."""
    _require_network_data(s, data, test_error=False)
    s.declaration.check_integer_widths(action_values)
    widths = {w.name: int(action_values[w.name]) for w in s.declaration.widths}
    return network(**_network_arguments(s, network, {**action_values, **data_parameters, **widths}))


def sample_networks(s: SaddleSetting, made, data: Mapping, temperature: float, seed: int, backend, sizes: dict,
            test_error: bool = False):
    """Sample the network ``made`` on the data (and, with ``test_error``, its test error on the test inputs)."""
    from .network import sample_order_parameters

    _require_network_data(s, data, test_error)
    test = (data["test_inputs"], data["y_test"]) if test_error else None
    return sample_order_parameters(made, data["inputs"], data["y"], temperature=temperature, seed=seed,
                                   backend=backend, test=test, **sizes)


def _drawn_network(s: SaddleSetting, network: Callable, p: Mapping[str, Any], rng):
    """What a network claim draws: the action's values, T, the data, the smallest width and the network there."""
    action_values, temperature, data_parameters = s.split(p)
    s.declaration.check_integer_widths(action_values)
    data = s.draw(data_parameters, rng)
    named = {**data_parameters, **{n: p[n] for n in s.structure}}
    return action_values, temperature, data, smallest_width(s.declaration, action_values), \
        network_at(s, network, action_values, named, data)


def _widths_note(declaration: SaddlePointAction, action_values: Mapping[str, Any]) -> str:
    return ", ".join(f"{w.name} = {int(action_values[w.name])}" for w in declaration.widths)


def prediction_at(s: SaddleSetting, action_values: dict, temperature: float, data: Mapping, backend=None):
    """The action's own posterior mean of its order parameters at ``action_values``
    ([`posterior_mean`][attnverify.saddle.posterior_mean], method "auto": the quadrature for at most three scalars, else
    the next order of the Laplace expansion), each with its stated error and the saddle point beside it."""
    from .beyond import posterior_mean

    return posterior_mean(s.declaration, data, temperature=temperature, method="auto", backend=backend,
                          **action_values)


def generalisation_prediction(s: SaddleSetting, prediction, temperature: float, data: Mapping):
    """The action's own prediction of the generalisation error on the data's test inputs, from ``prediction`` (the
    quadrature's, `prediction_at`): E[ε_g(q)] under e^{−S} dμ, ε_g(q) = mean_t (⟨f(x_t)⟩_q − y_t)² + ⟨δf(x_t)²⟩_q
    the predictor of the kernel K(q) at each node of the quadrature's kernel marginal
    ([`kernel_average`][attnverify.saddle.beyond.Prediction.kernel_average], its error the two rules' difference), with
    ε_g(q*) of the saddle point beside it: what networks sampled at this width estimate as their mean over the hidden
    weights of the test error of the readout's posterior given them."""
    from .network import GENERALISATION_ERROR
    from .predict import predict_at

    def error_at(q: float) -> float:
        predictor = predict_at(q, temperature, data, prediction_inputs(data))
        return float(predictor.generalisation_error(data["y_test"]).mean)

    mean, error = prediction.kernel_average(error_at)
    saddle = error_at(float(prediction.saddle[s.declaration.kernel.name]))
    return dataclasses.replace(prediction, saddle={GENERALISATION_ERROR: saddle}, mean={GENERALISATION_ERROR: mean},
                               error={GENERALISATION_ERROR: error}, variance={GENERALISATION_ERROR: math.nan},
                               notes="the generalisation error averaged over the kernel's quadrature marginal, "
                                     "error: the two rules' difference + rounding")


PREDICTION_SOURCE = {"quadrature": "quadrature", "laplace": "next-order Laplace", "hmc": "HMC on the action"}
"""How the allowance names the source of the prediction's error, by `Prediction.method`."""


def _shown(value) -> str:
    """A float or a matrix at 4 decimals; an error or allowance (below 1e-3) in 2 significant digits."""
    value = np.asarray(value, dtype=float)
    if value.ndim == 0:
        return f"{float(value):.4f}" if abs(float(value)) >= 1e-3 else f"{float(value):.2g}"
    return str(np.round(value, 4).tolist())


def _one_z(z: np.ndarray) -> str:
    """The z of the MCSE as printed: one number where every entry has the same (the usual: the project's 5)."""
    z = np.asarray(z, dtype=float)
    return f"{float(z.max()):.3g}" if np.ptp(z) == 0 else f"{float(z.min()):.3g}–{float(z.max()):.3g}"


@dataclasses.dataclass(frozen=True)
class Comparison:
    """One order parameter's sampled mean against the action's prediction: the gap, the allowance z·MCSE + the
    prediction's stated error (per entry), and the saddle point's gap beside it, in units of the same allowance."""

    name: str
    holds: bool
    worst: float          # max over entries of |sampled − prediction| / allowance
    saddle_worst: float   # the same for the saddle point alone: what comparing with it would have said
    note: str
    figures: dict


def compare_with_prediction(name: str, summary, prediction, bias: float = 0.0) -> Comparison:
    """``summary`` (a `ChainSummary` of the sampled order parameter) against
    the action's own prediction (a [`Prediction`][attnverify.saddle.beyond.Prediction]): holds where every entry's gap
    |sampled − E[u]| is within z·MCSE + the prediction's stated error + the theorist's stated ``bias`` budget (what
    the action is known to leave out, 0 by default), z from `ChainSummary.mcse_z` (at least 5; Student's t with
    Bonferroni over the entries). The false-alarm rate where the action is exact is that of the z·MCSE bound alone
    (the stated error covers the prediction's own), ≤ the project's FALSE_ALARM per summary."""
    mean, error = np.asarray(prediction.mean[name], dtype=float), np.abs(np.asarray(prediction.error[name], float))
    saddle = np.asarray(prediction.saddle[name], dtype=float)
    sampled, mcse, z = np.asarray(summary.mean, dtype=float), np.asarray(summary.mcse, float), summary.mcse_z()
    if sampled.size != mean.size:
        raise ValueError(f"the network records {name} with shape {sampled.shape}, the action declares "
                         f"{mean.shape or 'a scalar'}")
    # a network may record a scalar order parameter as a 1 × 1 matrix (its summary, z included, has that shape);
    # the prediction's mean, error and saddle have the declaration's
    monte_carlo = np.reshape(z * mcse, mean.shape)  # z per entry (Student's t) or one
    sampled, mcse = sampled.reshape(mean.shape), mcse.reshape(mean.shape)
    allowed = monte_carlo + error + bias
    gap, saddle_gap = np.abs(sampled - mean), np.abs(sampled - saddle)
    worst, saddle_worst = float(np.max(gap / allowed)), float(np.max(saddle_gap / allowed))
    source = PREDICTION_SOURCE[prediction.method]
    note = (f"{name}: sampled {_shown(sampled)} ± {_shown(mcse)} against the action's prediction {_shown(mean)} "
            f"({source}), the saddle point {_shown(saddle)}; allowance {_one_z(z)} MCSE = {_shown(monte_carlo)} + "
            f"prediction error {_shown(error)} ({source}){_stated(bias)} = {_shown(allowed)}; gap {_shown(gap)}, "
            f"{worst:.3g}× the allowance (the saddle point alone: {saddle_worst:.3g}×)")
    if prediction.method == "laplace":
        note += ("; beyond the Monte Carlo error the allowance rests only on the next-order Laplace expansion's "
                 "estimate of its own O(1/N²) term (by the expansion's scaling, not a bound)")
    figures = {f"{name}_gap_over_allowance": worst, f"{name}_saddle_gap_over_allowance": saddle_worst}
    if mean.ndim == 0:
        figures.update({f"{name}_sampled": float(sampled), f"{name}_mcse": float(mcse),
                        f"{name}_prediction": float(mean), f"{name}_prediction_error": float(error),
                        f"{name}_saddle": float(saddle), f"{name}_allowance": float(allowed)})
    return Comparison(name, bool(np.all(gap <= allowed)), worst, saddle_worst, note, figures)


def _stated(bias: float) -> str:
    """The stated bias budget as a term of an allowance's sum, "" where none is stated."""
    return f" + stated bias {bias:.3g}" if bias else ""


def _compare_with_budget(name: str, summary, theory: Mapping, shifted: Mapping, D: int, width: int,
                         bias: float = 0.0) -> Comparison:
    """The generalisation error against the saddle point's within z MCSE + the O(1/N) budget of
    `_finite_width_budget` + the stated ``bias`` (for order parameters beyond the quadrature's reach, where the
    action gives no prediction of it here)."""
    U = theory[name]
    budget = _finite_width_budget(U, shifted[name], D, width)
    allowed = summary.mcse_z() * summary.mcse + budget + bias
    gap = np.abs(np.asarray(summary.mean) - U)
    worst = float(np.max(gap / allowed))
    note = (f"{name}: sampled {_shown(summary.mean)} ± {_shown(summary.mcse)}, the saddle point {_shown(U)}; "
            f"allowance {_one_z(summary.mcse_z())} MCSE + the O(1/N) budget {_shown(budget)}{_stated(bias)} = "
            f"{_shown(allowed)}")
    return Comparison(name, bool(np.all(gap <= allowed)), worst, worst, note, {})


def _comparisons(s: SaddleSetting, sampled, action_values: dict, temperature: float, data: Mapping, width: int,
                 test_error: bool, backend, bias: float = 0.0) -> list[Comparison]:
    """Each recorded quantity the claim judges: the order parameters against the action's prediction
    (`compare_with_prediction`); with ``test_error`` the generalisation error against the action's prediction
    of it where the quadrature gives one (`generalisation_prediction`), else against the saddle point's
    (`_compare_with_budget`)."""
    from .network import GENERALISATION_ERROR

    names = [name for name in sampled.summaries if (name == GENERALISATION_ERROR) == test_error]
    declared = {op.name for op in s.declaration.order_parameters}
    unknown = [name for name in names if name not in declared and name != GENERALISATION_ERROR]
    if unknown:
        raise ValueError(f"the network estimates {unknown[0]!r}, which the action does not declare")
    prediction = prediction_at(s, action_values, temperature, data, backend)
    if not test_error:
        return [compare_with_prediction(name, sampled.summaries[name], prediction, bias) for name in names]
    if prediction.method == "quadrature":
        predicted = generalisation_prediction(s, prediction, temperature, data)
        return [compare_with_prediction(name, sampled.summaries[name], predicted, bias) for name in names]
    D = s.wishart_size
    theory = theory_at(s, action_values, temperature, data, backend)
    shifted = theory_at(s, s.declaration.with_widths(action_values, lambda n: n - D - 1), temperature, data, backend)
    return [_compare_with_budget(name, sampled.summaries[name], theory, shifted, D, width, bias) for name in names]


def sampled_networks_match(s: SaddleSetting, network: Callable, test_error: bool = False,
                           bias: Callable[[Mapping, Any], float] | None = None) -> Callable:
    """Networks sampled from the posterior (the readout integrated out, `attnverify.saddle.network`) have the
    action's own posterior mean of the order parameters (`prediction_at`: quadrature or next-order Laplace)
    within z MCSE + that prediction's stated error (`compare_with_prediction`), the saddle point printed
    beside it; with ``test_error``, their generalisation error on the data's test inputs (`TEST_KEYS`) the
    saddle point's within z MCSE + the O(1/N) budget of `_finite_width_budget`. ``bias(p, ctx)``: the theorist's
    stated bias budget at the drawn parameters, added to each allowance. Unconverged chains (R-hat/ESS gate, over
    every quantity recorded) make the example inconclusive."""
    from .sampling import sampler_size

    def check(p, ctx) -> Evidence:
        action_values, temperature, data, width, made = _drawn_network(s, network, p, ctx.rng)
        D = s.wishart_size
        if width <= D + 1:
            raise ValueError(f"every width must exceed {D + 1} (the Wishart shift N − D − 1) for the sampled "
                             f"networks, got {_widths_note(s.declaration, action_values)}")
        sampled = sample_networks(s, made, data, temperature, int(ctx.rng.integers(2**31)), ctx.backend,
                          sampler_size(ctx.backend, **ctx.choose(**SAMPLING)), test_error)
        stated = 0.0 if bias is None else bias(p, ctx)
        compared = _comparisons(s, sampled, action_values, temperature, data, width, test_error, ctx.backend, stated)
        within = ("prediction error" if not test_error else "budget") + (" + stated bias" if stated else "")
        conditions = {f"{c.name} within z MCSE + {within}": c.holds for c in compared}
        converged = all(summary.converged for summary in sampled.summaries.values())
        conditions["the sampler converged (R-hat, ESS)"] = converged
        worst = max((c.worst for c in compared), default=0.0)
        return Evidence(holds=all(conditions.values()), relation="custom", conditions=conditions,
                        inconclusive="" if converged else "the sampler has not converged: its Monte Carlo errors do "
                                                          "not count, for the theory or against it; draw more",
                        note=f"max gap/allowed {worst:.3g} at {_widths_note(s.declaration, action_values)}: "
                             + "; ".join(c.note for c in compared),
                        figures={"width": width, "worst": worst, "acceptance": sampled.acceptance,
                                 "divergences": sampled.divergences,
                                 **{k: v for c in compared for k, v in c.figures.items()}})
    return check


DIRECTIONS = 8
"""How many random unit directions the network's gradient is checked along (a wrong VJP misses almost surely)."""


def network_gradient_matches_finite_differences(s: SaddleSetting, network: Callable) -> Callable:
    """The collapsed potential's gradient through the network's own vector–Jacobian product equals central
    differences of the potential (`against_differences`) along `DIRECTIONS` random unit directions,
    at prior weights of one chain: a wrong VJP would only slow HMC down (the Metropolis step keeps it exact), so it
    is checked here, where it shows. The network runs on the run's backend (the VJP that sampling uses there); the
    differences are taken on the host."""
    from .network import CollapsedNetworkPosterior

    def check(p, ctx) -> Evidence:
        _, temperature, data, width, made = _drawn_network(s, network, p, ctx.rng)
        posterior = CollapsedNetworkPosterior(made, data["inputs"], data["y"], temperature, backend=ctx.backend)
        be = posterior.backend
        x = ctx.rng.standard_normal(posterior.size)
        directions = ctx.rng.standard_normal((posterior.size, DIRECTIONS))
        directions /= np.linalg.norm(directions, axis=0)
        potential, gradient = (be.to_numpy(v) for v in posterior.potential_and_gradient(be.asarray(x[None])))

        def along(t):  # the potential on the plane x + V t of the random directions
            return float(be.to_numpy(posterior.potential_and_gradient(be.asarray((x + directions @ t)[None]))[0])[0])

        ratio = against_differences(directions.T @ gradient[0], along, np.zeros(DIRECTIONS),
                                     max(abs(float(potential[0])), 1.0))
        return at_most(ratio, 1.0, note=f"worst |VJP gradient − FD| over its allowance {ratio:.2g}, along "
                                        f"{DIRECTIONS} random directions of the {posterior.size} weights at "
                                        f"N = {width}",
                       figures={"weights": posterior.size, "ratio": ratio},
                       labels=("|VJP − FD| / allowance", "bound"))
    return check

