"""Values that know their round-off: a generated evaluator's result carries the size of the terms it was made of.

A float64 value v computed from terms errs by a few ulps of the terms' size S ≥ |v| (`.rounding`), not of
|v|: where the terms cancel (sin θ + (π − θ) cos θ at θ = fl(π)) v is far below its own error.
[`Rounded`][attnverify.derivations.rounded.Rounded] is a numpy array that carries S beside v, and carries it through the
arithmetic done on v afterwards by the rules of first-order running error analysis (Higham, *Accuracy and Stability of
Numerical Algorithms*, §3.3), the same rules `.rounding.magnitude` applies to an expression:

    a plain number x: S = |x|            a ± b: S_a + S_b             a·b: S_a·S_b
    a / b: S_a/|b| + |a|·S_b/b²           aᵖ (p a plain number): S_aᵖ (p ≥ 1), |a|²ᵖ·S_a⁻ᵖ (p < 0), roots below
    f(a): |f(a)| + |f′(a)|·S_a            (exp, log, the trigonometric and hyperbolic functions, erf, erfc, …)
    sum: Σ S                              A @ B: S_A @ S_B          max, min: the larger S

So ``2 * k`` keeps 2·S and ``k - k0`` keeps S_k + S_k0, and a comparison (``within_error``, ``close``, ``at_most``,
``exceeds``) takes its round-off floor at S (`carried_scale`). Anything else (comparisons, rounding to
integers, linear algebra, ``float(v)``) gives a value with no scale: none is claimed where none was derived.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

_SQRT_PI = math.sqrt(math.pi)

#: Units of rounding (float64 machine epsilons) in a comparison's round-off floor (ROUNDOFF_ULPS·ε·S).
ROUNDOFF_ULPS = 16
_EPSILON = float(np.finfo(np.float64).eps)


def _unary_slopes() -> dict:
    """|f′(a)| for the functions whose derivative is carried (f(a) given as ``f`` where it is the cheaper form)."""
    def inverse_sqrt(u):
        with np.errstate(divide="ignore", invalid="ignore"):
            return 1.0 / np.sqrt(u)

    return {
        "exp": lambda a, f: np.abs(f), "exp2": lambda a, f: math.log(2) * np.abs(f),
        "expm1": lambda a, f: np.exp(a), "log": lambda a, f: 1.0 / np.abs(a),
        "log2": lambda a, f: 1.0 / (np.abs(a) * math.log(2)), "log10": lambda a, f: 1.0 / (np.abs(a) * math.log(10)),
        "log1p": lambda a, f: 1.0 / np.abs(1.0 + a),
        "sin": lambda a, f: np.abs(np.cos(a)), "cos": lambda a, f: np.abs(np.sin(a)), "tan": lambda a, f: 1.0 + f * f,
        "arcsin": lambda a, f: inverse_sqrt(1.0 - a * a), "arccos": lambda a, f: inverse_sqrt(1.0 - a * a),
        "arctan": lambda a, f: 1.0 / (1.0 + a * a),
        "sinh": lambda a, f: np.cosh(a), "cosh": lambda a, f: np.abs(np.sinh(a)), "tanh": lambda a, f: 1.0 - f * f,
        "arcsinh": lambda a, f: inverse_sqrt(1.0 + a * a), "arccosh": lambda a, f: inverse_sqrt(a * a - 1.0),
        "arctanh": lambda a, f: 1.0 / np.abs(1.0 - a * a),
        "erf": lambda a, f: 2.0 / _SQRT_PI * np.exp(-a * a), "erfc": lambda a, f: 2.0 / _SQRT_PI * np.exp(-a * a),
    }


_SLOPES = _unary_slopes()
_SAME = {"negative", "positive", "absolute", "fabs", "conjugate", "copysign"}


def _plain(x: Any) -> Any:
    return x.view(np.ndarray) if isinstance(x, Rounded) else x


def scale_of(x: Any) -> np.ndarray:
    """S of an operand: the carried scale of a [`Rounded`][attnverify.derivations.rounded.Rounded], else |x| (a plain
    number is exact as given)."""
    if isinstance(x, Rounded) and x._scale is not None:
        return x._scale
    return np.abs(np.asarray(_plain(x), dtype=float))


def _root(s_a, p):
    """S of aᵖ for 0 < p < 1: the error δ = u·S_a of a moves aᵖ by at most δᵖ (near a = 0 too, where the first-order
    slope p·aᵖ⁻¹ is unbounded), which the floor u·S reaches at S = max(S_aᵖ, (u·S_a)ᵖ/u), u = ROUNDOFF_ULPS·ε."""
    unit = ROUNDOFF_ULPS * _EPSILON
    return np.maximum(s_a ** p, (unit * s_a) ** p / unit)


def _power(a, p, s_a, s_p, value):
    if s_p is None:  # a plain exponent
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            if np.all((np.asarray(p) > 0) & (np.asarray(p) < 1)):
                return _root(s_a, p)
            return s_a ** p if np.all(np.asarray(p) >= 0) else np.abs(a) ** (2 * p) * s_a ** (-p)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return np.abs(value) * (1.0 + np.abs(p) * s_a / np.abs(a) + np.abs(np.log(np.abs(a))) * s_p)


def _call_scale(name: str, inputs: tuple, value: Any) -> Any:
    """S of ``ufunc(*inputs)`` by the rules of the module docstring; None where no rule applies."""
    scales = [scale_of(x) for x in inputs]
    plain = [np.asarray(_plain(x), dtype=float) for x in inputs]
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        if len(inputs) == 1:
            (a,), (s,) = plain, scales
            if name in _SAME:
                return s
            if name == "sqrt":
                return _root(s, 0.5)
            if name == "cbrt":
                return _root(s, 1 / 3)
            if name == "square":
                return s * s
            if name == "reciprocal":
                return s / (a * a)
            slope = _SLOPES.get(name)
            return None if slope is None else np.abs(value) + slope(a, np.asarray(value)) * s
        if len(inputs) == 2:
            (a, b), (s_a, s_b) = plain, scales
            if name in ("add", "subtract", "hypot"):
                return s_a + s_b
            if name == "multiply":
                return s_a * s_b
            if name in ("divide", "true_divide"):
                return s_a / np.abs(b) + np.abs(a) * s_b / (b * b)
            if name in ("maximum", "minimum", "fmax", "fmin"):
                return np.maximum(s_a, s_b)
            if name == "copysign":
                return s_a
            if name in ("power", "float_power"):
                exponent_scale = None if not isinstance(inputs[1], Rounded) else s_b
                return _power(a, b, s_a, exponent_scale, value)
            if name == "arctan2":  # f(y, x): |∂f/∂y| = |x|/(x² + y²), |∂f/∂x| = |y|/(x² + y²)
                return np.abs(value) + (np.abs(b) * s_a + np.abs(a) * s_b) / (a * a + b * b)
            if name == "matmul":
                return np.matmul(s_a, s_b)
    return None


def _result_scale(ufunc: np.ufunc, method: str, inputs: tuple, value: Any, kwargs: dict) -> Any:
    """S of a float ufunc result: `_call_scale` for a call; for a reduction (or a running sum) the sum,
    product or largest of the entries' S; None where no rule applies (a masked max, a running product)."""
    if method == "__call__":
        return _call_scale(ufunc.__name__, inputs, value)
    combine = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.maximum,
               "fmax": np.maximum, "fmin": np.maximum}.get(ufunc.__name__)
    if combine is None or len(inputs) != 1 or method not in ("reduce", "accumulate") or (
            method == "accumulate" and combine is not np.add):
        return None
    kwargs = {k: v for k, v in kwargs.items() if k in ("axis", "keepdims", "where")}
    if kwargs.get("where", True) is True:
        kwargs.pop("where", None)
    elif combine is not np.add:  # a masked max or product needs an initial value, which has no S
        return None
    return getattr(combine, method)(scale_of(inputs[0]), **kwargs)


class Rounded(np.ndarray):
    r"""A float64 array with the rounding scale $S$ of each entry (``.roundoff_scale``: the size of the terms it was
    computed from, $\ge \lvert\text{value}\rvert$), carried through arithmetic by the rules of the module docstring."""

    _scale: np.ndarray | None = None

    def __new__(cls, value: Any, scale: Any) -> "Rounded":
        array = np.asarray(value, dtype=float)
        out = array.view(cls)
        out._scale = np.maximum(np.broadcast_to(np.abs(np.asarray(scale, dtype=float)), array.shape), np.abs(array))
        return out

    def __array_finalize__(self, obj: Any) -> None:
        self._scale = None  # a view numpy made on its own (a transpose, a broadcast) claims no scale

    @property
    def roundoff_scale(self) -> np.ndarray | None:
        r"""$S$: the size of the terms this value was computed from (None where it is not known)."""
        return self._scale

    def __array_ufunc__(self, ufunc: np.ufunc, method: str, *inputs: Any, out=None, **kwargs: Any) -> Any:
        value = getattr(ufunc, method)(*(_plain(x) for x in inputs), **kwargs)  # inputs read before out is written
        float_result = isinstance(value, (np.ndarray, np.floating)) and np.asarray(value).dtype.kind == "f"
        scale = _result_scale(ufunc, method, inputs, value, kwargs) if float_result else None
        if scale is not None and not np.all(np.isfinite(scale)):
            scale = None
        if out is not None:  # written into given arrays (np.mean divides in place): the first carries the scale
            for o, v in zip(out, value if len(out) > 1 else (value,)):
                if isinstance(o, Rounded):
                    o._scale = None
                np.copyto(_plain(o), v, casting="unsafe")
            target = out[0]
            if len(out) == 1 and isinstance(target, Rounded) and scale is not None:
                target._scale = np.maximum(np.broadcast_to(scale, target.shape), np.abs(target.view(np.ndarray)))
            return target if len(out) == 1 else out
        return value if scale is None else Rounded(value, scale)

    # the array methods that only rearrange entries carry the scale with them
    def __getitem__(self, key: Any) -> Any:
        value = np.ndarray.__getitem__(self.view(np.ndarray), key)
        if self._scale is None or not isinstance(value, (np.ndarray, np.floating)):
            return value
        return Rounded(value, self._scale[key])

    def _rearranged(self, method: str, *args: Any, **kwargs: Any) -> Any:
        value = getattr(self.view(np.ndarray), method)(*args, **kwargs)
        return value if self._scale is None else Rounded(value, getattr(self._scale, method)(*args, **kwargs))

    def copy(self, *args, **kwargs):
        return self._rearranged("copy", *args, **kwargs)

    def reshape(self, *args, **kwargs):
        return self._rearranged("reshape", *args, **kwargs)

    def ravel(self, *args, **kwargs):
        return self._rearranged("ravel", *args, **kwargs)

    def flatten(self, *args, **kwargs):
        return self._rearranged("flatten", *args, **kwargs)

    def transpose(self, *args, **kwargs):
        return self._rearranged("transpose", *args, **kwargs)

    def squeeze(self, *args, **kwargs):
        return self._rearranged("squeeze", *args, **kwargs)

    @property
    def T(self):
        return self.transpose()

    def __reduce__(self):  # pickles (a store, a worker) as a plain array: the scale is for comparisons in-process
        return self.view(np.ndarray).__reduce__()

    def __repr__(self) -> str:
        return repr(float(self)) if self.ndim == 0 else repr(self.view(np.ndarray))

    def __str__(self) -> str:
        return str(float(self)) if self.ndim == 0 else str(self.view(np.ndarray))


def carried_scale(value: Any) -> Any:
    """The rounding scale a value carries ([`Rounded`][attnverify.derivations.rounded.Rounded]), as a float or an array;
    None for anything else."""
    scale = getattr(value, "roundoff_scale", None) if isinstance(value, Rounded) else None
    if scale is None:
        return None
    return float(scale) if np.ndim(scale) == 0 else np.asarray(scale)
