"""One comparison a = b (`compare`): symbolically, else numerically, else with its unknowns replaced by
generic functions and moments; memoised in the process and on disk under the project's cache
(``cache_directory("derivation_steps", checker_version())``, ``ATTNVERIFY_KEEP_DERIVATIONS=0`` turns the disk off),
and run in a forked child within the step's budget when called on its own."""

from __future__ import annotations

import functools
from dataclasses import replace
import json
import random
from pathlib import Path

import mpmath
import sympy
from sympy.core.function import AppliedUndef

from ...base.files import fingerprint, read_entry, write_entry
from ...base.cache import cache_directory, keeping_derivations
from ..gaussian import Expectation, moments_taken, polynomial_in
from .outcome import StepCheck, combined, noted, unchecked
from .budget import BudgetSpent, CLOCK, Child, POLL, Watch, any_cut, budget_outcome, can_fork, is_cut, step_budget
from .expressions import carried_out, has_order, is_zero_value, kind_of, shape_of, unevaluable, unknowns_of, zero_like
from .symbolic import asymptotic, proved
from .work import warm
from .points import POINTS, QUADRATURE_POINTS
from .numeric import numeric_check


@functools.lru_cache(maxsize=None)
def checker_version() -> str:
    """The fingerprint of this package's sources, of the Gaussian engine's (`..gaussian`, which evaluates
    expectations) and of sympy's and mpmath's versions: a new checker checks afresh."""
    here = Path(__file__).parent
    sources = [*sorted(here.glob("*.py")), *sorted((here.parent / "gaussian").glob("*.py"))]
    return fingerprint(f"sympy {sympy.__version__} mpmath {mpmath.__version__}",
                       *(part for path in sources for part in (path.name, path.read_bytes())))


_MEMORY: dict[str, StepCheck] = {}
"""Comparison key → its outcome, in this process (the disk keeps them across processes)."""


def remember(key: str, outcome: StepCheck) -> None:
    """Keep in this process an outcome that a forked child decided and kept on disk."""
    _MEMORY[key] = outcome


def _cache_path(key: str) -> Path:
    return cache_directory("derivation_steps", checker_version()) / f"{key}.entry"


def _from_json(payload: bytes):
    data = json.loads(payload)
    if isinstance(data, list):
        return tuple(StepCheck.from_dict(d) for d in data)
    return StepCheck.from_dict(data)


def comparison_key(a, b) -> str:
    """The cache key of comparing ``a`` with ``b``: SHA-256 of their ``srepr`` (assumptions included)."""
    return fingerprint(sympy.srepr(a), sympy.srepr(b))


def compare(a, b, *, budget: float | None = None) -> StepCheck:
    """Whether ``a`` equals ``b``: proved symbolically, agreeing numerically, failing at a point, or unchecked
    (see the module docstring); memoised in the process and on disk. Inside a derivation's walk it runs under the
    step's budget; called on its own, in a forked child limited to ``budget`` CPU seconds (`step_budget`),
    whose outcome past them is ``unchecked: budget of N CPU s spent (…)``. An outcome the time safety net cut
    short (`is_cut`) is neither kept nor remembered: the next call decides it afresh."""
    with sympy.evaluate(True):  # the checker's arithmetic evaluates, whatever the caller's setting
        return _compare_kept(a, b, budget)


def _compare_kept(a, b, budget: float | None) -> StepCheck:
    key = comparison_key(a, b)
    if key in _MEMORY:
        return _MEMORY[key]
    outcome = read_kept(key)
    if not isinstance(outcome, StepCheck):
        if can_fork():
            warm()  # once per process, before the fork: the child starts with sympy's tables built
            outcome = _compare_forked(a, b, key, step_budget(budget))
            if outcome.detail.startswith("the checker's process"):
                return outcome
        else:
            outcome = _compare(a, b, random.Random(int(key[:16], 16)))
        if is_cut(outcome):
            return outcome
        write_kept(key, outcome)
        CLOCK.tell(("kept", key, outcome.as_dict()))
    _MEMORY[key] = outcome
    return outcome


def _compare_forked(a, b, key: str, budget: float) -> StepCheck:
    """`_compare` in a forked child within ``budget`` CPU seconds (killed past them if it does not stop,
    `Watch`)."""

    def work():
        try:
            with CLOCK.limit(budget):
                CLOCK.trying = "reading the sides"
                return _compare(a, b, random.Random(int(key[:16], 16))).as_dict()
        except BudgetSpent:
            return budget_outcome(budget, CLOCK.trying).as_dict()

    child, trying = Child(work), ""
    watch = Watch(child, budget)
    try:
        while True:
            messages = child.receive(POLL)
            if messages is None:
                return unchecked("the checker's process ended unexpectedly")
            for message in messages:
                if message[0] == "trying":
                    trying = message[1]
                elif message[0] == "result":
                    return StepCheck.from_dict(message[1])
                elif message[0] == "error":
                    return unchecked(f"the checker's process failed ({message[1]})")
            if not messages and watch.over():
                return budget_outcome(budget, trying, killed=True)
    finally:
        child.end(kill=True)


def read_kept(key: str):
    """The kept outcome of a comparison (a StepCheck) or of a derivation (a tuple of them), or None (also for one
    that a time safety net cut short, which is checked again)."""
    if not keeping_derivations():
        return None
    kept = read_entry(_cache_path(key), key, _from_json)  # a damaged one is set aside: checked again
    return None if kept is None or any_cut(kept) else kept


def write_kept(key: str, outcome) -> None:
    """Keep a decided outcome on disk; one that a time safety net cut short is not written."""
    if not keeping_derivations() or any_cut(outcome):
        return
    path = _cache_path(key)
    data = [o.as_dict() for o in outcome] if isinstance(outcome, tuple) else outcome.as_dict()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only or full disk: the outcome stays in memory
        return
    write_entry(path, key, json.dumps(data).encode())


def _compare(a, b, rng: random.Random) -> StepCheck:
    a, b = carried_out(sympy.sympify(a)), carried_out(sympy.sympify(b))
    if shape_of(a) != shape_of(b):
        if is_zero_value(a) or is_zero_value(b):  # 0 against a zero matrix
            a, b = (zero_like(b), b) if is_zero_value(a) else (a, zero_like(a))
        else:
            return StepCheck("failed", f"the sides differ in shape: {kind_of(a)} {shape_of(a)[1:]} vs "
                                       f"{kind_of(b)} {shape_of(b)[1:]}")
    if isinstance(a, sympy.Tuple):
        return combined([_compare(x, y, rng) for x, y in zip(a, b)])
    if has_order(a) or has_order(b):
        return asymptotic(a, b)
    why = unevaluable(a) or unevaluable(b)
    unknown = unknowns_of(a) | unknowns_of(b)
    quadrature = a.has(Expectation) or b.has(Expectation)
    unevaluated = a.has(sympy.Derivative, sympy.Subs) or b.has(sympy.Derivative, sympy.Subs)
    stopped, notes = [], []
    proof = proved(a, b, cheap=bool(why or unknown or quadrature or unevaluated), stopped=stopped, notes=notes)
    if proof:
        return StepCheck("symbolic", proof)
    decided = _decided(a, b, rng, why, unknown, quadrature)
    for note in notes:
        decided = noted(decided, note)
    if stopped:
        return replace(noted(decided, stopped[0]), cut=stopped[0])
    return decided


def _decided(a, b, rng: random.Random, why, unknown, quadrature) -> StepCheck:
    """a = b decided where sympy did not prove it: unchecked (why), with unknowns, or numerically."""
    if why:
        return unchecked(why)
    if unknown:
        return _with_unknowns(a, b, unknown, rng)
    conditional = _conditionally(a, b, rng) if quadrature else None
    if conditional is not None:
        return conditional
    return numeric_check(a, b, rng, QUADRATURE_POINTS if quadrature else POINTS)


def _conditionally(a, b, rng: random.Random) -> StepCheck | None:
    """Two Gaussian expectations over the same laws but for variables the integrand is a polynomial in (whose
    moments are exact): their integrands, those variables averaged out, agree at every value of the others, so the
    expectations do — checked at random points without quadrature. None when that does not hold (the full
    comparison then decides)."""
    if not (isinstance(a, Expectation) and isinstance(b, Expectation) and a.is_gaussian and b.is_gaussian):
        return None
    common = set(a.laws) & set(b.laws)
    if not common:
        return None
    reduced = [_averaged(side, common) for side in (a, b)]
    if any(r is None for r in reduced):
        return None
    outcome = numeric_check(*reduced, rng, POINTS)
    if outcome.outcome != "numeric":
        return None
    names = ", ".join(sorted(str(law[0]) for law in common))
    return StepCheck("numeric", f"{outcome.detail}; the integrands agree given {names} (the other variables "
                                f"averaged exactly)", points=outcome.points, digits=outcome.digits,
                     limited=outcome.limited)


def _averaged(expectation: Expectation, common: set):
    """The integrand of ``expectation`` averaged over its variables outside ``common`` (each must enter as a
    polynomial: exact moments), or None."""
    others = [law for law in expectation.laws if law not in common]
    standard = [sympy.Dummy(f"x{k}", real=True) for k in range(len(others))]
    integrand = expectation.integrand.xreplace(
        {law[0]: law[1] + sympy.sqrt(law[2]) * x for law, x in zip(others, standard)})
    if not all(polynomial_in(integrand, x) for x in standard):
        return None
    return moments_taken(integrand, standard)


def _random_function(function, rng_names: list) -> sympy.Lambda:
    """A generic smooth function of as many arguments as ``function`` takes (its coefficients are new symbols,
    which the numeric check draws at random): c₀ + Σ (cᵢxᵢ + eᵢxᵢ²) + g·exp(Σ dᵢxᵢ)."""
    arity = next(iter(function.nargs)) if function.nargs.is_FiniteSet and len(function.nargs) == 1 else 1
    xs = [sympy.Dummy(f"x{k}") for k in range(arity)]

    def coefficient(tag, k=""):
        symbol = sympy.Symbol(f"{function.__name__}·{tag}{k}", real=True)
        rng_names.append(symbol)
        return symbol

    body = coefficient("c", 0) + coefficient("g") * sympy.exp(sum(coefficient("d", k) * x for k, x in enumerate(xs)))
    body += sum(coefficient("c", k + 1) * x + coefficient("e", k) * x**2 for k, x in enumerate(xs))
    return sympy.Lambda(tuple(xs), body)


def _with_unknowns(a, b, unknown: set, rng: random.Random) -> StepCheck:
    """a = b whatever the unknowns are: each unevaluated function replaced by a generic function and each moment
    by a number, all drawn at random; agreement is a numeric check. A difference leaves a step with unevaluated
    functions unchecked (it may hold for the actual functions only); one with moments only fails (the moments of
    distinct products of random variables of unspecified law are unconstrained by any identity, so a step that
    claims an identity for every law and fails at generic moments fails for some law)."""
    coefficients: list = []
    functions = {f: _random_function(f, coefficients) for f in unknown if not isinstance(f, Expectation)}
    moments = sorted((m for m in unknown if isinstance(m, Expectation)), key=sympy.srepr)
    values = {m: sympy.Symbol(f"E[{sympy.sstr(m.integrand)}]", real=True) for m in moments}

    def concrete(side):
        side = side.xreplace(values)
        if functions:
            side = side.replace(lambda e: isinstance(e, AppliedUndef) and e.func in functions,
                                lambda e: functions[e.func](*e.args))
        return carried_out(side)

    named = sorted(str(f) for f in functions)
    names = " and ".join(([f"the unevaluated function{'s' * (len(named) > 1)} {', '.join(named)}"] if named else [])
                         + (["moments of random variables of unspecified law"] if moments else []))
    left, right = concrete(a), concrete(b)
    if unknowns_of(left) | unknowns_of(right) or unevaluable(left) or unevaluable(right):
        return unchecked(f"holds {names}, which the checker could not replace by generic ones")
    outcome = numeric_check(left, right, rng, POINTS)
    if outcome.outcome == "numeric":
        return StepCheck("numeric", f"{outcome.detail}, with {names} replaced by generic ones drawn at random",
                         points=outcome.points, digits=outcome.digits, limited=outcome.limited)
    if outcome.failed and functions:
        return unchecked(f"holds {names}: the sides differ when they are replaced by generic ones, so the step "
                          f"rests on what they are")
    if outcome.failed:  # moments of distinct products are independent over all laws: a true failure
        return StepCheck("failed", f"{outcome.detail} (with the moments of random variables of unspecified law "
                                   f"drawn at random; the step claims it for every law)", points=outcome.points,
                         point=outcome.point, values=outcome.values)
    return outcome
