"""The claims every declared saddle-point theory gets without writing them (what the built-in attention-path theory
has by hand): the saddle-point equations hold at the answer and the Hessian is positive; the generated gradient and
Hessian equal finite differences; U(N) → U_GP at rate 1/N; and the symmetries the theorist declares.

Each is a check ``(p, ctx) -> Evidence`` over drawn parameters: the action's parameters (the width among them),
``temperature``, and the parameters of the theorist's data function ``data(rng, **data_parameters)``. The energy's
P-sized work runs on the run's backend (``ctx.backend``: numpy, or cupy), the Newton steps on the host.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

import numpy as np
import sympy

from ..base import arguments
from ..base.arguments import name_mismatch
from ..checks.evidence import Evidence, at_most
from .action import NumericAction
from .declaration import SaddlePointAction
from .solve import SaddlePointError, data_energy, domain_point, gp_point, solve

TOLERANCE = 1e-9
"""The saddle-point equations' tolerance, max |∂(S/N)/∂u|."""

RATE_TOLERANCE = 0.05
"""How far the log-log slope of max |u(N) − u_GP| over the last decade N → 10N may lie from −1."""


@dataclass(frozen=True)
class SaddleSetting:
    """What the claims of one declared action share: the declaration, the data function and the names of the
    drawn parameters that go to each. For a family of declarations (a function of drawn structural parameters,
    e.g. the heads, returning a :class:`SaddlePointAction`), ``family`` and its ``structure`` names, and
    ``declaration`` is its member at the structure's simplest draw (what registration checks and the report
    prints); :meth:`at` gives the member of a draw."""

    declaration: SaddlePointAction
    data: Callable
    data_parameters: tuple[str, ...]
    family: Callable | None = None
    structure: tuple[str, ...] = ()

    def at(self, p: Mapping[str, Any]) -> "SaddleSetting":
        """The setting of the draw ``p``: itself, or for a family its member at ``p``'s structural parameters, which
        must declare the same parameters as the family's first member (one strategy each)."""
        if self.family is None:
            return self
        missing = [n for n in self.structure if n not in p]
        if missing:
            raise TypeError(f"give a value for the family's structural parameter(s) {', '.join(missing)}")
        structure = {n: p[n] for n in self.structure}
        member = self.family(**structure)
        if not isinstance(member, SaddlePointAction):
            raise TypeError(f"the family {self.family.__name__} must return a SaddlePointAction, got "
                            f"{type(member).__name__} at {structure}")
        if member.parameter_names != self.declaration.parameter_names:
            raise ValueError(f"the family {self.family.__name__} declares the parameters "
                             f"({', '.join(member.parameter_names)}) at {structure}, not "
                             f"({', '.join(self.declaration.parameter_names)}) as at its first member: its members "
                             "must share their parameters (one strategy each)")
        return replace(self, declaration=member, family=None)

    def split(self, p: Mapping[str, Any]) -> tuple[dict, float, dict]:
        action = {n: p[n] for n in self.declaration.parameter_names}
        return action, float(p["temperature"]), {n: p[n] for n in self.data_parameters}

    def draw(self, data_parameters: Mapping[str, Any], rng) -> Mapping:
        """The theorist's data at ``data_parameters``, checked to be a dict."""
        data = self.data(rng, **data_parameters)
        if not isinstance(data, Mapping):
            raise TypeError(f"the data function {self.data.__name__} must return a dict (C or X, and y), got "
                            f"{type(data).__name__}")
        return data

    def problem(self, p: Mapping[str, Any], rng) -> tuple[dict, float, Mapping]:
        action, temperature, data_parameters = self.split(p)
        return action, temperature, self.draw(data_parameters, rng)

    @property
    def wishart_size(self) -> int:
        """D, the largest order parameter's size (1 for a scalar): the Wishart shift of the width is N → N − D − 1."""
        return max(max(op.size, 1) for op in self.declaration.order_parameters)


def for_each_draw(factory: Callable, s: SaddleSetting, *args) -> Callable:
    """The check ``factory(s, *args)``, built for each draw's member where ``s`` is a family."""
    if s.family is None:
        return factory(s, *args)

    def check(p, ctx) -> Evidence:
        return factory(s.at(p), *args)(p, ctx)
    return check


def _is_family(declaration) -> bool:
    return callable(declaration) and not isinstance(declaration, SaddlePointAction)


def family_member(declaration, strategies: Mapping[str, Any]) -> tuple[SaddlePointAction, tuple[str, ...]]:
    """(the declaration, ()) or, for a family, (its member at the structural parameters' simplest draws,
    hypothesis's shrink target, and the structural parameters' names)."""
    if not _is_family(declaration):
        return declaration, ()
    from hypothesis import find, strategies as hst

    structure = tuple(inspect.signature(declaration).parameters)
    missing = [n for n in structure if n not in strategies]
    if not structure or missing:
        raise TypeError(f"the family {declaration.__name__} takes the structure it is drawn at as parameters, each "
                        f"with a strategy" + (f": give one for {', '.join(missing)}" if missing else ""))
    simplest = find(hst.fixed_dictionaries({n: strategies[n] for n in structure}), lambda _: True,
                    settings=_registration_search(1))
    member = declaration(**simplest)
    if not isinstance(member, SaddlePointAction):
        raise TypeError(f"the family {declaration.__name__} must return a SaddlePointAction, got "
                        f"{type(member).__name__} at {simplest}")
    return member, structure


def map_parameters(function: Callable) -> tuple[str, ...]:
    """The drawn parameters a symmetry's map names after its first argument (the data, or the order parameters)."""
    return tuple(inspect.signature(function).parameters)[1:]


def setting(declaration, data: Callable, names: tuple[str, ...], family: Callable | None = None,
            structure: tuple[str, ...] = (), symmetry_names: tuple[str, ...] = ()) -> SaddleSetting:
    """Check the data function and the drawn names against the declaration (a family's first member), by name:
    a strategy for each of the action's parameters, temperature, the data function's, the family's structure and
    what the symmetries' maps name."""
    if not isinstance(declaration, SaddlePointAction):
        raise TypeError(f"saddle_point needs a SaddlePointAction (or a family: a function of drawn structural "
                        f"parameters returning one), got {type(declaration).__name__}")
    parameters = list(inspect.signature(data).parameters)
    if not parameters or parameters[0] != "rng":
        raise TypeError(f"the data function {data.__name__} must take (rng, …): the random generator first")
    data_parameters = tuple(parameters[1:])
    wanted = set(declaration.parameter_names) | {"temperature"} | set(data_parameters) | set(structure) \
        | set(symmetry_names)
    wrong = name_mismatch(sorted(names), sorted(wanted), unknown="strategies naming nothing:")
    if wrong:
        raise TypeError(f"saddle_point of {data.__name__}: give a strategy for each of the action's parameters "
                        f"({', '.join(declaration.parameter_names)}), temperature, and the data function's "
                        f"({', '.join(data_parameters) or 'none'})" + wrong)
    for others, what in ((data_parameters, "a data parameter"), (structure, "a structural parameter of the family")):
        clash = set(declaration.parameter_names) & set(others)
        if clash:
            raise TypeError(f"{', '.join(sorted(clash))} name(s) both an action parameter and {what}")
    return SaddleSetting(declaration, data, data_parameters, family, structure)


def is_a_minimum(s: SaddleSetting) -> Callable:
    def check(p, ctx) -> Evidence:
        action, temperature, data = s.problem(p, ctx.rng)
        solution = solve(s.declaration, data, temperature=temperature, tolerance=TOLERANCE, raise_on_failure=False,
                         backend=ctx.backend, **action)
        smallest = float(solution.hessian_eigenvalues.min())
        return at_most(solution.residual, TOLERANCE, note=solution.message,
                       conditions={"the Hessian over the entries is positive definite": solution.is_minimum,
                                   "solved at the drawn width": solution.parameters == action},
                       figures={"residual": solution.residual, "smallest_hessian_eigenvalue": smallest,
                                "iterations": solution.iterations, "error_estimate": solution.error_estimate},
                       labels=("max |∂(S/N)/∂u|", "tolerance"))
    return check


def _near_gp(declaration: SaddlePointAction, gp_entries: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random point of the domain at the GP point's scale: q·e^{0.3z}, or R (I + 0.3B)(I + 0.3B)ᵀ Rᵀ."""
    values = {}
    for op, value in zip(declaration.order_parameters, declaration.split(gp_entries).values()):
        if op.size == 0:
            values[op.name] = value * float(np.exp(0.3 * rng.standard_normal()))
        else:
            R = np.linalg.cholesky(value)
            M = np.eye(op.size) + 0.3 * rng.standard_normal((op.size, op.size)) / np.sqrt(op.size)
            values[op.name] = R @ M @ M.T @ R.T
    return declaration.join(values)


def _central(f, x: np.ndarray, h: float) -> np.ndarray:
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)])


def _against_differences(analytic: np.ndarray, f, x: np.ndarray, size: float, h: float = 1e-4) -> float:
    """max |analytic − FD(h/2)| over its allowance: 10× the larger of |FD(h) − FD(h/2)| (the truncation error,
    Richardson) and |FD(h/2) − FD(h/4)| (which grows as 1/h where round-off in f dominates: f's terms may be far
    larger than f, e.g. Tr(AC) − rᵀCr at small T), plus 100 ulps of ``size`` over h."""
    coarse, middle, fine = (_central(f, x, step) for step in (h, h / 2, h / 4))
    allowed = 10 * np.maximum(np.abs(coarse - middle), np.abs(middle - fine)) \
        + 100 * np.finfo(float).eps * size / h
    return float(np.max(np.abs(analytic - middle) / allowed))


def gradient_matches_finite_differences(s: SaddleSetting) -> Callable:
    def check(p, ctx) -> Evidence:
        action_values, temperature, data = s.problem(p, ctx.rng)
        values = s.declaration.parameter_values(action_values)
        gp = gp_point(s.declaration, raise_on_failure=False, **action_values)
        # without an entropy minimum (a flipped sign), the derivatives are still checked, near the solver's start
        centre = gp.entries if gp.converged and gp.is_minimum else domain_point(s.declaration)
        action = NumericAction(s.declaration, data_energy(data, temperature, backend=ctx.backend), values)
        theta = action.parametrisation.theta(_near_gp(s.declaration, centre, ctx.rng))
        value, gradient = action(theta)
        hessian = action.hessian(theta)
        ratio_g = _against_differences(gradient, lambda t: action(t)[0], theta, max(abs(value), 1.0))
        ratio_h = _against_differences(hessian, lambda t: action(t)[1], theta, max(float(np.max(np.abs(gradient))), 1.0))
        return at_most(max(ratio_g, ratio_h), 1.0,
                       note=f"worst |generated − FD| over its allowance: gradient {ratio_g:.2g}, Hessian {ratio_h:.2g} "
                            f"(allowance: 10× the central differences' own error at steps h, h/2, h/4 + round-off)",
                       figures={"gradient": ratio_g, "hessian": ratio_h, "coordinates": int(theta.size)},
                       labels=("|generated − FD| / allowance", "bound"))
    return check


def approaches_gp(s: SaddleSetting) -> Callable:
    """max |u(N) − u_GP| falls as 1/N over the window (N, 10N) where the O(1/N²) term is below 10⁻² of the O(1/N)
    one, chosen from the data (:func:`attnverify.saddle.gp_limit.approach_to_gp`): log-log slope −1 ± RATE_TOLERANCE;
    inconclusive where no resolvable window exists."""
    from .gp_limit import approach_to_gp

    def check(p, ctx) -> Evidence:
        action_values, temperature, data = s.problem(p, ctx.rng)
        gp = gp_point(s.declaration, raise_on_failure=False, **action_values)
        if not gp.is_minimum:  # where the solver stopped the entropy curves down (or overflows): no GP point
            return Evidence(holds=False, relation="custom", conditions={"the entropy has a minimum (the GP point)":
                                                                        False}, note=gp.message)
        try:
            out = approach_to_gp(s.declaration, data, temperature, action_values, ctx.backend,
                                 tolerance=TOLERANCE * 1e-2)
        except SaddlePointError as error:  # the solver fell short, where a minimum may still be
            return Evidence(holds=False, relation="custom", inconclusive=f"the solver did not reach it: {error}")
        if not out["widths"]:  # no window: nothing solved
            return Evidence(holds=False, relation="custom", figures=out, inconclusive=out["inconclusive"])
        conditions = {"the distance to the GP point falls with N": out["decreasing"],
                      "each solve reached a minimum": out["minima"]}
        note = (f"max |u(N) − u_GP|/max|u_GP| = {', '.join(f'{d:.3g}' for d in out['distances'])} at "
                f"{s.declaration.width.name} = {', '.join(f'{n:.3g}' for n in out['widths'])} (the window where "
                f"|O(1/N²)/O(1/N)| = {', '.join(f'{r:.2g}' for r in out['window_ratios'][-2:])})")
        if out["inconclusive"] or out["slope"] is None:
            return Evidence(holds=False, relation="custom", conditions=conditions, note=note, figures=out,
                            inconclusive=out["inconclusive"])
        return at_most(abs(out["slope"] + 1.0), RATE_TOLERANCE, note=f"{note}: slope {out['slope']:.4f}",
                       conditions=conditions, figures=out, labels=("|slope + 1|", "tolerance"))
    return check


def symmetric(s: SaddleSetting, data_map: Callable, order_map: Callable) -> Callable:
    def check(p, ctx) -> Evidence:
        action_values, temperature, data = s.problem(p, ctx.rng)
        one = solve(s.declaration, data, temperature=temperature, tolerance=TOLERANCE * 1e-2,
                    raise_on_failure=False, backend=ctx.backend, **action_values)
        other = solve(s.declaration, data_map(data, **{n: p[n] for n in map_parameters(data_map)}),
                      temperature=temperature, tolerance=TOLERANCE * 1e-2, raise_on_failure=False,
                      backend=ctx.backend, **action_values)
        expected = s.declaration.join(order_map(dict(one.order_parameters),
                                                **{n: p[n] for n in map_parameters(order_map)}))
        gap = float(np.max(np.abs(other.entries - expected)))
        allowance = 10 * (one.error_estimate + other.error_estimate)
        allowance = allowance if np.isfinite(allowance) else 0.0  # not minima: the condition below refutes
        return at_most(gap, allowance, scale=float(np.max(np.abs(expected))),
                       note=f"max |U(transformed data) − transformed U| = {gap:.3g} (10× the two solutions' error "
                            f"estimates: {allowance:.3g})",
                       conditions={"both solved, each a minimum": one.converged and other.converged and
                                   one.is_minimum and other.is_minimum},
                       labels=("gap", "allowance"))
    return check


SAMPLING = {"quick": dict(chains=8, warmup=300, draws=500), "thorough": dict(chains=8, warmup=600, draws=2000)}
"""The sampler's size per profile on the host: chains, warm-up and kept draws per chain (a device backend runs many
short chains instead, :func:`attnverify.saddle.sampling.sampler_size`)."""


TEST_KEYS = ("test_inputs", "y_test")
"""What the data adds for the sampled networks' generalisation error: the raw test inputs and their labels (with the
theory's ``C_test`` and ``C_test_diagonal``, or ``X_test``, as :func:`attnverify.saddle.predict.predict` reads them)."""


def _missing_test_data(data: Mapping) -> list[str]:
    """The keys of :data:`TEST_KEYS` and of the theory's test kernels (or features) that ``data`` lacks."""
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
    data has its test inputs and kernels (:func:`_missing_test_data`)."""
    from .network import GENERALISATION_ERROR
    from .predict import predict

    solution = solve(s.declaration, data, temperature=temperature, backend=backend, **action_values)
    values = {name: np.asarray(value, dtype=float) for name, value in solution.order_parameters.items()}
    if not _missing_test_data(data):
        values[GENERALISATION_ERROR] = np.asarray(
            predict(s.declaration, solution, data, data).generalisation_error(data["y_test"]).mean)
    return values


def check_network(s: SaddleSetting, network: Callable) -> None:
    """At registration: every parameter ``network`` names is one of the action's or the data function's."""
    _network_arguments(s, network, dict.fromkeys((*s.declaration.parameter_names, *s.data_parameters,
                                                  *s.structure)))


def _not_a_network_width(value, D: int) -> bool:
    """Whether ``value`` cannot be a sampled network's layer width: a whole number above D + 1 (the Wishart shift
    N − D − 1 must leave one); bools and non-numbers cannot."""
    return isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or \
        not np.isfinite(value) or float(value) != int(value) or value <= D + 1


def _registration_search(examples: int):
    """hypothesis's settings for a search at registration: ``examples`` draws, shrunk to the simplest, with no
    database, deadline or health check (a theory's strategies are searched, not tested)."""
    from hypothesis import HealthCheck, Phase, settings

    return settings(max_examples=examples, database=None, phases=[Phase.generate, Phase.shrink], deadline=None,
                    suppress_health_check=list(HealthCheck))


def _not_positive(value) -> bool:
    """Whether ``value`` cannot be an action parameter or a temperature (refused as
    :meth:`SaddlePointAction.parameter_values` refuses one)."""
    try:
        arguments.positive("value", value)
    except (TypeError, ValueError):
        return True
    return False


def _simplest_wrong_draw(strategy, wrong: Callable[[Any], bool]) -> tuple[Any] | None:
    """(the simplest draw of ``strategy`` that is ``wrong``,) found by a short hypothesis search at registration
    (50 draws, shrunk to the simplest: 0 for ``st.floats(0, 1)``), or None where none of them is: a strategy that
    draws such a value rarely may still pass here, and is then refused by name when it draws one."""
    from hypothesis import find
    from hypothesis.errors import NoSuchExample

    try:
        return (find(strategy, wrong, settings=_registration_search(50)),)
    except NoSuchExample:
        return None


def check_positive_strategies(s: SaddleSetting, strategies: Mapping[str, Any]) -> None:
    """At registration: the strategies of the action's parameters and of the temperature draw positive finite
    numbers (:func:`_simplest_wrong_draw`), so that a range reaching 0 is refused where it is written, not at its
    first example."""
    for name in (*s.declaration.parameter_names, "temperature"):
        if name not in strategies:
            continue  # the missing strategy is refused by name with the others
        try:
            found = _simplest_wrong_draw(strategies[name], _not_positive)
        except Exception:  # a strategy hypothesis cannot draw from is refused by name with the others
            continue
        if found is not None:
            raise ValueError(f"{name} must be a positive finite number (the action's parameters and the temperature "
                             f"are); its strategy draws {found[0]!r}")


def check_width_strategies(s: SaddleSetting, strategies: Mapping[str, Any]) -> None:
    """At registration, for sampled networks: each width's strategy draws whole numbers above D + 1 (the Wishart
    shift; :func:`_simplest_wrong_draw`)."""
    D = s.wishart_size
    for w in s.declaration.widths:
        if w.name not in strategies:
            continue  # the missing strategy is refused by name with the others
        found = _simplest_wrong_draw(strategies[w.name], lambda v: _not_a_network_width(v, D))
        if found is not None:
            raise ValueError(f"the sampled networks need {w.name} a whole number above {D + 1} (a layer's width, the "
                             f"Wishart shift N − D − 1 below it); its strategy draws {found[0]!r}")


def _network_arguments(s: SaddleSetting, network: Callable, values: dict) -> dict:
    """The parameters the theorist's ``network`` names (any of the action's and the data function's), by name."""
    wants = list(inspect.signature(network).parameters)
    unknown = [n for n in wants if n not in values]
    if unknown:
        raise TypeError(f"network names {', '.join(unknown)}, which is not a parameter of the action "
                        f"({', '.join(s.declaration.parameter_names)}), of {s.data.__name__} "
                        f"({', '.join(s.data_parameters) or 'none'})"
                        + (f" or of the family ({', '.join(s.structure)})" if s.structure else ""))
    return {n: values[n] for n in wants}


def _require_network_data(s: SaddleSetting, data: Mapping, test_error: bool) -> None:
    """The data carry what the sampled networks read: the raw ``inputs`` and, with ``test_error``, the test data
    (:func:`_missing_test_data`); else one line naming what the data function must also return."""
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
    (hypothesis's shrink target), returns what the networks read (:func:`_require_network_data`). A data function
    that fails there is left to the claims, which report it with the example that made it fail."""
    from hypothesis import find, strategies as st

    try:
        parameters = find(st.fixed_dictionaries({n: strategies[n] for n in s.data_parameters}), lambda _: True,
                          settings=_registration_search(1))
        data = s.draw(parameters, np.random.default_rng(0))
    except Exception:  # a missing strategy (refused by name with the others) or the data function's own failure,
        return  # which the claims report with the example that made it fail
    _require_network_data(s, data, test_error)


def _network_at(s: SaddleSetting, network: Callable, action_values: dict, data_parameters: dict, data: Mapping):
    """The theorist's network at ``action_values`` (every width a whole number, passed as an int), for data that
    carry the raw inputs the network reads."""
    _require_network_data(s, data, test_error=False)
    s.declaration.check_integer_widths(action_values)
    widths = {w.name: int(action_values[w.name]) for w in s.declaration.widths}
    return network(**_network_arguments(s, network, {**action_values, **data_parameters, **widths}))


def _sample(s: SaddleSetting, made, data: Mapping, temperature: float, seed: int, backend, sizes: dict,
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
        _network_at(s, network, action_values, named, data)


def _widths_note(declaration: SaddlePointAction, action_values: Mapping[str, Any]) -> str:
    return ", ".join(f"{w.name} = {int(action_values[w.name])}" for w in declaration.widths)


def prediction_at(s: SaddleSetting, action_values: dict, temperature: float, data: Mapping, backend=None):
    """The action's own posterior mean of its order parameters at ``action_values`` (:func:`~attnverify.saddle.
    posterior_mean`, method "auto": the quadrature for at most three scalars, else the next order of the Laplace
    expansion), each with its stated error and the saddle point beside it."""
    from .beyond import posterior_mean

    return posterior_mean(s.declaration, data, temperature=temperature, method="auto", backend=backend,
                          **action_values)


PREDICTION_SOURCE = {"quadrature": "quadrature", "laplace": "next-order Laplace", "hmc": "HMC on the action"}
"""How the allowance names the source of the prediction's error, by :attr:`Prediction.method`."""


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


@dataclass(frozen=True)
class Comparison:
    """One order parameter's sampled mean against the action's prediction: the gap, the allowance z·MCSE + the
    prediction's stated error (per entry), and the saddle point's gap beside it, in units of the same allowance."""

    name: str
    holds: bool
    worst: float          # max over entries of |sampled − prediction| / allowance
    saddle_worst: float   # the same for the saddle point alone: what comparing with it would have said
    note: str
    figures: dict


def compare_with_prediction(name: str, summary, prediction) -> Comparison:
    """``summary`` (a :class:`~attnverify.numerics.diagnostics.ChainSummary` of the sampled order parameter) against
    the action's own prediction (a :class:`~attnverify.saddle.beyond.Prediction`): holds where every entry's gap
    |sampled − E[u]| is within z·MCSE + the prediction's stated error, z from :meth:`ChainSummary.mcse_z` (at least
    5; Student's t with Bonferroni over the entries). The false-alarm rate where the action is exact is that of the
    z·MCSE bound alone (the stated error covers the prediction's own), ≤ the project's FALSE_ALARM per summary."""
    mean, error = np.asarray(prediction.mean[name], dtype=float), np.abs(np.asarray(prediction.error[name], float))
    saddle = np.asarray(prediction.saddle[name], dtype=float)
    sampled, mcse, z = np.asarray(summary.mean, dtype=float), np.asarray(summary.mcse, float), summary.mcse_z()
    if sampled.size != mean.size:
        raise ValueError(f"the network records {name} with shape {sampled.shape}, the action declares "
                         f"{mean.shape or 'a scalar'}")
    # a scalar order parameter may come as a 1 × 1 matrix (the network's records, the saddle's matrix form)
    monte_carlo = np.reshape(z * mcse, mean.shape)  # z per entry (Student's t) or one
    sampled, mcse, saddle, error = (a.reshape(mean.shape) for a in (sampled, mcse, saddle, error))
    allowed = monte_carlo + error
    gap, saddle_gap = np.abs(sampled - mean), np.abs(sampled - saddle)
    worst, saddle_worst = float(np.max(gap / allowed)), float(np.max(saddle_gap / allowed))
    source = PREDICTION_SOURCE[prediction.method]
    note = (f"{name}: sampled {_shown(sampled)} ± {_shown(mcse)} against the action's prediction {_shown(mean)} "
            f"({source}), the saddle point {_shown(saddle)}; allowance {_one_z(z)} MCSE = {_shown(monte_carlo)} + "
            f"prediction error {_shown(error)} ({source}) = {_shown(allowed)}; gap {_shown(gap)}, "
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


def _compare_with_budget(name: str, summary, theory: Mapping, shifted: Mapping, D: int, width: int) -> Comparison:
    """The generalisation error (no prediction of it beyond the saddle point yet) against the saddle point's within
    z MCSE + the O(1/N) budget of :func:`_finite_width_budget`."""
    U = theory[name]
    budget = _finite_width_budget(U, shifted[name], D, width)
    allowed = summary.mcse_z() * summary.mcse + budget
    gap = np.abs(np.asarray(summary.mean) - U)
    worst = float(np.max(gap / allowed))
    note = (f"{name}: sampled {_shown(summary.mean)} ± {_shown(summary.mcse)}, the saddle point {_shown(U)}; "
            f"allowance {_one_z(summary.mcse_z())} MCSE + the O(1/N) budget {_shown(budget)} = {_shown(allowed)}")
    return Comparison(name, bool(np.all(gap <= allowed)), worst, worst, note, {})


def _comparisons(s: SaddleSetting, sampled, action_values: dict, temperature: float, data: Mapping, width: int,
                 test_error: bool, backend) -> list[Comparison]:
    """Each recorded quantity the claim judges: the order parameters against the action's prediction
    (:func:`compare_with_prediction`), or with ``test_error`` the generalisation error against the saddle point's
    (:func:`_compare_with_budget`)."""
    from .network import GENERALISATION_ERROR

    names = [name for name in sampled.summaries if (name == GENERALISATION_ERROR) == test_error]
    declared = {op.name for op in s.declaration.order_parameters}
    unknown = [name for name in names if name not in declared and name != GENERALISATION_ERROR]
    if unknown:
        raise ValueError(f"the network estimates {unknown[0]!r}, which the action does not declare")
    if not test_error:
        prediction = prediction_at(s, action_values, temperature, data, backend)
        return [compare_with_prediction(name, sampled.summaries[name], prediction) for name in names]
    D = s.wishart_size
    theory = theory_at(s, action_values, temperature, data, backend)
    shifted = theory_at(s, s.declaration.with_widths(action_values, lambda n: n - D - 1), temperature, data, backend)
    return [_compare_with_budget(name, sampled.summaries[name], theory, shifted, D, width) for name in names]


def sampled_networks_match(s: SaddleSetting, network: Callable, test_error: bool = False) -> Callable:
    """Networks sampled from the posterior (the readout integrated out, :mod:`attnverify.saddle.network`) have the
    action's own posterior mean of the order parameters (:func:`prediction_at`: quadrature or next-order Laplace)
    within z MCSE + that prediction's stated error (:func:`compare_with_prediction`), the saddle point printed
    beside it; with ``test_error``, their generalisation error on the data's test inputs (:data:`TEST_KEYS`) the
    saddle point's within z MCSE + the O(1/N) budget of :func:`_finite_width_budget`. Unconverged chains (R-hat/ESS
    gate, over every quantity recorded) make the example inconclusive."""
    from .sampling import sampler_size

    def check(p, ctx) -> Evidence:
        action_values, temperature, data, width, made = _drawn_network(s, network, p, ctx.rng)
        D = s.wishart_size
        if width <= D + 1:
            raise ValueError(f"every width must exceed {D + 1} (the Wishart shift N − D − 1) for the sampled "
                             f"networks, got {_widths_note(s.declaration, action_values)}")
        sampled = _sample(s, made, data, temperature, int(ctx.rng.integers(2**31)), ctx.backend,
                          sampler_size(ctx.backend, **ctx.choose(**SAMPLING)), test_error)
        compared = _comparisons(s, sampled, action_values, temperature, data, width, test_error, ctx.backend)
        within = "prediction error" if not test_error else "budget"
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
    differences of the potential (:func:`_against_differences`) along :data:`DIRECTIONS` random unit directions,
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

        ratio = _against_differences(directions.T @ gradient[0], along, np.zeros(DIRECTIONS),
                                     max(abs(float(potential[0])), 1.0))
        return at_most(ratio, 1.0, note=f"worst |VJP gradient − FD| over its allowance {ratio:.2g}, along "
                                        f"{DIRECTIONS} random directions of the {posterior.size} weights at "
                                        f"N = {width}",
                       figures={"weights": posterior.size, "ratio": ratio},
                       labels=("|VJP − FD| / allowance", "bound"))
    return check


def sampled_networks_figure(s: SaddleSetting, network: Callable, fixed: Mapping[str, Any],
                            name: str | None = None) -> Callable:
    """``figure(rng) -> dict`` (the fields of a :class:`attnverify.theory_form.TheoryVsSimulation`, which the theory
    wraps it in): the order parameter ``name`` (the kernel's by default; its trace when it is a matrix) against
    1/n along the one width ``n`` that ``fixed`` gives as a sequence (every other parameter, other layers' widths
    included, one value), networks sampled at each of those widths as mean ± MCSE at the quick tier's sampler size
    (none where the network estimates no ``name``: the caption says so), and the theory's curve at the same values:
    from the GP point (1/n = 0) where n is the action's only width, from 1/(24·n_min) where other layers stay finite
    (there n → ∞ is not the GP limit). Widths are checked to be whole numbers above D + 1 here, at definition. The
    theory registers one per order parameter."""
    from ..numerics.diagnostics import summarize
    from ..numerics.statistics import Estimate

    width_names = [w.name for w in s.declaration.widths]
    wanted = set(s.declaration.parameter_names) | {"temperature"} | set(s.data_parameters) | set(s.structure)
    wrong = name_mismatch(sorted(fixed), sorted(wanted), unknown="figure values naming nothing:")
    if wrong:
        raise TypeError("saddle_point figure=: give one value for each of the action's parameters, temperature and "
                        f"the data function's, and a sequence of widths for one of {', '.join(width_names)}" + wrong)
    swept = [key for key in sorted(fixed) if key in wanted - set(s.data_parameters) - set(s.structure)
             and np.ndim(fixed[key]) > 0]
    if len(swept) != 1 or swept[0] not in width_names:
        raise ValueError(f"saddle_point figure=: exactly one width ({' or '.join(width_names)}) takes a sequence (the "
                         f"figure's one axis), every other parameter one value; got sequences for "
                         f"{', '.join(swept) or 'none'}")
    width_name = swept[0]
    D = s.wishart_size
    given = np.atleast_1d(fixed[width_name]).tolist()
    others = {n: fixed[n] for n in width_names if n != width_name}
    bad = [f"{n} = {v!r}" for n, v in [*((width_name, w) for w in given), *others.items()]
           if _not_a_network_width(v, D)]
    widths = [] if bad else sorted({int(w) for w in given})
    if bad or len(widths) < 2:
        raise ValueError(f"saddle_point figure=: the sampled networks need whole widths above {D + 1} (the Wishart "
                         f"shift), at least two of {width_name}; got " + (", ".join(bad) if bad else f"{widths}"))
    kernel = s.declaration.kernel.name if name is None else name
    if kernel not in [op.name for op in s.declaration.order_parameters]:
        raise ValueError(f"name must be an order parameter of the action "
                         f"({', '.join(op.name for op in s.declaration.order_parameters)}), got {kernel!r}")
    size = next(op.size for op in s.declaration.order_parameters if op.name == kernel)
    alone = len(width_names) == 1
    held = ", ".join(f"{n} = {int(float(v))}" for n, v in others.items())
    limit = (f"from the GP limit (1/{width_name} = 0)" if alone else
             f"with {held} held fixed (1/{width_name} → 0 is not the GP limit while "
             f"{'it stays' if len(others) == 1 else 'they stay'} finite)")

    def scalar(value) -> float:
        value = np.asarray(value, dtype=float)
        return float(np.trace(value)) if value.ndim == 2 else float(value)

    def measure(rng: np.random.Generator) -> dict:
        """The sweep's numbers: the saddle's curve, and at each sampled width the networks' estimate, the action's
        prediction with its stated error and the saddle point (the trace of each, for a matrix)."""
        action_values, temperature, data_parameters = s.split({**fixed, width_name: float(widths[0])})
        data = s.draw(data_parameters, rng)
        grid = np.linspace(0.0, 1.0 / widths[0], 25)[1:]
        curve, start = ([scalar(gp_point(s.declaration, **action_values)[kernel])] if alone else []), None
        for inverse in grid:  # from the widest: continuation from the GP side
            solution = solve(s.declaration, data, temperature=temperature, start=start,
                             **{**action_values, width_name: 1.0 / inverse})
            start = solution
            curve.append(scalar(solution[kernel]))
        estimates, unconverged, sampled_widths = [], [], []
        for width in widths:
            made = _network_at(s, network, {**action_values, width_name: width},
                               {**data_parameters, **{n: fixed[n] for n in s.structure}}, data)
            sampled = _sample(s, made, data, temperature, int(rng.integers(2**31)), None, SAMPLING["quick"])
            if kernel not in sampled.draws:
                break  # the network estimates no such order parameter: the theory's curve alone
            sampled_widths.append(width)
            draws = sampled.draws[kernel]  # (C, draws) or (C, draws, n, n)
            summary = summarize(np.trace(draws, axis1=2, axis2=3) if draws.ndim == 4 else draws)
            estimates.append(Estimate(mean=float(summary.mean), standard_error=float(summary.mcse),
                                      samples=int(draws.shape[0] * draws.shape[1])))
            if not (summary.converged and all(one.converged for one in sampled.summaries.values())):
                unconverged.append(width)
        predictions = [prediction_at(s, {**action_values, width_name: float(w)}, temperature, data)
                       for w in sampled_widths]
        # the trace's error bounded by the sum of the diagonal's (each entry's stated error bounds its own)
        errors = [float(np.sum(np.diag(np.atleast_2d(one.error[kernel])))) for one in predictions]
        return dict(curve=curve, theory_x=[*([0.0] if alone else []), *grid], widths=sampled_widths,
                    estimates=estimates, unconverged=unconverged, predictions=predictions,
                    predicted=[scalar(one.mean[kernel]) for one in predictions], prediction_errors=errors,
                    saddles=[scalar(one.saddle[kernel]) for one in predictions], width_name=width_name,
                    label=f"tr {kernel}" if size else kernel)

    def figure(rng: np.random.Generator) -> dict:
        m = measure(rng)
        curve, theory_x, sampled_widths, estimates = m["curve"], m["theory_x"], m["widths"], m["estimates"]
        label, unconverged, predictions = m["label"], m["unconverged"], m["predictions"]
        if not sampled_widths:
            return dict(x=[], estimates=[], theory=curve, theory_x=theory_x, xlabel=f"1/{width_name}",
                        ylabel=label, caption=f"{label}: the saddle point {limit}; the network estimates no {kernel}, "
                                              "so no sampled networks are drawn.")
        source = PREDICTION_SOURCE[predictions[0].method]
        return dict(
            x=[1.0 / w for w in sampled_widths], estimates=estimates, theory=curve, theory_x=theory_x,
            xlabel=f"1/{width_name}", ylabel=label, theory_label="saddle point",
            curves=((f"the action's prediction ({source})", [1.0 / w for w in sampled_widths], m["predicted"]),),
            caption=f"{label}: the saddle point {limit}, the action's own posterior mean ({source}, at the sampled "
                    f"widths; largest stated error {max(float(np.max(one.error[kernel])) for one in predictions):.2g}) "
                    f"and networks sampled from the posterior at {width_name} = "
                    f"{', '.join(map(str, sampled_widths))} (HMC, readout integrated out; Markov chain standard "
                    "errors, from the effective sample size). "
                    + gap_order_sentence(sampled_widths, [e.mean for e in estimates],
                                         [e.standard_error for e in estimates], m["saddles"], width_name) + " "
                    + (f"Not converged (R-hat/ESS) at {width_name} = {unconverged}." if unconverged
                       else "Every width passed the R-hat/ESS gate."))

    figure.measure = measure  # the width claim reads the same numbers
    return figure


RESOLVED_GAP = 3.0
"""A gap between networks and saddle point enters the width fit only where it exceeds this many of its standard
errors (its logarithm's error, SE/gap, is then below 1/3 and the linearised error of the log holds)."""


def gap_slope(widths, sampled, errors, saddle) -> tuple[float, float] | None:
    """(slope, standard error) of ln|sampled − saddle| against ln N over the widths, by weighted least squares with
    the linearised variance (SE/gap)² of each log gap (the saddle values exact): the order at which the theory's gap
    closes, −1 where the saddle point is right to O(1/N) and its O(1/N) term does not vanish. None where fewer than
    two gaps exceed :data:`RESOLVED_GAP` standard errors (the slope is not resolved)."""
    from ..numerics.statistics import fit_line

    widths, sampled = np.asarray(widths, dtype=float), np.asarray(sampled, dtype=float)
    errors, gaps = np.asarray(errors, dtype=float), np.abs(sampled - np.asarray(saddle, dtype=float))
    kept = gaps > RESOLVED_GAP * errors
    if kept.sum() < 2:
        return None
    fit = fit_line(np.log(widths[kept]), np.log(gaps[kept]), standard_errors=errors[kept] / gaps[kept])
    return fit.slope, fit.slope_standard_error


def gap_order_sentence(widths, sampled, errors, saddle, width_name: str) -> str:
    """The caption's sentence on :func:`gap_slope`: the fitted slope ± its standard error against the −1 of a
    saddle point right to O(1/N), or why none is given."""
    fitted = gap_slope(widths, sampled, errors, saddle)
    if fitted is None:
        return (f"The gap between networks and saddle point is resolved (> {RESOLVED_GAP:g} SE) at fewer than two "
                f"widths: no slope is fitted.")
    slope, error = fitted
    return (f"The gap between networks and saddle point falls as {width_name}^({slope:.3g} ± {error:.2g}) (fitted "
            f"slope of ln|gap| against ln {width_name} ± its standard error; a saddle point right to O(1/{width_name}) "
            f"gives −1, {abs(slope + 1) / error:.1f} SE away).")


def gap_closes_at_the_theory_order(s: SaddleSetting, network: Callable, fixed: Mapping[str, Any]) -> Callable:
    """The width claim over ``figure=``'s widths (:func:`gap_order_evidence`), from the same sweep of networks and
    predictions as its figure (the kernel's order parameter; its trace for a matrix)."""
    sweep = sampled_networks_figure(s, network, fixed)

    def check(p, ctx) -> Evidence:
        m = sweep.measure(ctx.rng)
        if len(m["widths"]) < 2:
            return Evidence(holds=False, relation="custom",
                            inconclusive=f"the network estimates {m['label']} at fewer than two widths")
        return gap_order_evidence(m["widths"], [e.mean for e in m["estimates"]],
                                  [e.standard_error for e in m["estimates"]], m["saddles"], m["predicted"],
                                  m["prediction_errors"], m["width_name"], m["unconverged"])
    return check


WIDTH_Z = 5.0
"""Standard errors of the networks' fitted slope the width claim allows (beyond the prediction's own bias)."""


def gap_order_evidence(widths, sampled, errors, saddles, predicted, prediction_errors, width_name: str,
                       unconverged=()) -> Evidence:
    """The width claim: the gap between networks and saddle point closes at the order the theory states. Over the
    widths where the gap is resolved (> :data:`RESOLVED_GAP` SE), the networks' slope of ln|gap| against ln N
    (:func:`gap_slope`, weighted by the linearised variances) against the theory's: the same weighted fit of
    ln|E_N − u*_N|, the action's own prediction less the saddle point (−1 plus the curvature its next order
    carries). Holds where they differ by at most :data:`WIDTH_Z` SE + the bias the prediction's stated error e_N
    allows (each log gap moved by up to −ln(1 − r_N), r_N = e_N/|E_N − u*_N|, through the fit's coefficients);
    inconclusive where fewer than two gaps are resolved, a width did not converge, or some r_N ≥ 1 (no order to
    compare: the stated error is as large as the shift)."""
    widths, sampled, errors = (np.asarray(v, dtype=float) for v in (widths, sampled, errors))
    saddles, predicted, prediction_errors = (np.asarray(v, dtype=float) for v in (saddles, predicted,
                                                                                  prediction_errors))
    gaps, shifts = np.abs(sampled - saddles), np.abs(predicted - saddles)
    kept = gaps > RESOLVED_GAP * errors
    figures = {"widths": widths.tolist(), "gaps": gaps.tolist(), "standard_errors": errors.tolist(),
               "predicted_shifts": shifts.tolist(), "prediction_errors": prediction_errors.tolist()}
    if unconverged:
        return Evidence(holds=False, relation="custom", figures=figures,
                        inconclusive=f"the sampler has not converged at {width_name} = {list(unconverged)}: its Monte "
                                     "Carlo errors do not count; draw more")
    if kept.sum() < 2:
        return Evidence(holds=False, relation="custom", figures=figures,
                        inconclusive=f"the gap between networks and saddle point is resolved (> {RESOLVED_GAP:g} SE) "
                                     f"at fewer than two of {width_name} = {widths.astype(int).tolist()}: draw more")
    ratio = prediction_errors[kept] / shifts[kept]
    if np.any(ratio >= 1):
        return Evidence(holds=False, relation="custom", figures=figures,
                        inconclusive="the prediction's stated error is as large as its shift from the saddle point at "
                                     f"{width_name} = {widths[kept][ratio >= 1].astype(int).tolist()}: no order to "
                                     "compare")
    slope, se = gap_slope(widths, sampled, errors, saddles)
    x, weights = np.log(widths[kept]), (gaps[kept] / errors[kept]) ** 2  # 1/(SE of ln|gap|)²
    centred = x - np.sum(weights * x) / np.sum(weights)
    coefficients = weights * centred / np.sum(weights * centred ** 2)  # slope = Σ c_i ln|gap_i|
    theory = float(coefficients @ np.log(shifts[kept]))
    bias = float(np.abs(coefficients) @ -np.log1p(-ratio))
    difference = abs(slope - theory)
    figures.update(slope=slope, slope_standard_error=se, theory_slope=theory, bias=bias)
    return at_most(difference, WIDTH_Z * se + bias,
                   note=f"ln|networks − saddle| falls as {width_name}^({slope:.3g} ± {se:.2g}) over {width_name} = "
                        f"{widths[kept].astype(int).tolist()}; the action's prediction less the saddle point as "
                        f"{width_name}^({theory:.3g}); allowed {WIDTH_Z:g} SE + the prediction's stated-error bias "
                        f"{bias:.2g}",
                   figures=figures, labels=("|networks' slope − theory's|", "allowance"))


EQUATIONS_SHOWN = 12
"""How many saddle-point equations the report writes out (one per independent entry; the rest alike)."""


def action_derivation(declaration: SaddlePointAction) -> Callable:
    """``function(step)`` recording the declared action and its saddle-point equations, for the report: S = ½E + 𝓛
    with the declared 𝓛, then ∂S/∂u = 0 for the entries u of each order parameter (sympy's derivatives of 𝓛; for the
    kernel's, ½∂E/∂u = ½[Tr((K + T·I)⁻¹C_ab) − rᵀC_ab r] beside them, r = (K + T·I)⁻¹Y). Definitions: what the
    solver solves, generated, not a chain of steps to check (the generated derivatives are checked against finite
    differences by ``saddle_gradient_matches_finite_differences``)."""
    S, E = sympy.symbols("S E")
    kernel = declaration.kernel

    def printed(expression):  # the parameters as the declaration's display= names them
        return expression.xreplace(declaration.display) if declaration.display else expression

    def derive(step) -> None:
        step(f"The action: E = ln det(K + T·I) + Yᵀ(K + T·I)⁻¹Y with the kernel K linear in {kernel.name} "
             f"(K = Σ_ab {kernel.name}_ab C_ab); 𝓛 as declared", sympy.Eq(S, E / 2 + printed(declaration.entropy)),
             kind="definition")
        shown = 0
        for op in declaration.order_parameters:
            for u in op.symbols:
                if shown == EQUATIONS_SHOWN:
                    break
                left = printed(sympy.diff(declaration.entropy, u))
                if op is kernel:
                    left += sympy.Derivative(E, u) / 2
                step(f"The saddle-point equation of {u}" + (" (the energy's part: ½[Tr((K + T·I)⁻¹C) − rᵀCr])"
                                                            if op is kernel else ""),
                     sympy.Eq(left, 0), kind="definition")
                shown += 1
        if shown < declaration.size:
            step(f"… and likewise for the other {declaration.size - shown} entries",
                 sympy.Eq(sympy.Symbol("∂S/∂u"), 0), kind="definition")
    return derive
