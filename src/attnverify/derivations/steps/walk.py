"""A derivation's steps checked in order (`check_derivation`), each under its CPU-time safety net, in a
forked child watched by the parent; the outcomes of a whole derivation are kept on disk by `derivation_key`
(a walk with an outcome the safety net cut short is not kept, so a later run decides it)."""

from __future__ import annotations

import time
from dataclasses import replace

import sympy
from sympy.core.function import AppliedUndef

from ...base.files import fingerprint
from .outcome import StepCheck, unchecked
from .budget import ANNOUNCE_AFTER, POLL, BudgetSpent, CLOCK, Child, Watch, any_cut, budget_outcome, can_fork, step_budget
from .comparison import read_kept, remember, write_kept
from .work import warm
from .relations import WalkState, check_step, condition_outcome, solved_condition, solves, unsolved_identity


_CHECKED: dict = {}
"""(derivation, budget) → its steps' outcomes, in this process (none that the safety net cut short)."""


def check_derivation(derivation, *, budget: float | None = None, on_step=None) -> tuple[StepCheck, ...]:
    """The outcome of every step of ``derivation`` ([`Derivation`][attnverify.derivations.derivation.Derivation]), in
    order, each step's check limited to ``budget`` CPU seconds (`step_budget`); kept on disk for the whole derivation as
    well as per comparison (a derivation checked before is read, not walked again; one with an outcome the safety net
    cut short is walked again next time). ``on_step(number, total, description, budget)`` is called for a step still
    being checked after `ANNOUNCE_AFTER` seconds.

    The walk runs in a child process forked for it (any thread may fork), where a CPU-time alarm stops an attempt
    at its limit; the parent kills a child silent past a step's budget (`Watch`). Without
    ``os.fork`` the walk runs in this process, limited by the alarm only in the main thread."""
    budget = step_budget(budget)
    if (derivation, budget) in _CHECKED:
        return _CHECKED[derivation, budget]
    key = derivation_key(derivation)
    kept = read_kept(key) if key else None
    if isinstance(kept, tuple) and len(kept) == len(derivation.steps):
        outcomes = kept
    else:
        warm()  # once per process, before the fork: every child starts with sympy's tables built
        outcomes = _walk_forked(derivation, budget, on_step) if can_fork() else _walked(derivation, budget)
        if any_cut(outcomes):  # neither kept nor remembered: the next call decides afresh
            return outcomes
        if key:
            write_kept(key, outcomes)
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
    ``spent`` (number → outcome) are not compared again, only learnt (`check_derivation` without its
    disk)."""
    context, outcomes = WalkState(), []
    spent = spent or {}
    for number, step in enumerate(derivation.steps, 1):
        CLOCK.tell(("start", number))
        if number in spent:
            outcome = _learnt_only(step, number, context, spent[number])
        else:
            outcome = _bounded_step(step, number, context, budget)
        CLOCK.tell(("step", number, outcome.as_dict()))
        outcomes.append(outcome)
    for number, step in enumerate(derivation.steps, 1):
        if step.kind == "condition" and outcomes[number - 1].outcome == "condition":
            outcomes[number - 1] = condition_outcome(number, context.solved.get(number, []))
        elif number in context.implicit and not outcomes[number - 1].failed:
            # an equation f = 0 that failed as an identity: a failure unless a later step solves it; solved, the
            # step is a condition when that equation is all it says (else its other relations' outcomes stand)
            failed, alone = context.implicit[number]
            solvers = context.solved.get(number)
            if not solvers:
                outcomes[number - 1] = unsolved_identity(failed)
            elif alone:  # what cut the failed identity short stays said (the outcome is then not kept)
                outcomes[number - 1] = replace(solved_condition(solvers), cut=outcomes[number - 1].cut)
    return tuple(outcomes)


def _bounded_step(step, number: int, context: "WalkState", budget: float | None) -> StepCheck:
    """Step ``number``'s outcome within ``budget`` seconds; past them, unchecked (what it establishes is still
    learnt, without comparisons)."""
    if budget is None or not CLOCK.usable():
        return check_step(step, number, context)
    before = context.copy()
    try:
        with CLOCK.limit(budget):
            CLOCK.trying = "reading the step"
            return check_step(step, number, context)
    except BudgetSpent:
        context.restore(before)
        return _learnt_only(step, number, context, budget_outcome(budget, CLOCK.trying))


def _learnt_only(step, number: int, context: "WalkState", outcome: StepCheck) -> StepCheck:
    """``outcome`` for a step whose check ran out of budget; its relations learnt as if its comparisons were left
    undecided (so that later steps see its names)."""
    context.skip = True
    try:
        check_step(step, number, context)
    finally:
        context.skip = False
    solves(context, number, outcome)
    return outcome


def _walk_forked(derivation, budget: float, on_step=None) -> tuple[StepCheck, ...]:
    """`_walked` in a forked child, watched: a step whose child is silent past its budget
    (`Watch`) is unchecked, the child killed and the walk resumed in a new one past that step; the
    comparisons the child decided are kept in this process's memory."""
    total, spent = len(derivation.steps), {}
    while True:
        child = Child(lambda: _walked(derivation, budget, spent))
        outcomes, current, started, announced, trying = {}, None, time.monotonic(), False, ""
        watch = Watch(child, budget)
        try:
            while True:
                now = time.monotonic()
                wake = POLL if announced or current is None else min(POLL, started + ANNOUNCE_AFTER - now)
                messages = child.receive(wake)
                if messages is None:  # the child ended without its result
                    break
                for message in messages:
                    kind = message[0]
                    if kind == "start":
                        current, started, announced, trying = message[1], time.monotonic(), False, ""
                        watch.restart()
                    elif kind == "trying":
                        trying = message[1]
                    elif kind == "kept":
                        remember(message[1], StepCheck.from_dict(message[2]))
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
                if watch.over():
                    break
        finally:
            child.end(kill=True)
        if current is None or current in outcomes:  # no step under way: the child itself failed
            return _finished(outcomes, total, "the checker's process ended unexpectedly")
        spent.update({k: v for k, v in outcomes.items()})
        spent[current] = budget_outcome(budget, trying, killed=True)
        if len(spent) >= total:
            return tuple(spent[k] for k in range(1, total + 1))


def _finished(outcomes: dict, total: int, why: str) -> tuple[StepCheck, ...]:
    return tuple(outcomes.get(k) or unchecked(why) for k in range(1, total + 1))
