"""Tests for numerics/single_location.py (Marion et al. 2025, single-location regression).

Tolerances: Monte Carlo comparisons use z = 5 standard errors (a false alarm has probability ≈ 6e-7 per
comparison: the most comparisons in one test, 32 in ``test_sample_has_the_model_moments``, make ≤ 2e-5 per test,
the SE's own error at n ≥ 40,000 being negligible); pure linear algebra is compared at round-off level (1e-12 to
1e-14, a few hundred ulps of O(1) numbers). Seeds go through ``seeds.seeded``: ``ATTNVERIFY_TEST_SEED_OFFSET``
reruns these tests under fresh seeds, and each must pass for any seed.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import scipy.special
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from attnverify.theories import single_location as sl
from attnverify.base.backend import cupy_works, get_backend
from attnverify.numerics.statistics import Estimate, RunningMoments, mean_estimate
from seeds import rng, seeded

Z = 5.0  # standard errors allowed in every Monte Carlo comparison (see module docstring)
ROUND_OFF = 1e-12  # O(1) quantities after O(10) float64 operations


def assert_mean(values, expected, what=""):
    """The sample mean of ``values`` is within Z standard errors of ``expected``."""
    est = mean_estimate(values)
    assert abs(est.mean - expected) <= Z * est.standard_error, (what, est, expected)


def assert_variance(values, expected, what=""):
    """The sample variance is within Z standard errors of ``expected`` (SE from the centred squares)."""
    x = np.asarray(values, dtype=float)
    assert_mean((x - x.mean()) ** 2, expected, what)


def assert_agree(a: Estimate, b: Estimate, what=""):
    """Two independent estimates of one quantity agree within Z·√(SE_a² + SE_b²)."""
    assert abs(a.mean - b.mean) <= Z * math.hypot(a.standard_error, b.standard_error), (what, a, b)


def unit(x):
    x = np.asarray(x, dtype=float)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def parameters(task, kind, seed):
    """Unit (k, v) for ``task``: random, or one of the degenerate spans the reduction must handle."""
    rng = np.random.default_rng(seed)
    k, v = unit(rng.standard_normal(task.d)), unit(rng.standard_normal(task.d))
    if kind == "oracle":
        return task.k_star, task.v_star
    if kind == "k_is_k_star":
        return task.k_star, v
    if kind == "v_is_k":
        return k, k
    if kind == "swapped":
        return task.v_star, -task.k_star
    if kind == "manifold":
        k0, v0 = sl.initialize_on_manifold(1, task.k_star, task.v_star, rng)
        return k0[0], v0[0]
    return k, v


KINDS = ["random", "oracle", "k_is_k_star", "v_is_k", "swapped", "manifold"]


# --------------------------------------------------------------------------- predictor


def test_predict_equals_formula_on_hand_built_tokens():
    # T = Σ_ℓ erf(λ⟨X_ℓ,k⟩)⟨X_ℓ,v⟩ with k = e1, v = (e1 + e2)/√2, λ = 0.7, two tokens of R³.
    X = np.array([[1.0, 2.0, 3.0], [-0.5, 0.25, 4.0]])
    k = np.array([1.0, 0.0, 0.0])
    v = np.array([1.0, 1.0, 0.0]) / math.sqrt(2)
    expected = math.erf(0.7 * 1.0) * 3.0 / math.sqrt(2) + math.erf(0.7 * -0.5) * (-0.25) / math.sqrt(2)
    assert_allclose(sl.predict(X, k, v, 0.7), expected, rtol=1e-15)
    batch = np.stack([X, 2 * X])  # leading batch axis
    assert sl.predict(batch, k, v, 0.7).shape == (2,)


@given(seed=st.integers(0, 2**32 - 1), lam=st.floats(0.01, 10.0))
@settings(max_examples=20)
def test_predictor_is_invariant_under_sign_flip_of_k_and_v(seed, lam):
    # erf is odd, so erf(λ⟨X,−k⟩)⟨X,−v⟩ = erf(λ⟨X,k⟩)⟨X,v⟩ term by term (spec §2.1).
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((5, 4, 7))
    k, v = unit(rng.standard_normal(7)), unit(rng.standard_normal(7))
    assert_allclose(sl.predict(X, -k, -v, lam), sl.predict(X, k, v, lam), rtol=0, atol=1e-14)


# --------------------------------------------------------------------------- sampling


def test_sample_has_the_model_moments():
    task = sl.make_task(6, 3, gamma=0.8, eps=0.3, seed=seeded(11))
    n = 100_000
    X, y, J0 = sl.sample(task, n, seeded(12))
    assert X.shape == (n, 3, 6) and y.shape == (n,) and J0.shape == (n,)
    for ell in range(task.L):  # J0 uniform: each frequency within Z binomial standard errors of 1/L
        assert_mean(J0 == ell, 1 / task.L, f"P(J0={ell})")
    rows = np.arange(n)
    informative = X[rows, J0]
    noise = X[np.arange(task.L)[None, :] != J0[:, None]]
    mean = math.sqrt(task.d / 2) * task.k_star
    for j in range(task.d):  # coordinates: N(√(d/2)k*_j, γ²) and N(0, 1)
        assert_mean(informative[:, j], mean[j], f"informative mean {j}")
        assert_variance(informative[:, j], task.gamma**2, f"informative variance {j}")
        assert_mean(noise[:, j], 0.0, f"noise mean {j}")
        assert_variance(noise[:, j], 1.0, f"noise variance {j}")
    along = informative @ task.k_star  # the direction that marks the token: N(√(d/2), γ²)
    assert_mean(along, math.sqrt(task.d / 2))
    assert_variance(along, task.gamma**2)
    assert_mean(y, 0.0)
    assert_variance(y, task.gamma**2 + task.eps**2)
    assert_variance(y - informative @ task.v_star, task.eps**2, "label noise")


def test_sample_reduced_has_the_model_moments_and_does_not_grow_with_d():
    task = sl.make_task(10**6, 3, gamma=0.8, eps=0.2, seed=seeded(5))  # d = 10⁶: a full token would be 8 MB
    k, v = parameters(task, "random", seeded(1))
    n = 50_000
    s = sl.sample_reduced(task, k, v, n, seeded(6))
    r = s.Z.shape[-1]
    assert r == 4 and s.basis.shape == (task.d, 4)
    assert_allclose(s.basis.T @ s.basis, np.eye(4), atol=ROUND_OFF)
    assert_allclose(s.k, s.basis.T @ k, atol=ROUND_OFF)
    rows = np.arange(n)
    informative = s.Z[rows, s.J0]
    noise = s.Z[np.arange(task.L)[None, :] != s.J0[:, None]]
    for j in range(r):
        assert_mean(informative[:, j], math.sqrt(task.d / 2) * s.k_star[j])
        assert_variance(informative[:, j], task.gamma**2)
        assert_mean(noise[:, j], 0.0)
        assert_variance(noise[:, j], 1.0)
    orth = s.orthogonal_sq_norm  # χ²_{d−r} (mean d−r, variance 2(d−r)), scaled by γ² on the informative token
    assert_mean(orth[rows, s.J0], task.gamma**2 * (task.d - r))
    assert_variance(orth[rows, s.J0], 2 * task.gamma**4 * (task.d - r))
    assert_mean(orth[np.arange(task.L)[None, :] != s.J0[:, None]], task.d - r)
    assert_variance(s.y - informative @ s.v_star, task.eps**2)


def test_sample_reduced_detects_rank_deficiency():
    task = sl.make_task(8, 2, seed=seeded(0))
    assert sl.sample_reduced(task, task.k_star, task.v_star, 3, 0).Z.shape == (3, 2, 2)
    assert sl.sample_reduced(task, None, None, 3, 0).Z.shape == (3, 2, 2)
    k, _ = parameters(task, "random", seeded(100))  # not seed 0: that would redraw k = k* exactly
    assert sl.sample_reduced(task, k, k, 3, 0).Z.shape == (3, 2, 3)
    tiny = sl.make_task(3, 2, seed=seeded(0))  # the span fills R³: no orthogonal part left
    k, v = parameters(tiny, "random", seeded(1))
    s = sl.sample_reduced(tiny, k, v, 4, 0)
    assert s.Z.shape == (4, 2, 3) and np.all(s.orthogonal_sq_norm == 0)


# --------------------------------------------------------------------------- Monte Carlo risks


@given(kind=st.sampled_from(KINDS), seed=st.integers(0, 2**16), lam=st.floats(0.05, 2.0))
@settings(max_examples=8)
def test_reduced_and_full_monte_carlo_risks_agree(kind, seed, lam):
    # The reduction is exact in distribution, so the two estimators estimate the same ℛ (spec §6).
    task = sl.make_task(12, 4, eps=0.1, seed=seed)
    k, v = parameters(task, kind, seed + 1)
    reduced = sl.risk_monte_carlo(task, k, v, lam, 20_000, seed + 2)
    full = sl.risk_monte_carlo_full(task, k, v, lam, 20_000, seed + 3, batch=7_000)
    assert_agree(reduced, full, (kind, lam))


def test_risk_at_vanishing_lambda_is_the_null_risk():
    # λ → 0: T → 0, ℛ → γ² + ε² (spec §3.1 sanity check); at λ = 1e-9 T = O(1e-8).
    task = sl.make_task(400, 10, seed=seeded(3))
    est = sl.risk_monte_carlo(task, task.k_star, task.v_star, 1e-9, 200_000, seeded(4))
    assert abs(est.mean - (task.gamma**2 + task.eps**2)) <= Z * est.standard_error


def test_batched_moments_equal_one_pass_moments():
    values = rng(0).exponential(size=1001)
    moments = RunningMoments()
    for chunk in np.array_split(values, [1, 300, 301, 999]):  # chunks of 1, 299, 1, 698, 2
        moments.add(chunk, np)
    whole = mean_estimate(values)
    assert moments.count == whole.samples
    assert_allclose([moments.estimate().mean, moments.estimate().standard_error],
                    [whole.mean, whole.standard_error], rtol=1e-13)


# --------------------------------------------------------------------------- Bayes predictor


def test_bayes_posterior_is_a_stable_softmax():
    task = sl.make_task(7, 5, gamma=1.5, seed=seeded(2))  # γ² > 1: s grows like +‖x‖², a naive exp overflows
    rng = np.random.default_rng(seeded(3))
    X = rng.standard_normal((50, 5, 7))
    p = sl.bayes_posterior(X, task)
    assert_allclose(p.sum(axis=-1), 1.0, rtol=0, atol=ROUND_OFF)
    g2 = task.gamma**2
    s = (0.5 - 0.5 / g2) * np.sum(X**2, axis=-1) + math.sqrt(task.d / 2) * (X @ task.k_star) / g2
    assert_allclose(p, scipy.special.softmax(s, axis=-1), rtol=1e-12, atol=1e-300)
    assert_allclose(sl.bayes_predict(X, task), np.sum(p * (X @ task.v_star), axis=-1), rtol=1e-12)
    for scale in (1e3, 1e150):  # logits up to ~1e300: finite, normalised, one-hot at the largest score
        p_big = sl.bayes_posterior(scale * X, task)
        assert np.all(np.isfinite(p_big))
        assert_allclose(p_big.sum(axis=-1), 1.0, rtol=0, atol=ROUND_OFF)
    assert np.all(np.isfinite(sl.bayes_posterior(1e150 * X, sl.make_task(7, 5, gamma=0.5, seed=seeded(2)))))


@pytest.mark.parametrize("d, L", [(6, 3), (400, 10)])
def test_bayes_risk_lies_between_noise_and_null_risk(d, L):
    task = sl.make_task(d, L, seed=seeded(d))
    est = sl.bayes_risk_monte_carlo(task, 100_000, seeded(1))
    eps2 = task.eps**2
    assert est.mean >= eps2 - Z * est.standard_error
    assert est.mean <= task.gamma**2 + eps2 + Z * est.standard_error
    conditional = sl.bayes_risk_monte_carlo(task, 100_000, seeded(2), conditional=True)
    assert conditional.mean >= eps2 - 1e-15
    assert_agree(est, conditional, "E[(Y−f)²] vs ε² + E[Var(u_J0 | X)]")


def test_bayes_risk_reduction_agrees_with_full_tokens_and_beats_other_predictors():
    # At d = 6 the location is uncertain, so the Bayes risk is well above ε²; the reduced estimate
    # (χ² orthogonal norms) must match one from full tokens, and no predictor may do better.
    task = sl.make_task(6, 3, seed=seeded(4))
    n = 100_000
    X, y, _ = sl.sample(task, n, seeded(5))
    full = mean_estimate((y - sl.bayes_predict(X, task)) ** 2)
    reduced = sl.bayes_risk_monte_carlo(task, n, seeded(6), batch=30_000)
    assert full.mean > task.eps**2 + 10 * full.standard_error  # the comparison is not trivial
    assert_agree(full, reduced)
    oracle = sl.risk_monte_carlo(task, task.k_star, task.v_star, 0.5, n, seeded(7))
    linear = sl.linear_risk_monte_carlo(task, sl.linear_oracle_coefficients(task), n, seeded(8))
    for other in (oracle, linear):
        assert reduced.mean <= other.mean + Z * math.hypot(reduced.standard_error, other.standard_error)


# --------------------------------------------------------------------------- linear predictors


@pytest.mark.parametrize("d, L", [(50, 5), (400, 10), (100, 20)])
def test_linear_oracle_risk_matches_proposition_3(d, L):
    task = sl.make_task(d, L, seed=seeded(d + L))
    beta = sl.linear_oracle_coefficients(task)
    g2 = task.gamma**2
    assert_allclose(beta, np.tile(g2 / (g2 + L - 1) * task.v_star, (L, 1)), rtol=1e-15)
    est = sl.linear_risk_monte_carlo(task, beta, 200_000, seeded(9))
    theory = task.eps**2 + g2 - g2**2 / (g2 + L - 1)  # Prop. 3, an independent reference
    assert abs(est.mean - theory) <= Z * est.standard_error, (est, theory)


def test_least_squares_recovers_an_exact_linear_model():
    rng = np.random.default_rng(seeded(0))
    X = rng.standard_normal((200, 3, 4))
    beta = rng.standard_normal((3, 4))
    fitted = sl.linear_fit_least_squares(X, sl.linear_predict(X, beta))
    assert_allclose(fitted, beta, rtol=0, atol=1e-12)  # well-conditioned 200×12 design, round-off only


def test_least_squares_on_model_samples_approaches_the_oracle():
    task = sl.make_task(4, 3, seed=seeded(1))
    n = 40_000
    X, y, _ = sl.sample(task, n, seeded(2))
    beta = sl.linear_fit_least_squares(X, y)
    # Each coefficient has standard error ≈ σ/√(n·s²) with σ² = ℛ(β*) ≈ 0.46 and token-coordinate
    # variance s² ≥ γ²·… ≥ 0.3 here, i.e. ≈ 0.006; 0.05 is over 5 such errors.
    assert np.max(np.abs(beta - sl.linear_oracle_coefficients(task))) < 0.05
    fit_risk = sl.linear_risk_monte_carlo(task, beta, 100_000, seeded(3))
    oracle = sl.linear_risk_monte_carlo(task, sl.linear_oracle_coefficients(task), 100_000, seeded(3))
    # Same seed, so the noise is shared: the fitted β cannot beat β* beyond Monte Carlo error.
    assert fit_risk.mean >= oracle.mean - Z * oracle.standard_error


# --------------------------------------------------------------------------- gradients


@given(seed=st.integers(0, 2**16), lam=st.floats(0.1, 3.0))
@settings(max_examples=10)
def test_empirical_risk_gradient_equals_central_differences(seed, lam):
    rng = np.random.default_rng(seed)
    runs, B, L, d = 2, 3, 4, 5
    X = rng.standard_normal((runs, B, L, d))
    y = rng.standard_normal((runs, B))
    k, v = rng.standard_normal((runs, d)), rng.standard_normal((runs, d))  # off the sphere on purpose
    g_k, g_v = sl.empirical_risk_gradient(X, y, k, v, lam)
    h = 1e-5  # central differences: truncation O(h²·f''') ≈ 1e-10, cancellation O(ε·f/h) ≈ 1e-10
    for which, g in (("k", g_k), ("v", g_v)):
        fd = np.empty_like(g)
        for j in range(d):
            step = np.zeros(d)
            step[j] = h
            args_plus = (k + step, v) if which == "k" else (k, v + step)
            args_minus = (k - step, v) if which == "k" else (k, v - step)
            fd[:, j] = (sl.empirical_risk(X, y, *args_plus, lam) - sl.empirical_risk(X, y, *args_minus, lam)) / (2 * h)
        assert_allclose(g, fd, rtol=0, atol=1e-6 * np.max(np.abs(g)))


def test_empirical_risk_broadcasts_runs_over_one_shared_batch():
    rng = np.random.default_rng(seeded(1))
    X, y = rng.standard_normal((6, 3, 4)), rng.standard_normal(6)
    k, v = unit(rng.standard_normal((2, 4))), unit(rng.standard_normal((2, 4)))
    risks = sl.empirical_risk(X, y, k, v, 0.8)
    expected = [np.mean((sl.predict(X, k[i], v[i], 0.8) - y) ** 2) for i in range(2)]
    assert_allclose(risks, expected, rtol=1e-13)


# A smooth test function of the five overlaps: F = cᵀo + ½oᵀAo, o = (κ, ν, θ, η, ρ).
_C = np.array([-1.0, -2.0, 0.5, 0.3, -0.7])
_A = np.array(
    [[2.0, 0.3, 0.0, 0.1, 0.0], [0.3, 1.0, 0.2, 0.0, 0.0], [0.0, 0.2, 3.0, 0.0, 0.4],
     [0.1, 0.0, 0.0, 1.5, 0.0], [0.0, 0.0, 0.4, 0.0, 2.5]]
)


def quadratic(k, v, k_star, v_star):
    o = np.stack(sl.overlaps(k, v, k_star, v_star), axis=-1)
    return o @ _C + 0.5 * np.einsum("...i,ij,...j->...", o, _A, o)


def quadratic_gradient(k_star, v_star):
    def gradient(k, v, lam):
        o = np.stack(sl.overlaps(k, v, k_star, v_star), axis=-1)
        partials = _C + o @ _A  # ∂F/∂o, (runs, 5)
        return sl.overlap_gradient_to_vectors(tuple(partials.T), k, v, k_star, v_star)

    return gradient


def test_chain_rule_gradient_equals_finite_differences():
    task = sl.make_task(6, 2, seed=seeded(7))
    rng = np.random.default_rng(seeded(8))
    k, v = rng.standard_normal((3, 6)), rng.standard_normal((3, 6))
    g_k, g_v = quadratic_gradient(task.k_star, task.v_star)(k, v, 1.0)
    h = 1e-4  # F is quadratic in (k, v): central differences are exact up to round-off ≈ 1e-12
    for which, g in (("k", g_k), ("v", g_v)):
        for j in range(6):
            step = np.zeros(6)
            step[j] = h
            dk, dv = (step, 0.0) if which == "k" else (0.0, step)
            fd = (quadratic(k + dk, v + dv, task.k_star, task.v_star)
                  - quadratic(k - dk, v - dv, task.k_star, task.v_star)) / (2 * h)
            assert_allclose(g[:, j], fd, rtol=0, atol=1e-8)


# --------------------------------------------------------------------------- projected descent


def test_projected_gradient_descent_stays_on_the_sphere_and_descends():
    task = sl.make_task(7, 2, seed=seeded(1))
    k0, v0 = sl.initialize_on_sphere(5, 7, seeded(2))
    gradient = quadratic_gradient(task.k_star, task.v_star)
    seen = []
    traj = sl.projected_gradient_descent(
        k0, v0, gradient, steps=50, step_size=0.1, lam_schedule=1.0, record_every=20,
        progress=lambda t, total: seen.append((t, total)),
    )
    assert list(traj.steps) == [0, 20, 40, 50] and seen == [(0, 50), (20, 50), (40, 50), (50, 50)]
    assert traj.k.shape == (4, 5, 7) and traj.lam.shape == (4,)
    for x in (traj.k, traj.v):
        assert_allclose(np.linalg.norm(x, axis=-1), 1.0, rtol=0, atol=ROUND_OFF)
    assert_allclose(traj.k[0], k0, rtol=0, atol=0)
    # One small step: F decreases by α·(‖P_k g_k‖² + ‖P_v g_v‖²) to first order (error O(α²)).
    alpha = 1e-4
    one = sl.projected_gradient_descent(k0, v0, gradient, steps=1, step_size=alpha, lam_schedule=1.0, record_every=1)
    g_k, g_v = gradient(k0, v0, 1.0)
    tangent = lambda x, g: g - np.sum(x * g, axis=-1, keepdims=True) * x
    predicted = -alpha * (np.sum(tangent(k0, g_k) ** 2, -1) + np.sum(tangent(v0, g_v) ** 2, -1))
    change = quadratic(one.k[1], one.v[1], task.k_star, task.v_star) - quadratic(k0, v0, task.k_star, task.v_star)
    assert np.all(change < 0)
    assert_allclose(change, predicted, rtol=1e-2)


def test_manifold_is_invariant_when_the_gradient_vanishes_on_it():
    # F = f(κ, ν) + quadratic in (θ, η, ρ) has ∂F/∂θ = ∂F/∂η = ∂F/∂ρ = 0 on M, like the risk (spec §3.3).
    task = sl.make_task(9, 2, seed=seeded(4))

    def gradient(k, v, lam):
        kappa, nu, theta, eta, rho = sl.overlaps(k, v, task.k_star, task.v_star)
        partials = (-(1 + nu), -kappa, 2 * theta, 2 * eta, 2 * rho)
        return sl.overlap_gradient_to_vectors(partials, k, v, task.k_star, task.v_star)

    k0, v0 = sl.initialize_on_manifold(4, task.k_star, task.v_star, seeded(5))
    traj = sl.projected_gradient_descent(k0, v0, gradient, steps=200, step_size=0.05,
                                         lam_schedule=sl.lambda_schedule(1.0, True), record_every=50)
    _, _, theta, eta, rho = traj.overlaps(task.k_star, task.v_star)
    assert np.max(np.abs(np.stack([theta, eta, rho]))) < ROUND_OFF


def test_descent_in_four_dimensions_reproduces_the_full_dimensional_one():
    # Spec §3.2: ∇ℛ lies in span{k*, v*, k, v}, so PGD in R⁴ gives the same overlaps for every step.
    task = sl.make_task(30, 2, seed=seeded(6))
    k0, v0 = sl.initialize_on_sphere(3, 30, seeded(7))
    (k4, v4), (e1, e2) = sl.reduce_to_four_dimensions(k0, v0, task.k_star, task.v_star)
    kwargs = dict(steps=300, step_size=0.05, lam_schedule=1.0, record_every=100)
    full = sl.projected_gradient_descent(k0, v0, quadratic_gradient(task.k_star, task.v_star), **kwargs)
    small = sl.projected_gradient_descent(k4, v4, quadratic_gradient(e1, e2), **kwargs)
    for a, b in zip(full.overlaps(task.k_star, task.v_star), small.overlaps(e1, e2)):
        assert_allclose(a, b, rtol=0, atol=1e-10)  # round-off accumulated over 300 steps


def test_lambda_schedule_is_the_authors():
    scheduled = sl.lambda_schedule(2.0, True)
    assert scheduled(0) == 2.0 and scheduled(10_000) == 1.0 and scheduled(30_000) == 0.5
    assert sl.lambda_schedule(0.9, False)(123_456) == 0.9


# --------------------------------------------------------------------------- initialisations, reduction


def test_initialisations():
    task = sl.make_task(40, 2, seed=seeded(9))
    k0, v0 = sl.initialize_on_manifold(50, task.k_star, task.v_star, seeded(10))
    _, _, theta, eta, rho = sl.overlaps(k0, v0, task.k_star, task.v_star)
    assert np.max(np.abs(np.stack([theta, eta, rho]))) < ROUND_OFF
    ks, vs = sl.initialize_on_sphere(50, 40, seeded(11))
    for x in (k0, v0, ks, vs):
        assert x.shape == (50, 40)
        assert_allclose(np.linalg.norm(x, axis=-1), 1.0, rtol=0, atol=ROUND_OFF)
    assert_allclose(task.k_star @ task.v_star, 0.0, atol=ROUND_OFF)


@given(kind=st.sampled_from(KINDS), seed=st.integers(0, 2**16), d=st.integers(4, 50))
@settings(max_examples=30)
def test_reduce_to_four_dimensions_preserves_overlaps_and_norms(kind, seed, d):
    task = sl.make_task(d, 2, seed=seed)
    k, v = parameters(task, kind, seed + 1)
    (k4, v4), (e1, e2) = sl.reduce_to_four_dimensions(k, v, task.k_star, task.v_star)
    assert k4.shape == (4,) and v4.shape == (4,)
    assert_allclose(sl.overlaps(k4, v4, e1, e2), sl.overlaps(k, v, task.k_star, task.v_star), rtol=0, atol=ROUND_OFF)
    assert_allclose([np.linalg.norm(k4), np.linalg.norm(v4)], 1.0, rtol=0, atol=ROUND_OFF)


# --------------------------------------------------------------------------- SGD


def test_stochastic_gradient_descent_records_and_learns():
    task = sl.make_task(12, 4, seed=seeded(3))
    k0, v0 = sl.initialize_on_sphere(3, 12, seeded(4))
    traj = sl.stochastic_gradient_descent(
        task, k0, v0, lam_schedule=sl.lambda_schedule(1.0, True), step_size=0.01, batch_size=5,
        steps=2000, rng=seeded(5), test_size=500, record_every=500,
    )
    assert list(traj.steps) == [0, 500, 1000, 1500, 2000]
    assert traj.test_risk.shape == (5, 3)
    assert_allclose(traj.lam, [1.0 / (1 + 1e-4 * t) for t in traj.steps], rtol=1e-15)
    for x in (traj.k, traj.v):
        assert_allclose(np.linalg.norm(x, axis=-1), 1.0, rtol=0, atol=ROUND_OFF)
    # The test batch is the first draw from the seeded generator: the recorded risk is reproducible.
    X_test, y_test, _ = sl.sample(task, 500, seeded(5))
    assert_allclose(traj.test_risk[0], sl.empirical_risk(X_test, y_test, k0, v0, 1.0), rtol=1e-13)
    assert np.all(traj.test_risk[-1] < traj.test_risk[0])
    frozen = sl.stochastic_gradient_descent(task, k0, v0, lam_schedule=1.0, step_size=0.0, batch_size=2,
                                            steps=3, rng=seeded(6), test_size=10, record_every=3)
    assert_allclose(frozen.k[-1], k0, rtol=0, atol=1e-15)


# --------------------------------------------------------------------------- argument checks


def _task():
    return sl.make_task(6, 3, seed=0)


BAD_CALLS = [
    ("d", lambda: sl.make_task(1, 3, seed=0)),
    ("d", lambda: sl.make_task(4.5, 3, seed=0)),
    ("L", lambda: sl.make_task(6, 0, seed=0)),
    ("gamma", lambda: sl.make_task(6, 3, gamma=0.0, seed=0)),
    ("gamma", lambda: sl.make_task(6, 3, gamma=-1.0, seed=0)),
    ("eps", lambda: sl.make_task(6, 3, eps=-0.1, seed=0)),
    ("eps", lambda: sl.make_task(6, 3, eps=float("nan"), seed=0)),
    ("k_star", lambda: sl.RegressionTask(3, 2, 1.0, 0.1, np.array([1.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0]))),
    ("k_star and v_star", lambda: sl.RegressionTask(2, 2, 1.0, 0.1, np.array([1.0, 0.0]), unit([1.0, 1.0]))),
    ("lam", lambda: sl.predict(np.ones((2, 6)), _task().k_star, _task().v_star, 0.0)),
    ("lam", lambda: sl.risk_monte_carlo(_task(), _task().k_star, _task().v_star, -1.0, 10, 0)),
    ("k", lambda: sl.risk_monte_carlo(_task(), 2 * _task().k_star, _task().v_star, 1.0, 10, 0)),
    ("v", lambda: sl.predict(np.ones((2, 6)), _task().k_star, np.ones(6), 1.0)),
    ("n", lambda: sl.risk_monte_carlo(_task(), _task().k_star, _task().v_star, 1.0, 1, 0)),
    ("n", lambda: sl.bayes_risk_monte_carlo(_task(), 1, 0)),
    ("n", lambda: sl.sample(_task(), 0, 0)),
    ("n", lambda: sl.linear_fit_least_squares(np.ones((5, 3, 6)), np.ones(5))),
    ("batch", lambda: sl.risk_monte_carlo(_task(), _task().k_star, _task().v_star, 1.0, 10, 0, batch=0)),
    ("beta", lambda: sl.linear_risk_monte_carlo(_task(), np.ones((2, 6)), 10, 0)),
    ("X", lambda: sl.bayes_posterior(np.full((2, 3, 6), np.nan), _task())),
    ("lam0", lambda: sl.lambda_schedule(0.0, True)),
    ("k0", lambda: sl.projected_gradient_descent(np.ones((2, 4)), unit(np.ones((2, 4))), lambda k, v, l: (k, v),
                                                 steps=1, step_size=0.1, lam_schedule=1.0, record_every=1)),
    ("steps", lambda: sl.projected_gradient_descent(unit(np.ones(4)), unit(np.ones(4)), lambda k, v, l: (k, v),
                                                    steps=-1, step_size=0.1, lam_schedule=1.0, record_every=1)),
    ("step_size", lambda: sl.projected_gradient_descent(unit(np.ones(4)), unit(np.ones(4)), lambda k, v, l: (k, v),
                                                        steps=1, step_size=-0.1, lam_schedule=1.0, record_every=1)),
    ("record_every", lambda: sl.projected_gradient_descent(unit(np.ones(4)), unit(np.ones(4)), lambda k, v, l: (k, v),
                                                           steps=1, step_size=0.1, lam_schedule=1.0, record_every=0)),
    ("lam_schedule(0)", lambda: sl.projected_gradient_descent(unit(np.ones(4)), unit(np.ones(4)), lambda k, v, l: (k, v),
                                                              steps=1, step_size=0.1, lam_schedule=lambda t: -1.0,
                                                              record_every=1)),
    ("gradient", lambda: sl.projected_gradient_descent(unit(np.ones(4)), unit(np.ones(4)), lambda k, v, l: (k[:, :2], v),
                                                       steps=1, step_size=0.1, lam_schedule=1.0, record_every=1)),
    ("batch_size", lambda: sl.stochastic_gradient_descent(_task(), _task().k_star, _task().v_star, lam_schedule=1.0,
                                                          step_size=0.1, batch_size=0, steps=1, rng=0, record_every=1)),
]


@pytest.mark.parametrize("name, call", BAD_CALLS, ids=[f"{i}-{name}" for i, (name, _) in enumerate(BAD_CALLS)])
def test_bad_arguments_raise_value_error_naming_the_parameter(name, call):
    with pytest.raises(ValueError, match="^" + re.escape(name) + " must"):
        call()


def test_randomness_must_be_explicit():
    with pytest.raises(TypeError, match="^rng must"):
        sl.sample(_task(), 3, None)


# --------------------------------------------------------------------------- the boundary


def test_backend_may_be_given_by_name():
    task = sl.make_task(6, 3, seed=0, backend="numpy")
    k, v = task.k_star, task.v_star
    by_name = sl.risk_monte_carlo(task, k, v, 0.5, 200, 1, backend="numpy")
    assert by_name == sl.risk_monte_carlo(task, k, v, 0.5, 200, 1)
    assert_allclose(sl.overlaps(k, v, k, v, backend="numpy"), [1.0, 1.0, 0.0, 0.0, 0.0], atol=ROUND_OFF)
    with pytest.raises(ValueError, match="backend"):
        sl.sample(task, 3, 0, backend="numpi")


@pytest.mark.parametrize("not_a_task", [None, {"d": 6}, "task", 3])
def test_a_task_must_be_a_task(not_a_task):
    with pytest.raises(TypeError, match="^task must be a RegressionTask"):
        sl.bayes_risk_monte_carlo(not_a_task, 10, 0)


@pytest.mark.parametrize("call", [
    lambda X: sl.bayes_posterior(X, _task()),
    lambda X: sl.bayes_predict(X, _task()),
    lambda X: sl.empirical_risk(X, np.zeros(2), _task().k_star, _task().v_star, 1.0),
    lambda X: sl.empirical_risk_gradient(X, np.zeros(2), _task().k_star, _task().v_star, 1.0),
])
def test_tokens_so_large_that_the_result_overflows_are_refused_by_name(call):
    X = np.full((2, 3, 6), 1e200)  # finite, but ‖X_ℓ‖² and the squared error overflow float64
    with pytest.raises(ValueError, match="^X .*too large"):
        call(X)


@pytest.mark.parametrize("call, name", [
    (lambda: sl.make_task(6, 3, gamma=1e-200, seed=0), "gamma"),  # 1/(2γ²) of the posterior would overflow
    (lambda: sl.make_task(6, 3, eps=1e40, seed=0), "eps"),
    (lambda: sl.make_task(6, 3, seed=True), "seed"),
    (lambda: sl.lambda_schedule(1.0, "yes"), "scheduled"),
    (lambda: sl.bayes_risk_monte_carlo(_task(), 10, 0, conditional=1), "conditional"),
    (lambda: sl.population_gradient(d=2.5, L=3, gamma=0.7, eps=0.1), "d"),
    (lambda: sl.population_gradient(d=20, L=True, gamma=0.7, eps=0.1), "L"),
    (lambda: sl.overlap_gradient_to_vectors([np.ones(3)] * 5, np.ones((2, 4)) / 2, np.ones((2, 4)) / 2,
                                            np.eye(4)[0], np.eye(4)[1]), "partials"),
    (lambda: sl.projected_gradient_descent(unit(np.ones(4)), unit(np.ones(4)), lambda k, v, l: (k, v), steps=1,
                                           step_size=0.1, lam_schedule=1.0, record_every=1, progress=3), "progress"),
    (lambda: sl.population_projected_gradient_descent(unit(np.ones((2, 5))), unit(np.ones((2, 5))), lam0=1.0,
                                                      scheduled=False, step_size=0.1, steps=1, d=20, L=3, gamma=0.7,
                                                      eps=0.1, record_every=1), "k0"),
])
def test_bad_values_are_refused_by_name(call, name):
    with pytest.raises((ValueError, TypeError), match="^" + re.escape(name) + r"[ \[]"):
        call()


def test_population_gradient_is_checked_once_and_matches_the_closed_form():
    from attnverify.theories.single_location import derivations as theory

    gradient = sl.population_gradient(d=20, L=3, gamma=0.7, eps=0.1, backend="numpy")
    k, v = unit(np.array([[0.6, 0.3, -0.5, 0.2]])), unit(np.array([[0.1, 0.8, 0.3, -0.4]]))
    e1, e2 = np.eye(4)[0], np.eye(4)[1]
    partials = theory.risk_gradient_from_overlaps(*sl.overlaps(k, v, e1, e2), lam=0.9, gamma=0.7, d=20, L=3, eps=0.1)
    expected = sl.overlap_gradient_to_vectors(partials, k, v, e1, e2)
    for got, want in zip(gradient(k, v, 0.9), expected):
        assert_allclose(got, want, rtol=1e-15, atol=0)


# --------------------------------------------------------------------------- GPU


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_works(), reason="no working cupy device")
def test_cupy_backend_estimates_the_same_risk():
    gpu = get_backend("cupy")
    task = sl.make_task(400, 10, seed=0)
    on_gpu = sl.make_task(400, 10, seed=0, backend=gpu)
    cpu = sl.risk_monte_carlo(task, task.k_star, task.v_star, 0.1, 200_000, 1)
    est = sl.risk_monte_carlo(on_gpu, on_gpu.k_star, on_gpu.v_star, 0.1, 200_000, 1, backend=gpu)
    assert_agree(cpu, est)
    bayes_cpu = sl.bayes_risk_monte_carlo(task, 100_000, 2)
    assert_agree(bayes_cpu, sl.bayes_risk_monte_carlo(on_gpu, 100_000, 2, backend=gpu))


def test_the_manifold_start_needs_the_models_orthogonal_pair_and_a_huge_start_names_its_larger_size():
    """⟨k*, v*⟩ = 0 in the model: a pair that is not is refused (the manifold θ = η = ρ = 0 is built on it); a
    start too large to hold names d when d is the larger of its two sizes."""
    e = np.eye(4)
    with pytest.raises(ValueError, match=r"^k_star and v_star must be orthogonal, .* got ⟨k\*, v\*⟩ = 1"):
        sl.initialize_on_manifold(2, e[0], e[0], 0)
    with pytest.raises(ValueError, match=r"^d = 1000000000000 needs .* \(runs × d float64, runs = 2\)"):
        sl.initialize_on_sphere(2, 10**12, 0)


@pytest.mark.parametrize("returned, error, says", [
    (None, TypeError, r"^gradient\(k, v, lam\) must return the pair \(∂/∂k, ∂/∂v\), got NoneType"),
    ((1.0, 2.0), ValueError, r"^gradient must return arrays shaped like k and v \(2, 8\), got float and float"),
    ((np.zeros((2, 3)), np.zeros((2, 8))), ValueError, r"got \(2, 3\) and \(2, 8\)")])
def test_a_gradient_that_returns_no_pair_of_arrays_is_named(returned, error, says):
    k0, v0 = sl.initialize_on_sphere(2, 8, 0)
    with pytest.raises(error, match=says):
        sl.projected_gradient_descent(k0, v0, lambda k, v, lam: returned, steps=3, step_size=0.1, lam_schedule=1.0,
                                      record_every=1)


def test_a_step_size_that_overflows_the_descent_is_named_by_step():
    """step_size = 10³⁰⁸ sends k and v beyond float64 at the first step: the descent says so by step, without a
    RuntimeWarning, not the risk's refusal of an internal overlap."""
    import warnings

    gradient = sl.population_gradient(d=8, L=3, gamma=0.5, eps=0.1)
    k0, v0 = sl.initialize_on_sphere(2, 4, 0)
    for record_every in (1, 5):
        with warnings.catch_warnings(), pytest.raises(ValueError, match="^the descent produced NaN or infinity by step"):
            warnings.simplefilter("error")
            sl.projected_gradient_descent(k0, v0, gradient, steps=5, step_size=1e308, lam_schedule=1.0,
                                          record_every=record_every)
