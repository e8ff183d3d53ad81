"""A strict, numpy-backed stand-in for cupy: the GPU path tested without a GPU (never installed; opt in with
``ATTNVERIFY_CUPY_STANDIN=1``, which makes ``tests/conftest.py`` put this folder first on ``sys.path``).

What it holds the code to, as cupy 13 does:

- Device arrays (:class:`ndarray`) refuse implicit conversion to numpy (``np.asarray(x)`` raises cupy's
  "Implicit conversion to a NumPy array is not allowed" TypeError); only ``x.get()``, ``cupy.asnumpy(x)`` and
  ``float(x)``/``int(x)``/``bool(x)`` of one element bring a value to the host.
- Mixing a device array with a host ``numpy.ndarray`` in arithmetic or in a cupy function is a TypeError
  ("Unsupported type"), as in cupy; Python and numpy scalars mix freely. Reductions give 0-d device arrays.
- numpy functions given device arrays dispatch to the cupy function of the same name (``__array_function__``,
  ``__array_ufunc__``) and fail where cupy has none.
- Only the functions cupy has exist here; ``cupyx.scipy.special`` lacks ``iv``, ``jv``, ``kv``, ``yv``;
  ``cupy.random.Generator`` has cupy's methods only (no ``normal``, ``choice``, ``permutation``, ``shuffle``,
  ``spawn``, ``multivariate_normal``) and draws a stream different from numpy's for the same seed.
- A failed factorisation raises nothing (cupy's default ``linalg='ignore'``): ``linalg.cholesky`` of a matrix
  that is not positive definite returns a finite, wrong factor, and ``linalg.solve`` of a singular one a finite,
  wrong answer.
- ``created()`` counts the device arrays made so far, so a test can ask whether a path reached the device.
- ``fuse`` runs the function as one kernel would: it makes one new array per output, and the arrays its operations
  make in between are not counted (``fusing()`` says a fused function is running, for a test that counts arrays).
  Inside it only what ``cupy.fuse`` compiles is allowed: elementwise ufuncs and operators, ``where``, and the
  reductions ``sum``, ``prod``, ``amax``, ``amin``, ``all``, ``any``; indexing, methods (``reshape``, …), in-place
  operators, ``matmul``, ``einsum`` and ``linalg`` raise TypeError, as cupy's tracer refuses them.

What it cannot check: CUDA kernels and their compilation, device memory and its limits, transfers' cost,
speed, streams and asynchrony, cuSOLVER's and cuBLAS's rounding (it computes with numpy's LAPACK, so results
agree with numpy to the last bit where cupy's would differ by round-off), and functions whose cupy signature
differs from numpy's in ways not listed above. A run on a real GPU stays the final word.
"""

from __future__ import annotations

import builtins
import numpy as _np

__version__ = "13.0.0-standin"
STANDIN = True

_CREATED = [0]
_FUSING = [0]


def created() -> int:
    """The number of device arrays created since the process started."""
    return _CREATED[0]


_IMPLICIT = ("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy "
             "array explicitly.")


def _refuse_host(value):
    raise TypeError(f"Unsupported type {type(value)} (cupy stand-in: a numpy array mixed with device arrays)")


def _unwrap(value, *, host_ok: bool = False):
    """The numpy value under ``value`` (recursively in lists, tuples and dicts); a host numpy array is refused."""
    if isinstance(value, ndarray):
        return value._a
    if isinstance(value, _np.ndarray):
        if host_ok:
            return value
        _refuse_host(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v, host_ok=host_ok) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v, host_ok=host_ok) for k, v in value.items()}
    return value


def _wrap(value):
    """Device arrays for numpy arrays and numpy scalars in ``value`` (reductions give 0-d arrays, as in cupy)."""
    if isinstance(value, _np.ndarray):
        return ndarray(value)
    if isinstance(value, _np.generic):
        return ndarray(_np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class ndarray:
    """A device array: a numpy array that numpy may not see (see the module's docstring)."""

    __slots__ = ("_a",)
    __array_priority__ = 100

    def __init__(self, array):
        if isinstance(array, _np.generic):  # a 0-d result of numpy's: a 0-d device array, as in cupy
            array = _np.asarray(array)
        if not isinstance(array, _np.ndarray):
            raise TypeError("cupy stand-in: ndarray wraps a numpy array; use cupy.asarray")
        self._a = array
        _CREATED[0] += not _FUSING[0]

    # the host boundary
    def __array__(self, *args, **kwargs):
        raise TypeError(_IMPLICIT)

    def get(self, stream=None, order="C", out=None):
        return _np.array(self._a, copy=True)

    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __bool__(self):
        return bool(self._a)

    def __index__(self):
        if self._a.ndim or self._a.dtype.kind not in "iu":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return int(self._a)

    def __complex__(self):
        return complex(self._a)

    def item(self):
        return self._a.item()

    def tolist(self):
        return self._a.tolist()

    def __repr__(self):
        return "array(" + repr(self._a)[6:] if repr(self._a).startswith("array(") else repr(self._a)

    __str__ = __repr__

    def __format__(self, spec):
        if self._a.ndim == 0:
            return format(self._a.item(), spec)
        return format(str(self), spec)

    # attributes
    shape = property(lambda self: self._a.shape)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    dtype = property(lambda self: self._a.dtype)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: ndarray(self._a.T))
    real = property(lambda self: ndarray(self._a.real))
    imag = property(lambda self: ndarray(self._a.imag))
    mT = property(lambda self: ndarray(_np.swapaxes(self._a, -1, -2)))

    @property
    def device(self):
        return cuda.Device(0)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        return (ndarray(_np.asarray(row)) for row in self._a)

    def __getitem__(self, key):
        _outside_fusion("indexing")
        return _wrap(self._a[_unwrap(key, host_ok=True)])

    def __setitem__(self, key, value):
        _outside_fusion("item assignment")
        self._a[_unwrap(key, host_ok=True)] = _unwrap(value, host_ok=True)

    # arithmetic: another operand that is a host numpy array is refused
    def _binary(self, other, operation, reflected=False):
        if isinstance(other, _np.ndarray):
            _refuse_host(other)
        if not isinstance(other, (ndarray, int, float, complex, bool, _np.generic)):
            return NotImplemented
        a, b = self._a, _unwrap(other)
        return _wrap(operation(b, a) if reflected else operation(a, b))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if builtins.any(isinstance(v, _np.ndarray) for v in inputs):
            return NotImplemented
        if "out" in kwargs:
            out = kwargs.pop("out")
            result = getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs))
            for target, value in zip(out, result if isinstance(result, tuple) else (result,)):
                target._a[...] = value
            return out[0] if len(out) == 1 else out
        return _wrap(getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs)))

    def __array_function__(self, func, types, args, kwargs):
        # as cupy does: numpy.<path>.<name> runs cupy.<path>.<name> where that exists
        import importlib

        path = func.__module__.split(".")
        if path[0] != "numpy" or builtins.any(part.startswith("_") for part in path[1:]):
            return NotImplemented
        try:
            module = importlib.import_module(".".join(["cupy", *path[1:]]))
            own = getattr(module, func.__name__)
        except (ImportError, AttributeError):
            return NotImplemented
        return own(*args, **kwargs)

    # methods cupy's ndarray has, computed by numpy's
    _METHODS = ("all", "any", "argmax", "argmin", "argsort", "astype", "clip", "conj", "copy", "cumprod", "cumsum",
                "diagonal", "dot", "fill", "flatten", "max", "mean", "min", "nonzero", "prod", "ravel", "repeat",
                "reshape", "round", "sort", "squeeze", "std", "sum", "swapaxes", "take", "trace", "transpose", "var",
                "view", "partition", "argpartition", "choose", "compress", "conjugate", "put", "searchsorted")

    def __getattr__(self, name):
        if name in ndarray._METHODS:
            _outside_fusion(f"ndarray.{name}")
            method = getattr(self._a, name)

            def call(*args, **kwargs):
                if name == "fill":
                    return method(*_unwrap(args), **_unwrap(kwargs))
                return _wrap(method(*_unwrap(args), **_unwrap(kwargs)))

            return call
        raise AttributeError(f"'cupy.ndarray' object has no attribute {name!r}")

    def __neg__(self):
        return ndarray(-self._a)

    def __pos__(self):
        return ndarray(+self._a)

    def __abs__(self):
        return ndarray(_np.abs(self._a))

    def __invert__(self):
        return ndarray(~self._a)


def _binary_operator(name):
    import operator

    operation = getattr(operator, name)

    def forward(self, other):
        if name == "matmul":
            _outside_fusion("matmul")
        return self._binary(other, operation)

    def reflected(self, other):
        return self._binary(other, operation, reflected=True)

    def inplace(self, other):
        _outside_fusion(f"the in-place operator of {name}")
        if isinstance(other, _np.ndarray):
            _refuse_host(other)
        self._a[...] = operation(self._a, _unwrap(other))
        return self

    return forward, reflected, inplace


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lshift", "rshift"):
    _forward, _reflected, _inplace = _binary_operator(_name if _name not in ("and", "or") else _name + "_")
    setattr(ndarray, f"__{_name}__", _forward)
    setattr(ndarray, f"__r{_name}__", _reflected)
    setattr(ndarray, f"__i{_name}__", _inplace)
for _name in ("lt", "le", "eq", "ne", "gt", "ge"):
    setattr(ndarray, f"__{_name}__", _binary_operator(_name)[0])
ndarray.__hash__ = None
ndarray.__module__ = "cupy"


def _function(name, numpy_function, *, host_ok=False):
    def function(*args, **kwargs):
        if _FUSING[0] and not (isinstance(numpy_function, _np.ufunc) or name in _FUSED_FUNCTIONS):
            _outside_fusion(f"cupy.{name}")
        return _wrap(numpy_function(*_unwrap(args, host_ok=host_ok), **_unwrap(kwargs, host_ok=host_ok)))

    function.__name__ = function.__qualname__ = name
    function.__module__ = "cupy"
    return function


_FUSED_FUNCTIONS = ("where", "sum", "prod", "amax", "amin", "max", "min", "all", "any")
"""What a fused function may call besides ufuncs (cupy.fuse's elementwise ``where`` and its reductions)."""


def _outside_fusion(what: str) -> None:
    if _FUSING[0]:
        raise TypeError(f"cupy stand-in: {what} cannot be fused (cupy.fuse compiles elementwise operations and "
                        "reductions only)")


def fusing() -> bool:
    """Whether a fused function is running (its operations are one kernel: the arrays they make are not launches)."""
    return _FUSING[0] > 0


def fuse(*args, kernel_name=None):
    """``cupy.fuse``: the function's operations as one kernel (module docstring); as a decorator, with or without
    arguments."""

    def decorate(function):
        def fused(*arguments):
            if not builtins.any(isinstance(a, ndarray) for a in arguments):
                return function(*arguments)  # cupy.fuse runs the plain function on host values
            _FUSING[0] += 1
            try:
                result = function(*arguments)
            finally:
                _FUSING[0] -= 1
            if isinstance(result, tuple):
                return tuple(ndarray(_np.array(_unwrap(r))) for r in result)
            return ndarray(_np.array(_unwrap(result)))

        fused.__name__ = kernel_name or getattr(function, "__name__", "fused")
        return fused

    if len(args) == 1 and callable(args[0]) and kernel_name is None:
        return decorate(args[0])
    return decorate


# array creation: host data may come in (a transfer)
def asarray(a, dtype=None, order=None, *, blocking=False):
    if isinstance(a, ndarray):
        return a if dtype is None or _np.dtype(dtype) == a.dtype else ndarray(a._a.astype(dtype))
    return ndarray(_np.array(_unwrap(a, host_ok=True), dtype=dtype, copy=True))


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    return ndarray(_np.array(_unwrap(obj, host_ok=True), dtype=dtype, copy=True, ndmin=ndmin))


asanyarray = asarray


def ascontiguousarray(a, dtype=None):
    return ndarray(_np.ascontiguousarray(_unwrap(a, host_ok=True), dtype=dtype))


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    return a.get() if isinstance(a, ndarray) else _np.asarray(a)


def get_array_module(*args):
    return builtins.__import__("cupy") if builtins.any(isinstance(a, ndarray) for a in args) else _np


# the functions of cupy's namespace that the stand-in provides (numpy's, on device arrays)
_NAMES = """abs absolute add all allclose amax amin angle any append arange arccos arccosh arcsin arcsinh arctan arctan2
arctanh argmax argmin argsort argwhere around array_equal atleast_1d atleast_2d atleast_3d average bincount
broadcast_arrays broadcast_to cbrt ceil clip column_stack concatenate conj conjugate copy copysign corrcoef cos
cosh count_nonzero cov cross cumprod cumsum deg2rad diag diagflat diagonal diff divide dot dsplit dstack einsum
empty empty_like equal exp exp2 expand_dims expm1 eye fabs fix flatnonzero flip fliplr flipud float_power floor
floor_divide fmax fmin fmod frexp full full_like greater greater_equal hsplit hstack hypot identity inner isclose
isfinite isinf isnan kron ldexp less less_equal linspace log log10 log1p log2 logaddexp logaddexp2 logical_and
logical_not logical_or logical_xor logspace matmul max maximum mean median meshgrid min minimum mod moveaxis
multiply nan_to_num nanargmax nanargmin nancumprod nancumsum nanmax nanmean nanmedian nanmin nanprod nanstd
nansum nanvar negative nextafter nonzero not_equal ones ones_like outer pad percentile positive power prod ptp
quantile rad2deg ravel reciprocal remainder repeat reshape resize rint roll rollaxis rot90 round searchsorted select
shape sign signbit sin sinc sinh size sort split sqrt square squeeze stack std subtract sum swapaxes take
take_along_axis tan tanh tensordot tile trace transpose trapz tri tril triu true_divide trunc unique vdot
vsplit vstack var where zeros zeros_like histogram interp lexsort packbits unpackbits""".split()
_FUNCTIONS = {}
for _name in _NAMES:
    if hasattr(_np, _name):
        _FUNCTIONS[_name] = _function(_name, getattr(_np, _name))
_FUNCTIONS.update(asarray=asarray, array=array, asanyarray=asanyarray, ascontiguousarray=ascontiguousarray)


def select(condlist, choicelist, default=0):
    """cupy.select's checks (cupy 14): every condition a boolean device array (a Python ``True``, as sympy's
    NumPyPrinter writes for a Piecewise's last piece, raises AttributeError on cupy), every choice a device array,
    the default a scalar."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if not _np.isscalar(default):
        raise TypeError("default only accepts scalar values")
    for choice, condition in zip(choicelist, condlist):
        if not isinstance(choice, ndarray):
            raise TypeError("choicelist only accepts lists of cupy ndarrays")
        if condition.dtype.type is not _np.bool_:  # AttributeError for a Python bool, as on cupy
            raise TypeError("Each condition must be a boolean array")
    return _wrap(_np.select(_unwrap(list(condlist)), _unwrap(list(choicelist)), default))


_FUNCTIONS["select"] = select
globals().update(_FUNCTIONS)

# numpy's dtypes and constants, as cupy re-exports them
from numpy import (bool_, complex64, complex128, dtype, e, euler_gamma, finfo, float16, float32, float64, iinfo,  # noqa: E402
                   inf, int8, int16, int32, int64, intp, nan, newaxis, pi, uint8, uint16, uint32, uint64)

from . import cuda, linalg, random  # noqa: E402


def get_default_memory_pool():
    return cuda._MemoryPool()


def broadcast_shapes(*shapes):
    return _np.broadcast_shapes(*shapes)
