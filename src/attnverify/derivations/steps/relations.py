"""What each step of a derivation claims and against what: a new form of a name against its latest value, a
solution against the condition it solves, an identity at random points, a plain expression against the previous
step; what a step establishes is learnt into the walk's `WalkState` (docs/derivation_steps.md)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import sympy

from .outcome import StepCheck, combined, unchecked, with_against
from .expressions import (carried_out, dimensions, function_definition, is_name, kind_of, labels, names_text,
                          outer_symbols, paired, relations_of, resolved, shape_of, side_at, substituted, symbols_of,
                          zero_like)
from .comparison import compare


@dataclass
class WalkState:
    """What the earlier steps established: each name's latest value and the step that gave it, the conditions
    (step, f) with f = 0, every symbol seen so far (matrices' dimensions included), and the expression a plain next
    step is compared with and its step (a failed step is not learnt: the last that held)."""

    env: dict = field(default_factory=dict)
    origin: dict = field(default_factory=dict)
    conditions: list = field(default_factory=list)
    seen: set = field(default_factory=set)
    previous: sympy.Basic | None = None
    solved: dict = field(default_factory=dict)  # condition step → the later steps whose solutions satisfy it
    skip: bool = False  # learn the steps without comparing (a step whose budget ran out)
    implicit: dict = field(default_factory=dict)  # step read as a condition → (its failed check, its only relation)
    previous_step: int | None = None

    def copy(self) -> "WalkState":
        return WalkState(dict(self.env), dict(self.origin), list(self.conditions), set(self.seen), self.previous,
                         {k: list(v) for k, v in self.solved.items()}, self.skip, dict(self.implicit),
                         self.previous_step)

    def restore(self, other: "WalkState") -> None:
        self.__dict__.update(other.copy().__dict__)

    def see(self, expression) -> None:
        """Count as known the symbols of ``expression`` and the dimensions of its matrices (`dimensions`):
        a later step written in them is a consequence to check, not a notation."""
        self.seen |= symbols_of(expression) | dimensions(expression)


def _compared(context: "WalkState", a, b) -> StepCheck:
    """`compare`, unless the context only learns (then undecided)."""
    return unchecked("not compared") if context.skip else compare(a, b)


def condition_outcome(number: int, solvers: list) -> StepCheck:
    """A step marked as a condition: counted as such when a later solution was checked against it, else
    unchecked."""
    if not solvers:
        return unchecked("a condition (an equation to solve) that no later step solves")
    return solved_condition(solvers)


def unsolved_identity(failed: StepCheck) -> StepCheck:
    """An equation f = 0 not marked a condition that failed as an identity and that no later step solves: a
    failure (read as a condition, it would pass unchecked whatever it says)."""
    return replace(failed, detail=f"{failed.detail}; an equation f = 0 that no later step solves, so an identity")


def solved_condition(solvers: list) -> StepCheck:
    """A condition a later solution was checked against."""
    steps = sorted(set(solvers))
    which = f"step{'s' * (len(steps) > 1)} {', '.join(map(str, steps))}"
    return StepCheck("condition", f"an equation to solve; the solution{'s' * (len(steps) > 1)} of {which} "
                                  f"satisf{'y' if len(steps) > 1 else 'ies'} it (checked there)", None)


def check_step(step, number: int, context: WalkState) -> StepCheck:
    """Step ``number``'s outcome; what it establishes is learnt into ``context``. A step the checker cannot read
    at all (sympy raises on it) is unchecked, with the error, never a pass and never a crash of the run. The
    checker's own arithmetic evaluates even where the caller's does not (a derivation recorded and checked under
    ``sympy.evaluate(False)``: its steps stay as written, docs/derivation_steps.md, "A side as written")."""
    try:
        with sympy.evaluate(True):
            return _checked_step(step, number, context)
    except Exception as error:  # noqa: BLE001  (any sympy failure on a user's expression)
        context.see(step.expression)
        context.previous, context.previous_step = step.expression, number
        return unchecked(f"the checker could not read this step ({type(error).__name__}: {error})")


def _checked_step(step, number: int, context: WalkState) -> StepCheck:
    expression = step.expression
    substitute = dict(getattr(step, "substitute", ()) or ())
    relations = relations_of(expression)
    if step.kind == "condition":
        if relations is None:
            raise ValueError("a condition must be an equation Eq(f, g) (or a tuple of them)")
        for a, b in relations:
            if substitute:  # the condition holds at those values (a direction, a change of variables)
                a, b = side_at(a, context.env, substitute), side_at(b, context.env, substitute)
            _learn_relation(context, number, a, b, "condition")
        outcome, relations = StepCheck("condition", "an equation to solve"), None
    elif step.kind != "derived":
        outcome = StepCheck(step.kind, f"marked as {'a' if step.kind == 'definition' else 'an'} {step.kind}")
    elif isinstance(expression, sympy.logic.boolalg.BooleanAtom):
        outcome = _boolean(expression)
    elif relations is None:
        outcome = _plain(expression, substitute, context)
        if isinstance(expression, sympy.FiniteSet):
            solves(context, number, outcome)
        elif context.previous_step not in (None, number - 1):  # the step before failed: said against which
            outcome = with_against(outcome, context.previous_step)
    else:  # relation by relation, each learnt before the next (a tuple may name s, then use it)
        parts = []
        for a, b in relations:
            part, role = _check_relation(a, b, substitute, context)
            if role == "solution":
                solves(context, number, part)
            if role == "condition":
                context.implicit.setdefault(number, (part, len(relations) == 1))
                part = replace(unchecked("a condition: an equation to solve, not an identity"), cut=part.cut)
            if role == "form" and part.failed:  # a slip: the name keeps its last form that held
                context.see(a)
            else:
                _learn_relation(context, number, a, b, role)
            parts.append(part)
        outcome, relations = combined(parts), None
    if step.kind == "derived" and outcome.failed and not isinstance(expression, sympy.FiniteSet):
        context.see(expression)  # a slip: the next plain step is compared with the last one that held
        return outcome
    _learn(context, number, expression, relations)
    return outcome


def solves(context: WalkState, number: int, outcome: StepCheck) -> None:
    """Step ``number``'s solution was checked against the condition of step ``outcome.against``."""
    if outcome.checked and not outcome.failed and outcome.against is not None:
        context.solved.setdefault(outcome.against, []).append(number)


def _boolean(expression) -> StepCheck:
    if expression == sympy.true:
        return StepCheck("symbolic", "sympy evaluates the relation to True")
    return StepCheck("failed", "sympy evaluates the relation to False")


def _check_relation(a, b, substitute: dict, context: WalkState) -> tuple[StepCheck, str]:
    """The outcome of one relation a = b, and its role: ``form`` (a new form of a name), ``name`` (its first
    value), ``notation`` (introduces symbols), ``solution``, ``condition`` or ``identity``. The step's
    ``substitute`` values are taken on both sides (after the names are resolved)."""
    env = context.env
    if a in env and a not in substitute:
        new = (outer_symbols(b) - context.seen - symbols_of(a) - set(substitute)
               - symbols_of(sympy.Tuple(*substitute.values())) - dimensions(a))
        if new:
            return unchecked(f"writes {a} in {names_text(new)}, new symbols (a notation, not a consequence)",
                              context.origin[a]), "notation"
        earlier = side_at(env[a], env, substitute)
        outcome = with_against(_compared(context, earlier, side_at(b, env, substitute)), context.origin[a])
        return (_taken_at(outcome, substitute) if substitute else outcome), "form"
    definition = function_definition(a, env)
    if definition is not None:  # f(2) after f(t) = …: the value there
        outcome = _compared(context, side_at(a, env, substitute), side_at(b, env, substitute))
        return with_against(outcome, context.origin[definition]), "identity"
    if is_name(a) and not b.has(a) and a not in substitute:
        condition = _condition_on(a, context) if isinstance(a, (sympy.Symbol, sympy.MatrixSymbol)) else None
        if condition is not None:
            step, f = condition
            others = {k: v for k, v in env.items() if k != a}
            solved = resolved(substituted(f, {a: b}, others), others)
            return with_against(_compared(context, solved, zero_like(solved)), step), "solution"
        if a in context.seen:
            return unchecked(f"solves for {a}, but no earlier condition (f = 0) holds {a} (if this step says what "
                              f"{a} is, mark it kind=\"definition\")"), "name"
        return unchecked(f"first value of {a}: nothing earlier to compare it with"), "name"
    introduced = (labels(symbols_of(a)) - labels(symbols_of(b)) - labels(context.seen) - labels(set(substitute))
                  - labels(symbols_of(sympy.Tuple(*substitute, *substitute.values()))))
    if introduced and b != 0:
        return unchecked(f"introduces {names_text(introduced)}: nothing earlier to compare it with"), "name"
    outcome = _compared(context, side_at(a, env, substitute), side_at(b, env, substitute))
    if outcome.failed and (b == 0 or a == 0) and outcome.point:
        return outcome, "condition"  # an equation to solve, unless no later step solves it (`_checked_step`)
    return (_taken_at(outcome, substitute, "the sides") if substitute else outcome), "identity"


TAKEN_AT_CHARACTERS = 400
"""The longest list of a step's values a label shows in full; longer ones are named, not written out."""


def _taken_at(outcome: StepCheck, substitute: dict, what: str = "the earlier form") -> StepCheck:
    """``outcome`` saying that the earlier form (or both sides) was taken at the step's values."""
    at = ", ".join(f"{k} = {v}" for k, v in substitute.items())
    if len(at) > TAKEN_AT_CHARACTERS:
        at = f"the step's values of {names_text(substitute)}"
        if len(at) > TAKEN_AT_CHARACTERS:
            at = f"the step's {len(substitute)} values"
    return replace(outcome, detail=f"{outcome.detail}; {what} taken at {at}")


def _condition_on(symbol, context: WalkState):
    """The latest earlier condition (step, f) in which ``symbol`` occurs, if any."""
    for step, f in reversed(context.conditions):
        if symbol in symbols_of(f):
            return step, f
    return None


def _plain(expression, substitute: dict, context: WalkState) -> StepCheck:
    """A plain expression: the roots of the latest condition (a set), or a new form of the previous expression."""
    if isinstance(expression, sympy.FiniteSet):
        return _roots(expression, context)
    previous = context.previous
    if previous is None:
        return unchecked("the first expression: nothing earlier to compare it with")
    if isinstance(previous, sympy.Equality):
        previous = previous.rhs
    if shape_of(previous) != shape_of(expression):
        return unchecked(f"a value ({kind_of(expression)}) that is not a new form of the previous step's "
                          f"({kind_of(previous)}): nothing to compare it with")
    earlier = previous.xreplace(substitute) if substitute else previous
    pairs = paired(earlier, expression)
    return combined([_compared(context, resolved(x, context.env), resolved(y, context.env)) for x, y in pairs])


def _roots(values: sympy.FiniteSet, context: WalkState) -> StepCheck:
    """Each value of a set solves the latest condition for the one symbol the values lack."""
    if not context.conditions:
        return unchecked("a set of values, and no earlier condition for them to solve")
    step, f = context.conditions[-1]
    unknowns = symbols_of(f) - set().union(*(symbols_of(v) for v in values))
    if len(unknowns) != 1:
        return unchecked(f"a set of values; the condition of step {step} has unknowns {names_text(unknowns) or 'none'}",
                          step)
    (x,) = unknowns
    parts = [_compared(context, resolved(f.xreplace({x: v}), context.env), sympy.S.Zero) for v in values]
    return with_against(combined(parts), step)


def _learn(context: WalkState, number: int, expression, relations) -> None:
    """Record what step ``number`` establishes: the relations of a marked step (those of a derived step are
    learnt as they are checked), its symbols, and the expression a plain next step is compared with."""
    for a, b in relations or []:
        _learn_relation(context, number, a, b, _marked_role(a, b, context))
    context.see(expression)
    context.previous, context.previous_step = expression, number


def _learn_relation(context: WalkState, number: int, a, b, role: str) -> None:
    """A condition is kept as f = a − b; a name (new, or a new form of it, or a solved symbol) takes the value b."""
    if role == "condition":
        f = a if b == 0 or getattr(b, "is_ZeroMatrix", False) else a - b
        context.conditions.append((number, carried_out(resolved(f, context.env))))
    elif role in ("form", "name", "solution"):
        context.env[a] = b
        context.origin[a] = number
    context.see(a)


def _marked_role(a, b, context: WalkState) -> str:
    """The role of a relation in a step marked as a definition or an assumption."""
    if b == 0 and isinstance(a, sympy.Expr) and not is_name(a):
        return "condition"
    if a in context.env or is_name(a) or (symbols_of(a) - symbols_of(b) - context.seen):
        return "name"
    return "identity"
