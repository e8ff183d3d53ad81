"""float() of a generated value drops the round-off it carries: identical draws against it say so."""

import math

import numpy as np
import sympy
from sympy import cos, pi, sin

from attnverify.checks import within_error
from attnverify.derivations.codegen import evaluator
from attnverify.numerics.statistics import mean_estimate

a, b, t = sympy.symbols("a b theta", positive=True)
KERNEL = evaluator(a * b * (sin(t) + (pi - t) * cos(t)) / (2 * pi), [a, b, t])  # sin(fl(π)) ≠ 0: round-off


def test_identical_draws_against_a_float_of_a_generated_value_say_to_pass_the_value_itself():
    carried = KERNEL(1.0, 1.0, math.pi)
    zeros = mean_estimate(np.zeros(1000))
    assert within_error(carried, zeros).status == "holds"
    for estimate in (zeros, mean_estimate(np.zeros(1000), bounds=(0.0, 10.0))):
        evidence = within_error(float(carried), estimate)
        assert evidence.status == "inconclusive"
        assert "pass that value itself, not float() of it" in evidence.inconclusive, evidence.inconclusive
        assert "float() drops the round-off it carries" in evidence.inconclusive


def test_a_stated_scale_needs_no_such_advice():
    evidence = within_error(1e-17, mean_estimate(np.zeros(1000)), scale=1e-30)
    assert evidence.status == "inconclusive" and "float()" not in evidence.inconclusive
