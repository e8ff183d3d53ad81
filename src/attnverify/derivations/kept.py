"""Derivations kept on disk: a new process (a test worker, a cluster's worker, the next command) reads what
sympy derived instead of deriving it again (the population risk: 1.6–3.5 s derived, 0.13 s read).

`kept_derivation` memoises a derivation function in the process, as ``functools.lru_cache`` does, and in
the folder ``cache_directory("derivations", code_version())``, the fingerprint of every source file of
the ``attnverify`` package, sympy's version and Python's, so a change to any of them derives afresh.

Sympy rebuilds an unpickled expression from its arguments, which evaluates what a derivation wrote unevaluated
(``Eq(E_1[k], Σa + μ)`` read back as ``false``), unless it is read under ``evaluate(False)``, which in turn
leaves a ``Mul(1, x)`` in a ``Sum``. So each step is kept with the way of reading that gives it back exactly
(``srepr`` and ``==`` checked when it is written), and with its kind and substitution; a derivation with a step
that neither gives back is not kept on disk. A file that cannot be read is derived again and written anew. Files
are written whole (a temporary file, then a rename), so processes that derive at once never read half a file.
``ATTNVERIFY_KEEP_DERIVATIONS=0`` turns the disk off (every process derives).
"""

from __future__ import annotations

import functools
import pickle
import platform
from pathlib import Path
from typing import Callable

import sympy
from sympy.core.parameters import evaluate

from ..base.files import fingerprint, read_entry, write_entry
from ..base.cache import cache_directory, keeping_derivations
from .derivation import Derivation, Step

PACKAGE = Path(__file__).resolve().parent.parent

KEPT: list[Callable] = []
"""Every function under `kept_derivation` (the tests derive each afresh and compare)."""


@functools.lru_cache(maxsize=None)
def code_version() -> str:
    """SHA-256 of the package's source files (path and bytes), sympy's and Python's versions."""
    files = sorted(PACKAGE.rglob("*.py"))
    return fingerprint(f"sympy {sympy.__version__} python {platform.python_version()}",
                       *(part for path in files for part in (str(path.relative_to(PACKAGE)), path.read_bytes())))


def kept_path(function: Callable, key: str | None = None) -> Path:
    """The file that keeps ``function``'s derivation for this fingerprint (``key``: its name, for a derivation of
    a user's file, which names the file's content)."""
    name = key or f"{function.__module__}.{function.__qualname__}"
    return cache_directory("derivations", code_version()) / f"{name}.entry"


def _loaded(data: bytes, evaluated: bool) -> sympy.Basic:
    with evaluate(evaluated):
        return pickle.loads(data)


def _same(a, b) -> bool:
    return type(a) is type(b) and sympy.srepr(a) == sympy.srepr(b) and a == b


def encoded(derivation: Derivation) -> tuple | None:
    """``derivation`` as plain data, each step's expression pickled with the way of reading it back exactly
    (evaluated or not), then each step's kind and substitution; None if some step comes back from neither."""
    steps, marks = [], []
    for step in derivation.steps:
        data = pickle.dumps(step.expression, protocol=pickle.HIGHEST_PROTOCOL)
        mode = next((m for m in (True, False) if _same(step.expression, _loaded(data, m))), None)
        substitute = pickle.dumps(step.substitute, protocol=pickle.HIGHEST_PROTOCOL)
        if mode is None or not _same(_pairs(step.substitute), _pairs(_loaded(substitute, mode))):
            return None
        steps.append((step.description, step.name, mode, data))
        marks.append((step.kind, substitute))
    return derivation.name, derivation.title, derivation.source, tuple(steps), tuple(marks)


def _pairs(substitute: tuple) -> sympy.Tuple:
    return sympy.Tuple(*(sympy.Tuple(*pair) for pair in substitute))


def decoded(data: tuple) -> Derivation:
    """The derivation that `encoded` wrote."""
    name, title, source, steps, marks = data
    return Derivation(name, title, source, tuple(
        Step(description, _loaded(expression, mode), step_name, kind, _loaded(substitute, mode))
        for (description, step_name, mode, expression), (kind, substitute) in zip(steps, marks)))


def _read(path: Path) -> Derivation | None:
    """The kept derivation, or None (none yet; a damaged or foreign entry is set aside: derived again)."""
    return read_entry(path, path.stem, lambda payload: decoded(pickle.loads(payload)))


def _write(path: Path, derivation: Derivation) -> None:
    data = encoded(derivation) if isinstance(derivation, Derivation) else None
    if data is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only or full disk: the process keeps its derivation in memory only
        return
    write_entry(path, path.stem, pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL))


def kept_derivation(function: Callable[[], Derivation], key: str | None = None, *, name: str | None = None,
                    listed: bool | None = None) -> Callable[[], Derivation]:
    """``function`` (no arguments, returns a [`Derivation`][attnverify.derivations.derivation.Derivation]) derived once
    per code version, kept in the process and on disk. ``key`` names it on disk instead of its module and name: a user's
    derivation gives one that holds its file's content hash, so an edited file derives afresh. ``name`` names the kept
    function (else the function's own); ``listed`` puts it in `KEPT` (by default the package's own, those without a
    key)."""

    @functools.lru_cache(maxsize=None)
    def kept() -> Derivation:
        if not keeping_derivations():
            return function()
        path = kept_path(function, key)
        value = _read(path)
        if value is None:
            value = function()
            _write(path, value)
        return value

    kept.derive = function  # the derivation itself, never read from disk
    functools.update_wrapper(kept, function)
    if name is not None:
        kept.__name__ = kept.__qualname__ = name
    if (key is None) if listed is None else listed:  # the package's own (a user's are tested by the user's verify)
        KEPT.append(kept)
    return kept
