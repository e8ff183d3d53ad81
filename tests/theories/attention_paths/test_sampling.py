"""The attention-network sampler against exact answers: quadrature of a tiny network, and simulation-based
calibration (Talts et al. 2018): ranks of prior draws among posterior draws must be uniform.

Every seed goes through ``seeds.seeded`` (``ATTNVERIFY_TEST_SEED_OFFSET`` reruns these tests under fresh seeds);
each stochastic test states its false-alarm probability per seed.
"""

import numpy as np
import pytest
from scipy import stats

from attnverify.theories.attention_paths.posterior import network_posterior
from attnverify.theories.attention_paths.sampling import (METHODS, SamplerSettings, chain_group_seed, pooled,
                                                          sample_posterior)
from theories.attention_paths.problems import random_features
from seeds import seeded

Z = 5.0
P_VALUE = 2.9e-7  # one-sided 5σ: the false-alarm rate of a calibration test


def tiny_posterior_moments(X, y, X_test, T):
    """E[U] and E[f(x_test)] for heads (1,), widths (1, 1), N0 = 1 by quadrature.

    f = z_a z_1 z_0 X: given (z_0, z_1) the readout is conjugate (λ = 1 + |b|²/T, m = b·y/(Tλ) with
    b = z_1 z_0 X), so z_a is integrated in closed form and (z_0, z_1) on a 2-D grid.
    """
    grid = np.linspace(-8, 8, 1601)
    z0, z1 = np.meshgrid(grid, grid, indexing="ij")
    b = (z1 * z0)[..., None] * X[:, 0, 0]
    lam = 1 + np.sum(b * b, axis=-1) / T
    by = np.sum(b * y, axis=-1)
    m = by / (T * lam)
    log_w = -(z0**2 + z1**2) / 2 - 0.5 * np.log(lam) + by**2 / (2 * T**2 * lam)
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    U = np.sum(w * z1**2 * (m**2 + 1 / lam))
    f = np.array([np.sum(w * z1 * z0 * x * m) for x in X_test[:, 0, 0]])
    return U, f


def tiny_problem():
    """The network of :func:`tiny_posterior_moments` on 3 training and 2 test inputs, T = 1."""
    rng = np.random.default_rng(seeded(0))
    X = rng.normal(size=(3, 1, 1))
    y = np.array([1.0, -1.0, 1.0])
    X_test = rng.normal(size=(2, 1, 1))
    T = 1.0
    return network_posterior(X, y, heads=(1,), width=1, temperature=T), X, y, X_test, T


@pytest.mark.parametrize("method", METHODS)
def test_tiny_network_matches_quadrature(method):
    """False alarm per seed ≤ 2·10⁻³: the convergence gates of U and f (10⁻³ each, ``ChainSummary.converged``) and
    3 comparisons at ``mcse_z`` (≥ 5 MCSE, Bonferroni with the MCSE's own error)."""
    post, X, y, X_test, T = tiny_problem()
    samples = sample_posterior(post, seed=seeded(3), settings=SamplerSettings(chains=8, warmup=300, draws=1500),
                               X_test=X_test, method=method)
    U_exact, f_exact = tiny_posterior_moments(X, y, X_test, T)
    U = samples.order_parameter_summary()
    f = samples.predictor_summary()
    assert U.converged and f.converged, (U.worst(), f.worst())
    assert abs(U.mean[0, 0] - U_exact) <= U.mcse_z()[0, 0] * U.mcse[0, 0]
    assert np.all(np.abs(f.mean - f_exact) <= f.mcse_z() * f.mcse)
    # the product z_a z_1 z_0 has a hyperbolic (funnel-like) geometry, so readout-Gibbs trajectories (on all three
    # factors) sometimes diverge; they are rejected and counted, and the moments above agree with quadrature
    # regardless. The bound is a guard against a broken kernel (most trajectories diverging), not a statistic: over
    # 30 seed offsets the fraction was 0.2–8.8 % for readout_gibbs (a 2 % bound failed 7 of 10 offsets) and 0 for
    # collapsed, which integrates the readout out and has no funnel.
    fraction = samples.diagnostics()["divergences"] / samples.divergences.size
    assert fraction == 0 if method == "collapsed" else fraction < 0.25, fraction


def test_chain_groups_run_apart_and_pooled_match_quadrature():
    """Two groups of 4 chains, each with its own seed and warm-up (as two tasks of a cluster run), pooled: the
    moments agree with quadrature as one run of 8 chains does. False alarm per seed ≤ 2·10⁻³, as above."""
    post, X, y, X_test, T = tiny_problem()
    settings = SamplerSettings(chains=4, warmup=300, draws=750)
    seed = seeded(3)
    groups = [sample_posterior(post, seed=chain_group_seed(seed, g), settings=settings, X_test=X_test)
              for g in range(2)]
    samples = pooled(groups)
    U_exact, f_exact = tiny_posterior_moments(X, y, X_test, T)
    U, f = samples.order_parameter_summary(), samples.predictor_summary()
    assert U.converged and f.converged, (U.worst(), f.worst())
    assert abs(U.mean[0, 0] - U_exact) <= U.mcse_z()[0, 0] * U.mcse[0, 0]
    assert np.all(np.abs(f.mean - f_exact) <= f.mcse_z() * f.mcse)
    assert samples.diagnostics()["seed"] == [chain_group_seed(seed, 0), chain_group_seed(seed, 1)]


def calibration_ranks(seed: int, replications: int, thin: int, method: str):
    """Ranks of the true U_{11}, U_{12} and f(x_test) among thinned posterior draws, one data set per chain."""
    X, _ = random_features(4, 2, 2, seed)
    X_test, _ = random_features(1, 2, 2, seed + 1)
    T = 0.5
    shell = network_posterior(X, np.zeros(4), heads=(2,), width=2, temperature=T)
    rng = np.random.default_rng(seed)
    truth = shell.prior_draw(replications, rng)
    y = shell.outputs(truth, X) + np.sqrt(T) * rng.standard_normal((replications, 4))
    post = network_posterior(X, y, heads=(2,), width=2, temperature=T)
    settings = SamplerSettings(chains=replications, warmup=200, draws=20 * thin)
    samples = sample_posterior(post, seed=seed, settings=settings, X_test=X_test, method=method)
    U_true = post.order_parameters(truth)[0]
    true_stats = np.stack([U_true[:, 0, 0], U_true[:, 0, 1], post.outputs(truth, X_test)[:, 0]])
    draws = np.stack([samples.order_parameter[0, 0], samples.order_parameter[0, 1],
                      samples.test_outputs[0]])[:, :, ::thin]  # (stat, chain, draws)
    return np.sum(draws < true_stats[:, :, None], axis=2), draws.shape[2]


@pytest.mark.parametrize("method", METHODS)
def test_simulation_based_calibration(method):
    """False alarm per seed ≤ 3 × 2.9·10⁻⁷ (a χ² test of uniform ranks per statistic, one-sided 5σ)."""
    ranks, draws = calibration_ranks(seed=seeded(1), replications=400, thin=10, method=method)
    if method == "collapsed":
        ranks = ranks[:2]  # its test outputs are E[f | θ, D], not draws of f: rank only U
    for statistic in ranks:
        counts = np.bincount(statistic, minlength=draws + 1)
        assert stats.chisquare(counts).pvalue > P_VALUE, counts


def test_calibration_detects_a_wrong_temperature():
    """Power: sampling at T/4 while the data were simulated at T makes the posterior too narrow. Refuted when the
    ranks of U_11 or of U_22 (the two heads, exchangeable) fail the χ² test at P_VALUE/2 (a test at level P_VALUE).
    Measured over seed offsets 0–39: refuted 40 of 40, the larger of the two p-values' minimum 10⁻¹³; U_11 alone
    missed once (p = 2.5·10⁻⁵ at offset 3)."""
    X, _ = random_features(4, 2, 2, seeded(5))
    T = 0.5
    shell = network_posterior(X, np.zeros(4), heads=(2,), width=2, temperature=T)
    rng = np.random.default_rng(seeded(5))
    truth = shell.prior_draw(400, rng)
    y = shell.outputs(truth, X) + np.sqrt(T) * rng.standard_normal((400, 4))
    post = network_posterior(X, y, heads=(2,), width=2, temperature=T / 4)
    samples = sample_posterior(post, seed=seeded(5), settings=SamplerSettings(chains=400, warmup=200, draws=200))
    p_values = []
    for head in range(2):
        draws = samples.order_parameter[head, head][:, ::10]
        ranks = np.sum(draws < post.order_parameters(truth)[0][:, head, head][:, None], axis=1)
        p_values.append(stats.chisquare(np.bincount(ranks, minlength=21)).pvalue)
    assert min(p_values) < P_VALUE / 2, p_values


def test_same_seed_replays_and_settings_are_checked():
    X, y = random_features(5, 2, 2, 2)
    post = network_posterior(X, y, heads=(2,), width=2, temperature=0.5)
    settings = SamplerSettings(chains=2, warmup=10, draws=5)
    a, b = (sample_posterior(post, seed=4, settings=settings) for _ in range(2))
    np.testing.assert_array_equal(a.order_parameter, b.order_parameter)
    assert a.diagnostics()["seed"] == 4
    with pytest.raises(ValueError, match="chains"):
        SamplerSettings(chains=1)
    with pytest.raises(ValueError, match="seed"):
        sample_posterior(post, seed=-1, settings=settings)
    with pytest.raises(ValueError, match="X_test"):
        sample_posterior(post, seed=0, settings=settings, X_test=np.ones((3, 2, 5)))


@pytest.mark.thorough
def test_the_two_kernels_agree_on_the_markov_network():
    """Collapsed HMC and HMC + readout Gibbs are different exact kernels for one posterior: their U agree
    within 5 combined MCSE (4-path Markov task, N = 6, our generated features, T = 0.05). Thorough tier
    (24 s): the quick tier checks each kernel against quadrature on a tiny network and by simulation-based
    calibration, and samples the Markov posterior with the collapsed kernel in the sampled-network claims."""
    from attnverify.theories.attention_paths.markov_chain import MarkovChainTask, markov_dataset

    X, y, _, _ = markov_dataset(MarkovChainTask(), "4paths", 30, 2, seed=seeded(3), head_seed=seeded(3))
    post = network_posterior(np.asarray(X), y, heads=(2, 2), width=6, temperature=0.05)
    settings = SamplerSettings(chains=4, warmup=200, draws=600)
    a, b = (sample_posterior(post, seed=seeded(7), settings=settings, method=m).order_parameter_summary()
            for m in METHODS)
    assert a.converged and b.converged, (a.worst(), b.worst())
    assert np.all(np.abs(a.mean - b.mean) <= np.maximum(a.mcse_z(), b.mcse_z()) * np.hypot(a.mcse, b.mcse))


def _quick_samples(**kwargs):
    X, y = random_features(5, 2, 2, 2)
    post = network_posterior(X, y, heads=(2,), width=2, temperature=0.5)
    X_test, _ = random_features(3, 2, 2, 5)
    return post, X_test, sample_posterior(post, seed=1, settings=dict(chains=2, warmup=10, draws=6, max_leapfrog=8),
                                          X_test=X_test, **kwargs)


def test_settings_as_a_dict_are_the_dataclass():
    """Settings passed as a dict are accepted as SamplerSettings(**dict); unknown keys are named."""
    post, X_test, from_dict = _quick_samples()
    assert from_dict.settings == SamplerSettings(chains=2, warmup=10, draws=6, max_leapfrog=8)
    same = sample_posterior(post, seed=1, settings=SamplerSettings(chains=2, warmup=10, draws=6, max_leapfrog=8),
                            X_test=X_test)
    np.testing.assert_array_equal(from_dict.order_parameter, same.order_parameter)
    with pytest.raises(ValueError, match=r"settings has unknown fields \['chain'\]"):
        sample_posterior(post, seed=1, settings={"chain": 2})
    with pytest.raises(TypeError, match="settings must be a SamplerSettings"):
        sample_posterior(post, seed=1, settings=4)


def test_sampler_settings_use_the_one_boundary():
    """The hand-written checks of SamplerSettings became arguments.py's: integral floats are the integer
    they equal, booleans are not numbers, and every message gives the valid range."""
    assert SamplerSettings(chains=2.0).chains == 2 and isinstance(SamplerSettings(chains=2.0).chains, int)
    with pytest.raises(TypeError, match="trajectory_length must be a real number in"):
        SamplerSettings(trajectory_length=True)  # accepted as 1.0 before
    with pytest.raises(ValueError, match=r"step_jitter must be a finite number in \[0, 1\)"):
        SamplerSettings(step_jitter=1.0)
    with pytest.raises(ValueError, match=r"draws must be an integer ≥ 4"):
        SamplerSettings(draws=2.5)


def test_nan_test_features_are_refused_by_name():
    """NaN in X_test is refused by name, before any draw (not returned as NaN predictions)."""
    X, y = random_features(5, 2, 2, 2)
    post = network_posterior(X, y, heads=(2,), width=2, temperature=0.5)
    X_test, _ = random_features(3, 2, 2, 5)
    X_test[1, 0, 1] = np.nan
    with pytest.raises(ValueError, match="X_test must contain only finite numbers"):
        sample_posterior(post, seed=0, settings=dict(chains=2, warmup=10, draws=4), X_test=X_test)


def test_accuracy_refuses_nan_targets_and_a_single_replicate():
    """All-NaN targets are refused (not scored as accuracy 0.0), and so is ≤ 1 replicate (a NaN standard error)."""
    _, _, samples = _quick_samples()
    y_test = np.array([1.0, -1.0, 1.0])
    estimate = samples.accuracy(y_test, replicates=2)
    assert np.isfinite(estimate.standard_error) and 0 <= estimate.mean <= 1
    assert estimate.mean == np.mean(np.sign(samples.predictor_summary().mean) == y_test)
    with pytest.raises(ValueError, match="y_test must contain only finite numbers"):
        samples.accuracy(np.full(3, np.nan))
    for replicates in (0, 1):
        with pytest.raises(ValueError, match="a standard error needs at least 2 replicates"):
            samples.accuracy(y_test, replicates=replicates)
    with pytest.raises(ValueError, match="y_test must have shape"):
        samples.accuracy(y_test[:2])


def test_pooled_puts_the_groups_chains_side_by_side():
    post, X_test, first = _quick_samples()
    second = sample_posterior(post, seed=2, settings=first.settings, X_test=X_test)
    both = pooled([first, second])
    for level, U in enumerate(both.order_parameters):
        parts = [first.order_parameters[level], second.order_parameters[level]]
        np.testing.assert_array_equal(U, np.concatenate(parts, -2))
    np.testing.assert_array_equal(both.test_outputs[:, 2:], second.test_outputs)
    np.testing.assert_array_equal(both.step_size, np.concatenate([first.step_size, second.step_size]))
    assert both.acceptance.shape == (4, 6)
    assert both.settings == SamplerSettings(chains=4, warmup=10, draws=6, max_leapfrog=8)
    assert both.seed == (1, 2) and both.leapfrog_steps == (first.leapfrog_steps, second.leapfrog_steps)
    assert both.gradient_evaluations == first.gradient_evaluations + second.gradient_evaluations
    assert pooled([both, first]).seed == (1, 2, 1)
    longer = sample_posterior(post, seed=2, settings=dict(chains=2, warmup=10, draws=7, max_leapfrog=8))
    with pytest.raises(ValueError, match=r"groups\[1\] was sampled with method 'collapsed' and settings"):
        pooled([first, longer])
    with pytest.raises(ValueError, match=r"groups\[1\] records other quantities"):
        pooled([first, sample_posterior(post, seed=2, settings=first.settings)])
    with pytest.raises(TypeError, match="groups must be a non-empty list of PosteriorSamples"):
        pooled([])


def test_chain_group_seeds_come_from_the_seed_and_the_group_alone():
    seeds = {chain_group_seed(seed, group) for seed in range(3) for group in range(3)}
    assert len(seeds) == 9 and chain_group_seed(2, 1) == chain_group_seed(2, 1)
    with pytest.raises(ValueError, match="group must be an integer"):
        chain_group_seed(0, -1)
    with pytest.raises(ValueError, match="seed must be an integer"):
        chain_group_seed(-1, 0)


def test_many_chains_are_judged_by_nested_rhat_and_pool_as_superchains():
    """64 chains start in 8 superchains of 8 (saddle.sampling.run_sampler); two such groups pool into 16 superchains
    of 8, and the summaries are nested-R̂ summaries; a group of 8 chains has none, nor its pool with a 64-chain one."""
    post, X, y, X_test, T = tiny_problem()
    many = SamplerSettings(chains=64, warmup=30, draws=8)
    groups = [sample_posterior(post, seed=chain_group_seed(1, g), settings=many) for g in range(2)]
    assert groups[0].superchains == 8
    samples = pooled(groups)
    assert samples.superchains == 16 and samples.order_parameter_summary().superchains == 16
    few = sample_posterior(post, seed=2, settings=SamplerSettings(chains=8, warmup=30, draws=8))
    assert few.superchains is None and pooled([groups[0], few]).superchains is None
