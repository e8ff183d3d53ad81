"""What a figure of a [`Theory`][attnverify.theory_form.Theory] returns, and a registered figure function."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..base.arguments import Checked


@dataclass(frozen=True)
class TheoryVsSimulation(Checked):
    r"""What a figure function returns: a theory curve (``theory`` at ``theory_x``, default ``x``) against Monte
    Carlo estimates ($\text{mean} \pm \mathrm{SE}$, [`Estimate`][attnverify.numerics.statistics.Estimate]) at ``x``.
    The report draws it (error bars $\pm 2\,\mathrm{SE}$) and puts every number in results.json. Non-finite values
    are refused by name."""

    x: Any
    estimates: list
    theory: Any
    caption: str
    theory_x: Any = None
    xlabel: str = "x"
    ylabel: str = "value"
    theory_label: str = "theory"
    curves: tuple = ()
    """More theory curves beside the first, each ``(label, x, values)`` (e.g. a prediction beyond the saddle point
    at the sampled widths), drawn as markers and kept in results.json."""
    xscale: str = "linear"
    yscale: str = "linear"
    """The axes' scales, ``"linear"`` or ``"log"`` (a rate L^(−1/2) as a straight line on log–log axes; every value on
    a log axis must be positive)."""

    def _check_fields(self) -> None:
        """The curves by the report's rules (finite numbers, matching lengths, positive on a log axis), named by the
        caption."""
        from ..report.figures import axis_scales, curve_data, extra_curves

        label = repr(self.caption[:40])
        axis_scales(label, self.xscale, self.yscale,
                    curve_data(label, self.x, self.theory, self.theory_x, self.estimates),
                    extra_curves(label, self.curves))


@dataclass
class FigureMaker:
    """A registered figure: ``make(rng)``, and for one whose numbers a claim also reads, ``shared(settings)``,
    the same figure from the run's store at the run's seed (the report draws it so; the numbers computed once)."""

    name: str
    make: Callable[[np.random.Generator], TheoryVsSimulation]
    shared: Callable[[Any], TheoryVsSimulation] | None = None
    claims: tuple[str, ...] = ()
    """The claims the figure shows, by name (a Monte Carlo claim's own figure, a sweep's claim)."""

