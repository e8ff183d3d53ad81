"""A generated value knows its round-off: the long form needs no ``scale=``.

The user's case: the ReLU (arc-cosine) kernel written with the tool's own generated evaluator and
``within_error(kernel(...), mean_estimate(samples))``. At θ = fl(π) every sample is exactly 0 while the closed form
evaluates to ~1e-17·|x||y| (sin(fl(π)) ≠ 0): the evaluator's result carries the size of its terms
(:class:`~attnverify.derivations.rounded.Rounded`), so the comparison's floor is taken there, through any
arithmetic the user does on it. Two more exact-zero / cancelling cases: the order-2 arc-cosine kernel (negative
round-off at θ = π) and the ReLU distance kernel E[(relu(w·x) − relu(w·y))²] = (|x|² + |y|²)/2 − 2k(θ), which
cancels to 0 at θ = 0. Each has a false variant that must still be refuted, so these tests can fail.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import sympy
from sympy import cos, pi, sin

from attnverify.checks import at_most, claim, close, exceeds, run_claim, st, within_error
from attnverify.derivations.codegen import evaluator
from attnverify.derivations.rounded import Rounded, carried_scale
from attnverify.numerics.statistics import mean_estimate

OFFSET = int(os.environ.get("ATTNVERIFY_TEST_SEED_OFFSET", "0"))
a, b, t = sympy.symbols("a b theta", positive=True)

ORDER_1 = evaluator(a * b * (sin(t) + (pi - t) * cos(t)) / (2 * pi), [a, b, t])
ORDER_2 = evaluator(a**2 * b**2 * (3 * sin(t) * cos(t) + (pi - t) * (1 + 2 * cos(t) ** 2)) / (2 * pi), [a, b, t])


def units(rng, theta: float, norm: float, draws: int = 20_000):
    """relu(w·x) and relu(w·y) for |x| = |y| = norm at angle θ, w ~ N(0, I₂)."""
    w = norm * rng.standard_normal((draws, 2))
    return np.maximum(w[:, 0], 0), np.maximum(math.cos(theta) * w[:, 0] + math.sin(theta) * w[:, 1], 0)


def order_1(rng, theta, norm):
    u, v = units(rng, theta, norm)
    return ORDER_1(norm, norm, theta), mean_estimate(u * v)


def order_2(rng, theta, norm):
    u, v = units(rng, theta, norm)
    return ORDER_2(norm, norm, theta), mean_estimate(u**2 * v**2)


def distance(rng, theta, norm):
    """E[(relu(w·x) − relu(w·y))²] = k(x, x)/2... written by the user from the order-1 evaluator: k(0) + k(0) − 2k(θ)."""
    u, v = units(rng, theta, norm)
    return ORDER_1(norm, norm, 0.0) + ORDER_1(norm, norm, 0.0) - 2 * ORDER_1(norm, norm, theta), mean_estimate((u - v) ** 2)


CASES = {"order_1": (order_1, 100), "order_2": (order_2, 70), "distance": (distance, 100)}


def test_the_generated_values_are_round_off_at_the_exact_zeros():
    """The premise: each closed form is a nonzero round-off where every sample is exactly 0 (identical)."""
    rng = np.random.default_rng(OFFSET)
    for name, theta in (("order_1", math.pi), ("order_2", math.pi), ("distance", 0.0)):
        theory, estimate = CASES[name][0](rng, theta, 1.0)
        assert estimate.identical and estimate.mean == 0.0
        assert isinstance(theory, Rounded) and carried_scale(theory) >= 0.1, name
    assert float(ORDER_1(1.0, 1.0, math.pi)) != 0 and float(ORDER_2(1.0, 1.0, math.pi)) < 0


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", range(10))
def test_plain_within_error_holds_at_the_exact_zero_for_every_seed(name, seed):
    """No scale=: the generated value's carried term size is the floor. Seeds 0–9, |x| from 1e-100 to 1e100."""
    simulate, top = CASES[name]
    theta = 0.0 if name == "distance" else math.pi
    rng = np.random.default_rng(seed + OFFSET)
    for log_norm in (-top, -7, 0, 13, top):
        theory, estimate = simulate(rng, theta, 10.0**log_norm)
        evidence = within_error(theory, estimate)
        assert evidence.holds, (name, log_norm, evidence.note)
        assert evidence.figures["roundoff_scale"] >= 0.1 * 10.0 ** (log_norm * (4 if name == "order_2" else 2))


def _claim_of(name: str, factor: float, expect: str):
    simulate, top = CASES[name]

    @claim(f"carried.{name}_{'true' if factor == 1 else 'false'}", expect=expect,
           parameters=st.fixed_dictionaries({"theta": st.floats(0, math.pi), "log_norm": st.floats(-top, top)}),
           examples={"quick": 12, "thorough": 40})
    def check(p, ctx):
        """The kernel by Monte Carlo, within 5 SE and the generated value's own round-off (no scale=)."""
        theory, estimate = simulate(ctx.rng, p["theta"], 10.0 ** p["log_norm"])
        return within_error(factor * theory, estimate)

    return check


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_claims_hold_over_the_whole_range_and_their_false_variants_are_refuted(name):
    """Drawn over θ ∈ [0, π] (ends included) and |x| over 10^±100: the kernel holds, twice the kernel is refuted."""
    for seed in (OFFSET, OFFSET + 1):
        result = run_claim(_claim_of(name, 1.0, "holds"), seed=seed)
        assert result.status == "holds", str(result)
        assert any(e.parameters["theta"] in (0.0, math.pi) for e in result.examples)
    refuted = run_claim(_claim_of(name, 2.0, "refuted"), seed=OFFSET)
    assert refuted.status == "refuted", str(refuted)


def test_arithmetic_on_a_generated_value_keeps_a_correct_floor():
    """2k carries 2S, k − k0 carries S + S0, a sum of an array carries ΣS: each floor covers the actual float64
    error against a 50-digit evaluation, at scales from 1e-100 to 1e100."""
    import mpmath

    exact = sympy.lambdify([a, b, t], a * b * (sin(t) + (pi - t) * cos(t)) / (2 * pi), "mpmath")
    for log_norm in (-100, -20, 0, 20, 100):
        norm = 10.0**log_norm
        thetas = np.array([0.0, 1.0, 3.0, math.pi])
        k = ORDER_1(norm, norm, thetas)
        with mpmath.workdps(50):
            truth = [exact(mpmath.mpf(norm), mpmath.mpf(norm), mpmath.mpf(x)) for x in thetas]
        cases = [(2 * k, [2 * x for x in truth]), (k - k[0], [x - truth[0] for x in truth]), (k.sum(), [sum(truth)]),
                 (np.mean(k), [sum(truth) / 4]), (np.sqrt(k), [mpmath.sqrt(x) for x in truth])]
        if abs(log_norm) <= 50:  # k² of |x|² = 1e200 overflows
            cases.append((k * k, [x * x for x in truth]))
        for value, reference in cases:
            scale = np.atleast_1d(carried_scale(value))
            error = np.abs(np.atleast_1d(np.asarray(value, dtype=float)) - np.array([float(x) for x in reference]))
            assert np.all(error <= 16 * 2.0**-52 * scale), (log_norm, error, scale)
        assert carried_scale(2 * k)[3] == pytest.approx(2 * carried_scale(k)[3])
        assert carried_scale(k - k[0])[3] == pytest.approx(carried_scale(k)[3] + carried_scale(k)[0])


def test_a_scale_is_never_claimed_where_none_was_derived():
    """float(), comparisons, integer rounding and an out-of-rule function give plain values; an exact plain zero
    against a plain round-off is not rescued."""
    k = ORDER_1(1.0, 1.0, math.pi)
    assert carried_scale(float(k)) is None and carried_scale(np.floor(k)) is None and not isinstance(k > 0, Rounded)
    assert carried_scale(np.linalg.norm(np.atleast_1d(k))) is None
    assert within_error(float(k), mean_estimate(np.zeros(100))).status != "holds"


def test_close_at_most_and_exceeds_take_the_carried_scale_and_say_when_it_decides():
    k = ORDER_1(1.0, 1.0, math.pi)
    identity = close(k, 0.0, rtol=0)
    assert identity.holds and "round-off floor alone" in identity.note and identity.figures["roundoff_scale"] > 0.1
    bound = at_most(-k, -1e-3 * k, tolerance=0)  # a ≤ that only round-off makes true (−k < 0 < … ) is said so
    assert bound.holds
    assert not close(2 * k + 1e-13, 0.0, rtol=0).holds  # a real gap beyond 16 ulps of the terms still refutes
    assert exceeds(mean_estimate(np.random.default_rng(OFFSET).normal(1.0, 0.1, 400)), k).holds


def test_the_concise_form_takes_the_carried_scale_through_the_users_arithmetic(tmp_path):
    from attnverify import Theory

    theory = Theory("carried_concise")
    mine = theory.monte_carlo(
        lambda rng, n, theta: np.zeros(n) + 0.0 * theta,
        expected=lambda theta: 3 * ORDER_1(1.0, 1.0, theta) - ORDER_1(1.0, 1.0, theta) * 2 - ORDER_1(1.0, 1.0, theta),
        resolution=1e-3, budget=5_000, name="zero", statement="0 = 3k − 2k − k", theta=st.just(math.pi))
    result = run_claim(mine, seed=OFFSET)
    assert result.status == "holds", str(result)
