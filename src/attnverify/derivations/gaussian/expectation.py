"""𝔼[f] as a sympy expression that carries its own meaning, so that a derivation step stating a value of an
expectation can be checked (`..steps`) instead of taken on trust.

``Expectation(f, gaussian(z, m, v), …)`` is the mean of f over independent Gaussian variables z ~ N(m, v): it
evaluates at a point ([`Expectation.estimate_at`][attnverify.derivations.gaussian.expectation.Expectation.estimate_at],
with an error estimate) by exact moments where f is a polynomial, the conditioning rule `.closed_forms.erf_mean` after a
rotation of the erf arguments (`standard_estimate`), and the quadrature of `.panels` for what remains.
``Expectation(f, w, v)`` with plain symbols is the mean over an unspecified joint law: `by_linearity` writes it as Σ cᵢ
𝔼[mᵢ], the moments being unknowns. A variable's name is bound: it is not a free symbol of the expectation.
"""

from __future__ import annotations

import functools

import mpmath
import numpy as np
import sympy
from sympy import Tuple

from .closed_forms import erf_mean, moments_taken, polynomial_in
from .jumps import is_smooth, jump_lines
from .panels import FEATURE_CUTS, SCAN, QuadratureShort, line_integral, nested, rounding
from .polar import sector_estimate


def gaussian(variable: sympy.Symbol, mean=0, variance=1) -> Tuple:
    r"""The law of ``variable``: $\mathcal{N}(\text{mean}, \text{variance})$, independent of the expectation's other
    variables."""
    if not isinstance(variable, sympy.Symbol):
        raise TypeError(f"variable must be a sympy Symbol, got {variable!r}")
    return _checked_law(Tuple(variable, sympy.sympify(mean), sympy.sympify(variance)))


def _checked_law(law: Tuple) -> Tuple:
    """A Gaussian law (variable, mean, variance) whose mean is not known to be non-real and whose variance is not
    known to be negative or non-real; else ValueError naming the variable. (A variance negative only at some values
    of its parameters is undefined there: `_Template.value`.)"""
    variable, mean, variance = law
    if mean.is_extended_real is False:
        raise ValueError(f"the mean of {variable} must be real, got {mean}")
    if variance.is_extended_real is False or variance.is_extended_negative:
        raise ValueError(f"the variance of {variable} must be real and ≥ 0, got {variance}")
    return law


class Expectation(sympy.Expr):
    r"""$\mathbb{E}[\text{integrand}]$ over its variables: each a
    [`gaussian`][attnverify.derivations.gaussian.expectation.gaussian] law (evaluated by quadrature) or a plain
    symbol (a random variable of unspecified law; expanded by linearity in `by_linearity`). All Gaussian, or all
    plain."""

    is_commutative = True

    def __new__(cls, integrand, *variables):
        integrand = sympy.sympify(integrand)
        if not variables:
            raise ValueError("an expectation needs at least one random variable")
        laws = []
        for variable in variables:
            if isinstance(variable, sympy.Symbol):
                law = Tuple(variable)
            elif isinstance(variable, (tuple, list, Tuple)) and len(variable) in (1, 3) \
                    and isinstance(variable[0], sympy.Symbol):
                law = Tuple(*variable) if len(variable) == 1 else _checked_law(Tuple(*variable))
            else:
                raise TypeError(f"each variable must be a Symbol or gaussian(symbol, mean, variance), got {variable!r}")
            laws.append(law)
        kinds = {len(law) for law in laws}
        if len(kinds) != 1:
            raise ValueError("an expectation's variables must be all Gaussian or all of an unspecified law")
        names = [law[0] for law in laws]
        if len(set(names)) != len(names):
            raise ValueError(f"each random variable may appear once, got {names}")
        return sympy.Expr.__new__(cls, integrand, *laws)

    @property
    def integrand(self) -> sympy.Expr:
        return self.args[0]

    @property
    def laws(self) -> tuple[Tuple, ...]:
        return self.args[1:]

    @property
    def variables(self) -> tuple[sympy.Symbol, ...]:
        return tuple(law[0] for law in self.laws)

    @property
    def is_gaussian(self) -> bool:
        return len(self.laws[0]) == 3

    @property
    def free_symbols(self) -> set:
        bound = set(self.variables)
        found = self.integrand.free_symbols - bound
        for law in self.laws:
            for parameter in law[1:]:
                found |= parameter.free_symbols
        return found

    def _xreplace(self, rule):
        """A bound variable is never replaced (a point or a name that happens to share its name)."""
        if self in rule:
            return rule[self], True
        bound = set(self.variables)
        if any(variable in rule for variable in bound):
            rule = {k: v for k, v in rule.items() if k not in bound}
        return super()._xreplace(rule)

    def _eval_is_real(self):
        if self.is_gaussian and self.integrand.is_real and all(law[1].is_real and law[2].is_positive
                                                                for law in self.laws):
            return True
        return None

    def _eval_evalf(self, prec):
        if not self.is_gaussian or self.free_symbols:
            return None
        return self.value_at({}, prec)

    def value_at(self, point: dict, prec: int):
        """The mean at ``point`` (symbol → number, for every free symbol) to ``prec`` bits, as a sympy number; None
        where it is not finite or the quadrature does not converge. The symbolic work (the change of variables,
        the exact moments, the code of the integrand) is done once per expectation; each point is a quadrature."""
        try:
            estimate = self.estimate_at(point, prec)
        except QuadratureShort:
            return None
        return None if estimate is None else estimate[0]

    def estimate_at(self, point: dict, prec: int):
        """(the mean at ``point`` as a sympy number, an estimate of its absolute error as an mpmath number: the
        quadrature's own, see `standard_estimate`), or None as for `value_at`; raises
        `.panels.QuadratureShort` where no error estimate would hold (a jump it cannot cut at)."""
        try:
            template = _compiled(self)
        except (TypeError, ValueError, NotImplementedError) as error:  # no code for its integrand
            raise QuadratureShort(f"its integrand cannot be compiled for quadrature ({type(error).__name__}: "
                                  f"{error})") from None
        try:
            values = [point[p] for p in template.parameters]
        except KeyError:
            return None
        working = working_precision(prec)
        key = (self, tuple(values), working)
        if key not in _VALUES:
            try:
                with mpmath.workprec(working):
                    _VALUES[key] = template.value([_number(v) for v in values])
            except QuadratureShort as short:
                _VALUES[key] = str(short)  # a fresh error is raised each time (a kept one would grow its traceback)
            except (ValueError, TypeError, ZeroDivisionError, OverflowError, mpmath.libmp.NoConvergence):
                _VALUES[key] = None
            if len(_VALUES) > 4096:
                _VALUES.pop(next(iter(_VALUES)))
        if _VALUES[key] is None:
            return None
        if isinstance(_VALUES[key], str):
            raise QuadratureShort(_VALUES[key])
        value, error = _VALUES[key]
        if not mpmath.isfinite(value) or not mpmath.isfinite(error):
            return None
        real, imaginary = sympy.Float(mpmath.re(value), prec), sympy.Float(mpmath.im(value), prec)
        return (real + sympy.I * imaginary if imaginary != 0 else real), error

    def _latex(self, printer):
        laws = []
        for law in self.laws:
            name = printer._print(law[0])
            if len(law) == 3:
                laws.append(rf"{name} \sim \mathcal{{N}}\left({printer._print(law[1])}, {printer._print(law[2])}\right)")
            else:
                laws.append(name)
        return r"\mathbb{E}_{%s}\left[%s\right]" % (", ".join(laws), printer._print(self.integrand))

    def _sympystr(self, printer):
        return f"𝔼[{printer._print(self.integrand)}; {', '.join(printer._print(law) for law in self.laws)}]"


_VALUES: dict = {}
"""(expectation, point, working precision) → (its value, its error estimate): sympy's evalf and the checker ask
more than once."""


def _number(value):
    """A sympy number as an mpmath number at the working precision."""
    value = sympy.sympify(value)
    if value.is_Rational:
        return mpmath.mpf(int(value.p)) / int(value.q)
    return mpmath.mpmathify(complex(value)) if not value.is_real else mpmath.mpf(sympy.Float(value, mpmath.mp.dps + 5))


def working_precision(prec: int) -> int:
    """Bits a quadrature is carried at for a value wanted to ``prec`` bits: about 85 % of them plus 8 (the checker
    needs 20 of its 30 digits, and the cost grows with the digits), rounded up to a multiple of 32 so that the
    nodes of the rules are shared."""
    return 32 * -(-max(53, int(0.85 * prec) + 8) // 32)


class _Template:
    """An expectation over Gaussian laws compiled once: its integrand over standard normals, the polynomial
    variables' exact moments taken symbolically, the rest turned into mpmath code with the parameters as
    arguments (and numpy code for the scan of its bulk, the erf arguments for its features)."""

    def __init__(self, expectation: Expectation):
        self.parameters = sorted(expectation.free_symbols, key=sympy.default_sort_key)
        standard = [sympy.Dummy(f"x{k}", real=True) for k in range(len(expectation.laws))]
        change = {law[0]: law[1] + sympy.sqrt(law[2]) * x for law, x in zip(expectation.laws, standard)}
        self.variances = sympy.lambdify(self.parameters, [law[2] for law in expectation.laws], modules="mpmath")
        self.names = [law[0] for law in expectation.laws]
        integrand = expectation.integrand.xreplace(change)
        exact = [x for x in standard if polynomial_in(integrand, x)]
        self.other = [x for x in standard if x not in exact]
        reduced = moments_taken(integrand, exact)
        self.reduced = reduced
        arguments = self.other + self.parameters
        # the parts free of the integration variables are computed once per point, not at every node
        core, constants = _hoisted(reduced, self.other)
        self.constants = sympy.lambdify(self.parameters, list(constants.keys()), modules="mpmath", cse=True)
        self.f = sympy.lambdify(self.other + list(constants.values()) + self.parameters, core, modules="mpmath",
                                cse=True)
        self.scan, self.lines, self.jumps = None, [], []
        self.smooth = is_smooth(reduced, self.other)
        if len(self.other) == 1:
            (x,) = self.other
            if not self.smooth:
                self.jumps = [sympy.lambdify(self.parameters, (offset, slope), modules="mpmath")
                              for offset, (slope,) in jump_lines(reduced, [x])]
            try:
                self.scan = sympy.lambdify(arguments, reduced, modules=["numpy", "scipy"])
            except Exception:  # no numpy code for it: tanh-sinh alone
                self.scan = None
            for e in reduced.atoms(sympy.erf, sympy.erfc):
                argument = sympy.expand(e.args[0])
                slope, rest = argument.coeff(x), None
                if slope != 0 and not slope.has(x):
                    rest = sympy.expand(argument - slope * x)
                if rest is not None and not rest.has(x):
                    self.lines.append(sympy.lambdify(self.parameters, (rest, slope), modules="mpmath"))

    def value(self, values: list, *, reduced: bool = False) -> tuple[mpmath.mpc, mpmath.mpf]:
        """(the mean at the parameters' ``values`` (mpmath numbers), at the current precision; its error
        estimate). ``reduced``: `standard_estimate` has already conditioned and rotated what it could."""
        for name, variance in zip(self.names, self.variances(*values)):
            if mpmath.im(variance) == 0 and mpmath.re(variance) < 0:  # no Gaussian law there: undefined
                raise ValueError(f"the variance of {name} is {mpmath.nstr(variance, 6)} < 0 at these parameters")
        constants = [*self.constants(*values), *values]
        if not self.other:
            value = mpmath.mpmathify(self.f(*constants))
            return value, rounding(value)
        density = 1 / mpmath.sqrt(2 * mpmath.pi)
        if len(self.other) >= 2 and not reduced and all(mpmath.im(v) == 0 for v in values):
            # conditioning and rotation (standard_mean) before any nested quadrature
            digits = mpmath.mp.dps + 5
            at = self.reduced.xreplace({p: sympy.Float(mpmath.re(v), digits) for p, v in zip(self.parameters,
                                                                                              values)})
            return standard_estimate(at, self.other, mpmath.mp.prec)
        if self.scan is not None:
            bulk = self._bulk(values)
            if bulk is not None:
                value, error = line_integral(lambda x: self.f(x, *constants) * density * mpmath.exp(-x * x / 2), bulk,
                                             self._features(values), self._jumps(values))
                return mpmath.mpmathify(value), error
        if not self.smooth:
            raise QuadratureShort("its integrand jumps or bends, and the nested quadrature cannot cut there")
        return nested(lambda *xs: self.f(*xs, *constants), len(self.other))

    def _jumps(self, values: list) -> list:
        """The real points where the integrand jumps or bends at the parameters' ``values`` (`.jumps`)."""
        points = []
        for line in self.jumps:
            offset, slope = (mpmath.mpmathify(v) for v in line(*values))
            if slope == 0:
                continue
            point = -offset / slope
            if mpmath.im(point) != 0:
                raise QuadratureShort("a jump of its integrand at a complex point")
            points.append(mpmath.re(point))
        return points

    def _bulk(self, values: list) -> tuple[float, float, float] | None:
        """(centre, half-width, peak) of |f φ| on a float64 grid over [−SCAN, SCAN] (the width where it stays
        within e⁻² of its peak), or None where the scan is not finite."""
        grid = np.linspace(-SCAN, SCAN, 2801)
        try:
            with np.errstate(all="ignore"):
                numbers = [complex(v) for v in values]
                size = np.abs(np.broadcast_to(self.scan(grid, *numbers), grid.shape)) * np.exp(-grid**2 / 2)
        except Exception:  # numpy cannot evaluate it at these values
            return None
        if not np.all(np.isfinite(size)) or size.max() <= 0:
            return None
        peak = int(np.argmax(size))
        bulk = np.nonzero(size >= size[peak] * np.exp(-2.0))[0]
        return float(grid[peak]), max(float(grid[bulk.max()] - grid[bulk.min()]) / 2, 0.01), float(size[peak])

    def _features(self, values: list) -> list[float]:
        """Cut points where the argument of an erf (linear in the variable) is 0, ±1, ±4: its transition."""
        cuts = []
        for line in self.lines:
            rest, slope = (complex(v) for v in line(*values))
            if abs(rest.imag) > 1e-12 or abs(slope.imag) > 1e-12 or slope.real == 0:
                continue
            centre, scale = -rest.real / slope.real, 1 / abs(slope.real)
            cuts += [centre + k * scale for k in FEATURE_CUTS if abs(centre + k * scale) < SCAN]
        return cuts


def _hoisted(expression: sympy.Expr, variables: list) -> tuple[sympy.Expr, dict]:
    """``expression`` with each largest part free of ``variables`` replaced by a new symbol: (the rest, part →
    symbol)."""
    constants: dict = {}

    def walk(e):
        if not e.has(*variables):
            if e.is_Atom or not isinstance(e, sympy.Expr):  # a condition or a Piecewise pair is no number
                return e
            if e not in constants:
                constants[e] = sympy.Dummy(f"c{len(constants)}")
            return constants[e]
        if not e.args:
            return e
        return e.func(*(walk(a) for a in e.args))

    return walk(expression), constants


@functools.lru_cache(maxsize=512)
def _compiled(expectation: Expectation) -> _Template:
    return _Template(expectation)


def gaussian_mean(integrand: sympy.Expr, variables: list) -> mpmath.mpc:
    """E[integrand] over independent standard normal ``variables`` (the integrand free of other symbols) at the
    current mpmath precision: exactly in the variables the integrand is a polynomial in (its monomials' Gaussian
    moments), numerically in the others: one by Gauss–Legendre panels over its integrand's bulk and features and
    tanh-sinh on the tails, several by nested tanh-sinh quadrature."""
    return _compiled(Expectation(integrand, *(gaussian(x) for x in variables))).value([])[0]


def moment(product: sympy.Expr, variables) -> sympy.Expr:
    """𝔼[product] of random variables (1 when ``product`` holds none): the unknown a linear expansion leaves."""
    present = sorted((v for v in variables if product.has(v)), key=str)
    if not present:
        return product
    return Expectation(product, *present)


def by_linearity(expression: sympy.Expr) -> sympy.Expr:
    """Every expectation over random variables of unspecified law in ``expression`` written as Σ cᵢ 𝔼[mᵢ] (inner
    expectations first): the integrand expanded, each term split into its factor free of the random variables and
    the rest."""
    if not isinstance(expression, sympy.Basic) or not expression.has(Expectation):
        return expression

    def expand(e):
        if not isinstance(e, Expectation) or e.is_gaussian:
            return e
        variables = e.variables
        integrand = by_linearity(e.integrand)
        total = sympy.S.Zero
        for term in sympy.Add.make_args(sympy.expand(integrand, power_base=False, log=False)):
            constant, random = term.as_independent(*variables, as_Add=False)
            total += constant * moment(random, variables)
        return total

    return expression.replace(lambda e: isinstance(e, Expectation) and not e.is_gaussian, expand)


CONDITIONED = (sympy.erf, sympy.erfc)


def standard_mean(integrand: sympy.Expr, variables: list, prec: int):
    """E[integrand] over independent standard normal ``variables`` at ``prec`` bits (the value of
    `standard_estimate`)."""
    return standard_estimate(integrand, variables, prec)[0]


def standard_estimate(integrand: sympy.Expr, variables: list, prec: int) -> tuple:
    """(E[integrand], an estimate of its absolute error) over independent standard normal ``variables``, the integrand's
    other symbols numbers, at ``prec`` bits (an mpmath number). Exact where the law allows: each variable the integrand
    is a polynomial in by its moments, each that enters one erf (erfc) factor of every term, affinely, by E_Z[erf(α +
    βZ)] = erf(α/√(1+2β²)); when two or more remain and every one enters only through affine arguments of functions,
    they are rotated (QR of the arguments' coefficients, Z → QY keeps the law) so that the k-th argument holds the
    first k new variables, the others drop out, and the last is conditioned out (E[erf(u) erf(v)] of correlated
    u, v becomes one integral). One remaining variable: Gauss–Legendre panels over its bulk (`line_integral`,
    its error estimated by the panels' two rules, about 2¹² units of the last place of ``prec`` times the number of
    panels); two whose every kink and jump lies on a line through the origin: by sectors in polar coordinates
    (`.polar.sector_estimate`); several: nested tanh-sinh (slow; each level of the degree mpmath sets by the
    precision). What is exact is given the error of its rounding (`rounding`)."""
    h, rest, rotated = sympy.sympify(integrand), list(variables), False
    with mpmath.workprec(prec):
        while True:
            rest = [v for v in rest if h.has(v)]
            exact = [v for v in rest if polynomial_in(h, v)]
            if exact:
                h, rest = moments_taken(h, exact), [v for v in rest if v not in exact]
                continue
            conditioned = next(((v, c) for v in reversed(rest) for c in [_conditioned(h, v)] if c is not None),
                               None)
            if conditioned is not None:
                h, rest = conditioned[1], [v for v in rest if v is not conditioned[0]]
                continue
            if len(rest) >= 2 and not rotated:
                rotated, turned = True, _rotated(h, rest, prec)
                if turned is not None:
                    h, rest = turned
                    continue
            break
        if not rest:
            value = sympy.N(h, mpmath.mp.dps + 5)._to_mpmath(prec)
            return value, rounding(value)
        if len(rest) == 2 and not is_smooth(h, rest):
            by_sectors = sector_estimate(h, rest)
            if by_sectors is not None:
                return by_sectors
        return _Template(Expectation(h, *(gaussian(v) for v in rest))).value([], reduced=True)


def _conditioned(h: sympy.Expr, variable: sympy.Symbol) -> sympy.Expr | None:
    """E over the standard normal ``variable`` of ``h``, each term of which holds it in one erf or erfc factor of
    an affine argument α + βZ: that factor becomes erf(α/√(1+2β²)) (erfc alike); None otherwise."""
    total = sympy.S.Zero
    for term in sympy.Add.make_args(h):
        constant, factor = term.as_independent(variable, as_Add=False)
        if factor == 1:
            total += term
            continue
        if not isinstance(factor, CONDITIONED):
            return None
        argument = sympy.expand(factor.args[0])
        slope = argument.coeff(variable)
        offset = argument - slope * variable
        if slope == 0 or slope.has(variable) or offset.has(variable):
            return None
        total += constant * erf_mean(offset, slope, factor.func)
    return total


def _rotated(h: sympy.Expr, variables: list, prec: int):
    """(h in new standard normals, them) with Z = QY, Q from the QR decomposition of the coefficients of the
    affine arguments in which ``variables`` enter (so that the k-th holds Y₁…Y_k; coefficients below the working
    precision dropped), or None when a variable enters otherwise."""
    applications = sorted((f for f in h.atoms(sympy.Function) if f.has(*variables)), key=sympy.default_sort_key)
    if not applications or any(isinstance(f, sympy.Piecewise) or not isinstance(f.args[0], sympy.Expr)
                               or (f.args[1:] and sympy.Tuple(*f.args[1:]).has(*variables)) for f in applications):
        return None  # one argument holds the variables (Heaviside's second, its value at 0, is a number)
    hidden = {f: sympy.Dummy() for f in applications}
    if h.xreplace(hidden).has(*variables):
        return None
    rows = []
    for f in applications:
        argument = sympy.expand(f.args[0])
        coefficients = [argument.coeff(v) for v in variables]
        offset = argument - sum(c * v for c, v in zip(coefficients, variables))
        if any(c.has(*variables) or not c.is_number for c in coefficients) or offset.has(*variables):
            return None
        rows.append((offset, coefficients))
    n, k = len(variables), len(rows)
    digits = mpmath.mp.dps + 5
    matrix = mpmath.matrix(n, k)
    for j, (_, coefficients) in enumerate(rows):
        for i, c in enumerate(coefficients):
            matrix[i, j] = mpmath.mpf(sympy.Float(sympy.N(c, digits), digits))
    try:
        q, r = mpmath.qr(matrix)
    except (ZeroDivisionError, ValueError):
        return None
    new = [sympy.Dummy(f"y{i}", real=True) for i in range(n)]
    small = mpmath.mpf(2) ** (16 - prec) * max(1, mpmath.mnorm(matrix, 1))
    replaced = {}
    for j, (f, (offset, _)) in enumerate(zip(applications, rows)):
        argument = offset + sum(sympy.Float(r[i, j], digits) * y for i, y in enumerate(new) if abs(r[i, j]) > small)
        replaced[f] = f.func(argument, *f.args[1:])
    return h.xreplace(replaced), new

