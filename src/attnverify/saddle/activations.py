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
  float64 quadrature over sectors of the (z₁, z₂) plane with its error estimate
  ([`kernel_quadrature`][attnverify.saddle.activations.kernel_quadrature]).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any, Callable

import numpy as np
import sympy
from sympy import Eq, Piecewise, asin, cos, erf, pi, sin, sqrt, tanh

from ..base import arguments
from ..base.backend import on_device
from ..derivations.codegen import evaluator
from ..derivations.derivation import Derivation, DerivationRecorder
from ..derivations.gaussian import Expectation, QuadratureShort, erf_mean, gaussian, gaussian_moments_expectation
from ..derivations.gaussian.jumps import jump_lines
from ..derivations.gaussian.panels import composite_rule

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


# --- the NNGP kernel by quadrature over sectors -----------------------------------------------------------------


RADIUS = 10.0
"""The radial integral of (1) in polar coordinates stops at ρ = 10: beyond, the Gaussian holds e^{−50} ≈ 2e-22 of
its mass, and the tail is estimated ([`kernel_quadrature`][attnverify.saddle.activations.kernel_quadrature])."""

TAIL_RADII = RADIUS * np.array([1.0, 1.2, 1.4, 1.7, 2.0, 2.5])
"""Radii beyond RADIUS where |φ(u)φ(v)| is looked at for the tail's estimate (`_tail`)."""

RULE, COARSE = 16, 12
"""Gauss–Legendre nodes per panel of the rule whose value is taken, and of the rule beside it on the same panels whose
difference from it is the error estimate (measured on ReLU(z − 1): the 12-node rule already within 10⁻¹⁵ of
E|φφ| of a 24-node one, the 8-node rule 10⁻¹² off: a coarser partner would only inflate the estimate)."""

RADIAL_BREAKS = np.concatenate([[0.0], 2.0 ** np.arange(-6, 0), np.arange(1.0, RADIUS + 1.0)])
"""Radial panels: graded towards 0 by halving (a φ steep or singular at 0 is resolved there), unit panels beyond;
each ray's panels are cut again where it crosses a kink of φ away from 0 (`_radial_rule`)."""

ANGULAR_BREAKS = np.concatenate([[0.0], 2.0 ** np.arange(-6, 0), 1.0 - 2.0 ** np.arange(-2, -7, -1), [1.0]])
"""Panels of each sector, as fractions of it: graded towards both ends, where one unit's argument crosses 0."""

CHUNK = 8
"""Pairs integrated at once (the nodes of one pair without kinks away from 0: 4 sectors × 12 panels × RULE angles by
16 panels × RULE radii, about 2·10⁵ float64; each kink adds angular pieces and radial cuts: CHUNK pairs take some
100 MB of temporaries)."""

QUADRATURE_TOLERANCE = 1e-10
"""The largest error estimate [`nngp_kernel`][attnverify.saddle.network.nngp_kernel] accepts, relative to E|φ(u)φ(v)| at
the same pair."""


@lru_cache(maxsize=None)
def kinks(unit: Activation) -> tuple[float, ...]:
    """The points z ≠ 0 where φ jumps or bends (`attnverify.derivations.gaussian.jumps.jump_lines`: the
    switches of its Piecewise, Abs, Max, …); () where it has none, or where a switch is not affine in z (the error
    estimate then shows what the uncut panels miss)."""
    try:
        lines = jump_lines(unit.expression, [Z])
    except QuadratureShort:
        return ()
    points = {float(-offset / slopes[0]) for offset, slopes in lines if slopes[0] != 0}
    return tuple(sorted(p for p in points if p != 0.0))


def _radial_rule(scales: list, points: tuple, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """(ρ, weights × ρe^{−ρ²/2}/(2π)) on each ray (…, rays, radii), or one rule (radii,) where φ has no kink away
    from 0: `RADIAL_BREAKS` and, for each ``scales`` s (the
    unit's argument per unit ρ along the ray, √a cos ψ or √b cos(ψ − θ)) and kink z_k of φ, the cut ρ = z_k/s where
    it is in (0, RADIUS) (else a panel of width 0 at RADIUS, which adds nothing). Within a sector each cut moves
    smoothly with ψ (s keeps its sign there), so the integral over the rays stays smooth in ψ."""
    if not points:  # one rule for every ray, broadcast
        rho, weights = composite_rule(RADIAL_BREAKS, nodes)
        return rho, weights * rho * np.exp(-rho**2 / 2) / (2 * np.pi)
    shape = scales[0].shape
    cuts = [np.broadcast_to(RADIAL_BREAKS, shape + RADIAL_BREAKS.shape)]
    for scale in scales:
        for point in points:
            with np.errstate(divide="ignore", invalid="ignore"):
                rho = point / scale
            cuts.append(np.where((rho > 0) & (rho < RADIUS), rho, RADIUS)[..., None])
    breaks = np.sort(np.concatenate(cuts, axis=-1), axis=-1)
    rho, weights = composite_rule(breaks, nodes)
    return rho, weights * rho * np.exp(-rho**2 / 2) / (2 * np.pi)


def _pieces(a, b, r, points: tuple, half: bool) -> tuple[np.ndarray, np.ndarray]:
    """(start, width) of the angular pieces (n, pieces) over which the integral of each ray is smooth in ψ: the four
    sectors between the rays where u ∝ cos ψ or v ∝ cos(ψ − θ) vanishes (ψ = π/2, π/2 + θ, 3π/2, 3π/2 + θ for
    θ = arccos r ∈ [0, π]), cut again at the ray through each corner where the lines u = z_j and v = z_k of two
    kinks cross (there the first cut of a ray passes from one line to the other, and the ray's integral bends).
    ``half``: the first two sectors only, ψ ∈ [π/2, 3π/2), each cut taken modulo π (for an integrand of period π in
    ψ, `_flip_symmetric`)."""
    theta = np.arccos(r)
    end = 1.5 * np.pi if half else 2.5 * np.pi
    cuts = [np.full_like(theta, np.pi / 2), np.pi / 2 + theta, np.full_like(theta, 1.5 * np.pi)]
    if not half:
        cuts += [1.5 * np.pi + theta, np.full_like(theta, end)]
    across = np.sqrt(1 - r**2)
    crossing = (a > 0) & (b > 0) & (across > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        for first in points:
            for second in points:
                z1 = first / np.sqrt(a)
                z2 = (second / np.sqrt(b) - r * z1) / across
                angle = np.mod(np.arctan2(z2, z1) - np.pi / 2, end - np.pi / 2) + np.pi / 2  # into [π/2, end)
                cuts.append(np.where(crossing, angle, np.pi / 2))  # none: a piece of width 0, which adds nothing
    cuts = np.sort(np.stack(cuts, axis=1), axis=1)
    return cuts[:, :-1], np.diff(cuts, axis=1)


def _sector_sums(phi: Callable, points: tuple, a, b, r, nodes: int, half: bool, *, bounds: bool = True
                 ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(Σ w φ(u)φ(v), Σ w |φ(u)φ(v)|, the tail's estimate beyond RADIUS (`_tail`)) for one rule, pairs (n,):
    u = √a ρ cos ψ, v = √b ρ cos(ψ − θ), cos(ψ − θ) = r cos ψ + √(1 − r²) sin ψ; ``points``: φ's kinks. ``half``:
    over ψ ∈ [π/2, 3π/2) with twice the weights, exact where φ(−u)φ(−v) = φ(u)φ(v) (`_flip_symmetric`).
    ``bounds=False``: the sum alone (None for the other two), for the rule whose difference is the error estimate."""
    fractions, angular = composite_rule(ANGULAR_BREAKS, nodes)
    start, width = _pieces(a, b, r, points, half)
    psi = (start[:, :, None] + width[:, :, None] * fractions).reshape(len(r), -1)  # (n, angles)
    weight = ((2 if half else 1) * width[:, :, None] * angular).reshape(len(r), -1)
    along_u = np.sqrt(a)[:, None] * np.cos(psi)
    along_v = np.sqrt(b)[:, None] * (r[:, None] * np.cos(psi) + np.sqrt(1 - r**2)[:, None] * np.sin(psi))
    rho, radial = _radial_rule([along_u, along_v], points, nodes)  # (n or 1, angles or 1, radii)
    product = phi(along_u[:, :, None] * rho) * phi(along_v[:, :, None] * rho)
    if not bounds:
        return np.einsum("na,nar->n", weight, product * radial), None, None
    size = np.einsum("na,nar->n", weight, np.abs(product) * radial)
    product *= radial
    value = np.einsum("na,nar->n", weight, product)
    return value, size, _tail(phi, along_u, along_v)


def _flip_symmetric(unit: Activation) -> bool:
    """Whether φ is odd or even as sympy writes it (φ(−z) ∓ φ(z) adds up to 0 term by term: tanh, erf, z³, |z|), so
    that φ(−u)φ(−v) = φ(u)φ(v): the integrand of (1) in polar coordinates then has period π in ψ. False where sympy's
    automatic simplification does not show it (a Piecewise such as hard tanh): the quadrature then takes the whole
    circle, the same integral at twice the work."""
    flipped = unit.expression.subs(Z, -Z)
    return (flipped - unit.expression) == 0 or (flipped + unit.expression) == 0


def _tail(phi: Callable, along_u, along_v) -> np.ndarray:
    """An estimate of (1/2π)∫dψ ∫_R^∞ ρe^{−ρ²/2}|φ(u)φ(v)| dρ per pair: with G(ρ) the largest |φ(u)φ(v)| over the
    rule's angles at radius ρ, and ρ₀ = R < ρ₁ < … < ρ_m = `TAIL_RADII`,

        Σ_i e^{−ρ_i²/2} G(ρ_{i+1}) + 2e^{−ρ_m²/2} G(ρ_m),

    a bound wherever |φ(u)φ(v)| does not decrease along a ray between those radii and grows at most like ρ^k,
    k ≤ ρ_m²/2, beyond ρ_m (∫_{ρ_m}^∞ ρ^{k+1}e^{−ρ²/2} dρ ≤ ρ_m^k e^{−ρ_m²/2}/(1 − k/ρ_m²)). A region where both
    units are active only far out (φ = ReLU(z − 1) at opposite inputs) is seen at the radius where it starts."""
    largest = np.stack([np.max(np.abs(phi(along_u * rho) * phi(along_v * rho)), axis=1) for rho in TAIL_RADII])
    weights = np.exp(-TAIL_RADII**2 / 2)
    return np.einsum("i,in->n", weights[:-1], largest[1:]) + 2 * weights[-1] * largest[-1]


def kernel_quadrature(unit: Any, a, b, r, *, progress: Callable[[str], None] | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""($K$, its error estimate, $\mathbb{E}\lvert\varphi(u)\varphi(v)\rvert$) at variances $a, b \ge 0$ and
    correlation $r \in [-1, 1]$ (1-D, one entry per pair), by (1) in polar coordinates
    $(z_1, z_2) = \rho(\cos\psi, \sin\psi)$:

    $$
    K = (1/2\pi) \int_0^{2\pi} d\psi \int_0^\infty \rho\, e^{-\rho^2/2}\, \varphi(\sqrt{a}\,\rho\cos\psi)\,
    \varphi(\sqrt{b}\,\rho\cos(\psi - \theta))\, d\rho,
    $$

    over the sectors between the rays where $u$ or $v$ is 0, so that a kink or a steep step of $\varphi$ at 0 (ReLU,
    sign, tanh of a large argument) lies on a sector's edge, never inside a panel; each ray cut again where $u$ or $v$
    crosses a kink of $\varphi$ away from 0 (`kinks`); Gauss–Legendre on panels graded towards $\rho = 0$ and towards
    each sector's edges, and at the rays through the corners where two kinks' lines cross (`_pieces`). The error
    estimate is the sum of: $\lvert\text{RULE-node rule} - \text{COARSE-node rule}\rvert$ (the coarser rule's error,
    which bounds the finer one's generously); the tail beyond $\rho =$ `RADIUS` (`_tail`); and 64 ulps of
    $\mathbb{E}\lvert\varphi\varphi\rvert$ for the summation. Non-finite values (an overflow, a divergent $\varphi$)
    give an infinite estimate. Where $\varphi$ is odd or even (`_flip_symmetric`) the integrand has period $\pi$ in
    $\psi$, and half the circle, twice weighted, is the same integral at half the work. ``progress``: a function of
    one line of text, told the pairs done at every twentieth of them."""
    unit = activation(unit)
    arguments.function("progress", progress, "a function of one line of text", optional=True)
    code, points, half = _unit_code(unit.expression, False), kinks(unit), _flip_symmetric(unit)
    phi = lambda u: code(u)[0]  # noqa: E731
    try:
        a, b, r = (np.ascontiguousarray(np.ravel(v), dtype=np.float64) for v in np.broadcast_arrays(a, b, r))
    except (ValueError, TypeError) as error:
        raise ValueError(f"a, b and r must be numbers or arrays of one shape (broadcast together): {error}") from None
    for name, values, low, high in (("a", a, 0.0, np.inf), ("b", b, 0.0, np.inf), ("r", r, -1.0, 1.0)):
        outside = ~((values >= low) & (values <= high) & np.isfinite(values))
        if outside.any():
            span = "[0, inf)" if high == np.inf else "[-1, 1]"
            raise ValueError(f"{name} must be finite and in {span}, got {float(values[outside][0])!r}")
    values, errors, sizes = (np.empty(a.size) for _ in range(3))
    chunks = -(-a.size // CHUNK)
    with np.errstate(all="ignore"):  # an overflow is reported as an infinite error estimate, below
        for index, low in enumerate(range(0, a.size, CHUNK)):
            part = slice(low, low + CHUNK)
            fine, size, tail = _sector_sums(phi, points, a[part], b[part], r[part], RULE, half)
            coarse = _sector_sums(phi, points, a[part], b[part], r[part], COARSE, half, bounds=False)[0]
            error = np.abs(fine - coarse) + tail + 64 * np.finfo(float).eps * size
            finite = np.isfinite(fine) & np.isfinite(error)
            values[part], errors[part], sizes[part] = fine, np.where(finite, error, np.inf), size
            if progress is not None and (20 * (index + 1) // chunks > 20 * index // chunks):
                progress(f"the NNGP kernel of {unit.name} by quadrature: {min(low + CHUNK, a.size):,} of "
                         f"{a.size:,} pairs")
    return values, errors, sizes


# --- the kernel of inputs ---------------------------------------------------------------------------------------


def nngp_kernel(X, Y=None, *, activation: Any = "relu", progress: Callable[[str], None] | None = None) -> np.ndarray:
    """K(x_i, y_j) = E_w[φ(w·x_i) φ(w·y_j)] for w ~ N(0, I/d) (P × Q; Y = X when not given), d the inputs' columns:
    the kernel of one hidden layer of units φ at infinite width, per unit of readout variance (the network of
    [`one_hidden_layer`][attnverify.saddle.network.one_hidden_layer] has σ² times it). By the closed form of
    `kernel_derivation` where there is one (ReLU: |x||y|(sin θ + (π − θ) cos θ)/(2πd); erf:
    (2/π) arcsin(2x·y/d / √((1 + 2|x|²/d)(1 + 2|y|²/d))); linear: x·y/d), else by
    [`kernel_quadrature`][attnverify.saddle.activations.kernel_quadrature], whose error estimate must stay within
    `QUADRATURE_TOLERANCE` of E|φφ| at every pair (else ValueError); ``progress`` (a function of one line of text)
    is told the quadrature's pairs done, at every twentieth of them."""
    unit = _resolve(activation)
    arguments.function("progress", progress, "a function of one line of text", optional=True)
    X = arguments.array("X", X, ndim=2)
    Y = X if Y is None else arguments.array("Y", Y, ndim=2)
    if Y.shape[1] != X.shape[1]:
        raise ValueError(f"Y must have X's {X.shape[1]} columns, got {Y.shape[1]}")
    d = X.shape[1]
    with np.errstate(over="ignore", invalid="ignore"):
        a, b = np.sum(X * X, axis=1) / d, np.sum(Y * Y, axis=1) / d
        for name, norms in (("X", a), ("Y", b)):
            if not np.all(np.isfinite(norms)):
                raise ValueError(f"{name} is too large: |{name.lower()}|²/d of its row "
                                 f"{int(np.argmin(np.isfinite(norms)))} overflows float64 (rescale the inputs)")
        r = _correlations(X @ Y.T / d, a, b)
    if unit.closed_form is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            kernel = np.asarray(closed_form_kernel(unit, a[:, None], b[None, :], r), dtype=np.float64)
        if not np.all(np.isfinite(kernel)):
            i, j = np.argwhere(~np.isfinite(kernel))[0]
            raise ValueError(f"X is too large for activation {unit.name}: its kernel overflows float64 at x_{i}, y_{j} "
                             f"(|x|²/d = {a[i]:.3g}, |y|²/d = {b[j]:.3g}); rescale the inputs")
        return kernel
    return _kernel_by_quadrature(unit, a, b, r, symmetric=Y is X, progress=progress)


def _resolve(spec: Any) -> Activation:
    """[`activation`][attnverify.saddle.activations.activation] (under another name:
    [`nngp_kernel`][attnverify.saddle.network.nngp_kernel]'s keyword of that name hides it there)."""
    return activation(spec)


def _correlations(dot: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """r = (x·y/d)/√(ab), clipped to [−1, 1] (Cauchy–Schwarz holds exactly; rounding may step past it by an ulp),
    and 0 where x or y is 0 (then u or v is 0 whatever r is)."""
    scale = np.sqrt(a)[:, None] * np.sqrt(b)[None, :]
    r = np.divide(dot, scale, out=np.zeros_like(dot), where=scale > 0)
    return np.clip(r, -1.0, 1.0)


def _kernel_by_quadrature(unit: Activation, a, b, r, *, symmetric: bool, progress: Callable | None) -> np.ndarray:
    """[`kernel_quadrature`][attnverify.saddle.activations.kernel_quadrature] at every pair (the upper triangle only
    when Y is X), each error estimate checked against `QUADRATURE_TOLERANCE` of the pair's scale, the larger of
    E|φ(u)φ(v)| and √(K(x, x) K(y, y)) (the bound on |K| by Cauchy–Schwarz: a pair whose kernel is 0 or tiny is judged
    on the kernel's own scale)."""
    rows, cols = np.triu_indices(len(a)) if symmetric else np.indices(r.shape).reshape(2, -1)
    values, errors, sizes = kernel_quadrature(unit, a[rows], b[cols], r[rows, cols], progress=progress)
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(sizes))):
        worst = int(np.argmin(np.isfinite(values) & np.isfinite(sizes)))
        raise ValueError(f"X is too large for activation {unit.name}: its kernel overflows float64 at x_{rows[worst]}, "
                         f"y_{cols[worst]} (|x|²/d = {a[rows[worst]]:.3g}, |y|²/d = {b[cols[worst]]:.3g}); rescale "
                         "the inputs")
    if symmetric:
        diagonal = values[rows == cols]
        own_x = own_y = np.abs(diagonal)
    else:
        own = kernel_quadrature(unit, np.concatenate([a, b]), np.concatenate([a, b]), 1.0)[0]
        own_x, own_y = np.abs(own[:len(a)]), np.abs(own[len(a):])
    scales = np.maximum(sizes, np.sqrt(own_x[rows] * own_y[cols]))
    worst = int(np.argmax(errors / np.maximum(scales, np.finfo(float).tiny)))
    if not errors[worst] <= QUADRATURE_TOLERANCE * scales[worst]:
        raise ValueError(f"activation {unit.name}: the quadrature of its kernel at x_{rows[worst]}, y_{cols[worst]} "
                         f"(|x|²/d = {a[rows[worst]]:.3g}, |y|²/d = {b[cols[worst]]:.3g}, cos θ = "
                         f"{r[rows[worst], cols[worst]]:.3g}) has an error estimate {errors[worst]:.2g} against a "
                         f"scale {scales[worst]:.2g}, beyond {QUADRATURE_TOLERANCE:g} of it: E[φ(u)φ(v)] diverges "
                         "there, or φ has a feature the panels do not resolve")
    kernel = np.empty(r.shape)
    kernel[rows, cols] = values
    if symmetric:
        kernel[cols, rows] = values
    return kernel
