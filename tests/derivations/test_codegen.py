"""Generated evaluators agree with sympy evaluated at high precision (mpmath)."""

from functools import lru_cache

import mpmath
import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from sympy.codegen.cfunctions import log1p

from attnverify.theories.single_location import derivations as sl
from attnverify.derivations.codegen import BackendPrinter, evaluator, generate_source
from attnverify.derivations.gaussian import ErfSquareMean, zeta_mpmath
from attnverify.base.backend import cupy_works, get_backend

x, y = sympy.symbols("x y", real=True)


_MPMATH = {"ErfSquareMean": zeta_mpmath}


@lru_cache(maxsize=None)
def _term_functions(expr, symbols):
    terms = sympy.Add.make_args(sympy.expand(expr, deep=False))
    return [sympy.lambdify(symbols, t, modules=[_MPMATH, "mpmath"]) for t in terms]


def high_precision(expr, values, dps=40):
    """(value, magnitude): the expression at ``dps`` digits and the sum of its terms' sizes.

    Round-off of a float64 evaluation is bounded by ~1e-16 times the magnitude of the terms
    that are added, not of their (possibly cancelling) sum: that magnitude scales the tolerance.
    """
    symbols = tuple(values)
    with mpmath.workdps(dps):
        args = [mpmath.mpf(v) for v in values.values()]
        terms = [f(*args) for f in _term_functions(expr, symbols)]
        return float(mpmath.fsum(terms)), float(mpmath.fsum(abs(t) for t in terms))


def test_printer_routes_special_functions_to_the_backend_module():
    source, _ = generate_source([sympy.erf(x) + sympy.erfc(y) + log1p(x) + sympy.asin(y)], [x, y])
    assert "special.erf(" in source and "special.erfc(" in source
    assert "xp.log1p(" in source and "xp.arcsin(" in source
    assert "math." not in source


def test_printer_refuses_functions_without_array_implementation():
    with pytest.raises(NotImplementedError, match="no array implementation"):
        BackendPrinter().doprint(sympy.Function("mystery")(x))


def test_common_subexpressions_are_eliminated():
    shared = sympy.exp(sympy.sin(x) * y)
    source, _ = generate_source([shared + shared**2, shared * x], [x, y])
    assert source.count("xp.exp(") == 1


def test_evaluators_are_cached_by_expression_and_backend():
    first = evaluator(sympy.erf(x) * y, [x, y])
    assert evaluator(sympy.erf(x) * y, [x, y]) is first
    assert evaluator(sympy.erf(x) * x, [x, y]) is not first


def test_evaluator_rejects_free_symbols_not_among_arguments():
    with pytest.raises(ValueError, match="not among the arguments"):
        evaluator(x * y, [x])


def test_an_undefined_value_names_the_arguments_where_it_is():
    """1/√(1 − 2a) at a = (0.1, 0.8): NaN at the second entry, named with its value."""
    a = sympy.Symbol("a", positive=True)
    tilt = evaluator(1 / sympy.sqrt(1 - 2 * a), [a])
    with pytest.raises(ValueError, match=r"undefined \(NaN\) at a = 0\.8 \(entry \(1,\) of the \(2,\) result\)"):
        tilt(np.array([0.1, 0.8]))
    with pytest.raises(ValueError, match=r"undefined \(NaN\) at a = 0\.75: outside its domain"):
        tilt(0.75)


def test_a_sequence_of_expressions_gives_a_tuple_even_of_one():
    """One expression: one array; a list or tuple of expressions (one-element too): a tuple of arrays."""
    assert isinstance(evaluator(x**2, [x])(3.0), np.ndarray)
    (square,) = evaluator([x**2], [x])(3.0)
    assert float(square) == 9.0
    assert isinstance(evaluator((x**2,), [x])(3.0), tuple)


def test_evaluator_broadcasts_constant_outputs():
    out = evaluator([sympy.Integer(2), x], [x])(np.arange(3.0))
    assert out[0].shape == (3,) and np.all(out[0] == 2)


@settings(max_examples=40)
@given(t=st.floats(-60, 60), g=st.floats(1e-3, 30))
def test_zeta_evaluator_matches_mpmath(t, g):
    value, _ = high_precision(ErfSquareMean(x, y), {x: t, y: g})
    got = float(evaluator(ErfSquareMean(x, y), [x, y])(t, g))
    # float64 quadrature of a smooth integrand: a few ulps of the O(1) value
    assert abs(got - value) <= 1e-13 * max(1.0, abs(value))


overlap = st.floats(-0.95, 0.95)
parameters = st.fixed_dictionaries(
    {
        "lam": st.floats(0.02, 3.0),
        "gamma": st.floats(0.2, 2.0),
        "d": st.integers(4, 2000),
        "L": st.integers(1, 60),
        "eps": st.floats(0.0, 1.0),
    }
)


@settings(max_examples=25)
@given(o=st.tuples(overlap, overlap, overlap, overlap, overlap), p=parameters)
def test_risk_and_gradient_evaluators_match_mpmath(o, p):
    symbols = sl.OVERLAPS + sl.PARAMETERS
    values = dict(zip(symbols, list(o) + [p["lam"], p["gamma"], p["d"], p["L"], p["eps"]]))
    expressions = (sl.population_risk_expression(),) + sl.risk_gradient_expressions()
    generated = evaluator(expressions, symbols)(*values.values())
    for expr, got in zip(expressions, generated):
        value, magnitude = high_precision(expr, values)
        assert abs(float(got) - value) <= 1e-12 * max(magnitude, 1e-300), (expr, got, value)


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_works(), reason="needs a working cupy GPU backend")
def test_numpy_and_cupy_evaluators_agree():
    cp = get_backend("cupy")
    rng = np.random.default_rng(0)
    o = rng.uniform(-0.9, 0.9, size=(5, 200))
    args = (*o, 0.3, 0.7, 400.0, 10.0, 0.1)
    symbols = sl.OVERLAPS + sl.PARAMETERS
    exprs = (sl.population_risk_expression(),) + sl.risk_gradient_expressions()
    on_cpu = evaluator(exprs, symbols)(*args)
    on_gpu = evaluator(exprs, symbols, cp)(*args)
    for a, b in zip(on_cpu, on_gpu):
        np.testing.assert_allclose(cp.to_numpy(b), a, rtol=1e-12, atol=1e-14)
