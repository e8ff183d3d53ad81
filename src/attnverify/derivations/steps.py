"""Every step of a recorded derivation checked: symbolically where sympy decides it, else numerically at random
admissible points in 30-digit arithmetic; a step its author marks as a definition or an assumption is shown as
such, and a condition (an equation to solve) is held against the later steps that solve it. On
``Expr.equals`` and the pitfalls of random complex points: shared/papers/ecosystem.md §9.

What a step claims. A derivation is read as a chain of named equalities; ``Eq(a, b)`` is a *relation* (a tuple of
``Eq``, or an ``Eq`` of tuples or of explicit matrices, is one relation per entry), checked by the first rule that
applies:

* **a new form of a name.** A left side that an earlier step gave a value (a symbol such as ℛ, an expectation
  𝔼(N), an entry K[μ, ν], a matrix symbol, a function :func:`function` f(t), or a left side that introduced a
  symbol) states that its new right side equals the *latest earlier* one. A new form in symbols no earlier step
  has is a notation: unchecked (give the notation's symbols their values in a definition first).
* **a solution.** ``Eq(x, v)`` for a symbol (or matrix symbol) x of an earlier *condition* f = 0 (the latest that
  holds x): f(x = v) = 0 is checked. A set of values (``FiniteSet``, sympy's ``solve``) after a condition: each
  value solves it for the one symbol the values lack.
* **the first value of a name**, or a left side that introduces a symbol seen in no earlier step: nothing to
  check it against: unchecked (a definition is marked ``kind="definition"``).
* **an identity.** Any other ``Eq(a, b)``: a = b for every admissible value of its symbols. A derived
  ``Eq(f, 0)`` that fails at random points is taken as a *condition*: unchecked, and later solutions are checked
  against it (write identities as ``Eq(a, b)``, and mark conditions ``kind="condition"``).
* **a plain expression**: equal to the previous step's expression (or its right side) when their shapes agree.

``kind="condition"`` marks a step's relations as equations to solve, f = lhs − rhs (a derivative of a name, such
as ``Eq(Derivative(ℛ, c), 0)``, is taken of its value); the step counts as a condition when a later step's
solution was checked against it, and is unchecked otherwise. ``substitute={κ: 1, …}`` on a step says that it
holds at those values: both sides (and the earlier form of a name) are taken there, after the names are resolved
and again after (a value may be written in names): a specialisation, a change of variables, a point.

Every name an earlier step gave a value is replaced by its latest value (repeatedly) before a comparison, so a
step that assembles earlier results is checked against them; an application f(2, ω) of a :func:`function` whose
value a step gave at symbols, f(t, θ) = …, is that value at t = 2, θ = ω. A derivative by a symbol that is itself
a name keeps its variable bound (it becomes Subs(Derivative(f(ξ), ξ), ξ, x)). Then derivatives and substitutions
are carried out (sympy's ``doit``; a derivative by a matrix symbol sum by sum), and expectations over random
variables of unspecified law (:class:`.expectation.Expectation` over plain symbols) are written by linearity as
combinations of moments. Each comparison (:func:`compare`) is decided

1. *symbolically*: the same expression, ``expand(a − b) == 0``, or (at most :data:`SIMPLIFY_OPERATIONS`
   operations) ``simplify(a − b) == 0`` or ``a.equals(b) is True`` (None, undecided, is never a pass; sums and
   products are never expanded nor simplified, the numeric check takes milliseconds); an Order
   term (``+ O(x**4)``) by ``Order.contains`` of the remainder;
2. else *numerically* at :data:`POINTS` points (:data:`QUADRATURE_POINTS` where a side holds a Gaussian
   expectation) from a generator seeded by the comparison (the same comparison always gets the same points),
   evaluated by sympy's ``evalf`` at :data:`WORKING_DIGITS` digits (mpmath underneath, ``nsum`` for infinite
   sums); a definite integral by :func:`.expectation.integral_estimate` (over ℝⁿ with a Gaussian weight: an
   expectation; else mpmath.quad of bounded degree whose error estimate must reach the working precision, else
   the step is unchecked, "its quadrature falls short"); a Gaussian expectation by
   :meth:`.expectation.Expectation.value_at`, both through :func:`.expectation.standard_mean` (exact moments,
   conditioning E[erf(α + βZ)] = erf(α/√(1 + 2β²)) after a rotation of the erf arguments, then one integral by
   Gauss–Legendre panels), each with its error estimate, carried through the side by difference quotients
   (:func:`_propagated`). The values are exact rationals that respect the symbols'
   assumptions: positive in (0.1, 2.5), negative in (−2.5, −0.1), nonnegative in (0, 2.5), other real or
   unassumed symbols in (−1.5, 1.5), each of these taking both signs over the points (√(x²) = x cannot pass by
   luck); integers in 1..3, 0..3, −3..−1 or −3..3 by sign. Symbols that count (matrix dimensions, limits of sums
   and products) are integers in 1..3, drawn until the matrices' shapes fit together. A matrix symbol becomes an
   explicit matrix of random rationals, symmetric positive definite when square (covariances, kernels and order
   parameters are; an identity that needs a non-symmetric matrix to fail is not caught), and each entry of an
   indexed object at concrete indices (C[1, 2, 1, 1]) its own value; a matrix-valued side is compared entry by
   entry; finite sums are written out; a derivative by a scalar of a matrix expression, d/dε f(ε) at ε = p,
   becomes the exact central difference (f(p + h) − f(p − h))/2h, h = :data:`STEP` (its error, of order h²,
   is 10⁻⁵⁰). A point where a side is not finite, or not real while the symbols are, lies outside the domain and
   is drawn again (up to :data:`REDRAWS` times). At each point the sides must agree to :data:`AGREEMENT_DIGITS`
   digits relative to the size of their terms, or differ by no more than their combined error estimate; the
   digits stated are the fewer of those agreeing and those the error estimate establishes ("to 29 digits
   (quadrature-limited)"), and fewer than :data:`AGREEMENT_DIGITS` established leave the step unchecked. Where the
   sides differ beyond both, the point is evaluated again at twice the precision: a difference that shrinks, or
   falls within the estimates there, is round-off or quadrature error, one that stays is a failure, reported
   with the point and both sides' values. Two Gaussian expectations over the same laws but for variables their
   integrands are polynomials in are compared by those integrands, the other variables averaged exactly, at
   random values of the shared ones (a step that averages conditionally needs no quadrature);
3. *with unknowns*, when a side holds an unevaluated function (𝔼(N), an undefined f, a derivative of one) or a
   moment of random variables of unspecified law: each function is replaced by a generic one, c₀ + Σ(cᵢxᵢ +
   eᵢxᵢ²) + g·exp(Σ dᵢxᵢ), and each moment by a number, their coefficients drawn at random as more symbols. An
   agreement is a numeric check. A difference with functions leaves the step unchecked (it may hold for the
   actual functions only: 𝔼(2N) = 2𝔼(N) fails for a generic function); one with moments only is a failure (the
   moments of distinct products are unconstrained by any identity that holds for every law);
4. *unchecked*, with why, when a side holds what cannot be evaluated (a limit, or an object ``evalf`` leaves
   unevaluated).

Each step's check, symbolic and numeric attempts together, has a budget of :data:`STEP_BUDGET` seconds
(``check_derivation(…, budget=)``, ``$ATTNVERIFY_STEP_BUDGET``): the walk runs in a forked child process where an
alarm stops the attempt under way (``simplify``, ``equals`` and ``expand`` of one comparison within
:data:`SYMBOLIC_SHARE` of it, then the numeric check); past it the step is ``unchecked: budget of N s spent (what
was being tried)``, such an outcome is never kept, and the next step is checked.

Outcomes are kept in memory and on disk, one small file per comparison keyed by the ``srepr`` of its two sides,
and one per derivation keyed by its steps, under the checker's own version (:func:`checker_version`), next to the
kept derivations (``ATTNVERIFY_KEEP_DERIVATIONS=0`` turns the disk off for both).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import os
import pickle
import random
import select
import signal
import struct
import time
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Iterable

import mpmath
import sympy
from sympy.core.function import AppliedUndef
from sympy.matrices.exceptions import ShapeError
from sympy.matrices.expressions.matexpr import MatrixElement

from ..base.files import fingerprint, read_entry, write_entry
from ..base.cache import cache_directory
from .expectation import Expectation, QuadratureShort, by_linearity, integral_estimate

OUTCOMES = ("symbolic", "numeric", "failed", "definition", "assumption", "condition", "unchecked")
"""The outcome of a step: proved symbolically, agrees numerically, fails at a shown point, marked (a definition or an
assumption), a condition a later step solves, or unchecked."""

POINTS = 5
"""Random points of a numeric check."""

QUADRATURE_POINTS = 3
"""Random points of a numeric check whose sides hold Gaussian expectations (each a quadrature at every point)."""

WORKING_DIGITS = 30
"""Decimal digits of the numeric evaluation."""

AGREEMENT_DIGITS = 20
"""Digits two sides must share at a point (relative to the size of their terms)."""

SIMPLIFY_OPERATIONS = 120
"""``simplify`` and ``equals`` are tried on a difference of at most this many operations (they can take minutes
on larger ones, where the numeric check takes milliseconds)."""

EXPAND_OPERATIONS = 3000
"""``expand`` is tried on a difference of at most this many operations."""

REDRAWS = 20
"""Points drawn again, per point, when a side is not finite or not real there."""

ENVIRONMENT_VARIABLE = "ATTNVERIFY_KEEP_DERIVATIONS"

STEP_BUDGET = 60.0
"""Seconds the check of one step may take, all its comparisons and their symbolic and numeric attempts together
(integrals and expectations included), unless ``budget=`` or ``$ATTNVERIFY_STEP_BUDGET`` says otherwise; past it
the step is ``unchecked: budget of N s spent (what was being tried)`` and the derivation's next step is checked."""

BUDGET_VARIABLE = "ATTNVERIFY_STEP_BUDGET"

SYMBOLIC_SHARE = 0.1
"""The part of a step's budget that one comparison's symbolic attempts (``expand``, ``simplify``, ``equals``) may
take; past it the comparison is decided numerically (its outcome says the symbolic attempts were stopped)."""

GRACE = 5.0
"""Seconds past a step's budget after which the process checking it, silent (inside C code that the alarm cannot
interrupt), is killed; the step is then unchecked and the walk goes on in a new process."""

ANNOUNCE_AFTER = 2.0
"""A step still being checked after this many seconds is named to the progress display (``on_step``)."""


# ----------------------------------------------------------------------------- outcomes


@dataclass(frozen=True)
class StepCheck:
    """The outcome of a step (or of one comparison): ``outcome`` (:data:`OUTCOMES`), a sentence, the earlier step
    it was compared with (1-based), and for a numeric check the points, the fewest agreeing digits (no more than
    the numeric evaluation of the sides established: ``limited`` when a quadrature's error estimate, not the
    agreement of the sides, set them), and for a failure the point (name → value) and both sides' values there."""

    outcome: str
    detail: str
    against: int | None = None
    points: int = 0
    digits: float | None = None
    point: dict = field(default_factory=dict)
    values: tuple = ()
    limited: bool = False

    def __post_init__(self):
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {self.outcome!r}")

    @property
    def failed(self) -> bool:
        return self.outcome == "failed"

    @property
    def checked(self) -> bool:
        """Decided by the checker (proved, agreed, or failed), not marked nor left unchecked."""
        return self.outcome in ("symbolic", "numeric", "failed")

    def label(self) -> str:
        """A short phrase for the report: "proved symbolically", "agrees at 5 points to ≥ 29 digits", "agrees at 3
        points to 27 digits (quadrature-limited)", …"""
        against = f" (against step {self.against})" if self.against else ""
        if self.outcome == "symbolic":
            return f"proved symbolically{against}: {self.detail}"
        if self.outcome == "numeric":
            if self.limited:
                return (f"agrees at {self.points} random points to {math.floor(self.digits)} digits "
                        f"(quadrature-limited){against}")
            return f"agrees at {self.points} random points to ≥ {self.digits:.0f} digits{against}"
        if self.outcome == "failed":
            where = ", ".join(f"{k} = {v}" for k, v in self.point.items())
            sides = f": left side {self.values[0]}, right side {self.values[1]}" if self.values else ""
            return f"FAILS{against}" + (f" at {where}" if where else "") + f"{sides} ({self.detail})"
        if self.outcome in ("definition", "assumption"):
            return f"{self.outcome} (marked so by the derivation; not checked)"
        if self.outcome == "condition":
            return f"condition: {self.detail}"
        return f"unchecked: {self.detail}"

    def as_dict(self) -> dict:
        return {"outcome": self.outcome, "detail": self.detail, "against": self.against, "points": self.points,
                "digits": self.digits, "point": dict(self.point), "values": list(self.values), "limited": self.limited,
                "label": self.label()}

    @classmethod
    def from_dict(cls, data: dict) -> "StepCheck":
        return cls(data["outcome"], data["detail"], data.get("against"), data.get("points", 0), data.get("digits"),
                   dict(data.get("point") or {}), tuple(data.get("values") or ()), bool(data.get("limited", False)))


def _unchecked(why: str, against: int | None = None) -> StepCheck:
    return StepCheck("unchecked", why, against)


def counts(checks: Iterable[StepCheck]) -> dict[str, int]:
    """How many steps have each outcome (every outcome listed, zeros included)."""
    checks = list(checks)
    return {outcome: sum(1 for c in checks if c.outcome == outcome) for outcome in OUTCOMES}


_COUNTED = {"symbolic": "proved symbolically", "numeric": "agreeing numerically", "definition": "definition",
            "assumption": "assumption", "condition": "condition", "unchecked": "unchecked", "failed": "failed"}


def counts_text(numbers: dict[str, int]) -> str:
    """``17 steps: 5 proved symbolically, 3 agreeing numerically, 2 definitions, 1 assumption, 6 unchecked,
    0 failed``."""
    total = sum(numbers.values())
    parts = [f"{numbers.get(k, 0)} {v}" + ("s" if k in ("definition", "assumption", "condition")
                                              and numbers.get(k, 0) != 1 else "")
             for k, v in _COUNTED.items() if k != "condition" or numbers.get(k, 0)]
    return f"{total} step{'s' * (total != 1)}: " + ", ".join(parts)


# ----------------------------------------------------------------------------- walking a derivation


@dataclass
class _Context:
    """What the earlier steps established: each name's latest value and the step that gave it, the conditions
    (step, f) with f = 0, and every symbol seen so far."""

    env: dict = field(default_factory=dict)
    origin: dict = field(default_factory=dict)
    conditions: list = field(default_factory=list)
    seen: set = field(default_factory=set)
    previous: sympy.Basic | None = None
    solved: dict = field(default_factory=dict)  # condition step → the later steps whose solutions satisfy it
    skip: bool = False  # learn the steps without comparing (a step whose budget ran out)

    def copy(self) -> "_Context":
        return _Context(dict(self.env), dict(self.origin), list(self.conditions), set(self.seen), self.previous,
                        {k: list(v) for k, v in self.solved.items()}, self.skip)

    def restore(self, other: "_Context") -> None:
        self.__dict__.update(other.copy().__dict__)


def step_budget(budget: float | None = None) -> float:
    """The seconds a step's check may take: ``budget`` if given, else ``$ATTNVERIFY_STEP_BUDGET``, else
    :data:`STEP_BUDGET`; a positive finite number."""
    name, value = "budget", budget
    if budget is None:
        name, value = BUDGET_VARIABLE, os.environ.get(BUDGET_VARIABLE)
        if value is None:
            return STEP_BUDGET
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if isinstance(value, bool) or not (0 < seconds < math.inf):
        raise ValueError(f"{name} must be a positive number of seconds (0 < {name} < inf), got {value!r}")
    return seconds


_CHECKED: dict = {}
"""(derivation, budget) → its steps' outcomes, in this process."""


def check_derivation(derivation, *, budget: float | None = None, on_step=None) -> tuple[StepCheck, ...]:
    """The outcome of every step of ``derivation`` (:class:`~.derivation.Derivation`), in order, each step's check
    limited to ``budget`` seconds (:func:`step_budget`); kept on disk for the whole derivation as well as per
    comparison (a derivation checked before is read, not walked again; one with a step whose budget ran out is
    walked again next time). ``on_step(number, total, description, budget)`` is called for a step still being
    checked after :data:`ANNOUNCE_AFTER` seconds.

    The walk runs in a child process forked for it (any thread may fork), where an alarm stops an attempt at its
    limit; the parent kills a child silent for :data:`GRACE` seconds past a step's budget. Without ``os.fork`` the
    walk runs in this process, limited by the alarm only in the main thread."""
    budget = step_budget(budget)
    if (derivation, budget) in _CHECKED:
        return _CHECKED[derivation, budget]
    key = derivation_key(derivation)
    kept = _read(key) if key else None
    if isinstance(kept, tuple) and len(kept) == len(derivation.steps):
        outcomes = kept
    else:
        outcomes = _walk_forked(derivation, budget, on_step) if _can_fork() else _walked(derivation, budget)
        if key and not any(_spent(o) for o in outcomes):
            _write(key, outcomes)
    if len(_CHECKED) > 256:
        _CHECKED.pop(next(iter(_CHECKED)))
    _CHECKED[derivation, budget] = outcomes
    return outcomes


check_derivation.cache_clear = _CHECKED.clear


def derivation_key(derivation) -> str | None:
    """The cache key of a whole derivation's outcomes: SHA-256 of its steps (expression, kind, values), or None if
    a step cannot be written out."""
    parts = ["derivation"]
    try:
        for step in derivation.steps:
            named = sorted(str(f.func) for f in step.expression.atoms(AppliedUndef) if getattr(f.func, "mapping", 0))
            parts += [sympy.srepr(step.expression), step.kind,
                      sympy.srepr(sympy.Tuple(*map(sympy.Tuple, step.substitute))),
                      " ".join(named)]  # srepr does not show which functions are named ones
    except Exception:  # an expression srepr cannot write: walked every time (its comparisons are still kept)
        return None
    return "d" + fingerprint(*parts)


def _walked(derivation, budget: float | None = None, spent: dict | None = None) -> tuple[StepCheck, ...]:
    """Every step checked in order, each within ``budget`` seconds where the alarm can enforce it; the steps of
    ``spent`` (number → outcome) are not compared again, only learnt (:func:`check_derivation` without its
    disk)."""
    context, outcomes = _Context(), []
    spent = spent or {}
    for number, step in enumerate(derivation.steps, 1):
        _CLOCK.tell(("start", number))
        if number in spent:
            outcome = _learnt_only(step, number, context, spent[number])
        else:
            outcome = _bounded_step(step, number, context, budget)
        _CLOCK.tell(("step", number, outcome.as_dict()))
        outcomes.append(outcome)
    for number, step in enumerate(derivation.steps, 1):
        if step.kind == "condition" and outcomes[number - 1].outcome == "condition":
            outcomes[number - 1] = _condition_outcome(number, context.solved.get(number, []))
    return tuple(outcomes)


def _bounded_step(step, number: int, context: "_Context", budget: float | None) -> StepCheck:
    """Step ``number``'s outcome within ``budget`` seconds; past them, unchecked (what it establishes is still
    learnt, without comparisons)."""
    if budget is None or not _CLOCK.usable():
        return _check_step(step, number, context)
    before = context.copy()
    try:
        with _CLOCK.limit(budget):
            _CLOCK.trying = "reading the step"
            return _check_step(step, number, context)
    except _BudgetSpent:
        context.restore(before)
        return _learnt_only(step, number, context, _budget_outcome(budget, _CLOCK.trying))


def _learnt_only(step, number: int, context: "_Context", outcome: StepCheck) -> StepCheck:
    """``outcome`` for a step whose check ran out of budget; its relations learnt as if its comparisons were left
    undecided (so that later steps see its names)."""
    context.skip = True
    try:
        _check_step(step, number, context)
    finally:
        context.skip = False
    _solves(context, number, outcome)
    return outcome


def _compared(context: "_Context", a, b) -> StepCheck:
    """:func:`compare`, unless the context only learns (then undecided)."""
    return _unchecked("not compared") if context.skip else compare(a, b)


def _budget_outcome(budget: float, trying: str, killed: bool = False) -> StepCheck:
    ended = "; its process did not answer the alarm and was ended" if killed else ""
    return _unchecked(f"budget of {budget:g} s spent ({trying or 'checking the step'}){ended}")


def _spent(outcome: StepCheck) -> bool:
    """The outcome of a check stopped by its budget (never kept on disk: a later run may decide it)."""
    return outcome.outcome == "unchecked" and "budget of " in outcome.detail and " s spent (" in outcome.detail


# ----------------------------------------------------------------------------- budgets: an alarm in a forked child


class _BudgetSpent(BaseException):
    """A limit of :class:`_Clock` was reached (a BaseException: no ``except Exception`` of sympy or of the checker
    swallows it)."""

    def __init__(self, limit):
        super().__init__("budget spent")
        self.limit = limit


@dataclass(eq=False)
class _Limit:
    deadline: float
    seconds: float


class _Clock:
    """Deadlines enforced by SIGALRM, in the main thread of the checker's own child process (forked for the
    purpose, so that no one else's alarm is disturbed) or of a process without ``os.fork``. The alarm repeats
    every 0.25 s until the expired limit's block is left, so a handler that swallows it does not stop it.
    ``trying`` names the attempt under way (for the outcome's text); ``tell`` sends a message to the parent."""

    def __init__(self):
        self.limits: list[_Limit] = []
        self._trying = ""
        self.active = False  # in a child process forked by the checker
        self.send = None

    @property
    def trying(self) -> str:
        return self._trying

    @trying.setter
    def trying(self, what: str) -> None:
        self._trying = what
        self.tell(("trying", what))

    def usable(self) -> bool:
        return self.active or (not hasattr(os, "fork") and hasattr(signal, "setitimer")
                               and threading_main())

    def start(self, send) -> None:
        """In a new child: the alarm's handler installed, messages to the parent through ``send``."""
        self.active, self.send, self.limits = True, send, []
        signal.signal(signal.SIGALRM, self._alarm)

    def tell(self, message) -> None:
        if self.send is not None:
            self.send(message)

    def _alarm(self, signum, frame):
        now = time.monotonic()
        expired = [limit for limit in self.limits if limit.deadline <= now + 1e-3]
        if expired:
            raise _BudgetSpent(expired[0])  # the outermost limit that expired
        self._arm()

    def _arm(self) -> None:
        if self.limits:
            remaining = max(1e-3, min(limit.deadline for limit in self.limits) - time.monotonic())
            signal.setitimer(signal.ITIMER_REAL, remaining, 0.25)
        else:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def share(self, fraction: float) -> float | None:
        """``fraction`` of the innermost limit's seconds (None without a limit)."""
        return self.limits[-1].seconds * fraction if self.limits else None

    @contextlib.contextmanager
    def limit(self, seconds: float | None):
        """A block limited to ``seconds`` (and to every enclosing limit); yields the limit (None: no limit)."""
        if seconds is None or not self.usable():
            yield None
            return
        entry = _Limit(time.monotonic() + seconds, seconds)
        self.limits.append(entry)
        self._arm()
        try:
            yield entry
        finally:
            self.limits.remove(entry)
            self._arm()


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


_CLOCK = _Clock()


def _can_fork() -> bool:
    """A child can be forked for a check: os.fork exists and this is not already such a child."""
    return hasattr(os, "fork") and not _CLOCK.active


class _Child:
    """A child process forked to run ``work()``; it sends pickled messages (length-prefixed) through a pipe, ends
    with ("result", value) or ("error", text), and never returns into the parent's code (``os._exit``)."""

    def __init__(self, work):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            code = 1
            try:
                os.close(read)
                _CLOCK.start(lambda message: _send(write, message))
                _send(write, ("result", work()))
                code = 0
            except BaseException as error:  # noqa: BLE001  (reported to the parent, whatever it is)
                try:
                    _send(write, ("error", f"{type(error).__name__}: {error}"))
                except BaseException:  # noqa: BLE001  (the parent sees the pipe close)
                    pass
            finally:
                os._exit(code)
        os.close(write)
        self.pid, self.fd, self.buffer = pid, read, b""

    def receive(self, timeout: float):
        """The messages that arrive within ``timeout`` seconds ([] if none); None once the child has closed the
        pipe."""
        ready, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        if not ready:
            return []
        chunk = os.read(self.fd, 1 << 20)
        if not chunk:
            return None
        self.buffer += chunk
        messages = []
        while len(self.buffer) >= 8:
            (size,) = struct.unpack("<Q", self.buffer[:8])
            if len(self.buffer) < 8 + size:
                break
            messages.append(pickle.loads(self.buffer[8:8 + size]))
            self.buffer = self.buffer[8 + size:]
        return messages

    def end(self, kill: bool = False) -> None:
        if kill:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.close(self.fd)
        os.waitpid(self.pid, 0)


def _send(fd: int, message) -> None:
    data = pickle.dumps(message)
    data = struct.pack("<Q", len(data)) + data
    while data:
        data = data[os.write(fd, data):]


def _walk_forked(derivation, budget: float, on_step=None) -> tuple[StepCheck, ...]:
    """:func:`_walked` in a forked child, watched: a step whose child is silent :data:`GRACE` seconds past its
    budget is unchecked, the child killed and the walk resumed in a new one past that step; the comparisons the
    child decided are kept in this process's memory."""
    total, spent = len(derivation.steps), {}
    while True:
        child = _Child(lambda: _walked(derivation, budget, spent))
        outcomes, current, started, announced, trying = {}, None, time.monotonic(), False, ""
        try:
            while True:
                now = time.monotonic()
                deadline = started + budget + GRACE
                wake = deadline if announced or current is None else min(deadline, started + ANNOUNCE_AFTER)
                messages = child.receive(wake - now)
                if messages is None:  # the child ended without its result
                    break
                for message in messages:
                    kind = message[0]
                    if kind == "start":
                        current, started, announced, trying = message[1], time.monotonic(), False, ""
                    elif kind == "trying":
                        trying = message[1]
                    elif kind == "kept":
                        _MEMORY[message[1]] = StepCheck.from_dict(message[2])
                    elif kind == "step":
                        outcomes[message[1]] = StepCheck.from_dict(message[2])
                    elif kind == "result":
                        return message[1]
                    elif kind == "error":
                        return _finished(outcomes, total, f"the checker's process failed ({message[1]})")
                if messages:
                    continue
                now = time.monotonic()
                if current is not None and not announced and now >= started + ANNOUNCE_AFTER:
                    announced = True
                    if on_step is not None:
                        on_step(current, total, derivation.steps[current - 1].description, budget)
                if now >= deadline:
                    break
        finally:
            child.end(kill=True)
        if current is None or current in outcomes:  # no step under way: the child itself failed
            return _finished(outcomes, total, "the checker's process ended unexpectedly")
        spent.update({k: v for k, v in outcomes.items()})
        spent[current] = _budget_outcome(budget, trying, killed=True)
        if len(spent) >= total:
            return tuple(spent[k] for k in range(1, total + 1))


def _finished(outcomes: dict, total: int, why: str) -> tuple[StepCheck, ...]:
    return tuple(outcomes.get(k) or _unchecked(why) for k in range(1, total + 1))


def _condition_outcome(number: int, solvers: list) -> StepCheck:
    """A step marked as a condition: counted as such when a later solution was checked against it, else
    unchecked."""
    if not solvers:
        return _unchecked("a condition (an equation to solve) that no later step solves")
    steps = sorted(set(solvers))
    which = f"step{'s' * (len(steps) > 1)} {', '.join(map(str, steps))}"
    return StepCheck("condition", f"an equation to solve; the solution{'s' * (len(steps) > 1)} of {which} "
                                  f"satisf{'y' if len(steps) > 1 else 'ies'} it (checked there)", None)


def _check_step(step, number: int, context: _Context) -> StepCheck:
    """Step ``number``'s outcome; what it establishes is learnt into ``context``. A step the checker cannot read
    at all (sympy raises on it) is unchecked, with the error, never a pass and never a crash of the run."""
    try:
        return _checked_step(step, number, context)
    except Exception as error:  # noqa: BLE001  (any sympy failure on a user's expression)
        context.seen |= _symbols(step.expression)
        context.previous = step.expression
        return _unchecked(f"the checker could not read this step ({type(error).__name__}: {error})")


def _checked_step(step, number: int, context: _Context) -> StepCheck:
    expression = step.expression
    substitute = dict(getattr(step, "substitute", ()) or ())
    relations = _relations(expression)
    if step.kind == "condition":
        if relations is None:
            raise ValueError("a condition must be an equation Eq(f, g) (or a tuple of them)")
        for a, b in relations:
            if substitute:  # the condition holds at those values (a direction, a change of variables)
                a, b = _at(a, context.env, substitute), _at(b, context.env, substitute)
            _learn_relation(context, number, a, b, "condition")
        outcome, relations = StepCheck("condition", "an equation to solve"), None
    elif step.kind != "derived":
        outcome = StepCheck(step.kind, f"marked as {'a' if step.kind == 'definition' else 'an'} {step.kind}")
    elif isinstance(expression, sympy.logic.boolalg.BooleanAtom):
        outcome = _boolean(expression)
    elif relations is None:
        outcome = _plain(expression, substitute, context)
        if isinstance(expression, sympy.FiniteSet):
            _solves(context, number, outcome)
    else:  # relation by relation, each learnt before the next (a tuple may name s, then use it)
        parts = []
        for a, b in relations:
            part, role = _check_relation(a, b, substitute, context)
            if role == "solution":
                _solves(context, number, part)
            _learn_relation(context, number, a, b, role)
            parts.append(part)
        outcome, relations = _combined(parts), None
    _learn(context, number, expression, relations)
    return outcome


def _solves(context: _Context, number: int, outcome: StepCheck) -> None:
    """Step ``number``'s solution was checked against the condition of step ``outcome.against``."""
    if outcome.checked and not outcome.failed and outcome.against is not None:
        context.solved.setdefault(outcome.against, []).append(number)


def _boolean(expression) -> StepCheck:
    if expression == sympy.true:
        return StepCheck("symbolic", "sympy evaluates the relation to True")
    return StepCheck("failed", "sympy evaluates the relation to False")


def _relations(expression) -> list[tuple[sympy.Basic, sympy.Basic]] | None:
    """The equalities a step states, entry by entry; None for a plain expression."""
    if isinstance(expression, sympy.Equality):
        return _pairs(expression.lhs, expression.rhs)
    if isinstance(expression, sympy.Tuple) and expression and all(isinstance(e, sympy.Equality) for e in expression):
        return [pair for e in expression for pair in _pairs(e.lhs, e.rhs)]
    return None


def _pairs(a, b) -> list[tuple[sympy.Basic, sympy.Basic]]:
    if isinstance(a, sympy.Tuple) and isinstance(b, sympy.Tuple) and len(a) == len(b):
        return [pair for x, y in zip(a, b) for pair in _pairs(x, y)]
    if isinstance(a, sympy.MatrixBase) and isinstance(b, sympy.MatrixBase) and a.shape == b.shape:
        return list(zip(a, b))
    return [(a, b)]


def _combined(parts: list[StepCheck]) -> StepCheck:
    """One outcome for a step of several relations: the first failure; else proved if all are, agrees if all are
    checked; else unchecked, saying which parts were."""
    if len(parts) == 1:
        return parts[0]
    n = len(parts)
    for k, part in enumerate(parts, 1):
        if part.failed:
            return StepCheck("failed", f"part {k} of {n}: {part.detail}", part.against, part.points, part.digits,
                             part.point, part.values)
    against = next((p.against for p in parts if p.against), None)
    if all(p.outcome == "symbolic" for p in parts):
        return StepCheck("symbolic", "; ".join(sorted({p.detail for p in parts})), against)
    if all(p.checked for p in parts):
        numeric = [p for p in parts if p.outcome == "numeric"]
        weakest = min(numeric, key=lambda p: p.digits)
        return StepCheck("numeric", f"{n} parts", against, max(p.points for p in numeric), weakest.digits,
                         limited=weakest.limited)
    checked = [str(k) for k, p in enumerate(parts, 1) if p.checked]
    reasons = "; ".join(sorted({p.detail for p in parts if not p.checked}))
    prefix = f"parts {', '.join(checked)} of {n} hold, the others: " if checked else ""
    return _unchecked(prefix + reasons, against)


# ----------------------------------------------------------------------------- what a relation claims


def _is_name(expression) -> bool:
    """A left side that names a quantity: a symbol, a matrix symbol, an indexed entry, an unevaluated function
    application (𝔼(N)), or a tuple of them."""
    if isinstance(expression, sympy.Tuple):
        return all(_is_name(e) for e in expression)
    return isinstance(expression, (sympy.Symbol, sympy.MatrixSymbol, sympy.Indexed, AppliedUndef, MatrixElement))


def _symbols(expression) -> set:
    return set(getattr(expression, "free_symbols", set()))


def _outer_symbols(expression) -> set:
    """Free symbols outside unevaluated functions (the N of 𝔼(N) belongs to the name 𝔼(N), not to the form)."""
    hidden = expression.atoms(AppliedUndef) if isinstance(expression, sympy.Basic) else set()
    return _symbols(expression.xreplace({f: sympy.S.One for f in hidden}) if hidden else expression)


def _resolved(expression, env: dict, rounds: int = 8):
    """``expression`` with every name replaced by its latest value, repeatedly (names defined through names); a
    derivative by a name keeps its variable bound (see :func:`_substituted`)."""
    if not env or not isinstance(expression, sympy.Basic):
        return expression
    functions = {key.func: key for key in env if isinstance(key, AppliedUndef) and getattr(key.func, "mapping", False)
                 and all(isinstance(x, sympy.Symbol) for x in key.args) and len(set(key.args)) == len(key.args)}
    for _ in range(rounds):
        replaced = _substituted(expression, env, env)
        if functions:
            replaced = replaced.replace(
                lambda e: isinstance(e, AppliedUndef) and e.func in functions and e not in env
                and len(e.args) == len(functions[e.func].args),
                lambda e: env[functions[e.func]].xreplace(dict(zip(functions[e.func].args, e.args))))
        if replaced == expression:
            return replaced
        expression = replaced
    return expression


def function(name: str) -> sympy.FunctionClass:
    """An unevaluated function whose value a step gives at symbols, f(t, θ) = …: a later f(2, ω) is that value at
    t = 2, θ = ω (a plain undefined function's applications are names of their own)."""
    return sympy.Function(name, mapping=True)


def _substituted(expression, mapping: dict, env: dict | None = None):
    """``expression.xreplace(mapping)``, except that a derivative by a symbol of ``mapping`` is first written
    Subs(Derivative(f(ξ), ξ), ξ, x) (its body resolved in ``env`` first, so that it is a function of ξ): the value
    replaces the point the derivative is taken at, never the variable it is taken by."""
    if not mapping or not isinstance(expression, sympy.Basic):
        return expression
    if expression.has(sympy.Derivative):
        keys = set(mapping)

        def bind(derivative):
            hit = [v for v, _ in derivative.variable_count if v in keys and isinstance(v, sympy.Symbol)]
            if not hit:
                return derivative
            body = derivative.expr
            if env:
                body = _resolved(body, {k: v for k, v in env.items() if k not in hit})
            dummies = {v: _bound_variable(v) for v in hit}
            inner = sympy.Derivative(body, *derivative.variable_count).xreplace(dummies)
            return sympy.Subs(inner, tuple(dummies.values()), tuple(hit))

        expression = expression.replace(lambda e: isinstance(e, sympy.Derivative), bind)
    return expression.xreplace(mapping)


def _function_definition(a, env: dict):
    """The name f(t, …) that gives the value of the application ``a`` = f(2, …) of a :func:`function`, if any (and
    ``a`` has no value of its own)."""
    if not (isinstance(a, AppliedUndef) and getattr(a.func, "mapping", False)) or a in env:
        return None
    for key in env:
        if (isinstance(key, AppliedUndef) and key.func == a.func and len(key.args) == len(a.args)
                and all(isinstance(x, sympy.Symbol) for x in key.args)):
            return key
    return None


def _bound_variable(variable: sympy.Symbol) -> sympy.Dummy:
    """The variable a derivative is taken by once it is bound: a Dummy of a fixed index (so that the same step gives
    the same cache key in every process)."""
    index = int(hashlib.sha256(variable.name.encode()).hexdigest()[:12], 16)
    return sympy.Dummy(variable.name, dummy_index=index, **variable.assumptions0)


def _at(expression, env: dict, substitute: dict):
    """A side as the checker compares it: names resolved, the step's values substituted, names resolved again
    (a value may be written in names)."""
    expression = _resolved(expression, env)
    if substitute:
        expression = _resolved(_substituted(expression, substitute, env), env)
    return expression


def _zero_like(expression):
    """0, or the zero matrix of ``expression``'s shape."""
    if isinstance(expression, (sympy.MatrixBase, sympy.MatrixExpr)):
        return sympy.ZeroMatrix(*expression.shape)
    return sympy.S.Zero


def _check_relation(a, b, substitute: dict, context: _Context) -> tuple[StepCheck, str]:
    """The outcome of one relation a = b, and its role: ``form`` (a new form of a name), ``name`` (its first
    value), ``notation`` (introduces symbols), ``solution``, ``condition`` or ``identity``. The step's
    ``substitute`` values are taken on both sides (after the names are resolved)."""
    env = context.env
    if a in env and a not in substitute:
        new = (_outer_symbols(b) - context.seen - _symbols(a) - set(substitute)
               - _symbols(sympy.Tuple(*substitute.values())) - _dimensions(a))
        if new:
            return _unchecked(f"writes {a} in {_names(new)}, new symbols (a notation, not a consequence)",
                              context.origin[a]), "notation"
        earlier = _at(env[a], env, substitute)
        outcome = _with_against(_compared(context, earlier, _at(b, env, substitute)), context.origin[a])
        return (_taken_at(outcome, substitute) if substitute else outcome), "form"
    definition = _function_definition(a, env)
    if definition is not None:  # f(2) after f(t) = …: the value there
        outcome = _compared(context, _at(a, env, substitute), _at(b, env, substitute))
        return _with_against(outcome, context.origin[definition]), "identity"
    if _is_name(a) and not b.has(a) and a not in substitute:
        condition = _condition_on(a, context) if isinstance(a, (sympy.Symbol, sympy.MatrixSymbol)) else None
        if condition is not None:
            step, f = condition
            others = {k: v for k, v in env.items() if k != a}
            solved = _resolved(_substituted(f, {a: b}, others), others)
            return _with_against(_compared(context, solved, _zero_like(solved)), step), "solution"
        if a in context.seen:
            return _unchecked(f"solves for {a}, but no earlier condition (f = 0) holds {a} (if this step says what "
                              f"{a} is, mark it kind=\"definition\")"), "name"
        return _unchecked(f"first value of {a}: nothing earlier to compare it with"), "name"
    introduced = (_labels(_symbols(a)) - _labels(_symbols(b)) - _labels(context.seen) - _labels(set(substitute))
                  - _labels(_symbols(sympy.Tuple(*substitute, *substitute.values()))))
    if introduced and b != 0:
        return _unchecked(f"introduces {_names(introduced)}: nothing earlier to compare it with"), "name"
    outcome = _compared(context, _at(a, env, substitute), _at(b, env, substitute))
    if outcome.failed and (b == 0 or a == 0) and outcome.point:
        return _unchecked("a condition: an equation to solve, not an identity"), "condition"
    return (_taken_at(outcome, substitute, "the sides") if substitute else outcome), "identity"


TAKEN_AT_CHARACTERS = 400
"""The longest list of a step's values a label shows in full; longer ones are named, not written out."""


def _labels(symbols: set) -> set:
    """Symbols, an indexed entry x[i, j] counted as its base x (a new index is not a new quantity)."""
    return {s.base.label if isinstance(s, sympy.Indexed) else s for s in symbols}


def _dimensions(expression) -> set:
    """The symbols of a matrix's shape (its dimensions, not quantities it introduces)."""
    shape = getattr(expression, "shape", None)
    return set().union(*(sympy.sympify(n).free_symbols for n in shape)) if shape else set()


def _taken_at(outcome: StepCheck, substitute: dict, what: str = "the earlier form") -> StepCheck:
    """``outcome`` saying that the earlier form (or both sides) was taken at the step's values."""
    at = ", ".join(f"{k} = {v}" for k, v in substitute.items())
    if len(at) > TAKEN_AT_CHARACTERS:
        at = f"the step's values of {_names(substitute)}"
        if len(at) > TAKEN_AT_CHARACTERS:
            at = f"the step's {len(substitute)} values"
    return replace(outcome, detail=f"{outcome.detail}; {what} taken at {at}")


def _condition_on(symbol, context: _Context):
    """The latest earlier condition (step, f) in which ``symbol`` occurs, if any."""
    for step, f in reversed(context.conditions):
        if symbol in _symbols(f):
            return step, f
    return None


def _with_against(outcome: StepCheck, against: int | None) -> StepCheck:
    if against is None or outcome.against == against:
        return outcome
    return replace(outcome, against=against)


def _names(symbols: Iterable) -> str:
    return ", ".join(sorted(str(s) for s in symbols))


def _plain(expression, substitute: dict, context: _Context) -> StepCheck:
    """A plain expression: the roots of the latest condition (a set), or a new form of the previous expression."""
    if isinstance(expression, sympy.FiniteSet):
        return _roots(expression, context)
    previous = context.previous
    if previous is None:
        return _unchecked("the first expression: nothing earlier to compare it with")
    if isinstance(previous, sympy.Equality):
        previous = previous.rhs
    if _shape(previous) != _shape(expression):
        return _unchecked(f"a value ({_kind_of(expression)}) that is not a new form of the previous step's "
                          f"({_kind_of(previous)}): nothing to compare it with")
    earlier = previous.xreplace(substitute) if substitute else previous
    pairs = _pairs(earlier, expression)
    return _combined([_compared(context, _resolved(x, context.env), _resolved(y, context.env)) for x, y in pairs])


def _shape(expression):
    if isinstance(expression, sympy.Tuple):
        return ("tuple", len(expression))
    if isinstance(expression, (sympy.MatrixBase, sympy.MatrixExpr)):
        return ("matrix", expression.shape)
    if isinstance(expression, (sympy.Derivative, sympy.Subs)) and _shape(expression.expr)[0] == "matrix":
        return _shape(expression.expr)  # a derivative by a scalar of a matrix
    if isinstance(expression, sympy.Expr):
        return ("scalar",)
    return (type(expression).__name__,)


def _kind_of(expression) -> str:
    shape = _shape(expression)
    return {"tuple": f"a tuple of {shape[-1]}", "matrix": "a matrix", "scalar": "a scalar"}.get(shape[0], shape[0])


def _roots(values: sympy.FiniteSet, context: _Context) -> StepCheck:
    """Each value of a set solves the latest condition for the one symbol the values lack."""
    if not context.conditions:
        return _unchecked("a set of values, and no earlier condition for them to solve")
    step, f = context.conditions[-1]
    unknowns = _symbols(f) - set().union(*(_symbols(v) for v in values))
    if len(unknowns) != 1:
        return _unchecked(f"a set of values; the condition of step {step} has unknowns {_names(unknowns) or 'none'}",
                          step)
    (x,) = unknowns
    parts = [_compared(context, _resolved(f.xreplace({x: v}), context.env), sympy.S.Zero) for v in values]
    return _with_against(_combined(parts), step)


def _learn(context: _Context, number: int, expression, relations) -> None:
    """Record what step ``number`` establishes: the relations of a marked step (those of a derived step are
    learnt as they are checked), its symbols, and the expression a plain next step is compared with."""
    for a, b in relations or []:
        _learn_relation(context, number, a, b, _marked_role(a, b, context))
    context.seen |= _symbols(expression)
    context.previous = expression


def _learn_relation(context: _Context, number: int, a, b, role: str) -> None:
    """A condition is kept as f = a − b; a name (new, or a new form of it, or a solved symbol) takes the value b."""
    if role == "condition":
        f = a if b == 0 or getattr(b, "is_ZeroMatrix", False) else a - b
        context.conditions.append((number, _done(_resolved(f, context.env))))
    elif role in ("form", "name", "solution"):
        context.env[a] = b
        context.origin[a] = number
    context.seen |= _symbols(a)


def _marked_role(a, b, context: _Context) -> str:
    """The role of a relation in a step marked as a definition or an assumption."""
    if b == 0 and isinstance(a, sympy.Expr) and not _is_name(a):
        return "condition"
    if a in context.env or _is_name(a) or (_symbols(a) - _symbols(b) - context.seen):
        return "name"
    return "identity"


# ----------------------------------------------------------------------------- comparing two sides (cached)


@functools.lru_cache(maxsize=None)
def checker_version() -> str:
    """SHA-256 of this module's source, of :mod:`.expectation`'s (which evaluates expectations) and of sympy's and
    mpmath's versions: a new checker checks afresh."""
    return fingerprint(f"sympy {sympy.__version__} mpmath {mpmath.__version__}", Path(__file__).read_bytes(),
                       Path(__file__).with_name("expectation.py").read_bytes())


_MEMORY: dict[str, StepCheck] = {}


def _disk_enabled() -> bool:
    return os.environ.get(ENVIRONMENT_VARIABLE, "1") != "0"


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
    step's budget; called on its own, in a forked child limited to ``budget`` seconds (:func:`step_budget`), whose
    outcome past them is ``unchecked: budget of N s spent (…)`` (not kept)."""
    key = comparison_key(a, b)
    if key in _MEMORY:
        return _MEMORY[key]
    outcome = _read(key)
    if not isinstance(outcome, StepCheck):
        if _can_fork():
            outcome = _compare_forked(a, b, key, step_budget(budget))
            if _spent(outcome) or outcome.detail.startswith("the checker's process"):
                return outcome
        else:
            outcome = _compare(a, b, random.Random(int(key[:16], 16)))
        _write(key, outcome)
        _CLOCK.tell(("kept", key, outcome.as_dict()))
    _MEMORY[key] = outcome
    return outcome


def _compare_forked(a, b, key: str, budget: float) -> StepCheck:
    """:func:`_compare` in a forked child within ``budget`` seconds (killed :data:`GRACE` seconds later if it does
    not stop)."""

    def work():
        try:
            with _CLOCK.limit(budget):
                _CLOCK.trying = "reading the sides"
                return _compare(a, b, random.Random(int(key[:16], 16))).as_dict()
        except _BudgetSpent:
            return _budget_outcome(budget, _CLOCK.trying).as_dict()

    child, trying = _Child(work), ""
    deadline = time.monotonic() + budget + GRACE
    try:
        while True:
            messages = child.receive(deadline - time.monotonic())
            if messages is None:
                return _unchecked("the checker's process ended unexpectedly")
            for message in messages:
                if message[0] == "trying":
                    trying = message[1]
                elif message[0] == "result":
                    return StepCheck.from_dict(message[1])
                elif message[0] == "error":
                    return _unchecked(f"the checker's process failed ({message[1]})")
            if not messages and time.monotonic() >= deadline:
                return _budget_outcome(budget, trying, killed=True)
    finally:
        child.end(kill=True)


def _read(key: str):
    """The kept outcome of a comparison (a StepCheck) or of a derivation (a tuple of them), or None."""
    if not _disk_enabled():
        return None
    return read_entry(_cache_path(key), key, _from_json)  # a damaged one is set aside: checked again


def _write(key: str, outcome) -> None:
    if not _disk_enabled():
        return
    path = _cache_path(key)
    data = [o.as_dict() for o in outcome] if isinstance(outcome, tuple) else outcome.as_dict()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only or full disk: the outcome stays in memory
        return
    write_entry(path, key, json.dumps(data).encode())


def _compare(a, b, rng: random.Random) -> StepCheck:
    a, b = _done(sympy.sympify(a)), _done(sympy.sympify(b))
    if _shape(a) != _shape(b):
        if _is_zero_value(a) or _is_zero_value(b):  # 0 against a zero matrix
            a, b = (_zero_like(b), b) if _is_zero_value(a) else (a, _zero_like(a))
        else:
            return StepCheck("failed", f"the sides differ in shape: {_kind_of(a)} {_shape(a)[1:]} vs "
                                       f"{_kind_of(b)} {_shape(b)[1:]}")
    if isinstance(a, sympy.Tuple):
        return _combined([_compare(x, y, rng) for x, y in zip(a, b)])
    if _has_order(a) or _has_order(b):
        return _asymptotic(a, b)
    why = _unevaluable(a) or _unevaluable(b)
    unknown = _unknowns(a) | _unknowns(b)
    quadrature = a.has(Expectation) or b.has(Expectation)
    unevaluated = a.has(sympy.Derivative, sympy.Subs) or b.has(sympy.Derivative, sympy.Subs)
    stopped: list = []
    proof = _proved(a, b, cheap=bool(why or unknown or quadrature or unevaluated), stopped=stopped)
    if proof:
        return StepCheck("symbolic", proof)
    if stopped:
        return _noted(_decided(a, b, rng, why, unknown, quadrature), stopped[0])
    return _decided(a, b, rng, why, unknown, quadrature)


def _noted(outcome: StepCheck, note: str) -> StepCheck:
    return replace(outcome, detail=f"{outcome.detail}; {note}")


def _decided(a, b, rng: random.Random, why, unknown, quadrature) -> StepCheck:
    """a = b decided where sympy did not prove it: unchecked (why), with unknowns, or numerically."""
    if why:
        return _unchecked(why)
    if unknown:
        return _with_unknowns(a, b, unknown, rng)
    conditional = _conditionally(a, b, rng) if quadrature else None
    if conditional is not None:
        return conditional
    return _numeric(a, b, rng, QUADRATURE_POINTS if quadrature else POINTS)


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
    outcome = _numeric(*reduced, rng, POINTS)
    if outcome.outcome != "numeric":
        return None
    names = ", ".join(sorted(str(law[0]) for law in common))
    return StepCheck("numeric", f"{outcome.detail}; the integrands agree given {names} (the other variables "
                                f"averaged exactly)", points=outcome.points, digits=outcome.digits,
                     limited=outcome.limited)


def _averaged(expectation: Expectation, common: set):
    """The integrand of ``expectation`` averaged over its variables outside ``common`` (each must enter as a
    polynomial: exact moments), or None."""
    from .expectation import _moments_taken, _polynomial_in

    others = [law for law in expectation.laws if law not in common]
    standard = [sympy.Dummy(f"x{k}", real=True) for k in range(len(others))]
    integrand = expectation.integrand.xreplace(
        {law[0]: law[1] + sympy.sqrt(law[2]) * x for law, x in zip(others, standard)})
    if not all(_polynomial_in(integrand, x) for x in standard):
        return None
    return _moments_taken(integrand, standard)


def _is_zero_value(expression) -> bool:
    return isinstance(expression, sympy.Expr) and not isinstance(expression, sympy.MatrixExpr) and expression == 0


# ----------------------------------------------------------------------------- derivatives, expectations, unknowns


def _done(expression):
    """``expression`` with its derivatives and substitutions carried out (sympy's ``doit``, not deep) where they hold
    no unevaluated function, and every expectation over random variables of unspecified law written by linearity
    (:func:`.expectation.by_linearity`)."""
    if not isinstance(expression, sympy.Basic):
        return expression
    expression = by_linearity(expression)
    if not expression.has(sympy.Derivative, sympy.Subs):
        return expression

    def do(e):
        if e.has(AppliedUndef):
            return e
        try:
            if isinstance(e, sympy.Derivative) and any(isinstance(v, sympy.MatrixExpr) for v in e.variables):
                return _by_matrix(e)
            return e.doit(deep=False)
        except Exception:  # sympy cannot differentiate it (a matrix expression): left for the explicit point
            return e

    return expression.replace(lambda e: isinstance(e, (sympy.Derivative, sympy.Subs)), do)


def _by_matrix(derivative):
    """A derivative by a matrix symbol, sum by sum with each product's scalar factor taken out first (sympy 1.14
    gives 0 for ∂(c·Tr(AAᵀ))/∂A with a symbol c, but 2cA for c·∂Tr(AAᵀ)/∂A)."""
    (variable, count), = derivative.variable_count
    if count != 1:
        raise NotImplementedError("second derivatives by a matrix")

    def by(expression):
        if isinstance(expression, sympy.Add):
            parts = [by(term) for term in expression.args if term.has(variable)]
            return functools.reduce(lambda x, y: x + y, parts)
        if isinstance(expression, sympy.Mul):
            factor, rest = expression.as_independent(variable, as_Add=False)
            if factor != 1:
                return factor * by(rest)
        return sympy.Derivative(expression, variable).doit()

    if not derivative.expr.has(variable):
        raise NotImplementedError("a derivative of an expression free of its variable")
    return by(derivative.expr)


def _unknowns(expression) -> set:
    """The quantities ``expression`` states nothing about: unevaluated functions (their classes) and moments of
    random variables of unspecified law."""
    if not isinstance(expression, sympy.Basic):
        return set()
    found = {f.func for f in expression.atoms(AppliedUndef)}
    found |= {e for e in expression.atoms(Expectation) if not e.is_gaussian}
    return found


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
        return _done(side)

    named = sorted(str(f) for f in functions)
    names = " and ".join(([f"the unevaluated function{'s' * (len(named) > 1)} {', '.join(named)}"] if named else [])
                         + (["moments of random variables of unspecified law"] if moments else []))
    left, right = concrete(a), concrete(b)
    if _unknowns(left) | _unknowns(right) or _unevaluable(left) or _unevaluable(right):
        return _unchecked(f"holds {names}, which the checker could not replace by generic ones")
    outcome = _numeric(left, right, rng, POINTS)
    if outcome.outcome == "numeric":
        return StepCheck("numeric", f"{outcome.detail}, with {names} replaced by generic ones drawn at random",
                         points=outcome.points, digits=outcome.digits, limited=outcome.limited)
    if outcome.failed and functions:
        return _unchecked(f"holds {names}: the sides differ when they are replaced by generic ones, so the step "
                          f"rests on what they are")
    if outcome.failed:  # moments of distinct products are independent over all laws: a true failure
        return StepCheck("failed", f"{outcome.detail} (with the moments of random variables of unspecified law "
                                   f"drawn at random; the step claims it for every law)", points=outcome.points,
                         point=outcome.point, values=outcome.values)
    return outcome


# ----------------------------------------------------------------------------- symbolic


def _has_order(expression) -> bool:
    return isinstance(expression, sympy.Basic) and expression.has(sympy.Order)


def _asymptotic(a, b) -> StepCheck:
    """a = b + O(g) (an Order term on either side or both): the remainder, a − b without its Order term, must be
    O(g) (``Order.contains``); sympy absorbs into O(g) the terms it already knows to be O(g)."""
    difference = a - b
    order = difference.getO()
    remainder = difference.removeO()
    if order is None:
        return _unchecked("the Order terms of the two sides cancel: nothing is left to compare")
    if remainder == 0:
        return StepCheck("symbolic", f"the sides differ by {order}")
    try:
        contained = order.contains(remainder)
    except Exception as error:  # Order.contains raises for remainders it cannot expand
        return _unchecked(f"Order.contains could not decide the remainder ({type(error).__name__})")
    if contained is True:
        return StepCheck("symbolic", f"the remainder is {order} (Order.contains)")
    if contained is False:
        leading = sympy.Order(remainder, *zip(order.variables, order.point))
        return StepCheck("failed", f"the remainder {sympy.factor(remainder)} is {leading}, not {order}")
    return _unchecked(f"Order.contains could not decide whether the remainder is {order}")


def _proved(a, b, cheap: bool = False, stopped: list | None = None) -> str | None:
    """How sympy proves a = b, or None: identical, ``expand``, ``simplify``, ``equals`` (cheapest first; only the
    first two when ``cheap``, for sides that could not be evaluated anyway), together within
    :data:`SYMBOLIC_SHARE` of the step's budget; an attempt stopped there is named in ``stopped``."""
    stopped = [] if stopped is None else stopped
    if a == b:
        return "the two sides are the same expression"
    if _shape(a)[0] == "matrix" or _shape(b)[0] == "matrix":
        return _proved_matrix(a, b)
    if not (isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr)):
        return None
    difference = a - b
    if difference == 0:
        return "the two sides are the same expression"
    operations = sympy.count_ops(difference)
    attempts = []
    # expand and simplify can run for minutes on sums (the numeric check takes milliseconds)
    summed = difference.has(sympy.Sum, sympy.Product)
    if operations <= EXPAND_OPERATIONS and not summed:
        attempts.append(("expand(lhs − rhs) = 0", lambda: sympy.expand(difference) == 0))
    if operations <= SIMPLIFY_OPERATIONS and not cheap and not summed:
        attempts += [("simplify(lhs − rhs) = 0", lambda: sympy.simplify(difference) == 0),
                     ("lhs.equals(rhs) is True", lambda: a.equals(b) is True)]
    share, mine = _CLOCK.share(SYMBOLIC_SHARE), None
    try:
        with _CLOCK.limit(share) as mine:
            for how, attempt in attempts:
                _CLOCK.trying = f"sympy's {how.split(' ')[0].split('(')[0]} of the sides"
                try:
                    if attempt():
                        return how
                except Exception:  # sympy raises NotImplementedError (and others) where a rewrite is missing
                    continue
    except _BudgetSpent as spent:
        if mine is None or spent.limit is not mine:
            raise
        stopped.append(f"{_CLOCK.trying} stopped at {share:g} s ({SYMBOLIC_SHARE:g} of the step's budget)")
    return None


def _proved_matrix(a, b) -> str | None:
    try:
        done = (a - b).doit()
    except Exception:  # a derivative of a matrix sympy cannot subtract, or cannot carry out
        return None
    if getattr(done, "is_ZeroMatrix", False) or (isinstance(done, sympy.MatrixBase) and done.is_zero_matrix):
        return "lhs − rhs is the zero matrix"
    return None


def _unevaluable(expression) -> str | None:
    """Why ``expression`` cannot be evaluated at a point (a limit), or None. Unevaluated functions and moments of
    unspecified laws are unknowns (:func:`_with_unknowns`); derivatives are taken (:func:`_done`), those of matrix
    expressions once the matrices are explicit."""
    if expression.has(sympy.Limit):
        return "holds an unevaluated Limit"
    return None


# ----------------------------------------------------------------------------- numeric


def _numeric(a, b, rng: random.Random, points: int = POINTS) -> StepCheck:
    """a = b at ``points`` admissible random points (30 digits), or the first point where they differ. The digits
    of agreement at a point are at most those its evaluation established (the sides' quadrature error estimates,
    :func:`_agreed`); a difference within them is agreement to those digits, never a failure, and fewer than
    :data:`AGREEMENT_DIGITS` established leave the step unchecked."""
    structured = _is_structured(a) or _is_structured(b)
    plan = _sign_plan(a, b, rng, points)
    agreements = []
    for number in range(1, points + 1):
        _CLOCK.trying = f"the numeric check at point {number} of {points}, {WORKING_DIGITS} digits"
        drawn = _admissible(a, b, rng, structured, plan[number - 1])
        if isinstance(drawn, str):
            return _unchecked(drawn)
        point, (left, right), error = drawn
        agreement = _agreed(left, right, error)
        if agreement is None:
            agreement = _recheck(a, b, point, left, right, error)
            if agreement is None:
                return StepCheck("failed", f"the sides differ in the {_ordinal(_agreement(left, right))} digit",
                                 points=number, point=_shown(point), values=(_text(left), _text(right)))
        digits, limited = agreement
        if digits < AGREEMENT_DIGITS:
            return _unchecked(f"its quadrature reached only {math.floor(digits)} digits at point {number} (the "
                              f"sides agree within its error estimate; {AGREEMENT_DIGITS} are needed)")
        agreements.append(agreement)
    digits, limited = min(agreements)
    return StepCheck("numeric", f"{points} points", points=points, digits=digits, limited=limited)


def _established(error, scale) -> float:
    """Digits that an absolute ``error`` (the sides' quadrature error estimates together) leaves of values of
    size ``scale``: :data:`WORKING_DIGITS` when nothing was estimated."""
    if not error:
        return float(WORKING_DIGITS)
    if not scale:
        return 0.0
    return max(0.0, min(float(WORKING_DIGITS), float(-sympy.log(sympy.sympify(error) / scale, 10))))


def _agreed(left, right, error, scale=None) -> tuple[float, bool] | None:
    """(digits, quadrature-limited) if the sides agree at this point: to :data:`AGREEMENT_DIGITS` digits relative
    to ``scale`` (default: the larger side), or within their combined error estimate ``error``; the digits are
    then the fewer of those agreeing and those ``error`` establishes, quadrature-limited where the latter are
    fewer. None if they differ beyond both."""
    scale = max(_size(left), _size(right)) if scale is None else scale
    agreement, established = _agreement(left, right, scale), _established(error, scale)
    if agreement < AGREEMENT_DIGITS and not _gap(left, right) <= error:
        return None
    return min(agreement, established), established <= agreement and established < WORKING_DIGITS


def _sign_plan(a, b, rng: random.Random, points: int = POINTS) -> list[dict]:
    """For each point, the sign of each real symbol whose sign is not assumed: every such symbol is positive at
    some points and negative at others (an identity true for one sign only, √(x²) = x, cannot pass by luck)."""
    free = sorted((s for s in _symbols(a) | _symbols(b) if isinstance(s, sympy.Symbol) and not s.is_integer
                   and s.is_positive is None and s.is_negative is None and s.is_zero is None), key=str)
    plan = [{} for _ in range(points)]
    for symbol in free:
        signs = [(-1) ** k for k in range(points)]
        rng.shuffle(signs)
        for point, sign in zip(plan, signs):
            point[symbol] = sign
    return plan


def _admissible(a, b, rng: random.Random, structured: bool, signs: dict):
    """(point, (left, right), their combined error estimate): a point where both sides are finite, real where
    possible (a point where a side is not real while the symbols are lies outside the domain: drawn again, with
    free signs after half the tries); a string if none can be had."""
    fallback = None
    for attempt in range(REDRAWS + 1):
        signs = signs if attempt < REDRAWS // 2 else {}
        point = _draw(a, b, rng, signs) if structured else _draw_scalars(a, b, rng, signs)
        if isinstance(point, str):
            return point
        estimates = [_estimated(side, point, WORKING_DIGITS) for side in (a, b)]
        why = next((v for v in estimates if isinstance(v, str)), None)
        if why:
            return why
        if any(v is None for v in estimates):
            continue
        values, error = [v for v, _ in estimates], sum(e for _, e in estimates)
        if all(_is_real(v) for v in values):
            return point, tuple(v.applyfunc(sympy.re) if _is_matrix(v) else sympy.re(v) for v in values), error
        fallback = fallback or (point, tuple(values), error)
    return fallback or f"no point among {REDRAWS + 1} drawn where both sides are finite"


def _is_matrix(value) -> bool:
    return isinstance(value, sympy.MatrixBase)


def _entries(value) -> list:
    return list(value) if _is_matrix(value) else [value]


def _is_real(value) -> bool:
    """Real up to the working precision (evalf leaves an imaginary part of 1e-40 from a real square root)."""
    return all(v.is_real or abs(sympy.im(v)) <= 10.0 ** (5 - WORKING_DIGITS) * (abs(v) + 1e-300)
               for v in _entries(value))


def _size(value):
    """The largest absolute value (of the entries of a matrix)."""
    return max(abs(v) for v in _entries(value))


def _gap(left, right):
    if _is_matrix(left) != _is_matrix(right) or (_is_matrix(left) and left.shape != right.shape):
        return sympy.oo
    return max(abs(l - r) for l, r in zip(_entries(left), _entries(right)))


def _agreement(left, right, scale=None) -> float:
    """Digits shared by the two values (matrices: their worst entry), relative to ``scale`` (default: the larger
    of them)."""
    gap = _gap(left, right)
    if gap == sympy.oo:
        return 0.0
    scale = max(_size(left), _size(right)) if scale is None else scale
    if gap == 0 or scale == 0:
        return float(WORKING_DIGITS)
    return max(0.0, min(float(WORKING_DIGITS), float(-sympy.log(gap / scale, 10))))


def _ordinal(digits: float) -> str:
    k = max(1, int(math.floor(digits)) + 1)
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(k, f"{k}th")


def _recheck(a, b, point: dict, left, right, error=0) -> tuple[float, bool] | None:
    """(digits, quadrature-limited) as :func:`_agreed`, relative to the size of the sides' terms, if the
    difference is round-off of an exact zero (it shrinks when the precision doubles) or, at twice the precision,
    within the sides' error estimates; None if it is a real difference (it stays)."""
    terms = max(_term_scale(a, point), _term_scale(b, point), _size(left), _size(right))
    agreement = _agreed(left, right, error, terms)
    if agreement is not None:
        return agreement
    _CLOCK.trying = f"the {2 * WORKING_DIGITS}-digit re-check of a mismatch"
    again = [_estimated(side, point, 2 * WORKING_DIGITS) for side in (a, b)]
    if any(v is None or isinstance(v, str) for v in again):
        return None
    (left2, error2), (right2, other2) = again
    gap, gap2 = _gap(left, right), _gap(left2, right2)
    if gap == sympy.oo:
        return None
    if gap2 <= gap * 10.0 ** (-WORKING_DIGITS / 2) or gap2 <= error2 + other2:
        established = _established(error2 + other2, terms)
        agreement = float(WORKING_DIGITS) if gap2 == 0 else min(float(WORKING_DIGITS), _agreement(left2, right2, terms))
        return min(agreement, established), established <= agreement and established < WORKING_DIGITS
    return None


def _term_scale(expression, point: dict) -> float:
    """The size of the largest top-level term of ``expression`` at ``point`` (what a cancellation started from)."""
    explicit = _explicit(expression, point)
    terms = sympy.Add.make_args(explicit) if isinstance(explicit, sympy.Expr) and not _is_matrix(explicit) else ()
    sizes = []
    for term in terms:
        value = sympy.N(term, WORKING_DIGITS)
        if value.is_number and value.is_finite:
            sizes.append(abs(value))
    return max(sizes, default=sympy.S.Zero)


def _evaluate(expression, point: dict, digits: int):
    """The value of ``expression`` at ``point`` to ``digits`` digits (sympy's evalf over mpmath); None where it
    is not finite; a string (why) where it is not a number."""
    estimate = _estimated(expression, point, digits)
    return estimate[0] if isinstance(estimate, tuple) else estimate


def _estimated(expression, point: dict, digits: int):
    """(the value of ``expression`` at ``point`` to ``digits`` digits, an estimate of its absolute error from
    quadrature: each Gaussian expectation's and definite integral's own estimate times the side's sensitivity to
    it, :func:`_propagated`; 0 where there is none); None where it is not finite; a string (why) where it is not a
    number."""
    try:
        expression, quadratures = _expectations_at(expression, point, digits)
        if expression is None:
            return None
        explicit, integrals = _integrals_at(_explicit(expression, point), digits)
        quadratures.update(integrals)
        value = _number(explicit, {d: v for d, (v, _) in quadratures.items()}, digits)
    except QuadratureShort as short:
        return f"its quadrature falls short: {short}"
    except (ZeroDivisionError, ValueError, OverflowError, TypeError, ArithmeticError, mpmath.libmp.NoConvergence):
        return None
    for entry in _entries(value):
        if entry.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
            return None
        if not entry.is_number or entry.free_symbols or entry.atoms(sympy.Integral, sympy.Sum, sympy.Product):
            return f"evalf leaves {entry if len(str(entry)) < 80 else type(entry).__name__} unevaluated"
    try:
        return value, _propagated(explicit, quadratures, value, digits)
    except (ZeroDivisionError, ValueError, OverflowError, TypeError, ArithmeticError):
        return None


def _number(explicit, values: dict, digits: int):
    """``explicit`` with the quadratures' stand-ins replaced by ``values``, to ``digits`` digits."""
    explicit = explicit.xreplace(values) if values else explicit
    return explicit.applyfunc(lambda e: sympy.N(e, digits)) if _is_matrix(explicit) else sympy.N(explicit, digits)


def _propagated(explicit, quadratures: dict, value, digits: int):
    """Σ |∂side/∂qᵢ| εᵢ over the quadratures qᵢ (stand-in → (value, error estimate εᵢ)) of a side: each derivative
    a difference quotient, qᵢ moved by max(εᵢ, 10⁻¹² |qᵢ|) so that the difference stands clear of the evaluation's
    rounding."""
    values = {d: v for d, (v, _) in quadratures.items()}
    total = 0
    for d, (v, error) in quadratures.items():
        if not error:
            continue
        error = sympy.Float(error, 5)
        step = max(error, sympy.Float(10.0 ** -12) * max(abs(v), 1))
        moved = _number(explicit, {**values, d: v + step}, digits)
        total += _gap(moved, value) / step * error
    return total


def _integrals_at(expression, digits: int):
    """(``expression`` with each definite integral free of symbols replaced by a stand-in symbol, stand-in →
    (value, error estimate)) (:func:`.expectation.integral_estimate`: a Gaussian weight's expectation, exactly
    where it can be conditioned, else mpmath.quad of bounded degree whose error estimate is checked)."""
    if not isinstance(expression, sympy.Basic) or not expression.has(sympy.Integral):
        return expression, {}
    prec = sympy.core.evalf.dps_to_prec(digits) + 8
    found: dict = {}

    def value(e):
        number, error = integral_estimate(e, prec)
        if mpmath.im(number) == 0:
            number = sympy.Float(mpmath.re(number), prec)
        else:
            number = sympy.Float(mpmath.re(number), prec) + sympy.I * sympy.Float(mpmath.im(number), prec)
        stand_in = sympy.Dummy("integral")
        found[stand_in] = (number, error)
        return stand_in

    return expression.replace(lambda e: isinstance(e, sympy.Integral) and not e.free_symbols, value), found


def _expectations_at(expression, point: dict, digits: int):
    """(``expression`` with each Gaussian expectation replaced by a stand-in symbol, stand-in → (its value at
    ``point``, its error estimate)) (a quadrature, with the expectation compiled once for all points:
    :meth:`.expectation.Expectation.estimate_at`); (None, {}) where one is not finite there."""
    if not isinstance(expression, sympy.Basic) or not expression.has(Expectation):
        return expression, {}
    values = point if "integers" not in point else {**point["integers"], **point["scalars"]}
    replaced, found = {}, {}
    for e in expression.atoms(Expectation):
        if e.is_gaussian and not any(isinstance(s, sympy.MatrixSymbol) for s in e.free_symbols):
            estimate = e.estimate_at(values, sympy.core.evalf.dps_to_prec(digits) + 8)
            if estimate is None:
                return None, {}
            replaced[e] = sympy.Dummy("expectation")
            found[replaced[e]] = estimate
    return expression.xreplace(replaced), found


def _explicit(expression, point: dict):
    """``expression`` at ``point``: symbols, indexed entries and matrix symbols replaced, matrix operations done."""
    if "integers" not in point:  # a plain point: scalar symbols only
        return _done(_substituted(expression, point))
    expression = _sums_done(_substituted(expression, point["integers"]))
    for group in ("indexed", "matrices", "scalars"):
        expression = _substituted(expression, point[group])
    expression = _differenced(expression)
    if isinstance(expression, sympy.MatrixExpr) or expression.has(sympy.MatrixExpr):
        expression = _matrix_done(expression)
    return _done(expression)


STEP = sympy.Rational(1, 10**25)
"""The step of a central difference: its error, of order STEP² (10⁻⁵⁰), is far below the 20 digits compared."""


def _differenced(expression):
    """A derivative by a scalar of a matrix expression at an explicit point, d/dε f(ε) at ε = p, written as the
    central difference (f(p + h) − f(p − h))/2h with an exact h = :data:`STEP`: each side is then a matrix
    expression in explicit rational matrices, carried out exactly (sympy's derivative of a symbolic inverse or
    determinant takes seconds; evalf then resolves the cancellation of the difference)."""
    if not isinstance(expression, sympy.Basic) or not expression.has(sympy.Subs):
        return expression

    def difference(e):
        derivative, (variable,), (at,) = e.args[0], e.variables, e.point
        if not (isinstance(derivative, sympy.Derivative) and derivative.variable_count == ((variable, 1),)
                and at.is_number):
            return e
        body = derivative.expr
        if body.free_symbols - {variable} or not (body.has(sympy.MatrixExpr, sympy.Trace, sympy.Determinant)
                                                  or isinstance(body, sympy.MatrixBase)):
            return e
        return (body.xreplace({variable: at + STEP}) - body.xreplace({variable: at - STEP})) / (2 * STEP)

    return expression.replace(lambda e: isinstance(e, sympy.Subs) and len(e.variables) == 1, difference)


def _matrix_done(expression):
    """Matrix operations on explicit matrices carried out (``doit``, which multiplies, inverts and traces explicit
    matrices directly; ``as_explicit``, entry by entry, where that leaves a matrix expression); a 1×1 result is its
    entry."""

    def explicit(e):
        try:
            done = e.doit()
        except Exception:  # sympy cannot carry it out: entry by entry below
            done = e
        if isinstance(done, sympy.MatrixExpr) and not isinstance(done, sympy.MatrixBase):
            done = done.as_explicit()
        return done

    special = {m: m.as_explicit() for m in expression.atoms(sympy.Identity, sympy.ZeroMatrix, sympy.OneMatrix)
               if all(n.is_Integer for n in m.shape)}
    expression = expression.xreplace(special) if special else expression
    matrix_operation = (lambda e: (isinstance(e, sympy.MatrixExpr) and not isinstance(e, sympy.MatrixBase))
                        or isinstance(e, (sympy.Trace, sympy.Determinant)))
    expression = explicit(expression) if matrix_operation(expression) else expression.replace(matrix_operation,
                                                                                               explicit)
    if isinstance(expression, sympy.MatrixBase) and expression.shape == (1, 1):
        return expression[0, 0]
    return expression


def _is_structured(expression) -> bool:
    """Holds matrices, indexed entries, sums or products (whose sizes and limits are drawn first)."""
    return isinstance(expression, sympy.MatrixExpr) or expression.has(
        sympy.MatrixSymbol, sympy.Indexed, sympy.Sum, sympy.Product, sympy.Identity)


def _draw_scalars(a, b, rng: random.Random, signs: dict) -> dict:
    """A random admissible value for each symbol of ``a`` and ``b`` (by its assumptions, with ``signs``)."""
    symbols = sorted(_symbols(a) | _symbols(b), key=str)
    return {s: _integer_value(s, rng) if s.is_integer else _real_value(s, rng, signs.get(s)) for s in symbols}


def _draw(a, b, rng: random.Random, signs: dict):
    """A random admissible point for the symbols, matrices and indexed entries of ``a`` and ``b`` (see the module
    docstring), as the four substitutions :func:`_explicit` makes; a string if some symbol cannot be given a
    value."""
    both = sympy.Tuple(a, b)
    counting = sorted(_counting_symbols(both), key=str)
    for attempt in range(2 * REDRAWS):  # matrix dimensions must fit together (D_1 = H·D_2): draw until they do
        if attempt < REDRAWS:
            integers = {s: _integer_value(s, rng, counting=True) for s in counting}
        else:  # the same dimension everywhere (1 at last: every product of 1×1 matrices fits)
            integers = dict.fromkeys(counting, sympy.Integer(max(1, 3 - (attempt - REDRAWS) // 4)))
        try:
            fixed = _sums_done(both.xreplace(integers))
            break
        except ShapeError:
            continue
    else:
        return f"no matrix dimensions for {_names(counting)} that fit together"
    integers.update({s: _integer_value(s, rng) for s in sorted(_scalar_symbols(fixed), key=str) if s.is_integer})
    fixed = fixed.xreplace(integers)
    indexed = {e: _real_value(sympy.Symbol("entry", real=True), rng)
               for e in sorted(fixed.atoms(sympy.Indexed), key=str)}
    matrices = {}
    for m in sorted(fixed.atoms(sympy.MatrixSymbol), key=str):
        rows, cols = m.shape
        if not (rows.is_Integer and cols.is_Integer):
            return f"the matrix symbol {m.name} has a shape {m.shape} that is not made of integers"
        matrices[m] = _matrix_value(int(rows), int(cols), rng)
    scalars = {s: _real_value(s, rng, signs.get(s)) for s in sorted(_scalar_symbols(fixed.xreplace(indexed)), key=str)
               if not s.is_integer}
    return {"integers": integers, "indexed": indexed, "matrices": matrices, "scalars": scalars}


SUMMED_TERMS = 1000
"""A finite sum or product with at most this many terms is written out term by term at a point."""


def _sums_done(expression):
    """Finite sums and products (of indexed entries, Kronecker deltas, …) written out term by term, each entry then
    getting its value; sums of more than :data:`SUMMED_TERMS` terms are left to evalf."""

    def small(e):
        if not isinstance(e, (sympy.Sum, sympy.Product)):
            return False
        terms = 1
        for _, low, high in e.limits:
            if not (low.is_Integer and high.is_Integer):
                return False
            terms *= max(0, int(high - low) + 1)
        return terms <= SUMMED_TERMS

    return expression.replace(small, lambda e: e.doit())


def _scalar_symbols(expression) -> set:
    return {s for s in expression.free_symbols if isinstance(s, sympy.Symbol)}


def _counting_symbols(expression) -> set:
    """Symbols that count: matrix dimensions, and limits of sums and products."""
    found = set()
    for m in expression.atoms(sympy.MatrixSymbol, sympy.Identity, sympy.ZeroMatrix):
        found |= set().union(*(sympy.sympify(n).free_symbols for n in m.shape))
    for e in expression.atoms(sympy.Sum, sympy.Product):
        for _, low, high in e.limits:
            found |= low.free_symbols | high.free_symbols
    return {s for s in found if isinstance(s, sympy.Symbol)}


def _integer_value(symbol, rng: random.Random, counting: bool = False) -> sympy.Integer:
    if counting or symbol.is_positive:
        return sympy.Integer(rng.randint(1, 3))
    if symbol.is_nonnegative:
        return sympy.Integer(rng.randint(0, 3))
    if symbol.is_negative:
        return sympy.Integer(rng.randint(-3, -1))
    return sympy.Integer(rng.randint(-3, 3))


def _uniform(rng: random.Random, low: float, high: float) -> sympy.Rational:
    """An exact rational with six decimals, uniform in (low, high)."""
    return sympy.Rational(rng.randint(round(low * 10**6) + 1, round(high * 10**6) - 1), 10**6)


def _real_value(symbol, rng: random.Random, sign: int | None = None) -> sympy.Rational:
    """A value by the symbol's assumptions; ``sign`` (±1) for a symbol whose sign is not assumed."""
    if sign is not None and symbol.is_positive is None and symbol.is_negative is None:
        return sign * _uniform(rng, 0.0, 1.5)
    if symbol.is_positive:
        return _uniform(rng, 0.1, 2.5)
    if symbol.is_negative:
        return _uniform(rng, -2.5, -0.1)
    if symbol.is_nonnegative:
        return _uniform(rng, 0.0, 2.5)
    if symbol.is_nonpositive:
        return _uniform(rng, -2.5, 0.0)
    return _uniform(rng, -1.5, 1.5)


def _matrix_value(rows: int, cols: int, rng: random.Random) -> sympy.ImmutableMatrix:
    """Random rationals; a square matrix is made symmetric positive definite (G Gᵀ + I/2)."""
    entries = sympy.Matrix(rows, cols, lambda i, j: _uniform(rng, -1.0, 1.0))
    if rows == cols:
        entries = entries * entries.T + sympy.eye(rows) / 2
    return sympy.ImmutableMatrix(entries)


def _shown(point: dict) -> dict:
    """The point as name → value text (matrices as nested lists)."""
    if "integers" not in point:
        return {str(k): _text(v) for k, v in point.items()}
    shown = {}
    for group in ("integers", "scalars", "indexed"):
        shown.update({str(k): _text(v) for k, v in sorted(point[group].items(), key=lambda kv: str(kv[0]))})
    shown.update({str(k): str([[_text(x) for x in row] for row in v.tolist()]) for k, v in point["matrices"].items()})
    return shown


def _text(value) -> str:
    """A value in 12 significant digits (an exact rational with few digits as it is)."""
    if _is_matrix(value):
        return str([[_text(v) for v in row] for row in value.tolist()])
    if isinstance(value, (sympy.Integer, int)):
        return str(value)
    if isinstance(value, sympy.Rational) and 10**6 % value.q == 0:  # a drawn value: its six decimals exactly
        return str(Decimal(value.p) / Decimal(value.q))
    return str(sympy.N(value, 12))
