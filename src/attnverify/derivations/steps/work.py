"""The work a symbolic attempt may do, counted rather than timed: :func:`bounded` runs an attempt (``simplify``,
``equals``, ``expand``) with every sympy object it builds counted (a counter on ``Basic.__new__``, installed for the
attempt only), and stops it past :data:`SYMBOLIC_WORK` objects. sympy's cache is emptied first, so that the count is
the attempt's own and not what earlier work left cached: the same attempt on the same sides stops, or finishes,
on any machine, busy or idle (docs/derivation_steps.md, "Bounds")."""

from __future__ import annotations

import contextlib

from sympy.core.basic import Basic
from sympy.core.cache import clear_cache


SYMBOLIC_WORK = 50_000
"""sympy objects one symbolic attempt may build, about 1 to 4 CPU seconds. The largest proof among the built-ins,
``examples/`` and the README builds about 16,600 (the README's radial integral, by ``simplify``); ``simplify`` of an
unevaluated integral of erf products built 3 million in a minute without an answer. The count of one attempt
varies by about 2 % between processes (sympy iterates over sets in hash order), so the bound is set well clear of
any proof it must allow."""


class WorkSpent(BaseException):
    """An attempt built :data:`SYMBOLIC_WORK` sympy objects without an answer (a BaseException: no ``except
    Exception`` of sympy's swallows it)."""


_NEW = Basic.__dict__["__new__"]


@contextlib.contextmanager
def bounded(objects: int = SYMBOLIC_WORK):
    """A block whose sympy work is limited to ``objects`` new sympy objects (:class:`WorkSpent` past them), sympy's
    cache emptied on entry. Not reentrant: the innermost block counts."""
    count = [0]
    make = _NEW.__func__

    def counted(cls, *args, **options):
        count[0] += 1
        if count[0] > objects:
            raise WorkSpent
        return make(cls, *args, **options)

    clear_cache()
    Basic.__new__ = counted
    try:
        yield count
    finally:
        Basic.__new__ = _NEW
