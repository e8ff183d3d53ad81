"""A derivation registered on a [`Theory`][attnverify.theory_form.Theory], and its named results as array functions.

`DerivationHandle` derives once per process (kept on disk, `attnverify.derivations.kept`);
`DerivedFunction` is a named result code-generated for numpy or cupy and called by keyword, which also
reports its terms' round-off scale inside a Monte Carlo claim (`SCALES`).
"""

from __future__ import annotations

import contextvars
import functools
from typing import Any, Callable

from ..base.arguments import name_mismatch

SCALES: contextvars.ContextVar[list | None] = contextvars.ContextVar("attnverify_rounding_scales", default=None)
"""While a Monte Carlo claim evaluates its expected value: the (value, round-off scale, term size as a function of no
arguments, evaluated only where a relative resolution asks for it) of each derived function called
(`attnverify.theory_form.monte_carlo.expected_value`)."""


class DerivedFunction:
    """A derivation's named result as a function of its free symbols, called by keyword (``f(L=4, sigma=0.5)``),
    with numpy arrays or scalars; code-generated from the sympy expression
    ([`evaluator`][attnverify.derivations.codegen.evaluator]). Inside a Monte Carlo claim it also reports the round-off
    scale of its terms ([`rounding_scale`][attnverify.derivations.codegen.rounding_scale]), so an exact zero is compared
    up to round-off."""

    def __init__(self, derivation_name: str, result: str, expression, *, symbols: tuple | None = None):
        self.derivation_name, self.result, self.expression = derivation_name, result, expression
        # a derivative keeps the symbols of what it differentiates (one may drop out of a partial)
        self.symbols = symbols or tuple(sorted(expression.free_symbols, key=lambda s: s.name))
        self.names = tuple(s.name for s in self.symbols)
        self._derivatives: dict[tuple[str, ...], DerivedFunction] = {}
        self._array_functions: dict[tuple, Any] = {}
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"result {result!r} of {derivation_name} has two symbols of one name: {self.names}")

    @functools.cached_property
    def _evaluate(self):
        from ..derivations.codegen import evaluator

        return evaluator(self._evaluated, list(self.symbols))

    @property
    def _evaluated(self):
        """What the generator is given: the expression, or the list of a tuple's (one array each)."""
        import sympy

        return list(self.expression) if isinstance(self.expression, sympy.Tuple) else self.expression

    @functools.cached_property
    def _scale(self):
        from ..derivations.codegen import rounding_scale

        return rounding_scale(self.expression, list(self.symbols))

    @functools.cached_property
    def _terms(self):
        from ..derivations.codegen import term_size

        return term_size(self.expression, list(self.symbols))

    @property
    def source(self) -> str:
        """The generated numpy code that evaluates the result (after common subexpressions are taken out)."""
        return self._evaluate.source

    def _arguments(self, values: dict) -> list:
        wrong = name_mismatch(list(values), self.names, unknown="no symbol named")
        if wrong:
            raise TypeError(f"{self.derivation_name}.{self.result} takes {', '.join(self.names) or 'no arguments'}"
                            + wrong)
        return [values[n] for n in self.names]

    def __call__(self, *positional, **values):
        if positional:  # by keyword only: the symbols' order is sympy's, not the reader's
            raise TypeError(f"{self.derivation_name}.{self.result} takes its symbols by keyword: "
                            f"{self.result}({', '.join(f'{n}=…' for n in self.names)}), got {len(positional)} "
                            "positional")
        arguments = self._arguments(values)
        value = self._evaluate(*arguments)
        recording = SCALES.get()
        if recording is not None and not isinstance(value, tuple):  # a tuple of results is no expected value
            from ..derivations.rounded import carried_scale

            carried = carried_scale(value)
            recording.append((value, self._scale(*arguments) if carried is None else carried,
                              lambda: self._terms(*arguments)))  # generated only when asked for
        return value

    def array_function(self, *names: str, backend: Any = None):
        """The result as a generated array function on ``backend`` ('numpy' (None), 'cupy' or a `Backend`), called
        by position in the order of ``names`` (default `names`), returning plain arrays (no round-off scale carried):
        for a loop on the device, or one that checked its arguments once. Every symbol of `names` must be named (of a
        derivative: every symbol of the result it differentiates); a name that is none of them is an argument the
        result does not depend on (two results called alike). A result that is a tuple (``step(..., Eq(Tuple(a, b),
        Tuple(x, y)), name=...)``) gives a tuple of arrays. Made once per order and backend."""
        try:
            made = self._array_functions.get((names, backend))  # the loop's call: no work beyond this lookup
        except TypeError:  # an unhashable backend: refused by name below
            made = None
        if made is not None:
            return made
        import sympy

        from ..base.arguments import backend as checked_backend
        from ..derivations.codegen import evaluator

        order = names or self.names
        asked = (names, backend)
        backend = checked_backend(backend)
        missing = [n for n in self.names if n not in order]
        if missing or len(set(order)) != len(order):
            raise TypeError(f"{self.derivation_name}.{self.result} is a function of {', '.join(self.names)}"
                            + (f"; missing {', '.join(missing)}" if missing else "; a name given twice"))
        by_name = {n: sympy.Symbol(n) for n in order} | dict(zip(self.names, self.symbols))
        made = evaluator(self._evaluated, [by_name[n] for n in order], backend, rounding=False)
        self._array_functions[asked] = made
        return made

    def derivative(self, *names: str) -> "DerivedFunction":
        """The partial derivatives of the result in the symbols ``names`` (sympy's diff), as one result whose value
        is their tuple, a function of the same symbols as the result: ``risk.derivative("kappa",
        "nu").array_function(...)`` gives (∂/∂κ, ∂/∂ν). Made once per ``names``."""
        import sympy

        if isinstance(self.expression, sympy.Tuple):
            raise TypeError(f"{self.derivation_name}.{self.result} is a tuple of results (a derivative is one): "
                            "differentiate a result of one value; a second derivative is not offered")
        if names not in self._derivatives:
            unknown = [n for n in names if n not in self.names]
            if unknown or not names:
                raise TypeError(f"{self.derivation_name}.{self.result} has no symbol named {', '.join(unknown)}"
                                if unknown else "derivative needs the names of the symbols to differentiate in")
            by_name = dict(zip(self.names, self.symbols))
            partials = sympy.Tuple(*(sympy.diff(self.expression, by_name[n]) for n in names))
            self._derivatives[names] = DerivedFunction(self.derivation_name, f"d{self.result}/d({', '.join(names)})",
                                                       partials, symbols=self.symbols)
        return self._derivatives[names]

    def scale(self, **values):
        """The round-off scale of the result's terms at ``values`` (the size of what was summed to make it)."""
        import sympy

        if isinstance(self.expression, sympy.Tuple):
            raise TypeError(f"{self.derivation_name}.{self.result} is a tuple of results: its scale is per result")
        return self._scale(*self._arguments(values))

    def __repr__(self) -> str:
        return f"<{self.derivation_name}.{self.result}({', '.join(self.names)}) = {self.expression}>"


class DerivedFamily:
    """A result whose expression depends on integers that fix its structure (a depth, the heads per layer, a number
    of inputs, an entry of a table): ``make(*structure) -> (expression, symbols)``, a sympy expression (a list of them
    for several results) and the symbols its array function takes, in order. Each member, ``at(*structure)``, is a
    `DerivedFunction`, made once per process, whose ``array_function(backend=…)`` is generated once per backend."""

    def __init__(self, derivation_name: str, result: str, make: Callable[..., tuple]):
        self.derivation_name, self.result, self._make = derivation_name, result, make
        self._members: dict[tuple, DerivedFunction] = {}

    def at(self, *structure) -> DerivedFunction:
        """The member of ``structure`` (hashable values: integers, tuples of them, names)."""
        member = self._members.get(structure)
        if member is None:
            import sympy

            expression, symbols = self._make(*structure)
            if isinstance(expression, (list, tuple)):
                expression = sympy.Tuple(*expression)
            shown = ", ".join(map(str, structure))
            member = DerivedFunction(self.derivation_name, f"{self.result}[{shown}]", expression,
                                     symbols=tuple(symbols))
            self._members[structure] = member
        return member

    def __repr__(self) -> str:
        return f"<family {self.derivation_name}.{self.result}: {len(self._members)} member(s) made>"


class DerivationHandle:
    """A derivation registered with [`Theory.derivation`][attnverify.theory_form.Theory.derivation]: call it for the
    [`Derivation`][attnverify.derivations.derivation.Derivation] (derived once per process, kept on disk per file
    content), ``.evaluator(name)`` for a named result as a `DerivedFunction`."""

    def __init__(self, theory: Any, function: Callable, source: str, title: str | None, name: str | None = None):
        from ..derivations.kept import kept_derivation

        self.theory, self.function, self.source = theory, function, source
        self.name = f"{theory.name}.{name or function.__name__}"
        doc = " ".join((function.__doc__ or "").split())
        self.title = title or doc.split(". ")[0].rstrip(".") or function.__name__.replace("_", " ")
        # a user's derivation is kept per file content; a built-in's per the package's code version (the folder)
        self._kept = kept_derivation(self._derive, key=self.name if theory.builtin else
                                     f"{theory.content_key}.{self.name}", name=self.name, listed=theory.builtin)
        self._functions: dict[str, DerivedFunction] = {}
        self.seconds: float | None = None  # what the first call cost this process (deriving, or reading the disk)

    def _derive(self):
        from ..derivations.derivation import DerivationRecorder

        recorder = DerivationRecorder(self.name, self.title, self.source)
        self.function(recorder.step)
        derivation = recorder.finish()
        if not derivation.steps:
            raise ValueError(f"derivation {self.name} recorded no step: call step(description, expression) in it")
        return derivation

    def __call__(self):
        if self.seconds is None:
            import time

            start = time.perf_counter()
            derivation = self._kept()
            self.seconds = time.perf_counter() - start
            return derivation
        return self._kept()

    def result(self, name: str):
        return self().result(name)

    def evaluator(self, name: str) -> DerivedFunction:
        """The named result ``name`` (``step(..., name=name)``) as a function of its free symbols, by keyword."""
        if name not in self._functions:
            results = [s.name for s in self().steps if s.name]
            if name not in results:
                raise KeyError(f"derivation {self.name} has no result named {name!r}; its results: "
                               f"{', '.join(results) or 'none (give a step name=...)'}")
            expression = self.result(name)
            expression = getattr(expression, "rhs", expression)
            self._functions[name] = DerivedFunction(self.name, name, expression)
        return self._functions[name]

    def __repr__(self) -> str:
        return f"<derivation {self.name}: {self.title}>"

