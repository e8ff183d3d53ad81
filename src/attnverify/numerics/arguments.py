"""Argument checks at the public boundary of numerics: clear errors naming the parameter and its range."""

from __future__ import annotations

import math
from numbers import Integral
from typing import Any

import numpy as np
from scipy.linalg import cho_factor

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


def shaped_array(name: str, value: Any, shape: tuple[int | None, ...]) -> np.ndarray:
    """``value`` as a read-only finite float64 host array of ``shape`` (None: any length on that axis)."""
    arr = np.array(value, dtype=np.float64)
    if arr.ndim != len(shape) or any(s is not None and s != n for s, n in zip(shape, arr.shape)):
        wanted = "(" + ", ".join("·" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{name} must have shape {wanted}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite numbers")
    arr.setflags(write=False)
    return arr


def positive_definite_factor(name: str, matrix: np.ndarray):
    """scipy's lower Cholesky factor (``cho_factor``) of a symmetric positive-definite ``matrix``;
    ValueError naming ``name`` (with the smallest eigenvalue) otherwise."""
    if not np.allclose(matrix, matrix.T, rtol=1e-12, atol=1e-14):
        raise ValueError(f"{name} must be symmetric")
    try:
        return cho_factor(matrix, lower=True)
    except np.linalg.LinAlgError:
        eig = float(np.linalg.eigvalsh(matrix).min())
        raise ValueError(f"{name} must be positive definite, got smallest eigenvalue {eig:.3g}") from None
