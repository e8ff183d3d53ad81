"""Argument checks at the public boundary of numerics: clear errors naming the parameter and its range."""

from __future__ import annotations

import math
from numbers import Integral
from typing import Any

from .backend import Backend


def integer(name: str, value: Any, minimum: int) -> int:
    """``value`` as an int ≥ ``minimum``, else ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
    return int(value)


def real(name: str, value: Any, *, low: float = -math.inf, high: float = math.inf, open_low: bool = False) -> float:
    """``value`` as a finite float in [low, high] (or (low, high] with ``open_low``)."""
    try:
        x = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        x = math.nan
    bad = not math.isfinite(x) or x > high or (x <= low if open_low else x < low)
    if bad:
        interval = f"{'(' if open_low else '['}{low:g}, {high:g}]"
        raise ValueError(f"{name} must be a finite number in {interval}, got {value!r}")
    return x


def generator(rng: Any, be: Backend) -> Any:
    """A random Generator: ``rng`` itself, or the backend's Generator seeded with the integer ``rng``."""
    if isinstance(rng, Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"rng must be a seed ≥ 0 or a Generator, got {rng!r}")
        return be.random(int(rng))
    if rng is None or isinstance(rng, bool) or not hasattr(rng, "standard_normal"):
        raise TypeError(
            f"rng must be an integer seed or a random Generator (numpy or backend), got {rng!r}; "
            "randomness must be explicit"
        )
    return rng


def finite_array(name: str, x: Any, be: Backend, *, ndim: int | None = None) -> Any:
    """``x`` as a float64 array of the backend, finite, with ``ndim`` axes when given."""
    try:
        arr = be.asarray(x)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be an array of real numbers ({error})") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} axes, got shape {tuple(arr.shape)}")
    if not bool(be.xp.all(be.xp.isfinite(arr))):
        raise ValueError(f"{name} must contain only finite numbers, got NaN or infinity")
    return arr
