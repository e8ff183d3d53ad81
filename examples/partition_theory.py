"""Example: the softmax partition function of Gaussian scores

A worked example of a theory of your own (README, "Writing your own theory"). With L attention
scores s_ℓ = σ Z_ℓ, Z_ℓ i.i.d. standard normal, the softmax's partition function
Σ_ℓ exp(s_ℓ) has mean L·exp(σ²/2): derived below by sympy, turned into an evaluator by the
code generator, and checked against Monte Carlo. A tempting shortcut,
E[log Σ exp(s_ℓ)] = log L + σ²/2, is false (Jensen: the log of a mean exceeds the mean of the
log), and the tool refutes it. Scores are shifted by an offset up to 900 in that check: the
plain exp overflows there, the generated LogSumExp does not.

Build its report:
``attnverify report --with examples/partition_theory.py --only partition --out report_mine``.
"""

import numpy as np
import sympy

from attnverify import Theory, at_most, mean_estimate, st
from attnverify.derivations.codegen import evaluator
from attnverify.derivations.functions import LogSumExp

theory = Theory("partition", title="Example: the softmax partition function of Gaussian scores",
                source="this example")
sigma, L = sympy.Symbol("sigma", positive=True), sympy.Symbol("L", positive=True, integer=True)
z, m, mean_sum = sympy.Symbol("z", real=True), sympy.Symbol("m"), sympy.Symbol("E[Z_L]")


@theory.derivation
def mean(step):
    """Mean of the partition function"""
    density = sympy.exp(-z**2 / 2) / sympy.sqrt(2 * sympy.pi)
    integral = sympy.Integral(sympy.exp(sigma * z) * density, (z, -sympy.oo, sympy.oo))
    step("One score: E[exp(σZ)] as a Gaussian integral", sympy.Eq(m, integral), kind="definition")
    step("Complete the square and integrate (sympy)", sympy.Eq(m, integral.doit()),
         name="one_score")
    step("Linearity over the L scores: the mean of the sum is L times one score's mean",
         sympy.Eq(mean_sum, L * m), kind="assumption")
    step("Insert the one score's mean", sympy.Eq(mean_sum, L * integral.doit()),
         name="partition_mean")


def partition_mean(L, sigma):
    """L·exp(σ²/2), generated from the derivation's named result."""
    return mean.evaluator("partition_mean")(L=L, sigma=sigma)


def partition(rng, n, L, sigma):
    """E[Σ_ℓ exp(σZ_ℓ)] = L·exp(σ²/2): the Monte Carlo mean equals the derived value
    within 5 SE, drawn until a 1 % error in it is resolved."""
    return np.exp(sigma * rng.standard_normal((n, L))).sum(axis=1)


def log_partition(rng, n, L, sigma, offset):
    """(False on purpose.) E[log Σ_ℓ exp(c + σZ_ℓ)] = c + log L + σ²/2, i.e. the log of the
    mean partition function; Jensen's inequality makes the left side smaller."""
    scores = sympy.symbols(f"a0:{L}", real=True)
    # overflow-safe at c = 900, where exp(c) is inf in float64
    lse = evaluator(LogSumExp(*scores), scores)
    return lse(*(offset + sigma * rng.standard_normal((n, L))).T)


# (5·0.93/0.01)² = 216,000 draws resolve 1 % at the worst case L = 2, σ = 1: a budget of 400,000
theory.monte_carlo(partition, expected=partition_mean, relative=0.01, budget=400_000,
                   figure=dict(sigma=np.linspace(0.1, 1.5, 8), L=16), xlabel="σ",
                   ylabel="E[Σ exp(s_ℓ)]", name="mean_matches_derivation", L=st.integers(2, 64),
                   sigma=st.floats(0.1, 1.0))
theory.monte_carlo(log_partition,
                   expected=lambda L, sigma, offset: offset + np.log(partition_mean(L, sigma)),
                   resolution=0.01, budget=400_000, expect="refuted",
                   name="log_partition_is_log_of_mean",
                   L=st.integers(2, 64), sigma=st.floats(0.1, 3.0), offset=st.floats(0.0, 900.0))


@theory.claim(L=st.integers(2, 64), sigma=st.floats(0.1, 3.0))
def jensen_gap_is_nonnegative(L, sigma, rng):
    """E[log Σ exp(σZ_ℓ)] ≤ log L + σ²/2 (Jensen), with 5 standard errors of slack."""
    estimate = mean_estimate(np.log(np.exp(sigma * rng.standard_normal((5_000, L))).sum(axis=1)))
    return at_most(estimate.mean, float(np.log(partition_mean(L, sigma))),
                   standard_error=estimate.standard_error)  # the slack: z = 5 of them
