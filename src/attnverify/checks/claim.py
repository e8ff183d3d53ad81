"""A claim: a statement, a hypothesis strategy for its parameters, and a check of one example.

A theory module defines its claims with the [`claim`][attnverify.checks.claim.claim] decorator; so does a theorist's own
file run by ``attnverify verify FILE.py``. The check receives the drawn parameters and a
[`Context`][attnverify.checks.claim.Context] (profile, backend, a seeded random generator) and returns an
[`Evidence`][attnverify.checks.evidence.Evidence].
"""

from __future__ import annotations

import contextvars
import inspect
import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Literal

import numpy as np
from hypothesis import strategies as st

from ..execution.settings import RunSettings
from ..execution.store import Store
from ..base import MOST_EXAMPLES, PROFILES
from ..base.arguments import Checked, checked, function, integer, one_of, refusals_about
from ..base.backend import Backend
from .evidence import Evidence


#: What a claim may be expected to come out as (the verdicts of `.evidence`).
EXPECTATIONS = ("holds", "refuted", "inconclusive")


def examples_needed(exposed_fraction: float, miss_probability: float = 0.01) -> int:
    r"""How many independent examples find a flaw that shows on a fraction ``exposed_fraction`` of the
    parameter space with probability at least 1 − ``miss_probability``: the smallest $n$ with
    $(1 - q)^n \le \delta$, i.e. $n = \lceil \log\delta / \log(1 - q)\rceil$. A wrong constant that only shows where
    its term is large (say a fifth of the range) needs $n = 21$ examples for 99%; at five examples it is missed one
    time in three. (Each example must itself decide: a Monte Carlo tolerance of 5 SE sees a bias only
    where it exceeds about 5 SE.)"""
    for name, value in (("exposed_fraction", exposed_fraction), ("miss_probability", miss_probability)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    q = float(exposed_fraction)
    delta = float(miss_probability)
    if not 0 < q < 1:
        raise ValueError(f"exposed_fraction must be in (0, 1), got {exposed_fraction!r}")
    if not 0 < delta < 1:
        raise ValueError(f"miss_probability must be in (0, 1), got {miss_probability!r}")
    return max(1, math.ceil(math.log(delta) / math.log1p(-q) - 1e-12))


DEFAULT_EXAMPLES = {"quick": examples_needed(0.2), "thorough": examples_needed(0.05)}
"""Examples per profile of a claim that does not say: a flaw showing on 20% of the parameters is found
with probability 99% in the quick profile (21 examples), one showing on 5% in the thorough one (90)."""
_NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$")
_PACKAGE = Path(__file__).resolve().parent.parent


def in_package(filename: str) -> bool:
    """Whether ``filename`` is one of attnverify's own source files (not a user's)."""
    try:
        return Path(filename).resolve().is_relative_to(_PACKAGE)
    except (OSError, ValueError):
        return False

#: hypothesis strategies that never draw a dict: a claim's parameters given as one of these is a mistake
_SCALAR_STRATEGIES = {"floats", "integers", "booleans", "text", "characters", "lists", "tuples", "complex_numbers",
                      "decimals", "fractions", "binary", "none", "sets", "frozensets", "dates", "datetimes",
                      "from_regex", "uuids", "emails", "arrays"}


#: while the tool loads a user's file: the bad claim names met so far, with their lines (listed together after it)
BAD_NAMES: contextvars.ContextVar[list | None] = contextvars.ContextVar("attnverify_bad_claim_names", default=None)


def _definition_line() -> tuple[str, int]:
    import sys

    frame = sys._getframe(2)
    return frame.f_code.co_filename, frame.f_lineno


def _line_in(origin: str) -> int:
    """The line of the innermost frame now running in the file ``origin`` (where a claim is being defined), else 0."""
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith("<") and not in_package(filename):
            try:
                if str(Path(filename).resolve()) == origin:
                    return frame.f_lineno
            except (OSError, ValueError):
                pass
        frame = frame.f_back
    return 0


def claim_examples(examples: Any, name: str) -> dict[str, int]:
    """A claim's examples per profile: a dict with a positive int for each of `PROFILES` (None: the
    defaults); anything else is refused here, naming the claim."""
    with refusals_about(f"claim {name!r}"):
        return _examples("examples", examples)


def _examples(name: str, examples: Any) -> dict[str, int]:
    """The rule of `claim_examples` (``name``: the field's)."""
    if examples is None:
        return dict(DEFAULT_EXAMPLES)
    if not isinstance(examples, dict):
        raise TypeError(f"{name} must be a dict of profile → count, e.g. "
                        f"{{'quick': 21, 'thorough': 90}}, got {examples!r} ({type(examples).__name__})")
    unknown = [key for key in examples if key not in PROFILES]
    if unknown:
        raise ValueError(f"{name} names {unknown[0]!r}, which is not a profile: give a count for each of "
                         f"{', '.join(map(repr, PROFILES))}")
    for profile in PROFILES:
        count = examples.get(profile)
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)) \
                or not 1 <= count <= MOST_EXAMPLES:
            raise ValueError(f"{name}[{profile!r}] must be an int in [1, {MOST_EXAMPLES:,}], got {count!r}")
    return {profile: int(count) for profile, count in examples.items()}


def is_claim_name(name: Any) -> bool:
    """Whether ``name`` is a claim's name: ``theory.name``, a lower_snake_case theory, then identifiers (the papers'
    capitals allowed)."""
    return isinstance(name, str) and _NAME.match(name) is not None


def check_name(name: Any) -> str:
    """``name`` if it is a claim's name ([`is_claim_name`][attnverify.checks.claim.is_claim_name]), else a ValueError
    saying so."""
    if not is_claim_name(name):
        raise ValueError(f"claim name must be theory.name: a lower_snake_case theory, then identifiers (the papers' "
                         f"capitals allowed, e.g. 'attention_paths.U_independent_of_T'), got {name!r}")
    return name


def _claim_name(field: str, name: Any) -> str:
    """The rule of a claim's name (`check_name`, whose message says what a name is)."""
    return check_name(name)


def claim_parameters(parameters: Any, name: str) -> st.SearchStrategy:
    """A claim's parameter strategy: a dict of name → strategy (as ``st.fixed_dictionaries`` takes it, keys the
    check's parameter names), or a strategy that draws such dicts. A strategy that can only draw scalars, a dict
    entry that is not a strategy, or anything else is refused here, at definition, naming the claim."""
    with refusals_about(f"claim {name!r}"):
        return _parameters("parameters", parameters)


def _parameters(name: str, parameters: Any) -> st.SearchStrategy:
    """The rule of `claim_parameters` (``name``: the field's)."""
    if isinstance(parameters, dict):
        bad = {k: v for k, v in parameters.items() if not isinstance(v, st.SearchStrategy)}
        keys = [k for k in parameters if not isinstance(k, str) or not k.isidentifier()]
        if keys:
            raise ValueError(f"parameter names must be identifiers, got {keys}")
        if bad:
            raise TypeError("every parameter needs a hypothesis strategy; "
                            + "; ".join(f"{k}= got the function {getattr(v, '__name__', type(v).__name__)}, not a "
                                        "strategy" if callable(v) else
                                        f"{k}={v!r} is not a strategy (st.just({v!r}) for a constant)"
                                        for k, v in bad.items()))
        return st.fixed_dictionaries(parameters)
    if not isinstance(parameters, st.SearchStrategy):
        raise TypeError(f"{name} must be a dict of name → hypothesis strategy (or "
                        f"st.fixed_dictionaries({{...}})), got {type(parameters).__name__}")
    maker = getattr(getattr(parameters, "function", None), "__name__", None)
    if maker in _SCALAR_STRATEGIES and not getattr(parameters, "_transformations", ()):  # .map may make a dict
        raise TypeError(f"{name}=st.{maker}(...) draws one value with no name; give a dict "
                        f"of named strategies, e.g. {name}={{'x': st.{maker}(...)}}")
    return parameters


def _origin(check: Callable) -> str:
    """The user's file a check was written in ("" for the package's own claims)."""
    try:
        source = inspect.getsourcefile(check)
    except TypeError:
        return ""
    return "" if not source or in_package(source) else str(Path(source).resolve())


@dataclass(frozen=True)
class Context:
    """What a check may use besides its parameters: the run's settings (``ctx.settings``, a
    [`RunSettings`][attnverify.execution.settings.RunSettings]: ``ctx.profile``, ``ctx.backend`` (a Backend),
    ``ctx.run_seed`` and the run's store of experiment results, shared by the claims and report sections of one run:
    ``ctx.store.get(experiment, **parameters)``) and the example's random generator ``rng``, seeded by its ``seed``."""

    settings: RunSettings
    rng: np.random.Generator
    seed: int

    @property
    def profile(self) -> str:
        return self.settings.profile

    @property
    def backend(self) -> Backend:
        return self.settings.array_backend

    @property
    def run_seed(self) -> int:
        return self.settings.seed

    @property
    def store(self) -> Store:
        return self.settings.store

    def backend_rng(self) -> Any:
        """A random Generator of the run's backend: ``rng`` itself on numpy; on cupy, cupy's Generator seeded by a
        draw from ``rng`` (a computation refuses the other backend's Generator)."""
        if self.backend.name == "numpy":
            return self.rng
        return self.backend.random(int(self.rng.integers(2**63)))

    def choose(self, *, quick: Any, thorough: Any) -> Any:
        """The value for the current profile (sample sizes, grid sizes, numbers of seeds)."""
        return self.settings.choose(quick=quick, thorough=thorough)


@dataclass(frozen=True)
class Claim(Checked):
    """A checkable statement about a theory.

    ``name`` is namespaced by theory (``single_location.oracle_risk``). ``expect`` is
    ``"holds"`` for a theorem, ``"refuted"`` for a statement the tool is meant to disprove, and
    ``"inconclusive"`` for one the run is known to be too small to decide (say why in the statement).
    ``examples`` gives how many parameter draws each profile makes. ``origin`` is the user's file the claim
    was written in ("" for a built-in): its replay is ``attnverify verify ORIGIN --only NAME``; ``origin_line`` the
    line of ORIGIN that defined it (found at definition; 0 when unknown).
    """

    name: str = checked(_claim_name)
    statement: str
    parameters: st.SearchStrategy = checked(_parameters)
    check: Callable[[dict, Context], Evidence] = checked(function, named="check (params, ctx) -> Evidence")
    source: str = ""
    expect: Literal["holds", "refuted", "inconclusive"] = checked(one_of, EXPECTATIONS, default="holds")
    examples: dict[str, int] = checked(_examples, default_factory=lambda: dict(DEFAULT_EXAMPLES))
    shrink_budget: int = checked(integer, 0, default=40, named="shrink_budget (checks spent shrinking a failure)")
    origin: str = ""
    origin_line: int = field(default=0, compare=False)

    def _subject(self) -> str:
        return f"claim {self.name!r}" if is_claim_name(self.name) else ""

    def _check_fields(self) -> None:
        if self.origin and not self.origin_line:
            object.__setattr__(self, "origin_line", _line_in(self.origin))

    @property
    def theory(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def replay_command(self) -> str:
        """The command that runs this claim: ``attnverify verify FILE`` for a user's file, else ``attnverify check``."""
        return f"attnverify verify {shlex.quote(self.origin)}" if self.origin else "attnverify check"

    def __repr__(self) -> str:
        return f"<Claim {self.name} (expect {self.expect}){' from ' + self.origin if self.origin else ''}>"


def claim(
    name: str,
    *,
    parameters: st.SearchStrategy | dict,
    statement: str | None = None,
    source: str = "",
    expect: Literal["holds", "refuted", "inconclusive"] = "holds",
    examples: dict[str, int] | None = None,
    shrink_budget: int = 40,
    origin: str | None = None,
) -> Callable[[Callable[[dict, Context], Evidence]], Claim]:
    """Decorator turning ``check(params, ctx) -> Evidence`` into a [`Claim`][attnverify.checks.claim.Claim].

    The statement defaults to the check's docstring; ``examples`` (per profile) defaults to
    [`DEFAULT_EXAMPLES`][attnverify.checks.claim.DEFAULT_EXAMPLES], which follows
    [`examples_needed`][attnverify.checks.claim.examples_needed]. ``parameters``: a dict of name → strategy or a
    strategy drawing such dicts; name and parameters are checked here, at definition. ``origin``: the file its replay
    runs (default: the check's file when it is outside the package, "" for a built-in).
    """
    if BAD_NAMES.get() is not None and not is_claim_name(name):
        BAD_NAMES.get().append((name, _definition_line()))  # the loader lists every bad name of the file at once
        return lambda check: None
    check_name(name)
    parameters = claim_parameters(parameters, name)
    claim_examples(examples, name)

    def wrap(check: Callable[[dict, Context], Evidence]) -> Claim:
        text = statement or " ".join((check.__doc__ or "").split())
        if not text:
            raise ValueError(f"claim {name!r} needs a statement (argument or docstring)")
        return Claim(
            name=name,
            statement=text,
            parameters=parameters,
            check=check,
            source=source,
            expect=expect,
            examples=claim_examples(examples, name),
            shrink_budget=shrink_budget,
            origin=_origin(check) if origin is None else origin,
        )

    return wrap


def select(things: Iterable, pattern: str | None) -> list:
    """The claims or theories (anything with a ``name``) named ``pattern`` exactly, else those whose name contains
    it; all of them when ``pattern`` is None or empty. The one selector of ``check``, ``verify``, ``report --only``
    and the tools."""
    things = list(things)
    if not pattern:
        return things
    return [t for t in things if t.name == pattern] or [t for t in things if pattern in t.name]
