"""The symbolic attempts of a comparison: the same expression, ``expand``/``simplify`` of the difference
(bounded by its size) or ``equals`` (None never passes), within :data:`~.budget.SYMBOLIC_SHARE` of the step's
budget; an Order term by ``Order.contains`` of the remainder (docs/derivation_steps.md, step 1 of a comparison)."""

from __future__ import annotations

import sympy

from .outcome import StepCheck, unchecked
from .budget import BudgetSpent, CLOCK, SYMBOLIC_SHARE
from .expressions import shape_of


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


def proved(a, b, cheap: bool = False, stopped: list | None = None) -> str | None:
    """How sympy proves a = b, or None: identical, ``expand``, ``simplify``, ``equals`` (cheapest first; only the
    first two when ``cheap``, for sides that could not be evaluated anyway), together within
    :data:`SYMBOLIC_SHARE` of the step's budget; an attempt stopped there is named in ``stopped``."""
    stopped = [] if stopped is None else stopped
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
    attempts = []
    # expand and simplify can run for minutes on sums (the numeric check takes milliseconds)
    summed = difference.has(sympy.Sum, sympy.Product)
    if operations <= EXPAND_OPERATIONS and not summed:
        attempts.append(("expand(lhs − rhs) = 0", lambda: sympy.expand(difference) == 0))
    if operations <= SIMPLIFY_OPERATIONS and not cheap and not summed:
        attempts += [("simplify(lhs − rhs) = 0", lambda: sympy.simplify(difference) == 0),
                     ("lhs.equals(rhs) is True", lambda: a.equals(b) is True)]
    share, mine = CLOCK.share(SYMBOLIC_SHARE), None
    try:
        with CLOCK.limit(share) as mine:
            for how, attempt in attempts:
                CLOCK.trying = f"sympy's {how.split(' ')[0].split('(')[0]} of the sides"
                try:
                    if attempt():
                        return how
                except Exception:  # sympy raises NotImplementedError (and others) where a rewrite is missing
                    continue
    except BudgetSpent as spent:
        if mine is None or spent.limit is not mine:
            raise
        stopped.append(f"{CLOCK.trying} stopped at {share:g} s ({SYMBOLIC_SHARE:g} of the step's budget)")
    return None


def _proved_matrix(a, b) -> str | None:
    try:
        done = (a - b).doit()
    except Exception:  # a derivative of a matrix sympy cannot subtract, or cannot carry out
        return None
    if getattr(done, "is_ZeroMatrix", False) or (isinstance(done, sympy.MatrixBase) and done.is_zero_matrix):
        return "lhs − rhs is the zero matrix"
    return None
