"""The public boundary of attention as a conditional mean: attention maps, token models, the Monte
Carlo error driver, the learning of W, and the numeric functions of the derivations.

Every entry point refuses bad input by name and returns no NaN for valid input (see ``harness``).
Valid calls are tiny (L = 3 tokens, d = 2, a handful of sequences), so each takes milliseconds.

Skips, with their reasons:
* the derivations' numeric functions take a number *or an array* per argument (the generated
  evaluators broadcast), so ``[1.0, 2.0]`` is a valid value: ``wrong_type`` is replaced by the
  other wrong types, and a bad entry inside an array is an extra;
* ``bias`` (softmax attention) and ``start`` (the fit) accept None, so ``array_wrong_type`` (which
  draws None) is replaced by the other wrong types;
* ``logits`` of ``softmax`` and the ``tokens`` of the finite-latent posterior may carry any batch
  axes in front, so the ``wrong_ndim`` values with an extra axis are valid; a value with too few
  axes is the extra instead.
"""


import numpy as np
import pytest
from hypothesis import strategies as st

from boundary_harness import assert_refused_as_endless, assert_refused_for_memory, EntryPoint, NeverDraws, \
    Parameter as P, boundary_tests

from attnverify.base.backend import on_device
from attnverify.theories.conditional_mean import derivations as theory
from attnverify.theories.conditional_mean import (ConjugateGaussianModel, FiniteLatentModel, GaussianKeyValueModel,
                                                  LinearGaussianLatentModel, SineValueModel, attention_error,
                                                  rbf_attention, ridge_attention, score_attention_error, softmax,
                                                  softmax_attention, weighted_mean)
from attnverify.theories.conditional_mean import learning
from attnverify.theories.conditional_mean.monte_carlo import AttentionError
from attnverify.numerics.statistics import Estimate
from seeds import seeded

# --------------------------------------------------------------------------- tiny valid inputs

KEYS = [[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]]
VALUES = [[1.0, 0.0], [2.0, 1.0], [3.0, -1.0]]
G2 = dict(key_mean=[0.5, -0.5], key_covariance=[[1.0, 0.3], [0.3, 0.5]], value_map=[[1.0, -2.0]],
          value_offset=[0.5], noise_sd=0.5)
SIGMA = [[1.0, 0.3], [0.3, 0.5]]


def _backend_of(rng) -> str:
    """The backend whose Generator ``rng`` is (a sampler passed to attention_error draws on the run's backend)."""
    return "cupy" if on_device(rng) else "numpy"


def _gaussian() -> GaussianKeyValueModel:
    return GaussianKeyValueModel(**G2)


def _task() -> learning.LatentLinearTask:
    return learning.LatentLinearTask(SIGMA, prior_sd=1.0, noise_sd=0.5)


def _data() -> learning.Dataset:
    return learning.draw_dataset(_task(), "masked", 3, 4, 0, masked=2)


def _method(make, name):
    return lambda **kw: getattr(make(), name)(**kw)


# a value that is not an array, other than None (None is valid for optional arrays)
NOT_AN_ARRAY = st.sampled_from(["abc", {"a": 1}, np.full((2,), "x"), np.ones(2, complex)])
# wrong types for number-or-array arguments (a list of numbers is valid there)
NOT_A_NUMBER = st.sampled_from(["1.0", None, {"value": 1.0}, object()])


def number_or_array(kind: str, bad_entry: float) -> P:
    return P(kind, skip=("wrong_type",), extra=(("wrong_type", NOT_A_NUMBER), ("bad_entry", [0.5, bad_entry])))


COUNT, NATURAL, RNG, BACKEND = P("count"), P("natural"), P("rng"), P("backend")
OBJECTIVE = P("choice", choices=learning.OBJECTIVES)

ENTRY_POINTS = [
    # ----------------------------------------------------------------- attention maps
    EntryPoint("conditional_mean.softmax", softmax, lambda: dict(logits=np.array([0.5, -1.0, 2.0]), axis=-1),
               {"logits": P("array", skip=("wrong_ndim",), extra=(("scalar", np.float64(1.0)),)),
                "axis": P("integer", extra=(("out_of_range", 3),))}),
    EntryPoint("conditional_mean.weighted_mean", weighted_mean,
               lambda: dict(logits=np.array([0.5, -1.0, 2.0]), values=np.array(VALUES)),
               {"logits": P("array", shape_partner=True), "values": P("array")}),
    EntryPoint("conditional_mean.softmax_attention", softmax_attention,
               lambda: dict(scores=np.array([0.3, -0.7]), keys=np.array(KEYS), values=np.array(VALUES),
                            bias=np.array([0.1, 0.0, -0.2])),
               {"scores": P("array", shape_partner=True), "keys": P("array", shape_partner=True),
                "values": P("array"),
                "bias": P("array", shape_partner=True, skip=("array_wrong_type",), extra=(("wrong_type", NOT_AN_ARRAY),))}),
    EntryPoint("conditional_mean.rbf_attention", rbf_attention,
               lambda: dict(query=np.array([0.3, -0.7]), keys=np.array(KEYS), values=np.array(VALUES), bandwidth=0.8),
               {"query": P("array", shape_partner=True), "keys": P("array", shape_partner=True), "values": P("array"),
                "bandwidth": P("positive")}),
    EntryPoint("conditional_mean.ridge_attention", ridge_attention,
               lambda: dict(query=np.array([0.3, -0.7]), keys=np.array(KEYS), values=np.array(VALUES), ridge=0.5,
                            backend="numpy"),
               {"query": P("array", shape_partner=True), "keys": P("array", shape_partner=True), "values": P("array"),
                "ridge": P("positive"), "backend": BACKEND}),
    # ----------------------------------------------------------------- Gaussian keys, linear values
    EntryPoint("conditional_mean.GaussianKeyValueModel", GaussianKeyValueModel, lambda: dict(G2),
               {"key_mean": P("array"),
                "key_covariance": P("array", shape_partner=True,
                                    extra=(("not_positive_definite", [[1.0, 2.0], [2.0, 1.0]]),
                                           ("not_symmetric", [[1.0, 0.3], [0.2, 0.5]]))),
                "value_map": P("array", shape_partner=True), "value_offset": P("array", shape_partner=True),
                "noise_sd": P("nonnegative")}),
    EntryPoint("conditional_mean.GaussianKeyValueModel.conditional_mean", _method(_gaussian, "conditional_mean"),
               lambda: dict(query=np.array([0.8, 0.2])), {"query": P("array", shape_partner=True)}),
    EntryPoint("conditional_mean.GaussianKeyValueModel.desired_score", _method(_gaussian, "desired_score"),
               lambda: dict(query=np.array([0.8, 0.2])), {"query": P("array", shape_partner=True)}),
    EntryPoint("conditional_mean.GaussianKeyValueModel.attention_limit", _method(_gaussian, "attention_limit"),
               lambda: dict(score=np.array([0.8, 0.2])), {"score": P("array", shape_partner=True)}),
    EntryPoint("conditional_mean.GaussianKeyValueModel.invariants", _method(_gaussian, "invariants"),
               lambda: dict(score=np.array([0.8, 0.2])), {"score": P("array", shape_partner=True)}),
    EntryPoint("conditional_mean.GaussianKeyValueModel.shift_direction", _method(_gaussian, "shift_direction"),
               lambda: dict(score=np.array([0.8, 0.2])), {"score": P("array", shape_partner=True)}),
    EntryPoint("conditional_mean.GaussianKeyValueModel.sample", _method(_gaussian, "sample"),
               lambda: dict(length=3, replicates=2, rng=0, backend="numpy"),
               {"length": COUNT, "replicates": COUNT, "rng": RNG, "backend": BACKEND}),
    # ----------------------------------------------------------------- sine conditional mean
    EntryPoint("conditional_mean.SineValueModel", SineValueModel, lambda: dict(key_sd=1.0, frequency=2.0, noise_sd=0.3),
               {"key_sd": P("positive"), "frequency": P("positive"), "noise_sd": P("nonnegative")}),
    EntryPoint("conditional_mean.SineValueModel.conditional_mean", _method(lambda: SineValueModel(1.0, 2.0, 0.3),
                                                                           "conditional_mean"),
               lambda: dict(query=0.7), {"query": P("real")}),
    EntryPoint("conditional_mean.SineValueModel.sample", _method(lambda: SineValueModel(1.0, 2.0, 0.3), "sample"),
               lambda: dict(length=3, replicates=2, rng=np.random.default_rng(1), backend=None),
               {"length": COUNT, "replicates": COUNT, "rng": RNG, "backend": BACKEND}),
    # ----------------------------------------------------------------- latent models M1, M2, M3
    EntryPoint("conditional_mean.ConjugateGaussianModel", ConjugateGaussianModel,
               lambda: dict(prior_sd=1.3, token_sd=0.8, d=2),
               {"prior_sd": P("positive"), "token_sd": P("positive"), "d": COUNT}),
    EntryPoint("conditional_mean.ConjugateGaussianModel.sample", _method(lambda: ConjugateGaussianModel(1.3, 0.8, 2), "sample"),
               lambda: dict(length=3, replicates=2, rng=0), {"length": NATURAL, "replicates": COUNT, "rng": RNG}),
    EntryPoint("conditional_mean.ConjugateGaussianModel.posterior_by_conditioning",
               _method(lambda: ConjugateGaussianModel(1.3, 0.8, 2), "posterior_by_conditioning"),
               lambda: dict(tokens=np.array(KEYS)), {"tokens": P("array", shape_partner=True)}),
    EntryPoint("conditional_mean.FiniteLatentModel", FiniteLatentModel,
               lambda: dict(prior=np.array([0.2, 0.5, 0.3]), means=np.array(KEYS)),
               {"prior": P("array", extra=(("not_a_distribution", [0.5, 0.6, 0.1]), ("zero_entry", [0.0, 0.5, 0.5]),
                                           ("one_latent", [1.0]))),
                "means": P("array", extra=(("wrong_latents", [[0.0, 1.0], [1.0, 0.0]]),))}),
    EntryPoint("conditional_mean.FiniteLatentModel.sample",
               _method(lambda: FiniteLatentModel([0.2, 0.5, 0.3], KEYS), "sample"),
               lambda: dict(length=3, replicates=2, rng=0), {"length": COUNT, "replicates": COUNT, "rng": RNG}),
    EntryPoint("conditional_mean.FiniteLatentModel.posterior_by_bayes",
               _method(lambda: FiniteLatentModel([0.2, 0.5, 0.3], KEYS), "posterior_by_bayes"),
               lambda: dict(tokens=np.array(VALUES)),
               {"tokens": P("array", shape_partner=True, skip=("wrong_ndim",), extra=(("one_axis", [1.0, 0.0]),))}),
    EntryPoint("conditional_mean.LinearGaussianLatentModel", LinearGaussianLatentModel,
               lambda: dict(prior_sd=1.0, noise_sd=0.3, d=2, d_v=2),
               {"prior_sd": P("positive", extra=(("ridge_overflows", 1e-200),)), "noise_sd": P("positive"),
                "d": COUNT, "d_v": COUNT}),
    EntryPoint("conditional_mean.LinearGaussianLatentModel.sample",
               _method(lambda: LinearGaussianLatentModel(1.0, 0.3, 2, 2), "sample"),
               lambda: dict(length=3, rng=0), {"length": COUNT, "rng": RNG}),
    EntryPoint("conditional_mean.LinearGaussianLatentModel.posterior_mean",
               _method(lambda: LinearGaussianLatentModel(1.0, 0.3, 2, 2), "posterior_mean"),
               lambda: dict(keys=np.array(KEYS), values=np.array(VALUES)),
               {"keys": P("array", shape_partner=True), "values": P("array", shape_partner=True)}),
    # ----------------------------------------------------------------- Monte Carlo error
    EntryPoint("conditional_mean.attention_error", attention_error,
               lambda: dict(sample=lambda L, n, r: _gaussian().sample(L, n, r, backend=_backend_of(r)), logits=lambda K: K[..., 0],
                            target=np.array([0.5]), length=3, replicates=4, rng=0, backend="numpy"),
               {"target": P("array", shape_partner=True), "length": COUNT,
                "replicates": P("count", extra=(("one", 1),)), "rng": RNG, "backend": BACKEND}),
    EntryPoint("conditional_mean.score_attention_error", score_attention_error,
               lambda: dict(model=_gaussian(), score=np.array([0.3, -0.2]), target=np.array([0.5]), length=3,
                            replicates=4, rng=np.random.default_rng(2), backend=None),
               {"score": P("array", shape_partner=True), "target": P("array", shape_partner=True), "length": COUNT,
                "replicates": COUNT, "rng": RNG, "backend": BACKEND}),
    EntryPoint("conditional_mean.AttentionError.scaled_bias",
               _method(lambda: AttentionError(4, (Estimate(0.1, 0.01, 10), Estimate(-0.2, 0.02, 10)),
                                              Estimate(0.3, 0.03, 10)), "scaled_bias"),
               lambda: dict(direction=np.array([0.6, 0.8])), {"direction": P("array", shape_partner=True)}),
    # ----------------------------------------------------------------- learning W
    EntryPoint("conditional_mean.LatentLinearTask", learning.LatentLinearTask,
               lambda: dict(key_covariance=np.array(SIGMA), prior_sd=1.0, noise_sd=0.5, d_v=1),
               {"key_covariance": P("array", shape_partner=True,
                                    extra=(("not_positive_definite", [[1.0, 2.0], [2.0, 1.0]]),)),
                "prior_sd": P("positive"), "noise_sd": P("nonnegative"), "d_v": COUNT}),
    EntryPoint("conditional_mean.LatentLinearTask.sample", _method(_task, "sample"),
               lambda: dict(sequences=2, tokens=3, rng=0), {"sequences": COUNT, "tokens": COUNT, "rng": RNG}),
    EntryPoint("conditional_mean.draw_dataset", learning.draw_dataset,
               lambda: dict(task=_task(), objective="masked", sequences=2, length=3, rng=0, masked=2),
               {"objective": OBJECTIVE, "sequences": COUNT, "length": COUNT, "rng": RNG, "masked": COUNT}),
    EntryPoint("conditional_mean.attention_prediction", learning.attention_prediction,
               lambda: dict(W=np.eye(2), queries=np.ones((3, 2, 2)), keys=np.ones((3, 4, 2)), values=np.ones((3, 4, 1))),
               {"W": P("array", shape_partner=True), "queries": P("array", shape_partner=True), "keys": P("array"),
                "values": P("array")}),
    EntryPoint("conditional_mean.empirical_risk_and_gradient", learning.empirical_risk_and_gradient,
               lambda: dict(W=np.eye(2), data=_data()), {"W": P("array", shape_partner=True)}),
    EntryPoint("conditional_mean.fit_attention_parameter", learning.fit_attention_parameter,
               lambda: dict(data=_data(), start=np.zeros((2, 2)), tol=1e-6),
               {"start": P("array", shape_partner=True, skip=("array_wrong_type",), extra=(("wrong_type", NOT_AN_ARRAY),)),
                "tol": P("positive")}),
    EntryPoint("conditional_mean.population_risk", learning.population_risk,
               lambda: dict(W=np.eye(2), task=_task(), objective="masked", length=3, sequences=3, rng=0, masked=2),
               {"W": P("array", shape_partner=True), "objective": OBJECTIVE, "length": COUNT,
                "sequences": P("count", extra=(("one", 1),)), "rng": RNG, "masked": COUNT}),
    EntryPoint("conditional_mean.generalization_gap", learning.generalization_gap,
               lambda: dict(task=_task(), objective="supervised", length=2, train_sequences=3, test_sequences=3,
                            replicates=2, seed=seeded(0), masked=2),
               {"objective": OBJECTIVE, "length": COUNT, "train_sequences": COUNT, "test_sequences": COUNT,
                "replicates": COUNT, "seed": NATURAL, "masked": COUNT}),
    # ----------------------------------------------------------------- derivations (generated evaluators)
    EntryPoint("conditional_mean.gaussian_error_constants", theory.gaussian_error_constants,
               lambda: dict(score_var=0.4, shift_sq=0.5, spread=1.2, noise=0.25, backend="numpy"),
               {"score_var": number_or_array("nonnegative", -1.0), "shift_sq": number_or_array("nonnegative", -1.0),
                "spread": number_or_array("nonnegative", -1.0), "noise": number_or_array("nonnegative", np.nan),
                "backend": BACKEND}),
    EntryPoint("conditional_mean.fixed_bandwidth_constants", theory.fixed_bandwidth_constants,
               lambda: dict(query=0.7, key_sd=1.0, bandwidth=np.array([1.0, 0.5]), frequency=2.0, noise_sd=0.3,
                            backend=None),
               {"query": number_or_array("real", np.inf), "key_sd": number_or_array("positive", 0.0),
                "bandwidth": number_or_array("positive", -0.5), "frequency": number_or_array("positive", 0.0),
                "noise_sd": number_or_array("nonnegative", -0.1), "backend": BACKEND}),
    EntryPoint("conditional_mean.conjugate_posterior", theory.conjugate_posterior,
               lambda: dict(length=np.array([0.0, 3.0, 100.0]), xbar=0.4, prior_sd=1.3, token_sd=0.8, backend="numpy"),
               {"length": number_or_array("nonnegative", -1.0), "xbar": number_or_array("real", np.nan),
                "prior_sd": number_or_array("positive", 0.0), "token_sd": number_or_array("positive", -1.0),
                "backend": BACKEND}),
]


test_refuses_bad_input, test_valid_input_gives_no_nan = boundary_tests(ENTRY_POINTS)


# --------------------------------------------------------------------------- sizes that cannot fit


@pytest.mark.parametrize("call, named", [
    (lambda: ridge_attention([1.0], np.ones((10**6, 1)), np.ones((10**6, 1)), 1.0), "L = 1000000"),
    (lambda: ridge_attention([1.0, 0.0], np.ones((2 * 10**6, 2)), np.ones((2 * 10**6, 1)), 1e-3, backend="numpy"),
     "L = 2000000"),
], ids=["ridge_attention L", "ridge_attention L, d = 2"])
def test_a_size_that_cannot_fit_is_refused_by_name_before_allocating(call, named):
    assert_refused_for_memory(call, named)


# --------------------------------------------------------------------------- work that no run finishes


def _never(*args, **kwargs):
    raise AssertionError("work began before the refusal")


@pytest.mark.parametrize("call, named", [
    (lambda: attention_error(_never, _never, [0.5], 3, 10**15, 0), "replicates = 1,000,000,000,000,000"),
    (lambda: score_attention_error(_gaussian(), np.array([0.3, -0.2]), np.array([0.5]), 3, 10**15, NeverDraws()),
     "replicates = 1,000,000,000,000,000"),
], ids=["attention_error replicates", "score_attention_error replicates"])
def test_work_that_no_run_finishes_is_refused_by_name_before_it_starts(call, named):
    """Replicates drawn in chunks fit in memory at any count, but 10¹⁵ of them would run for years: refused in one
    line before the first draw (each call here fails at once where nothing refuses it)."""
    assert_refused_as_endless(call, named)


def test_more_replicates_than_any_run_fits_are_refused_before_the_first_is_seeded(monkeypatch):
    """10¹² replicates, each an L-BFGS-B fit: refused before the first replicate's seed is made."""
    monkeypatch.setattr(np.random, "SeedSequence", _never)
    assert_refused_as_endless(lambda: learning.generalization_gap(_task(), "supervised", 2, 3, 3, 10**12, seeded(0)),
                              "replicates = 1,000,000,000,000")
