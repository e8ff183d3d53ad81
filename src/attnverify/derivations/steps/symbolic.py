"""The symbolic attempts of a comparison: the same expression, ``expand``/``simplify`` of the difference
(bounded by its size) or ``equals`` (None never passes), within `SYMBOLIC_SHARE` of the step's
budget; an Order term by ``Order.contains`` of the remainder (docs/derivation_steps.md, step 1 of a comparison)."""

from __future__ import annotations

import sympy

from .outcome import StepCheck, unchecked
from .budget import BudgetSpent, CLOCK, SYMBOLIC_SHARE
from .expressions import shape_of
from .work import SYMBOLIC_WORK, WorkSpent, bounded


SIMPLIFY_OPERATIONS = 120
"""``simplify`` and ``equals`` are tried on a difference of at most this many operations (they can take minutes
on larger ones, where the numeric check takes milliseconds)."""


EXPAND_OPERATIONS = 3000
"""``expand`` is tried on a difference of at most this many operations."""


def asymptotic(a, b) -> StepCheck:
    """a = b + O(g) (an Order term on either side or both): the remainder, a − b without its Order term, must be
    O(g) (``Order.contains``); sympy absorbs into O(g) the terms it already knows to be O(g)."""
    difference = a - b
    order = difference.getO()
    remainder = difference.removeO()
    if order is None:
        return unchecked("the Order terms of the two sides cancel: nothing is left to compare")
    if remainder == 0:
        return StepCheck("symbolic", f"the sides differ by {order}")
    try:
        contained = order.contains(remainder)
    except Exception as error:  # Order.contains raises for remainders it cannot expand
        return unchecked(f"Order.contains could not decide the remainder ({type(error).__name__})")
    if contained is True:
        return StepCheck("symbolic", f"the remainder is {order} (Order.contains)")
    if contained is False:
        leading = sympy.Order(remainder, *zip(order.variables, order.point))
        return StepCheck("failed", f"the remainder {sympy.factor(remainder)} is {leading}, not {order}")
    return unchecked(f"Order.contains could not decide whether the remainder is {order}")


def proved(a, b, cheap: bool = False, stopped: list | None = None, notes: list | None = None) -> str | None:
    """How sympy proves a = b, or None: identical, ``expand`` (a difference of at most `EXPAND_OPERATIONS`
    operations), ``simplify``, ``equals`` (at most `SIMPLIFY_OPERATIONS`; cheapest first; only the first two
    when ``cheap``, for sides that could not be evaluated anyway), each stopped past
    `SYMBOLIC_WORK` new sympy objects. These bounds decide, and ``notes`` says which of them stopped or
    left out an attempt; the safety net of `SYMBOLIC_SHARE` of the step's CPU budget lies far above what they
    allow, and an attempt it stops is named in ``stopped``."""
    stopped = [] if stopped is None else stopped
    notes = [] if notes is None else notes
    if a == b:
        return "the two sides are the same expression"
    if shape_of(a)[0] == "matrix" or shape_of(b)[0] == "matrix":
        return _proved_matrix(a, b)
    if not (isinstance(a, sympy.Expr) and isinstance(b, sympy.Expr)):
        return None
    difference = a - b
    if difference == 0:
        return "the two sides are the same expression"
    operations = sympy.count_ops(difference)
    attempts, skipped = [], ""
    # expand and simplify can run for minutes on sums (the numeric check takes milliseconds)
    summed = difference.has(sympy.Sum, sympy.Product)
    if operations <= EXPAND_OPERATIONS and not summed:
        attempts.append(("expand(lhs − rhs) = 0", lambda: sympy.expand(difference) == 0))
    if operations <= SIMPLIFY_OPERATIONS and not cheap and not summed:
        attempts += [("simplify(lhs − rhs) = 0", lambda: sympy.simplify(difference) == 0),
                     ("lhs.equals(rhs) is True", lambda: a.equals(b) is True)]
    elif not cheap and not summed:
        skipped = (f"sympy's simplify and equals not tried: lhs − rhs has {operations} operations (more than "
                   f"{SIMPLIFY_OPERATIONS})")
    share, mine, bounded_out = CLOCK.share(SYMBOLIC_SHARE), None, []
    try:
        with CLOCK.limit(share) as mine:
            for how, attempt in attempts:
                name = next(word for word in ("expand", "simplify", "equals") if word in how)
                CLOCK.trying = f"sympy's {name} of the sides"
                try:
                    with bounded():
                        if attempt():
                            return how
                except WorkSpent:
                    bounded_out.append(name)
                except Exception:  # sympy raises NotImplementedError (and others) where a rewrite is missing
                    continue
    except BudgetSpent as spent:
        if mine is None or spent.limit is not mine:
            raise
        stopped.append(f"{CLOCK.trying} stopped by the safety net at {share:g} CPU s ({SYMBOLIC_SHARE:g} of the "
                       "step's budget)")
    notes += [_work_note(bounded_out)] if bounded_out else []
    notes += [skipped] if skipped else []
    return None


def _work_note(names: list) -> str:
    """What the work bound stopped: "sympy's simplify and equals stopped at their bound of 50,000 new sympy
    objects each"."""
    each = " each" if len(names) > 1 else ""
    return (f"sympy's {' and '.join(names)} stopped at {'their' if each else 'its'} bound of {SYMBOLIC_WORK:,} new "
            f"sympy objects{each}")


def _proved_matrix(a, b) -> str | None:
    try:
        done = (a - b).doit()
    except Exception:  # a derivative of a matrix sympy cannot subtract, or cannot carry out
        return None
    if getattr(done, "is_ZeroMatrix", False) or (isinstance(done, sympy.MatrixBase) and done.is_zero_matrix):
        return "lhs − rhs is the zero matrix"
    return None
