"""Argument checks and random draws shared by the single-location simulations.

Part of `attnverify.theories.single_location` (see its docstring for the spec and sources).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import contextlib
import itertools
import math
import numpy as np

from ...base import arguments
from . import derivations as derived
from ...base.arguments import integer as _integer
from ...base.backend import Backend, to_numpy
from ...numerics.statistics import Estimate, RunningMoments




UNIT_TOLERANCE = derived.UNIT_TOLERANCE
"""How far ‖k‖ may be from 1 (and ⟨k*, v*⟩ from 0) before an input is rejected as off the sphere."""

RANK_TOLERANCE = 1e-13
"""A Gram–Schmidt residual below this fraction of the vector's norm counts as inside the span."""

_NUMBERS_PER_BATCH = 2**22
"""Default Monte Carlo batch: about this many float64 numbers (32 MiB) per drawn array."""

SQRT_PI = math.sqrt(math.pi)


# --------------------------------------------------------------------------- argument checks



def checked_lam(lam: Any, name: str = "lam") -> float:
    """λ > 0 as a float, refused by ``name`` otherwise."""
    return arguments.positive(name, lam)


def finite_result(compute: Callable[[], Any], be: Backend, name: str) -> Any:
    """``compute()`` when finite; else a ValueError naming the input whose size overflowed float64
    (numpy's overflow warnings are silenced: the overflow is reported here, by name)."""
    quiet = np.errstate(over="ignore", invalid="ignore") if be.name == "numpy" else contextlib.nullcontext()
    with quiet:
        value = compute()
    for part in value if isinstance(value, tuple) else (value,):
        if not bool(be.xp.all(be.xp.isfinite(part))):
            raise ValueError(f"{name} is too large in magnitude: the result overflows float64 (got infinity or NaN)")
    return value


def unit_rows(name: str, x: Any, be: Backend, dim: int | None = None, *, batched: bool) -> Any:
    """``x`` as float64 of shape (dim,) (or (runs, dim) when ``batched``), each row of unit norm."""
    arr = arguments.array(name, x, be, min_ndim=1)
    if batched and arr.ndim == 1:
        arr = arr[None, :]
    want = 2 if batched else 1
    if arr.ndim != want or (dim is not None and arr.shape[-1] != dim) or arr.shape[-1] < 1:
        size = "dim" if dim is None else str(dim)
        expected = f"(runs, {size})" if batched else f"({size},)"
        raise ValueError(f"{name} must have shape {expected}, got {tuple(arr.shape)}")
    norms = to_numpy(be.xp.linalg.norm(arr, axis=-1))
    worst = float(np.max(np.abs(norms - 1.0)))
    if worst > UNIT_TOLERANCE:
        raise ValueError(
            f"{name} must have unit norm (|‖{name}‖ − 1| ≤ {UNIT_TOLERANCE:g}), got a norm of "
            f"{float(norms.ravel()[np.argmax(np.abs(norms.ravel() - 1.0))])!r}"
        )
    return arr


def unit_pair(
    name_a: str, a: Any, name_b: str, b: Any, be: Backend, dim: int | None = None, *, batched: bool
) -> tuple[Any, Any]:
    """Two unit-row arrays checked each on its own, then against each other (same shape)."""
    a = unit_rows(name_a, a, be, dim, batched=batched)
    b = unit_rows(name_b, b, be, dim, batched=batched)
    if a.shape != b.shape:
        raise ValueError(f"{name_a} and {name_b} must have the same shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    return a, b






def progress_callback(progress: Any) -> Callable[[int, int], Any] | None:
    """``progress`` if it is None or callable as (t, steps); else a TypeError."""
    return arguments.function("progress", progress, "a function (t, steps)", optional=True)


# --------------------------------------------------------------------------- random draws


def normal_draws(rng: Any, shape: tuple[int, ...], be: Backend) -> Any:
    """Standard normals of ``shape`` from ``rng``, on the backend."""
    return be.asarray(rng.standard_normal(size=shape))


def integer_draws(rng: Any, high: int, n: int, be: Backend) -> Any:
    """n integers uniform in [0, high) from ``rng``, int64 on the backend."""
    return be.asarray(rng.integers(0, high, size=n), dtype=be.xp.int64)


def chisquare_draws(rng: Any, df: int, shape: tuple[int, ...], be: Backend) -> Any:
    """χ²_df draws of ``shape`` from ``rng`` on the backend (zeros for df = 0)."""
    if df == 0:  # the span already fills R^d: nothing is orthogonal to it
        return be.xp.zeros(shape, dtype=be.xp.float64)
    return be.asarray(rng.chisquare(df, size=shape))


def batch_sizes(n: int, batch: int | None, numbers_per_sample: int) -> Iterator[int]:
    """The sizes of the batches n draws are made in (each of ``numbers_per_sample`` float64 numbers per draw), one
    at a time. Refused here, when called: a batch that the memory cannot hold, naming ``batch`` or the task's ``L``,
    then more numbers than ``arguments.MOST_NUMBERS_DRAWN``, naming ``n``."""
    if batch is None:
        batch, name = max(256, _NUMBERS_PER_BATCH // max(1, numbers_per_sample)), "L"
        value = None
    else:
        batch = value = _integer("batch", batch, 1)
        name = "batch"
    arguments.fits_in_memory(name, 4 * 8 * min(n, batch) * numbers_per_sample,
                             f"one batch of {min(n, batch)} draws of {numbers_per_sample} float64 numbers (with its "
                             "temporaries)", value=value)
    arguments.at_most_work("n", n, arguments.MOST_NUMBERS_DRAWN, f"numbers drawn ({numbers_per_sample:,} a sample)",
                           work=n * numbers_per_sample)
    full, rest = divmod(n, batch)
    return itertools.chain(itertools.repeat(batch, full), [rest] if rest else [])


def batched_mean(values_of: Callable[[int], Any], n: int, batch: int | None, numbers_per_sample: int,
                 xp: Any) -> Estimate:
    """The mean and standard error of n i.i.d. values, ``values_of(size)`` giving ``size`` of them at a time in the
    batches of `batch_sizes`, folded into running moments (one pass, any n in bounded memory)."""
    moments = RunningMoments()
    for size in batch_sizes(n, batch, numbers_per_sample):
        moments.add(values_of(size), xp)
    return moments.estimate()
