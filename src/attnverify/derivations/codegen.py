"""Code generation: sympy expressions -> evaluators for numpy or cupy.

The printer emits array code on two names only, ``xp`` (numpy or cupy) and ``special``
(``scipy.special`` or ``cupyx.scipy.special``), so one generated source runs on either backend.
sympy's stock NumPy/CuPy printers route ``erf`` to ``math.erf``, which fails on arrays; here every
function goes to an array module or is refused at print time. Functions that no array library
provides (e.g. the Gaussian expectation ``zeta`` of single-location regression) declare an
``array_implementation(backend, *args)`` on their sympy class and are called through it.

Common subexpressions are eliminated (``sympy.cse``) and evaluators are cached by
(expressions, arguments, backend).
"""

from __future__ import annotations

import contextlib
import keyword
import math
from dataclasses import dataclass, field
from functools import lru_cache, partial
from types import ModuleType
from typing import Any, Callable, Sequence

import sympy
from sympy.printing.numpy import NumPyPrinter, _known_constants_numpy, _known_functions_numpy

from ..base.arguments import backend as backend_argument
from ..base.backend import on_device, to_numpy
from .rounding import magnitude

#: sympy function name -> name in ``scipy.special`` / ``cupyx.scipy.special``.
SPECIAL_FUNCTIONS = {
    "erf": "erf",
    "erfc": "erfc",
    "erfinv": "erfinv",
    "erfcinv": "erfcinv",
    "gamma": "gamma",
    "loggamma": "gammaln",
    "besseli": "iv",
    "besselj": "jv",
    "besselk": "kv",
    "bessely": "yv",
    "polygamma": "polygamma",
    "digamma": "digamma",
}

_ARRAY_FUNCTIONS = {name: "xp." + target for name, target in _known_functions_numpy.items()}
_ARRAY_FUNCTIONS.update({name: "special." + target for name, target in SPECIAL_FUNCTIONS.items()})
_ARRAY_FUNCTIONS["Abs"] = "xp.abs"  # sympy's NumPy table routes Abs through a method the printer filters out
_ARRAY_CONSTANTS = {name: "xp." + target for name, target in _known_constants_numpy.items()}


class BackendPrinter(NumPyPrinter):
    """sympy printer for array code on ``xp`` and ``special`` (numpy/scipy or cupy/cupyx)."""

    _module = "xp"
    _kf = _ARRAY_FUNCTIONS
    _kc = _ARRAY_CONSTANTS

    def __init__(self, settings: dict | None = None, *, backend: Any = None):
        super().__init__(settings={"fully_qualified_modules": True, **(settings or {})})
        self.backend = backend  # when given, a function its ``special`` module lacks is refused at print time
        # NumPyPrinter merges in the ``math.*`` table; a scalar ``math`` call never belongs here.
        self.known_functions = {
            name: target
            for name, target in self.known_functions.items()
            if target.startswith(("xp.", "special."))
        }
        self.implementations: dict[str, type] = {}

    def _print_Function(self, expr: sympy.Function) -> str:
        cls = type(expr)
        if hasattr(cls, "array_implementation"):
            name = f"_impl_{cls.__name__}"
            self.implementations[name] = cls
            return f"{name}({', '.join(self._print(a) for a in expr.args)})"
        name = cls.__name__
        if name in self.known_functions:
            target = self.known_functions[name]
            module, _, attribute = target.partition(".")
            if self.backend is not None and not hasattr(getattr(self.backend, module), attribute):
                where = {"numpy": {"xp": "numpy", "special": "scipy.special"},
                         "cupy": {"xp": "cupy", "special": "cupyx.scipy.special"}}.get(self.backend.name, {})
                raise NotImplementedError(
                    f"the function {name} prints as {target}, but the backend {self.backend.name!r} has no "
                    f"{where.get(module, module)}.{attribute}: evaluate it on another backend, or give its sympy "
                    "class an array_implementation(backend, *args)")
            return f"{target}({', '.join(self._print(a) for a in expr.args)})"
        raise NotImplementedError(
            f"no array implementation for the function {name!r}: add it to SPECIAL_FUNCTIONS "
            "or give its sympy class an array_implementation(backend, *args)"
        )

    def _print_Piecewise(self, expr: sympy.Piecewise) -> str:
        """Nested ``xp.where`` (the first true condition's piece; NaN where none holds). NumPyPrinter's
        ``select([cond, True], …)`` passes a Python bool among the conditions, which cupy.select refuses."""
        printed = "xp.nan"
        for value, condition in reversed(expr.args):
            if condition == sympy.true:
                printed = f"xp.asarray({self._print(value)})"
            else:
                printed = f"xp.where(xp.asarray({self._print(condition)}), {self._print(value)}, {printed})"
        return printed

    def _print_Derivative(self, expr: sympy.Derivative) -> str:
        raise NotImplementedError(
            f"unevaluated derivative {expr} cannot be printed as array code; give the function an "
            "explicit fdiff so that sympy differentiates it in closed form"
        )


def _identifier(symbol: sympy.Symbol, index: int) -> str:
    name = str(symbol)
    if name.isidentifier() and not keyword.iskeyword(name) and name not in ("xp", "special"):
        return name
    return f"arg{index}"


@dataclass(frozen=True)
class Evaluator:
    """A generated array function of ``arguments`` returning one array per expression."""

    arguments: tuple[sympy.Symbol, ...]
    expressions: tuple[sympy.Expr, ...]
    backend_name: str
    source: str
    function: Callable[..., tuple]
    xp: ModuleType = field(repr=False)
    single: bool = False  # made from one expression (not a sequence): returns the array itself
    rounding: bool = True  # numpy results carry their terms' rounding scale (`Rounded`)

    def __call__(self, *values: Any) -> Any:
        if len(values) != len(self.arguments):
            raise TypeError(
                f"evaluator of {[str(a) for a in self.arguments]} takes {len(self.arguments)} "
                f"arguments, got {len(values)}"
            )
        arrays = [_argument(symbol, value, self.xp) for symbol, value in zip(self.arguments, values)]
        try:
            shape = self.xp.broadcast_shapes(*(a.shape for a in arrays)) if arrays else ()
        except ValueError:
            shapes = ", ".join(f"{s} {tuple(a.shape)}" for s, a in zip(self.arguments, arrays))
            raise ValueError(f"the arguments of the evaluator do not broadcast together: {shapes}") from None
        quiet = getattr(self.xp, "errstate", None)  # numpy warns on domain errors; cupy never does
        with (quiet(all="ignore") if quiet else contextlib.nullcontext()):  # reported below, by name
            outputs = tuple(
                self.xp.broadcast_to(self.xp.asarray(out, dtype=self.xp.float64), shape)
                for out in self.function(*arrays)
            )
        for expression, out in zip(self.expressions, outputs):
            if bool(self.xp.isnan(out).any()):
                raise ValueError(f"{expression} is undefined (NaN) at {self._first_nan(out, arrays, shape)}: "
                                 "outside its domain, or an overflow")
        if self.rounding and self.backend_name == "numpy":
            outputs = self._rounded(outputs, arrays)
        return outputs[0] if self.single else outputs

    def _first_nan(self, out, arrays: list, shape: tuple) -> str:
        """The arguments' values where ``out`` is first NaN, as ``a = 0.7925, b = 1`` (and where in the array)."""
        where = tuple(int(i) for i in to_numpy(self.xp.argwhere(self.xp.isnan(out))[0])) if shape else ()
        values = [float(to_numpy(self.xp.broadcast_to(a, shape)[where])) for a in arrays]
        at = ", ".join(f"{s} = {v:.6g}" for s, v in zip(self.arguments, values)) or "no arguments"
        return at + (f" (entry {where} of the {shape} result)" if shape else "")

    def _rounded(self, outputs: tuple, arrays: list) -> tuple:
        """The outputs as [`Rounded`][attnverify.derivations.rounded.Rounded] values carrying the size of their terms
        (M(e) of `.rounding.magnitude`, generated once); an output whose M(e) has no array form, or is not finite
        at these arguments, stays a plain array (no scale is claimed)."""
        from .rounded import Rounded

        scales = _SCALE_EVALUATORS.get(id(self))
        if scales is None:
            scales = _SCALE_EVALUATORS[id(self)] = _scale_evaluators(self.expressions, self.arguments)
        rounded = []
        for out, scale in zip(outputs, scales):
            if scale is not None:
                with self.xp.errstate(all="ignore"):
                    try:
                        size = scale(*arrays)
                    except (ValueError, TypeError, ArithmeticError):
                        size = None
                if size is not None and bool(self.xp.isfinite(size).all()):
                    out = Rounded(out, self.xp.broadcast_to(size, out.shape))
            rounded.append(out)
        return tuple(rounded)


_CACHE: dict[tuple, Evaluator] = {}
_SCALE_EVALUATORS: dict[int, list] = {}  # by id of a cached (never freed) Evaluator


def _scale_evaluators(expressions: tuple, arguments: tuple) -> list:
    """One plain evaluator of M(e) per expression (None where M(e) has no rule or no array form)."""
    found = []
    for expression in expressions:
        try:
            found.append(rounding_scale(expression, arguments))
        except (NotImplementedError, ValueError, TypeError, AttributeError):
            found.append(None)
    return found


def _argument(symbol: sympy.Symbol, value: Any, xp: ModuleType) -> Any:
    """One argument of an evaluator as a finite float64 array, else an error naming its symbol (printed only
    then: an evaluator inside a descent loop is called 10⁴ times, and printing the names cost 15% of it)."""
    if isinstance(value, (bool, str, bytes)) or value is None:
        raise TypeError(f"argument {symbol} must be a real number or an array of them, got {value!r}")
    if type(value) is float or type(value) is int:  # the common scalar: checked without an array round trip
        try:
            number = float(value)
        except OverflowError:
            raise ValueError(f"argument {symbol} must be finite, got an integer beyond float64") from None
        if not math.isfinite(number):
            raise ValueError(f"argument {symbol} must be finite, got NaN or infinity")
        sign = _SIGNS.get(_declared_sign(symbol))
        if sign is not None and not sign(number):
            raise ValueError(_sign_message(symbol, number))
        return xp.asarray(number, dtype=xp.float64)
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind in ("c", "b", "O", "U", "S", "M", "m") or isinstance(value, complex):
        # a complex array would lose its imaginary part to the cast, silently; booleans and objects are no numbers
        raise TypeError(f"argument {symbol} must be a real number or an array of them, got "
                        f"{'complex' if isinstance(value, complex) else value.dtype}")
    if xp.__name__ == "numpy" and on_device(value):
        raise TypeError(f"argument {symbol} is a device (cupy) array, but this evaluator runs on numpy: make it "
                        f"with backend='cupy', or pass {symbol}.get()")
    try:
        arr = xp.asarray(value, dtype=xp.float64)
    except (TypeError, ValueError, OverflowError) as error:
        raise TypeError(f"argument {symbol} must be a real number or an array of them ({error})") from None
    sign = _SIGNS.get(_declared_sign(symbol))
    admissible = xp.isfinite(arr) if sign is None else xp.isfinite(arr) & sign(arr)  # one reduction, one read
    if not bool(admissible.all()):
        if not bool(xp.isfinite(arr).all()):
            raise ValueError(f"argument {symbol} must be finite, got NaN or infinity")
        wrong = float(to_numpy(arr[~sign(arr)].ravel()[0]))
        raise ValueError(_sign_message(symbol, wrong))
    return arr


_SIGNS = {"positive": lambda x: x >= 0, "nonnegative": lambda x: x >= 0,
          "negative": lambda x: x <= 0, "nonpositive": lambda x: x <= 0}
"""The values a symbol's declared sign admits: its sign, or 0 (where a formula often has its limit, as at the
boundary of a drawn range)."""


@lru_cache(maxsize=1024)
def _declared_sign(symbol: sympy.Symbol) -> str | None:
    """``positive``, ``nonnegative``, ``negative``, ``nonpositive`` as the symbol is declared, else None (asked of
    sympy once per symbol: an evaluator checks its arguments on every call, inside descents and samplers)."""
    for sign in ("positive", "nonnegative", "negative", "nonpositive"):
        if getattr(symbol, f"is_{sign}", None):
            return sign
    return None




def _sign_message(symbol: sympy.Symbol, value: float) -> str:
    sign = _declared_sign(symbol)
    where = "[0, inf)" if sign in ("positive", "nonnegative") else "(-inf, 0]"
    return (f"argument {symbol} must be in {where} (its symbol is declared {sign}, and the derivation assumed it), "
            f"got {value:g}")


def generate_source(
    expressions: Sequence[sympy.Expr], arguments: Sequence[sympy.Symbol], name: str = "evaluate", *,
    backend: Any = None,
) -> tuple[str, dict[str, type]]:
    """Python source of ``name(*arguments)`` returning a tuple of the expressions, after CSE; with ``backend``,
    a function that backend lacks is refused here, at print time."""
    printer = BackendPrinter(backend=backend)
    names = [_identifier(a, i) for i, a in enumerate(arguments)]
    renaming = {a: sympy.Symbol(n, real=True) for a, n in zip(arguments, names)}
    exprs = [sympy.sympify(e).xreplace(renaming) for e in expressions]
    replacements, reduced = sympy.cse(exprs, symbols=sympy.numbered_symbols("_cse"), optimizations="basic")
    lines = [f"def {name}({', '.join(names)}):"]
    lines += [f"    {sym} = {printer.doprint(value)}" for sym, value in replacements]
    lines.append(f"    return ({', '.join(printer.doprint(e) for e in reduced)},)")
    return "\n".join(lines) + "\n", printer.implementations


def evaluator(
    expressions: sympy.Expr | Sequence[sympy.Expr],
    arguments: Sequence[sympy.Symbol],
    backend: Any = None,
    *,
    rounding: bool = True,
) -> Evaluator:
    """Generate (or fetch from the cache) an array evaluator of ``expressions``: for one expression it
    returns one array, for a sequence of expressions (a one-element list too) a tuple of arrays.

    ``rounding``: on numpy, each result is a [`Rounded`][attnverify.derivations.rounded.Rounded] array carrying the
    size of the terms it was computed from (`magnitude`, evaluated beside
    it), so that a comparison takes its round-off floor there, through any arithmetic done on it afterwards
    (``2 * k``, ``k - k0``). It costs one more generated evaluation per call; ``rounding=False`` returns plain
    arrays (inner loops that compare nothing).

    ``backend``: 'numpy' (None), 'cupy' or a `Backend`. A function the backend
    lacks (cupyx has no general-order Bessel functions) is refused when the evaluator is made.
    """
    backend = backend_argument(backend)
    single = isinstance(expressions, sympy.Basic)
    exprs = (expressions,) if single else tuple(sympy.sympify(e) for e in expressions)
    args = tuple(arguments)
    key = (exprs, args, backend.name, single, bool(rounding))
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    free = set().union(*(e.free_symbols for e in exprs)) - set(args)
    if free:
        raise ValueError(f"expressions depend on symbols not among the arguments: {sorted(map(str, free))}")
    source, implementations = generate_source(exprs, args, backend=backend)
    namespace: dict[str, Any] = {"xp": backend.xp, "special": backend.special}
    for impl_name, cls in implementations.items():
        namespace[impl_name] = partial(cls.array_implementation, backend)
    exec(compile(source, f"<attnverify generated, {backend.name}>", "exec"), namespace)
    result = Evaluator(args, exprs, backend.name, source, namespace["evaluate"], backend.xp, single, bool(rounding))
    _CACHE[key] = result
    return result


def rounding_scale(expression: sympy.Expr, arguments: Sequence[sympy.Symbol], backend=None) -> Evaluator:
    r"""An evaluator of $M(\text{expression})$ (`.rounding.magnitude`) over ``arguments``: the ``scale=`` of a
    comparison whose side is ``expression`` evaluated in float64 (what a numpy evaluator's results carry by
    themselves)."""
    return evaluator(magnitude(expression), list(arguments), backend=backend, rounding=False)


def term_size(expression: sympy.Expr, arguments: Sequence[sympy.Symbol], backend=None) -> Evaluator:
    r"""An evaluator of the term size $T(\text{expression})$ (`.rounding.magnitude` with ``inputs=False``):
    $\lvert\text{value}\rvert$ unless a sum in it cancels, the size a relative error of the value is measured
    against."""
    return evaluator(magnitude(expression, inputs=False), list(arguments), backend=backend, rounding=False)


def mpmath_evaluator(expressions: sympy.Expr | Sequence[sympy.Expr], arguments: Sequence[sympy.Symbol]) -> Callable:
    """An mpmath evaluator of ``expressions`` (at the caller's ``mpmath.workdps``), for limits
    where float64 cancels: functions without an mpmath counterpart declare ``mpmath_implementation``."""
    single = isinstance(expressions, sympy.Basic)
    exprs = [expressions] if single else list(expressions)
    functions = set().union(*(e.atoms(sympy.Function) for e in exprs))
    namespace = {
        type(f).__name__: type(f).mpmath_implementation
        for f in functions
        if hasattr(type(f), "mpmath_implementation")
    }
    f = sympy.lambdify(list(arguments), exprs[0] if single else exprs, modules=[namespace, "mpmath"])
    return f

