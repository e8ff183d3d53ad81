"""Attention paths (Tiberi, Mignacco, Irie, Sompolinsky, NeurIPS 2024): the theory as one object, in the form a
theorist's own file has.

``theory`` is the `attnverify.Theory` the package's modules register on, as a user's file does (the form
is described in `attnverify.theories`).
"""

from __future__ import annotations

from ...theory_form import Theory

SOURCE = (
    "Tiberi, Mignacco, Irie, Sompolinsky, NeurIPS 2024 (arXiv 2405.15926); "
    "authors' code LIB_convergent_summation_heads.py"
)

TITLE = ("Attention paths: the finite-width theory of a Bayesian transformer "
         "(Tiberi, Mignacco, Irie, Sompolinsky, NeurIPS 2024)")

theory = Theory("attention_paths", title=TITLE, source=SOURCE)
