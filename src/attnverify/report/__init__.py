"""The report: each theory's derivations, figures and tables, and its claims' results.

``build_report(DIR)`` writes ``index.html`` (MathML), ``report.md`` (LaTeX) and ``results.json``.
A theory contributes its section through ``attnverify.report.<theory>.build_section`` (see
:mod:`attnverify.report.section` for the contract).
"""

from .builder import build_report
from .section import Figure, Section, Table

__all__ = ["Figure", "Section", "Table", "build_report"]
