"""The arc-cosine kernel of a ReLU unit

For w ~ N(0, I) and x, y at angle θ, E[relu(w·x) relu(w·y)] = |x||y| (sin θ + (π − θ) cos θ) / 2π (Cho & Saul),
derived in polar coordinates, each step checked; Monte Carlo at |x| = |y| from 1e-100 to 1e100, where θ = π gives
exact zeros against sin(fl(π)) ≈ 1.2e-16 (round-off, not evidence); the variant with 1/π is false, and refuted.
"""
import numpy as np
from sympy import Eq, Integral, cos, exp, oo, pi, sin, symbols
from attnverify import Theory, st

theory = Theory("relu", source="Cho & Saul (2009), eq. 6")
a, b, r = symbols("a b r", positive=True)  # |x|, |y|, the radius of w in the plane of x and y
theta, phi, k = symbols("theta phi k", real=True)  # the angle between x and y, the angle of w

@theory.derivation
def kernel(step):
    """The arc-cosine kernel of order 1"""
    both = cos(phi) * cos(phi - theta)  # relu(w·x) relu(w·y) / (a b r²) where both units are active
    step("The Gaussian density r e^{-r²/2}/2π in polar coordinates", Eq(k, a * b / (2 * pi) * Integral(Integral(
        r**3 * exp(-r**2 / 2) * both, (phi, theta - pi / 2, pi / 2)), (r, 0, oo))), kind="definition")
    step("The radial integral is 2", Eq(k, a * b / pi * Integral(both, (phi, theta - pi / 2, pi / 2))))
    step("The angular integral", Eq(k, a * b * (sin(theta) + (pi - theta) * cos(theta)) / (2 * pi)), name="k")

def units(rng, n, theta, log_norm):
    """E[relu(w·x) relu(w·y)] = |x||y| (sin θ + (π − θ) cos θ) / 2π, |x| = |y| = 10^log_norm, θ ∈ [0, π]."""
    w = 10.0**log_norm * rng.standard_normal((n, 2))
    return np.maximum(w[:, 0], 0) * np.maximum(np.cos(theta) * w[:, 0] + np.sin(theta) * w[:, 1], 0)

def k_at(theta, log_norm):
    return kernel.evaluator("k")(a=10.0**log_norm, b=10.0**log_norm, theta=theta)

angles = dict(theta=st.floats(0, np.pi), log_norm=st.floats(-100, 100))
sweep = dict(theta=np.linspace(0, np.pi, 9), log_norm=0)  # the figure: theory against Monte Carlo along θ
theory.monte_carlo(units, expected=k_at, relative=0.02, figure=sweep, name="kernel_matches_monte_carlo", **angles)
theory.monte_carlo(units, expected=lambda **p: 2 * k_at(**p), relative=0.02, expect="refuted",
                   name="kernel_with_one_over_pi", statement="(False on purpose.) 1/π for 1/2π.", **angles)
