"""The saddle-point solver: gradients are derivatives, the answer solves the equations and is a
minimum, the three representations agree, and failure is loud."""

import re

import numpy as np
import pytest
from numpy.testing import assert_allclose
from numerics.attention_paths.problems import random_factor, random_features

from attnverify.theories.attention_paths import (Action, ActionConfig, SaddlePointError, entropy, entropy_gradients,
                                                 energy_for, saddle_point, saddle_point_from_features,
                                                 scalar_renormalization)


@pytest.mark.parametrize("heads", [(1,), (3,), (2, 2), (2, 1, 3)])
def test_entropy_gradient_is_the_derivative(heads):
    config = ActionConfig.build(heads, width=(7, 5, 9, 4)[: len(heads) + 1], temperature=0.1,
                                prior_var=(0.8, 1.3, 0.9, 1.1)[: len(heads) + 1])
    rng = np.random.default_rng(1)
    factors = [random_factor(config.dimension(l), rng) for l in range(1, config.depth + 1)]
    U_a = 1.7
    grads, grad_a = entropy_gradients(config, factors, U_a)
    h = 1e-5
    for level, R in enumerate(factors):
        U = R @ R.T
        V = rng.normal(size=U.shape)
        V = V + V.T
        shifted = [list(factors), list(factors)]
        shifted[0][level] = np.linalg.cholesky(U + h * V)
        shifted[1][level] = np.linalg.cholesky(U - h * V)
        numeric = (entropy(config, shifted[0], U_a) - entropy(config, shifted[1], U_a)) / (2 * h)
        assert_allclose(numeric, np.sum(grads[level] * V), rtol=1e-6)
    numeric_a = (entropy(config, factors, U_a + h) - entropy(config, factors, U_a - h)) / (2 * h)
    assert_allclose(numeric_a, grad_a, rtol=1e-6)


def test_action_gradient_in_the_cholesky_parameters():
    X, y = random_features(40, 3, 4, seed=2)
    config = ActionConfig.build((2, 2), width=8, temperature=0.05)
    action = Action(config, energy_for(X=X, y=y, temperature=0.05))
    theta = np.random.default_rng(3).normal(scale=0.3, size=action.parametrisation.size)
    _, grad = action(theta)
    h = 1e-6
    numeric = [(action(theta + h * e)[0] - action(theta - h * e)[0]) / (2 * h) for e in np.eye(theta.size)]
    assert_allclose(numeric, grad, rtol=1e-5, atol=1e-9)


def test_solution_solves_the_equations_and_is_a_minimum():
    X, y = random_features(50, 4, 4, seed=5)
    solution = saddle_point_from_features(X, y, heads=(2, 2), width=6, temperature=0.02, tolerance=1e-10)
    assert solution.converged and solution.gradient_norm <= 1e-10
    assert solution.hessian_eigenvalues.min() > 0
    assert np.all(np.linalg.eigvalsh(solution.order_parameter) > 0)
    assert solution.below_wishart_rank is False


def test_three_representations_reach_the_same_saddle_point():
    """Kernel (from C), kernel (from X) and feature space: the same U to 1e-8 (tolerance 1e-11 on
    the gradient and a Hessian eigenvalue ≳ 1e-2 bound the distance to the minimum by ~1e-9)."""
    X, y = random_features(120, 3, 4, seed=7)
    C = np.einsum("pia,qib->abpq", X, X)
    kwargs = dict(heads=(2, 2), width=10, temperature=0.05, tolerance=1e-11)
    from_kernels = saddle_point(C, y, **kwargs)
    from_features = saddle_point_from_features(X, y, space="kernel", **kwargs)
    in_feature_space = saddle_point_from_features(X, y, **kwargs)
    assert in_feature_space.space == "feature" and from_features.space == "kernel"
    for other in (from_features, in_feature_space):
        assert_allclose(other.order_parameter, from_kernels.order_parameter, rtol=1e-8, atol=1e-9)
        assert_allclose(other.action, from_kernels.action, rtol=1e-12)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_single_head_equals_the_scalar_renormalization(depth):
    X, y = random_features(30, 5, 1, seed=depth)
    C = np.einsum("pia,qib->abpq", X, X)
    for width in (3, 40):
        matrix = saddle_point(C, y, heads=(1,) * depth, width=width, temperature=0.1, tolerance=1e-12)
        scalar = scalar_renormalization(C[0, 0], y, depth=depth, width=width, temperature=0.1)
        assert_allclose(matrix.order_parameter[0, 0], scalar.order_parameter, rtol=1e-8)
        assert_allclose(matrix.readout_order_parameter, scalar.readout_order_parameter, rtol=1e-8)
        assert_allclose(matrix.action, scalar.action, rtol=1e-12)


def test_failure_is_loud():
    X, y = random_features(30, 3, 2, seed=0)
    with pytest.raises(SaddlePointError, match="did not converge"):
        saddle_point_from_features(X, y, heads=(2,), width=5, temperature=0.1, tolerance=1e-30)
    quiet = saddle_point_from_features(X, y, heads=(2,), width=5, temperature=0.1, tolerance=1e-30,
                                       raise_on_failure=False)
    assert not quiet.converged and "tolerance 1e-30" in quiet.message


@pytest.mark.parametrize("kwargs, message", [
    (dict(heads=(2, 0)), r"heads\[1\] must be an integer ≥ 1"),
    (dict(width=-1), r"width must be a finite number in \(0, inf\)"),
    (dict(width=(5, 5)), "width must be a number or a sequence of 3"),
    (dict(temperature=0.0), r"temperature must be a finite number in \(0, inf\)"),
    (dict(prior_var=(1, 1)), "prior_var must be a number or a sequence of 3"),
    (dict(heads=(2, 1)), "X.shape\\[2\\] = 4 paths, but heads"),
    (dict(start=[np.eye(4), -np.eye(2)]), r"start\[1\] must be positive definite"),
])
def test_bad_arguments_are_named(kwargs, message):
    X, y = random_features(20, 2, 4, seed=0)
    arguments = dict(heads=(2, 2), width=5, temperature=0.1) | kwargs
    with pytest.raises(ValueError, match=message):
        saddle_point_from_features(X, y, **arguments)


def test_non_integer_heads_are_refused_not_truncated():
    """Issue 14: heads=(2.7,) used to be solved as heads=(2,)."""
    X, y = random_features(20, 2, 2, seed=0)
    with pytest.raises(ValueError, match=r"heads\[0\] must be an integer ≥ 1, got 2.7"):
        saddle_point_from_features(X, y, heads=(2.7,), width=5, temperature=0.1)
    C = np.einsum("pia,qib->abpq", X, X)
    with pytest.raises(ValueError, match=r"heads\[0\] must be an integer ≥ 1, got 2.7"):
        saddle_point(C, y, heads=(2.7,), width=5, temperature=0.1)


def test_path_kernels_that_are_not_positive_semidefinite_are_named():
    """Issue 14: an indefinite C used to fail 17 frames down in scipy's Cholesky."""
    X, y = random_features(6, 2, 2, seed=1)
    C = np.einsum("pia,qib->abpq", X, X)
    C[0, 0] -= 2.0 * np.eye(6)  # still symmetric, no longer a Gram matrix
    with pytest.raises(ValueError, match=r"C must be positive semi-definite, got smallest eigenvalue -"):
        saddle_point(C, y, heads=(2,), width=5, temperature=0.1)
    with pytest.raises(ValueError, match="C must be positive semi-definite"):
        energy_for(C=C, y=y, temperature=0.1)


def test_action_evaluations_check_nothing_again(monkeypatch):
    """Issue 14: every action evaluation used to re-validate the six arguments of U_a's closed form. They
    are checked once, by ActionConfig.build and energy_for; an evaluation calls no checker of arguments.py
    and asks the closed form not to check (check_arguments=False)."""
    from attnverify.theories.attention_paths import derivations as theory
    from attnverify.base import arguments

    X, y = random_features(8, 2, 2, seed=2)
    action = Action(ActionConfig.build((2,), 5, 0.1), energy_for(X=X, y=y, temperature=0.1))
    checks, readout_checks = [], []

    def counting(name):
        function = getattr(arguments, name)

        def wrapper(*args, **kwargs):
            checks.append(name)
            return function(*args, **kwargs)
        monkeypatch.setattr(arguments, name, wrapper)

    for name in ("array", "real", "positive", "nonnegative", "integer", "integers", "positives", "backend"):
        counting(name)
    readout = theory.readout_order_parameter

    def recording(*args, **kwargs):
        readout_checks.append(kwargs.get("check_arguments", True))
        return readout(*args, **kwargs)
    monkeypatch.setattr(theory, "readout_order_parameter", recording)

    theta = np.zeros(action.parametrisation.size)
    value, gradient = action(theta)
    action.gradient_norm(theta + 0.1)  # a second point (the same θ is answered from the action's memory)
    assert checks == [] and readout_checks == [False, False]
    assert np.isfinite(value) and np.all(np.isfinite(gradient))


@pytest.mark.parametrize("space", ["kernel", "feature", "paths"])
def test_a_temperature_lost_in_round_off_is_refused_by_name(space):
    """Issue 27: temperature 1e-300 ended in scipy's LinAlgError (or numpy's "Eigenvalues did not converge").
    Below ε·Tr K(U) at the start, T·I is not resolved next to K(U) in float64; the refusal names the range."""
    X, y = random_features(12, 3, 2, seed=0)  # P = 12 > N0·𝓗 = 6: K(U) is singular, only T·I makes it definite
    lowest = np.finfo(float).eps * np.sum(X**2)  # U = I at the GP point (σ² = 1), Tr K = Σ X²
    for temperature in (1e-300, float(0.5 * lowest)):
        with pytest.raises(ValueError, match=r"temperature must be in \[[0-9.e+-]+, inf\).*got " + re.escape(repr(temperature))):
            if space == "paths":
                saddle_point(np.einsum("pia,qib->abpq", X, X), y, heads=(2,), width=5, temperature=temperature)
            else:
                saddle_point_from_features(X, y, heads=(2,), width=5, temperature=temperature, space=space)


def test_the_refused_range_is_the_round_off_of_the_kernel():
    X, y = random_features(12, 3, 2, seed=0)
    lowest = np.finfo(float).eps * np.sum(X**2)
    with pytest.raises(ValueError, match=rf"temperature must be in \[{lowest:.3g}, inf\)"):
        saddle_point_from_features(X, y, heads=(2,), width=5, temperature=1e-300)


def test_a_small_temperature_above_the_round_off_fails_as_a_saddle_point_error_not_a_linalg_error():
    """Just above the refused range, K(U) + T·I loses its Cholesky factor somewhere along the solve: such trial
    points are rejected as steps to where S is undefined, and the failure (if any) is the solver's own."""
    X, y = random_features(12, 3, 2, seed=0)
    C = np.einsum("pia,qib->abpq", X, X)
    temperature = 2 * np.finfo(float).eps * np.sum(X**2)
    try:
        saddle_point(C, y, heads=(2,), width=5, temperature=temperature)
    except SaddlePointError as error:
        assert "did not converge" in str(error) or "not a minimum" in str(error)


@pytest.mark.parametrize("temperature", [1e-20, 1e-300])
def test_a_tiny_temperature_is_taken_where_the_kernel_is_definite_by_itself(temperature):
    """P = 4 ≤ N0·𝓗 = 6: K(U) has full rank, T·I is not needed to make it definite, and the solve is the T → 0
    limit (the same U at 1e-20 and 1e-300)."""
    X, y = random_features(4, 3, 2, seed=0)
    solution = saddle_point_from_features(X, y, heads=(2,), width=5, temperature=temperature)
    limit = saddle_point_from_features(X, y, heads=(2,), width=5, temperature=1e-12)
    assert solution.converged and solution.is_minimum and solution.space == "kernel"
    assert_allclose(solution.order_parameter, limit.order_parameter, rtol=1e-8)
