"""Monte Carlo sized for what it must catch: draw in batches until z·SE + bias ≤ resolution, or a budget is spent.

A comparison of a theory value θ with a Monte Carlo mean can only see a discrepancy |θ − E x| larger than
its tolerance z·SE + bias. [`sized_mean`][attnverify.numerics.sized.sized_mean] turns that around: the caller states the
smallest discrepancy the comparison must resolve (``resolution``, absolute, and/or ``relative_resolution`` ×
|reference|), and the sampler draws until the tolerance fits under it. Where the budget runs out first, the result says
so (``reached`` False) and carries the draws it would take at the measured spread, so that the verdict can be
*inconclusive* with what would decide it instead of a guess.

The stopping rule is a batched form of Chow & Robbins (1965, "On the asymptotic theory of fixed-width
sequential confidence intervals for the mean", Ann. Math. Statist. 36): stop at the first batch boundary
where z·s_n/√n + bias ≤ resolution.
"""

from __future__ import annotations

import copy
import math
import time
import tracemalloc
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..base import arguments
from ..base.arguments import checked
from ..base.backend import array_module, to_numpy
from .statistics import TAIL_DRAWS, Estimate, RunningMoments, checked_bounds, confidence_of

#: Draws in the first batch: the smallest sample whose spread decides the next batch (an event rarer
#: than about 1/first_batch is invisible to that first variance estimate).
FIRST_BATCH = 1_000

#: Draws handed to ``draw`` in one call at most (memory stays bounded whatever the batch).
CHUNK = 65_536

#: A batch of at least this many draws is told to ``progress`` before it starts, and its draws done at every
#: twentieth of it, at least this many apart (a long example shows what it is doing).
PROGRESS_DRAWS = 10**7

#: A call of the draw that ends this many seconds after the batch's last line tells ``progress`` the draws done (a
#: display only: what is drawn never depends on the clock), so that a run of costly draws is not silent.
PROGRESS_SECONDS = 10.0

#: Each further batch at least adds this fraction of the draws so far (bounds the number of batches) ...
GROWTH = 1.25

#: ... and aims this factor past the size predicted from the measured variance (the variance estimate
#: itself is noisy; 10 % more draws is 5 % more standard error in hand).
MARGIN = 1.1


@dataclass(frozen=True)
class SizedEstimate(Estimate):
    """An [`Estimate`][attnverify.numerics.statistics.Estimate] drawn until its error bar + ``bias_budget`` ≤
    ``resolution`` on a spread it can trust, or ``budget`` draws.

    ``resolution``: the smallest |theory − truth| the comparison must resolve (absolute); ``reached``: the
    tolerance fits under it and the spread is trusted
    ([`Estimate.trusted_spread`][attnverify.numerics.statistics.Estimate.trusted_spread]: the draws are not all
    identical, and the spread rests on at least `TAIL_DRAWS` draws, or a finite range is stated); ``batches``: the batch
    sizes drawn, in order (their sum is ``samples``); ``draws_needed``: the draws that would reach the resolution at the
    measured spread (≤ ``samples`` when reached). ``achieved`` is the tolerance: z·SE + bias_budget, or where the spread
    is not trusted and a finite range is stated, the empirical-Bernstein bound.
    """

    resolution: float = checked(arguments.positive, named="SizedEstimate.resolution", default=math.inf)
    z: float = checked(arguments.nonnegative, named="SizedEstimate.z", default=5.0)
    bias_budget: float = checked(arguments.nonnegative, named="SizedEstimate.bias_budget", default=0.0)
    reached: bool = checked(arguments.flag, named="SizedEstimate.reached", default=False)
    budget: int = checked(arguments.integer, 2, named="SizedEstimate.budget", default=2)
    batches: tuple[int, ...] = checked(arguments.integers, 1, named="SizedEstimate.batches", default=())
    draws_needed: int = checked(arguments.integer, 0, named="SizedEstimate.draws_needed", default=0)

    def _check_fields(self) -> None:
        super()._check_fields()
        if sum(self.batches) != self.samples:
            raise ValueError(f"SizedEstimate.batches must add up to samples = {self.samples}, got {self.batches}")
        if self.reached != (self.achieved <= self.resolution and self.decides):
            raise ValueError(f"SizedEstimate.reached = {self.reached} disagrees with the error bar + bias_budget = "
                             f"{self.achieved!r} against resolution {self.resolution!r} (spread trusted: "
                             f"{self.trusted_spread})")

    @property
    def achieved(self) -> float:
        """The resolution achieved: [`Estimate.error_bar`][attnverify.numerics.statistics.Estimate.error_bar] +
        bias_budget (z·SE, or the empirical-Bernstein bound of a stated range where the spread is not trusted)."""
        return _achieved(self, self.z, self.bias_budget)

    def sizing(self) -> dict:
        """How the sample was sized, for a claim's figures: resolution, achieved, reached, budget, batches,
        draws_needed."""
        return {"resolution": self.resolution, "achieved": self.achieved, "reached": self.reached,
                "budget": self.budget, "batches": list(self.batches), "draws_needed": self.draws_needed}

    def as_dict(self) -> dict:
        return {**super().as_dict(), "z": self.z, "bias_budget": self.bias_budget, **self.sizing()}


def draws_needed(samples: int, standard_error: float, resolution: float, *, z: float = 5.0,
                 bias_budget: float = 0.0, width: float | None = None) -> int:
    """⌈n·(z·SE/(resolution − bias))²⌉: the draws at which z·SE + bias = resolution, at the measured spread
    (SE ∝ 1/√n); 0 when SE = 0. With ``width`` (the range R of a bounded quantity), the n at which the
    empirical-Bernstein half-width a/√n + b/n (a = √(2L)·SE·√n, b = 7RL/3,
    [`Estimate.bernstein`][attnverify.numerics.statistics.Estimate.bernstein]) meets it."""
    room = resolution - bias_budget
    if not room > 0:
        raise ValueError(f"resolution must exceed bias_budget = {bias_budget!r}: z·SE + bias_budget ≤ resolution "
                         f"can never be met, got resolution {resolution!r}")
    if width is None:
        return int(math.ceil(samples * (z * standard_error / room) ** 2))
    spread = math.log(4.0 / confidence_of(z))
    a, b = math.sqrt(2.0 * spread) * standard_error * math.sqrt(samples), 7.0 * width * spread / 3.0
    root = (-a + math.sqrt(a * a + 4.0 * b * room)) / (2.0 * b)  # 1/√n solving a·x + b·x² = room
    return int(math.ceil(1.0 / root**2)) + 1


def _achieved(e: Estimate, z: float, bias: float) -> float:
    return e.error_bar(z)[0] + bias


def _reached(e: Estimate, z: float, resolution: float, bias: float) -> bool:
    """The error bar fits under the resolution, and it can be taken at its word
    ([`Estimate.decides`][attnverify.numerics.statistics.Estimate.decides])."""
    return e.decides and _achieved(e, z, bias) <= resolution


def _draws_needed(e: Estimate, total: int, resolution: float, bias: float, z: float, width, budget: int) -> int:
    """The draws for z·SE to fit on a trusted spread, or for the empirical-Bernstein bound to fit (the fewer)."""
    normal = max(draws_needed(total, e.standard_error, resolution, z=z, bias_budget=bias), _draws_to_trust(e, budget))
    if width is None or e.identical:
        return normal
    return min(normal, draws_needed(total, e.standard_error, resolution, z=z, bias_budget=bias, width=width))


def _draws_to_trust(estimate: Estimate, budget: int) -> int:
    """Draws for a spread that can be trusted: identical draws say nothing (draw on, four times as many each batch,
    to the budget); a spread resting on r < TAIL_DRAWS draws grows as n·TAIL_DRAWS/r."""
    if estimate.identical:
        return min(budget, 4 * estimate.samples)
    if estimate.trusted_spread:
        return 0
    return int(math.ceil(estimate.samples * TAIL_DRAWS / max(estimate.tail_draws, 1e-300)))


def _numbers(name: str, value: Any, *, nonnegative: bool = True) -> np.ndarray:
    """A number (shape ()) or one number per mean (shape (k,)), finite, as a float array."""
    low = 0.0 if nonnegative else -math.inf
    if arguments._is_number(value):
        return np.asarray(arguments.real(name, value, low=low))
    values = arguments.array(name, value, ndim=1)
    if nonnegative and np.any(values < 0):
        raise ValueError(f"{name} must be ≥ 0 (a number, or one per mean), got {values.tolist()}")
    return values


def _checked_draws(values: Any, n: int, columns: int | None, who: str = "draw") -> tuple[Any, Any]:
    """The draw's output as a float array (n,) or (n, k) of its own backend; refused otherwise, naming the function
    ``who`` that drew it."""
    if getattr(values, "dtype", None) is None:
        try:
            values = np.asarray(values)
        except (TypeError, ValueError):  # ragged nesting
            values = np.asarray(None)
    xp = array_module(values)
    if getattr(values.dtype, "kind", "O") not in "biuf":
        raise TypeError(f"{who}(rng, {n}) must return an array of {n} real draws, got {type(values).__name__} "
                        f"of dtype {values.dtype}")
    values = values.astype(xp.float64)
    shapes = f"({n},) or ({n}, k)" if columns is None else (f"({n},)" if columns == 0 else f"({n}, {columns})")
    if values.ndim not in (1, 2) or values.shape[0] != n or (columns is not None and (values.ndim == 1) != (columns == 0)) \
            or (columns and values.shape[1] != columns) or (values.ndim == 2 and values.shape[1] == 0):
        raise ValueError(f"{who}(rng, {n}) must return shape {shapes} (the same in every call), "
                         f"got {tuple(values.shape)}")
    finite = xp.isfinite(values)
    if not bool(xp.all(finite)):
        where = tuple(int(i) for i in np.argwhere(~to_numpy(finite))[0])
        raise ValueError(f"{who}(rng, {n}) returned {float(values[where])} at index {where}: every draw must be "
                         "finite (check the simulation's parameters)")
    return values, xp


def _memory_model(draw: Callable[[Any, int], Any], rng: Any) -> tuple[float, float] | None:
    """(bytes a call, bytes a draw) that ``draw(rng, n)`` holds at its peak, from calls of 1 and 2 draws on copies of
    ``rng`` (its own stream untouched): tracemalloc's peak over each call (numpy's arrays included; a device's memory
    is not seen) above what the call keeps for good (an import, a cache), plus the memory its output holds (a view's
    base). Every call is then refused before it runs, naming ``chunk``, where the memory cannot hold it, instead of
    failing inside the draw. None (no refusal) where ``rng`` cannot be copied or a call of 1 or 2 draws fails (the
    real calls say why). Where something else is tracing already, its trace is kept and only its peak is reset."""
    try:
        copies = [copy.deepcopy(rng) for _ in range(2)]
    except Exception:
        return None
    tracing = tracemalloc.is_tracing()
    held = []
    try:
        if not tracing:
            tracemalloc.start()
        for copied, n in zip(copies, (1, 2)):
            start = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            output = draw(copied, n)
            kept, peak = tracemalloc.get_traced_memory()
            owner = output  # a view's memory is its base's, kept as long as the output is
            while isinstance(getattr(owner, "base", None), np.ndarray):
                owner = owner.base
            held.append(max(peak - max(kept, start), 0) + (owner.nbytes if isinstance(owner, np.ndarray) else 0))
            del output, owner
    except Exception:
        return None
    finally:
        if not tracing:
            tracemalloc.stop()
    per_draw = max(held[1] - held[0], 0)
    return max(held[0] - per_draw, 0), per_draw


def refuse_endless_budget(budget: int, name: str = "budget") -> None:
    """Refuse a ``budget`` of draws that no run spends: more than ``arguments.MOST_NUMBERS_DRAWN`` draws (each one
    number or more)."""
    arguments.at_most_work(name, budget, arguments.MOST_NUMBERS_DRAWN, "draws (one number or more each)")


def sized_mean(
    draw: Callable[[Any, int], Any],
    rng: Any,
    *,
    resolution: float | Any = None,
    relative_resolution: float | None = None,
    reference: float | Any = None,
    z: float = 5.0,
    bias_budget: float | Any = 0.0,
    first_batch: int = FIRST_BATCH,
    budget: int = 1_000_000,
    chunk: int = CHUNK,
    bounds: tuple[float, float] | None = None,
    progress: Callable[[str], None] | None = None,
) -> SizedEstimate | tuple[SizedEstimate, ...]:
    r"""The Monte Carlo mean of ``draw``, drawn in batches until $z \cdot \mathrm{SE}$ + ``bias_budget`` $\le$
    resolution or ``budget`` draws.

    ``draw(rng, n)`` returns $n$ i.i.d. draws, shape (n,) (one mean: a `SizedEstimate`) or (n, k)
    ($k$ means of the same draws: a tuple of $k$, sized until every one fits), numpy or cupy. The resolution
    to reach is ``resolution + relative_resolution·|reference|`` (either part may be left out; both may be
    one number per mean), and must exceed ``bias_budget``. ``bounds=(low, high)``: the range every draw lies in,
    where it is known (every draw is checked against it); where the spread is not trusted the error bar is then
    an empirical-Bernstein one, valid without the central limit theorem
    ([`Estimate.error_bar`][attnverify.numerics.statistics.Estimate.error_bar]). ``progress`` (a function of one
    line of text) is told each batch of at least `PROGRESS_DRAWS` draws, and its draws done at every twentieth of it
    (at least `PROGRESS_DRAWS` apart).

    What was not seen is not taken as absent: while every draw is identical, or (without finite bounds) the spread
    rests on fewer than `TAIL_DRAWS` draws ($n/\text{kurtosis}$: a few rare draws carry it), the sample is not
    sized yet and the drawing goes on, to the budget if need be. A budget that no run spends (more than
    ``arguments.MOST_NUMBERS_DRAWN``, 10¹³ draws) is refused before the first draw.

    Batches: the first has ``first_batch`` draws; after each, with $n$ draws so far and $n^*$ the draws needed
    at the measured spread (`draws_needed`, the largest over the means), the total goes to
    $\min(\text{budget}, \max(\lceil 1.25 \cdot n\rceil, \lceil 1.1 \cdot n^*\rceil))$. Each batch is drawn in calls
    of at most ``chunk`` draws and folded into the moments exactly (`RunningMoments`, Chan's pairwise update), so the
    estimate is the one-pass mean and SE of all the draws, and the same ``rng`` state replays the same batches and the
    same estimate bit for bit. The peak host memory of a call is measured on copies of ``rng`` (`_memory_model`): a
    call that needs more memory than is available is refused before it runs, naming ``chunk``. A batch too small for
    its draws to be told is told every `PROGRESS_SECONDS` that its calls take (a display only).

    Effect of the stopping rule on the error bar: the rule looks at the variance, never at the mean. For
    Gaussian draws $\bar{x}$ and $s^2$ are independent, so stopping leaves the mean unbiased and its error bar exact.
    Otherwise they are correlated through the third moment ($\operatorname{Cov}(\bar{x}, s^2) = \mu_3/n$): a
    right-skewed draw that stops early stops on a small $s^2$, hence on a small $\bar{x}$, a shift of order
    $\gamma_1/\sqrt{n}$ standard errors ($\gamma_1$ the skewness), which vanishes as the resolution shrinks (Chow &
    Robbins 1965). Measured over 20,000 sized runs each (first batch 1,000, about 5,700 draws at the stop), the mean
    of $(\bar{x} - \mu)/\mathrm{SE}$ was $-0.024 \pm 0.007$ for exponential draws ($\gamma_1 = 2$) against $-0.014$ at
    a fixed $n$, and $-0.084$ against $-0.030$ for lognormal draws ($\gamma_1 = 6.2$); the fraction beyond 3 SE was
    0.26 % and 0.42 % (normal: 0.27 %), none beyond 5 SE.
    The stopping rule thus moves the mean by a few hundredths of an SE: negligible against $z = 5$.
    """
    arguments.function("draw", draw, "a function draw(rng, n) returning n i.i.d. draws")
    arguments.function("progress", progress, "a function of one line of text", optional=True)
    who = getattr(draw, "__name__", "draw")  # the function its output's refusals name (a lambda: "draw")
    who = who if who.isidentifier() else "draw"
    rng = arguments.generator(rng, any_backend=True)  # only handed on to draw(rng, n)
    z = arguments.real("z", z, low=0.0, open_low=True)
    budget = arguments.integer("budget", budget, 2)
    first_batch = min(arguments.integer("first_batch", first_batch, 2), budget)
    chunk = arguments.integer("chunk", chunk, 1)
    # a call of draw(rng, n) holds at least n float64 draws, and the folding a few more arrays of them
    arguments.fits_in_memory("chunk", 4 * 8 * min(chunk, budget), "one call's draws and their moments", value=chunk)
    refuse_endless_budget(budget)
    if resolution is None and relative_resolution is None:
        raise ValueError("state the smallest discrepancy to resolve: resolution (absolute) and/or "
                         "relative_resolution with a reference")
    absolute = np.asarray(0.0) if resolution is None else _numbers("resolution", resolution)
    scale = np.asarray(0.0)
    if relative_resolution is not None:
        relative_resolution = arguments.real("relative_resolution", relative_resolution, low=0.0, open_low=True)
        if reference is None:
            raise ValueError("relative_resolution needs a reference (e.g. the theory value) to be relative to")
        scale = relative_resolution * np.abs(_numbers("reference", reference, nonnegative=False))
    bias = _numbers("bias_budget", bias_budget)
    lengths = {a.shape for a in (absolute, scale, bias) if a.ndim}
    if len(lengths) > 1:
        raise ValueError(f"resolution, reference and bias_budget must be numbers or one per mean, of one length, got "
                         f"lengths {sorted(shape[0] for shape in lengths)}")
    target, bias = np.broadcast_arrays(absolute + scale, bias)
    if np.any(target <= bias):
        j = int(np.argmax(np.ravel(target <= bias)))
        raise ValueError(f"resolution must exceed bias_budget: z·SE + bias_budget ≤ resolution can never be met "
                         f"with resolution {np.ravel(target)[j]!r} ≤ bias_budget {np.ravel(bias)[j]!r}"
                         + ("; a relative resolution of a reference 0 is 0: add an absolute resolution"
                            if resolution is None else ""))

    bounds = checked_bounds("bounds", bounds)  # refused before any draw
    width = None if bounds is None or not all(math.isfinite(b) for b in bounds) else bounds[1] - bounds[0]
    columns: int | None = None  # 0: draws of shape (n,); k: (n, k)
    moments: list[RunningMoments] = []

    memory = _memory_model(draw, rng)  # (bytes a call, bytes a draw) at a call's peak; None: not measured

    def take(size: int) -> None:
        nonlocal columns, moments
        done = 0
        told = progress is not None and size >= PROGRESS_DRAWS
        step = max(PROGRESS_DRAWS, size // 20)  # a line per twentieth of the batch, at least PROGRESS_DRAWS apart
        spread = f"; {max(needed):,} needed at the spread so far" if total else ""
        if told:
            progress(f"{who}: drawing {size:,} more ({total + size:,} in all, of a budget of {budget:,}{spread})")
        last_line = time.monotonic()
        while done < size:
            n = min(chunk, size - done)
            if memory is not None:
                arguments.fits_in_memory("chunk", memory[0] + n * memory[1], f"a call of {who}(rng, {n:,}) "
                                         f"({memory[0]:,.0f} bytes a call and {memory[1]:,.0f} a draw, measured on "
                                         "copies of rng)", value=chunk)
            values, xp = _checked_draws(draw(rng, n), n, columns, who)
            if columns is None:
                columns = 0 if values.ndim == 1 else int(values.shape[1])
                if target.ndim and (columns == 0 or target.shape[0] != columns):
                    raise ValueError(f"resolution, reference and bias_budget give {target.shape[0]} values, one per "
                                     f"mean, but draw returns shape {tuple(values.shape)}")
                moments = [RunningMoments(bounds) for _ in range(max(columns, 1))]
            for j, m in enumerate(moments):
                m.add(values if columns == 0 else values[:, j], xp)
            done += n
            if told and (done // step > (done - n) // step or done == size):
                progress(f"{who}: {total + done:,} of {total + size:,} draws done")
            elif progress is not None and not told and time.monotonic() - last_line >= PROGRESS_SECONDS:
                progress(f"{who}: {total + done:,} of {total + size:,} draws done (a budget of {budget:,}{spread})")
                last_line = time.monotonic()

    batches: list[int] = []
    total, goal, needed = 0, first_batch, [first_batch]
    while True:
        take(goal - total)
        batches.append(goal - total)
        total = goal
        estimates = [m.estimate() for m in moments]
        res, bud = np.broadcast_to(target, (len(moments),)), np.broadcast_to(bias, (len(moments),))
        needed = [_draws_needed(e, total, float(r), float(b), z, width, budget) for e, r, b in zip(estimates, res, bud)]
        reached = [_reached(e, z, float(r), float(b)) for e, r, b in zip(estimates, res, bud)]
        if all(reached) or total >= budget:
            break
        goal = min(budget, max(math.ceil(GROWTH * total), math.ceil(MARGIN * max(needed))))
    sized = tuple(SizedEstimate(e.mean, e.standard_error, e.samples, e.magnitude, e.identical, e.low, e.high,
                                e.tail_draws, e.bounds, resolution=float(r), z=z, bias_budget=float(b), reached=ok,
                                budget=budget, batches=tuple(batches), draws_needed=max(n, 2))
                  for e, r, b, ok, n in zip(estimates, res, bud, reached, needed))
    return sized[0] if columns == 0 else sized

