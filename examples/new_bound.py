"""Two candidate bounds on the oracle's excess risk in single-location regression.

Run with:  attnverify verify examples/new_bound.py
"""

import math

from scipy.special import erfc

from attnverify import Theory, st
from attnverify.checks import at_most
from attnverify.theories.single_location.derivations import (oracle_excess_risk_high_precision,
                                                             oracle_risk)
from attnverify.theories.single_location import make_task, risk_monte_carlo

theory = Theory("mybounds", source="my own bounds on Marion et al. (2025), Theorem 1")
GAMMA = math.sqrt(0.5)
regime = dict(lam=st.floats(0.01, 1.0), d=st.integers(4, 2000), L=st.integers(1, 50))


def noise_tokens(lam, L):
    """(L−1)·E erf(λZ)² = (L−1)(2/π) arcsin(2λ²/(1+2λ²)): the uninformative
    tokens' share."""
    return (L - 1) * 2 / math.pi * math.asin(2 * lam**2 / (1 + 2 * lam**2))


@theory.claim(**regime)
def erfc_squared(lam, d, L):
    """ℛ(T*) − ε² ≤ γ² erfc(λ√(d/2))² + (4/π)(L−1)λ²
    (the small-λ heuristic, read as a bound)."""
    excess = oracle_excess_risk_high_precision(lam, d, L, GAMMA)
    return at_most(excess,
                   GAMMA**2 * erfc(lam * math.sqrt(d / 2)) ** 2 + 4 / math.pi * (L - 1) * lam**2,
                   tolerance=1e-12 * excess)


@theory.claim(**regime)
def two_erfc(lam, d, L, ctx):
    """The simulated oracle risk is at most ε² + 2γ² erfc(λ√(d/2)/√(1+2λ²γ²)) +
    (L−1)E erf(λZ)² (from ζ ≤ 1 in Theorem 1), up to 5 Monte Carlo standard errors."""
    task = make_task(d, L, gamma=GAMMA, eps=0.1, seed=ctx.seed)
    mc = risk_monte_carlo(task, task.k_star, task.v_star, lam, 100_000, ctx.rng)
    bound = (0.1**2
             + 2 * GAMMA**2 * erfc(lam * math.sqrt(d / 2) / math.sqrt(1 + 2 * lam**2 * GAMMA**2))
             + noise_tokens(lam, L))
    return at_most(mc.mean, bound, standard_error=mc.standard_error,  # within 5 SE of the bound
                   figures={"closed_form_risk": float(oracle_risk(lam, d, L, GAMMA, 0.1))})
