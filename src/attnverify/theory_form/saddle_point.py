"""What [`Theory.saddle_point`][attnverify.theory_form.Theory.saddle_point] registers for a declared action: its
claims, built from `attnverify.saddle.claims`, `.network_claims` and `.width_claims` and checked together before
any registers (all or nothing), the figures of sampled networks against 1/N, and the derivation of the action and
its saddle-point equations, once per declaration (`SaddleEquations`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

from ..checks.claim import PROFILES, claim_examples, claim_parameters
from .derived import DerivationHandle
from .figures import FigureMaker, TheoryVsSimulation
from .monte_carlo import bias_at, checked_option, per_profile
from .signatures import accepts_the_drawn, options_not_strategies


@dataclass(frozen=True)
class SaddleClaims:
    """One registration's claims, as (name, check, statement): ``drawn`` at the drawn parameters, ``at_figure`` at
    the figure's one setting (``figure_parameters``); its ``figures``; the declaration's ``member`` at the family's
    ``simplest`` draw (the declaration itself, and {}, for one action)."""

    drawn: list
    at_figure: list
    figure_parameters: Any
    figures: list
    member: Any
    simplest: dict


class SaddlePointOptions:
    """The options of one ``saddle_point`` call, checked when it is made: ``parameters`` (the strategies as one),
    ``prefix`` of the claims' names, ``counts`` (examples per profile); `build` makes the claims for the data
    function."""

    def __init__(self, theory: str, declaration, *, name: str, symmetries: dict | None, network, test_error: bool,
                 figure: dict | None, bias, source: str, examples: dict | None, expect: dict | None,
                 strategies: dict):
        options_not_strategies("saddle_point", strategies, name=name, symmetries=symmetries, network=network,
                               figure=figure, test_error=test_error, bias=bias, source=source, examples=examples,
                               expect=expect)
        checked_option("bias", bias, PROFILES, function=True, zero=True)
        accepts_the_drawn(bias, tuple(strategies), "bias")
        for option, given in (("figure", figure is not None), ("test_error", bool(test_error)),
                              ("bias", bias is not None)):
            if given and network is None:
                raise TypeError(f"saddle_point {option}= compares sampled networks with the theory: it needs network=")
        self.label = f"{theory}.{name or 'saddle_point'}"
        self.parameters = claim_parameters(strategies, self.label)
        self.prefix = f"{name}_" if name else ""
        self.counts = {"quick": 3, "thorough": 20} if examples is None else claim_examples(examples, self.label)
        self.theory, self.declaration, self.symmetries, self.network = theory, declaration, symmetries, network
        self.test_error, self.figure, self.bias, self.expect = test_error, figure, bias, expect or {}
        self.strategies = strategies

    def expected(self, claim_name: str) -> str:
        """The verdict ``expect=`` states for a claim (by its name without the prefix), else "holds"."""
        return self.expect.get(claim_name, "holds")

    def _stated_bias(self, p, ctx) -> float:
        """The bias budget at the drawn parameters, one number."""
        value = bias_at(per_profile(self.bias, ctx.profile), p)
        if np.ndim(value) != 0:
            raise ValueError(f"bias must give one number (a budget for every entry of the order parameters), "
                             f"got {np.size(value)}")
        return float(value)

    def build(self, function: Callable, taken: set[str]) -> SaddleClaims:
        """The claims and figures for the data function ``function``, every check made before any is registered;
        ``taken``, the theory's claim names so far (a clash is refused, naming name=)."""
        from ..saddle import claims as saddle_claims, network_claims, width_claims

        declaration, strategies, network, prefix = self.declaration, self.strategies, self.network, self.prefix
        bias_text = "" if self.bias is None else " + the stated bias budget"
        stated_bias = None if self.bias is None else self._stated_bias
        member, simplest = saddle_claims.family_member(declaration, strategies)
        mapped = tuple(n for maps in (self.symmetries or {}).values() for f in maps
                       for n in saddle_claims.map_parameters(f))
        s = saddle_claims.setting(member, function, tuple(strategies), None if member is declaration
                                  else declaration, tuple(simplest), mapped)
        saddle_claims.check_positive_strategies(s, strategies)

        def each(factory, *args):  # a family's checks are built for each draw's member
            return saddle_claims.for_each_draw(factory, s, *args)

        made = [
            ("saddle_point_is_a_minimum", each(saddle_claims.is_a_minimum),
             "The action has a minimum the solver reaches at the drawn parameters and data: the saddle-point "
             "equations hold (max |∂(S/N)/∂e| ≤ 1e-9 over the order parameters' relative entries e) and the "
             "Hessian over the order parameters' entries is positive definite."),
            ("saddle_gradient_matches_finite_differences", each(saddle_claims.gradient_matches_finite_differences),
             "The generated gradient and Hessian of S/N (entropy differentiated by sympy, energy by the matrix "
             "formulas, chained to the Cholesky coordinates) equal central differences at a random point near "
             "the GP point, within 10× the differences' own error (h vs h/2 vs h/4) plus round-off."),
            ("saddle_point_approaches_gp", each(saddle_claims.approaches_gp),
             "U(N) → U_GP at rate 1/N: max |u(N) − u_GP| falls with N, with log-log slope −1 ± 0.05 over "
             "the first decade N → 10N (from 10² times the drawn widths, all scaled alike) where the O(1/N²) "
             "term is below 10⁻² of the O(1/N) term at the GP point; inconclusive where the solves cannot "
             "resolve such a window."),
        ]
        for label, (data_map, order_map) in (self.symmetries or {}).items():
            made.append((f"symmetric_under_{label}", each(saddle_claims.symmetric, data_map, order_map),
                         f"Symmetry '{label}': the saddle point on the transformed data is the transformed saddle "
                         f"point, within 10× the two solutions' error estimates."))
        if network is not None:
            network_claims.check_network(s, network)
            network_claims.check_width_strategies(s, strategies)
            made.append(("network_gradient_matches_finite_differences",
                         each(network_claims.network_gradient_matches_finite_differences, network),
                         "The collapsed potential's gradient through the network's vector–Jacobian product "
                         f"equals central differences along {network_claims.DIRECTIONS} random directions, within "
                         "10× their own error "
                         "(steps h, h/2, h/4) plus round-off, at prior weights."))
            made.append(("sampled_networks_match_theory",
                         each(network_claims.sampled_networks_match, network, False, stated_bias),
                         "Networks sampled from the posterior (HMC, the readout integrated out exactly) have the "
                         "action's own posterior mean of the order parameters under e^{−S} (quadrature for at "
                         "most three scalars, else the next order of the Laplace expansion) within z MCSE "
                         f"(z ≥ 5) + that prediction's stated error{bias_text}; the saddle point is printed beside "
                         "it; unconverged chains are inconclusive."))
        if self.test_error:
            made.append(("sampled_networks_generalise_as_theory",
                         each(network_claims.sampled_networks_match, network, True, stated_bias),
                         "Networks sampled from the posterior have the theory's generalisation error on the test "
                         "inputs, ε_g = mean_t (⟨f(x_t)⟩ − y_t)² + ⟨δf(x_t)²⟩: the action's own posterior mean of "
                         "ε_g(q) under e^{−S} (quadrature, for at most three scalars) within z MCSE (z ≥ 5) + its "
                         "stated error, else the saddle point's within z MCSE + the O(1/N) budget "
                         f"max((D + 1)/N·ε, |ε(N) − ε(N − D − 1)|){bias_text}; unconverged chains are "
                         "inconclusive."))
        single, sweeps, kernel = [], {}, None  # claims at the figure's one setting (one example each); its figures
        if self.figure is not None:
            drawn = s.at(self.figure)  # a family's member at the figure's structure
            kernel = drawn.declaration.kernel.name
            sweep = width_claims.NetworkSweep(drawn, network, self.figure, f"{self.theory}.{prefix}saddle_point")
            for op in sorted(drawn.declaration.order_parameters, key=lambda op: op.name != kernel):
                sweeps[op.name] = width_claims.sampled_networks_figure(sweep, op.name)
            single.append(("sampled_gap_closes_at_the_theory_order",
                           width_claims.gap_closes_at_the_theory_order(sweep, stated_bias),
                           "Over the figure's widths, the gap between sampled networks and the saddle point closes "
                           "at the order the theory states: the fitted slope of ln|networks − saddle| against "
                           "ln N (± its standard error) equals that of the action's own prediction less the saddle "
                           f"point within {width_claims.WIDTH_Z:g} SE + the bias the prediction's stated error "
                           f"allows, and where a gap exceeds {width_claims.WIDTH_Z:g} SE{bias_text} the networks lie "
                           "on the prediction's side of the saddle point; inconclusive where fewer than two gaps are "
                           "resolved or the sampler has not converged."))
        made_names = {claim_name for claim_name, _, _ in made + single}
        unknown = sorted(set(self.expect) - made_names)
        if unknown:
            raise ValueError(f"saddle_point expect= names {', '.join(unknown)}, not among its claims "
                             f"({', '.join(sorted(made_names))})")
        clash = sorted({f"{self.theory}.{prefix}{claim_name}" for claim_name in made_names} & taken)
        if clash:
            raise ValueError(f"theory {self.theory} already has {', '.join(clash)}: give this saddle_point a name= "
                             "(it prefixes its claims)")
        figures = []
        for op_name, fields in sweeps.items():  # one figure per order parameter, the kernel's under the plain name
            suffix = "" if op_name == kernel else f"_{op_name}"
            figures.append(FigureMaker(prefix + "sampled_networks_vs_theory" + suffix,
                                       lambda rng, fields=fields: TheoryVsSimulation(**fields(rng)),
                                       lambda settings, fields=fields: TheoryVsSimulation(
                                           **fields.in_store(settings)),
                                       claims=(f"{self.theory}.{prefix}sampled_gap_closes_at_the_theory_order",)))
        if network is not None:  # last: it calls the theorist's data function
            network_claims.check_network_data(s, strategies, self.test_error)
        at_figure = None if not single else claim_parameters({n: st.just(v) for n, v in self.figure.items()},
                                                             f"{self.label} figure")
        return SaddleClaims(made, single, at_figure, figures, member, simplest)


class SaddleEquations:
    """A theory's saddle-point derivations: each declared action's, once, as (its member, the family's simplest draw,
    the handle, the names of the saddle_point registrations it serves)."""

    def __init__(self) -> None:
        self.registered: list[tuple[Any, dict, DerivationHandle, list[str]]] = []

    def register(self, theory, member, simplest: dict, name: str, source: str) -> None:
        """The derivation of ``member``'s action and saddle-point equations, registered with ``theory``'s first
        saddle_point of that declaration (and family draw); a later one of the same adds only its name to the title."""
        from ..saddle.claims import action_derivation

        label = name or "saddle_point"
        for declared, drawn, handle, names in self.registered:
            if declared is member and drawn == simplest:
                names.append(label)
                handle.title = saddle_title(names, simplest)
                return
        handle = theory.derivation(name=(f"{name}_" if name else "") + "saddle_point_equations",
                                   source=source or theory.source,
                                   title=saddle_title([label], simplest))(action_derivation(member))
        self.registered.append((member, simplest, handle, [label]))


def saddle_title(names: list[str], simplest: dict) -> str:
    """The derivation's title: the saddle_point registrations it serves, where one is named, and a family's member."""
    served = "" if names == ["saddle_point"] else f" ({', '.join(names)})"
    member = (f"; the family's member at {', '.join(f'{n} = {v!r}' for n, v in simplest.items())} (each claim "
              "checks its draw's)" if simplest else "")
    return f"The declared action and its saddle-point equations{served}{member}"
