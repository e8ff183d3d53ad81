"""The arc-cosine kernel of a ReLU unit

For w ~ N(0, I), x, y at angle θ: derived in polar coordinates (Cho & Saul), each step checked;
Monte Carlo at |x| = |y| from 1e-100 to 1e100 (θ = π: exact zeros against sin(fl(π)) ≈ 1e-16)."""
import numpy as np
from sympy import Eq, Integral, cos, exp, oo, pi, sin, symbols
from attnverify import Theory, st

theory = Theory("relu", source="Cho & Saul (2009), eq. 6")
a, b, r = symbols("a b r", positive=True)  # |x|, |y|, the radius of w in the plane of x and y
theta, phi, k = symbols("theta phi k", real=True)  # the angle of y to x, the angle of w

@theory.derivation
def kernel(step):
    """The arc-cosine kernel of order 1"""
    both = cos(phi) * cos(phi - theta)  # relu(w·x) relu(w·y) / (a b r²) where both are active
    active = (phi, theta - pi / 2, pi / 2)  # the angles of w at which both units are active
    step("The Gaussian density r e^{-r²/2}/2π in polar coordinates", Eq(k, a * b / (2 * pi)
         * Integral(Integral(r**3 * exp(-r**2 / 2) * both, active), (r, 0, oo))), kind="definition")
    step("The radial integral is 2", Eq(k, a * b / pi * Integral(both, active)))
    step("The angular integral", Eq(k, a * b * (sin(theta) + (pi - theta) * cos(theta)) / (2 * pi)),
         name="k")

def units(rng, n, theta, log_norm):
    """E[relu(w·x) relu(w·y)] = |x||y| (sin θ + (π − θ) cos θ) / 2π, |x| = |y| = 10^log_norm."""
    w = 10.0**log_norm * rng.standard_normal((n, 2))
    return np.maximum(w[:, 0], 0) * np.maximum(w @ [np.cos(theta), np.sin(theta)], 0)

def k_at(theta, log_norm):
    return kernel.evaluator("k")(a=10.0**log_norm, b=10.0**log_norm, theta=theta)

draws = dict(theta=st.floats(0, np.pi), log_norm=st.floats(-100, 100), relative=0.02)
sweep = dict(theta=np.linspace(0, np.pi, 9), log_norm=0)  # the figure: theory and Monte Carlo in θ
theory.monte_carlo(units, expected=k_at, figure=sweep, name="kernel_matches_monte_carlo", **draws)
theory.monte_carlo(units, expected=lambda **p: 2 * k_at(**p), expect="refuted", **draws,
                   name="kernel_with_one_over_pi", statement="(False on purpose.) 1/π for 1/2π.")
