"""The claims a declared saddle-point theory gets by itself (``@theory.saddle_point``): they hold for a right
theory (the README's ReLU example, the attention-path action with its head-permutation symmetry) and refute a
wrong one (a flipped sign: no minimum; a wrong symmetry)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import sympy

from claim_helpers import run_seed

from attnverify import Theory, st
from attnverify.checks import run_claim
from attnverify.saddle import SaddlePointAction, positive
from attnverify.saddle.network import one_hidden_layer
from attnverify.theories.catalogue import load_user_module
from attnverify.theories.attention_paths.action import attention_paths_action as _per_layer
from attnverify.theories.attention_paths.synthetic import synthetic_problem


def _paths(heads):
    """The attention-path action with every width N (the claims' 1/N scans vary one width)."""
    return _per_layer(heads, equal_widths=True)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "relu_saddle.py"


@pytest.mark.parametrize("suffix", ["saddle_point_is_a_minimum", "saddle_gradient_matches_finite_differences",
                                    "saddle_point_approaches_gp", "networks_saddle_point_is_a_minimum",
                                    "networks_network_gradient_matches_finite_differences",
                                    # 10 s of sampling; the docs build (make docs, CI) runs it and fails unless refuted
                                    pytest.param("networks_sampled_networks_match_theory",
                                                 marks=pytest.mark.thorough),
                                    # 60 s of sampling at four widths; the docs build runs it too
                                    pytest.param("networks_sampled_gap_closes_at_the_theory_order",
                                                 marks=pytest.mark.thorough)])
def test_the_readme_relu_theory_gets_its_claims_and_they_come_out_as_expected(suffix):
    """The solver's claims hold over the drawn ranges; the sampled networks at the example's one setting refute the
    one-scalar renormalisation (expected: the example says so)."""
    claims = load_user_module(EXAMPLE).theory.claim_list()
    (claim,) = [c for c in claims if c.name == f"relu_renormalisation.{suffix}"]
    result = run_claim(claim, profile="quick", seed=run_seed(0))
    refuted = suffix.endswith(("match_theory", "theory_order"))
    assert result.status == ("refuted" if refuted else "holds"), result


def _relu_like(entropy_sign: int):
    theory = Theory("flipped" if entropy_sign < 0 else "unflipped")
    Q, (N, s) = positive("Q"), sympy.symbols("N sigma2", positive=True)
    action = SaddlePointAction(order_parameters={"Q": Q}, entropy=N / 2 * (Q / s - entropy_sign * sympy.log(Q)),
                               kernel="Q", width=N)

    @theory.saddle_point(action, N=st.floats(5, 50), sigma2=st.just(1.0), temperature=st.just(0.1),
                         P=st.integers(5, 20))
    def data(rng, P):
        X = rng.standard_normal((P, 3))
        return dict(C=X @ X.T / 3, y=np.sign(X[:, 0]))

    return theory


@pytest.mark.parametrize("suffix, flipped", [("saddle_point_is_a_minimum", "refuted"),
                                             ("saddle_point_approaches_gp", "refuted"),
                                             ("saddle_gradient_matches_finite_differences", "holds")])
def test_a_wrong_sign_is_refuted_not_an_error(suffix, flipped):
    """N/2 (Q/σ² + ln Q) has no minimum over Q > 0 (the action falls as Q → 0, where it overflows): no minimum and
    no GP point to approach, both refuted, not an error; its derivatives are still right. The right sign holds."""
    claim = [c for c in _relu_like(-1).claim_list() if c.name.endswith(suffix)][0]
    assert run_claim(claim, profile="quick", seed=run_seed(0)).status == flipped
    claim = [c for c in _relu_like(+1).claim_list() if c.name.endswith(suffix)][0]
    assert run_claim(claim, profile="quick", seed=run_seed(0)).status == "holds"


def test_a_matrix_entropy_unbounded_below_is_refuted_not_an_error():
    """(N/2)(tr V⁻¹U + ln det U) falls without bound as U → 0: the iterate overflows on its way there, and the
    claims say no minimum (not a LinAlgError from the eigenvalues of a non-finite Hessian)."""
    from attnverify.saddle import log_det, positive_definite

    theory = Theory("unbounded")
    U, N = positive_definite("U", 2), sympy.Symbol("N", positive=True)
    prior_inverse = sympy.diag(2, sympy.Rational(2, 3))
    action = SaddlePointAction(order_parameters={"U": U}, entropy=N / 2 * ((prior_inverse * U).trace() + log_det(U)),
                               kernel="U", width=N)

    @theory.saddle_point(action, N=st.just(20.0), temperature=st.just(0.02), P=st.just(12))
    def data(rng, P):
        X = rng.standard_normal((P, 2, 3))
        return dict(C=np.einsum("phd,qkd->hkpq", X, X) / 3, y=8 * X[:, 1, 0])

    for suffix in ("saddle_point_is_a_minimum", "saddle_point_approaches_gp"):
        (claim,) = [c for c in theory.claim_list() if c.name.endswith(suffix)]
        result = run_claim(claim, profile="quick", seed=run_seed(0))
        assert result.status == "refuted", result


def _swap_first_layer_heads(data):
    """Relabel the two heads of layer 1: path (h1, h2) ↔ (1 − h1, h2), paths packed h1-major."""
    return {**data, "X": data["X"][:, :, [2, 3, 0, 1]]}


def _permuted(order, permutation):
    P = np.eye(4)[permutation]
    return {**order, "U1": P @ order["U1"] @ P.T}


def _attention_theory(permutation):
    theory = Theory("paths")

    @theory.saddle_point(_paths((2, 2)), N=st.floats(5, 200), sigma1=st.just(1.0),
                         sigma2=st.just(1.0), sigma_a=st.just(1.0), temperature=st.floats(0.05, 0.5),
                         seed=st.integers(0, 100), symmetries={"head_relabelling": (
                             _swap_first_layer_heads, lambda order: _permuted(order, permutation))})
    def tokens(rng, seed):
        X, y = synthetic_problem(30, heads=(2, 2), input_width=4, tokens=3, seed=seed)
        return dict(X=X, y=y)

    return theory


def test_a_declared_symmetry_holds_and_a_wrong_one_is_refuted():
    right = [c for c in _attention_theory([2, 3, 0, 1]).claim_list() if c.name.endswith("head_relabelling")][0]
    assert run_claim(right, profile="quick", seed=run_seed(0)).status == "holds"
    wrong = [c for c in _attention_theory([1, 0, 3, 2]).claim_list() if c.name.endswith("head_relabelling")][0]
    assert run_claim(wrong, profile="quick", seed=run_seed(0)).status == "refuted"


def _family_theory(relabel_order):
    """A family over drawn heads (the attention-path action at one σ² for every layer) with a symmetry whose maps
    name drawn parameters: the heads and which layer's heads are relabelled."""
    theory = Theory("family")

    def family(heads):
        return _per_layer(heads, equal_widths=True, equal_variances=True)

    def relabel_data(data, heads, layer):
        order = np.arange(int(np.prod(heads))).reshape(heads)
        return {**data, "X": data["X"][:, :, np.roll(order, 1, axis=layer % len(heads)).ravel()]}

    @theory.saddle_point(family, heads=st.sampled_from([(2, 2), (3,), (2, 1, 2)]), N=st.floats(5, 200),
                         sigma=st.just(1.0), sigma_a=st.just(1.0), temperature=st.floats(0.05, 0.5),
                         seed=st.integers(0, 100), layer=st.integers(0, 2),
                         symmetries={"head_relabelling": (relabel_data, relabel_order)})
    def tokens(rng, heads, seed):
        X, y = synthetic_problem(30, heads=heads, input_width=4, tokens=3, seed=seed)
        return dict(X=X, y=y)

    return theory


def _rolled(order, heads, layer):
    """The right transformation: U_ℓ for ℓ ≤ m + 1 over (h_ℓ, …, h_L), layer m's heads rolled by one."""
    m, out = layer % len(heads), dict(order)
    for level in range(1, m + 2):
        index = np.roll(np.arange(int(np.prod(heads[level - 1:]))).reshape(heads[level - 1:]), 1,
                        axis=m - level + 1).ravel()
        U = np.asarray(order[f"U{level}"])
        out[f"U{level}"] = U[np.ix_(index, index)] if U.ndim == 2 else U
    return out


def test_a_family_draws_its_members_and_a_symmetry_map_names_drawn_parameters():
    theory = _family_theory(_rolled)
    claims = {c.name.split(".", 1)[1]: c for c in theory.claim_list()}
    seen = set()
    for name in ("saddle_point_is_a_minimum", "symmetric_under_head_relabelling"):
        result = run_claim(claims[name], profile="quick", seed=run_seed(0), examples=8)
        assert result.status == "holds", result
        seen |= {tuple(e.parameters["heads"]) for e in result.examples}
    assert len(seen) >= 2  # the members differ between draws
    (printed,) = theory.derivation_list()
    assert printed.title.endswith("the family's member at heads = (2, 2) (each claim checks its draw's)")
    # the order parameters left as they were: wrong wherever the relabelling moves a head
    unchanged = lambda order, heads, layer: dict(order)  # noqa: E731
    wrong = {c.name.split(".", 1)[1]: c for c in _family_theory(unchanged).claim_list()}
    result = run_claim(wrong["symmetric_under_head_relabelling"], profile="quick", seed=run_seed(0), examples=8)
    assert result.status == "refuted", result


def test_a_family_is_checked_by_name():
    Q, N = positive("Q"), sympy.Symbol("N", positive=True)

    def family(power):
        V = sympy.Symbol("V" if power == 1 else "W", positive=True)
        return SaddlePointAction(order_parameters={"Q": Q}, entropy=N * (Q / V - sympy.log(Q)) * power, kernel="Q",
                                 width=N)

    data = lambda rng: dict(C=np.eye(3)[None, None], y=np.ones(3))  # noqa: E731
    with pytest.raises(TypeError, match="family family takes the structure .* give one for power"):
        Theory("f1").saddle_point(family, N=st.just(10.0), V=st.just(1.0), temperature=st.just(0.1))(data)
    theory = Theory("f2")
    theory.saddle_point(family, power=st.sampled_from([1, 2]), N=st.just(10.0), V=st.just(1.0),
                        temperature=st.just(0.1))(data)
    claim = theory.claim_list()[0]
    result = run_claim(claim, profile="quick", seed=run_seed(0), examples=10)
    assert result.status == "error" and "must share their parameters" in result.error.error, result
    with pytest.raises(TypeError, match=r"V name\(s\) both an action parameter and a structural parameter"):
        Theory("f3").saddle_point(lambda V: family(1), V=st.just(1.0), N=st.just(10.0),
                                  temperature=st.just(0.1))(data)


def test_the_data_function_and_strategies_are_checked_by_name():
    theory = Theory("bad")
    Q, N = positive("Q"), sympy.Symbol("N", positive=True)
    action = SaddlePointAction(order_parameters={"Q": Q}, entropy=N * (Q - sympy.log(Q)), kernel="Q", width=N)
    with pytest.raises(TypeError, match="missing temperature"):
        theory.saddle_point(action, N=st.just(10.0))(lambda rng: {})
    with pytest.raises(TypeError, match="must take \\(rng, …\\)"):
        theory.saddle_point(action, N=st.just(10.0), temperature=st.just(0.1))(lambda P: {})
    # a range that reaches 0 is refused where it is written, with the simplest draw that breaks it
    with pytest.raises(ValueError, match=r"^N must be a positive finite number .*its strategy draws 0\.0$"):
        theory.saddle_point(action, N=st.floats(0, 10), temperature=st.just(0.1))(lambda rng: {})
    with pytest.raises(ValueError, match=r"^temperature must be a positive finite number .*draws 0$"):
        theory.saddle_point(action, N=st.just(10.0), temperature=st.integers(0, 3))(lambda rng: {})


def test_saddle_point_options_are_checked():
    theory = Theory("options")
    Q, N = positive("Q"), sympy.Symbol("N", positive=True)
    action = SaddlePointAction(order_parameters={"Q": Q}, entropy=N * (Q - sympy.log(Q)), kernel="Q", width=N)
    strategies = dict(N=st.just(10.0), temperature=st.just(0.1))
    with pytest.raises(TypeError, match="figure= compares sampled networks .* it needs network="):
        theory.saddle_point(action, figure=dict(N=(10, 20), temperature=0.1), **strategies)(lambda rng: {})
    with pytest.raises(TypeError, match="bias= compares sampled networks .* it needs network="):
        theory.saddle_point(action, bias=0.1, **strategies)(lambda rng: {})
    with pytest.raises(ValueError, match="^bias must be a non-negative finite number or a function of the parameters"):
        theory.saddle_point(action, bias=-0.1, network=lambda N: one_hidden_layer(N, 2), **strategies)(lambda rng: {})
    with pytest.raises(TypeError, match=r"^bias\['thorough'\] <lambda> must accept the drawn parameter 'temperature'"):
        theory.saddle_point(action, bias={"quick": 0.1, "thorough": lambda N: 1 / N},
                            network=lambda N: one_hidden_layer(N, 2), **strategies)(lambda rng: {})
    numpy_scalars = Theory("numpy_scalars")  # numpy's numbers are numbers: accepted as options
    numpy_scalars.saddle_point(action, bias=np.float32(0.01), network=lambda N: one_hidden_layer(N, 2),
                               examples={"quick": np.int64(2), "thorough": np.int64(4)}, **strategies)(
        lambda rng: dict(C=np.eye(2), y=np.ones(2), inputs=np.eye(2)))
    network = lambda N: one_hidden_layer(N, 2)  # noqa: E731
    with pytest.raises(ValueError, match=r"exactly one width \(N\) takes a sequence .* got sequences for N, temperature"):
        Theory("sweeps").saddle_point(action, network=network, figure=dict(N=(10, 20), temperature=(0.1, 0.2)),
                                      **strategies)(lambda rng: {})
    with pytest.raises(ValueError, match="expect= names sampled_networks_match_theory, not among its claims"):
        theory.saddle_point(action, expect={"sampled_networks_match_theory": "refuted"}, **strategies)(lambda rng: {})
    with pytest.raises(TypeError, match="network names width, which is not a parameter"):
        theory.saddle_point(action, network=lambda width: None, **strategies)(lambda rng: {})
    with pytest.raises(TypeError, match="missing temperature"):
        theory.saddle_point(action, network=lambda N: None, figure=dict(N=(10, 20)), **strategies)(lambda rng: {})


def test_each_declared_action_has_its_own_saddle_point_equations():
    """linear_network.py registers one action twice and a second action (the entropy's ½ dropped) once: two
    derivations, the first heading naming both of its registrations, each with its own action."""
    module = load_user_module(EXAMPLE.with_name("linear_network.py"))
    derivations = module.theory.derivation_list()
    assert [(d.name, d.title) for d in derivations] == [
        ("linear_network.saddle_point_equations",
         "The declared action and its saddle-point equations (saddle_point, networks)"),
        ("linear_network.without_half_saddle_point_equations",
         "The declared action and its saddle-point equations (without_half)")]
    first, second = (d.steps[0].expression.rhs for d in derivations)
    assert sympy.simplify(first - second) != 0


def test_the_report_shows_the_declared_action_and_its_saddle_point_equations():
    """@theory.saddle_point registers the derivation <name>saddle_point_equations: S = ½E + 𝓛 with the declared 𝓛,
    then ∂S/∂u = 0 for each entry (sympy's ∂𝓛/∂u, and ½∂E/∂u for the kernel's), printed by the report's equation
    printer, once per declared action (a second saddle_point of it adds its name to the heading); for matrix order
    parameters ln det and U⁻¹ print as such."""
    import sympy

    from attnverify.report.equations import equation_latex

    module = load_user_module(EXAMPLE)
    names = [d.name for d in module.theory.derivation_list()]
    assert names == ["relu_renormalisation.saddle_point_equations"]  # one action, registered twice: printed once
    assert [d.title for d in module.theory.derivation_list()] == [
        "The declared action and its saddle-point equations (saddle_point, networks)"]
    derivation = module.theory.derivation_list()[0]
    action, equation = derivation.steps[0].expression, derivation.steps[1].expression
    S, E = sympy.symbols("S E")
    Q, N, sigma2 = sympy.symbols("Q N sigma^2", positive=True)  # display={"sigma2": "sigma^2"}: printed σ², not σ₂
    assert action == sympy.Eq(S, E / 2 + N / 2 * (Q / sigma2 - sympy.log(Q)))
    assert r"\sigma^{2}" in equation_latex(action) and r"\sigma_{2}" not in equation_latex(action)
    assert sympy.simplify(equation.lhs - (N / 2 * (1 / sigma2 - 1 / Q) + sympy.Derivative(E, Q) / 2)) == 0
    assert all(step.kind == "definition" for step in derivation.steps)
    paths = _paths((2, 2))
    from attnverify.saddle.claims import action_derivation

    steps = []
    action_derivation(paths)(lambda description, expression, **kind: steps.append(expression))
    assert r"\ln\det U_{1}" in equation_latex(steps[0]) and "(U_{2}^{-1})_{00}" in equation_latex(steps[1])


def test_data_without_what_the_sampled_networks_read_is_refused_at_definition():
    Q, N = positive("Q"), sympy.Symbol("N", positive=True)
    action = SaddlePointAction(order_parameters={"Q": Q}, entropy=N * (Q - sympy.log(Q)), kernel="Q", width=N)
    strategies = dict(N=st.integers(10, 20), temperature=st.just(0.1), P=st.integers(3, 6))

    def kernels_only(rng, P):
        X = rng.standard_normal((P, 2))
        return {"C": X @ X.T / 2, "y": X[:, 0]}

    def with_inputs(rng, P):
        return {**kernels_only(rng, P), "inputs": rng.standard_normal((P, 2))}

    network = lambda N: one_hidden_layer(N, 2)  # noqa: E731
    with pytest.raises(ValueError, match=r"data function kernels_only must also return the raw inputs \(inputs=X"):
        Theory("no_inputs").saddle_point(action, network=network, **strategies)(kernels_only)
    with pytest.raises(ValueError, match="test_error=True: the data function with_inputs must also return test_inputs, "
                                         "y_test, C_test, C_test_diagonal"):
        Theory("no_test_data").saddle_point(action, network=network, test_error=True, **strategies)(with_inputs)
    complete = Theory("complete")
    complete.saddle_point(action, network=network, **strategies)(with_inputs)
    assert "complete.sampled_networks_match_theory" in {c.name for c in complete.claims}

    def failing(rng, P):
        raise RuntimeError("the theorist's own failure")

    theory = Theory("failing")  # its own failure is left to the claims, which name the example
    theory.saddle_point(action, network=network, **strategies)(failing)
    assert "failing.sampled_networks_match_theory" in {c.name for c in theory.claims}
