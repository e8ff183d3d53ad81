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


def test_the_memory_available_is_within_the_processs_own_limit():
    """Under ulimit -v (a soft limit on the address space) what is available is at most what is left below it, so
    that an allocation the limit refuses is refused by name before numpy's MemoryError."""
    import resource
    import subprocess
    import sys

    limit = 3 * 2**30

    def limited():  # in the child, before it starts
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    code = "from attnverify.base import arguments; print(arguments.available_memory())"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           preexec_fn=limited)
    assert 0 < int(child.stdout) < limit


def test_fits_in_memory_names_the_argument_the_bytes_and_what_is_available(monkeypatch):
    monkeypatch.setattr(arguments, "available_memory", lambda: 2 * 1024**3)
    arguments.fits_in_memory("n", 2 * 1024**3, "the draws")  # exactly what is there: accepted
    with pytest.raises(ValueError, match=r"^n = 1000 needs 3 GiB for the draws, more than the 2 GiB of memory "
                                         r"available; give a smaller n$"):
        arguments.fits_in_memory("n", 3 * 1024**3, "the draws", value=1000)


def test_at_most_work_names_the_argument_the_work_and_the_most_a_run_may_ask_for():
    arguments.at_most_work("steps", 100, 100, "steps")  # exactly the most: accepted
    arguments.at_most_work("n", 10, 100, "numbers drawn", work=100)
    with pytest.raises(ValueError, match=r"^steps = 1,001 is more than the 1,000 steps a run may ask for; give a "
                                         r"smaller steps$"):
        arguments.at_most_work("steps", 1001, 1000, "steps")
    with pytest.raises(ValueError, match=r"^n = 11 makes 110 numbers drawn \(10 a sample\), more than the 100 a run "
                                         r"may ask for; give a smaller n$"):
        arguments.at_most_work("n", 11, 100, "numbers drawn (10 a sample)", work=110)


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


def _never(*args, **kwargs):
    raise AssertionError("never reached: the size is refused first")


def _refused(name: str):
    return pytest.raises(ValueError, match=rf"^{name}.* more than the .* of memory available; give a smaller")


@pytest.mark.parametrize("call, name", [
    (lambda task, k: predictors.risk_monte_carlo(task, k, k, 1.0, 10**13, 0, batch=10**13), "batch = 10000000000000"),
    (lambda task, k: predictors.risk_monte_carlo_full(task, k, k, 1.0, 10**13, 0, batch=10**13),
     "batch = 10000000000000"),
    (lambda task, k: predictors.linear_risk_monte_carlo(task, np.zeros((3, 8)), 10**13, 0, batch=10**13),
     "batch = 10000000000000"),
    (lambda task, k: predictors.risk_monte_carlo(make_task(4, 10**13, seed=0), np.full(4, 0.5), np.full(4, 0.5),
                                                 1.0, 10, 0),
     "L needs"),
    (lambda task, k: predictors.risk_monte_carlo_full(make_task(4, 10**13, seed=0), np.full(4, 0.5), np.full(4, 0.5),
                                                      1.0, 10, 0),
     "L needs"),
], ids=["risk batch", "risk_full batch", "linear_risk batch", "risk L", "risk_full L"])
def test_the_risks_refuse_a_batch_that_cannot_fit(call, name):
    task, k = make_task(8, 3, seed=0), np.full(8, 8**-0.5)
    with _refused(name):
        call(task, k)


@pytest.mark.parametrize("arguments_, name", [
    (dict(P=10**15), "P = 1000000000000000"),
    (dict(P=4, input_width=10**15), "input_width = 1000000000000000"),
    (dict(P=4, heads=(10**15,)), r"heads = \(1000000000000000,\)"),
    (dict(P=4, tokens=10**15), "tokens = 1000000000000000"),
    (dict(P=10**15, chunk=10**15), "chunk = 1000000000000000"),
])
def test_synthetic_problem_refuses_sizes_that_cannot_fit(arguments_, name):
    from attnverify.theories.attention_paths.synthetic import synthetic_problem

    with _refused(name):
        synthetic_problem(**arguments_)


@pytest.mark.parametrize("options, name", [
    (dict(warmup=5, draws=10**15), "draws = 1000000000000000"),
    (dict(warmup=10**15, draws=4, mass_matrix="diagonal"), "warmup = 1000000000000000"),
])
def test_hmc_refuses_draws_that_cannot_fit_before_the_first_gradient(options, name):
    from attnverify.numerics.hmc import sample as hmc_sample

    with _refused(name):
        hmc_sample(_never, np.zeros((2, 3)), seed=0, **options)


def _tiny_posterior():
    from attnverify.theories.attention_paths.posterior import network_posterior

    X = np.random.default_rng(0).normal(size=(4, 3, 2))
    return network_posterior(X, np.sign(X[:, 0, 0]), heads=(2,), width=2, temperature=1.0), X


@pytest.mark.parametrize("settings, name", [
    (dict(chains=10**15), "chains = 1000000000000000"),
    (dict(draws=10**15), "draws = 1000000000000000"),
    (dict(warmup=10**15, mass_matrix="diagonal"), "warmup = 1000000000000000"),
])
def test_the_posterior_sampler_refuses_chains_and_draws_that_cannot_fit(monkeypatch, settings, name):
    from attnverify.numerics import hmc
    from attnverify.theories.attention_paths import sampling

    monkeypatch.setattr(hmc, "run_chains", _never)
    posterior, X = _tiny_posterior()
    with _refused(name):
        sampling.sample_posterior(posterior, seed=0, settings=settings, X_test=X)


def test_the_posterior_accuracy_refuses_replicates_that_cannot_fit():
    from attnverify.theories.attention_paths.sampling import sample_posterior

    posterior, X = _tiny_posterior()
    samples = sample_posterior(posterior, seed=0, settings=dict(chains=2, warmup=10, draws=4), X_test=X)
    with _refused("replicates = 1000000000000000"):
        samples.accuracy(np.ones(4), replicates=10**15)


@pytest.mark.parametrize("call, name", [
    (lambda net, X: _sampled(net, X, chains=10**15), "chains = 1000000000000000"),
    (lambda net, X: _sampled(net, X, draws=10**15), "draws = 1000000000000000"),
    (lambda net, X: _sampled(_one_hidden_layer(10**8, 2), X), "network needs"),
    (lambda net, X: _sampled(net, np.ones((10**7, 2))), "X needs"),
], ids=["chains", "draws", "width", "P"])
def test_sampled_networks_refuse_sizes_that_cannot_fit(monkeypatch, call, name):
    from attnverify.numerics import hmc

    monkeypatch.setattr(hmc, "run_chains", _never)
    with _refused(name):
        call(_one_hidden_layer(4, 2), np.ones((5, 2)))


def _one_hidden_layer(width, input_dimension):
    from attnverify.saddle.network import one_hidden_layer

    return one_hidden_layer(width, input_dimension)


def _sampled(network, X, **options):
    from attnverify.saddle.network import sample_order_parameters

    return sample_order_parameters(network, X, np.ones(len(X)), temperature=1.0, **options)


def _conditional_mean_models():
    from attnverify.theories.conditional_mean import models

    return models


@pytest.mark.parametrize("call, name", [
    (lambda m: m.GaussianKeyValueModel(np.zeros(2), np.eye(2), np.eye(2), np.zeros(2), 0.1).sample(10**15, 2, 0),
     "length = 1000000000000000"),
    (lambda m: m.GaussianKeyValueModel(np.zeros(2), np.eye(2), np.eye(2), np.zeros(2), 0.1).sample(3, 10**15, 0),
     "replicates = 1000000000000000"),
    (lambda m: m.SineValueModel(1.0, 1.0, 0.1).sample(10**15, 2, 0), "length = 1000000000000000"),
    (lambda m: m.SineValueModel(1.0, 1.0, 0.1).sample(3, 10**15, 0), "replicates = 1000000000000000"),
    (lambda m: m.ConjugateGaussianModel(1.0, 1.0, 10**15).sample(3, 2, 0), "d = 1000000000000000"),
    (lambda m: m.ConjugateGaussianModel(1.0, 1.0, 2).sample(10**15, 2, 0), "length = 1000000000000000"),
    (lambda m: m.ConjugateGaussianModel(1.0, 1.0, 2).sample(0, 10**15, 0), "replicates = 1000000000000000"),
    (lambda m: m.ConjugateGaussianModel(1e-6, 1.0, 1).posterior_by_conditioning(np.zeros((10**7, 1))),
     "tokens needs"),
    (lambda m: m.FiniteLatentModel([0.5, 0.5], np.zeros((2, 2))).sample(10**15, 2, 0), "length = 1000000000000000"),
    (lambda m: m.FiniteLatentModel([0.5, 0.5], np.zeros((2, 2))).sample(3, 10**15, 0),
     "replicates = 1000000000000000"),
    (lambda m: m.LinearGaussianLatentModel(1.0, 1.0, 10**8, 10**8).sample(3, 0), "d = 100000000"),
    (lambda m: m.LinearGaussianLatentModel(1.0, 1.0, 2, 2).sample(10**15, 0), "length = 1000000000000000"),
    (lambda m: m.LinearGaussianLatentModel(1.0, 1.0, 10**7, 1).posterior_mean(np.zeros((1, 10**7)), np.zeros((1, 1))),
     "d = 10000000"),
], ids=["gaussian length", "gaussian replicates", "sine length", "sine replicates", "conjugate d", "conjugate length",
        "conjugate replicates", "conjugate conditioning", "finite length", "finite replicates", "linear d",
        "linear length", "linear precision d"])
def test_the_token_models_refuse_sizes_that_cannot_fit(call, name):
    with _refused(name):
        call(_conditional_mean_models())


@pytest.mark.parametrize("call, name", [
    (lambda learning, task: task.sample(10**15, 3, 0), "sequences = 1000000000000000"),
    (lambda learning, task: task.sample(2, 10**15, 0), "tokens = 1000000000000000"),
    (lambda learning, task: learning.draw_dataset(task, "supervised", 10**15, 3, 0), "sequences = 1000000000000000"),
    (lambda learning, task: learning.draw_dataset(task, "supervised", 2, 10**15, 0), "length = 1000000000000001"),
], ids=["sample sequences", "sample tokens", "dataset sequences", "dataset length"])
def test_the_learning_task_refuses_sizes_that_cannot_fit(call, name):
    from attnverify.theories.conditional_mean import learning

    with _refused(name):
        call(learning, learning.LatentLinearTask(np.eye(2), prior_sd=1.0, noise_sd=0.5))


@pytest.mark.parametrize("count, dim, name", [(10**15, 4, "count = 1000000000000000"),
                                              (2, 10**15, "dim = 1000000000000000")])
def test_positional_encodings_refuse_sizes_that_cannot_fit(count, dim, name):
    from attnverify.theories.attention_paths.one_shot.task import sinusoidal_positions

    with _refused(name):
        sinusoidal_positions(count, dim)
