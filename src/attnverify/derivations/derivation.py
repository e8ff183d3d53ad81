"""A derivation recorded as the steps sympy took, for the report and for the reader.

Each step is a sentence and a sympy expression (often an ``Eq``). A step that code uses is exported under
a name (``rec.step(…, name="U_a")``, read back with ``derivation.result("U_a")``), so that adding a display
step never changes what a solver or evaluator computes. Renderers (LaTeX for Markdown, MathML for HTML)
live in ``attnverify.report``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy


@dataclass(frozen=True)
class Step:
    """One step: what was done, and the expression it produced."""

    description: str
    expression: sympy.Basic
    name: str | None = None  # the name the step's expression is exported under, if code uses it


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

    def _repr_markdown_(self) -> str:
        """A notebook shows the derivation as the report does (steps with $$ LaTeX $$)."""
        from ..report.markdown import derivation_markdown

        return derivation_markdown(self)

    def _repr_html_(self) -> str:
        """The report's HTML of the derivation (MathML)."""
        from ..report.render import derivation_html

        return derivation_html(self)


class DerivationRecorder:
    """Collects steps while a derivation runs: ``rec.step("expand the square", expr)``."""

    def __init__(self, name: str, title: str, source: str):
        self.name, self.title, self.source = name, title, source
        self._steps: list[Step] = []

    def step(self, description: str, expression: sympy.Basic, *, name: str | None = None) -> sympy.Basic:
        """Record a step; ``name`` exports its expression as a result (unique within the derivation)."""
        if name is not None:
            if not isinstance(name, str) or not name:
                raise ValueError(f"name must be a non-empty string, got {name!r}")
            if any(s.name == name for s in self._steps):
                raise ValueError(f"derivation {self.name!r} already has a result named {name!r}")
        self._steps.append(Step(description, expression, name))
        return expression

    def finish(self) -> Derivation:
        return Derivation(self.name, self.title, self.source, tuple(self._steps))
