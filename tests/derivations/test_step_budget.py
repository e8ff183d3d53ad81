"""Each step's check within its budget (:func:`attnverify.derivations.steps.step_budget`), the step being checked
named to the progress display, and integrals and Gaussian expectations of erf of correlated normals checked in
seconds (:func:`attnverify.derivations.gaussian.standard_mean`, :func:`~attnverify.derivations.gaussian.integral_value`): the
arcsine kernel derived twice as a user writes it (``erf_kernel_theories.py``), and with a wrong factor."""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

import mpmath
import pytest
import sympy
from sympy import Eq, Integral, Rational, asin, cos, erf, exp, pi, sqrt, symbols

from attnverify.base.files import unpack_entry, write_entry
from attnverify.checks import run_claim
from attnverify.derivations import steps
from attnverify.derivations.steps import comparison as comparing, expressions
from attnverify.derivations.steps.budget import SYMBOLIC_SHARE
from attnverify.derivations.derivation import DerivationRecorder
from attnverify.derivations.gaussian import QuadratureShort, integral_value, standard_mean
from attnverify.derivations.gaussian.integrals import integral_estimate

ROOT = Path(__file__).resolve().parents[2]
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
    assert steps.step_budget() == steps.STEP_BUDGET == 300.0
    assert steps.step_budget(2.5) == 2.5
    monkeypatch.setenv(steps.BUDGET_VARIABLE, "7")
    assert steps.step_budget() == 7.0 and steps.step_budget(3) == 3.0
    for bad in (0, -1, float("inf"), float("nan"), "soon", True):
        with pytest.raises(ValueError, match=r"^budget must be a positive number of CPU seconds \(0 < budget < inf\)"):
            steps.step_budget(bad)
    monkeypatch.setenv(steps.BUDGET_VARIABLE, "0")
    with pytest.raises(ValueError, match="^ATTNVERIFY_STEP_BUDGET must be a positive number of CPU seconds"):
        steps.check_derivation(slow_step())


def test_a_step_past_its_budget_is_unchecked_named_and_not_kept():
    announced = []
    checks = steps.check_derivation(slow_step(), budget=3, on_step=lambda *a: announced.append(a))
    assert [c.outcome for c in checks] == ["definition", "unchecked"]
    assert checks[1].detail.startswith("budget of 3 CPU s spent (the numeric check at point "), checks[1].detail
    assert checks[1].cut == "budget of 3 CPU s spent"
    assert announced == [(2, 2, "x = 2u", 3.0)]
    assert comparing.read_kept(steps.derivation_key(slow_step())) is None  # a later run tries again


def test_a_comparison_on_its_own_and_a_walk_from_another_thread_keep_their_budget():
    d = slow_step()
    a, b = (expressions.resolved(s.expression.rhs, {}) for s in d.steps)
    alone = steps.compare(a, b, budget=1)
    assert alone.outcome == "unchecked" and alone.detail.startswith("budget of 1 CPU s spent (")
    found = {}
    worker = threading.Thread(target=lambda: found.update(checks=steps.check_derivation(d, budget=1)))
    worker.start()
    worker.join(300)  # a safety net: the walk stops at 1 CPU s
    assert found["checks"][1].detail.startswith("budget of 1 CPU s spent (the numeric check at point 1 of 5")


def test_the_mean_of_two_erfs_of_correlated_normals_is_the_arcsine_to_30_digits():
    """Williams (1997): E[erf(u) erf(v)] = (2/π) asin(2C_uv/√((1 + 2C_uu)(1 + 2C_vv))), (u, v) = (a·z, b·z)."""
    z1, z2 = symbols("z1 z2", real=True)
    a, b = (Rational(3, 4), Rational(-5, 4)), (Rational(9, 10), Rational(1, 3))
    exact = 2 / pi * asin(2 * (a[0] * b[0] + a[1] * b[1])
                          / sqrt((1 + 2 * (a[0] ** 2 + a[1] ** 2)) * (1 + 2 * (b[0] ** 2 + b[1] ** 2))))
    start = time.process_time()  # CPU seconds: a busy machine stretches the wall time, not the work
    value = standard_mean(erf(a[0] * z1 + a[1] * z2) * erf(b[0] * z1 + b[1] * z2), [z1, z2], 108)
    assert time.process_time() - start < 5
    with mpmath.workdps(40):
        assert abs(value - sympy.N(exact, 40)._to_mpmath(140)) < mpmath.mpf(10) ** -25


def test_a_separable_double_integral_is_the_product_of_its_factors_integrals():
    """∫₀^∞ r³e^{−r²/2} ∫_{θ−π/2}^{π/2} cos φ cos(φ − θ) dφ dr (the README's radial step) = sin θ + (π − θ) cos θ,
    within its error estimate of 28 digits: the inner rule is given cos φ cos(φ − θ), not that times r³e^{−r²/2}
    (at r = 10⁻¹⁰, a value of 10⁻³⁰ against the rule's absolute error of 10⁻³⁴)."""
    r, phi = symbols("r phi", real=True)
    theta = Rational(3, 10)
    inner = Integral(r**3 * exp(-r**2 / 2) * cos(phi) * cos(phi - theta), (phi, theta - pi / 2, pi / 2))
    value, error = integral_estimate(Integral(inner, (r, 0, sympy.oo)), 108)
    exact = sympy.N(sympy.sin(theta) + (pi - theta) * cos(theta), 40)._to_mpmath(140)
    assert abs(value - exact) <= error <= 1e-28 * abs(exact)


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


def _cpu_seconds() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@pytest.mark.parametrize("name, status", [
    ("erf_expectation", "holds"), ("erf_expectation_wrong", "refuted"),
    pytest.param("erf_integral", "holds", marks=pytest.mark.thorough),
    pytest.param("erf_integral_wrong", "refuted", marks=pytest.mark.thorough)])
def test_the_erf_kernel_derived_as_a_user_writes_it_is_checked_within_a_minute_of_cpu(name, status):
    """Decided by the work bounds (no outcome cut short by time), within a minute of CPU time, this process's and
    its checker children's together (a busy machine stretches the wall time, not this)."""
    theory = getattr(_theories(), name)
    start = _cpu_seconds()
    result = run_claim(theory.claim_list()[-1], profile="quick", seed=0)
    seconds = _cpu_seconds() - start
    checks = result.examples[0].evidence.figures["steps"]
    outcomes = [check["outcome"] for check in checks.values()]
    assert result.status == status and seconds < 60, (seconds, checks)
    assert not any(check["cut"] for check in checks.values()), checks
    assert outcomes[0] == "definition" and outcomes[1] in ("symbolic", "numeric"), checks
    if status == "holds":
        assert outcomes[2] in ("symbolic", "numeric"), checks
    else:  # the planted 1/π for 2/π
        assert outcomes[2] == "failed" and "differ in the 1st digit" in list(checks.values())[2]["detail"]


def _verify_steps(path: Path, cache: Path, budget: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in (steps.BUDGET_VARIABLE, "ATTNVERIFY_BACKEND")}
    env.update(ATTNVERIFY_CACHE=str(cache), ATTNVERIFY_KEEP_DERIVATIONS="1", **(
        {steps.BUDGET_VARIABLE: budget} if budget else {}))
    done = subprocess.run([sys.executable, "-m", "attnverify", "verify", str(path), "--only", "derivation_steps"],
                          capture_output=True, text=True, env=env, cwd=path.parent)
    return done.stdout + done.stderr


def test_an_outcome_cut_short_by_time_is_not_kept_and_the_next_run_decides_it(tmp_path):
    """The README's theorem with a budget of 0.3 CPU s per step: sympy's attempts on its radial integral are cut
    short, so the step is not decided the way an unhurried run decides it; nothing cut is kept, and the same file
    run again with the default budget proves both steps, then reads them back."""
    theorem = tmp_path / "relu_kernel.py"
    theorem.write_text((ROOT / "examples" / "relu_kernel.py").read_text())
    hurried = _verify_steps(theorem, tmp_path / "cache", "0.3")
    assert "2 proved symbolically" not in hurried, hurried
    kept = [json.loads(unpack_entry(p.read_bytes(), p.stem)) for p in (tmp_path / "cache").rglob("*.entry")
            if "derivation_steps" in str(p)]
    outcomes = [o for entry in kept for o in (entry if isinstance(entry, list) else [entry])]
    assert not [o for o in outcomes if o.get("cut")], outcomes
    for _ in range(2):
        assert "3 steps: 2 proved symbolically, 0 agreeing numerically, 1 definition" in _verify_steps(
            theorem, tmp_path / "cache", None)


def test_a_kept_outcome_that_time_cut_short_is_checked_again(tmp_path, monkeypatch):
    """An entry written with a cut outcome (or by a checker that wrote the cut only into its text) is not read
    back: the comparison is decided afresh."""
    monkeypatch.setenv("ATTNVERIFY_KEEP_DERIVATIONS", "1")
    a, b = x * (x + 1), x**2 + x
    key = comparing.comparison_key(a, b)
    legacy = steps.StepCheck("unchecked", "its quadrature falls short; sympy's simplify of the sides stopped at 6 s "
                                          "(0.1 of the step's budget)")
    assert legacy.cut == "" and steps.StepCheck.from_dict(legacy.as_dict() | {"cut": ""}).cut
    for outcome in (legacy, steps.StepCheck("numeric", "5 points", points=5, digits=30.0, cut="a time limit")):
        path = comparing._cache_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_entry(path, key, json.dumps(outcome.as_dict() | {"cut": ""} if outcome is legacy
                                          else outcome.as_dict()).encode())
        assert comparing.read_kept(key) is None
    assert steps.compare(a, b).outcome == "symbolic"
    assert comparing.read_kept(key).outcome == "symbolic"


def test_a_symbolic_attempt_is_bounded_by_the_objects_it_builds_not_by_the_clock():
    """The same attempt builds the same number of sympy objects each time, to 1 % (the cache emptied first), and
    the first time within 200 (the facts sympy derives once for a new symbol; the tables it builds on a process's
    first simplify, 4,000 objects, are built before any count), is stopped past its bound whatever
    the machine's speed, and leaves sympy as it found it."""
    from sympy.core.basic import Basic

    from attnverify.derivations.steps.work import WorkSpent, bounded

    new = Basic.__dict__["__new__"]
    expression = sympy.sin(x) ** 2 + sympy.cos(x) ** 2 + sympy.gamma(x + 1) / sympy.gamma(x)
    counts = []
    for _ in range(3):
        with bounded() as count:
            assert sympy.simplify(expression) == x + 1
        counts.append(count[0])
    assert counts[1] > 100 and abs(counts[2] - counts[1]) <= counts[1] // 100
    assert abs(counts[0] - counts[1]) <= 200  # sympy's tables built before the first count (4,000 objects)
    with pytest.raises(WorkSpent):
        with bounded(counts[1] // 2):
            sympy.simplify(expression)
    assert Basic.__dict__["__new__"] is new


def test_a_checker_paused_again_and_again_decides_as_one_left_alone(monkeypatch):
    """A machine so busy that the checker runs 0.1 s in every 0.6 s (its child stopped by SIGSTOP for 0.5 s at a
    time) gives the same outcomes as an idle one: what bounds an attempt is the work it does and the CPU time it
    uses, which a stopped process does not spend. The angular integral of the README's theorem is proved by
    ``equals`` in about 0.4 CPU s, within the symbolic share of a 10 s budget (2 s of CPU), and past that share in
    wall time (the child's CPU time six times over), where a clock on the wall would have cut it."""
    import signal

    from attnverify.derivations.steps import walk

    theta, phi = symbols("theta phi", real=True)
    k, a, b = symbols("k a b", positive=True)
    rec = DerivationRecorder("demo.angular", "The angular integral", "here")
    rec.step("def", Eq(k, a * b / pi * Integral(cos(phi) * cos(phi - theta), (phi, theta - pi / 2, pi / 2))),
             kind="definition")
    rec.step("the integral", Eq(k, a * b * (sympy.sin(theta) + (pi - theta) * cos(theta)) / (2 * pi)))
    derivation = rec.finish()
    alone = steps.check_derivation(derivation, budget=10)
    steps.check_derivation.cache_clear()
    comparing._MEMORY.clear()

    done, threads, fork = threading.Event(), [], walk.Child

    def pause_again_and_again(pid):
        while not done.wait(0.1):
            try:
                os.kill(pid, signal.SIGSTOP)
                done.wait(0.5)
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                return

    def paused(work):
        child = fork(work)
        threads.append(threading.Thread(target=pause_again_and_again, args=(child.pid,), daemon=True))
        threads[-1].start()
        return child

    monkeypatch.setattr(walk, "Child", paused)
    try:
        started = time.perf_counter()
        busy = steps.check_derivation(derivation, budget=10)
        waited = time.perf_counter() - started
    finally:
        done.set()
        for thread in threads:
            thread.join()
    assert [c.outcome for c in alone] == [c.outcome for c in busy] == ["definition", "symbolic"], busy
    assert not any(c.cut for c in busy)
    share = 10 * SYMBOLIC_SHARE
    assert waited > share, f"the paused checker took {waited:.1f} s of wall time, not past the {share:g} s share"


def test_without_fork_the_alarm_of_the_caller_is_restored(monkeypatch):
    """Where there is no ``os.fork`` the walk runs in this process, under its own SIGPROF handler and timer for the
    steps; after it, the handler and timer that were there (a profiler's) are back."""
    import signal

    from attnverify.derivations.steps import budget

    monkeypatch.delattr(os, "fork")
    assert budget.CLOCK.usable()
    mine = lambda signum, frame: None  # noqa: E731
    before = signal.signal(signal.SIGPROF, mine)
    signal.setitimer(signal.ITIMER_PROF, 1000.0, 1000.0)
    try:
        rec = DerivationRecorder("demo.nofork", "No fork", "here")
        rec.step("def", Eq(K, x * (x + 1)), kind="definition")
        rec.step("expanded", Eq(K, x**2 + x))
        assert [c.outcome for c in steps.check_derivation(rec.finish(), budget=30)] == ["definition", "symbolic"]
        assert signal.getsignal(signal.SIGPROF) is mine and signal.getitimer(signal.ITIMER_PROF)[1] == 1000.0
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, before)


def test_a_condition_whose_identity_check_was_cut_short_is_not_kept(monkeypatch):
    """t² − 4 = 0 is first tried as an identity; with the symbolic attempts cut short by the time net at once, the
    step that a later solution t = 2 makes a condition still says it was cut, and the derivation is not kept."""
    from attnverify.derivations.steps import symbolic

    monkeypatch.setenv("ATTNVERIFY_KEEP_DERIVATIONS", "1")
    monkeypatch.setattr(symbolic, "SYMBOLIC_SHARE", 1e-9)
    t = symbols("t", positive=True)
    rec = DerivationRecorder("demo.condition", "A condition", "here")
    rec.step("the equation", Eq(t**2 - 4, 0))
    rec.step("its solution", Eq(t, 2))
    derivation = rec.finish()
    checks = steps.check_derivation(derivation, budget=30)
    assert checks[0].outcome == "condition" and checks[0].cut, checks
    assert comparing.read_kept(steps.derivation_key(derivation)) is None


def test_a_comparison_asked_under_evaluate_false_is_decided_as_any_other():
    with sympy.evaluate(False):
        outcome = steps.compare(sympy.sin(x) ** 2 + sympy.cos(x) ** 2, sympy.S.One)
    assert outcome.outcome == "symbolic", outcome
