"""Activations of a hidden layer given as sympy functions of one variable, and what a network and its theory need
of them, all from the one expression φ(z) ([`activation`][attnverify.saddle.activations.activation] reads and checks
it):

- the units' values φ(u) and slopes φ'(u) for the features and their vector–Jacobian product, generated for numpy
  or cupy by the project's code generator
  ([`attnverify.derivations.codegen.evaluator`][attnverify.derivations.codegen.evaluator]; sympy differentiates);
- the NNGP kernel K(x, y) = E_w[φ(w·x) φ(w·y)] for w ~ N(0, I/d)
([`nngp_kernel`][attnverify.saddle.network.nngp_kernel]). (u, v) = (w·x, w·y) is
  Gaussian with Var u = a = |x|²/d, Var v = b = |y|²/d and correlation cos θ = x·y/(|x||y|), so that

      K = E_{z₁,z₂}[φ(√a z₁) φ(√b (cos θ z₁ + sin θ z₂))],  z₁, z₂ ~ N(0, 1) independent,          (1)

  an [`Expectation`][attnverify.derivations.gaussian.Expectation] that the derivation (`kernel_derivation`) states
  and the project's checker evaluates. Closed forms where they exist, each a step the checker holds against (1):
  exact Gaussian moments for a polynomial φ (linear units: x·y/d), the arc-cosine kernel of order 1 for ReLU
  (Cho & Saul 2009), the arcsine kernel for erf (Williams 1997). Any other φ (tanh, a user's function): (1) by a
  float64 quadrature over sectors of the (z₁, z₂) plane with its error estimate; both, at pairs of inputs, in
  [`attnverify.saddle.nngp_quadrature`][attnverify.saddle.nngp_quadrature].
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Callable

import numpy as np
import sympy
from sympy import Eq, Piecewise, asin, cos, erf, pi, sin, sqrt, tanh
from sympy.functions.elementary.miscellaneous import IdentityFunction

from ..base.backend import on_device
from ..derivations.codegen import evaluator
from ..derivations.derivation import Derivation, DerivationRecorder
from ..derivations.gaussian import Expectation, QuadratureShort, erf_mean, gaussian, gaussian_moments_expectation
from ..derivations.gaussian.jumps import jump_lines

Z = sympy.Symbol("z", real=True)
"""The variable of φ: the unit's preactivation."""

A, B = sympy.symbols("a b", positive=True)
"""The variances |x|²/d and |y|²/d of the two preactivations (u, v) = (w·x, w·y), w ~ N(0, I/d)."""

THETA = sympy.Symbol("theta", positive=True)
"""The angle between x and y, in [0, π] (the derivation's variable)."""

R = sympy.Symbol("r", real=True)
"""cos θ, the preactivations' correlation: the closed forms are evaluated in (a, b, r), r ∈ [−1, 1]."""

KERNEL = sympy.Symbol("K", real=True)
Z1, Z2 = sympy.symbols("z1 z2", real=True)

BUILT_IN = {"relu": Piecewise((Z, Z > 0), (0, True)), "linear": Z, "erf": erf(Z), "tanh": tanh(Z)}
"""The activations named by a string. ReLU's slope at 0 is 0 (the Piecewise's second branch)."""

STATED = {
    "relu": (sqrt(A * B) * (sin(THETA) + (pi - THETA) * cos(THETA)) / (2 * pi),
             "The arc-cosine kernel of order 1 (Cho & Saul 2009, eq. 6), for θ ∈ [0, π]"),
    "erf": (2 / pi * asin(2 * sqrt(A * B) * cos(THETA) / sqrt((1 + 2 * A) * (1 + 2 * B))),
            "The expectation over z₁: the arcsine kernel (Williams 1997, eq. 11)"),
}
"""Closed forms taken from the literature, in (a, b, θ), each checked against (1) as a derivation step."""

VALID = ("activation must be 'relu', 'linear', 'erf', 'tanh' or a sympy function of one variable (a sympy.Lambda, "
         "a callable taking a sympy symbol and returning an expression, e.g. sympy.erf or lambda z: z**3, or an "
         "expression in one symbol)")
"""What every refusal of [`activation`][attnverify.saddle.activations.activation] starts with."""

PROBES = (-2.7, -0.9, -0.3, 0.4, 1.1, 3.1)
"""Real points where φ must be real and finite (a square root of z, complex for z < 0, is refused there)."""


@dataclass(frozen=True)
class Activation:
    """An activation φ of one variable: ``name`` (a built-in's, else the expression as text) and ``expression``,
    φ(`Z`) with Max, Min and Heaviside written as Piecewise (so that φ' is printable array code)."""

    name: str
    expression: sympy.Expr

    @cached_property
    def derivative(self) -> sympy.Expr:
        """φ'(z), by sympy (a Piecewise's branches differentiated; its slope at a kink is the branch's there)."""
        return sympy.diff(self.expression, Z).rewrite(Piecewise)

    @cached_property
    def constant_slope(self) -> float | None:
        """φ' where it is a number (linear units: 1), else None: the VJP then needs no preactivations."""
        return float(self.derivative) if self.derivative.is_number else None

    def values(self, u):
        """φ(u) elementwise, on u's backend (numpy or cupy), by the code generated from φ."""
        return _unit_code(self.expression, on_device(u))(u)[0]

    def slopes(self, u):
        """φ'(u) elementwise, on u's backend, by the code generated from φ'."""
        return _unit_code(self.derivative, on_device(u))(u)[0]

    @property
    def closed_form(self) -> sympy.Expr | None:
        """K(a, b, θ) in closed form (the derivation's result), or None where (1) is left to quadrature."""
        result = kernel_derivation(self).results.get("K")
        return None if result is None else result.rhs


def activation(spec: Any) -> Activation:
    r"""The `Activation` ``spec`` names or gives: "relu", "linear", "erf", "tanh", an `Activation`, a
    sympy.Lambda of one variable, a callable taking a sympy symbol and returning a sympy expression (sympy.erf,
    ``lambda z: z**3``), or a sympy expression in one symbol. A function equal to a built-in is that built-in (so
    ``sympy.erf`` has the arcsine kernel). Refused with one line naming ``activation`` and what is valid: anything
    else, a function of more or fewer than one variable, one not real and finite at real points, one with a jump
    (the sampler follows $\varphi'$), one with no array code, one whose kernel diverges (`_kernel_diverges`)."""
    if isinstance(spec, Activation):
        return spec
    if isinstance(spec, str):
        if spec in BUILT_IN:
            return _built_in(spec)
        raise ValueError(f"{VALID}; got the string {spec!r}")
    return _checked(_expression_of(spec))


@lru_cache(maxsize=None)
def _built_in(name: str) -> Activation:
    return Activation(name, BUILT_IN[name])


def _expression_of(spec: Any) -> sympy.Expr:
    """φ(`Z`) from a Lambda, a callable or an expression in one symbol; refused by `VALID` otherwise."""
    if isinstance(spec, IdentityFunction):  # its variable, and so whether it was of one sign, is gone
        raise ValueError(f"{VALID}; got {spec}, which sympy reduced to the identity: for linear units give "
                         "activation=\"linear\"; a Lambda whose body sympy simplified to its variable (Max(z, 0) for a "
                         "positive z) is not linear: declare its variable sympy.Symbol('z', real=True)")
    if isinstance(spec, sympy.Lambda):
        if len(spec.variables) != 1:
            raise ValueError(f"{VALID}; got {spec}, a function of {len(spec.variables)} variables")
        _real_variable(spec.variables[0], spec)
        return spec(Z)
    if isinstance(spec, sympy.Expr):
        free = sorted(spec.free_symbols, key=str)
        if len(free) != 1:
            raise ValueError(f"{VALID}; got the expression {spec}, in {len(free)} symbols "
                             f"({', '.join(map(str, free)) or 'none'})")
        _real_variable(free[0], spec)
        return spec.xreplace({free[0]: Z})
    if not callable(spec):
        raise TypeError(f"{VALID}; got {type(spec).__name__} {spec!r}")
    required = _required_arguments(spec)
    if required is not None and required != 1:
        raise ValueError(f"{VALID}; got a callable of {required} required arguments")
    try:
        value = spec(Z)
    except Exception as error:  # a numpy function given a symbol, a sympy class of two arguments, …
        text = str(error).splitlines()[0] if str(error) else ""
        hint = " (numpy's functions take no symbols: use sympy's)" if "ufunc" in text else ""
        raise ValueError(f"{VALID}; calling it on a sympy symbol raised {type(error).__name__}: {text}{hint}") \
            from None
    try:
        return sympy.sympify(value, strict=True)
    except (sympy.SympifyError, TypeError):
        raise ValueError(f"{VALID}; calling it on a sympy symbol returned {type(value).__name__}, not a sympy "
                         "expression") from None


def _real_variable(variable: sympy.Symbol, spec) -> None:
    """Refuse a variable sympy takes to be of one sign: a preactivation ranges over the reals, and sympy has already
    simplified the function for the sign it was told (Abs(z) → z for a positive z)."""
    if variable.is_positive or variable.is_negative or variable.is_nonnegative or variable.is_nonpositive:
        raise ValueError(f"{VALID}, of a real variable; got {spec}, whose variable {variable} sympy takes to be of one "
                         f"sign (so it may already have simplified, e.g. Abs({variable}) to {variable}): declare it "
                         f"sympy.Symbol({str(variable)!r}, real=True)")


def _required_arguments(spec: Callable) -> int | None:
    """How many positional arguments ``spec`` requires, where Python can tell (None for a sympy class)."""
    if isinstance(spec, type):
        return None
    try:
        parameters = inspect.signature(spec).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in parameters):
        return None
    return sum(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)


@lru_cache(maxsize=256)
def _checked(expression: sympy.Expr) -> Activation:
    """The `Activation` of φ(`Z`) after the checks of [`activation`][attnverify.saddle.activations.activation]."""
    if not isinstance(expression, sympy.Expr):
        raise ValueError(f"{VALID}; got {expression!r}, not a sympy expression")
    others = sorted(expression.free_symbols - {Z}, key=str)
    if others:
        raise ValueError(f"{VALID}; got {expression}, which holds {', '.join(map(str, others))} besides its "
                         "variable (give them numbers)")
    if not expression.has(Z):
        raise ValueError(f"{VALID}; got the constant {expression}")
    if expression.has(sympy.Max, sympy.Min, sympy.Heaviside):  # one Piecewise of plain conditions: nested Max and
        expression = sympy.piecewise_fold(expression.rewrite(Piecewise))  # Min leave ITE conditions unfolded
    for name, built_in in BUILT_IN.items():
        if _equal(expression, built_in):
            return _built_in(name)
    found = Activation(str(expression), expression)
    if found.derivative.has(sympy.DiracDelta):
        raise ValueError(f"{VALID}, continuous; got {expression}, which jumps (its derivative {found.derivative} "
                         "holds a DiracDelta): the sampler follows φ'")
    try:
        jump = _jump(expression)
    except QuadratureShort as short:  # continuity cannot be checked where a switch cannot be placed
        raise ValueError(f"{VALID}, with switches at points z = c; got {expression}: {short} (write each condition as "
                         "z < c)") from None
    if jump is not None:
        raise ValueError(f"{VALID}, continuous; got {expression}, which jumps at z = {jump:.6g}: the sampler "
                         "follows φ'")
    for part in (expression, found.derivative):
        try:
            evaluator(part, [Z], rounding=False)
        except NotImplementedError as error:
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__  # not the printer's advice
            raise ValueError(f"{VALID}, with array code; got {expression}: {reason}") from None
    for point in PROBES:
        value = sympy.N(expression.xreplace({Z: sympy.Float(point)}))
        if not (value.is_real and value.is_finite):
            raise ValueError(f"{VALID}, real and finite at real points; got {expression}, which is {value} at "
                             f"z = {point}")
    diverges = _kernel_diverges(expression)
    if diverges:
        raise ValueError(f"{VALID}, whose kernel E[φ(u)φ(v)] is finite for Gaussian u, v; got {expression}: "
                         f"{diverges}")
    return found


def _jump(expression: sympy.Expr) -> float | None:
    """A point where φ jumps, or None: at each switch of its Piecewise (a Heaviside, a Max, … rewritten so), φ on
    either side 10⁻³⁰ away, in 60 digits, must agree to 10⁻²⁰ of its size (a finite slope moves it by ~10⁻³⁰; a
    jump, by the jump). A Piecewise switch that cannot be placed (not affine in z) raises QuadratureShort; an Abs
    of any argument is continuous and needs no placing."""
    try:
        lines = jump_lines(expression, [Z])
    except QuadratureShort:
        if expression.has(Piecewise):
            raise
        return None
    step = sympy.Float("1e-30", 60)
    for offset, slopes in lines:
        if slopes[0] == 0:
            continue
        point = sympy.Float(-offset / slopes[0], 60)
        left, right = (sympy.N(expression.xreplace({Z: point + sign * step}), 60) for sign in (-1, 1))
        if not (left.is_finite and right.is_finite):
            continue  # not finite near the switch: refused by the probes or the kernel's divergence
        if abs(right - left) > sympy.Float("1e-20", 60) * (1 + abs(left) + abs(right)):
            return float(point)
    return None


def _equal(expression: sympy.Expr, built_in: sympy.Expr) -> bool:
    """Whether φ is the built-in: equal at the probe points first (cheap), then sympy's simplify of the difference."""
    if expression == built_in:
        return True
    for point in PROBES:
        difference = sympy.N((expression - built_in).xreplace({Z: sympy.Float(point)}))
        if not (difference.is_number and abs(complex(difference)) < 1e-12):
            return False
    return sympy.simplify(expression - built_in) == 0


def _kernel_diverges(expression: sympy.Expr) -> str:
    """Why E[φ(u)²] is infinite for some Gaussian u, or "" where sympy shows no reason (the quadrature's tail and
    finiteness checks then hold the rest). E[φ(u)²] < ∞ for u ~ N(0, s²) at every s² needs (i) growth below every
    e^{εz²}: L = lim ln(1 + φ²)/z² at ±∞ must be 0 (with L > 0 it diverges at s² ≥ 1/(2L)); (ii) φ² integrable at
    each real singularity p, taken as lim (z − p)φ(z)² = 0 from both sides (1/z fails, |z|^(−1/3) passes). By
    Cauchy–Schwarz, (i) and (ii) make K(x, y) finite at every x, y."""
    for end in (sympy.oo, -sympy.oo):
        try:
            growth = sympy.limit(sympy.log(1 + expression**2) / Z**2, Z, end)
        except (NotImplementedError, ValueError, TypeError, AttributeError):
            continue
        if growth.is_extended_positive:
            return f"φ(z)² grows like exp({growth}·z²) as z → {end}, and E[φ(u)²] is infinite once Var u ≥ " \
                   f"{sympy.nsimplify(1 / (2 * growth)) if growth.is_finite else 0}"
    try:
        singular = sympy.singularities(expression, Z, sympy.S.Reals)
    except (NotImplementedError, ValueError, TypeError, AttributeError):
        return ""
    if not isinstance(singular, sympy.FiniteSet):
        return ""
    for point in singular:
        for side in ("+", "-"):
            try:
                near = sympy.limit((Z - point) * expression**2, Z, point, side)
            except (NotImplementedError, ValueError, TypeError, AttributeError):
                continue
            if near != 0:
                return f"φ(z)² is not integrable at z = {point} ((z − {point})·φ(z)² → {near}), so neither is " \
                       "E[φ(u)²]"
    return ""


@lru_cache(maxsize=None)
def _unit_code(expression: sympy.Expr, device: bool) -> Callable:
    """The generated function u ↦ (expression(u),) for numpy or cupy. Its raw function: it runs inside the sampler's
    leapfrog, where the checked call's finiteness tests would read the device twice a step; a non-finite feature
    there makes a non-finite potential, which the sampler treats as a divergence."""
    return evaluator(expression, [Z], "cupy" if device else "numpy", rounding=False).function


# --- the NNGP kernel: derivation and closed forms ---------------------------------------------------------------


@lru_cache(maxsize=None)
def kernel_derivation(unit: Activation) -> Derivation:
    """The NNGP kernel of φ as a derivation (`attnverify.derivations.derivation`): the definition (1) as an
    Expectation over z₁, z₂, then, where one exists, the closed form as checked steps exported as ``K`` (a, b, θ):
    exact Gaussian moments for a polynomial φ; erf: z₂ averaged out by E[erf(α + βz₂)] = erf(α/√(1 + 2β²)), then
    the arcsine kernel; ReLU: the arc-cosine kernel. Without a closed form the derivation is the definition alone."""
    u, v = sqrt(A) * Z1, sqrt(B) * (cos(THETA) * Z1 + sin(THETA) * Z2)
    integrand = unit.expression.xreplace({Z: u}) * unit.expression.xreplace({Z: v})
    source = STATED[unit.name][1] if unit.name in STATED else "Gaussian expectation over w ~ N(0, I/d)"
    record = DerivationRecorder(f"nngp_kernel_{_slug(unit.name)}", f"The NNGP kernel of {unit.name} units", source)
    record.step("(u, v) = (w·x, w·y) for w ~ N(0, I/d) is Gaussian with Var u = a = |x|²/d, Var v = b = |y|²/d and "
                "correlation cos θ = x·y/(|x||y|): written through independent z₁, z₂ ~ N(0, 1)",
                Eq(KERNEL, Expectation(integrand, gaussian(Z1), gaussian(Z2))), kind="definition")
    if unit.expression.is_polynomial(Z):
        record.step("Exact Gaussian moments of a polynomial in z₁, z₂",
                    Eq(KERNEL, sympy.simplify(gaussian_moments_expectation(integrand, [Z1, Z2]))), name="K")
    elif unit.name == "erf":
        conditioned = erf(u) * erf_mean(sqrt(B) * cos(THETA) * Z1, sqrt(B) * sin(THETA))
        record.step("E_z₂[erf(α + βz₂)] = erf(α/√(1 + 2β²)) averages z₂ out",
                    Eq(KERNEL, Expectation(conditioned, gaussian(Z1))))
        record.step(STATED["erf"][1], Eq(KERNEL, STATED["erf"][0]), name="K")
    elif unit.name == "relu":
        record.step(STATED["relu"][1], Eq(KERNEL, STATED["relu"][0]), name="K")
    return record.finish()


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name).strip("_") or "phi"


@lru_cache(maxsize=None)
def _closed_form_code(unit: Activation) -> Callable:
    """The closed form K(a, b, θ) at θ = arccos r, generated for numpy: sympy writes cos(arccos r) = r and
    sin(arccos r) = √(1 − r²), exact for r ∈ [−1, 1], so the code never takes an angle."""
    return evaluator(unit.closed_form.xreplace({THETA: sympy.acos(R)}), [A, B, R], rounding=False)


def closed_form_kernel(unit: Any, a, b, r) -> np.ndarray:
    """K at variances a, b and correlation r ∈ [−1, 1] (broadcast together) by the derivation's closed form."""
    unit = activation(unit)
    if unit.closed_form is None:
        raise ValueError(f"the NNGP kernel of {unit.name} has no closed form here: use kernel_quadrature")
    return _closed_form_code(unit)(a, b, r)
