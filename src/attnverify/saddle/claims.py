"""The claims every declared saddle-point theory gets without writing them: the saddle-point equations hold at the
answer and the Hessian is positive; the generated gradient and Hessian equal finite differences; U(N) → U_GP at rate
1/N; and the symmetries the theorist declares; with the setting they share (one declaration, or a family over drawn
structure) and the registration-time checks of its strategies. With ``network=`` the theory also gets
`network_claims`, with ``figure=`` `width_claims`.

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
from ..checks.comparisons import at_most
from ..checks.evidence import Evidence
from .action import NumericAction
from .declaration import SaddlePointAction
from .solve import SaddlePointError, data_energy, domain_point, gp_point, solve

TOLERANCE = 1e-9
"""The saddle-point equations' tolerance, max |∂(S/N)/∂e| (the relative entries, `NumericAction.residual`)."""

RATE_TOLERANCE = 0.05
"""How far the log-log slope of max |u(N) − u_GP| over the last decade N → 10N may lie from −1."""


@dataclass(frozen=True)
class SaddleSetting:
    """What the claims of one declared action share: the declaration, the data function and the names of the
    drawn parameters that go to each. For a family of declarations (a function of drawn structural parameters,
    e.g. the heads, returning a [`SaddlePointAction`][attnverify.saddle.SaddlePointAction]), ``family`` and its
    ``structure`` names, and ``declaration`` is its member at the structure's simplest draw (what registration checks
    and the report prints); [`at`][attnverify.saddle.sweep.Sweep.at] gives the member of a draw."""

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
        member = _member(self.family, structure)
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


def family_member(declaration, strategies: Mapping[str, Any]) -> tuple[SaddlePointAction, dict[str, Any]]:
    """(the declaration, {}) or, for a family, (its member at the structural parameters' simplest draws,
    hypothesis's shrink target, and those draws by name: the structure)."""
    if not _is_family(declaration):
        return declaration, {}
    from hypothesis import find, strategies as hst

    structure = tuple(inspect.signature(declaration).parameters)
    missing = [n for n in structure if n not in strategies]
    if not structure or missing:
        raise TypeError(f"the family {declaration.__name__} takes the structure it is drawn at as parameters, each "
                        f"with a strategy" + (f": give one for {', '.join(missing)}" if missing else ""))
    simplest = find(hst.fixed_dictionaries({n: strategies[n] for n in structure}), lambda _: True,
                    settings=registration_search(1))
    return _member(declaration, simplest), simplest


def _member(family: Callable, structure: Mapping[str, Any]) -> SaddlePointAction:
    """The family's declaration at ``structure``, checked to be one."""
    member = family(**structure)
    if not isinstance(member, SaddlePointAction):
        raise TypeError(f"the family {family.__name__} must return a SaddlePointAction, got {type(member).__name__} "
                        f"at {structure}")
    return member


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
                       labels=("max |∂(S/N)/∂e|", "tolerance"))
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


def against_differences(analytic: np.ndarray, f, x: np.ndarray, size: float, h: float = 1e-4) -> float:
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
        ratio_g = against_differences(gradient, lambda t: action(t)[0], theta, max(abs(value), 1.0))
        ratio_h = against_differences(hessian, lambda t: action(t)[1], theta, max(float(np.max(np.abs(gradient))), 1.0))
        return at_most(max(ratio_g, ratio_h), 1.0,
                       note=f"worst |generated − FD| over its allowance: gradient {ratio_g:.2g}, Hessian {ratio_h:.2g} "
                            f"(allowance: 10× the central differences' own error at steps h, h/2, h/4 + round-off)",
                       figures={"gradient": ratio_g, "hessian": ratio_h, "coordinates": int(theta.size)},
                       labels=("|generated − FD| / allowance", "bound"))
    return check


def approaches_gp(s: SaddleSetting) -> Callable:
    """max |u(N) − u_GP| falls as 1/N over the window (N, 10N) where the O(1/N²) term is below 10⁻² of the O(1/N)
    one, chosen from the data (`attnverify.saddle.gp_limit.approach_to_gp`): log-log slope −1 ± RATE_TOLERANCE;
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


def registration_search(examples: int):
    """hypothesis's settings for a search at registration: ``examples`` draws, shrunk to the simplest, with no
    database, deadline or health check (a theory's strategies are searched, not tested)."""
    from hypothesis import HealthCheck, Phase, settings

    return settings(max_examples=examples, database=None, phases=[Phase.generate, Phase.shrink], deadline=None,
                    suppress_health_check=list(HealthCheck))


def _not_positive(value) -> bool:
    """Whether ``value`` cannot be an action parameter or a temperature (refused as
    [`SaddlePointAction.parameter_values`][attnverify.saddle.SaddlePointAction.parameter_values] refuses one)."""
    try:
        arguments.positive("value", value)
    except (TypeError, ValueError):
        return True
    return False


def simplest_wrong_draw(strategy, wrong: Callable[[Any], bool]) -> tuple[Any] | None:
    """(the simplest draw of ``strategy`` that is ``wrong``,) found by a short hypothesis search at registration
    (50 draws, shrunk to the simplest: 0 for ``st.floats(0, 1)``), or None where none of them is: a strategy that
    draws such a value rarely may still pass here, and is then refused by name when it draws one."""
    from hypothesis import find
    from hypothesis.errors import NoSuchExample

    try:
        return (find(strategy, wrong, settings=registration_search(50)),)
    except NoSuchExample:
        return None


def check_positive_strategies(s: SaddleSetting, strategies: Mapping[str, Any]) -> None:
    """At registration: the strategies of the action's parameters and of the temperature draw positive finite
    numbers (`simplest_wrong_draw`), so that a range reaching 0 is refused where it is written, not at its
    first example."""
    for name in (*s.declaration.parameter_names, "temperature"):
        if name not in strategies or name in s.declaration.real_parameters:
            continue  # the missing strategy is refused by name with the others; a real parameter takes any number
        try:
            found = simplest_wrong_draw(strategies[name], _not_positive)
        except Exception:  # a strategy hypothesis cannot draw from is refused by name with the others
            continue
        if found is not None:
            raise ValueError(f"{name} must be a positive finite number (the action's parameters and the temperature "
                             f"are); its strategy draws {found[0]!r}")


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
