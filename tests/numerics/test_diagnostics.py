"""R-hat, ESS and MCSE from arviz-stats, and the convergence gate: behaviour on draws whose answer is known.

Draws come from ``seeds.rng`` (``ATTNVERIFY_TEST_SEED_OFFSET`` reruns them under fresh seeds); each stochastic
assertion states its false-alarm probability. The gate's thorough validation (thousands of replicates, the shapes
the tests and claims use) is ``benchmarks/rhat_gate.py``.
"""

import numpy as np
import pytest
from scipy import stats

from arviz_stats.base import array_stats

from attnverify.numerics.diagnostics import (ChainSummary, ESS_MINIMUM, RHAT_CAP, ess_bulk, nested_rhat,
                                             nested_rhat_limit, null_ess, rank_normalise, rhat, rhat_limit,
                                             split_chains, summarize)
from seeds import rng


def ar1(generator, shape, rho, start=None):
    """AR(1) chains (..., draws) with unit marginal variance, x_t = ρx_{t−1} + √(1−ρ²)ε, from ``start`` (...) or, by
    default, x₀ ~ N(0, 1) (stationary)."""
    x = np.empty(shape)
    x[..., 0] = generator.normal(size=shape[:-1]) if start is None else start
    noise = generator.normal(size=shape) * np.sqrt(1 - rho**2)
    for t in range(1, shape[-1]):
        x[..., t] = rho * x[..., t - 1] + noise[..., t]
    return x


def test_independent_draws():
    """False alarm ≤ 10⁻³ (the gate) + ~10⁻⁵ (ESS within ±20 %: 4 of its ~5 % standard deviations)."""
    x = rng(0).normal(size=(4, 2000))
    assert abs(float(rhat(x)) - 1) < 0.01
    assert 0.8 * x.size < float(ess_bulk(x)) < 1.2 * x.size
    s = summarize(x)
    assert s.converged, s.worst()
    assert s.mcse == pytest.approx(x.std(ddof=1) / np.sqrt(float(ess_bulk(x))))
    assert s.chains == 4 and s.draws == 2000 and s.draws_needed() == 2000


def test_chains_that_disagree_fail_rhat():
    x = rng(1).normal(size=(4, 1000)) + np.array([0, 0, 0, 1.0])[:, None]
    assert float(rhat(x)) > 1.05
    s = summarize(x)
    assert not s.converged and not s.rhat_converged() and s.rhat_ratio() > 1
    assert s.draws_needed() >= 2 * 1000  # an R̂ failure asks for at least twice the draws


def test_autocorrelation_lowers_ess():
    """AR(1) with ρ = 0.9: ESS ≈ n (1 − ρ)/(1 + ρ) = n/19. False alarm ~10⁻⁴: the factor 1.5 is 4 standard
    deviations of the ESS estimate (≈ 10 % here)."""
    x = ar1(rng(2), (4, 4000), 0.9)
    ess = float(ess_bulk(x))
    assert x.size / 19 / 1.5 < ess < x.size / 19 * 1.5
    null, lags = null_ess(rank_normalise(split_chains(x)))
    assert x.size / 19 / 1.5 < float(null) < x.size / 19 * 1.5 and lags > 19


def test_constant_elements_and_bad_input():
    x = np.stack([np.ones((2, 10)), rng(3).normal(size=(2, 10))])
    s = summarize(x)
    assert s.mcse[0] == 0 and s.rhat[0] == 1
    with pytest.raises(ValueError, match="chains"):
        summarize(np.ones(10))
    with pytest.raises(ValueError, match="NaN"):
        summarize(np.full((2, 10), np.nan))


def test_rhat_limit_is_the_quantile_of_the_maximum():
    """The closed form (n−1)/n·(S + q)/(S − (M−1)q) at q the χ²_{M−1}/(M−1) quantile; the limit rises with the number
    of statistics gated and with a smaller α, falls toward √((n−1)/n) as the ESS grows, and is +∞ where the ESS is too
    small to tell; the F quantile (ESS estimated over K lags) is above the χ² one."""
    chains, draws, S = 6, 800, 3000.0
    M, n = 12, 400
    q = stats.chi2.isf(1e-3 / 10, M - 1) / (M - 1)
    expected = np.sqrt((n - 1) / n * (S + q) / (S - (M - 1) * q))
    assert float(rhat_limit(S, chains=chains, draws=draws, statistics=10, alpha=1e-3)) == pytest.approx(expected)
    one, many = (float(rhat_limit(S, chains=chains, draws=draws, statistics=k)) for k in (1, 1000))
    assert 1 < one < many
    assert float(rhat_limit(S, chains=chains, draws=draws, statistics=1, alpha=0.05)) < one
    limits = rhat_limit(np.array([400.0, 4000.0, 1e7]), chains=chains, draws=draws, statistics=1)
    assert limits[0] > limits[1] > limits[2] == pytest.approx(np.sqrt((n - 1) / n), abs=1e-4)
    assert np.isinf(rhat_limit(10.0, chains=chains, draws=draws, statistics=1))
    assert float(rhat_limit(S, chains=chains, draws=draws, statistics=1, lags=20)) > one
    with pytest.raises(ValueError, match="alpha"):
        rhat_limit(S, chains=chains, draws=draws, statistics=1, alpha=0)


def test_gate_false_alarm_and_power_on_simulated_chains():
    """100 replicates of 6 chains × 800 i.i.d. draws of 2 entries, gated at α = 0.1 (a rate visible in 100): at most
    the 10⁻⁴ upper quantile of Bin(100, 0.1) alarms (false alarm of this test ≤ 10⁻⁴). The same chains with one
    chain shifted by 0.3 sd fail the R̂ part at α = 10⁻³: ≥ 95 of 100 (the power at this shape was 2000 of 2000 in a
    simulation, ≥ 0.9985 at 95 % confidence, which makes fewer than 95 a chance below 10⁻¹²)."""
    generator = rng(4)
    null_alarms = shifted_caught = 0
    for _ in range(100):
        x = generator.normal(size=(2, 6, 800))
        null_alarms += not summarize(x).rhat_converged(alpha=0.1)
        x[:, -1] += 0.3
        shifted_caught += not summarize(x).rhat_converged()
    assert null_alarms <= stats.binom.isf(1e-4, 100, 0.1), null_alarms
    assert shifted_caught >= 95, shifted_caught


def test_null_ess_ignores_between_chain_disagreement():
    """arviz's ESS shrinks when chains disagree (its var⁺ holds the between-chain variance), which would raise the R̂
    limit with the very disagreement it must catch; the null ESS, from within-chain autocorrelation, does not move."""
    x = rng(5).normal(size=(6, 800))
    before = summarize(x)
    x[-1] += 0.6
    after = summarize(x)
    assert float(after.ess_bulk) < 0.5 * float(before.ess_bulk)
    assert float(after.null_ess_bulk) == pytest.approx(float(before.null_ess_bulk), rel=0.05)
    assert not after.rhat_converged()


def test_draws_needed_from_the_ess_shortfall():
    """AR(1) ρ = 0.95 (ESS ≈ n/39 ≈ 82 of 3200 draws): converged in R̂ but short of ESS 400, so about 400/ESS times
    the draws are needed."""
    x = ar1(rng(6), (4, 800), 0.95)
    s = summarize(x)
    assert not s.converged
    low = min(float(s.ess_bulk), float(s.ess_tail))
    assert low < ESS_MINIMUM
    assert s.draws_needed() >= int(np.ceil(800 * ESS_MINIMUM / low))


def test_summary_stored_as_float_arrays_and_older_summaries():
    """A summary written by the solution store (every field a float64 array) reads back with the same gate; a summary
    stored before the gate's fields existed is gated by the per-entry 1.01 and cannot say how many draws it needs."""
    s = summarize(rng(7).normal(size=(3, 4, 500)))
    stored = ChainSummary(**{k: np.asarray(v, dtype=np.float64) for k, v in vars(s).items()})
    assert stored.converged == s.converged and stored.worst() == s.worst()
    old = ChainSummary(s.mean, s.standard_deviation, s.mcse, s.rhat, s.ess_bulk, s.ess_tail)
    assert old.converged == bool(np.all(s.rhat < 1.01) and np.all(s.ess_bulk >= 400) and np.all(s.ess_tail >= 400))
    assert old.worst()["rhat_limit"] == 1.01
    with pytest.raises(ValueError, match="chain shape"):
        old.draws_needed()


def test_the_cap_and_mcse_z():
    """R̂ ≥ 1.1 is never converged; mcse_z is at least 5 and grows with the number of entries."""
    s = summarize(rng(8).normal(size=(2, 4, 1000)))
    capped = ChainSummary(**(vars(s) | {"rhat": np.full(2, RHAT_CAP)}))
    assert not capped.rhat_converged()
    assert np.all(s.mcse_z() >= 5)
    assert np.all(s.mcse_z(alpha=1e-9) > s.mcse_z(alpha=1e-6))


def test_nested_rhat_is_the_papers_definition():
    """Against arviz-stats' nested R̂ on the raw draws (1e-12), and by hand for one draw per chain (Ŵν = mean B̃_k)."""
    x = rng(9).normal(size=(3, 64, 6))
    ids = np.repeat(np.arange(8), 8)
    np.testing.assert_allclose(nested_rhat(x, 8), array_stats.rhat_nested(x, superchain_ids=ids, method="identity"),
                               rtol=1e-12)
    one = rng(10).normal(size=(64, 1))
    means = one[:, 0].reshape(8, 8).mean(axis=1)
    expected = np.sqrt(1 + means.var(ddof=1) / one[:, 0].reshape(8, 8).var(axis=1, ddof=1).mean())
    assert float(nested_rhat(one, 8)) == pytest.approx(expected, rel=1e-12)


def test_nested_rhat_with_one_chain_per_superchain_is_the_classical_rhat():
    """M = 1: R̂ν² = R̂² + 1/N exactly, R̂ the unsplit Gelman–Rubin R̂ (arviz's ``identity``), to 1e-12."""
    x = rng(11).normal(size=(5, 7, 30)) + np.linspace(0, 1, 7)[:, None]
    classical = array_stats.rhat(x, method="identity")
    np.testing.assert_allclose(nested_rhat(x, 7) ** 2 - 1 / 30, classical**2, rtol=1e-12)


def test_nested_rhat_false_alarm_rate_on_exact_draws():
    """Exact i.i.d. draws (and stationary AR(1) chains, ρ = 0.9): R̂ν exceeds :func:`nested_rhat_limit` at α = 0.05 at
    the stated rate, whatever N (1 or 10) and the autocorrelation. 4,000 replicates: the rate's standard error is
    0.0034, and the band [0.03, 0.065] (−5.9 and +4.4 standard errors; the AR(1) chains' F is a little conservative)
    makes a false alarm of this test below 10⁻⁵."""
    generator = rng(12)
    for draws in (1, 10):
        x = generator.normal(size=(4000, 128, draws))
        rate = np.mean(nested_rhat(x, 16) > nested_rhat_limit(x, 16, alpha=0.05))
        assert 0.03 <= rate <= 0.065, (draws, rate)
    x = ar1(generator, (4000, 128, 10), 0.9)
    rate = np.mean(nested_rhat(x, 16) > nested_rhat_limit(x, 16, alpha=0.05))
    assert 0.03 <= rate <= 0.065, rate


def test_nested_rhat_flags_superchains_that_remember_their_starts():
    """16 superchains of 8 AR(1) chains (ρ = 0.9) started together at points 5 sd apart, 5 warm-up steps (0.9⁵ = 0.59
    of the start remains), 10 draws: all of 200 replicates flagged at α = 10⁻³ (2000 of 2000 in a simulation); with
    80 warm-up steps (0.9⁸⁰ = 2·10⁻⁴ remains) at most the 10⁻⁴ upper quantile of Bin(200, 10⁻³) are."""
    generator = rng(13)
    for warmup, most in ((5, None), (80, stats.binom.isf(1e-4, 200, 1e-3))):
        start = (np.repeat(5 * generator.normal(size=(200, 16)), 8, axis=1) * 0.9**warmup
                 + np.sqrt(1 - 0.81**warmup) * generator.normal(size=(200, 128)))
        x = ar1(generator, (200, 128, 10), 0.9, start)
        flagged = int(np.sum(nested_rhat(x, 16) > nested_rhat_limit(x, 16)))
        assert flagged == 200 if most is None else flagged <= most, (warmup, flagged)


def test_nested_rhat_refuses_what_it_cannot_judge():
    x = rng(14).normal(size=(12, 5))
    with pytest.raises(ValueError, match="superchains"):
        nested_rhat(x, 5)
    with pytest.raises(ValueError, match="superchains"):
        nested_rhat(x, 1)
    with pytest.raises(ValueError, match="M ≥ 2"):
        nested_rhat(x[:, :1], 12)
    with pytest.raises(ValueError, match="M ≥ 2"):
        nested_rhat_limit(x, 12)
    assert float(nested_rhat(np.ones((12, 5)), 3)) == 1.0


def _superchains_after_warmup(generator, replicates, warmup, superchains=32, size=32, draws=10, spread=1.0):
    """AR(1) chains (ρ = 0.9) of superchains that shared a start drawn from ``spread``·N(0, 1) and took ``warmup`` steps
    (0.9^warmup of the start remains): (replicates, superchains·size, draws), the target's mean 0."""
    shared = np.repeat(spread * generator.normal(size=(replicates, superchains)), size, axis=1)
    start = shared * 0.9**warmup + np.sqrt(1 - 0.81**warmup) * generator.normal(size=(replicates, superchains * size))
    return ar1(generator, (replicates, superchains * size, draws), 0.9, start)


def test_summarize_with_superchains_gates_by_nested_rhat():
    """1,024 i.i.d. chains of 10 draws in 32 superchains: converged (false alarm ≤ 10⁻³), ``rhat`` is the nested R̂,
    and the MCSE √(B̂ν/K) is the true sd/√10240 within its χ²₃₁ spread (10⁻⁶ quantiles). Superchains 5 sd apart after
    5 warm-up steps fail the R̂ part and ask for at least twice the draws."""
    generator = rng(15)
    x = generator.normal(size=(1024, 10))
    s = summarize(x, 32)
    assert s.converged and s.superchains == 32, s.worst()
    assert float(s.rhat) == pytest.approx(max(float(s.rhat_nested_bulk), float(s.rhat_nested_folded)))
    ratio = float(s.mcse) ** 2 / (1 / x.size) * 31
    assert stats.chi2.ppf(1e-6, 31) < ratio < stats.chi2.isf(1e-6, 31), ratio
    assert np.all(s.mcse_z() >= 5)
    apart = _superchains_after_warmup(generator, 1, 5, spread=5.0)[0]
    failed = summarize(apart, 32)
    assert not failed.rhat_converged() and failed.rhat_ratio() > 1 and failed.draws_needed() >= 20
    with pytest.raises(ValueError, match="M ≥ 2"):
        summarize(x, 1024)


def test_superchain_mcse_is_honest_for_short_chains_that_share_starts():
    """200 replicates of 32 superchains × 32 AR(1) chains (ρ = 0.9) of 10 draws after 10 warm-up steps from shared
    stationary starts (0.35 of the start remains): the posterior mean 0 lies outside ±t₃₁(0.975)·MCSE in about 5 % of
    replicates (at most the 10⁻⁴ upper quantile of Bin(200, 0.05), 25); sd/√ESS, blind to what the chains of a
    superchain share, misses in about 44 % (a test that can fail). The nested gate flags these chains (they still
    remember their starts) in most replicates, and passes them after 80 warm-up steps at its false-alarm rate."""
    generator = rng(16)
    x = _superchains_after_warmup(generator, 200, 10)
    nested, classical = summarize(x, 32), summarize(x)
    misses = int(np.sum(np.abs(nested.mean) > stats.t.isf(0.025, 31) * nested.mcse))
    assert misses <= stats.binom.isf(1e-4, 200, 0.05), misses
    assert np.sum(np.abs(classical.mean) > 1.96 * classical.mcse) > 60
    flagged = sum(not summarize(x[i], 32).rhat_converged() for i in range(20))
    assert flagged >= 15, flagged
    forgotten = _superchains_after_warmup(generator, 20, 80)
    assert sum(not summarize(forgotten[i], 32).rhat_converged() for i in range(20)) <= 1


def test_nested_summary_stored_as_float_arrays():
    """A nested summary written by the solution store reads back with the same gate, limits and MCSE quantile."""
    s = summarize(rng(17).normal(size=(2, 128, 8)), 16)
    stored = ChainSummary(**{k: np.asarray(v, dtype=np.float64) for k, v in vars(s).items()})
    assert stored.converged == s.converged and stored.worst() == s.worst()
    np.testing.assert_array_equal(stored.mcse_z(), s.mcse_z())
