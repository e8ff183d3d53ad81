"""Theories as the pipeline sees them: a name, and where its report section and its claims live.

The three built-in theories and a theorist's own file have the same form: a concise :class:`attnverify.Theory`
(a built-in's is ``attnverify.theories.<name>.theory.theory``, registered on by the package's modules as a user's
file does, and loaded through its ``section`` module, which imports the rest); :func:`builtin` gives those
objects. The run hands a theory to worker processes as :class:`TheoryModules`: its name and the importable module
(``attnverify.theories.single_location.section``) or ``.py`` file of its section and claims, plain strings that a
worker loads again; each method defers to the module's ``Theory`` where it has one. A user's file in the long form
(no ``Theory``) provides ``build_section(out_dir, *, profile, backend, seed, progress, store) -> Section`` (else its
section is its docstring and the derivations ``derivations()`` returns), ``plan_experiments(*, profile, seed,
backend)`` (experiments the run computes as tasks ahead of the section) and top-level ``@claim``s; a theory with
derivations also gets ``<theory>.derivation_steps`` (every recorded step holds, :mod:`attnverify.derivations.steps`).
Such a file names its theory with ``THEORY = "name"`` (else the first part of its claims' names) and may set
``TITLE``; its claims must be named ``name.something``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Callable

from .catalogue import THEORIES as BUILTIN_NAMES
from .catalogue import claims_in_module, concise_theories, load_user_module
from ..checks.claim import Claim
from ..checks.derivation_steps import claim_name, derivation_steps_claim


def concise(module: ModuleType):
    """The module's concise :class:`attnverify.Theory` (None without one; two in one file are refused)."""
    found = concise_theories(module)
    if len(found) > 1:
        raise ValueError(f"{getattr(module, '__file__', module.__name__)} defines {len(found)} Theory objects "
                         f"({', '.join(t.name for t in found)}): one theory per file")
    return found[0] if found else None


def load(source: str) -> ModuleType:
    """The module ``source`` names: a ``.py`` file (loaded once per process) or an importable module."""
    if source.endswith(".py"):
        return load_user_module(source)
    return importlib.import_module(source)


@dataclass(frozen=True)
class TheoryModules:
    """A theory as the run hands it to worker processes: its ``name`` and the module or file of its report
    ``section`` and of its ``claims`` (plain strings, loaded again where the theory is used; a built-in's are its
    package's section module, whose :class:`attnverify.Theory` every method below defers to)."""

    name: str
    section: str
    claims: str

    def derivation_list(self) -> list:
        """The theory's derivations (``derivations()`` of its section's module or file; none without one)."""
        module = load(self.section)
        form = concise(module)
        if form is not None:
            return form.derivation_list()
        return list(module.derivations()) if callable(getattr(module, "derivations", None)) else []

    def planned_experiments(self, *, profile: str, seed: int, backend: str) -> list:
        """The experiments the run computes ahead of the section (``plan_experiments``; none without one)."""
        from ..execution.store import Planned

        module = load(self.section)
        form = concise(module)
        plan = form.plan_experiments if form is not None and form.plans_experiments else \
            getattr(module, "plan_experiments", None)
        if plan is None:
            return []
        plans = list(plan(profile=profile, seed=seed, backend=backend))
        for item in plans:
            if not isinstance(item, Planned):
                raise TypeError(f"plan_experiments of {self.name} must return planned experiments "
                                f"(attnverify.execution.store.planned), got {item!r}")
        labels = [item.label for item in plans]
        if len(set(labels)) != len(labels):
            raise ValueError(f"plan_experiments of {self.name} plans an experiment twice: {labels}")
        return plans

    def claim_list(self) -> list[Claim]:
        """The theory's claims, in definition order, then ``<theory>.derivation_steps`` (every recorded derivation
        step holds, :mod:`attnverify.checks.derivation_steps`) when the theory has derivations."""
        claims = claims_in_module(load(self.claims))
        if self.has_derivations() and claim_name(self.name) not in {c.name for c in claims}:
            claims.append(derivation_steps_claim(self.name, self.derivation_list,
                                                 origin=self.claims if self.claims.endswith(".py") else ""))
        return claims

    def has_derivations(self) -> bool:
        """Whether the section's module or file defines derivations; nothing is derived."""
        module = load(self.section)
        form = concise(module)
        return bool(form.derivations) if form is not None else callable(getattr(module, "derivations", None))

    def claim(self, name: str) -> Claim:
        (found,) = [c for c in self.claim_list() if c.name == name] or [None]
        if found is None:
            raise KeyError(f"theory {self.name!r} has no claim {name!r}")
        return found

    def section_builder(self) -> Callable:
        """``build_section`` of the section module, or a builder of the default section of a user's file."""
        module = load(self.section)
        form = concise(module)
        if form is not None:
            return form.build_section
        builder = getattr(module, "build_section", None)
        if builder is not None:
            return builder
        return lambda out_dir, **kwargs: default_section(self.name, module, self.derivation_list())


BUILTIN = tuple(TheoryModules(name, f"attnverify.theories.{name}.section", f"attnverify.theories.{name}.section")
                for name in BUILTIN_NAMES)  # (module names: nothing is imported until the theory is used)
"""The three theories of the papers, in report order, each the ``theory`` of its package
(``attnverify/theories/<name>/theory.py``), in the concise form of a user's file."""


def default_section(name: str, module: ModuleType, derivations: list):
    """The section of a user's file that has no ``build_section``: its title, docstring and ``derivations``."""
    from ..report.section import Section

    doc = (module.__doc__ or "").strip()
    title = getattr(module, "TITLE", None)
    if title is None:  # the docstring's first line is the title, the rest the introduction
        first, _, doc = doc.partition("\n")
        title = first.strip() or name
    return Section(theory=name, title=title, introduction=doc.strip(), derivations=list(derivations))


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


def from_file(path: str | Path) -> TheoryModules:
    """The theory of a user's ``FILE.py``: its claims, and its section (``build_section`` if it defines one)."""
    path = Path(path).resolve()
    return TheoryModules(theory_name(load_user_module(path), path), str(path), str(path))


def builtin() -> list:
    """The built-in theories as the :class:`attnverify.Theory` objects their packages register on, in report order
    (each loaded through its section module, which imports the rest): the same objects a user's file defines."""
    return [concise(load(theory.section)) for theory in BUILTIN]


def builtin_claims() -> list[Claim]:
    """All built-in claims of every theory, each theory's ``derivation_steps`` claim included (the same list each
    :meth:`attnverify.Theory.claim_list` gives, so ``check`` runs what the report runs)."""
    return [c for theory in builtin() for c in theory.claim_list()]
