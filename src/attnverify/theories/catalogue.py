"""The built-in claims, theory by theory, and the collection of claims from any module."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from ..base.files import fingerprint
from ..checks.claim import BAD_NAMES, Claim

#: Theory modules under ``attnverify.checks`` whose claims are built in, in report order.
THEORIES = ("single_location", "attention_paths", "conditional_mean")


def concise_theories(module: ModuleType) -> list:
    """The :class:`attnverify.Theory` objects (the concise form) at the top level of ``module``."""
    from ..theory_form import Theory

    return [value for value in vars(module).values() if isinstance(value, Theory)]


def claims_in_module(module: ModuleType) -> list[Claim]:
    """The claims of every concise :class:`attnverify.Theory` in ``module``, then every other :class:`Claim` at
    its top level, each in definition order."""
    found = [c for theory in concise_theories(module) for c in theory.claims]
    found += [value for value in vars(module).values() if isinstance(value, Claim) and all(value is not f for f in found)]
    names = [c.name for c in found]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"claim names must be unique within {module.__name__}: {duplicates}")
    return found


class UserFileError(Exception):
    """Running a user's file raised ``error`` (a mistake in the file, reported with the file's frames first)."""

    def __init__(self, path: Path, error: Exception):
        super().__init__(f"importing {path} failed: {type(error).__name__}: {error}")
        self.path, self.error = path, error

    def report(self) -> str:
        from ..checks.runner import frames_first

        return f"importing {self.path} failed: " + frames_first(self.error, own_code=str(self.path),
                                                                package_is_own=False)


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
            raise ValueError(f"{len(bad)} claim name(s) are not theory.name (a lower_snake_case theory, then "
                             "identifiers; the papers' capitals allowed): "
                             + "; ".join(f"{n!r} at {where}" for n, where in bad))
    except Exception as error:
        sys.modules.pop(module_name, None)
        raise UserFileError(path, error) from error
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    finally:
        BAD_NAMES.reset(bad_names)
    _LOADED[path] = (content, module)
    return module
