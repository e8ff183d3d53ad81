"""The attention-path action on the saddle-point engine: its entropy is the authors' (checked against a direct
evaluation), the answer solves the equations and is a minimum, the three energy representations agree, H = 1 is the
scalar renormalisation, unequal widths are one parameter per layer, and failure is loud and named."""

import re

import numpy as np
import pytest
from numpy.testing import assert_allclose
from theories.attention_paths.problems import random_factor, random_features

from attnverify.saddle import SaddlePointError
from attnverify.theories.attention_paths import scalar_renormalization
from seeds import seeded
from attnverify.theories.attention_paths import derivations as derived
from attnverify.theories.attention_paths.action import (ActionConfig, attention_paths_action, order_parameters,
                                                        solve_paths)


def _partial_trace(U, heads_here):
    rest = U.shape[0] // heads_here
    return np.einsum("hahb->ab", U.reshape(heads_here, rest, heads_here, rest))


def _direct_entropy(config, order, U_a):
    """𝓛 of the module docstring by slogdet and solves, written out independently of the declaration."""
    n, s2, H, L = config.widths, config.variances, config.heads, config.depth
    value = n[L] * (U_a / s2[L] - np.log(U_a))
    for level in range(L):
        U = order[level]
        upper = order[level + 1] if level + 1 < L else np.array([[U_a]])
        traced = _partial_trace(U, H[level])
        value += n[level] * (np.trace(np.linalg.solve(upper, traced)) / s2[level] - np.linalg.slogdet(U)[1]
                             + H[level] * np.linalg.slogdet(upper)[1])
    return value / 2


@pytest.mark.parametrize("heads", [(1,), (3,), (2, 2), (2, 1, 3), (4, 4)])
def test_entropy_is_the_authors_and_its_gradient_the_derivative(heads):
    config = ActionConfig.build(heads, width=(7, 5, 9, 4)[: len(heads) + 1], temperature=0.1,
                                prior_var=(0.8, 1.3, 0.9, 1.1)[: len(heads) + 1])
    declaration = config.action
    rng = np.random.default_rng(1)
    order = [(lambda R: R @ R.T)(random_factor(config.dimension(level), rng)) for level in range(1, config.depth + 1)]
    values = {f"U{level}": (U[0, 0] if U.shape == (1, 1) else U) for level, U in enumerate(order, start=1)}
    values["Ua"] = 1.7
    u = declaration.join(values)
    parameters = declaration.parameter_values(config.parameters())
    L, g = declaration.entropy_value_and_gradient(u, parameters)
    assert_allclose(L, _direct_entropy(config, order, 1.7), rtol=1e-12)
    H = declaration.entropy_hessian(u, parameters)
    direction = rng.normal(size=u.size) * 1e-2
    h = 1e-4
    grad_plus = declaration.entropy_value_and_gradient(u + h * direction, parameters)[1]
    grad_minus = declaration.entropy_value_and_gradient(u - h * direction, parameters)[1]
    value_plus = declaration.entropy_value_and_gradient(u + h * direction, parameters)[0]
    value_minus = declaration.entropy_value_and_gradient(u - h * direction, parameters)[0]
    assert_allclose((value_plus - value_minus) / (2 * h), g @ direction, rtol=1e-7)
    assert_allclose((grad_plus - grad_minus) / (2 * h), H @ direction, rtol=1e-6, atol=1e-9 * np.abs(H).max())


def test_solution_solves_the_equations_and_is_a_minimum():
    X, y = random_features(50, 4, 4, seed=5)
    solution = solve_paths(dict(X=X, y=y), heads=(2, 2), width=6, temperature=0.02, tolerance=1e-10)
    assert solution.converged and solution.residual <= 1e-10
    assert solution.hessian_eigenvalues.min() > 0
    assert all(np.all(np.linalg.eigvalsh(U) > 0) for U in order_parameters(solution))
    assert ActionConfig.build((2, 2), 6, 0.02).below_wishart_rank is False
    assert ActionConfig.build((2, 2), 3, 0.02).below_wishart_rank is True


@pytest.mark.parametrize("heads", [(2, 2), (2, 1, 2), (3, 1)])
@pytest.mark.parametrize("width", [2, 300])
def test_below_the_wishart_rank_and_wide_the_solution_is_a_minimum(heads, width):
    """The width the engine's drawn claims do not reach (they sample networks, N ≥ 6): below the Wishart rank
    (N = 2 < D_1, a formal extrapolation of the leading order) and wide, the equations hold and S has a minimum."""
    X, y = random_features(40, 4, int(np.prod(heads)), seed=width)
    solution = solve_paths(dict(X=X, y=y), heads=heads, width=width, temperature=0.05, tolerance=1e-10)
    assert solution.converged and solution.residual <= 1e-10
    assert solution.hessian_eigenvalues.min() > 0
    assert ActionConfig.build(heads, width, 0.05).below_wishart_rank is (width == 2)


def test_readout_is_its_closed_form_at_the_solution():
    """∂S/∂U_a = 0 at the answer: U_a equals the derivation's closed form at Tr U_L (derivation attention_paths.readout)."""
    X, y = random_features(40, 3, 4, seed=3)
    solution = solve_paths(dict(X=X, y=y), heads=(2, 2), width=(7, 9, 5), temperature=0.05, prior_var=(1.2, 0.7, 1.5),
                           tolerance=1e-12)
    closed = derived.readout_order_parameter(float(np.trace(solution.matrix("U2"))), 2, 9, 5, 0.7, 1.5)
    assert_allclose(solution["Ua"], float(closed), rtol=1e-10)


def test_three_representations_reach_the_same_saddle_point():
    """Kernel (from C), kernel (from X) and feature space: the same U to 1e-8 (tolerance 1e-11 on the gradient and
    a Hessian eigenvalue ≳ 1e-2 bound the distance to the minimum by ~1e-9)."""
    X, y = random_features(120, 3, 4, seed=7)
    C = np.einsum("pia,qib->abpq", X, X)
    kwargs = dict(heads=(2, 2), width=10, temperature=0.05, tolerance=1e-11)
    from_kernels = solve_paths(dict(C=C, y=y), **kwargs)
    from_features = solve_paths(dict(X=X, y=y), space="kernel", **kwargs)
    in_feature_space = solve_paths(dict(X=X, y=y), **kwargs)
    for other in (from_features, in_feature_space):
        for mine, theirs in zip(order_parameters(other), order_parameters(from_kernels)):
            assert_allclose(mine, theirs, rtol=1e-8, atol=1e-9)
        assert_allclose(other.action, from_kernels.action, rtol=1e-12)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_single_head_equals_the_scalar_renormalization(depth):
    """The engine's action is ½E + 𝓛/2 in the scalar's convention S = E + 𝓛: twice it is the scalar's."""
    X, y = random_features(30, 5, 1, seed=depth)
    C = np.einsum("pia,qib->abpq", X, X)
    for width in (3, 40):
        matrix = solve_paths(dict(C=C, y=y), heads=(1,) * depth, width=width, temperature=0.1, tolerance=1e-12)
        scalar = scalar_renormalization(C[0, 0], y, depth=depth, width=width, temperature=0.1)
        assert_allclose(matrix["U1"], scalar.order_parameter, rtol=1e-8)
        assert_allclose(matrix["Ua"], scalar.readout_order_parameter, rtol=1e-8)
        assert_allclose(2 * matrix.action, scalar.action, rtol=1e-12)


def test_the_scalar_roots_data_sensitivity_is_its_derivative_in_the_kernel():
    """`data_sensitivity` = ‖∂F/∂K_0‖_F ‖K_0‖₂ / |∂F/∂U_1|: ∂F/∂K_0, from the closed form, against central
    differences of F along a random symmetric direction, and the whole against the same norm formed in the original
    basis (Frobenius norms agree in any orthonormal basis: round-off). K_0 has rank 2 here, so F curves on the
    scale of T = 0.001 along its null directions: the truncation of the differences falls as h² (1e-3 relative at
    h = 1e-7, 1e-5 at 1e-8, 2e-7 at 1e-9), and their round-off, ε·cond(G)·P/h ≈ 1e-8 relative at h = 1e-9."""
    X, y = random_features(30, 2, 1, seed=seeded(7))
    K0, T, n, variances = X[:, :, 0] @ X[:, :, 0].T, 0.001, np.full(4, 2.0), (0.3,) * 4
    scalar = scalar_renormalization(K0, y, depth=3, width=2, temperature=T, prior_var=variances)
    U = scalar.order_parameter

    def F(V, K):
        G = V * K + T * np.eye(len(y))
        s = np.trace(np.linalg.solve(G, V * K)) - np.linalg.solve(G, y) @ (V * K) @ np.linalg.solve(G, y)
        return np.log(V) - np.log(np.prod(variances)) - np.sum(np.log(1 - s / n))

    G = U * K0 + T * np.eye(len(y))
    r = np.linalg.solve(G, y)
    A = np.linalg.solve(G, np.eye(len(y)))
    Ar = A @ r
    ds = U * (T * A @ A + np.outer(r, r) - T * (np.outer(r, Ar) + np.outer(Ar, r)))
    dF = np.sum(1 / (n * np.array(scalar.ratios))) * ds
    E = np.random.default_rng(seeded(8)).normal(size=K0.shape)
    E = (E + E.T) / 2
    h = 1e-9
    assert_allclose((F(U, K0 + h * E) - F(U, K0 - h * E)) / (2 * h), np.sum(dF * E), rtol=1e-5)
    h = 1e-4  # along U_1 F is smooth on U_1's scale (truncation ~h²); its round-off, ~3e-10, is 1e-6 of the difference
    slope = (F(U * (1 + h), K0) - F(U * (1 - h), K0)) / (2 * h * U)
    assert_allclose(scalar.data_sensitivity, np.linalg.norm(dF) * np.linalg.eigvalsh(K0)[-1] / abs(slope), rtol=1e-5)


def test_one_width_per_layer_and_equal_widths_are_the_same_action():
    X, y = random_features(30, 3, 4, seed=4)
    equal = attention_paths_action((2, 2), equal_widths=True)
    assert equal.parameter_names == ("N", "sigma1", "sigma2", "sigma_a")
    assert attention_paths_action((2, 2)).parameter_names == ("n0", "n1", "n2", "sigma1", "sigma2", "sigma_a")
    from attnverify.saddle import solve
    one = solve(equal, dict(X=X, y=y), temperature=0.1, N=8, sigma1=1.0, sigma2=1.0, sigma_a=1.0, tolerance=1e-12)
    per_layer = solve_paths(dict(X=X, y=y), heads=(2, 2), width=(8, 8, 8), temperature=0.1, tolerance=1e-12)
    assert_allclose(one.matrix("U1"), per_layer.matrix("U1"), rtol=1e-10)


def test_one_variance_for_every_layer_is_the_action_at_equal_variances():
    """equal_variances: one sigma for every layer, the same parameters (N, sigma, sigma_a) at every depth (the
    family the built-in claims draw heads from), the action of equal σ_ℓ²."""
    X, y = random_features(30, 3, 4, seed=4)
    from attnverify.saddle import solve
    for heads in ((2, 2), (1,), (2, 1, 2)):
        family = attention_paths_action(heads, equal_widths=True, equal_variances=True)
        assert family.parameter_names == ("N", "sigma", "sigma_a")
        Xh = X[:, :, : int(np.prod(heads))]
        one = solve(family, dict(X=Xh, y=y), temperature=0.1, N=8, sigma=0.7, sigma_a=1.3, tolerance=1e-12)
        per_layer = solve_paths(dict(X=Xh, y=y), heads=heads, width=8, temperature=0.1,
                                prior_var=(0.7,) * len(heads) + (1.3,), tolerance=1e-12)
        assert_allclose(one.matrix("U1"), per_layer.matrix("U1"), rtol=1e-10)
        assert_allclose(one.action, per_layer.action, rtol=1e-12)


def test_failure_is_loud():
    X, y = random_features(30, 3, 2, seed=0)
    with pytest.raises(SaddlePointError, match="did not converge"):
        solve_paths(dict(X=X, y=y), heads=(2,), width=5, temperature=0.1, tolerance=1e-30)
    quiet = solve_paths(dict(X=X, y=y), heads=(2,), width=5, temperature=0.1, tolerance=1e-30, raise_on_failure=False)
    assert not quiet.converged and "tolerance 1e-30" in quiet.message


@pytest.mark.parametrize("kwargs, message", [
    (dict(heads=(2, 0)), r"heads\[1\] must be an integer ≥ 1"),
    (dict(heads=(2.7,)), r"heads\[0\] must be an integer ≥ 1, got 2.7"),
    (dict(width=-1), r"width must be a finite number in \(0, inf\)"),
    (dict(width=(5, 5)), "width must be a number or a sequence of 3"),
    (dict(temperature=0.0), r"temperature must be a finite number in \(0, inf\)"),
    (dict(prior_var=(1, 1)), "prior_var must be a number or a sequence of 3"),
    (dict(heads=(2, 1)), r"the kernel order parameter U1 is 2 × 2 but the data have 4 paths: give C of shape \(2, 2"),
    (dict(start=[np.eye(4), -np.eye(2)]), r"start\[1\] must be positive definite"),
])
def test_bad_arguments_are_named(kwargs, message):
    X, y = random_features(20, 2, 4, seed=0)
    arguments = dict(heads=(2, 2), width=5, temperature=0.1) | kwargs
    with pytest.raises(ValueError, match=message):
        solve_paths(dict(X=X, y=y), **arguments)


def test_path_kernels_that_are_not_positive_semidefinite_are_named():
    X, y = random_features(6, 2, 2, seed=1)
    C = np.einsum("pia,qib->abpq", X, X)
    C[0, 0] -= 2.0 * np.eye(6)  # still symmetric, no longer a Gram matrix
    with pytest.raises(ValueError, match=r"C must be positive semi-definite, got smallest eigenvalue -"):
        solve_paths(dict(C=C, y=y), heads=(2,), width=5, temperature=0.1)


@pytest.mark.parametrize("space", ["kernel", "feature", "paths"])
def test_a_temperature_lost_in_round_off_is_refused_by_name(space):
    """Below ε·Tr K(U) at the start, T·I is not resolved next to K(U) in float64; the refusal names the range."""
    X, y = random_features(12, 3, 2, seed=0)  # P = 12 > N0·𝓗 = 6: K(U) is singular, only T·I makes it definite
    lowest = np.finfo(float).eps * np.sum(X**2)  # U = I at the GP point (σ² = 1), Tr K = Σ X²
    for temperature in (1e-300, float(0.5 * lowest)):
        with pytest.raises(ValueError, match=r"temperature must be in \[[0-9.e+-]+, inf\).*got " + re.escape(repr(temperature))):
            if space == "paths":
                solve_paths(dict(C=np.einsum("pia,qib->abpq", X, X), y=y), heads=(2,), width=5,
                            temperature=temperature)
            else:
                solve_paths(dict(X=X, y=y), heads=(2,), width=5, temperature=temperature, space=space)
    with pytest.raises(ValueError, match=rf"temperature must be in \[{lowest:.3g}, inf\)"):
        solve_paths(dict(X=X, y=y), heads=(2,), width=5, temperature=1e-300)


@pytest.mark.parametrize("temperature", [1e-20, 1e-300])
def test_a_tiny_temperature_is_taken_where_the_kernel_is_definite_by_itself(temperature):
    """P = 4 ≤ N0·𝓗 = 6: K(U) has full rank, T·I is not needed to make it definite, and the solve is the T → 0
    limit (the same U at 1e-20 and 1e-300)."""
    X, y = random_features(4, 3, 2, seed=0)
    solution = solve_paths(dict(X=X, y=y), heads=(2,), width=5, temperature=temperature)
    limit = solve_paths(dict(X=X, y=y), heads=(2,), width=5, temperature=1e-12)
    assert solution.converged and solution.is_minimum
    assert_allclose(solution.matrix("U1"), limit.matrix("U1"), rtol=1e-8)


def test_the_scalar_renormalization_of_a_kernel_near_floats_end_is_its_limit_without_warnings():
    """K0 = 10³⁰⁰·I: U·λ overflows on the upper part of the bracketing grid (no valid ratio there) and d² everywhere,
    where its term's limit is 0; the saddle point is the wide-kernel limit U = σ²·Π(1 − P/n) = 1·(1 − 5/10)², with no
    RuntimeWarning."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = scalar_renormalization(1e300 * np.eye(5), np.ones(5), depth=1, width=10, temperature=0.1)
    assert abs(result.order_parameter - 0.25) <= 1e-12
