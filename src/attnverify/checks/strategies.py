"""hypothesis.strategies, with bounded numbers that know their ends: the ``st`` of a claim.

Everything ``hypothesis.strategies`` offers, unchanged, except ``floats(a, b)`` and ``integers(a, b)`` with both
ends finite: they draw exactly as hypothesis' own, and inside `drawing_ends` draw their low (or high) end, so
that the claim runner checks every such parameter at both ends (`attnverify.checks.runner`).
`declared_ranges` reads the declared range of each named parameter back.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import math
from typing import Any, Iterator

import numpy as np
from hypothesis import strategies as _hypothesis
from hypothesis.strategies import *  # noqa: F401,F403  (the whole of hypothesis.strategies)
from hypothesis.strategies import __all__ as _all

__all__ = [*_all, "declared_ranges", "drawing_ends", "points_in", "range_of"]

#: "low" or "high" while the runner draws a claim's ends (None: draw as hypothesis does)
_END: contextvars.ContextVar[str | None] = contextvars.ContextVar("attnverify_end", default=None)
#: the ranges of the bounded strategies drawn at an end, inside `drawing_ends`
_AT_END: contextvars.ContextVar[list | None] = contextvars.ContextVar("attnverify_at_end", default=None)

_FLOAT_TYPES = {16: np.float16, 32: np.float32, 64: np.float64}


def _range(function_name: str, args: tuple, kwargs: dict) -> tuple[float, float] | tuple[int, int] | None:
    """The least and the greatest value ``st.<function_name>(*args, **kwargs)`` can draw (floats: after
    ``exclude_min``/``exclude_max``, in its ``width``), or None unless both ends are finite."""
    function = {"floats": _hypothesis.floats, "integers": _hypothesis.integers}.get(function_name)
    if function is None:
        return None
    try:
        bound = inspect.signature(function).bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    low, high = bound.arguments["min_value"], bound.arguments["max_value"]
    if low is None or high is None:
        return None
    if function_name == "integers":
        return int(low), int(high)
    if not (math.isfinite(float(low)) and math.isfinite(float(high))):
        return None
    kind = _FLOAT_TYPES.get(bound.arguments["width"], np.float64)
    low, high = kind(float(low)), kind(float(high))
    if bound.arguments["exclude_min"]:
        low = np.nextafter(low, kind(np.inf))
    if bound.arguments["exclude_max"]:
        high = np.nextafter(high, kind(-np.inf))
    return float(low), float(high)


def _lazy_call(strategy: Any) -> tuple[str, tuple, dict] | None:
    """The function name and arguments a lazily built hypothesis strategy was made with (None for another)."""
    function = getattr(strategy, "function", None)
    args = getattr(strategy, "_LazyStrategy__args", None)
    kwargs = getattr(strategy, "_LazyStrategy__kwargs", None)
    if function is None or args is None or kwargs is None or getattr(strategy, "_transformations", ()):
        return None
    return getattr(function, "__name__", ""), tuple(args), dict(kwargs)


def range_of(strategy: Any) -> tuple[float, float] | tuple[int, int] | None:
    """The declared range (low, high) of ``st.floats(a, b)`` or ``st.integers(a, b)`` with both ends finite, this
    module's or hypothesis' own (not mapped or filtered); None for any other strategy."""
    call = _lazy_call(strategy)
    return None if call is None else _range(*call)


def declared_ranges(parameters: Any) -> dict[str, tuple | None]:
    """The declared range of each named parameter of ``st.fixed_dictionaries({...})``, in its order (`range_of`;
    None where the strategy states none); {} for a strategy that draws its dict otherwise (``flatmap``: the names
    are known only as they are drawn)."""
    return {name: range_of(strategy) for name, strategy in (_named_strategies(parameters) or {}).items()}


def _named_strategies(parameters: Any) -> dict[str, Any] | None:
    """The strategy of each named entry of ``st.fixed_dictionaries({...})`` (its optional ones too), in its order;
    None for a strategy that draws its dict otherwise."""
    call = _lazy_call(parameters)
    if call is None or call[0] != "fixed_dictionaries":
        return None
    _, args, kwargs = call
    return {**dict(args[0] if args else kwargs.get("mapping") or {}), **dict(kwargs.get("optional") or {})}


def points_in(parameters: Any) -> int | None:
    """How many distinct points ``st.fixed_dictionaries({...})`` can draw where each entry can draw finitely many
    values (``just``: 1, ``sampled_from``: its elements, ``booleans``: 2, bounded ``integers``: their count); None
    where any entry draws from a continuum or the strategy is another (what a claim's examples can be at most)."""
    named = _named_strategies(parameters)
    if named is None:
        return None
    count = 1
    for strategy in named.values():
        values = _values_of(strategy)
        if values is None:
            return None
        count *= values
    return count


def _values_of(strategy: Any) -> int | None:
    """How many values one entry's strategy can draw, where it is finite and not mapped or filtered (else None)."""
    if getattr(strategy, "_transformations", ()):
        return None
    kind = type(strategy).__name__
    if kind == "JustStrategy":
        return 1
    if kind == "SampledFromStrategy":
        return len(strategy.elements)
    call = _lazy_call(strategy)
    if call is not None and call[0] == "booleans":
        return 2
    bounds = None if call is None or call[0] != "integers" else _range(*call)
    return None if bounds is None else bounds[1] - bounds[0] + 1


@contextlib.contextmanager
def drawing_ends(end: str) -> Iterator[list]:
    """Inside, every bounded ``floats``/``integers`` of this module draws its ``end`` ("low" or "high") and takes
    no choice of hypothesis; yields the list of the ranges drawn so (empty: the strategy has no bounded number),
    the enclosing one's when nested in the same end."""
    if end not in ("low", "high"):
        raise ValueError(f"end must be 'low' or 'high', got {end!r}")
    if _END.get() == end:
        yield _AT_END.get()
        return
    drawn: list = []
    tokens = _END.set(end), _AT_END.set(drawn)
    try:
        yield drawn
    finally:
        _AT_END.reset(tokens[1])
        _END.reset(tokens[0])


def _ends_aware(name: str):
    """A composite strategy named as hypothesis' ``name`` and taking its arguments (so it shows as ``floats(0, 3.14)``
    and claim definitions recognise it as hypothesis' scalar) that draws as it does, or its end."""
    plain = getattr(_hypothesis, name)

    def drawn(draw, *args, **kwargs):
        end = _END.get()
        if end is None:
            return draw(plain(*args, **kwargs))
        bounds = _range(name, args, kwargs)
        _AT_END.get().append(bounds)
        return bounds[0] if end == "low" else bounds[1]

    drawn.__name__ = drawn.__qualname__ = name
    ends_aware = _hypothesis.composite(drawn)

    @functools.wraps(plain)
    def strategy(*args, **kwargs):
        made = plain(*args, **kwargs)
        made.validate()  # hypothesis' own argument errors, where the strategy is written
        if _range(name, args, kwargs) is None:
            return made
        bound = inspect.signature(plain).bind(*args, **kwargs)  # the ends as positional: shown as floats(0, 1)
        return ends_aware(*bound.args, **bound.kwargs)

    strategy.__doc__ = (f"hypothesis' ``{name}``; with both ends finite, the claim runner also draws each end "
                        f"(`attnverify.checks.strategies`).\n\n" + (plain.__doc__ or ""))
    return strategy


floats = _ends_aware("floats")
integers = _ends_aware("integers")
