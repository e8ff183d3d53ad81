"""Each step's check within its budget (:func:`attnverify.derivations.steps.step_budget`), the step being checked
named to the progress display, and integrals and Gaussian expectations of erf of correlated normals checked in
seconds (:func:`attnverify.derivations.gaussian.standard_mean`, :func:`~attnverify.derivations.gaussian.integral_value`): the
arcsine kernel derived twice as a user writes it (``erf_kernel_theories.py``), and with a wrong factor."""

from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path

import mpmath
import pytest
import sympy
from sympy import Eq, Integral, Rational, asin, cos, erf, exp, pi, sqrt, symbols

from attnverify.checks import run_claim
from attnverify.derivations import steps
from attnverify.derivations.steps import comparison as comparing, expressions
from attnverify.derivations.derivation import DerivationRecorder
from attnverify.derivations.gaussian import QuadratureShort, integral_value, standard_mean

x, y, u, c = symbols("x y u c", positive=True)
K = symbols("K")


@pytest.fixture(autouse=True)
def _cold(tmp_path, monkeypatch):
    """A cold cache: a new cache folder, nothing kept in memory, derivations derived afresh."""
    monkeypatch.setenv("ATTNVERIFY_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("ATTNVERIFY_KEEP_DERIVATIONS", "0")
    monkeypatch.delenv(steps.BUDGET_VARIABLE, raising=False)
    monkeypatch.setattr(comparing, "_MEMORY", {})
    steps.check_derivation.cache_clear()


def slow_step():
    """A change of variables x = 2u in a double integral: sympy cannot do it, and its numeric check takes about
    15 s (nested 30-digit quadrature at 5 points)."""
    rec = DerivationRecorder("demo.slow", "A slow step", "here")
    rec.step("def", Eq(K, Integral(Integral(exp(-c * x * y) * cos(x + y), (x, 0, 1)), (y, 0, 1))), kind="definition")
    rec.step("x = 2u", Eq(K, Integral(Integral(2 * exp(-2 * c * u * y) * cos(2 * u + y), (u, 0, Rational(1, 2))),
                                      (y, 0, 1))))
    return rec.finish()


def test_the_budget_is_an_argument_an_environment_variable_or_the_default(monkeypatch):
    assert steps.step_budget() == steps.STEP_BUDGET == 60.0
    assert steps.step_budget(2.5) == 2.5
    monkeypatch.setenv(steps.BUDGET_VARIABLE, "7")
    assert steps.step_budget() == 7.0 and steps.step_budget(3) == 3.0
    for bad in (0, -1, float("inf"), float("nan"), "soon", True):
        with pytest.raises(ValueError, match=r"^budget must be a positive number of seconds \(0 < budget < inf\)"):
            steps.step_budget(bad)
    monkeypatch.setenv(steps.BUDGET_VARIABLE, "0")
    with pytest.raises(ValueError, match="^ATTNVERIFY_STEP_BUDGET must be a positive number of seconds"):
        steps.check_derivation(slow_step())


def test_a_step_past_its_budget_is_unchecked_named_and_not_kept():
    announced = []
    start = time.perf_counter()
    checks = steps.check_derivation(slow_step(), budget=3, on_step=lambda *a: announced.append(a))
    seconds = time.perf_counter() - start
    assert [c.outcome for c in checks] == ["definition", "unchecked"]
    assert checks[1].detail.startswith("budget of 3 s spent (the numeric check at point "), checks[1].detail
    assert seconds < 3 + 3, seconds
    assert announced == [(2, 2, "x = 2u", 3.0)]
    assert comparing.read_kept(steps.derivation_key(slow_step())) is None  # a later run tries again


def test_a_comparison_on_its_own_and_a_walk_from_another_thread_keep_their_budget():
    d = slow_step()
    a, b = (expressions.resolved(s.expression.rhs, {}) for s in d.steps)
    start = time.perf_counter()
    alone = steps.compare(a, b, budget=1)
    assert alone.outcome == "unchecked" and alone.detail.startswith("budget of 1 s spent (")
    found = {}
    worker = threading.Thread(target=lambda: found.update(checks=steps.check_derivation(d, budget=1)))
    worker.start()
    worker.join(30)
    assert found["checks"][1].detail.startswith("budget of 1 s spent (the numeric check at point 1 of 5")
    assert time.perf_counter() - start < 2 + 6


def test_the_mean_of_two_erfs_of_correlated_normals_is_the_arcsine_to_30_digits():
    """Williams (1997): E[erf(u) erf(v)] = (2/π) asin(2C_uv/√((1 + 2C_uu)(1 + 2C_vv))), (u, v) = (a·z, b·z)."""
    z1, z2 = symbols("z1 z2", real=True)
    a, b = (Rational(3, 4), Rational(-5, 4)), (Rational(9, 10), Rational(1, 3))
    exact = 2 / pi * asin(2 * (a[0] * b[0] + a[1] * b[1])
                          / sqrt((1 + 2 * (a[0] ** 2 + a[1] ** 2)) * (1 + 2 * (b[0] ** 2 + b[1] ** 2))))
    start = time.perf_counter()
    value = standard_mean(erf(a[0] * z1 + a[1] * z2) * erf(b[0] * z1 + b[1] * z2), [z1, z2], 108)
    assert time.perf_counter() - start < 5
    with mpmath.workdps(40):
        assert abs(value - sympy.N(exact, 40)._to_mpmath(140)) < mpmath.mpf(10) ** -25


def test_a_1d_integral_is_mpmath_quad_with_its_error_checked():
    t = symbols("t", real=True)
    value = integral_value(Integral(exp(-t**2), (t, 0, 1)), 108)
    assert abs(value - sympy.N(sqrt(pi) / 2 * erf(1), 40)._to_mpmath(140)) < mpmath.mpf(10) ** -28
    with pytest.raises(QuadratureShort, match="mpmath.quad reached about"):
        integral_value(Integral(sympy.sin(1 / t), (t, 0, 1)), 108)


def _theories():
    path = Path(__file__).with_name("erf_kernel_theories.py")
    spec = importlib.util.spec_from_file_location("erf_kernel_theories", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name, status", [
    ("erf_expectation", "holds"), ("erf_expectation_wrong", "refuted"),
    pytest.param("erf_integral", "holds", marks=pytest.mark.thorough),
    pytest.param("erf_integral_wrong", "refuted", marks=pytest.mark.thorough)])
def test_the_erf_kernel_derived_as_a_user_writes_it_is_checked_within_a_minute(name, status):
    theory = getattr(_theories(), name)
    start = time.perf_counter()
    result = run_claim(theory.claim_list()[-1], profile="quick", seed=0)
    seconds = time.perf_counter() - start
    checks = result.examples[0].evidence.figures["steps"]
    outcomes = [check["outcome"] for check in checks.values()]
    assert result.status == status and seconds < 60, (seconds, checks)
    assert outcomes[0] == "definition" and outcomes[1] in ("symbolic", "numeric"), checks
    if status == "holds":
        assert outcomes[2] in ("symbolic", "numeric"), checks
    else:  # the planted 1/π for 2/π
        assert outcomes[2] == "failed" and "differ in the 1st digit" in list(checks.values())[2]["detail"]
