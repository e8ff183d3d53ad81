"""A derivation recorded as the steps sympy took, for the report and for the reader.

Each step is a sentence and a sympy expression (often an ``Eq``); the last step is the result.
Renderers (LaTeX for Markdown, MathML for HTML) live in ``attnverify.report``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy


@dataclass(frozen=True)
class Step:
    """One step: what was done, and the expression it produced."""

    description: str
    expression: sympy.Basic


@dataclass(frozen=True)
class Derivation:
    """A named chain of steps ending in a result; ``source`` cites the paper and equation."""

    name: str
    title: str
    source: str
    steps: tuple[Step, ...] = field(default_factory=tuple)

    @property
    def result(self) -> sympy.Basic:
        if not self.steps:
            raise ValueError(f"derivation {self.name!r} has no steps")
        return self.steps[-1].expression

    def _repr_markdown_(self) -> str:
        """A notebook shows the derivation as the report does (steps with $$ LaTeX $$)."""
        from ..report.render import derivation_markdown

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

    def step(self, description: str, expression: sympy.Basic) -> sympy.Basic:
        self._steps.append(Step(description, expression))
        return expression

    def finish(self) -> Derivation:
        return Derivation(self.name, self.title, self.source, tuple(self._steps))
