"""Honest about what was not seen: identical draws, and error bars that rest on a few rare draws.

Draws that are +1 except on a rare event (−1, probability q) are the saturated erf kernel's shape: a batch of n
draws misses the event with probability (1 − q)ⁿ and then looks certain (SE 0); with a handful of events its
standard error is far too small and 5 SE of it is no bound. The rules: identical draws refute only beyond what an
unseen event of probability ln(1/δ)/n (δ = erfc(5/√2)) could move within the stated range; a spread resting on
fewer than TAIL_DRAWS draws refutes only beyond the empirical-Bernstein bound of a stated range. A true theory is
then never refuted here (false-alarm rate ≤ δ = 5.7e-7 a comparison), and a false one still is.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from attnverify import Theory
from attnverify.checks import exceeds, run_claim, st, within_error
from attnverify.numerics.sized import sized_mean
from attnverify.numerics.statistics import TAIL_DRAWS, Estimate, mean_estimate, unseen_probability

OFFSET = int(os.environ.get("ATTNVERIFY_TEST_SEED_OFFSET", "0"))


def rare(rng, n: int, q: float) -> np.ndarray:
    """+1 except with probability q, where −1: mean 1 − 2q, range [−1, 1]."""
    return np.where(rng.random(n) < q, -1.0, 1.0)


def test_identical_draws_refute_only_beyond_what_an_unseen_event_could_move():
    ones = np.ones(1000)
    assert unseen_probability(1000, 5.0) == pytest.approx(-math.log(math.erfc(5 / math.sqrt(2))) / 1000)
    near = within_error(1 - 2e-4, mean_estimate(ones, bounds=(-1, 1)))  # q = 1e-4: true, unseen in 1,000 draws
    assert near.status == "inconclusive" and "identical" in near.inconclusive
    assert near.needed["draws"] >= 2 * -math.log(math.erfc(5 / math.sqrt(2))) / 2e-4
    unbounded = within_error(1 - 2e-4, mean_estimate(ones))
    assert unbounded.status == "inconclusive" and "bounds=" in unbounded.inconclusive
    far = within_error(0.9, mean_estimate(ones, bounds=(-1, 1)))  # beyond 14.4/n · 2 = 0.029: no unseen event explains
    assert far.status == "refuted"
    assert within_error(1.0, mean_estimate(ones, bounds=(-1, 1))).holds  # agreement to round-off is consistency


@pytest.mark.parametrize("bounds", [None, (-1.0, 1.0)])
def test_a_true_mean_resting_on_a_few_rare_draws_is_never_refuted(bounds):
    """q = 3e-3, n = 1,000 (about 3 events): 300 seeds, none refutes 1 − 2q. Plain 5·SE would: where no event
    is drawn SE = 0, and with one or two events SE is a third of its true size."""
    q, plain_refutations = 3e-3, 0
    for seed in range(300):
        draws = rare(np.random.default_rng([seed, OFFSET]), 1000, q)
        estimate = mean_estimate(draws, bounds=bounds)
        evidence = within_error(1 - 2 * q, estimate)
        assert evidence.status != "refuted", (seed, evidence.note, evidence.inconclusive)
        plain_refutations += abs(estimate.mean - (1 - 2 * q)) > 5 * estimate.standard_error
    assert plain_refutations > 0  # the trap is real: P(no event in 1,000) = 5 %, so 300 seeds miss it w.p. 2e-7


def test_a_false_mean_is_still_refuted_on_rare_draws_with_a_range():
    """1,000 draws of which 3, at positions drawn from the seed, are −1: the spread rests on about 3 draws for every
    seed (a sample drawn with q = 3e-3 would miss the event altogether for 5 % of seeds)."""
    draws = np.ones(1000)
    draws[np.random.default_rng(OFFSET).choice(1000, size=3, replace=False)] = -1.0
    estimate = mean_estimate(draws, bounds=(-1, 1))
    assert estimate.tail_draws < TAIL_DRAWS
    evidence = within_error(0.5, estimate)
    assert evidence.status == "refuted" and evidence.figures["error_bar"] == "empirical-Bernstein bound"
    withheld = within_error(0.5, mean_estimate(draws))  # no range: 5·SE bounds nothing, and it says so
    assert withheld.status == "inconclusive" and "rare" in withheld.inconclusive and withheld.needed["draws"] > 1000


def test_the_sizing_draws_until_the_rare_part_is_resolved():
    """From a first batch that has seen ≤ a few events, sized_mean draws on: at the stop the true mean is within the
    error bar (z = 5), whatever the seed."""
    for seed in range(20):
        for bounds in (None, (-1.0, 1.0)):
            e = sized_mean(lambda rng, n: rare(rng, n, 1e-3), np.random.default_rng([seed, OFFSET]),
                           resolution=0.01, bounds=bounds)
            assert e.reached and within_error(1 - 2e-3, e).status == "holds", (seed, bounds, e)


def test_exceeds_on_identical_and_rare_draws():
    ones = mean_estimate(np.ones(1000), bounds=(-1, 1))
    assert exceeds(ones, 0.99).status == "inconclusive"  # an unseen −1 of probability 0.0144 could reach it
    assert exceeds(ones, 0.5).holds
    assert exceeds(mean_estimate(np.ones(1000)), 0.5).status == "inconclusive"  # no range: anything unseen


def test_bounds_are_checked():
    with pytest.raises(ValueError, match="outside the stated bounds"):
        mean_estimate([0.5, 2.0], bounds=(0, 1))
    with pytest.raises(ValueError, match=r"bounds must be \(low, high\) with low < high"):
        mean_estimate([0.5, 0.6], bounds=(1, 0))
    with pytest.raises(ValueError, match="outside Estimate.bounds"):
        Estimate(2.0, 0.1, 10, bounds=(0, 1))
    with pytest.raises(ValueError, match="bounds"):
        Theory("bad_bounds").monte_carlo(lambda rng, n, x: np.zeros(n), expected=lambda x: 0.0, resolution=0.1,
                                         bounds=(1, 0), x=st.floats(0, 1))


def test_the_saturated_erf_kernel_claim_is_never_refuted_over_its_whole_range():
    """E[erf(s w·x) erf(s w·y)] = (2/π) arcsin(2s² cos θ/(1 + 2s²)), |x| = |y| = 1, s from 1e-3 to 1e3 and θ from 0
    to π (the ends among the draws), bounds (−1, 1), resolution 0.01 + 2 %: holds for every run seed (never refuted);
    0.9 times it is refuted."""
    from scipy.special import erf

    theory = Theory("saturated_erf")

    def kernel(theta, log_s):
        s2 = 10.0 ** (2 * log_s)
        return 2 / math.pi * math.asin(2 * s2 * math.cos(theta) / (1 + 2 * s2))

    def units(rng, n, theta, log_s):
        """erf(s w·x) erf(s w·y)."""
        w = 10.0**log_s * rng.standard_normal((n, 2))
        return erf(w[:, 0]) * erf(math.cos(theta) * w[:, 0] + math.sin(theta) * w[:, 1])

    ranges = dict(theta=st.floats(0, math.pi), log_s=st.floats(-3, 3))
    true = theory.monte_carlo(units, expected=kernel, resolution=0.01, relative=0.02, bounds=(-1, 1), name="true",
                              **ranges)
    false = theory.monte_carlo(units, expected=lambda **p: 0.9 * kernel(**p), relative=0.02, bounds=(-1, 1),
                               expect="refuted", name="false", statement="(False on purpose.)", **ranges)
    for seed in range(10):
        result = run_claim(true, seed=seed + OFFSET)
        assert result.status == "holds", str(result)
        drawn = [e.parameters["log_s"] for e in result.examples]
        assert -3.0 in drawn and 3.0 in drawn
    assert run_claim(false, seed=OFFSET).status == "refuted"
