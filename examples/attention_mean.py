"""Softmax attention over Gaussian keys: the tilted mean

For keys k ~ N(0, 1), softmax attention with score βk over L → ∞ tokens whose values are the
keys returns E[k e^{βk}] / E[e^{βk}]. Its numerator is β e^{β²/2} (complete the square: under
the tilt, k ~ N(β, 1)).
"""
import numpy as np
from sympy import Eq, exp, symbols
from attnverify import Theory, st
from attnverify.derivations.gaussian import Expectation, gaussian

theory = Theory("tilted", source="a first exercise")
beta = symbols("beta", positive=True)
k, m = symbols("k m", real=True)


@theory.derivation
def numerator(step):
    """The numerator of the attention output"""
    step("Its definition", Eq(m, Expectation(k * exp(beta * k), gaussian(k))), kind="definition")
    step("Complete the square: k ~ N(β, 1) under the tilt, of mass e^{β²/2}",
         Eq(m, beta * exp(beta**2 / 2)), name="m")


def tilted(rng, n, beta):
    """n draws of k e^{βk}, k ~ N(0, 1): their mean is the numerator."""
    k = rng.standard_normal(n)
    return k * np.exp(beta * k)


def m_at(beta):
    return numerator.evaluator("m")(beta=beta)


theory.monte_carlo(tilted, expected=m_at, relative=0.02, resolution=0.01, budget=4 * 10**6,
                   beta=st.floats(0.05, 1.5), figure=dict(beta=np.linspace(0.05, 1.5, 8)),
                   name="numerator_matches_monte_carlo")
theory.monte_carlo(tilted, expected=lambda beta: beta * np.exp(beta**2), relative=0.02,
                   resolution=0.01, beta=st.floats(0.05, 1.5), expect="refuted",
                   name="numerator_with_the_whole_square",
                   statement="(False on purpose.) e^{β²} for e^{β²/2}.")
