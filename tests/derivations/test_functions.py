"""log-sum-exp and softmax in derivations: exact in sympy, finite in generated evaluators at large scores."""

import mpmath
import numpy as np
import pytest
import scipy.special
import sympy

from attnverify.derivations.codegen import evaluator
from attnverify.derivations.functions import LogSumExp, softmax

a, b, c = sympy.symbols("a b c", real=True)


def test_the_plain_forms_overflow_and_these_do_not():
    naive = evaluator([sympy.exp(a) / (sympy.exp(a) + sympy.exp(b))], [a, b])
    with pytest.raises(ValueError, match="NaN"):
        naive(1000.0, 999.0)
    weights = evaluator([softmax(0, a, b, c), softmax(1, a, b, c), LogSumExp(a, b, c)], [a, b, c])
    scores = np.array([[1000.0, 999.0, -50.0], [-1e4, -1e4 + 1, -1e4 + 2], [0.1, 0.2, 0.3]])
    s0, s1, lse = weights(scores[:, 0], scores[:, 1], scores[:, 2])
    expected = scipy.special.softmax(scores, axis=1)
    # exp(aᵢ − LSE) carries the rounding of aᵢ − LSE, |aᵢ|·ε ≈ 1e4 · 1.1e-16 here: relative 1e-11 at most
    np.testing.assert_allclose(s0, expected[:, 0], rtol=1e-11)
    np.testing.assert_allclose(s1, expected[:, 1], rtol=1e-11)
    np.testing.assert_allclose(lse, scipy.special.logsumexp(scores, axis=1), rtol=1e-14)


def test_log_sum_exp_is_exactly_the_log_of_the_sum():
    expression = LogSumExp(a, b)
    assert sympy.simplify(expression.rewrite(sympy.log) - sympy.log(sympy.exp(a) + sympy.exp(b))) == 0
    # derivative: the softmax weight, equal to sympy's derivative of the plain form
    plain = sympy.log(sympy.exp(a) + sympy.exp(b))
    difference = sympy.diff(expression, a).rewrite(sympy.log) - sympy.diff(plain, a)
    assert sympy.simplify(difference) == 0


def test_high_precision_evaluation_matches_mpmath():
    value = LogSumExp(sympy.Rational(1, 3), sympy.Integer(2), sympy.Integer(-7)).evalf(40)
    with mpmath.workdps(45):
        reference = mpmath.log(mpmath.exp(mpmath.mpf(1) / 3) + mpmath.exp(2) + mpmath.exp(-7))
        reference = sympy.Float(mpmath.nstr(reference, 45), 45)
    assert abs(float(value - reference)) < 1e-35


def test_the_generated_gradient_matches_finite_differences():
    f = evaluator([LogSumExp(a, b, c), *(sympy.diff(LogSumExp(a, b, c), x) for x in (a, b, c))], [a, b, c])
    point = np.array([300.0, 301.5, 299.0])
    _, *gradient = f(*point)
    h = 1e-6
    for k in range(3):
        up, down = point.copy(), point.copy()
        up[k] += h
        down[k] -= h
        numeric = (f(*up)[0] - f(*down)[0]) / (2 * h)
        assert abs(gradient[k] - numeric) < 1e-7


@pytest.mark.parametrize("bad, message", [((0, a), "at least 2 scores"), ((3, a, b), "index must be"),
                                          ((True, a, b), "index must be")])
def test_bad_softmax_arguments_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        softmax(*bad)


def test_log_sum_exp_needs_two_arguments():
    with pytest.raises(ValueError, match="at least 2 arguments"):
        LogSumExp(a)
