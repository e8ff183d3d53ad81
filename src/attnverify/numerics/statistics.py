"""Monte Carlo estimates with standard errors, and weighted line fits with error bars."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..base import arguments
from ..base.arguments import checked
from ..base.backend import to_numpy


#: The fewest draws the variance may rest on (M₂²/M₄ = n/kurtosis, `Estimate.tail_draws`) for its
#: standard error to be trusted as a normal one where rare draws carry it: a spread from fewer rare draws than this
#: has an error bar that is itself uncertain by more than about 1/√(2·25) = 14 % (the relative error of s is
#: √((κ − 1)/(4n))); below it a refutation is withheld and the sizing keeps drawing.
TAIL_DRAWS = 25

#: The sample kurtosis above which the spread is carried by rare draws (a normal sample has 3, exponential and t₅
#: draws 9; n draws of which k are rare have about n/k). Below it a small sample is an ordinary one: its
#: n/kurtosis is small because n is, not because a few draws carry the spread.
RARE_KURTOSIS = 10.0


def confidence_of(z: float) -> float:
    """δ = erfc(z/√2): the two-sided false-alarm probability of a normal z-score (5.7e-7 at z = 5), the level the
    bounds below are taken at so that they stand in for z standard errors."""
    return math.erfc(z / math.sqrt(2.0))


def unseen_probability(samples: int, z: float) -> float:
    """The largest probability of an event not seen in ``samples`` draws, at level δ(z): ln(1/δ)/n (the rule of
    three, 3/n, is δ = 5 %; at z = 5 it is 14.4/n)."""
    return -math.log(confidence_of(z)) / samples


def checked_bounds(name: str, value) -> tuple[float, float] | None:
    """``value`` as the range (low, high) a quantity can take, low < high (±inf for an open end), or None; else a
    ValueError naming ``name``."""
    if value is None:
        return None
    try:
        low, high = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be (low, high), the range the quantity can take, got {value!r}") from None
    if math.isnan(low) or math.isnan(high) or not low < high:
        raise ValueError(f"{name} must be (low, high) with low < high (±inf for an open end), got {value!r}")
    if math.isinf(low) and math.isinf(high):
        raise ValueError(f"{name} = {value!r} states no range (both ends open): give a finite end, or leave {name} "
                         "out")
    return low, high


@dataclass(frozen=True)
class Estimate(arguments.Checked):
    r"""A Monte Carlo estimate: sample ``mean``, its ``standard_error``, and the sample count.

    ``magnitude`` (optional) is the mean of $\lvert x\rvert$ over the draws, the scale of the terms that were summed
    (a comparison's round-off floor is a few ulps of it, not of the mean, which may cancel to 0);
    ``identical`` says that every draw was the same number (the standard error 0 says nothing of an event
    rarer than about $1/n$); ``low`` and ``high`` are the smallest and largest draw;
    ``tail_draws`` $= M_2^2/M_4 = n/\text{kurtosis}$ is how many draws the spread rests on (about the number of rare
    draws where a few carry it: `TAIL_DRAWS`); ``bounds`` is the range the quantity can take, where it is known (then
    an error bar that holds without the central limit theorem,
    [`bernstein`][attnverify.numerics.statistics.Estimate.bernstein], can decide where the spread is not trusted).
    """

    mean: float = checked(arguments.real, named="Estimate.mean")
    standard_error: float = checked(arguments.nonnegative, named="Estimate.standard_error")
    samples: int = checked(arguments.integer, 1, named="Estimate.samples")
    magnitude: float | None = checked(arguments.nonnegative, named="Estimate.magnitude", optional=True, default=None)
    identical: bool = checked(arguments.flag, named="Estimate.identical", default=False)
    low: float | None = checked(arguments.real, named="Estimate.low", optional=True, default=None)
    high: float | None = checked(arguments.real, named="Estimate.high", optional=True, default=None)
    tail_draws: float | None = checked(arguments.nonnegative, named="Estimate.tail_draws", optional=True,
                                       default=None)
    bounds: tuple[float, float] | None = checked(checked_bounds, named="Estimate.bounds", default=None)

    def _check_fields(self) -> None:
        if self.bounds is not None:
            low, high = self.bounds
            for name, value in (("mean", self.mean), ("low", self.low), ("high", self.high)):
                if value is not None and not low <= value <= high:
                    raise ValueError(f"Estimate.{name} = {value!r} lies outside Estimate.bounds {self.bounds}: a "
                                     "draw outside the range the quantity can take")

    @property
    def bounded(self) -> bool:
        """Both ends of ``bounds`` are finite (an empirical-Bernstein bound then holds:
        [`bernstein`][attnverify.numerics.statistics.Estimate.bernstein])."""
        return self.bounds is not None and all(math.isfinite(b) for b in self.bounds)

    @property
    def trusted_spread(self) -> bool:
        r"""The standard error can be trusted as a normal one: the spread is not carried by fewer than
        `TAIL_DRAWS` rare draws ($n/\text{kurtosis} \ge$ `TAIL_DRAWS`, or kurtosis $\le$ `RARE_KURTOSIS`; unknown for
        an estimate made without the fourth moment); False for identical draws, which bound nothing by their
        spread."""
        if self.identical:
            return False
        return (self.tail_draws is None or self.tail_draws >= TAIL_DRAWS
                or self.samples <= RARE_KURTOSIS * self.tail_draws)

    @property
    def decides(self) -> bool:
        """Its error bar can be taken at its word: a trusted spread, or (draws not all identical) a stated finite
        range, whose empirical-Bernstein bound needs no trust in the spread."""
        return self.trusted_spread or (self.bounded and not self.identical)

    def error_bar(self, z: float) -> tuple[float, str]:
        r"""The comparison's statistical half-width at $z$ standard errors' confidence, and its name:
        $z \cdot \mathrm{SE}$, or where the spread is not trusted and a finite range is stated, the empirical-Bernstein
        bound ([`bernstein`][attnverify.numerics.statistics.Estimate.bernstein], always wider than
        $z \cdot \mathrm{SE}$: $\sqrt{2\ln(4/\delta)} > z$)."""
        if self.trusted_spread or not self.decides:
            return z * self.standard_error, f"{z:g}·SE"
        return self.bernstein(z), "empirical-Bernstein bound"

    def unseen_shift(self, z: float) -> float:
        r"""How far an event not seen among identical draws could move the mean: its probability, at most
        $\ln(1/\delta)/n$ (`unseen_probability`), times the distance from the draws' value to the far end of
        ``bounds`` (infinite without a range)."""
        low, high = self.bounds if self.bounds is not None else (-math.inf, math.inf)
        return unseen_probability(self.samples, z) * max(self.mean - low, high - self.mean)

    def bernstein(self, z: float) -> float | None:
        r"""With finite ``bounds`` (range $R$), the empirical-Bernstein half-width at the confidence
        $\delta = \operatorname{erfc}(z/\sqrt{2})$ of $z$ standard errors:
        $\sqrt{2L} \cdot \mathrm{SE} + 7RL/(3(n - 1))$, $L = \ln(4/\delta)$ (Maurer & Pontil 2009, thm. 4, both sides;
        $5.61 \cdot \mathrm{SE} + 36.8 \cdot R/(n - 1)$ at $z = 5$). It holds for any distribution on the range, rare
        events included, where $z \cdot \mathrm{SE}$ needs the spread to be seen
        ([`trusted_spread`][attnverify.numerics.statistics.Estimate.trusted_spread]). None without finite bounds."""
        if not self.bounded:
            return None
        spread = math.log(4.0 / confidence_of(z))
        width = self.bounds[1] - self.bounds[0]
        return math.sqrt(2.0 * spread) * self.standard_error + 7.0 * width * spread / (3.0 * max(self.samples - 1, 1))

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        r"""The interval mean $\pm z \cdot$ ``standard_error``."""
        return self.mean - z * self.standard_error, self.mean + z * self.standard_error

    def drawn(self) -> dict:
        """What the draws were: smallest, largest, how many the spread rests on, the stated range."""
        return {"low": self.low, "high": self.high, "tail_draws": self.tail_draws,
                "bounds": None if self.bounds is None else list(self.bounds)}

    def as_dict(self) -> dict:
        return {"mean": self.mean, "standard_error": self.standard_error, "samples": self.samples,
                "magnitude": self.magnitude, "identical": self.identical, **self.drawn()}


def mean_estimate(values, *, bounds: tuple[float, float] | None = None) -> Estimate:
    r"""Mean of i.i.d. draws with standard error $s/\sqrt{n}$ (numpy or cupy input, float64), in one pass of
    `RunningMoments`: summed in units of the largest $\lvert x\rvert$, so finite draws (1e308 included) give a finite
    mean and spread. ``bounds=(low, high)``: the range every draw lies in, where it is known (checked); an error bar
    that holds without the central limit theorem
    ([`Estimate.bernstein`][attnverify.numerics.statistics.Estimate.bernstein]) then decides where the spread
    cannot."""
    x = arguments.array("values", to_numpy(values), allow_empty=True).ravel()
    n = x.size
    if n < 2:
        raise ValueError(f"values must hold at least 2 draws to estimate an error, got {n}")
    moments = RunningMoments(bounds)
    moments.add(x)
    return moments.estimate()


class RunningMoments:
    """Running mean and central moments M₂, M₃, M₄ over batches (Chan, Golub & LeVeque 1979; Pébay 2008, eq. 3.1,
    pairwise updates), so that a long simulation in chunks gives the same
    [`Estimate`][attnverify.numerics.statistics.Estimate] as one pass; it also keeps the running mean of |x| and the
    smallest and largest draw (for ``magnitude``, ``identical``, ``low``, ``high``) and M₂²/M₄ (``tail_draws``).
    Everything is summed in units of the largest |x| so far, so draws near 1e308 (whose sums and squares overflow
    float64) keep a finite mean and spread. ``bounds`` (the range the quantity can take) is checked on every draw and
    carried into the estimate."""

    def __init__(self, bounds: tuple[float, float] | None = None) -> None:
        self.bounds = checked_bounds("bounds", bounds)
        self.count = 0
        self.mean = 0.0
        self.scale = 0.0  # the largest |x| so far: the moments below are in its units
        self.scaled_m2 = self.scaled_m3 = self.scaled_m4 = 0.0
        self.absolute = 0.0
        self.low = math.inf
        self.high = -math.inf

    @property
    def m2(self) -> float:
        """The sum of squared deviations from the mean (infinite where it overflows float64)."""
        with np.errstate(over="ignore"):
            return float(np.float64(self.scaled_m2) * np.float64(self.scale) ** 2)

    def add(self, values, xp=np) -> None:
        """Fold in a batch of draws (numpy or cupy); NaN or infinity, or a draw outside ``bounds``, is an error."""
        m = int(values.size)
        if m == 0:
            return
        if not bool(xp.all(xp.isfinite(values))):
            raise ValueError("the simulation produced NaN or infinity; check the parameters")
        low, high = float(xp.min(values)), float(xp.max(values))
        if self.bounds is not None and not (self.bounds[0] <= low and high <= self.bounds[1]):
            outside = low if low < self.bounds[0] else high
            raise ValueError(f"a draw {outside!r} lies outside the stated bounds {self.bounds}: the range the "
                             "quantity can take must hold every draw")
        top = max(abs(low), abs(high))
        if top > self.scale:
            if self.scale > 0:
                ratio = self.scale / top
                self.scaled_m2 *= ratio**2
                self.scaled_m3 *= ratio**3
                self.scaled_m4 *= ratio**4
            self.scale = top
        self.low, self.high = min(self.low, low), max(self.high, high)
        total = self.count + m
        if self.scale == 0:  # every draw so far is 0
            self.count = total
            return
        scaled = values / self.scale
        batch_mean = float(xp.mean(scaled))  # in units of scale: no overflow
        deviations = scaled - batch_mean
        squares = deviations * deviations
        b2, b3, b4 = (float(xp.sum(squares)), float(xp.sum(squares * deviations)), float(xp.sum(squares * squares)))
        a = self.count
        delta = batch_mean - self.mean / self.scale
        a2, a3 = self.scaled_m2, self.scaled_m3
        self.scaled_m4 += (b4 + delta**4 * a * m * (a * a - a * m + m * m) / total**3
                           + 6 * delta**2 * (a * a * b2 + m * m * a2) / total**2 + 4 * delta * (a * b3 - m * a3) / total)
        self.scaled_m3 += b3 + delta**3 * a * m * (a - m) / total**2 + 3 * delta * (a * b2 - m * a2) / total
        self.scaled_m2 += b2 + delta**2 * a * m / total
        self.mean = self.scale * (self.mean / self.scale + delta * m / total)
        self.absolute = self.scale * (self.absolute / self.scale
                                      + (float(xp.mean(xp.abs(scaled))) - self.absolute / self.scale) * m / total)
        self.count = total

    def estimate(self) -> Estimate:
        """The mean with standard error √(m2/(n−1)/n), computed in units of the largest |x|."""
        n = self.count
        if n < 2:
            raise ValueError(f"at least 2 draws are needed to estimate an error, got {n}")
        identical = self.low == self.high
        tails = None if identical or self.scaled_m4 <= 0 else self.scaled_m2**2 / self.scaled_m4
        return Estimate(self.mean, self.scale * math.sqrt(self.scaled_m2 / (n - 1) / n), n, magnitude=self.absolute,
                        identical=identical, low=self.low, high=self.high, tail_draws=tails, bounds=self.bounds)


def combine(estimates: list[Estimate]) -> Estimate:
    """Pool independent estimates of the same mean, weighted by their sample counts."""
    if not isinstance(estimates, (list, tuple)) or not all(isinstance(e, Estimate) for e in estimates):
        raise TypeError(f"estimates must be a list of Estimate, got {estimates!r}")
    if not estimates:
        raise ValueError("estimates must not be empty")
    n = np.array([e.samples for e in estimates], dtype=np.float64)
    w = n / n.sum()
    mean = float(np.sum(w * [e.mean for e in estimates]))
    se = float(np.sqrt(np.sum((w * [e.standard_error for e in estimates]) ** 2)))
    magnitudes = [e.magnitude for e in estimates]
    magnitude = None if None in magnitudes else float(np.sum(w * magnitudes))
    identical = all(e.identical and e.mean == estimates[0].mean for e in estimates)
    return Estimate(mean, se, int(n.sum()), magnitude=magnitude, identical=identical)


@dataclass(frozen=True)
class LineFit:
    """y ≈ intercept + slope·x, with standard errors from the weights (or the residuals); ``slope_weights`` c, the
    fit's weight on each point, slope = Σ_i c_i y_i (the slope the same fit gives any other y, and how far an
    error in each y moves it)."""

    slope: float
    intercept: float
    slope_standard_error: float
    intercept_standard_error: float
    points: int
    slope_weights: tuple = field(default=(), repr=False)

    def as_dict(self) -> dict:
        """The fitted figures (without the weights)."""
        return {k: v for k, v in self.__dict__.items() if k != "slope_weights"}


def fit_line(x, y, standard_errors=None) -> LineFit:
    """Weighted least-squares line through (x, y).

    With ``standard_errors`` the weights are 1/σ² and the parameter errors are the usual
    (XᵀWX)⁻¹ diagonal (solved, not inverted), from 2 points on; without, the residual variance is used, which
    needs a third point.
    """
    x = arguments.array("x", x, ndim=1)
    y = arguments.array("y", y, shape=(x.size,))
    fewest = 3 if standard_errors is None else 2
    if x.size < fewest:
        raise ValueError(f"x and y must hold at least {fewest} points for a line with error bars"
                         f"{'' if standard_errors is None else ' (given their standard errors)'}, got {x.size}")
    if np.ptp(x) == 0:
        raise ValueError("x must take at least 2 distinct values to fit a slope")
    design = np.stack([np.ones_like(x), x], axis=1)
    if standard_errors is None:
        weights = np.ones_like(x)
    else:
        sigma = arguments.array("standard_errors", standard_errors, shape=(x.size,))
        if np.any(sigma <= 0):
            raise ValueError("standard_errors must be > 0 (one per point)")
        weights = 1.0 / sigma**2
    normal = design.T @ (weights[:, None] * design)
    rhs = design.T @ (weights * y)
    chol = np.linalg.cholesky(normal)
    params = np.linalg.solve(chol.T, np.linalg.solve(chol, rhs))
    covariance = np.linalg.solve(chol.T, np.linalg.solve(chol, np.eye(2)))
    if standard_errors is None:
        residual = y - design @ params
        covariance = covariance * float(residual @ residual) / (x.size - 2)
    errors = np.sqrt(np.diag(covariance))
    slope_weights = np.linalg.solve(chol.T, np.linalg.solve(chol, design.T * weights))[1]  # of (XᵀWX)⁻¹XᵀW
    return LineFit(float(params[1]), float(params[0]), float(errors[1]), float(errors[0]), int(x.size),
                   tuple(slope_weights.tolist()))
