"""The trust-region Newton minimiser: the exact subproblem (its optimality conditions, the hard case),
convergence on a non-convex function, and the round-off rule near the minimum."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from attnverify.numerics.trust_region import minimise, subproblem_step


def _check_subproblem(H, g, radius):
    """Moré–Sorensen conditions: (H + λI)p = −g, λ ≥ 0, H + λI ⪰ 0, λ(‖p‖ − Δ) = 0, ‖p‖ ≤ Δ."""
    w, V = np.linalg.eigh(H)
    p, predicted = subproblem_step(g, w, V, radius)
    norm = np.linalg.norm(p)
    assert norm <= radius * (1 + 1e-3)
    assert predicted == pytest.approx(g @ p + 0.5 * p @ H @ p, rel=1e-10, abs=1e-12)
    lam = -p @ (g + H @ p) / (p @ p)
    scale = np.abs(w).max() + np.linalg.norm(g) / radius
    assert np.linalg.norm(H @ p + lam * p + g) <= 1e-8 * scale * max(norm, 1.0)
    assert lam >= -1e-8 * scale and w[0] + lam >= -1e-8 * scale
    if lam > 1e-8 * scale:
        assert norm == pytest.approx(radius, rel=1e-3)
    # and nothing on the sphere or inside does better than the model at p (sampled)
    rng = np.random.default_rng(0)
    trials = rng.normal(size=(2000, len(g)))
    trials *= radius * rng.uniform(0, 1, size=(2000, 1)) ** (1 / len(g)) / np.linalg.norm(trials, axis=1, keepdims=True)
    models = trials @ g + 0.5 * np.einsum("ki,ij,kj->k", trials, H, trials)
    assert models.min() >= predicted - 1e-3 * radius * scale * radius


@given(seed=st.integers(0, 2**32 - 1), size=st.integers(1, 6), radius=st.floats(1e-3, 1e3),
       shift=st.floats(-3.0, 3.0))
def test_the_subproblem_step_meets_the_optimality_conditions(seed, size, radius, shift):
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(size, size))
    H = 0.5 * (B + B.T) + shift * np.eye(size)
    _check_subproblem(H, rng.normal(size=size), radius)


def test_the_hard_case_steps_along_the_lowest_eigenvector():
    """g ⟂ the eigenvector of the negative eigenvalue: the step must still reach the boundary along it."""
    H = np.diag([-2.0, 1.0, 3.0])
    g = np.array([0.0, 0.1, 0.3])
    p, _ = subproblem_step(g, *np.linalg.eigh(H), 1.0)
    assert np.linalg.norm(p) == pytest.approx(1.0, rel=1e-12) and abs(p[0]) > 0.9
    _check_subproblem(H, g, 1.0)


def rosenbrock(x):
    value = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
    gradient = np.array([-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2), 200 * (x[1] - x[0] ** 2)])
    return value, gradient


def rosenbrock_hessian(x):
    return np.array([[2 - 400 * x[1] + 1200 * x[0] ** 2, -400 * x[0]], [-400 * x[0], 200.0]])


def test_minimise_reaches_the_minimum_of_a_non_convex_function():
    result = minimise(rosenbrock, rosenbrock_hessian, lambda x: np.abs(rosenbrock(x)[1]).max(), [-1.2, 1.0],
                      tolerance=1e-10, max_iterations=100)
    assert result.stopped == "tolerance reached" and result.residual <= 1e-10
    assert np.allclose(result.x, [1.0, 1.0], atol=1e-9)
    assert all(b <= a for a, b in zip(result.history, result.history[1:]))  # every accepted step descends


def test_minimise_passes_the_round_off_of_a_large_objective_by_the_residual():
    """f = 10¹⁰ + ½ xᵀAx: below |Δf| ~ 10⁻⁶ the objective's change is round-off, so steps are judged by the
    residual, and the tolerance 1e-12 on the gradient is still reached."""
    A = np.array([[3.0, 1.0], [1.0, 2.0]])
    objective = lambda x: (1e10 + 0.5 * x @ A @ x, A @ x)  # noqa: E731
    result = minimise(objective, lambda x: A, lambda x: np.abs(A @ x).max(), [1e-3, -2e-3], tolerance=1e-12,
                      max_iterations=20)
    assert result.residual <= 1e-12 and result.round_off_steps >= 1


def test_a_newton_step_whose_decrease_is_within_the_objectives_noise_is_taken_when_it_halves_the_residual():
    """f = 1 + ½ xᵀAx + a round-off bump of 2e-11 within 1e-8 of the minimum (what summing many terms can leave):
    from x = (2e-6, −1e-6) the Newton step predicts a decrease of 5e-12, above the 1e-13·|f| round-off rule, but
    lands in the bump, so ρ < 0. With its predicted decrease and its actual rise within `VALUE_NOISE`·|f| the residual
    decides: the step halves it and is taken, and the tolerance 1e-12 on the exact gradient is reached in one step.
    A bump of 1e-9, beyond that noise, is a real rise: the step is refused there."""
    A = np.array([[3.0, 1.0], [1.0, 2.0]])

    def objective(x):
        bump = 2e-11 if np.linalg.norm(x) < 1e-8 else 0.0
        return 1.0 + 0.5 * x @ A @ x + bump, A @ x

    result = minimise(objective, lambda x: A, lambda x: np.abs(A @ x).max(), [2e-6, -1e-6], tolerance=1e-12,
                      max_iterations=20)
    assert result.residual <= 1e-12 and result.iterations == 1 and result.round_off_steps == 1

    def rising(x):
        value, gradient = objective(x)
        return value + (1e-9 if np.linalg.norm(x) < 1e-8 else 0.0), gradient

    refused = minimise(rising, lambda x: A, lambda x: np.abs(A @ x).max(), [2e-6, -1e-6], tolerance=1e-12,
                       max_iterations=1)
    assert refused.residual > 1e-12 and np.array_equal(refused.x, [2e-6, -1e-6])


def test_minimise_stops_at_its_iteration_limit_and_says_so():
    result = minimise(rosenbrock, rosenbrock_hessian, lambda x: np.abs(rosenbrock(x)[1]).max(), [-1.2, 1.0],
                      tolerance=1e-10, max_iterations=3)
    assert result.iterations == 3 and result.stopped == "3 iterations" and result.residual > 1e-10


def _max_abs_gradient(objective):
    return lambda x: float(np.abs(objective(x)[1]).max())


def test_a_nan_objective_at_the_start_is_refused_not_reported_as_converged():
    """A NaN objective would make the residual NaN, which fails `residual > tolerance` and would read as
    "tolerance reached": it is refused by name at the start."""
    objective = lambda x: (np.nan, np.full_like(x, np.nan))  # noqa: E731
    with pytest.raises(ValueError, match="objective must be finite at the starting point x, got objective value nan"):
        minimise(objective, lambda x: np.eye(2), _max_abs_gradient(objective), [1.0, 2.0], tolerance=1e-8,
                 max_iterations=10)


def test_a_nan_gradient_or_residual_at_the_start_is_refused_by_name():
    nan_gradient = lambda x: (1.0, np.array([np.nan, 0.0]))  # noqa: E731
    with pytest.raises(ValueError, match="objective's gradient must be finite"):
        minimise(nan_gradient, lambda x: np.eye(2), lambda x: 1.0, [0.0, 0.0], tolerance=1e-8, max_iterations=10)
    with pytest.raises(ValueError, match="residual must be finite at the starting point x, got nan"):
        minimise(rosenbrock, rosenbrock_hessian, lambda x: np.nan, [0.0, 0.0], tolerance=1e-8, max_iterations=10)


def test_trial_points_with_a_nan_gradient_are_rejected_and_the_minimum_still_reached():
    """f = ½|x|² has a NaN gradient (or value) beyond x₀ > 0.5: steps there are rejected like steps where f is
    undefined (a finite value with a NaN gradient is not accepted, so its NaN residual never reads as converged)."""
    def objective(x):
        if x[0] > 0.5:
            return (np.nan if x[0] > 2.0 else 0.0), np.full_like(x, np.nan)
        return 0.5 * float(x @ x), x.copy()

    # a Hessian 4× too small overshoots: the first trial step lands at (0.9, −3), f = 0 there, its gradient NaN
    result = minimise(objective, lambda x: 0.25 * np.eye(2), _max_abs_gradient(objective), [-0.3, 1.0],
                      tolerance=1e-12, max_iterations=200, radius=10.0)
    assert result.stopped == "tolerance reached" and np.all(np.isfinite(result.history))
    assert np.allclose(result.x, 0.0, atol=1e-12)


def test_a_nan_residual_after_a_step_stops_the_loop_and_says_so():
    residual = lambda x: np.nan if abs(x[0]) < 0.5 else float(np.abs(x).max())  # noqa: E731
    quadratic = lambda x: (0.5 * float(x @ x), x.copy())  # noqa: E731
    result = minimise(quadratic, lambda x: np.eye(2), residual, [1.0, 1.0], tolerance=1e-12, max_iterations=50,
                      radius=10.0)
    assert result.stopped.startswith("non-finite residual") and result.stopped != "tolerance reached"
    assert result.residual == 1.0 and np.array_equal(result.x, [1.0, 1.0])  # the last point with a residual


def test_a_nan_hessian_stops_the_loop_and_says_so():
    result = minimise(rosenbrock, lambda x: np.full((2, 2), np.nan), _max_abs_gradient(rosenbrock), [-1.2, 1.0],
                      tolerance=1e-10, max_iterations=10)
    assert result.stopped.startswith("non-finite Hessian") and result.iterations == 1


@pytest.mark.parametrize("name, value, message", [
    ("tolerance", np.nan, "tolerance must be a finite number"),
    ("tolerance", -1.0, "tolerance must be a finite number"),
    ("max_iterations", 2.5, "max_iterations must be an integer ≥ 0"),
])
def test_bad_settings_are_named(name, value, message):
    settings = dict(tolerance=1e-8, max_iterations=10) | {name: value}
    with pytest.raises(ValueError, match=message):
        minimise(rosenbrock, rosenbrock_hessian, _max_abs_gradient(rosenbrock), [0.0, 0.0], **settings)
