"""The work a symbolic attempt may do, counted rather than timed: `bounded` runs an attempt (``simplify``,
``equals``, ``expand``) with every sympy object it builds counted (a counter on ``Basic.__new__``, installed for the
attempt only), and stops it past `SYMBOLIC_WORK` objects, on any machine, busy or idle. sympy's cache is
emptied first and the tables sympy builds on a process's first ``simplify`` are built before any count
(`warm`), so that the count is the attempt's own; the facts sympy derives once for a symbol new to the
process still carry over (about a hundred objects), and sympy iterates over sets in hash order (about 2 %), so
the bound lies far above any proof it must allow (docs/derivation_steps.md, "Bounds")."""

from __future__ import annotations

import contextlib
import threading

import sympy
from sympy.core.basic import Basic
from sympy.core.cache import clear_cache


SYMBOLIC_WORK = 50_000
"""sympy objects one symbolic attempt may build, about 1 to 4 CPU seconds. The largest proof among the built-ins,
``examples/`` and the README builds about 16,600 (the README's radial integral, by ``simplify``); ``simplify`` of an
unevaluated integral of erf products built 3 million in a minute without an answer. The count of one attempt
varies by about 2 % between processes (sympy iterates over sets in hash order), so the bound is set well clear of
any proof it must allow."""


class WorkSpent(BaseException):
    """An attempt built `SYMBOLIC_WORK` sympy objects without an answer (a BaseException: no ``except
    Exception`` of sympy's swallows it)."""


_NEW = Basic.__dict__["__new__"]


@contextlib.contextmanager
def bounded(objects: int = SYMBOLIC_WORK):
    """A block whose sympy work in this thread is limited to ``objects`` new sympy objects (`WorkSpent` past
    them), sympy's cache emptied on entry. The checker runs it in its own single-threaded child process; where
    another block is already counting (another thread, without ``os.fork``), this one runs uncounted, under the
    time safety net alone."""
    count, owner = [0], threading.get_ident()
    make = _NEW.__func__
    if Basic.__dict__["__new__"] is not _NEW:
        yield count
        return

    def counted(cls, *args, **options):
        if threading.get_ident() == owner:
            count[0] += 1
            if count[0] > objects:
                raise WorkSpent
        return make(cls, *args, **options)

    warm()
    clear_cache()
    Basic.__new__ = counted
    try:
        yield count
    finally:
        release()


def release() -> None:
    """sympy's own ``Basic.__new__`` again (the counter of `bounded` taken off; also by the time net's
    alarm, which may end an attempt before its block's own exit runs)."""
    Basic.__new__ = _NEW


_WARM = []


def warm() -> None:
    """Build, once per process, the tables sympy makes on the first ``simplify`` and ``equals`` of a process
    (trigonometric rules, assumption handlers: some thousands of objects), so that no attempt's count includes them
    and the count does not depend on what ran before it."""
    if _WARM:
        return
    _WARM.append(True)
    w = sympy.Symbol("w_warm", positive=True)
    z = sympy.Symbol("z_warm", real=True)
    for expression in (sympy.sin(z) ** 2 + sympy.cos(z) ** 2 + sympy.gamma(w + 1) / sympy.gamma(w) - w - 1,
                       sympy.exp(z) * sympy.exp(-z) + sympy.log(w ** 2) - 2 * sympy.log(w) - 1,
                       sympy.Integral(sympy.cos(z) * sympy.cos(z - w), (z, w - sympy.pi / 2, sympy.pi / 2))
                       - (sympy.sin(w) + (sympy.pi - w) * sympy.cos(w)) / 2):
        try:
            sympy.expand(expression)
            sympy.simplify(expression)
            expression.equals(0)
        except Exception:  # noqa: BLE001  (a warm-up: what it fails on does not matter)
            pass
