"""The public boundary of single-location regression: every entry point of ``theories/single_location/``
(the numeric part of its derivations, its simulators, its float64 tail forms ``tail_derivations.py``)
refuses bad input by name, and valid input gives no NaN.

Parameters that broadcast over leading axes (vectors ``k`` of shape (..., dim), batches ``X`` of
shape (..., B, L, d)) accept an extra leading axis, so for them the harness's ``wrong_ndim`` draws
(which include ``x[None]``) are replaced by ``extra`` values that are wrong for every shape rule.
Optional parameters whose valid values include None (``batch``, ``dps``, ``k`` of sample_reduced,
``progress``) replace ``wrong_type`` (which draws None) by the other wrong types.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import strategies as st

from attnverify.theories.single_location import derivations as theory, tail_derivations as tails
from attnverify.theories import single_location as sim
from boundary_harness import assert_refused_as_endless, assert_refused_for_memory, EntryPoint, NeverDraws, \
    Parameter as P, boundary_tests
from seeds import seeded

D, L_, RUNS, B = 4, 3, 2, 5
E = np.eye(D)
NOT_NONE = st.sampled_from(["1.0", [1.0, 2.0], {"value": 1.0}, object()])  # wrong types other than None
NOT_ARRAY = st.sampled_from(["abc", {"a": 1}, np.full(D, "x"), np.ones(D, complex)])  # wrong types other than None


def unit(x):
    x = np.asarray(x, dtype=float)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def task():
    return sim.RegressionTask(D, L_, math.sqrt(0.5), 0.1, E[0].copy(), E[1].copy())


def k_vec():
    return unit([0.6, 0.3, -0.5, 0.2])


def v_vec():
    return unit([0.1, 0.8, 0.3, -0.4])


def runs_of(vector):
    return np.stack([vector, unit(vector + 0.3)])


def tokens(n=B, seed=0):
    return np.random.default_rng(seeded(seed)).standard_normal((n, L_, D))


def zero_gradient(k, v, lam):
    return np.zeros_like(k), np.zeros_like(v)


def vector(**kw):
    """A unit vector parameter of shape (dim,) that broadcasts over leading axes: (dim, 1) and a number are wrong."""
    return P("array", skip=("wrong_ndim",), extra=(("last_axis_1", np.ones((D, 1))), ("scalar", np.float64(1.0))), **kw)


FIXED_VECTOR = P("array", shape_partner=True)
TOKENS = P("array", skip=("wrong_ndim",), extra=(("one_axis", np.ones(D)),))  # (..., L, d): leading axes broadcast
# finite tokens so large that ‖X_ℓ‖² or the squared error overflows: refused by name, never NaN
HUGE_TOKENS = ("huge", np.full((B, L_, D), 1e200))  # k*, v*, k0: exactly (dim,) or (runs, dim)
OVERLAP = P("real", extra=(("beyond_one", 1.5), ("below_minus_one", -1.01)))
LAM = P("positive")
GAMMA = P("positive", extra=(("too_large", 1e40), ("too_small", 1e-40)))
EPS = P("nonnegative", extra=(("too_large", 1e40),))
COUNT = P("count", extra=(("too_large", 10**16),))  # d, L, ...: integers exact in float64
N = P("count")  # sample sizes
TASK = P("settings")  # a RegressionTask object: other objects (numbers, strings, lists, dicts) are refused by type
CALLABLE = P("settings")  # a callable: numbers, strings, lists and dicts are refused by type
BATCH = P("count", skip=("wrong_type",), extra=(("not_a_count", NOT_NONE),))  # None: the default batch
FLAG = P("choice", choices=(True, False))

THEORY_PARAMETERS = {"lam": LAM, "gamma": GAMMA, "d": COUNT, "L": COUNT, "eps": EPS, "backend": P("backend")}
OVERLAP_NAMES = ("kappa_", "nu_", "theta_", "eta_", "rho_")
OVERLAP_MESSAGES = {name: name.rstrip("_") for name in OVERLAP_NAMES}


def overlap_call(function):
    return lambda kappa_, nu_, theta_, eta_, rho_, **kw: function(kappa_, nu_, theta_, eta_, rho_, **kw)


def overlap_valid():
    return dict(kappa_=0.4, nu_=0.5, theta_=-0.1, eta_=0.2, rho_=0.05, lam=0.7, gamma=0.7, d=20, L=3, eps=0.1,
                backend=None)


def trajectory():
    return sim.projected_gradient_descent(runs_of(k_vec()), runs_of(v_vec()), zero_gradient, steps=2,
                                          step_size=0.1, lam_schedule=1.0, record_every=1)


ENTRY_POINTS = [
    # ------------------------------------------------------------------ derivations: closed forms
    EntryPoint("theory.population_risk_from_overlaps", overlap_call(theory.population_risk_from_overlaps),
               overlap_valid, {**{n: OVERLAP for n in OVERLAP_NAMES}, **THEORY_PARAMETERS}, OVERLAP_MESSAGES),
    EntryPoint("theory.risk_gradient_from_overlaps", overlap_call(theory.risk_gradient_from_overlaps),
               overlap_valid, {**{n: OVERLAP for n in OVERLAP_NAMES}, **THEORY_PARAMETERS}, OVERLAP_MESSAGES),
    EntryPoint("theory.risk_gradient_function", theory.risk_gradient_function,
               lambda: dict(gamma=0.7, d=20, L=3, eps=0.1, backend="numpy"),
               {k: THEORY_PARAMETERS[k] for k in ("gamma", "d", "L", "eps", "backend")}),
    EntryPoint("theory.population_risk", theory.population_risk,
               lambda: dict(k=k_vec(), v=v_vec(), k_star=E[0].copy(), v_star=E[1].copy(), lam=0.7, gamma=0.7, d=D,
                            L=3, eps=0.1, backend="numpy"),
               {"k": vector(shape_partner=True), "v": vector(shape_partner=True), "k_star": FIXED_VECTOR,
                "v_star": FIXED_VECTOR, **THEORY_PARAMETERS,
                "d": P("count", extra=(("disagrees_with_the_vectors", 100),))}),
    EntryPoint("theory.overlaps", theory.overlaps,
               lambda: dict(k=k_vec(), v=v_vec(), k_star=E[0].copy(), v_star=E[1].copy(), backend=None),
               {"k": vector(shape_partner=True), "v": vector(shape_partner=True), "k_star": vector(shape_partner=True),
                "v_star": vector(shape_partner=True), "backend": P("backend")}),
    EntryPoint("theory.oracle_risk", theory.oracle_risk,
               lambda: dict(lam=0.5, d=8, L=4, gamma=0.7, eps=0.1, backend=None), THEORY_PARAMETERS),
    EntryPoint("theory.oracle_excess_risk_high_precision", theory.oracle_excess_risk_high_precision,
               lambda: dict(lam=0.5, d=8, L=4, gamma=0.7, dps=None),
               {"lam": LAM, "d": COUNT, "L": COUNT, "gamma": GAMMA,
                "dps": P("count", skip=("wrong_type",), extra=(("not_a_count", NOT_NONE), ("too_few", 0),
                                                                ("too_many", 10**6)))}),
    # with dps given: λ²d = 80 cancels 34 digits, so dps = 60 is enough and 40 is refused
    EntryPoint("theory.oracle_excess_risk_high_precision(dps)", theory.oracle_excess_risk_high_precision,
               lambda: dict(lam=2.0, d=20, L=1, gamma=0.7, dps=60),
               {"dps": P("count", skip=("nan", "inf", "negative", "zero", "non_integer", "wrong_type", "bool"),
                         extra=(("too_few_for_the_cancellation", 40),))}),
    EntryPoint("theory.linear_risk", theory.linear_risk, lambda: dict(L=4, gamma=0.7, eps=0.1, backend=None),
               {k: THEORY_PARAMETERS[k] for k in ("L", "gamma", "eps", "backend")}),
    EntryPoint("tails.log_erfc_square_mean", tails.log_erfc_square_mean, lambda: dict(a=2.0, b=0.5),
               {"a": P("nonnegative"), "b": P("nonnegative")}),
    EntryPoint("tails.erfc_square_mean", tails.erfc_square_mean, lambda: dict(a=2.0, b=0.5),
               {"a": P("nonnegative"), "b": P("nonnegative")}),
    EntryPoint("tails.log_zeta_at_zero", tails.log_zeta_at_zero, lambda: dict(g=0.7), {"g": P("nonnegative")}),
    # ------------------------------------------------------------------ numerics: task and data
    EntryPoint("sim.make_task", sim.make_task,
               lambda: dict(d=D, L=L_, gamma=0.7, eps=0.1, seed=seeded(0), backend="numpy"),
               {"d": COUNT, "L": COUNT, "gamma": GAMMA, "eps": EPS, "seed": P("rng"), "backend": P("backend")}),
    EntryPoint("sim.RegressionTask", sim.RegressionTask,
               lambda: dict(d=D, L=L_, gamma=0.7, eps=0.1, k_star=E[0].copy(), v_star=E[1].copy()),
               {"d": COUNT, "L": COUNT, "gamma": GAMMA, "eps": EPS, "k_star": FIXED_VECTOR,
                "v_star": FIXED_VECTOR}),
    EntryPoint("sim.sample", sim.sample, lambda: dict(task=task(), n=3, rng=0, backend=None),
               {"task": TASK, "n": N, "rng": P("rng"), "backend": P("backend")}),
    EntryPoint("sim.sample_reduced", sim.sample_reduced,
               lambda: dict(task=task(), k=k_vec(), v=v_vec(), n=3, rng=0, backend=None),
               {"task": TASK, "n": N, "rng": P("rng"), "backend": P("backend"),
                # None is a valid k or v (no extra direction): the other wrong types instead
                "k": P("array", skip=("array_wrong_type",), shape_partner=True, extra=(("not_numbers", NOT_ARRAY),)),
                "v": P("array", skip=("array_wrong_type",), shape_partner=True, extra=(("not_numbers", NOT_ARRAY),))}),
    EntryPoint("sim.predict", sim.predict, lambda: dict(X=tokens(), k=k_vec(), v=v_vec(), lam=0.7, backend=None),
               {"X": TOKENS, "k": FIXED_VECTOR, "v": FIXED_VECTOR, "lam": LAM, "backend": P("backend")}),
    # ------------------------------------------------------------------ numerics: risks
    EntryPoint("sim.risk_monte_carlo", sim.risk_monte_carlo,
               lambda: dict(task=task(), k=k_vec(), v=v_vec(), lam=0.7, n=50, rng=0, backend=None, batch=None),
               {"task": TASK, "k": FIXED_VECTOR, "v": FIXED_VECTOR, "lam": LAM, "n": N, "rng": P("rng"),
                "backend": P("backend"), "batch": BATCH}),
    EntryPoint("sim.risk_monte_carlo_full", sim.risk_monte_carlo_full,
               lambda: dict(task=task(), k=k_vec(), v=v_vec(), lam=0.7, n=50, rng=0, backend=None, batch=16),
               {"task": TASK, "k": FIXED_VECTOR, "v": FIXED_VECTOR, "lam": LAM, "n": N, "rng": P("rng"),
                "backend": P("backend"), "batch": BATCH}),
    EntryPoint("sim.bayes_posterior", sim.bayes_posterior, lambda: dict(X=tokens(), task=task(), backend=None),
               {"X": P("array", skip=("wrong_ndim",), shape_partner=True, extra=(("one_axis", np.ones(D)), HUGE_TOKENS)), "task": TASK,
                "backend": P("backend")}),
    EntryPoint("sim.bayes_predict", sim.bayes_predict, lambda: dict(X=tokens(), task=task(), backend=None),
               {"X": P("array", skip=("wrong_ndim",), shape_partner=True, extra=(("one_axis", np.ones(D)), HUGE_TOKENS)), "task": TASK,
                "backend": P("backend")}),
    EntryPoint("sim.bayes_risk_monte_carlo", sim.bayes_risk_monte_carlo,
               lambda: dict(task=task(), n=50, rng=0, backend=None, batch=None, conditional=True),
               {"task": TASK, "n": N, "rng": P("rng"), "backend": P("backend"), "batch": BATCH,
                "conditional": FLAG}),
    EntryPoint("sim.linear_fit_least_squares", sim.linear_fit_least_squares,
               lambda: dict(X=tokens(30), y=np.random.default_rng(1).standard_normal(30), backend=None),
               {"X": P("array", extra=(("too_few_sequences", tokens(5)),)), "y": P("array", shape_partner=True),
                "backend": P("backend")}),
    EntryPoint("sim.linear_predict", sim.linear_predict,
               lambda: dict(X=tokens(), beta=np.full((L_, D), 0.1), backend=None),
               {"X": TOKENS,
                "beta": P("array", shape_partner=True), "backend": P("backend")}),
    EntryPoint("sim.linear_risk_monte_carlo", sim.linear_risk_monte_carlo,
               lambda: dict(task=task(), beta=np.full((L_, D), 0.1), n=50, rng=0, backend=None, batch=None),
               {"task": TASK, "beta": P("array", shape_partner=True), "n": N, "rng": P("rng"),
                "backend": P("backend"), "batch": BATCH}),
    EntryPoint("sim.linear_oracle_coefficients", sim.linear_oracle_coefficients, lambda: dict(task=task(), backend=None),
               {"task": TASK, "backend": P("backend")}),
    # ------------------------------------------------------------------ numerics: overlaps and reductions
    EntryPoint("sim.overlaps", sim.overlaps,
               lambda: dict(k=k_vec(), v=v_vec(), k_star=E[0].copy(), v_star=E[1].copy(), backend="numpy"),
               {"k": vector(shape_partner=True), "v": vector(shape_partner=True), "k_star": vector(shape_partner=True),
                "v_star": vector(shape_partner=True), "backend": P("backend")}),
    EntryPoint("sim.overlap_gradient_to_vectors", sim.overlap_gradient_to_vectors,
               lambda: dict(partials=np.full((5, RUNS), 0.3), k=runs_of(k_vec()), v=runs_of(v_vec()),
                            k_star=E[0].copy(), v_star=E[1].copy(), backend=None),
               {"partials": P("array"), "k": vector(shape_partner=True), "v": vector(shape_partner=True),
                "k_star": vector(shape_partner=True), "v_star": vector(shape_partner=True), "backend": P("backend")}),
    EntryPoint("sim.reduce_to_four_dimensions", sim.reduce_to_four_dimensions,
               lambda: dict(k=runs_of(k_vec()), v=runs_of(v_vec()), k_star=E[0].copy(), v_star=E[1].copy(),
                            backend=None),
               {"k": FIXED_VECTOR, "v": FIXED_VECTOR, "k_star": FIXED_VECTOR, "v_star": FIXED_VECTOR,
                "backend": P("backend")}),
    EntryPoint("sim.Trajectory.overlaps", lambda k_star, v_star, backend: trajectory().overlaps(k_star, v_star,
                                                                                                 backend=backend),
               lambda: dict(k_star=E[0].copy(), v_star=E[1].copy(), backend=None),
               {"k_star": vector(shape_partner=True), "v_star": vector(shape_partner=True), "backend": P("backend")}),
    # ------------------------------------------------------------------ numerics: descent
    EntryPoint("sim.lambda_schedule", sim.lambda_schedule, lambda: dict(lam0=1.0, scheduled=True),
               {"lam0": LAM, "scheduled": FLAG}),
    EntryPoint("sim.projected_gradient_descent", sim.projected_gradient_descent,
               lambda: dict(k0=runs_of(k_vec()), v0=runs_of(v_vec()), gradient=zero_gradient, steps=2, step_size=0.1,
                            lam_schedule=1.0, record_every=1, backend=None, progress=None),
               {"k0": FIXED_VECTOR, "v0": FIXED_VECTOR, "gradient": CALLABLE, "steps": P("natural"),
                "step_size": P("nonnegative"), "lam_schedule": LAM, "record_every": N, "backend": P("backend"),
                "progress": CALLABLE}),
    EntryPoint("sim.initialize_on_sphere", sim.initialize_on_sphere, lambda: dict(runs=2, d=D, rng=0, backend=None),
               {"runs": N, "d": COUNT, "rng": P("rng"), "backend": P("backend")}),
    EntryPoint("sim.initialize_on_manifold", sim.initialize_on_manifold,
               lambda: dict(runs=2, k_star=E[0].copy(), v_star=E[1].copy(), rng=0, backend=None),
               {"runs": N, "k_star": FIXED_VECTOR, "v_star": FIXED_VECTOR, "rng": P("rng"), "backend": P("backend")}),
    EntryPoint("sim.empirical_risk", sim.empirical_risk,
               lambda: dict(X=tokens(), y=np.linspace(-1, 1, B), k=k_vec(), v=v_vec(), lam=0.7, backend=None),
               {"X": P("array", skip=("wrong_ndim",), extra=(("two_axes", np.ones((L_, D))), HUGE_TOKENS)),
                "y": P("array", skip=("wrong_ndim",), shape_partner=True, extra=(("scalar", np.float64(1.0)),)),
                "k": vector(shape_partner=True), "v": vector(shape_partner=True), "lam": LAM, "backend": P("backend")}),
    EntryPoint("sim.empirical_risk_gradient", sim.empirical_risk_gradient,
               lambda: dict(X=tokens(), y=np.linspace(-1, 1, B), k=k_vec(), v=v_vec(), lam=0.7, backend=None),
               {"X": P("array", skip=("wrong_ndim",), extra=(("two_axes", np.ones((L_, D))), HUGE_TOKENS)),
                "y": P("array", skip=("wrong_ndim",), shape_partner=True, extra=(("scalar", np.float64(1.0)),)),
                "k": vector(shape_partner=True), "v": vector(shape_partner=True), "lam": LAM, "backend": P("backend")}),
    EntryPoint("sim.stochastic_gradient_descent", sim.stochastic_gradient_descent,
               lambda: dict(task=task(), k0=runs_of(k_vec()), v0=runs_of(v_vec()), lam_schedule=1.0, step_size=0.01,
                            batch_size=2, steps=2, rng=0, test_size=5, record_every=1, backend=None, progress=None),
               {"task": TASK, "k0": FIXED_VECTOR, "v0": FIXED_VECTOR, "lam_schedule": LAM, "step_size": P("nonnegative"),
                "batch_size": N, "steps": P("natural"), "rng": P("rng"), "test_size": N, "record_every": N,
                "backend": P("backend"), "progress": CALLABLE}),
    EntryPoint("sim.population_gradient", sim.population_gradient,
               lambda: dict(d=20, L=3, gamma=0.7, eps=0.1, backend=None),
               {"d": COUNT, "L": COUNT, "gamma": GAMMA, "eps": EPS, "backend": P("backend")}),
    EntryPoint("sim.population_projected_gradient_descent", sim.population_projected_gradient_descent,
               lambda: dict(k0=runs_of(k_vec()), v0=runs_of(v_vec()), lam0=1.0, scheduled=False, step_size=0.1, steps=2,
                            d=20, L=3, gamma=0.7, eps=0.1, record_every=1, backend=None, progress=None),
               {"k0": FIXED_VECTOR, "v0": FIXED_VECTOR, "lam0": LAM, "scheduled": FLAG, "step_size": P("nonnegative"),
                "steps": P("natural"), "d": COUNT, "L": COUNT, "gamma": GAMMA, "eps": EPS, "record_every": N,
                "backend": P("backend"), "progress": CALLABLE}),
]


test_refuses_bad_input, test_valid_input_gives_no_nan = boundary_tests(ENTRY_POINTS)


# --------------------------------------------------------------------------- sizes that cannot fit

SGD = dict(lam_schedule=1.0, step_size=0.01, batch_size=2, steps=2, rng=0, test_size=5, record_every=1)


@pytest.mark.parametrize("call, named", [
    (lambda: sim.linear_oracle_coefficients(sim.RegressionTask(D, 10**12, math.sqrt(0.5), 0.1, E[0].copy(),
                                                               E[1].copy())), "L = 1000000000000"),
    (lambda: sim.projected_gradient_descent(runs_of(k_vec()), runs_of(v_vec()), zero_gradient, steps=10**12,
                                            step_size=0.1, lam_schedule=1.0, record_every=1), "steps = 1000000000000"),
    (lambda: sim.stochastic_gradient_descent(task(), runs_of(k_vec()), runs_of(v_vec()), **(SGD | dict(
        batch_size=10**12))), "batch_size = 1000000000000"),
    (lambda: sim.stochastic_gradient_descent(task(), runs_of(k_vec()), runs_of(v_vec()), **(SGD | dict(
        test_size=10**12))), "test_size = 1000000000000"),
    (lambda: sim.stochastic_gradient_descent(task(), runs_of(k_vec()), runs_of(v_vec()), **(SGD | dict(
        steps=10**12))), "steps = 1000000000000"),
], ids=["linear_oracle_coefficients L", "projected_gradient_descent steps", "sgd batch_size", "sgd test_size",
        "sgd steps"])
def test_a_size_that_cannot_fit_is_refused_by_name_before_allocating(call, named):
    assert_refused_for_memory(call, named)


# --------------------------------------------------------------------------- work that no run finishes


def never_steps(*args):
    raise AssertionError("a step was taken before the refusal")


MANY_RUNS = 1_000  # runs_of(…) repeated: 2,000 runs of 4 coordinates


@pytest.mark.parametrize("call, named", [
    (lambda: sim.risk_monte_carlo(task(), k_vec(), v_vec(), 0.7, 10**15, NeverDraws()), "n = 1,000,000,000,000,000"),
    (lambda: sim.risk_monte_carlo_full(task(), k_vec(), v_vec(), 0.7, 10**15, NeverDraws()),
     "n = 1,000,000,000,000,000"),
    (lambda: sim.bayes_risk_monte_carlo(task(), 10**15, NeverDraws()), "n = 1,000,000,000,000,000"),
    (lambda: sim.linear_risk_monte_carlo(task(), sim.linear_oracle_coefficients(task()), 10**15, NeverDraws()),
     "n = 1,000,000,000,000,000"),
    (lambda: sim.projected_gradient_descent(runs_of(k_vec()), runs_of(v_vec()), never_steps, steps=10**12,
                                            step_size=0.1, lam_schedule=1.0, record_every=10**11),
     "steps = 1,000,000,000,000"),
    (lambda: sim.projected_gradient_descent(np.tile(runs_of(k_vec()), (MANY_RUNS, 1)),
                                            np.tile(runs_of(v_vec()), (MANY_RUNS, 1)), never_steps, steps=10**10,
                                            step_size=0.1, lam_schedule=1.0, record_every=10**10),
     "steps = 10,000,000,000"),
    (lambda: sim.population_projected_gradient_descent(
        *(np.stack([E[0], E[1]]),) * 2, lam0=1.0, scheduled=False, step_size=0.1, steps=10**12, d=20, L=3, gamma=0.7,
        eps=0.1, record_every=10**11, progress=never_steps), "steps = 1,000,000,000,000"),
    (lambda: sim.stochastic_gradient_descent(task(), runs_of(k_vec()), runs_of(v_vec()), **(SGD | dict(
        steps=10**12, record_every=10**11, rng=NeverDraws()))), "steps = 1,000,000,000,000"),
    (lambda: sim.stochastic_gradient_descent(task(), runs_of(k_vec()), runs_of(v_vec()), **(SGD | dict(
        steps=10**9, batch_size=10**4, record_every=10**9, rng=NeverDraws()))), "steps = 1,000,000,000"),
], ids=["risk_monte_carlo n", "risk_monte_carlo_full n", "bayes_risk_monte_carlo n", "linear_risk_monte_carlo n",
        "projected_gradient_descent steps", "projected_gradient_descent coordinate updates",
        "population_projected_gradient_descent steps", "sgd steps", "sgd numbers drawn"])
def test_work_that_no_run_finishes_is_refused_by_name_before_it_starts(call, named):
    """Counts whose work fits in memory (batched draws, sparse records) but would run for days: refused in one line
    before the first draw or step (each call here fails at once where nothing refuses it)."""
    assert_refused_as_endless(call, named)
