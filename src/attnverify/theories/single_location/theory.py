"""Single-location regression (Marion, Berthier, Biau, Boyer, ICLR 2025): the theory as one object, in the form a theorist's own file has.

``theory`` is the :class:`attnverify.Theory` that the package's modules register on, as a user's file does:
the derivations (``@theory.derivation``), the experiments a run computes ahead of the section
(``@theory.experiments``), the claims (``@theory.claim``) and the report section (``@theory.section``). The registry
loads the package's ``section`` module, which imports the rest, as it loads a user's file.
"""

from __future__ import annotations

from ...theory_form import Theory

SOURCE = "Marion, Berthier, Biau, Boyer (ICLR 2025)"

theory = Theory("single_location", source=SOURCE)
