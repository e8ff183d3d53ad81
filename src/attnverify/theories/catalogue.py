"""The built-in claims, theory by theory, and the collection of claims from any module."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import sys
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

from ..base.files import fingerprint
from ..checks.claim import BAD_NAMES, Claim, in_package

#: Theory modules under ``attnverify.checks`` whose claims are built in, in report order.
THEORIES = ("single_location", "attention_paths", "conditional_mean")


def concise_theories(module: ModuleType) -> list:
    """The `attnverify.Theory` objects (the concise form) at the top level of ``module``."""
    from ..theory_form import Theory

    return [value for value in vars(module).values() if isinstance(value, Theory)]


def claims_in_module(module: ModuleType) -> list[Claim]:
    """The claims of every concise `attnverify.Theory` in ``module``, then every other `Claim` at
    its top level, each in definition order."""
    found = [c for theory in concise_theories(module) for c in theory.claims]
    found += [value for value in vars(module).values() if isinstance(value, Claim) and all(value is not f for f in found)]
    names = [c.name for c in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"claim names must be unique within {module.__name__}: {duplicates}")
    return found


def user_frames(error: BaseException) -> list[traceback.FrameSummary]:
    """The frames of ``error``'s traceback in the user's own files: neither attnverify nor a library (innermost
    last)."""
    from ..checks.runner import is_library_frame

    return [f for f in traceback.extract_tb(error.__traceback__)
            if not is_library_frame(f.filename) and not in_package(f.filename)]


def defined_at(function: Any) -> tuple[str, int] | None:
    """The file and first line of ``function`` when it is a user's (outside attnverify), else None."""
    code = getattr(inspect.unwrap(function), "__code__", None) if callable(function) else None
    if code is None or in_package(code.co_filename) or code.co_filename.startswith("<"):
        return None
    return code.co_filename, code.co_firstlineno


class UserFileError(Exception):
    """A mistake in a user's file: the file and line where it shows (a SyntaxError's own line, else the innermost
    frame of the user's code, else the line of ``fallback``, a user's function the tool called), what is wrong,
    and the error itself (``error``, with its traceback)."""

    def __init__(self, path: str | Path, error: Exception, *, fallback: Any = None, message: str | None = None,
                 at: tuple[str, int] | None = None):
        self.path, self.error = Path(path), error
        self.file, self.line = at or _location(error, fallback) or (str(path), None)
        self.message = message or _problem(error)
        super().__init__(self.first_line)

    @property
    def first_line(self) -> str:
        """``FILE:LINE: what is wrong``, the one line a user reads first."""
        return f"{self.file}{'' if self.line is None else f':{self.line}'}: {self.message}"

    def report(self, *, debug: bool = False) -> str:
        """The first line; then the user's frames (its traceback without attnverify's or the libraries' frames,
        ending in the user's code), or, with ``debug``, the full traceback."""
        parts = [self.first_line]
        if debug:
            parts.append("full traceback:\n" + "".join(traceback.format_exception(self.error)).rstrip())
        elif isinstance(self.error, SyntaxError) and self.error.text:
            parts.append("    " + self.error.text.strip())
        else:
            own = user_frames(self.error)
            if own:
                parts.append("in your code (innermost last; --debug shows attnverify's frames too):\n"
                             + "".join(traceback.format_list(own)).rstrip())
        return "\n".join(parts)


def _location(error: BaseException, fallback: Any) -> tuple[str, int] | None:
    if isinstance(error, SyntaxError) and error.filename and not in_package(error.filename):
        return error.filename, error.lineno
    own = user_frames(error)
    if own:
        return own[-1].filename, own[-1].lineno
    return defined_at(fallback) if fallback is not None else None


def _problem(error: BaseException) -> str:
    """What is wrong, in one line: a refusal at attnverify's boundary (a ValueError or TypeError it raised) is its
    message alone; any other error keeps its type (``ModuleNotFoundError: No module named 'x'``)."""
    if isinstance(error, SyntaxError):
        return f"{type(error).__name__}: {error.msg}"
    frames = traceback.extract_tb(error.__traceback__)
    text = " ".join(str(error).split()) or type(error).__name__
    refused = isinstance(error, (ValueError, TypeError)) and frames and in_package(frames[-1].filename)
    return text if refused else f"{type(error).__name__}: {text}"


@contextlib.contextmanager
def user_file_errors(path: str | Path | None, fallback: Any = None):
    """Any error raised inside as a `UserFileError` of the user's file ``path`` (None: a built-in theory,
    whose errors pass unchanged); ``fallback()`` gives the user's function to point at when the traceback has no
    frame of the user's code."""
    if path is None:
        yield
        return
    try:
        yield
    except UserFileError:
        raise
    except Exception as error:
        raise UserFileError(path, error, fallback=fallback() if fallback else None) from error


def user_file(theory) -> str | None:
    """The user's ``.py`` file of ``theory`` (an `attnverify.Theory`), whose claims replay through
    ``attnverify verify FILE``; None for a built-in theory and for one made in a session without a file."""
    file = getattr(theory, "file", "")
    return None if getattr(theory, "builtin", True) or not str(file).endswith(".py") else file


def _check_claim_names(module: ModuleType, path: Path) -> None:
    """Every claim of a user's file is named ``theory.…`` with one theory, once: else a `UserFileError` at
    the line of the claim that breaks the rule."""
    claims = [c for theory in concise_theories(module) for c in theory.claims]
    claims += [v for v in vars(module).values() if isinstance(v, Claim) and all(v is not c for c in claims)]
    seen: set[str] = set()
    for c in claims:
        if c.name in seen:
            raise UserFileError(path, ValueError(c.name), at=_claim_line(c, path),
                                message=f"claim {c.name!r} is defined twice; claim names must be unique")
        seen.add(c.name)
    forms = concise_theories(module)
    name = forms[0].name if forms else getattr(module, "THEORY", None)
    if name is None and claims:
        name = claims[0].theory
        where = "the file's first claim is"
    else:
        where = "the file's Theory is" if forms else "THEORY is"
    for c in claims:
        if isinstance(name, str) and c.theory != name:
            raise UserFileError(path, ValueError(c.name), at=_claim_line(c, path),
                                message=f"claim {c.name!r} is named under theory {c.theory!r}, but {where} {name!r}: "
                                        f"the claims of one file are named {name}.… (or set THEORY = \"…\")")


def _claim_line(claim: Claim, path: Path) -> tuple[str, int] | None:
    return (claim.origin, claim.origin_line) if claim.origin and claim.origin_line else None


_LOADED: dict[Path, tuple[bytes, ModuleType]] = {}


def load_user_module(path: str | Path) -> ModuleType:
    """Import a theorist's own ``FILE.py`` (outside the package) so its claims can be run: once per process, and
    again only when the file's content changed. Its folder goes first on ``sys.path``, as ``python FILE.py`` would
    put it, so the file can import its sibling modules."""
    path = Path(path).resolve()
    if not path.is_file() or path.suffix != ".py":
        raise ValueError(f"FILE must be an existing .py file, got {str(path)!r}")
    content = fingerprint(path.read_bytes())
    loaded = _LOADED.get(path)
    if loaded is not None and loaded[0] == content:
        return loaded[1]
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    module_name = f"attnverify_user_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"cannot import {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    bad_names = BAD_NAMES.set([])
    try:
        spec.loader.exec_module(module)
        bad = BAD_NAMES.get()
        if bad:
            raise UserFileError(path, ValueError(bad[0][0]), at=bad[0][1], message=(
                f"{len(bad)} claim name(s) are not theory.name (a lower_snake_case theory, then identifiers; the "
                "papers' capitals allowed): " + "; ".join(f"{n!r} at {file}, line {line}" for n, (file, line) in bad)))
        _check_claim_names(module, path)
        for theory in concise_theories(module):  # a mistake in an @theory.derivation body is one of the file's
            for derivation in theory.derivations:   # (each recorded once per process: the claims read the same)
                derivation()
    except Exception as error:
        sys.modules.pop(module_name, None)
        if isinstance(error, UserFileError):
            raise
        raise UserFileError(path, error) from error
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    finally:
        BAD_NAMES.reset(bad_names)
    _LOADED[path] = (content, module)
    return module
