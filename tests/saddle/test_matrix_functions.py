"""ln det U and U⁻¹ as Cholesky atoms of a declared entropy: the same value, gradient and Hessian (and sympy derivatives) as the expanded
sympy expressions (exact formulas, compared to 1e-10), a chain of matrix order parameters (a deep linear network
with unequal widths) solved through them, and atoms of undeclared matrices refused."""

import numpy as np
import pytest
import sympy
from numpy.testing import assert_allclose

from attnverify.saddle import SaddlePointAction, inverse, log_det, positive, positive_definite, solve, wishart_entropy
from attnverify.saddle.matrix_functions import pair_form


def _declared(expand: bool):
    """𝓛 = n0[tr(V⁻¹ Tr U) − ln det U] + n1[tr(V)/s − ln det V] + 3 (V⁻¹)_01² over U (3 × 3) and V (3 × 3)."""
    U, V = positive_definite("U", 3), positive_definite("V", 3)
    n0, n1, s = sympy.symbols("n0 n1 s", positive=True)
    W = inverse(V)
    entropy = n0 * ((W * U).trace() - log_det(U)) + n1 * (V.trace() / s - log_det(V)) + 3 * W[0, 1] ** 2
    if expand:
        entropy = entropy.doit()
    return SaddlePointAction(order_parameters={"U": U, "V": V}, entropy=entropy, kernel="U", width=(n0, n1))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_atoms_equal_the_expanded_expressions(seed):
    atoms, expanded = _declared(False), _declared(True)
    assert atoms.entropy_term.auxiliaries and not expanded.entropy_term.auxiliaries
    rng = np.random.default_rng(seed)
    A, B = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    u = atoms.join({"U": A @ A.T + np.eye(3), "V": B @ B.T + 0.5 * np.eye(3)})
    parameters = (5.0, 7.0, 1.3)
    value, gradient = atoms.entropy_value_and_gradient(u, parameters)
    value_x, gradient_x = expanded.entropy_value_and_gradient(u, parameters)
    assert_allclose(value, value_x, rtol=1e-12)
    assert_allclose(gradient, gradient_x, rtol=1e-10, atol=1e-12 * np.abs(gradient_x).max())
    hessian, hessian_x = atoms.entropy_hessian(u, parameters), expanded.entropy_hessian(u, parameters)
    assert_allclose(hessian, hessian_x, rtol=1e-10, atol=1e-11 * np.abs(hessian_x).max())


def test_pair_form_is_the_trace_over_the_symmetric_basis():
    rng = np.random.default_rng(4)
    X, Y = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    rows, cols = np.triu_indices(3)
    basis = np.zeros((6, 3, 3))
    basis[np.arange(6), rows, cols] = 1.0
    basis[np.arange(6), cols, rows] = 1.0
    expected = np.einsum("ab,kbc,cd,lda->kl", X, basis, Y, basis)
    assert_allclose(pair_form(X, Y), expected, rtol=1e-13, atol=1e-14)


def test_a_deep_linear_chain_with_unequal_widths_solves_through_the_atoms():
    """Two 3 × 3 layers (wishart_entropy(U1, n0, U2) + wishart_entropy(U2, n1, σ²)): at the GP point U1 = U2 = σ²I,
    and the solve with widths (30, 60) is a minimum whose residual meets the tolerance."""
    U1, U2 = positive_definite("U1", 3), positive_definite("U2", 3)
    n0, n1, s = sympy.symbols("n0 n1 sigma2", positive=True)
    action = SaddlePointAction(order_parameters={"U1": U1, "U2": U2},
                               entropy=wishart_entropy(U1, n0, U2) + wishart_entropy(U2, n1, s), kernel="U1",
                               width=(n0, n1))
    assert {type(a).__name__ for a in action.entropy.atoms(sympy.Function)} >= {"LogDet", "InverseEntry"}
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 4, 3)) / 2
    y = np.sign(rng.normal(size=20))
    solution = solve(action, dict(X=X, y=y), temperature=0.1, n0=30, n1=60, sigma2=1.5, tolerance=1e-11)
    assert solution.converged and solution.is_minimum and solution.residual <= 1e-11
    from attnverify.saddle import gp_point
    gp = gp_point(action, n0=30, n1=60, sigma2=1.5)
    assert_allclose(gp["U1"], 1.5 * np.eye(3), atol=1e-10)


def test_atoms_of_an_undeclared_matrix_are_refused():
    U, V = positive_definite("U", 2), positive_definite("V", 2)
    N = sympy.Symbol("N", positive=True)
    with pytest.raises(ValueError, match="log_det / inverse of V"):
        SaddlePointAction(order_parameters={"U": U}, entropy=N * (U.trace() - log_det(U) - log_det(V)), kernel="U",
                          width=N)
    with pytest.raises(TypeError, match="matrix order parameter"):
        log_det(positive("q"))


def test_sympy_differentiates_the_atoms_as_the_expanded_expressions():
    """diff of ln det U and of (U⁻¹)_ij by their matrix-calculus rules equals diff of the expanded forms (exactly)."""
    U = positive_definite("U", 3)
    W = inverse(U)
    for expression in (log_det(U), W[0, 1], W[2, 2] * log_det(U)):
        for u in (U[0, 0], U[0, 2], U[1, 2]):
            assert sympy.simplify((sympy.diff(expression, u).doit() - sympy.diff(expression.doit(), u))) == 0
