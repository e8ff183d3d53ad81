"""Theories as the pipeline sees them: `attnverify.Theory` objects, the built-in ones and a theorist's file.

The three built-in theories and a theorist's own file have the same form: a concise `attnverify.Theory`
(a built-in's is ``attnverify.theories.<name>.theory.theory``, registered on by the package's modules as a user's
file does, and loaded through its ``section`` module, which imports the rest); `builtin` gives those
objects, `from_file` a user's. A theory crosses a process boundary (a worker process, a Dask worker) as a
reference, its name and its file, and the worker loads the built-in package or the file again
(`by_reference`). A user's file in the long form (no ``Theory``) becomes one through `of_module`: its
``build_section(out_dir, settings, progress) -> Section`` (else its section is its docstring and the derivations
``derivations()`` returns), ``plan_experiments(settings)`` (``settings`` the run's `RunSettings`) and top-level
``@claim``s; a theory with derivations also gets ``<theory>.derivation_steps`` (every recorded step holds,
`attnverify.derivations.steps`). Such a file names its theory with ``THEORY = "name"`` (else the first part of
its claims' names) and may set ``TITLE``; its claims must be named ``name.something``.
"""

from __future__ import annotations

import copyreg
import importlib
import inspect
from pathlib import Path
from types import ModuleType

from .catalogue import THEORIES as BUILTIN_NAMES
from .catalogue import claims_in_module, concise_theories, load_user_module
from ..checks.claim import Claim
from ..theory_form import Theory


def concise(module: ModuleType):
    """The module's concise `attnverify.Theory` (None without one; two in one file are refused)."""
    found = concise_theories(module)
    if len(found) > 1:
        raise ValueError(f"{getattr(module, '__file__', module.__name__)} defines {len(found)} Theory objects "
                         f"({', '.join(t.name for t in found)}): one theory per file")
    return found[0] if found else None


def theory_name(module: ModuleType, where: str | Path) -> str:
    """The name of the theory a user's file defines: its ``Theory``'s, else ``THEORY``, else the one prefix of its
    claims' names; a ValueError naming ``where`` when there is none, when they disagree, or when a claim is named
    under another theory (every such claim listed)."""
    claims = claims_in_module(module)
    form = concise(module)
    name = getattr(module, "THEORY", None)
    if form is not None:
        if name is not None and name != form.name:
            raise ValueError(f"{where} sets THEORY = {name!r} but its Theory is named {form.name!r}")
        name = form.name
    prefixes = sorted({c.name.split(".")[0] for c in claims})
    if name is None:
        if len(prefixes) != 1:
            raise ValueError(f"{where} must set THEORY = \"name\" (its claims are named under {prefixes or 'nothing'})")
        name = prefixes[0]
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"THEORY in {where} must be a lower_snake_case identifier, got {name!r}")
    strangers = [c.name for c in claims if c.name.split(".")[0] != name]
    if strangers:
        raise ValueError(f"the claims of theory {name!r} must be named {name}.…; {where} also defines {strangers}")
    return name


def of_module(module: ModuleType, name: str | None = None, file: str | Path | None = None) -> Theory:
    """The `attnverify.Theory` of ``module``: its concise ``Theory`` (with any other top-level ``@claim`` of
    the module added to it), else one made of the long form's parts (``build_section``, ``plan_experiments``,
    ``derivations()``, top-level claims, ``TITLE`` and the docstring). ``name`` defaults to
    `theory_name`'s, ``file`` to the module's file."""
    form = concise(module)
    where = file or getattr(module, "__file__", None) or module.__name__
    name = name or theory_name(module, where)
    if form is None:
        doc = inspect.cleandoc(module.__doc__ or "")
        first, _, rest = doc.partition("\n")
        title = getattr(module, "TITLE", None)
        builder = getattr(module, "build_section", None)
        form = Theory(name, file=where, title=title or first.strip() or name,
                      introduction="" if builder is not None else (doc if title is not None else rest).strip())
        if builder is not None:
            form.section(builder)
        if callable(getattr(module, "plan_experiments", None)):
            form.experiments(module.plan_experiments)
        if callable(getattr(module, "derivations", None)):
            form.derived(module.derivations)
    for claim in claims_in_module(module):
        if all(claim is not c for c in form.claims):
            form.add(claim)
    return form


def from_file(path: str | Path) -> Theory:
    """The theory of a user's ``FILE.py`` (`of_module` of the file, loaded once per process)."""
    path = Path(path).resolve()
    return of_module(load_user_module(path), file=path)


def builtin() -> list[Theory]:
    """The built-in theories as the `attnverify.Theory` objects their packages register on, in report order
    (each loaded through its section module, which imports the rest): the same objects a user's file defines."""
    return [builtin_theory(name) for name in BUILTIN_NAMES]


def builtin_theory(name: str) -> Theory:
    """The built-in theory ``name`` (one of `BUILTIN_NAMES`), loaded through its package's section module."""
    if name not in BUILTIN_NAMES:
        raise ValueError(f"{name!r} is no built-in theory; they are {', '.join(BUILTIN_NAMES)}")
    return concise(importlib.import_module(f"attnverify.theories.{name}.section"))


def by_reference(name: str, file: str | None) -> Theory:
    """The theory ``name`` found again, in another process too: the built-in one (``file`` None) or that of the
    user's ``file``; what a pickled `attnverify.Theory` becomes where it is unpickled."""
    found = builtin_theory(name) if file is None else from_file(file)
    if found.name != name:
        raise ValueError(f"{file} defines theory {found.name!r}, not {name!r} (the file changed during the run?)")
    return found


def _reference(theory: Theory) -> tuple:
    return by_reference, (theory.name, None if theory.builtin else theory.file)


copyreg.pickle(Theory, _reference)


def builtin_claims() -> list[Claim]:
    """All built-in claims of every theory, each theory's ``derivation_steps`` claim included (the same list each
    `attnverify.Theory.claim_list` gives, so ``check`` runs what the report runs)."""
    return [c for theory in builtin() for c in theory.claim_list()]
