"""Sizes that cannot fit are refused by name before anything is allocated (never numpy's MemoryError); finite draws
near the largest float give a finite mean; a figure given plain numbers for its estimates says so."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnverify.base import arguments
from attnverify.numerics.statistics import Estimate, mean_estimate
from attnverify.report.figures import theory_vs_simulation
from attnverify.theories.single_location import predictors
from attnverify.theories.single_location.dynamics import initialize_on_sphere
from attnverify.theories.single_location.task import make_task, sample, sample_reduced


def test_the_memory_available_is_a_positive_number_of_bytes():
    available = arguments.available_memory()
    assert isinstance(available, int) and 0 < available < 2**63


def test_fits_in_memory_names_the_argument_the_bytes_and_what_is_available(monkeypatch):
    monkeypatch.setattr(arguments, "available_memory", lambda: 2 * 1024**3)
    arguments.fits_in_memory("n", 2 * 1024**3, "the draws")  # exactly what is there: accepted
    with pytest.raises(ValueError, match=r"^n = 1000 needs 3 GiB for the draws, more than the 2 GiB of memory "
                                         r"available; give a smaller n$"):
        arguments.fits_in_memory("n", 3 * 1024**3, "the draws", value=1000)


@pytest.mark.parametrize("call, name", [
    (lambda task: make_task(10**15, 3, seed=0), "d = 1000000000000000"),
    (lambda task: sample(task, 10**13, 0), "n = 10000000000000"),
    (lambda task: sample_reduced(task, None, None, 10**13, 0), "n = 10000000000000"),
    (lambda task: initialize_on_sphere(10**8, 10**8, 0), "runs = 100000000"),
    (lambda task: predictors.bayes_risk_monte_carlo(make_task(4, 10**13, seed=0), 10, 0), "L needs"),
    (lambda task: predictors.bayes_risk_monte_carlo(task, 10**13, 0, batch=10**13), "batch = 10000000000000"),
], ids=["make_task d", "sample n", "sample_reduced n", "initialize_on_sphere runs", "risk L", "risk batch"])
def test_a_size_that_cannot_fit_is_refused_by_name_before_allocating(call, name):
    task = make_task(8, 3, seed=0)
    with pytest.raises(ValueError, match=rf"^{name}.* more than the .* of memory available; give a smaller"):
        call(task)


def test_sizes_that_fit_still_run():
    task = make_task(8, 3, seed=0)
    X, y, J0 = sample(task, 5, 0)
    assert X.shape == (5, 3, 8) and np.isfinite(X).all()
    assert predictors.bayes_risk_monte_carlo(task, 300, 0, batch=100).samples == 300


@pytest.mark.parametrize("values, mean", [
    ([1e308, 1e308], 1e308),
    ([1.7e308, 1.7e308, 1.7e308], 1.7e308),
    ([1.79e308, -1.79e308], 0.0),
    ([-1e308] * 1000, -1e308),
])
def test_finite_draws_near_the_largest_float_give_a_finite_mean_and_error(values, mean):
    estimate = mean_estimate(values)
    assert estimate.mean == pytest.approx(mean, rel=1e-15, abs=0)
    assert math.isfinite(estimate.standard_error)


@pytest.mark.parametrize("estimates, kind", [([1.0, 2.0], "float"), (np.array([1.0, 2.0]), "float64"),
                                              ([Estimate(1.0, 0.1, 10), "2"], "str")])
def test_a_figure_given_plain_numbers_for_its_estimates_says_so(tmp_path, estimates, kind):
    index = 1 if kind == "str" else 0
    with pytest.raises(TypeError, match=rf"^figure f\.png: estimates must be Estimate objects \(e\.g\. from "
                                        rf"mean_estimate\), got {kind} at index {index}$"):
        theory_vs_simulation(tmp_path, "f.png", x=[0, 1], theory=[1.0, 2.0], estimates=estimates, caption="c")


def test_a_figure_given_one_number_for_its_estimates_says_so(tmp_path):
    with pytest.raises(TypeError, match=r"estimates must be a list of Estimate objects .*, got float$"):
        theory_vs_simulation(tmp_path, "f.png", x=[0, 1], theory=[1.0, 2.0], estimates=1.0, caption="c")


def test_the_markov_chain_and_the_conditional_mean_refuse_sizes_that_cannot_fit():
    from attnverify.theories.attention_paths.markov_chain import MarkovChainTask, sample_sequences
    from attnverify.theories.conditional_mean.monte_carlo import attention_error

    with pytest.raises(ValueError, match=r"^P = 10000000000000 needs .* more than the .* of memory available"):
        sample_sequences(MarkovChainTask(tokens=3, features=4), 10**13, 0)

    def sample(L, n, rng):
        raise AssertionError("never reached: the size is refused first")

    with pytest.raises(ValueError, match=r"^length = 10000000000000 needs .* more than the .* of memory available"):
        attention_error(sample, lambda keys: keys, [0.0], 10**13, 2, 0)
