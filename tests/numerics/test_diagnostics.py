"""R-hat, ESS and MCSE from arviz-stats: behaviour on draws whose answer is known."""

import numpy as np
import pytest

from attnverify.numerics.diagnostics import ess_bulk, rhat, summarize


def test_independent_draws():
    x = np.random.default_rng(0).normal(size=(4, 2000))
    assert abs(float(rhat(x)) - 1) < 0.01
    assert 0.8 * x.size < float(ess_bulk(x)) < 1.2 * x.size
    s = summarize(x)
    assert s.converged
    assert s.mcse == pytest.approx(x.std(ddof=1) / np.sqrt(float(ess_bulk(x))))


def test_chains_that_disagree_fail_rhat():
    x = np.random.default_rng(1).normal(size=(4, 1000)) + np.array([0, 0, 0, 1.0])[:, None]
    assert float(rhat(x)) > 1.05
    assert not summarize(x).converged


def test_autocorrelation_lowers_ess():
    rng = np.random.default_rng(2)
    x = np.zeros((4, 4000))
    for t in range(1, 4000):  # AR(1) with ρ = 0.9: ESS ≈ n (1 − ρ)/(1 + ρ) = n/19
        x[:, t] = 0.9 * x[:, t - 1] + np.sqrt(1 - 0.81) * rng.normal(size=4)
    ess = float(ess_bulk(x))
    assert x.size / 19 / 1.5 < ess < x.size / 19 * 1.5


def test_constant_elements_and_bad_input():
    x = np.stack([np.ones((2, 10)), np.random.default_rng(3).normal(size=(2, 10))])
    s = summarize(x)
    assert s.mcse[0] == 0 and s.rhat[0] == 1
    with pytest.raises(ValueError, match="chains"):
        summarize(np.ones(10))
    with pytest.raises(ValueError, match="NaN"):
        summarize(np.full((2, 10), np.nan))
