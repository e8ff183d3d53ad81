"""The report's rendering: each theory's section (derivations, figures, tables) and its claims' results as
``index.html`` (MathML), ``report.md``, ``report.txt`` and LaTeX (one walk, `.printer`), and the notebook displays. It only draws; the run that
builds a report is `attnverify.run.report.build_report`. A theory contributes its section through its
``build_section`` (see `attnverify.report.section` for the contract).
"""

from .section import Figure, Section, Table

__all__ = ["Figure", "Section", "Table"]
