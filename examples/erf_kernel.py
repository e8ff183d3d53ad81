"""The arcsine kernel of an erf unit

For w ~ N(0, I), E[erf(s w·x) erf(s w·y)] =
(2/π) arcsin(2s² x·y / √((1 + 2s²|x|²)(1 + 2s²|y|²))) (Williams 1997): derived with
Gaussian expectations, each step checked at 30 digits in seconds; Monte Carlo over s
from 1e-3 to 1e3 and θ from 0 to π (the ends among the draws), where erf saturates and the draws
are ±1 but on a set of probability ~1/s: the stated range |erf·erf| ≤ 1 gives an error bar that
needs no central limit theorem there.
"""
import numpy as np
from scipy.special import erf as erf_array
from sympy import Eq, asin, erf, pi, sqrt, symbols
from attnverify import Theory, st
from attnverify.derivations.gaussian import Expectation, gaussian

theory = Theory("erf_kernel", source="Williams (1997), eq. 11")
s = symbols("s", positive=True)  # the unit's input scale
# x, y in their plane; w; w along x
x1, x2, y1, y2, z1, z2, t, K = symbols("x1 x2 y1 y2 z1 z2 t K", real=True)

@theory.derivation
def kernel(step):
    """The arcsine kernel"""
    norm_x, dot = sqrt(x1**2 + x2**2), x1 * y1 + x2 * y2
    # |y|² − (x·y)²/|x|²: y's part across x, squared
    across = (x1 * y2 - x2 * y1) ** 2 / (x1**2 + x2**2)
    step("The kernel as an expectation over the weight's two coordinates",
         Eq(K, Expectation(erf(s * (x1 * z1 + x2 * z2)) * erf(s * (y1 * z1 + y2 * z2)),
                           gaussian(z1), gaussian(z2))), kind="definition")
    step("Rotate x onto the first axis; E[erf(α + βZ)] = erf(α/√(1 + 2β²)) averages "
         "the other coordinate out",
         Eq(K, Expectation(erf(s * norm_x * t)
                           * erf(s * dot / norm_x / sqrt(1 + 2 * s**2 * across) * t),
                           gaussian(t))))
    step("The expectation over t", Eq(K, 2 / pi * asin(2 * s**2 * dot / sqrt(
        (1 + 2 * s**2 * (x1**2 + x2**2)) * (1 + 2 * s**2 * (y1**2 + y2**2))))), name="K")

def units(rng, n, theta, log_s):
    """E[erf(s w·x) erf(s w·y)] = (2/π) arcsin(2s² cos θ/(1 + 2s²)) for unit x, y at
    angle θ."""
    w = 10.0**log_s * rng.standard_normal((n, 2))
    return erf_array(w[:, 0]) * erf_array(np.cos(theta) * w[:, 0] + np.sin(theta) * w[:, 1])

def k_at(theta, log_s):
    return kernel.evaluator("K")(s=10.0**log_s, x1=1.0, x2=0.0, y1=np.cos(theta), y2=np.sin(theta))

ranges = dict(theta=st.floats(0, np.pi), log_s=st.floats(-3, 3))
theory.monte_carlo(units, expected=k_at, resolution=0.01, relative=0.02, bounds=(-1, 1),
                   name="kernel_matches_monte_carlo",
                   figure=dict(theta=np.linspace(0, np.pi, 9), log_s=0), **ranges)
theory.monte_carlo(units, expected=lambda **p: 0.9 * k_at(**p), resolution=0.01, relative=0.02,
                   bounds=(-1, 1), expect="refuted", name="kernel_times_0_9",
                   statement="(False on purpose.) 0.9 times it.", **ranges)
