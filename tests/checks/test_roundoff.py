"""Round-off is not evidence: a statement true in exact arithmetic is never refuted by float64 rounding.

The case: the ReLU (arc-cosine, order 1) kernel
E_w[relu(w·x) relu(w·y)] = |x||y| (sin θ + (π − θ) cos θ) / 2π, w ~ N(0, I), checked by Monte Carlo with
``within_error`` and no bias budget. At θ = π every sample is exactly 0 (SE 0) while the theory evaluates to
~1e-17 (sin(fl(π)) ≠ 0): that must not be a refutation. Nor must cancellations, or very large and very
small scales. A false kernel (a dropped factor) must still be refuted, so these tests can fail.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import sympy

from attnverify.checks import at_most, claim, close, roundoff_floor, run_claim, st, within_error
from attnverify.derivations.codegen import rounding_scale
from attnverify.derivations.rounding import magnitude
from attnverify.numerics.statistics import Estimate, mean_estimate

OFFSET = int(os.environ.get("ATTNVERIFY_TEST_SEED_OFFSET", "0"))
DRAWS = 20_000


def pair(theta: float, norm_x: float, norm_y: float, dimension: int = 3):
    """x and y at angle θ with the given norms (y built from x, as a user would)."""
    x = np.zeros(dimension)
    x[0] = norm_x
    y = np.zeros(dimension)
    y[0], y[1] = norm_y * math.cos(theta), norm_y * math.sin(theta)
    return x, y


def relu_kernel(theta: float, norm_x: float, norm_y: float) -> float:
    """|x||y| (sin θ + (π − θ) cos θ) / 2π (Cho & Saul 2009, arc-cosine kernel of order 1)."""
    return norm_x * norm_y * (math.sin(theta) + (math.pi - theta) * math.cos(theta)) / (2 * math.pi)


def relu_samples(rng, x, y, draws=DRAWS):
    w = rng.standard_normal((draws, x.size))
    return np.maximum(w @ x, 0) * np.maximum(w @ y, 0)


@claim("relu.arc_cosine_kernel",
       parameters=st.fixed_dictionaries({"theta": st.floats(0, math.pi), "log_scale": st.floats(-150, 150)}),
       examples={"quick": 30, "thorough": 100})
def arc_cosine_kernel(p, ctx):
    """E[relu(w·x)relu(w·y)] = |x||y|(sin θ + (π − θ)cos θ)/2π: Monte Carlo within 5 SE, no bias budget; the
    round-off floor is taken at the size of the terms, |x||y|."""
    norm = 10.0 ** p["log_scale"]
    x, y = pair(p["theta"], norm, norm)
    return within_error(relu_kernel(p["theta"], norm, norm), mean_estimate(relu_samples(ctx.rng, x, y)),
                        scale=norm * norm)


@claim("relu.arc_cosine_kernel_dropped_factor", expect="refuted",
       parameters=st.fixed_dictionaries({"theta": st.floats(0, math.pi), "log_scale": st.floats(-150, 150)}))
def dropped_factor(p, ctx):
    """(False on purpose: the 1/2π dropped to 1/π.)"""
    norm = 10.0 ** p["log_scale"]
    x, y = pair(p["theta"], norm, norm)
    return within_error(2 * relu_kernel(p["theta"], norm, norm), mean_estimate(relu_samples(ctx.rng, x, y)),
                        scale=norm * norm)


def test_the_relu_kernel_holds_where_it_vanishes_exactly():
    """θ = π: every sample is 0 (SE 0), the theory ~1e-17: held, and the evidence says the samples agree."""
    x, y = pair(math.pi, 1.0, 1.0)
    samples = relu_samples(np.random.default_rng(OFFSET), x, y)
    theory = relu_kernel(math.pi, 1.0, 1.0)
    assert theory != 0 and np.all(samples == 0)
    evidence = within_error(theory, mean_estimate(samples), scale=1.0)
    assert evidence.holds and evidence.status == "holds"
    assert "samples identical" in evidence.note and evidence.figures["roundoff_floor"] > abs(theory)
    # without a scale, only the sides' own size is known: 1e-17 against an exact 0 is then a real gap
    assert not within_error(theory, mean_estimate(samples)).holds


@pytest.mark.parametrize("log_scale", [-160.0, -150.0, -3.0, 0.0, 3.0, 150.0])
@pytest.mark.parametrize("theta", [0.0, math.pi / 2, math.pi - 1e-9, math.pi])
def test_the_relu_kernel_holds_at_exact_zeros_and_extreme_scales(theta, log_scale):
    """No bias budget: at θ = π (exact zero), next to it, at θ = π/2 and 0, from 1e-160 (results below the
    normal range) to 1e150 (products near overflow)."""
    norm = 10.0 ** log_scale
    x, y = pair(theta, norm, norm)
    rng = np.random.default_rng([OFFSET, int(theta * 1e6), int(log_scale) + 1000])
    evidence = within_error(relu_kernel(theta, norm, norm), mean_estimate(relu_samples(rng, x, y)),
                            scale=norm * norm)
    assert evidence.holds, evidence.explain()


def test_the_relu_claim_holds_and_its_false_variant_is_refuted():
    """Through the runner, as ``attnverify verify`` runs a user's file: hypothesis draws θ ∈ [0, π] (its edge
    values 0 and π included) and scales 1e±150; the true kernel holds, the dropped factor is refuted."""
    assert run_claim(arc_cosine_kernel, seed=OFFSET).status == "holds"
    assert run_claim(dropped_factor, seed=OFFSET).status == "refuted"


@pytest.mark.parametrize("tiny", [1e-8, 1e-12, 1e-15, 1e-17])
def test_a_cancellation_is_not_refuted(tiny):
    """(1 + t) − 1 = t in exact arithmetic; in float64 it errs by an ulp of 1, not of t: the terms' scale 1."""
    assert close((1.0 + tiny) - 1.0, tiny, rtol=0.0, scale=1.0).holds
    assert not close((1.0 + tiny) - 1.0, tiny, rtol=0.0).holds or tiny >= 1e-8
    assert at_most(tiny, (1.0 + tiny) - 1.0, scale=1.0).holds


def test_an_exact_identity_with_no_tolerance_is_not_bitwise_equality():
    """0.1 + 0.2 = 0.3 holds with rtol = atol = 0 (the floor is a few ulps), and 0.1 + 0.2 = 0.31 does not."""
    assert close(0.1 + 0.2, 0.3, rtol=0.0).holds
    assert not close(0.1 + 0.2, 0.31, rtol=0.0).holds
    assert close(np.array([0.1 + 0.2, 1e-320]), np.array([0.3, 0.0]), rtol=0.0).holds  # subnormal: absolute floor


def test_identical_samples_compare_up_to_the_floor_and_no_further():
    """An SE of 0 is not bitwise equality, but neither does it excuse more than round-off."""
    constant = Estimate(1.0, 0.0, 1000)
    assert within_error(1.0 + 4 * np.finfo(float).eps, constant).holds
    assert not within_error(1.0 + 1e-12, constant).holds
    assert roundoff_floor(1.0) < 1e-14


def test_the_rounding_scale_of_a_generated_expression_bounds_its_error():
    """M(e) (running error analysis) of the ReLU kernel's angular part is ~π at θ = π, where the value is
    ~1e-16, so the floor it gives covers the float64 evaluation; and M(e) ≥ |e| everywhere."""
    theta = sympy.Symbol("theta", real=True)
    angular = sympy.sin(theta) + (sympy.pi - theta) * sympy.cos(theta)
    scale = rounding_scale(angular, [theta])
    thetas = np.linspace(0, np.pi, 101)
    value = np.sin(thetas) + (np.pi - thetas) * np.cos(thetas)
    sizes = scale(thetas)
    assert np.all(sizes >= np.abs(value) * (1 - 1e-15))
    assert 2 < float(scale(np.pi)) < 4 * np.pi
    exact = [float(sympy.N(angular.subs(theta, sympy.Float(t, 30)), 30)) for t in (np.pi, np.pi - 1e-9)]
    computed = [math.sin(t) + (math.pi - t) * math.cos(t) for t in (np.pi, np.pi - 1e-9)]
    for e, c, t in zip(exact, computed, (np.pi, np.pi - 1e-9)):
        assert abs(c - e) <= roundoff_floor(c, e, scale=float(scale(t)))
    assert sympy.simplify(magnitude(sympy.Integer(-3)) - 3) == 0


def test_the_relu_example_holds_at_theta_pi_and_its_steps_are_checked():
    """examples/relu_kernel.py, as the README has a user write it: θ = π with no bias budget, at the scales
    1e±100, and every step of its derivation decided (none unchecked, none failed)."""
    from pathlib import Path

    from attnverify.checks.runner import evaluate
    from attnverify.derivations.steps import counts

    from attnverify.theories.catalogue import load_user_module

    example = load_user_module(Path(__file__).resolve().parents[2] / "examples" / "relu_kernel.py")
    claims = {c.name: c for c in example.theory.claims}
    for log_norm in (-100.0, 0.0, 100.0):
        result = evaluate(claims["relu.kernel_matches_monte_carlo"], {"theta": math.pi, "log_norm": log_norm},
                          7 + OFFSET)
        assert result.status == "holds", result.error or result.evidence.explain()
        wrong = evaluate(claims["relu.kernel_with_one_over_pi"], {"theta": 0.0, "log_norm": log_norm}, 7 + OFFSET)
        assert wrong.status == "refuted"
    tally = counts(example.kernel().checks())
    assert tally["failed"] == 0 and tally["unchecked"] == 0 and tally["definition"] == 1, tally


def test_the_term_size_is_the_value_unless_a_sum_cancels():
    """T(e) leaves out what M(e) adds for the functions' amplification of their inputs' rounding: e^{β²/2} has
    T = e^{β²/2} where M = (1 + β²/2)e^{β²/2}; the ReLU kernel's angular part, a sum that cancels near θ = π, has
    T = |sin θ| + (π + |θ|)|cos θ| (π − θ is a sum too); and |e| ≤ T ≤ M everywhere."""
    from attnverify.derivations.codegen import term_size

    beta, theta = sympy.Symbol("beta", positive=True), sympy.Symbol("theta", real=True)
    tilt = sympy.exp(beta**2 / 2)
    betas = np.linspace(0.05, 3.0, 40)
    np.testing.assert_allclose(term_size(tilt, [beta])(betas), np.exp(betas**2 / 2), rtol=1e-14)
    np.testing.assert_allclose(rounding_scale(tilt, [beta])(betas), (1 + betas**2 / 2) * np.exp(betas**2 / 2),
                               rtol=1e-14)
    angular = sympy.sin(theta) + (sympy.pi - theta) * sympy.cos(theta)
    thetas = np.linspace(0, np.pi, 101)
    terms = term_size(angular, [theta])(thetas)
    np.testing.assert_allclose(terms, np.abs(np.sin(thetas)) + (np.pi + thetas) * np.abs(np.cos(thetas)),
                               rtol=1e-14)
    value = np.abs(np.sin(thetas) + (np.pi - thetas) * np.cos(thetas))
    assert np.all(terms >= value * (1 - 1e-15)) and np.all(terms <= rounding_scale(angular, [theta])(thetas))
    near = thetas > 3.0  # the sum cancels: the terms are orders of magnitude above the value
    assert np.all(terms[near] > 10 * value[near])


def test_a_relative_resolution_is_measured_against_the_value_where_nothing_cancels():
    """theory.monte_carlo(relative=q) draws until 5 SE ≤ q·|expected| for e^{β²/2}·β (no sum cancels), not
    q·M, which would be (1 + β²/2) times coarser."""
    from attnverify import Theory, st
    from attnverify.checks.runner import evaluate

    theory = Theory("termsize")
    beta, m = sympy.symbols("beta m", positive=True)

    @theory.derivation
    def numerator(step):
        """The tilted mean's numerator"""
        step("Given", sympy.Eq(m, beta * sympy.exp(beta**2 / 2)), name="m", kind="definition")

    def tilted(rng, n, beta):
        """n draws of k e^{βk}, k ~ N(0, 1)."""
        k = rng.standard_normal(n)
        return k * np.exp(beta * k)

    claim = theory.monte_carlo(tilted, expected=lambda beta: numerator.evaluator("m")(beta=beta), relative=0.05,
                               budget=10**7, beta=st.floats(0.05, 1.5))
    for b in (0.5, 1.5):
        result = evaluate(claim, {"beta": b}, 11 + OFFSET)
        asked = result.evidence.figures["resolution"]
        assert asked == pytest.approx(0.05 * b * math.exp(b**2 / 2), rel=1e-12), (b, asked)
        assert result.status == "holds", result.evidence.explain()
