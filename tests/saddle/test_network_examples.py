"""A network of one's own against a saddle-point theory: the deep linear example (two order parameters, the network
written by hand) holds, a wrong vector–Jacobian product is refuted, and ``figure=`` draws the theory from the GP point
against sampled networks."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import sympy

from claim_helpers import run_seed

from attnverify import Theory, st
from attnverify.checks import run_claim
from attnverify.saddle import SaddlePointAction, positive
from attnverify.theories.catalogue import load_user_module

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_deep_linear_example_with_its_own_network_holds():
    """examples/deep_linear_saddle.py: two order parameters (Q1 in the kernel, Q2 in the entropy only) and a network
    written by hand (two hidden linear layers: features, their vector–Jacobian product, the estimators of Q1 and Q2):
    every claim holds (the sampled Q1, Q2 measured within 0.10–0.22 of the allowance at N = 40, P = 30)."""
    module = load_user_module(EXAMPLES / "deep_linear_saddle.py")
    claims = module.theory.claim_list()
    assert [c.name.split(".")[1] for c in claims] == ["saddle_point_is_a_minimum",
                                                      "saddle_gradient_matches_finite_differences",
                                                      "saddle_point_approaches_gp",
                                                      "network_gradient_matches_finite_differences",
                                                      "sampled_networks_match_theory", "derivation_steps"]
    for claim in claims:
        result = run_claim(claim, profile="quick", seed=run_seed(0))
        assert result.status == "holds", result


def test_a_wrong_vector_jacobian_product_is_refuted():
    """The deep linear network with the second layer's weight gradient off by the factor 1/√(dN)."""
    module = load_user_module(EXAMPLES / "deep_linear_saddle.py")

    def wrong(N, sigma2, d):
        right = module.two_layers(N, sigma2, d)

        def features_vjp(Z, X, dF):
            dZ = right.features_vjp(Z, X, dF)
            return np.concatenate([dZ[:, :, :d], dZ[:, :, d:] * np.sqrt(d * N)], axis=2)

        return dataclasses.replace(right, features_vjp=features_vjp)

    theory = Theory("wrong_vjp")
    theory.saddle_point(module.action, N=st.integers(5, 10), sigma2=st.just(1.0), temperature=st.just(0.1),
                        P=st.just(10), d=st.just(2), network=wrong)(module.teacher)
    (claim,) = [c for c in theory.claim_list() if c.name.endswith("network_gradient_matches_finite_differences")]
    assert run_claim(claim, profile="quick", seed=run_seed(0)).status == "refuted"


def _figure_checks(theory, action, teacher, values: dict) -> None:
    """The one figure of ``figure=``: Q against 1/N, the theory's curve starting at the GP point (1/N = 0: Q = σ²) and
    equal to the solver's Q on the figure's data (drawn as the figure draws it) at every 8th point, against one
    converged sampled estimate per width."""
    from attnverify.saddle import solve

    (item,) = theory.figures
    seed = run_seed(0)
    drawn = item.make(np.random.default_rng(seed))
    values = dict(values)
    widths, sigma2, temperature = values.pop("N"), values.pop("sigma2"), values.pop("temperature")
    assert drawn.xlabel == "1/N" and drawn.x == [1 / w for w in widths]
    assert drawn.theory_x[0] == 0.0 and drawn.theory[0] == pytest.approx(sigma2, abs=1e-12)
    data = teacher(np.random.default_rng(seed), **values)
    for inverse, value in list(zip(drawn.theory_x, drawn.theory))[1::8]:
        expected = solve(action, data, temperature=temperature, N=1 / inverse, sigma2=sigma2)["Q"]
        assert value == pytest.approx(expected, rel=1e-8)
    assert len(drawn.estimates) == len(widths) and all(e.standard_error > 0 for e in drawn.estimates)
    assert "passed the R-hat/ESS gate" in drawn.caption


def test_a_figure_draws_the_theory_from_the_gp_point_against_sampled_networks():
    """Linear units, N = 10 and 20, P = 20 in d = 3."""
    from attnverify.saddle.network import one_hidden_layer

    theory = Theory("figure")
    Q, (N, s) = positive("Q"), sympy.symbols("N sigma2", positive=True)
    action = SaddlePointAction(order_parameters={"Q": Q}, entropy=N / 2 * (Q / s - sympy.log(Q)), kernel="Q", width=N)
    values = dict(N=(10, 20), sigma2=1.2, temperature=0.1, P=20)

    def teacher(rng, P):
        X = rng.standard_normal((P, 3))
        return dict(C=X @ X.T / 3, y=X[:, 0] + 0.3 * rng.standard_normal(P), inputs=X)

    theory.saddle_point(action, N=st.just(10.0), sigma2=st.just(1.2), temperature=st.just(0.1), P=st.just(20),
                        network=lambda N, sigma2: one_hidden_layer(N, 3, readout_variance_total=sigma2,
                                                                   activation="linear"), figure=values)(teacher)
    _figure_checks(theory, action, teacher, values)


@pytest.mark.thorough
def test_the_readme_figure_draws_the_theory_against_sampled_networks():
    module = load_user_module(EXAMPLES / "relu_saddle.py")
    _figure_checks(module.theory, module.action, module.teacher,
                   dict(N=(10, 20, 40, 80), sigma2=1.5, temperature=0.1, P=30, d=11, seed=6))


def test_the_figure_draws_every_order_parameter():
    """figure= gives one theory-vs-networks figure per order parameter (the kernel's under the plain name): Q1 and Q2
    of the deep linear network, each with the theory's curve from the GP point and the sampled networks' estimates."""
    module = load_user_module(EXAMPLES / "deep_linear_saddle.py")
    theory = Theory("deep_linear_figure", source="test")
    theory.saddle_point(module.action, network=module.two_layers, N=st.integers(20, 40), sigma2=st.floats(0.5, 2),
                        temperature=st.floats(0.05, 0.5), P=st.integers(10, 30), d=st.integers(2, 5),
                        figure=dict(N=(20, 40), sigma2=1.0, temperature=0.2, P=12, d=3))(module.teacher)
    assert [f.name for f in theory.figures] == ["sampled_networks_vs_theory", "sampled_networks_vs_theory_Q2"]
    for figure, name in zip(theory.figures, ("Q1", "Q2")):
        made = figure.make(np.random.default_rng(0))
        assert made.ylabel == name and len(made.estimates) == 2 and made.theory[0] == 1.0  # GP point: σ² = 1


def test_the_figures_and_the_width_claim_sample_the_networks_once_a_run(monkeypatch):
    """figure= draws one figure per order parameter and the width claim reads the same sweep: in one run (one store,
    one run seed) the networks are sampled once at each of the figure's widths, whoever asks first; another run
    samples afresh, at its own seed. (A converged stand-in draw in place of the sampler, which is counted.)"""
    from attnverify.execution import Store
    from attnverify.execution.settings import RunSettings
    from attnverify.saddle import width_claims

    seeds = []

    def sampled(s, made, data, temperature, seed, backend, sizes, test_error=False):
        seeds.append(seed)
        draws = 1.0 + 0.01 * np.random.default_rng(seed).standard_normal((4, 400))
        return type("Sampled", (), dict(draws={"Q1": draws, "Q2": draws}, summaries={}))()

    monkeypatch.setattr(width_claims, "sample_networks", sampled)
    theory = Theory("shared")
    theory.saddle_point(_two_widths(), network=lambda n1, n2, sigma2: None, **STRATEGIES,
                        figure=dict(n1=30, n2=(20, 40), sigma2=1.0, temperature=0.2, P=12))(_teacher)
    store, seed = Store(), run_seed(4)
    (claim,) = [c for c in theory.claim_list() if c.name.endswith("sampled_gap_closes_at_the_theory_order")]
    run_claim(claim, profile="quick", seed=seed, store=store)
    assert len(seeds) == 2
    drawn = [figure.shared(RunSettings(seed=seed, store=store)) for figure in theory.figures]
    assert len(seeds) == 2, seeds  # the two figures (Q1, Q2) read the claim's sweep
    assert [len(figure.estimates) for figure in drawn] == [2, 2]
    theory.figures[1].shared(RunSettings(seed=seed + 1))  # another run: sampled afresh, at its own seed
    assert len(seeds) == 4 and seeds[2:] != seeds[:2]


def _two_widths():
    """Two hidden linear layers of unequal widths n1, n2: Q1 | Q2 ~ Wishart(n1), Q2 ~ Wishart(n2)."""
    from attnverify.saddle import wishart_entropy

    Q1, Q2 = positive("Q1"), positive("Q2")
    n1, n2, s = sympy.symbols("n1 n2 sigma2", positive=True)
    return SaddlePointAction(order_parameters={"Q1": Q1, "Q2": Q2}, kernel="Q1", width=(n1, n2),
                             entropy=wishart_entropy(Q1, n1, Q2) + wishart_entropy(Q2, n2, s))


def _teacher(rng, P):
    X = rng.standard_normal((P, 3))
    return dict(C=X @ X.T / 3, y=X[:, 0] + 0.3 * rng.standard_normal(P), inputs=X)


STRATEGIES = dict(n1=st.integers(20, 40), n2=st.integers(20, 40), sigma2=st.just(1.0), temperature=st.just(0.2),
                  P=st.just(12))


def test_a_figure_along_one_of_several_widths_draws_theory_and_networks_at_the_same_widths(monkeypatch):
    """figure= sweeping n2 with n1 = 30 held: every network is built at (n1 = 30, n2 = the figure's width), the
    theory's curve is the solver's at n1 = 30 along n2 (no GP point at 1/n2 = 0: n1 stays finite), and the caption
    says which width is held."""
    from attnverify.saddle import solve, width_claims

    built, action = [], _two_widths()

    def network(n1, n2, sigma2):
        built.append((n1, n2))
        return None

    def sampled(s, made, data, temperature, seed, backend, sizes, test_error=False):  # a converged stand-in draw
        draws = 1.0 + 0.01 * np.random.default_rng(seed).standard_normal((4, 400))
        return type("Sampled", (), dict(draws={"Q1": draws}, summaries={}))()

    monkeypatch.setattr(width_claims, "sample_networks", sampled)
    theory = Theory("unequal")
    values = dict(n1=30, n2=(20, 40), sigma2=1.0, temperature=0.2, P=12)
    theory.saddle_point(action, network=network, figure=values, **STRATEGIES)(_teacher)
    made = theory.figures[0].make(np.random.default_rng(0))
    assert built == [(30, 20), (30, 40)] and all(type(w) is int for pair in built for w in pair)
    assert made.xlabel == "1/n2" and made.x == [1 / 20, 1 / 40] and made.theory_x[0] > 0
    assert "n1 = 30 held fixed" in made.caption and "GP limit (" not in made.caption
    data = _teacher(np.random.default_rng(0), P=12)
    for inverse, value in list(zip(made.theory_x, made.theory))[::8]:
        assert value == pytest.approx(solve(action, data, temperature=0.2, n1=30, n2=1 / inverse, sigma2=1.0)["Q1"],
                                      rel=1e-8)


def test_a_saddle_declaration_is_refused_whole_and_at_definition():
    """Mistakes of a network theory are refused before anything registers: a width strategy that draws a non-integer
    (or one at or below the Wishart shift), a figure width that is not whole, a sequence for a second parameter."""
    action = _two_widths()
    network = lambda n1, n2, sigma2: None  # noqa: E731
    figure = dict(n1=30, n2=(20, 40), sigma2=1.0, temperature=0.2, P=12)
    cases = [
        (dict(STRATEGIES, n2=st.just(40.5)), None, r"need n2 a whole number above 2 .* draws 40\.5"),
        (dict(STRATEGIES, n1=st.floats(20, 40)), None, r"need n1 a whole number above 2 .* draws 20\.5"),
        (dict(STRATEGIES, n1=st.integers(1, 40)), None, r"need n1 a whole number above 2 .* draws 0|draws 1|draws 2"),
        (STRATEGIES, dict(figure, n1=30.5), r"whole widths above 2 \(the Wishart shift\), at least two of n2; got n1 = 30\.5"),
        (STRATEGIES, dict(figure, n1=(20, 30)), r"exactly one width \(n1 or n2\) takes a sequence .* n1, n2"),
    ]
    for strategies, figure_values, message in cases:
        theory = Theory("refused")
        with pytest.raises(ValueError, match=message):
            theory.saddle_point(action, network=network, figure=figure_values, **strategies)(_teacher)
        assert theory.claim_list() == [] and theory.derivation_list() == [] and theory.figures == []
    theory = Theory("twice")
    theory.saddle_point(action, **STRATEGIES)(_teacher)
    before = [c.name for c in theory.claim_list()]
    with pytest.raises(ValueError, match="already has twice.saddle_gradient_.*, twice.saddle_point_is_a_minimum: give this saddle_point a name="):
        theory.saddle_point(action, **STRATEGIES)(_teacher)
    assert [c.name for c in theory.claim_list()] == before


def test_the_width_claim_reads_the_stated_bias_at_each_of_the_figures_widths(monkeypatch):
    """With bias= and figure=, the width claim's side check reads the stated budget at each width of the figure (the
    drawn function of the width and the figure's other values), and keeps it with its figures. (A converged stand-in
    draw in place of the sampler.)"""
    from attnverify.execution import Store
    from attnverify.saddle import width_claims

    def sampled(s, made, data, temperature, seed, backend, sizes, test_error=False):
        draws = 1.0 + 0.01 * np.random.default_rng(seed).standard_normal((4, 400))
        return type("Sampled", (), dict(draws={"Q1": draws, "Q2": draws}, summaries={}))()

    monkeypatch.setattr(width_claims, "sample_networks", sampled)
    theory = Theory("biased")
    theory.saddle_point(_two_widths(), network=lambda n1, n2, sigma2: None, **STRATEGIES,
                        bias=lambda n2, sigma2, **p: 0.5 * sigma2 / n2,
                        figure=dict(n1=30, n2=(20, 40), sigma2=1.0, temperature=0.2, P=12))(_teacher)
    (claim,) = [c for c in theory.claim_list() if c.name.endswith("sampled_gap_closes_at_the_theory_order")]
    result = run_claim(claim, profile="quick", seed=run_seed(5), store=Store())
    (example,) = result.examples
    assert example.evidence.figures["stated_biases"] == pytest.approx([0.5 / 20, 0.5 / 40], rel=1e-12)
