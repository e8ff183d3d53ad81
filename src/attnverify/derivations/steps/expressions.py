"""A step's sides as the checker reads them: the relations an ``Eq`` (or a tuple of them) states, names
resolved to their latest values (`resolved`; a derivative by a name keeps its variable bound), derivatives
and substitutions carried out, expectations over laws left unspecified written by linearity, and the unknowns
(unevaluated functions, moments) a comparison must replace (docs/derivation_steps.md, "What a step claims")."""

from __future__ import annotations

import functools
from typing import Iterable

import sympy
from sympy.core.function import AppliedUndef
from sympy.matrices.expressions.matexpr import MatrixElement

from ...base.files import fingerprint
from ..gaussian import Expectation, by_linearity


def relations_of(expression) -> list[tuple[sympy.Basic, sympy.Basic]] | None:
    """The equalities a step states, entry by entry; None for a plain expression."""
    if isinstance(expression, sympy.Equality):
        return paired(expression.lhs, expression.rhs)
    if isinstance(expression, sympy.Tuple) and expression and all(isinstance(e, sympy.Equality) for e in expression):
        return [pair for e in expression for pair in paired(e.lhs, e.rhs)]
    return None


def paired(a, b) -> list[tuple[sympy.Basic, sympy.Basic]]:
    if isinstance(a, sympy.Tuple) and isinstance(b, sympy.Tuple) and len(a) == len(b):
        return [pair for x, y in zip(a, b) for pair in paired(x, y)]
    if isinstance(a, sympy.MatrixBase) and isinstance(b, sympy.MatrixBase) and a.shape == b.shape:
        return list(zip(a, b))
    return [(a, b)]


def is_name(expression) -> bool:
    """A left side that names a quantity: a symbol, a matrix symbol, an indexed entry, an unevaluated function
    application (𝔼(N)), or a tuple of them."""
    if isinstance(expression, sympy.Tuple):
        return all(is_name(e) for e in expression)
    return isinstance(expression, (sympy.Symbol, sympy.MatrixSymbol, sympy.Indexed, AppliedUndef, MatrixElement))


def symbols_of(expression) -> set:
    return set(getattr(expression, "free_symbols", set()))


def outer_symbols(expression) -> set:
    """Free symbols outside unevaluated functions (the N of 𝔼(N) belongs to the name 𝔼(N), not to the form)."""
    hidden = expression.atoms(AppliedUndef) if isinstance(expression, sympy.Basic) else set()
    return symbols_of(expression.xreplace({f: sympy.S.One for f in hidden}) if hidden else expression)


def resolved(expression, env: dict, rounds: int = 8):
    """``expression`` with every name replaced by its latest value, repeatedly (names defined through names); a
    derivative by a name keeps its variable bound (see `substituted`)."""
    if not env or not isinstance(expression, sympy.Basic):
        return expression
    functions = {key.func: key for key in env if isinstance(key, AppliedUndef) and getattr(key.func, "mapping", False)
                 and all(isinstance(x, sympy.Symbol) for x in key.args) and len(set(key.args)) == len(key.args)}
    for _ in range(rounds):
        replaced = substituted(expression, env, env)
        if functions:
            replaced = replaced.replace(
                lambda e: isinstance(e, AppliedUndef) and e.func in functions and e not in env
                and len(e.args) == len(functions[e.func].args),
                lambda e: env[functions[e.func]].xreplace(dict(zip(functions[e.func].args, e.args))))
        if replaced == expression:
            return replaced
        expression = replaced
    return expression


def function(name: str) -> sympy.FunctionClass:
    """An unevaluated function whose value a step gives at symbols, f(t, θ) = …: a later f(2, ω) is that value at
    t = 2, θ = ω (a plain undefined function's applications are names of their own)."""
    return sympy.Function(name, mapping=True)


def substituted(expression, mapping: dict, env: dict | None = None):
    """``expression.xreplace(mapping)``, except that a derivative by a symbol of ``mapping`` is first written
    Subs(Derivative(f(ξ), ξ), ξ, x) (its body resolved in ``env`` first, so that it is a function of ξ): the value
    replaces the point the derivative is taken at, never the variable it is taken by."""
    if not mapping or not isinstance(expression, sympy.Basic):
        return expression
    if expression.has(sympy.Derivative):
        keys = set(mapping)

        def bind(derivative):
            hit = [v for v, _ in derivative.variable_count if v in keys and isinstance(v, sympy.Symbol)]
            if not hit:
                return derivative
            body = derivative.expr
            if env:
                body = resolved(body, {k: v for k, v in env.items() if k not in hit})
            dummies = {v: _bound_variable(v) for v in hit}
            inner = sympy.Derivative(body, *derivative.variable_count).xreplace(dummies)
            return sympy.Subs(inner, tuple(dummies.values()), tuple(hit))

        expression = expression.replace(lambda e: isinstance(e, sympy.Derivative), bind)
    return expression.xreplace(mapping)


def function_definition(a, env: dict):
    """The name f(t, …) that gives the value of the application ``a`` = f(2, …) of a `function`, if any (and
    ``a`` has no value of its own)."""
    if not (isinstance(a, AppliedUndef) and getattr(a.func, "mapping", False)) or a in env:
        return None
    for key in env:
        if (isinstance(key, AppliedUndef) and key.func == a.func and len(key.args) == len(a.args)
                and all(isinstance(x, sympy.Symbol) for x in key.args)):
            return key
    return None


def _bound_variable(variable: sympy.Symbol) -> sympy.Dummy:
    """The variable a derivative is taken by once it is bound: a Dummy of a fixed index (so that the same step gives
    the same cache key in every process)."""
    index = int(fingerprint(variable.name)[:12], 16)
    return sympy.Dummy(variable.name, dummy_index=index, **variable.assumptions0)


def side_at(expression, env: dict, substitute: dict):
    """A side as the checker compares it: names resolved, the step's values substituted, names resolved again
    (a value may be written in names)."""
    expression = resolved(expression, env)
    if substitute:
        expression = resolved(substituted(expression, substitute, env), env)
    return expression


def zero_like(expression):
    """0, or the zero matrix of ``expression``'s shape."""
    if isinstance(expression, (sympy.MatrixBase, sympy.MatrixExpr)):
        return sympy.ZeroMatrix(*expression.shape)
    return sympy.S.Zero


def labels(symbols: set) -> set:
    """Symbols, an indexed entry x[i, j] counted as its base x (a new index is not a new quantity)."""
    return {s.base.label if isinstance(s, sympy.Indexed) else s for s in symbols}


MATRIX_ATOMS = (sympy.MatrixSymbol, sympy.Identity, sympy.ZeroMatrix, sympy.OneMatrix)
"""The matrices whose shapes are written as symbols (a matrix expression's shape is made of theirs)."""


def dimensions(expression) -> set:
    """The symbols of the shapes of ``expression`` and of every matrix in it: its dimensions, which a step that
    writes the matrix has stated (X = MatrixSymbol("X", n, d) states n and d), not quantities it introduces."""
    if not isinstance(expression, sympy.Basic):
        return set()
    shapes = [m.shape for m in expression.atoms(*MATRIX_ATOMS)]
    if isinstance(expression, (sympy.MatrixExpr, sympy.MatrixBase)):  # (an Indexed entry's shape may raise)
        shapes.append(expression.shape)
    return {s for shape in shapes for n in shape for s in sympy.sympify(n).free_symbols}


def names_text(symbols: Iterable) -> str:
    return ", ".join(sorted(str(s) for s in symbols))


def shape_of(expression):
    if isinstance(expression, sympy.Tuple):
        return ("tuple", len(expression))
    if isinstance(expression, (sympy.MatrixBase, sympy.MatrixExpr)):
        return ("matrix", expression.shape)
    if isinstance(expression, (sympy.Derivative, sympy.Subs)) and shape_of(expression.expr)[0] == "matrix":
        return shape_of(expression.expr)  # a derivative by a scalar of a matrix
    if isinstance(expression, sympy.Expr):
        return ("scalar",)
    return (type(expression).__name__,)


def kind_of(expression) -> str:
    shape = shape_of(expression)
    return {"tuple": f"a tuple of {shape[-1]}", "matrix": "a matrix", "scalar": "a scalar"}.get(shape[0], shape[0])


def is_zero_value(expression) -> bool:
    return isinstance(expression, sympy.Expr) and not isinstance(expression, sympy.MatrixExpr) and expression == 0


def carried_out(expression):
    """``expression`` with each ``UnevaluatedExpr`` released (its argument, evaluated with what holds it), its
    derivatives and substitutions carried out (sympy's ``doit``, not deep) where they hold no unevaluated function,
    and every expectation over random variables of unspecified law written by linearity
    (`..gaussian.by_linearity`)."""
    if not isinstance(expression, sympy.Basic):
        return expression
    if expression.has(sympy.UnevaluatedExpr):  # a form the author kept as written: compared by its value
        expression = expression.replace(lambda e: isinstance(e, sympy.UnevaluatedExpr), lambda e: e.args[0])
    expression = by_linearity(expression)
    if not expression.has(sympy.Derivative, sympy.Subs):
        return expression

    def do(e):
        if e.has(AppliedUndef):
            return e
        try:
            if isinstance(e, sympy.Derivative) and any(isinstance(v, sympy.MatrixExpr) for v in e.variables):
                return _by_matrix(e)
            return e.doit(deep=False)
        except Exception:  # sympy cannot differentiate it (a matrix expression): left for the explicit point
            return e

    return expression.replace(lambda e: isinstance(e, (sympy.Derivative, sympy.Subs)), do)


def _by_matrix(derivative):
    """A derivative by a matrix symbol, sum by sum with each product's scalar factor taken out first (sympy 1.14
    gives 0 for ∂(c·Tr(AAᵀ))/∂A with a symbol c, but 2cA for c·∂Tr(AAᵀ)/∂A)."""
    (variable, count), = derivative.variable_count
    if count != 1:
        raise NotImplementedError("second derivatives by a matrix")

    def by(expression):
        if isinstance(expression, sympy.Add):
            parts = [by(term) for term in expression.args if term.has(variable)]
            return functools.reduce(lambda x, y: x + y, parts)
        if isinstance(expression, sympy.Mul):
            factor, rest = expression.as_independent(variable, as_Add=False)
            if factor != 1:
                return factor * by(rest)
        return sympy.Derivative(expression, variable).doit()

    if not derivative.expr.has(variable):
        raise NotImplementedError("a derivative of an expression free of its variable")
    return by(derivative.expr)


def unknowns_of(expression) -> set:
    """The quantities ``expression`` states nothing about: unevaluated functions (their classes) and moments of
    random variables of unspecified law."""
    if not isinstance(expression, sympy.Basic):
        return set()
    found = {f.func for f in expression.atoms(AppliedUndef)}
    found |= {e for e in expression.atoms(Expectation) if not e.is_gaussian}
    return found


def has_order(expression) -> bool:
    return isinstance(expression, sympy.Basic) and expression.has(sympy.Order)


def unevaluable(expression) -> str | None:
    """Why ``expression`` cannot be evaluated at a point (a limit), or None. Unevaluated functions and moments of
    unspecified laws are unknowns (`_with_unknowns`); derivatives are taken (`carried_out`), those of matrix
    expressions once the matrices are explicit."""
    if expression.has(sympy.Limit):
        return "holds an unevaluated Limit"
    return None


def is_matrix(value) -> bool:
    return isinstance(value, sympy.MatrixBase)


def entries_of(value) -> list:
    return list(value) if is_matrix(value) else [value]
