"""4. The readout order parameter U_a in closed form (§2.1).

Part of `attnverify.theories.attention_paths.derivations` (see its docstring for the spec and sources).
"""

from __future__ import annotations

import numpy as np
import sympy
from sympy import Eq, Rational, Symbol, log, sqrt

from ....base import arguments
from ....base.backend import to_numpy
from ..theory import theory

from ._common import SOURCE, U_a, sigma_a2


trace_U_L = Symbol("Tr U_L", positive=True)
heads_last = Symbol("H_L", positive=True)
width_prev = Symbol("n_{L-1}", positive=True)
width_last = Symbol("n_L", positive=True)
var_last = Symbol("sigma_L^2", positive=True)
READOUT_ARGUMENTS = (trace_U_L, heads_last, width_prev, width_last, var_last, sigma_a2)
READOUT_NAMES = tuple(s.name for s in READOUT_ARGUMENTS)


def readout_coefficients() -> tuple[sympy.Expr, sympy.Expr]:
    """(b, g) of the note: U_a² + b U_a − g = 0 with b = σ_a²(H_L n_{L−1}/n_L − 1), g = Tr U_L σ_a² n_{L−1}/(n_L
    σ_L²)."""
    b = sigma_a2 * (heads_last * width_prev / width_last - 1)
    g = trace_U_L * sigma_a2 * width_prev / (width_last * var_last)
    return b, g


@theory.derivation(name="readout_order_parameter", title="The readout order parameter U_a in closed form",
                   source=f"{SOURCE}; note §2.1 (compute_scalar_order_parameter), §2.2")
def readout_derivation(step) -> None:
    """∂S/∂U_a = 0 solved for U_a (§2.1 closed form, authors' ``compute_scalar_order_parameter``)."""
    S_a = Symbol("S_a")
    part = width_last * (U_a / sigma_a2 - log(U_a)) + width_prev * (trace_U_L / (var_last * U_a) + heads_last * log(U_a))
    step(
        "The terms of S that contain U_a: the readout prior and the ℓ = L layer, where "
        "Tr(U_a^{-1} Tr_{h_L} U_L) = Tr U_L / U_a and H_L ln det U_a = H_L ln U_a",
        Eq(S_a, part),
        kind="definition",
    )
    stationarity = sympy.diff(part, U_a)
    step("Stationarity ∂S/∂U_a = 0", Eq(sympy.Derivative(S_a, U_a), 0), kind="condition")
    x = Symbol("x", real=True)  # not positive: solve must return both roots to choose from
    quadratic = sympy.expand(stationarity * U_a**2 * sigma_a2 / width_last).subs(U_a, x)
    b, g = readout_coefficients()
    if sympy.expand(quadratic - (x**2 + b * x - g)) != 0:
        raise AssertionError("the stationarity condition is not the note's quadratic")
    step("Multiply by U_a² σ_a²/n_L (> 0): a quadratic x² + b x − g = 0 in x = U_a", Eq(sympy.collect(quadratic, x), 0),
         kind="condition")
    roots = sympy.solve(quadratic, x)
    step("sympy.solve", sympy.FiniteSet(*roots))
    # Vieta: the product of the roots is −g < 0, so exactly one root is positive. The difference of
    # the roots is ±sqrt(b² + 4g), which never vanishes on the (connected) positive domain, so its
    # sign is that at any one point: choose there.
    product = sympy.cancel(roots[0] * roots[1] + g)
    if product != 0:
        raise AssertionError("the roots' product is not −g")
    probe = {trace_U_L: Rational(3, 7), heads_last: 2, width_prev: Rational(5, 3), width_last: Rational(11, 5),
             var_last: Rational(13, 10), sigma_a2: Rational(7, 9)}
    positive = [r for r in roots if r.xreplace(probe).evalf() > 0]
    (root,) = positive
    step(
        "The roots' product is −g < 0 (Vieta), so exactly one is positive; as b² + 4g > 0 the roots never "
        "cross, and the positive one is the same everywhere: the one with +sqrt",
        Eq(U_a, root),
    )
    note_form = (-b + sqrt(b**2 + 4 * g)) / 2
    if sympy.simplify(root - note_form) != 0:
        raise AssertionError("the positive root is not the note's (−b + sqrt(b² + 4g))/2")
    B, Gs = Symbol("b"), Symbol("g")
    step("The note's b and g", sympy.Tuple(Eq(B, b), Eq(Gs, g)), kind="definition")
    step("In the note's b and g", Eq(U_a, (-B + sqrt(B**2 + 4 * Gs)) / 2))
    stable = sympy.Piecewise((2 * g / (b + sqrt(b**2 + 4 * g)), b >= 0), (note_form, True))
    step(
        "For evaluation without cancellation (b ≥ 0, g ≪ b²): multiply by the conjugate where b ≥ 0",
        Eq(U_a, stable),
        name="U_a",
    )


def readout_expression() -> sympy.Expr:
    """U_a(Tr U_L, H_L, n_{L−1}, n_L, σ_L², σ_a²), the positive root, cancellation-free form."""
    return readout_derivation().result("U_a").rhs


def readout_order_parameter(trace_U_L, heads_last, width_prev, width_last, var_last, var_readout, backend=None, *,
                            check_arguments: bool = True):
    """U_a = (−b + sqrt(b² + 4g))/2, b = σ_a²(H_L n_{L−1}/n_L − 1), g = Tr U_L σ_a² n_{L−1}/(n_L σ_L²).

    The positive root of ∂S/∂U_a = 0 (§2.1; authors' ``compute_scalar_order_parameter``), given
    Tr U_L > 0, H_L ≥ 1 heads in the last layer, widths n_{L−1}, n_L > 0 and variances σ_L², σ_a² > 0.
    Arrays broadcast; evaluated by a generated (numpy or cupy) evaluator. ``check_arguments=False``
    (as scipy's ``check_finite``) skips the argument checks, for a caller that checked them once and
    evaluates U_a at every step (the saddle-point solver).
    """
    if check_arguments:
        for name, value in (("trace_U_L", trace_U_L), ("heads_last", heads_last), ("width_prev", width_prev),
                            ("width_last", width_last), ("var_last", var_last), ("var_readout", var_readout)):
            if isinstance(value, (bool, np.bool_)) or getattr(value, "dtype", None) == np.bool_:
                raise TypeError(f"{name} must be a number > 0 or an array of them, got {value!r}")
            v = arguments.array(name, to_numpy(value) if hasattr(value, "dtype") else value)
            if np.any(v <= 0):
                raise ValueError(f"{name} must be finite and > 0, got {value!r}")
            if name == "heads_last" and np.any(v < 1):
                raise ValueError(f"heads_last must be ≥ 1, got {value!r}")
        backend = arguments.backend(backend)
    f = readout_derivation.evaluator("U_a").array_function(*READOUT_NAMES, backend=backend)
    return f(trace_U_L, heads_last, width_prev, width_last, var_last, var_readout)
