"""``sampled_networks_match_theory`` against the action's own prediction: sampled networks compared
with the posterior mean of the order parameters under e^{−S} (:func:`attnverify.saddle.posterior_mean`) within
z MCSE + that prediction's stated error, the allowance printed with its source and the saddle point beside it.

At examples/relu_saddle.py's setting (N = 38, P = 30, d = 11, T = 0.1, σ² = 1.5, seed 6) with linear units the
action is exact: its integral (2.4371, quadrature error ~6e-12) matches the networks, the saddle point (2.4207)
does not at thorough precision, and a planted 10 % error in the entropy's coefficient of ln Q (prediction 2.5367)
is refuted.

False alarms: every comparison asks |sampled − E[u]| ≤ z·MCSE + error with z ≥ 5 (Student's t, Bonferroni over
the entries, at α = 1e-3: :meth:`ChainSummary.mcse_z`) and a quadrature error far below the MCSE, so a true theory
fails one of these tests with probability ≤ 1e-3 (≈ 6e-7 for a normal estimate at 5 SE) per comparison."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import sympy

from claim_helpers import run_seed

from attnverify import Theory, st
from attnverify.checks import run_claim
from attnverify.saddle import SaddlePointAction, positive, positive_definite, posterior_mean
from attnverify.saddle.network_claims import compare_with_prediction
from attnverify.saddle.width_claims import gap_order_evidence, gap_order_sentence, gap_slope
from attnverify.theories.catalogue import load_user_module

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SETTING = dict(N=38, sigma2=1.5, temperature=0.1, P=30, d=11, seed=6)
"""examples/relu_saddle.py's ``networks`` setting."""


def _teacher(P, d, seed):
    """examples/relu_saddle.py's teacher: P Gaussian inputs in d dimensions, a centred ReLU teacher's labels."""
    draw = np.random.default_rng(seed)
    X = draw.standard_normal((P, d))
    return X, 3 * np.maximum(X @ draw.standard_normal(d) / np.sqrt(d), 0.0) - 1.2


def _linear_claim(coefficient: float = 1.0, bias=None):
    """The one-scalar theory at the relu example's setting with LINEAR units (C = X Xᵀ/d, exact for them), the
    entropy (N/2)(Q/σ² − c·ln Q): c = 1 is right, c = 1.1 plants a 10 % error in the coefficient of ln Q; ``bias``:
    the saddle_point's stated bias budget."""
    from attnverify.saddle.network import one_hidden_layer

    theory = Theory("linear_at_relu_setting")
    Q, (N, sigma2) = positive("Q"), sympy.symbols("N sigma2", positive=True)
    action = SaddlePointAction(order_parameters={"Q": Q}, entropy=N / 2 * (Q / sigma2 - coefficient * sympy.log(Q)),
                               kernel="Q", width=N)

    @theory.saddle_point(action, **{name: st.just(value) for name, value in SETTING.items()}, bias=bias,
                         network=lambda N, sigma2, d: one_hidden_layer(N, d, readout_variance_total=sigma2,
                                                                       activation="linear"))
    def teacher(rng, P, d, seed):
        X, y = _teacher(P, d, seed)
        return dict(C=X @ X.T / d, y=y, inputs=X)

    return theory.claim_named("linear_at_relu_setting.sampled_networks_match_theory")


def _note(result) -> str:
    return result.examples[0].evidence.note


@pytest.mark.thorough  # 13–15 s of sampling: the quick tier's comparisons are examples/linear_network.py's claims
def test_linear_networks_match_the_actions_prediction_and_the_allowance_is_printed():
    """Linear units at the relu example's setting (quick: 8 chains × 500 draws, MCSE ≈ 0.0026): the networks within
    5 MCSE + the quadrature's error of the prediction 2.4371, the message giving the allowance with its source and
    the saddle point 2.4207 beside it."""
    result = run_claim(_linear_claim(), profile="quick", seed=run_seed(0))
    note = _note(result)
    assert result.status == "holds", note
    assert "against the action's prediction 2.4371 (quadrature), the saddle point 2.4207" in note
    assert "allowance 5 MCSE = " in note and "+ prediction error " in note and "(quadrature) = " in note
    figures = result.examples[0].evidence.figures
    assert figures["Q_prediction_error"] < 1e-9  # the quadrature's: the MCSE alone sets the allowance
    assert figures["Q_allowance"] == pytest.approx(5 * figures["Q_mcse"] + figures["Q_prediction_error"], rel=1e-12)


def test_a_planted_ten_percent_error_in_the_coefficient_of_ln_q_is_refuted():
    """The entropy (N/2)(Q/σ² − 1.1·ln Q) at N = 38: its prediction 2.5367 lies 0.10 above the networks' 2.437,
    about 8× the quick allowance (5 MCSE ≈ 0.013)."""
    result = run_claim(_linear_claim(1.1), profile="quick", seed=run_seed(0))
    assert result.status == "refuted", _note(result)
    assert "against the action's prediction 2.5367 (quadrature)" in _note(result)


def test_a_stated_bias_budget_widens_the_allowance_by_itself_and_is_printed():
    """The same planted 10 % error with a stated bias 5.7·σ²/N (0.225 at N = 38, σ² = 1.5), a function of the drawn
    parameters: the gap 0.10 is within 5 MCSE + 0.225, and the story names the budget."""
    result = run_claim(_linear_claim(1.1, bias=lambda N, sigma2, **p: 5.7 * sigma2 / N), profile="quick",
                       seed=run_seed(0))
    note = _note(result)
    assert result.status == "holds", note
    assert "+ stated bias 0.225 = " in note


@pytest.mark.thorough  # 13–15 s of sampling: the quick tier's comparisons are examples/linear_network.py's claims
def test_at_thorough_precision_the_prediction_holds_where_the_saddle_point_alone_is_refuted():
    """8 chains × 2000 draws (≈ 10 s; MCSE ≈ 0.0013, 5 MCSE ≈ 0.0067; measured 2.4361 ± 0.0013): the networks within the allowance of the
    prediction 2.4371 (an independent NUTS of the full network: 2.4377 ± 0.0009), and 0.0164 from the saddle point, outside it (≈ 2.5×)."""
    from attnverify.saddle.network import one_hidden_layer, sample_order_parameters

    example = load_user_module(EXAMPLES / "relu_saddle.py")
    X, y = _teacher(30, 11, 6)
    prediction = posterior_mean(example.action, dict(C=X @ X.T / 11, y=y), temperature=0.1, N=38, sigma2=1.5)
    sampled = sample_order_parameters(one_hidden_layer(38, 11, readout_variance_total=1.5, activation="linear"), X, y,
                                      temperature=0.1, chains=8, warmup=600, draws=2000, seed=3)
    assert sampled.summaries["Q"].converged
    compared = compare_with_prediction("Q", sampled.summaries["Q"], prediction)
    assert compared.holds, compared.note
    assert compared.saddle_worst > 1.0, compared.note


@pytest.mark.thorough  # 13–15 s of sampling: the quick tier's comparisons are examples/linear_network.py's claims
def test_the_relu_example_is_refuted_against_the_actions_prediction():
    """examples/relu_saddle.py's ``networks`` (ReLU units): the networks (≈ 3.32) are far from the action's own
    prediction 4.3045 (quadrature), the claim refuted as the example declares; the saddle 4.2896 printed beside."""
    claim = load_user_module(EXAMPLES / "relu_saddle.py").theory.claim_named(
        "relu_renormalisation.networks_sampled_networks_match_theory")
    result = run_claim(claim, profile="quick", seed=run_seed(0))
    assert result.status == "refuted"
    assert "against the action's prediction 4.3045 (quadrature), the saddle point 4.2896" in _note(result)


@pytest.mark.thorough  # 5 s of sampling: the docs build (make docs, CI) runs the example and fails unless refuted
def test_the_erf_example_is_refuted_against_the_actions_prediction_with_its_allowance_printed():
    """examples/erf_saddle.py (erf units, N = 20, P = 20, d = 3, T = 0.05, σ² = 1, its declaration's defaults): the
    networks (≈ 2.92) against the action's own prediction 2.7048 (quadrature; saddle 2.6939), 19× the allowance at
    8 × 2,000 draws and ≈ 10× at the quick sampler's 8 × 500, refuted as the example declares. The false-alarm side
    is the one that matters here: a right theory passes with probability ≥ 1 − 1e-3, and this gap is 10 allowances."""
    claim = load_user_module(EXAMPLES / "erf_saddle.py").theory.claim_named(
        "erf_renormalisation.sampled_networks_match_theory")
    result = run_claim(claim, profile="quick", seed=run_seed(0))
    note = _note(result)
    assert result.status == "refuted", note
    assert "against the action's prediction 2.7048 (quadrature), the saddle point 2.6939" in note
    assert "allowance 5 MCSE = " in note and "(quadrature) = " in note


# ------------------------------------------------------------------------- the comparison itself, no sampling


def _summary(mean, mcse, z=5.0):
    """A stand-in for a ChainSummary: its mean, MCSE and the z of its bound."""
    return SimpleNamespace(mean=np.asarray(mean, float), mcse=np.asarray(mcse, float),
                           mcse_z=lambda: np.full(np.shape(mean), z))


def _matrix_prediction():
    """A 2 × 2 Wishart-derived U with data: the next order of the Laplace expansion (no quadrature for a matrix)."""
    U, (N, s) = positive_definite("U", 2), sympy.symbols("N sigma2", positive=True)
    action = SaddlePointAction(order_parameters={"U": U}, entropy=N / 2 * (U.trace() / s - sympy.log(U.det())),
                               kernel="U", width=N)
    draw = np.random.default_rng(1)
    X = draw.standard_normal((12, 2, 3))
    return posterior_mean(action, dict(C=np.einsum("phd,qkd->hkpq", X, X) / 3, y=2 * X[:, 0, 0]),
                          temperature=0.1, N=20, sigma2=1.0)


def test_the_allowance_is_z_mcse_plus_the_stated_error_at_its_edge():
    """Just inside z·MCSE + error holds, just outside is refuted: the prediction's error widens the allowance and
    nothing else does (a blanket O(1/N) would pass both)."""
    prediction = SimpleNamespace(mean={"Q": 2.0}, error={"Q": 0.01}, saddle={"Q": 1.9}, method="quadrature")
    inside = compare_with_prediction("Q", _summary(2.0 + 5 * 0.002 + 0.01 - 1e-9, 0.002), prediction)
    outside = compare_with_prediction("Q", _summary(2.0 + 5 * 0.002 + 0.01 + 1e-9, 0.002), prediction)
    assert inside.holds and not outside.holds
    assert "allowance 5 MCSE = 0.0100 + prediction error 0.0100 (quadrature) = 0.0200" in inside.note
    assert inside.saddle_worst == pytest.approx((0.1 + 0.02) / 0.02, rel=1e-6)


def test_the_allowance_with_a_stated_bias_is_z_mcse_plus_the_stated_error_plus_the_bias_at_its_edge():
    prediction = SimpleNamespace(mean={"Q": 2.0}, error={"Q": 0.01}, saddle={"Q": 1.9}, method="quadrature")
    inside = compare_with_prediction("Q", _summary(2.0 + 5 * 0.002 + 0.01 + 0.03 - 1e-9, 0.002), prediction, 0.03)
    outside = compare_with_prediction("Q", _summary(2.0 + 5 * 0.002 + 0.01 + 0.03 + 1e-9, 0.002), prediction, 0.03)
    assert inside.holds and not outside.holds
    assert "+ prediction error 0.0100 (quadrature) + stated bias 0.03 = 0.0500" in inside.note


def test_a_matrix_comparison_says_the_laplace_estimate_is_its_only_error_source():
    prediction = _matrix_prediction()
    assert prediction.method == "laplace"
    compared = compare_with_prediction("U", _summary(prediction.mean["U"], np.full((2, 2), 1e-3)), prediction)
    assert compared.holds
    assert "(next-order Laplace)" in compared.note
    assert "rests only on the next-order Laplace expansion's estimate of its own O(1/N²) term" in compared.note


def test_the_gap_slope_recovers_a_planted_order_and_refuses_unresolved_gaps():
    """Gaps 0.5/N exactly (SE 1 % of each): the fitted slope is −1 to rounding and its SE that of the weighted fit;
    gaps within 3 SE at all but one width give no slope."""
    widths = np.array([10.0, 20.0, 40.0, 80.0])
    gaps = 0.5 / widths
    slope, error = gap_slope(widths, 1.0 + gaps, 0.01 * gaps, np.ones(4))
    assert slope == pytest.approx(-1.0, abs=1e-12)
    assert error == pytest.approx(0.01 / np.sqrt(np.sum((np.log(widths) - np.log(widths).mean()) ** 2)), rel=1e-12)
    assert gap_slope(widths, 1.0 + gaps, np.r_[0.01 * gaps[:1], gaps[1:]], np.ones(4)) is None


def test_the_width_claim_refutes_a_correction_of_the_wrong_sign_at_the_right_order():
    """Networks 0.5/N above the saddle point (SE 1 % of the gap) and a prediction 0.5/N from it with a small stated
    error: on the networks' side the claim holds; mirrored to the other side, the same |gap| and the same order, it
    is refuted (not inconclusive), and its note and the caption say on which side each lies."""
    widths = np.array([10.0, 20.0, 40.0, 80.0])
    gaps, saddles = 0.5 / widths, np.ones(4)
    sampled, errors, stated = saddles + gaps, 0.01 * gaps, 0.01 * gaps

    same = gap_order_evidence(widths, sampled, errors, saddles, saddles + gaps, stated, "N")
    assert same.holds and all(same.conditions.values())
    assert same.figures["sampled"] == pytest.approx(sampled.tolist()) and "wrong sign" not in same.note

    mirrored = gap_order_evidence(widths, sampled, errors, saddles, saddles - gaps, stated, "N")
    assert not mirrored.holds and not mirrored.inconclusive
    assert mirrored.theory <= mirrored.observed + mirrored.tolerance  # the order alone would pass
    assert "the networks lie above the saddle point at N = [10, 20, 40, 80]" in mirrored.note
    assert "a correction of the wrong sign" in mirrored.note
    caption = gap_order_sentence(widths, sampled, errors, saddles, "N", saddles - gaps)
    assert "the networks lie above the saddle point, the action's prediction below it" in caption

    # a stated bias budget as large as the gaps (what the action may leave out) leaves the side undecided
    excused = gap_order_evidence(widths, sampled, errors, saddles, saddles - gaps, stated, "N", biases=gaps)
    assert excused.holds and excused.figures["stated_biases"] == pytest.approx(gaps.tolist())
    half = gap_order_evidence(widths, sampled, errors, saddles, saddles - gaps, stated, "N", biases=0.5 * gaps)
    assert not half.holds and "(> 5 SE + the stated bias)" in half.note
