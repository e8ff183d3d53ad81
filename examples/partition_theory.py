"""The softmax partition function of Gaussian scores

A worked example of a theory of your own (README, "Writing your own theory"). With L attention scores
s_ℓ = σ Z_ℓ, Z_ℓ i.i.d. standard normal, the softmax's partition function Σ_ℓ exp(s_ℓ) has mean L·exp(σ²/2):
derived below by sympy, turned into an evaluator by the code generator, and checked against Monte Carlo.
A tempting shortcut, E[log Σ exp(s_ℓ)] = log L + σ²/2, is false (Jensen: the log of a mean exceeds the
mean of the log), and the tool refutes it. Scores are shifted by an offset up to 900 in that check: the
plain exp overflows there, the generated LogSumExp does not.

Build its report: ``attnverify report --with examples/partition_theory.py --only partition --out report_mine``.
"""

from functools import lru_cache

import numpy as np
import sympy

from attnverify.checks import at_most, claim, st, within_error
from attnverify.derivations.codegen import evaluator
from attnverify.derivations.derivation import DerivationRecorder
from attnverify.derivations.functions import LogSumExp
from attnverify.numerics.sized import sized_mean
from attnverify.numerics.statistics import mean_estimate
from attnverify.report.figures import theory_vs_simulation
from attnverify.report.section import Section

THEORY = "partition"
TITLE = "Example: the softmax partition function of Gaussian scores"

sigma = sympy.Symbol("sigma", positive=True)
L = sympy.Symbol("L", positive=True, integer=True)
z = sympy.Symbol("z", real=True)
SAMPLES = 5_000  # Monte Carlo draws of the L scores per example of the one-sided Jensen claim
RESOLUTION = 0.01  # the relative error in the mean partition function that the Monte Carlo must resolve
BUDGET = 400_000  # draws at most; (5·0.93/0.01)² = 216,000 suffice at the worst case L = 2, σ = 1


@lru_cache(maxsize=None)
def partition_derivation():
    """E[Σ_ℓ exp(σZ_ℓ)] = L exp(σ²/2), step by step (sympy integrates once per process)."""
    rec = DerivationRecorder("partition.mean", "Mean of the partition function", "this example")
    density = sympy.exp(-z**2 / 2) / sympy.sqrt(2 * sympy.pi)
    integral = sympy.Integral(sympy.exp(sigma * z) * density, (z, -sympy.oo, sympy.oo))
    rec.step("One score: E[exp(σZ)] as a Gaussian integral", sympy.Eq(sympy.Symbol("m"), integral), kind="definition")
    rec.step("Complete the square and integrate (sympy)", sympy.Eq(sympy.Symbol("m"), integral.doit()),
             name="one_score")
    mean = sympy.Symbol("E[Z_L]")
    rec.step("Linearity over the L scores: the mean of the sum is L times one score's mean",
             sympy.Eq(mean, L * sympy.Symbol("m")), kind="assumption")
    rec.step("Insert the one score's mean", sympy.Eq(mean, L * integral.doit()), name="partition_mean")
    return rec.finish()


def derivations():
    return [partition_derivation()]


def partition_mean(L_values, sigma_values):
    """The generated evaluator of L·exp(σ²/2) (from the derivation's named result)."""
    expression = partition_derivation().result("partition_mean").rhs
    return evaluator(expression, [L, sigma])(L_values, sigma_values)


def _scores(rng, length, scale, offset=0.0, samples=SAMPLES):
    return offset + scale * rng.standard_normal((samples, length))


def _partition(rng, length, scale, samples):
    """``samples`` draws of Σ_ℓ exp(σZ_ℓ): a ``draw(rng, n)`` for sized_mean."""
    return np.exp(_scores(rng, length, scale, samples=samples)).sum(axis=1)


@claim("partition.mean_matches_derivation",
       parameters=st.fixed_dictionaries({"L": st.integers(2, 64), "sigma": st.floats(0.1, 1.0)}))
def mean_matches_derivation(p, ctx):
    """E[Σ_ℓ exp(σZ_ℓ)] = L·exp(σ²/2): the Monte Carlo mean of the partition function equals the derived
    value within 5 standard errors, drawn until a 1 % error in it is resolved (5 SE ≤ 1 % of L·exp(σ²/2))."""
    derived = float(partition_mean(p["L"], p["sigma"]))
    estimate = sized_mean(lambda rng, n: _partition(rng, p["L"], p["sigma"], n), ctx.rng, relative_resolution=RESOLUTION,
                          reference=derived, budget=BUDGET)
    return within_error(derived, estimate, figures=estimate.sizing())


@claim("partition.log_partition_is_log_of_mean", expect="refuted",
       parameters=st.fixed_dictionaries({"L": st.integers(2, 64), "sigma": st.floats(0.1, 3.0),
                                         "offset": st.floats(0.0, 900.0)}))
def log_partition_is_log_of_mean(p, ctx):
    """(False on purpose.) E[log Σ_ℓ exp(c + σZ_ℓ)] = c + log L + σ²/2, i.e. the log of the mean partition
    function; Jensen's inequality makes the left side smaller."""
    a = sympy.symbols("a0:%d" % p["L"], real=True)
    lse = evaluator(LogSumExp(*a), a)  # overflow-safe at c = 900, where exp(c) is inf in float64
    predicted = p["offset"] + float(np.log(partition_mean(p["L"], p["sigma"])))
    # a discrepancy of 0.01 in the log (1 % in the partition function) must be resolved
    estimate = sized_mean(lambda rng, n: lse(*_scores(rng, p["L"], p["sigma"], p["offset"], n).T), ctx.rng,
                          resolution=RESOLUTION, budget=BUDGET)
    return within_error(predicted, estimate, figures=estimate.sizing())


@claim("partition.jensen_gap_is_nonnegative",
       parameters=st.fixed_dictionaries({"L": st.integers(2, 64), "sigma": st.floats(0.1, 3.0)}))
def jensen_gap_is_nonnegative(p, ctx):
    """E[log Σ exp(σZ_ℓ)] ≤ log L + σ²/2 (Jensen), with 5 standard errors of slack."""
    values = np.log(np.exp(_scores(ctx.rng, p["L"], p["sigma"])).sum(axis=1))
    estimate = mean_estimate(values)
    return at_most(estimate.mean, float(np.log(partition_mean(p["L"], p["sigma"]))),
                   tolerance=5 * estimate.standard_error, standard_error=estimate.standard_error)


def build_section(out_dir, *, profile, backend, seed, progress, store=None):
    """Derivation, and the partition function's mean per score against σ (theory vs Monte Carlo)."""
    progress("partition: Monte Carlo against σ")
    rng = np.random.default_rng(seed)
    sigmas = np.linspace(0.1, 1.5, 8)
    length = 16
    estimates = [sized_mean(lambda r, n: _partition(r, length, s, n) / length, rng, relative_resolution=RESOLUTION,
                            reference=float(partition_mean(length, s)) / length, budget=BUDGET) for s in sigmas]
    fine = np.linspace(0.1, 1.5, 100)
    figure = theory_vs_simulation(
        out_dir, "partition_mean.png", x=sigmas, theory=partition_mean(length, fine) / length, theory_x=fine,
        estimates=estimates, xlabel="σ", ylabel="E[Σ exp(s_ℓ)] / L",
        caption=f"Mean partition function per score, L = {length}, Monte Carlo drawn until 5 SE ≤ {RESOLUTION:.0%} of "
                f"the derived value ({min(e.samples for e in estimates):,}–{max(e.samples for e in estimates):,} draws "
                "per point); line: the derived exp(σ²/2).")
    return Section(theory=THEORY, title=TITLE, introduction=__doc__.split("\n", 2)[2].strip(),
                   derivations=derivations(), figures=[figure])
