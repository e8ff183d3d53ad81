"""How a [`Theory`][attnverify.theory_form.Theory] calls the functions a theory writes: by the names of their
parameters.

A claim, an expected value or a simulator is called with the drawn parameters by keyword (and ``ctx`` or ``rng`` when
it asks for them); a parameter without a strategy, a strategy without a parameter and an option given a strategy are
refused by name, at definition where the names are known.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping

from hypothesis import strategies as st

from ..base.arguments import closest


def signature_call(function: Callable, names: tuple[str, ...] | None, what: str) -> Callable[[dict, Any], Any]:
    """``(params, ctx) -> function(**params[, ctx=ctx][, rng=ctx.rng])``, its arguments checked by name: now, or,
    when the names are known only as they are drawn (``names`` None: one strategy draws the dict), at the first
    call."""
    parameters = inspect.signature(function).parameters
    wants = [n for n, p in parameters.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]

    def check(given) -> None:
        missing = [n for n in wants if n not in given and n not in ("ctx", "rng")
                   and parameters[n].default is inspect.Parameter.empty]
        unused = [n for n in given if n not in wants] if not any(
            p.kind == p.VAR_KEYWORD for p in parameters.values()) else []
        if missing or unused:
            raise TypeError(f"{what} {function.__name__}: "
                            + "; ".join(([f"argument(s) {', '.join(missing)} have no strategy (give "
                                          + ", ".join(f"{n}=st.…" for n in missing) + ")"] if missing else [])
                                        + ([f"strateg(y/ies) {', '.join(unused)} name no argument of it"]
                                           if unused else [])))

    if names is not None:
        check(names)
    with_ctx, with_rng = "ctx" in wants, "rng" in wants

    def call(p: dict, ctx) -> Any:
        if names is None:
            check(tuple(p))
        extra = {}
        if with_ctx:
            extra["ctx"] = ctx
        if with_rng:
            extra["rng"] = ctx.rng
        return function(**p, **extra)

    call.__wrapped__ = function  # inspect.unwrap(claim.check): the function the theory wrote
    return call


def accepts_the_drawn(expected: Callable, names: tuple[str, ...], what: str = "expected") -> None:
    """A TypeError naming each drawn parameter that the function ``expected``, the option ``what`` (``expected`` of
    [`Theory.monte_carlo`][attnverify.theory_form.Theory.monte_carlo], a ``bias`` or ``resolution`` given as a
    function), cannot take by name (it is called with every one of them), and the parameters it has; a value that
    is no function, or is one per profile, is looked into for its functions."""
    if isinstance(expected, dict):
        for profile, value in expected.items():
            accepts_the_drawn(value, names, f"{what}[{profile!r}]")
        return
    if not callable(expected):
        return
    try:
        parameters = inspect.signature(expected).parameters
    except (TypeError, ValueError):  # a builtin without a signature: its call says what it refuses
        return
    if any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
        return
    takes = [n for n, p in parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    refused = [n for n in names if n not in takes]
    if refused:
        raise TypeError(f"{what} {getattr(expected, '__name__', repr(expected))} must accept the drawn parameter"
                        f"{'s' if len(refused) > 1 else ''} {', '.join(repr(n) for n in refused)} (its parameters: "
                        f"{', '.join(parameters) or 'none'}); add {', '.join(f'{n}=...' for n in refused)} or **p")


def options_not_strategies(what: str, strategies: Mapping[str, Any] | None = None, /, **options) -> None:
    """An option given a strategy is a parameter that took an option's name: say so, by name. A keyword among the
    ``strategies`` that is no strategy and whose name is close to an option's is that option misspelt: say which."""
    taken = [n for n, v in options.items() if isinstance(v, st.SearchStrategy)]
    if taken:
        raise TypeError(f"{', '.join(taken)} {'is an option' if len(taken) == 1 else 'are options'} of {what}, not a "
                        f"parameter: rename the parameter")
    for name, value in (strategies or {}).items():
        close = closest(name, list(options))
        if close and not isinstance(value, st.SearchStrategy):
            raise TypeError(f"{what} has no option {name}=: did you mean {close}=? (a parameter of the claims takes a "
                            "hypothesis strategy)")



def statement_of(statement: str | None, function: Callable, name: str | None) -> str:
    text = statement or " ".join((function.__doc__ or "").split())
    if not text:
        raise ValueError(f"claim {name or function.__name__} needs a statement: statement=\"...\" or a docstring")
    return text
