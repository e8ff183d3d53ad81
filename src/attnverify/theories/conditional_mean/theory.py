"""Attention as a conditional mean (Zhang, Liu, Cai, Wang, Wang, 2022): the theory as one object, in the form a theorist's own file has.

``theory`` is the :class:`attnverify.Theory` the package's modules register on, as a user's file does (the form
is described in :mod:`attnverify.theories`).
"""

from __future__ import annotations

from ...theory_form import Theory

SOURCE = "Zhang, Liu, Cai, Wang, Wang (2022), arXiv 2212.14852; reconstruction in docs/papers/conditional_mean.md"

theory = Theory("conditional_mean", source=SOURCE)
