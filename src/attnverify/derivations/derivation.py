"""A derivation recorded as the steps sympy took, for the report and for the reader.

Each step is a sentence and a sympy expression (often an ``Eq``). A step that code uses is exported under
a name (``rec.step(…, name="U_a")``, read back with ``derivation.result("U_a")``), so that adding a display
step never changes what a solver or evaluator computes. Renderers (LaTeX for Markdown, MathML for HTML)
live in ``attnverify.report``.

Every step is checked (`.steps`: symbolically, else numerically at random admissible points), unless its
author marks it ``kind="definition"`` or ``kind="assumption"``; ``kind="condition"`` states an equation to solve,
which the checker holds against the later steps that solve it. ``substitute={κ: 1, …}`` says that the step holds
at those values (the earlier form of its left side taken there: a specialisation or a change of variables).
``derivation.checks()`` gives each step's outcome.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy


KINDS = ("derived", "definition", "assumption", "condition")
"""A step is derived (and checked), marked by its author as a definition or an assumption, or a condition (an
equation to solve: Eq(f, g) means f − g = 0; checked through the later steps that solve it)."""


@dataclass(frozen=True)
class Step:
    """One step: what was done, the expression it produced, its kind (`KINDS`) and, for a step that takes
    an earlier form at some values, those values as (symbol, value) pairs."""

    description: str
    expression: sympy.Basic
    name: str | None = None  # the name the step's expression is exported under, if code uses it
    kind: str = "derived"
    substitute: tuple[tuple[sympy.Basic, sympy.Basic], ...] = ()


@dataclass(frozen=True)
class Derivation:
    """A named chain of steps ending in a result; ``source`` cites the paper and equation."""

    name: str
    title: str
    source: str
    steps: tuple[Step, ...] = field(default_factory=tuple)

    @property
    def results(self) -> dict[str, sympy.Basic]:
        """The named results: name → expression."""
        return {s.name: s.expression for s in self.steps if s.name is not None}

    def result(self, name: str) -> sympy.Basic:
        """The expression exported under ``name``."""
        results = self.results
        if name not in results:
            raise KeyError(f"derivation {self.name!r} has no result named {name!r}; its results are "
                           f"{sorted(results) or 'none'}")
        return results[name]

    def checks(self) -> tuple:
        """Each step's outcome (`StepCheck`): proved symbolically, agreeing at random points,
        failing at a shown point, a definition, an assumption, or unchecked (with why)."""
        from .steps import check_derivation

        return check_derivation(self)


class DerivationRecorder:
    """Collects steps while a derivation runs: ``rec.step("expand the square", expr)``."""

    def __init__(self, name: str, title: str, source: str):
        self.name, self.title, self.source = name, title, source
        self._steps: list[Step] = []

    def step(self, description: str, expression: sympy.Basic, *, name: str | None = None, kind: str = "derived",
             substitute: dict | None = None, **unknown) -> sympy.Basic:
        """Record a step; ``name`` exports its expression as a result (unique within the derivation). ``kind``:
        "derived" (checked), "definition" or "assumption" (shown as such), "condition" (an equation to solve, held
        against the later steps that solve it). ``substitute``: the values at which the step holds (the earlier
        form of its left side taken there: ``{κ: 1, ρ: 0}``). Any other keyword is refused, naming the one it
        misspells."""
        if unknown:
            from ..base.arguments import closest

            word = next(iter(unknown))
            close = closest(word, ("name", "kind", "substitute"), cutoff=0.6)
            raise TypeError(f"step takes name=, kind= and substitute=, not {word}="
                            + (f": did you mean {close}=?" if close else ""))
        if name is not None:
            if not isinstance(name, str) or not name:
                raise ValueError(f"name must be a non-empty string, got {name!r}")
            if any(s.name == name for s in self._steps):
                raise ValueError(f"derivation {self.name!r} already has a result named {name!r}")
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if not isinstance(expression, sympy.Basic):
            raise TypeError(f"expression must be a sympy object (an Eq, an expression, a Tuple), got "
                            f"{type(expression).__name__}")
        pairs = ()
        if substitute is not None:
            if not isinstance(substitute, dict) or not substitute:
                raise ValueError(f"substitute must be a non-empty dict of symbol → value, got {substitute!r}")
            pairs = tuple((sympy.sympify(k), sympy.sympify(v)) for k, v in substitute.items())
        self._steps.append(Step(description, expression, name, kind, pairs))
        return expression

    def finish(self) -> Derivation:
        return Derivation(self.name, self.title, self.source, tuple(self._steps))
