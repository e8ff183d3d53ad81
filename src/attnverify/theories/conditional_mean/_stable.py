"""Power-of-two scaling and result checks shared by the conditional-mean numerics (private).

Multiplying by 2^−e changes only a float64's exponent, so a computation done on arrays scaled by
powers of two rounds exactly as the unscaled one wherever that one is representable, and stays
finite where the unscaled one would overflow (huge scores, keys or tokens, a tiny bandwidth).
"""

from __future__ import annotations

from typing import Any

from ...base.backend import Backend, array_module, get_backend


def backend_of(*arrays: Any) -> Backend:
    """cupy when any argument is a cupy array, else numpy (for functions without a backend argument)."""
    for x in arrays:
        if array_module(x).__name__ == "cupy":
            return get_backend("cupy")
    return get_backend("numpy")


def exponent(xp: Any, x: Any, axis: Any) -> Any:
    """The integers e with max|x| < 2^e over ``axis`` (kept as length-1 axes); 0 on all-zero slices."""
    return xp.frexp(xp.max(xp.abs(x), axis=axis, keepdims=True))[1]


def finite_result(xp: Any, value: Any, what: str, inputs: str) -> Any:
    """``value`` when every entry is finite; else a ValueError saying that ``what`` overflows float64."""
    if not bool(xp.all(xp.isfinite(xp.asarray(value)))):
        raise ValueError(f"{what} overflows float64 at the given {inputs}; smaller magnitudes are needed")
    return value
