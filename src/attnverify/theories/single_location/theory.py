"""Single-location regression (Marion, Berthier, Biau, Boyer, ICLR 2025): the theory as one object, in the form a theorist's own file has.

``theory`` is the :class:`attnverify.Theory` the package's modules register on, as a user's file does (the form
is described in :mod:`attnverify.theories`).
"""

from __future__ import annotations

from ...theory_form import Theory

SOURCE = "Marion, Berthier, Biau, Boyer (ICLR 2025)"

theory = Theory("single_location", source=SOURCE)
