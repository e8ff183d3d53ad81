"""The arc-cosine kernel of a ReLU unit

A theorem of one's own, checked three ways (README, "Checking a theorem of your own"). For w ~ N(0, I) and x, y
at angle θ, E[relu(w·x) relu(w·y)] = |x||y| (sin θ + (π − θ) cos θ) / 2π (Cho & Saul 2009). The derivation below
goes to polar coordinates in the plane of x and y; the tool checks each of its steps (symbolically where sympy
decides, else at random points in 30 digits, integrals included). The Monte Carlo claim draws until a 1 % error
would show, and compares up to the round-off of the formula's terms: at θ = π every sample is exactly 0 while
sin(fl(π)) ≈ 1.2e-16, which is round-off, not evidence. A variant with 1/π for 1/2π is false, and refuted.

Run it: ``attnverify verify examples/relu_kernel.py`` (add ``--report report_relu`` for its report).
"""

from functools import lru_cache

import numpy as np
import sympy
from sympy import Eq, Integral, cos, exp, oo, pi, sin

from attnverify.checks import claim, st, within_error
from attnverify.derivations.codegen import evaluator
from attnverify.derivations.derivation import DerivationRecorder
from attnverify.derivations.rounding import rounding_scale
from attnverify.numerics.sized import sized_mean

THEORY = "relu"
a, b, r = sympy.symbols("a b r", positive=True)  # |x|, |y|, the radius of w in the plane of x and y
theta, phi = sympy.symbols("theta phi", real=True)  # the angle between x and y, the angle of w
k = sympy.Symbol("k")


@lru_cache(maxsize=None)
def kernel_derivation():
    """E[relu(w·x)relu(w·y)] in polar coordinates: w = r(cos φ, sin φ), both units active for φ ∈ (θ − π/2, π/2)."""
    rec = DerivationRecorder("relu.kernel", "The arc-cosine kernel of order 1", "Cho & Saul (2009), eq. 6")
    active = cos(phi) * cos(phi - theta)  # relu(w·x) relu(w·y) / (a b r²) where both are positive
    rec.step("Gaussian density r e^{-r²/2}/2π in polar coordinates, over the angles where both units are active",
             Eq(k, a * b / (2 * pi) * Integral(Integral(r**3 * exp(-r**2 / 2) * active, (phi, theta - pi / 2, pi / 2)),
                                                (r, 0, oo))), kind="definition")
    rec.step("The radial integral is ∫ r³ e^{-r²/2} dr = 2",
             Eq(k, a * b / pi * Integral(active, (phi, theta - pi / 2, pi / 2))))
    rec.step("The angular integral", Eq(k, a * b * (sin(theta) + (pi - theta) * cos(theta)) / (2 * pi)), name="kernel")
    return rec.finish()


def derivations():
    return [kernel_derivation()]


def _units(rng, theta_value, norm, n):
    """n draws of relu(w·x) relu(w·y) for |x| = |y| = norm at angle θ (y built from x, as one would)."""
    w = rng.standard_normal((n, 2))
    x, y = norm * np.array([1.0, 0.0]), norm * np.array([np.cos(theta_value), np.sin(theta_value)])
    return np.maximum(w @ x, 0) * np.maximum(w @ y, 0)


def _compare(p, ctx, factor=1):
    expression = kernel_derivation().result("kernel").rhs
    norm = 10.0 ** p["log_norm"]
    theory = factor * float(evaluator(expression, [a, b, theta])(norm, norm, p["theta"]))
    scale = factor * float(rounding_scale(expression, [a, b, theta])(norm, norm, p["theta"]))  # the terms' size
    estimate = sized_mean(lambda rng, n: _units(rng, p["theta"], norm, n), ctx.rng,
                          resolution=0.01 * norm**2, budget=2_000_000)  # 1 % of |x||y|, the kernel's scale
    return within_error(theory, estimate, scale=scale, figures=estimate.sizing())


ANGLES = st.fixed_dictionaries({"theta": st.floats(0, np.pi), "log_norm": st.floats(-100, 100)})


@claim("relu.kernel_matches_monte_carlo", parameters=ANGLES)
def kernel_matches_monte_carlo(p, ctx):
    """E[relu(w·x)relu(w·y)] = |x||y|(sin θ + (π − θ)cos θ)/2π, |x| = |y| from 1e-100 to 1e100, θ ∈ [0, π]."""
    return _compare(p, ctx)


@claim("relu.kernel_with_one_over_pi", parameters=ANGLES, expect="refuted")
def kernel_with_one_over_pi(p, ctx):
    """(False on purpose.) The same with 1/π for 1/2π."""
    return _compare(p, ctx, factor=2)
