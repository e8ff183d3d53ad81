"""Attention paths (Tiberi, Mignacco, Irie, Sompolinsky, NeurIPS 2024): the theory as one object, in the form a theorist's own file has.

``theory`` is the :class:`attnverify.Theory` that the package's modules register on, as a user's file does:
the derivations (``@theory.derivation``), the experiments a run computes ahead of the section
(``@theory.experiments``), the claims (``@theory.claim``) and the report section (``@theory.section``). The registry
loads the package's ``section`` module, which imports the rest, as it loads a user's file.
"""

from __future__ import annotations

from ...theory_form import Theory

SOURCE = (
    "Tiberi, Mignacco, Irie, Sompolinsky, NeurIPS 2024 (arXiv 2405.15926); "
    "authors' code LIB_convergent_summation_heads.py"
)

theory = Theory("attention_paths", source=SOURCE)
