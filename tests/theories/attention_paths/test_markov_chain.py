"""Tests for theories/attention_paths/markov_chain.py (the hidden-Markov-chain task, docs/papers/attention_paths.md
§4.1) and for the authors' fixture shipped beside it (theories/attention_paths/data/README.md).

Tolerances: Monte Carlo comparisons use z = 5 standard errors (a false alarm has probability ≈ 6e-7 per
comparison, ≤ 5·10⁻⁶ per test); seeds go through ``seeds.seeded``, so ``ATTNVERIFY_TEST_SEED_OFFSET`` reruns the
tests under fresh seeds, except the comparison with the authors' fixture, whose seed 59 reproduces their label
sequence (asserted); exact constructions (heads, one-hot
positions, BOS, path identities) are compared exactly or at round-off (1e-12).

The comparison with the authors' own path features (``markov_4paths_authors.npz``) asserts only what
depends on no random head: path 0 = (good, uniform). Paths 1–3 go through the random heads, which are
one draw each in the authors' torch stream and another here, so their figures are not asserted. Observed
with seed 59 / head_seed 0 (P = 1000 each; mean of X^μ_π·X^μ_π'; the fixture first): (0,0) 0.0496 vs
0.0484 (z = −1.0, asserted), (1,1) 0.1960 vs 0.2003, (2,2) 0.1208 vs 0.1634, (3,3) 0.3636 vs 0.3917,
(0,2) 0.0619 vs 0.0705. Over 60 head seeds the fixture's (0,2) lies below every draw (ours 0.0701 ± 0.0014
head-to-head; 0.3 % of 300 layer-1 heads go that low): its layer-1 random head puts 7.6 % of the mean
attention on BOS, a ~1 % tail of our head distribution (1.4 % ± 1.8 %).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from attnverify.theories.attention_paths import features as ft
from attnverify.theories.attention_paths import markov_chain as mc
from attnverify.theories.attention_paths.theory_points import AUTHORS_MARKOV_PATH, authors_markov_data
from attnverify.numerics.statistics import mean_estimate
from seeds import seeded

Z = 5.0  # standard errors allowed in every Monte Carlo comparison (see module docstring)
ROUND_OFF = 1e-12


def assert_mean(values, expected, what=""):
    """The sample mean of ``values`` is within Z standard errors of ``expected``."""
    est = mean_estimate(values)
    assert abs(est.mean - expected) <= Z * est.standard_error, (what, est, expected)


def residual_noise(task, x, states):
    """n_t = x_t − v_{s_t} for the chain tokens (positions 1..S), shape (P, F, S)."""
    v_plus, v_minus = task.states()
    clean = np.where((states > 0)[:, None, :], v_plus[None, :, None], v_minus[None, :, None])
    return x[:, : task.features, 1:] - clean


# --------------------------------------------------------------------------- task and data


def test_task_defaults_and_validation():
    task = mc.MarkovChainTask()
    assert (task.tokens, task.features, task.input_width, task.sequence_length) == (30, 200, 231, 31)
    assert (task.p_a, task.p_b, task.beta, task.perturbation) == (0.7, 0.3, 10.0, 1.0)
    assert (task.noise_along_difference, task.noise_along_sum, task.out_of_plane_noise) == (1.0, 1.0, 1.0)
    v_plus, v_minus = task.states()
    assert_allclose([v_plus @ v_plus, v_minus @ v_minus, v_plus @ v_minus], [200.0, 200.0, 0.0], atol=1e-12)
    for kwargs, name in [
        (dict(tokens=0), "tokens"),
        (dict(features=201), "features"),
        (dict(features=True), "features"),
        (dict(p_a=1.2), "p_a"),
        (dict(p_b=-0.1), "p_b"),
        (dict(out_of_plane_noise=-1.0), "out_of_plane_noise"),
        (dict(noise_along_sum=math.nan), "noise_along_sum"),
        (dict(beta=math.inf), "beta"),
        (dict(perturbation=-0.5), "perturbation"),
        (dict(p_a=True), "p_a"),
        (dict(beta="10"), "beta"),
    ]:
        with pytest.raises((ValueError, TypeError), match=name):  # TypeError: not a number at all
            mc.MarkovChainTask(**kwargs)
    with pytest.raises(ValueError, match="P"):
        mc.sample_sequences(task, 7, seed=0)
    with pytest.raises(ValueError, match="seed"):
        mc.sample_sequences(task, 8, seed=None)


def test_labels_bos_and_positions():
    task = mc.MarkovChainTask(tokens=6, features=8)
    x, y = mc.sample_sequences(task, 10, seed=seeded(1))
    assert x.shape == (10, 8 + 7, 7) and y.shape == (10,)
    assert_array_equal(y, [1.0] * 5 + [-1.0] * 5)
    assert_array_equal(x[:, :8, 0], 0.0)  # BOS has zero features
    assert np.all(np.abs(x[:, :8, 1:]) > 0)
    assert_array_equal(x[:, 8:, :], np.broadcast_to(np.eye(7), (10, 7, 7)))  # one-hot positions
    x2, y2 = mc.sample_sequences(task, 10, seed=seeded(1))
    assert_array_equal(x, x2)
    assert not np.array_equal(x, mc.sample_sequences(task, 10, seed=seeded(2))[0])


@pytest.mark.parametrize("strengths", [(1.0, 1.0, 1.0), (0.5, 2.0, 3.0)])
def test_noise_variances_along_e_d_e_s_and_the_complement(strengths):
    """Var(e_d·n) = a_d², Var(e_s·n) = a_s², E|P⊥n|²/(F−2) = σ⊥², no d–s correlation, zero mean."""
    a_d, a_s, sigma = strengths
    task = mc.MarkovChainTask(noise_along_difference=a_d, noise_along_sum=a_s, out_of_plane_noise=sigma)
    x, y, states = mc.sample_sequences(task, 100, seed=seeded(11), return_states=True)
    n = residual_noise(task, x, states)
    v_plus, v_minus = task.states()
    e_d = (v_plus - v_minus) / np.linalg.norm(v_plus - v_minus)
    e_s = (v_plus + v_minus) / np.linalg.norm(v_plus + v_minus)
    c_d = np.einsum("i,pit->pt", e_d, n)
    c_s = np.einsum("i,pit->pt", e_s, n)
    rest = n - e_d[None, :, None] * c_d[:, None, :] - e_s[None, :, None] * c_s[:, None, :]
    assert_mean(c_d, 0.0, "mean along e_d")
    assert_mean(c_d**2, a_d**2, "variance along e_d")
    assert_mean(c_s**2, a_s**2, "variance along e_s")
    assert_mean(c_d * c_s, 0.0, "covariance e_d, e_s")
    assert_mean(np.sum(rest**2, axis=1) / (task.features - 2), sigma**2, "out-of-plane variance per dimension")


def test_chain_persistence_and_first_state():
    """Stay frequencies per class within 5 SE of p_a / p_b; the first state is ±1 with probability 1/2."""
    task = mc.MarkovChainTask(p_a=0.8, p_b=0.25)
    x, y, states = mc.sample_sequences(task, 400, seed=seeded(12), return_states=True)
    assert set(np.unique(states)) == {-1, 1}
    stay = (states[:, 1:] == states[:, :-1]).astype(float)
    assert_mean(stay[y > 0], 0.8, "class a")
    assert_mean(stay[y < 0], 0.25, "class b")
    assert_mean((states[:, 0] > 0).astype(float), 0.5, "first state")
    # the tokens carry the states: sign of (v_+ − v_−)·x_t is the state when the noise is small
    quiet = mc.MarkovChainTask(noise_along_difference=0.1, noise_along_sum=0.1, out_of_plane_noise=0.1)
    x, y, states = mc.sample_sequences(quiet, 20, seed=seeded(13), return_states=True)
    v_plus, v_minus = quiet.states()
    assert_array_equal(np.sign(np.einsum("i,pit->pt", v_plus - v_minus, x[:, :200, 1:])), states)


# --------------------------------------------------------------------------- heads


def test_good_head_structure():
    task = mc.MarkovChainTask(tokens=5, features=4, beta=2.0)
    w = mc.good_head(task)
    q = np.array([1.0, 1.0, -1.0, -1.0]) * math.sqrt(2.0) / 4.0  # (v_+ − v_−)/(|v_+ − v_−|²/2), |·|² = 8
    assert_allclose(w[:4, :4], 2.0 * np.outer(q, q), atol=1e-15)
    positions = np.zeros((6, 6))
    positions[0, 1:] = 1.5
    for t in range(2, 6):
        positions[t - 1, t] = 1.0
    assert_array_equal(w[4:, 4:], 2.0 * positions)
    assert_array_equal(w[:4, 4:], 0.0)
    assert_array_equal(w[4:, :4], 0.0)


def test_good_head_attends_to_the_previous_token_of_the_same_state_else_bos():
    """On clean tokens: score β(1 + 1) = 20 for the previous token in the same state, 15 for BOS, ≤ 10 else."""
    clean = mc.MarkovChainTask(noise_along_difference=0.0, noise_along_sum=0.0, out_of_plane_noise=0.0)
    x, y, states = mc.sample_sequences(clean, 20, seed=seeded(3), return_states=True)
    omega = ft.attention_matrix(x, mc.good_head(clean))
    for t in range(1, clean.tokens + 1):
        same = np.zeros(20, dtype=bool) if t == 1 else states[:, t - 1] == states[:, t - 2]
        target = np.where(same, t - 1, 0)
        assert_array_equal(omega[:, :, t].argmax(axis=1), target)
        weight = omega[np.arange(20), target, t]
        assert np.all(weight[same] > 0.99) and np.all(weight[~same] > 0.8)


def test_uniform_and_blank_heads_give_exactly_uniform_attention():
    task = mc.MarkovChainTask()
    x, _ = mc.sample_sequences(task, 6, seed=seeded(4))
    blank = mc.random_head(task, 0.0, seed=seeded(5))
    assert_array_equal(blank, 0.0)
    for w in (mc.uniform_head(task), blank):
        assert_array_equal(ft.attention_matrix(x, w), 1.0 / 31)


def test_random_head_block_scalings():
    """Entries are β·p·N(0,1) scaled by 1/F (features), 1 (positions), 1/√F (cross blocks)."""
    task = mc.MarkovChainTask()
    w = mc.random_head(task, None, seed=seeded(6))
    F, beta = 200, 10.0
    assert_mean((w[:F, :F] * F / beta) ** 2, 1.0, "feature block")
    assert_mean((w[F:, F:] / beta) ** 2, 1.0, "position block")
    cross = np.concatenate([w[:F, F:].ravel(), w[F:, :F].ravel()]) * math.sqrt(F) / beta
    assert_mean(cross**2, 1.0, "cross blocks")
    assert_mean(w[:F, :F] * F / beta, 0.0, "feature block mean")
    assert_allclose(mc.random_head(task, 0.5, seed=seeded(6)), 0.5 * w, rtol=1e-15)
    assert_array_equal(mc.random_head(task, 1.0, seed=seeded(6)), w)
    assert not np.array_equal(mc.random_head(task, 1.0, seed=seeded(7)), w)
    with pytest.raises(ValueError, match="perturbation"):
        mc.random_head(task, -1.0, seed=6)


# --------------------------------------------------------------------------- networks and path features


def test_networks_and_path_order():
    assert mc.path_names("4paths") == [
        ("good", "uniform"),
        ("good", "random"),
        ("random", "uniform"),
        ("random", "random"),
    ]
    assert mc.path_names("2paths") == [("good", "uniform"), ("blank", "uniform")]
    assert mc.path_names("good") == [("good", "uniform")]
    assert mc.path_names("good_denoising") == [("good", "uniform"), ("random", "uniform")]
    with pytest.raises(ValueError, match="network"):
        mc.path_names("8paths")
    with pytest.raises(ValueError, match="network"):
        mc.network_heads(mc.MarkovChainTask(), [["good"], []])


def test_path_features_share_heads_and_identities():
    """Heads depend on head_seed only, data on seed only; path 0 uses no random head; shared random heads
    give the same path up to the 1/sqrt(𝓗) normalisation; the blank path is the token mean."""
    task = mc.MarkovChainTask(tokens=10, features=20)
    X, y = mc.markov_path_features(task, "4paths", 8, seed=seeded(1), head_seed=seeded(0))
    assert X.shape == (8, 31, 4)
    assert_array_equal(y, [1.0] * 4 + [-1.0] * 4)
    X_other_heads, _ = mc.markov_path_features(task, "4paths", 8, seed=seeded(1), head_seed=seeded(1))
    assert_array_equal(X_other_heads[:, :, 0], X[:, :, 0])
    assert np.max(np.abs(X_other_heads[:, :, 3] - X[:, :, 3])) > 1e-6
    X_gd, _ = mc.markov_path_features(task, "good_denoising", 8, seed=seeded(1), head_seed=seeded(0))
    assert_allclose(X_gd[:, :, 1] * math.sqrt(2), X[:, :, 2] * math.sqrt(4), atol=ROUND_OFF)
    assert_allclose(X_gd[:, :, 0] * math.sqrt(2), X[:, :, 0] * math.sqrt(4), atol=ROUND_OFF)
    X_2, _ = mc.markov_path_features(task, "2paths", 8, seed=seeded(1))
    x, _ = mc.sample_sequences(task, 8, seed=seeded(1))
    assert_allclose(X_2[:, :, 1], x.mean(axis=2) / math.sqrt(31 * 2), atol=ROUND_OFF)


@settings(max_examples=10)
@given(seed=st.integers(0, 2**32 - 1), head_seed=st.integers(0, 1000))
def test_markov_dataset_is_seeded(seed, head_seed):
    task = mc.MarkovChainTask(tokens=4, features=6)
    a = mc.markov_dataset(task, "4paths", 4, 6, seed=seed, head_seed=head_seed)
    b = mc.markov_dataset(task, "4paths", 4, 6, seed=seed, head_seed=head_seed)
    for u, v in zip(a, b):
        assert_array_equal(u, v)
    X_train, y_train, X_test, y_test = a
    assert X_train.shape == (4, 11, 4) and X_test.shape == (6, 11, 4)  # N0 = 6 + 4 + 1
    assert_array_equal(y_test, [1, 1, 1, -1, -1, -1])
    assert not np.allclose(X_train, X_test[:4])


# --------------------------------------------------------------------------- the authors' fixture


@pytest.fixture(scope="module")
def authors():
    """The fixture ships with the package, so a clean clone runs these tests; every array is loaded."""
    assert AUTHORS_MARKOV_PATH.is_file(), AUTHORS_MARKOV_PATH
    with np.load(AUTHORS_MARKOV_PATH) as data:
        assert sorted(data.files) == ["Xa", "Xta", "y", "yt"]
        return {key: data[key] for key in data.files}


def test_authors_markov_data_reads_the_shipped_fixture(authors):
    X, y, X_test, y_test = authors_markov_data()
    for loaded, key in zip((X, y, X_test, y_test), ("Xa", "y", "Xta", "yt")):
        assert_array_equal(loaded, authors[key])


@pytest.fixture(scope="module")
def ours():
    # not seeds.seeded: seed 59 is the one whose labels are the authors' (asserted below), the fixture is one draw
    return mc.markov_path_features(mc.MarkovChainTask(), "4paths", 1000, seed=59, head_seed=0)


def overlap(X, pi, rho):
    """Per-example X^μ_π · X^μ_ρ (the diagonal μ = ν of the path-path kernel C_{πρ})."""
    return np.einsum("mi,mi->m", X[:, :, pi], X[:, :, rho])


def test_fixture_shapes_labels_and_normalisation(authors, ours):
    """Same shapes and labels; the position rows of every path sum to 1/sqrt(N0·𝓗) with N0 = 231 (the
    attention vector sums to 1 and the one-hot rows read it out), in the fixture and here."""
    X, y = ours
    assert authors["Xa"].shape == (100, 231, 4) and authors["Xta"].shape == X.shape == (1000, 231, 4)
    assert_array_equal(authors["yt"], y)
    assert_array_equal(authors["y"], [1.0] * 50 + [-1.0] * 50)
    for features in (authors["Xa"], authors["Xta"], X):
        assert_allclose(features[:, 200:, :].sum(axis=1) * math.sqrt(231 * 4), 1.0, rtol=0, atol=ROUND_OFF)


def test_good_path_agrees_with_the_fixture(authors, ours):
    """Path 0 = (good, uniform) depends on no random head: mean |X_0|² and the mean BOS weight of its
    attention vector agree with the authors' test features within 5 combined standard errors."""
    X, _ = ours
    theirs = authors["Xta"]
    for statistic in (
        lambda F: overlap(F, 0, 0),
        lambda F: F[:, 200, 0] * math.sqrt(231 * 4),
    ):
        a, b = mean_estimate(statistic(theirs)), mean_estimate(statistic(X))
        assert abs(a.mean - b.mean) <= Z * math.hypot(a.standard_error, b.standard_error), (a, b)
