"""Backend helpers: the batched triangular solve on both of its paths (batched LU for small n, triangular
solves chain by chain beyond), the solve with one factor, and the inverse from the factors on both of its paths."""

import numpy as np
import pytest

from attnverify.base.backend import get_backend


@pytest.mark.parametrize("n", [5, 64, 65, 120])
@pytest.mark.parametrize("transpose", [False, True])
def test_solve_lower_solves_every_chain(n, transpose):
    be = get_backend("numpy")
    rng = np.random.default_rng(n)
    A = rng.normal(size=(3, n, n))
    L = np.linalg.cholesky(A @ np.swapaxes(A, 1, 2) + n * np.eye(n))
    M = np.swapaxes(L, 1, 2) if transpose else L
    B, b, shared = rng.normal(size=(3, n, 4)), rng.normal(size=(3, n)), rng.normal(size=(n, 2))
    np.testing.assert_allclose(M @ be.solve_lower(L, B, transpose=transpose), B, atol=1e-12)
    np.testing.assert_allclose(np.einsum("cij,cj->ci", M, be.solve_lower(L, b, transpose=transpose)), b, atol=1e-12)
    out = be.solve_lower(L, shared, transpose=transpose, shared=True)
    assert out.shape == (3, n, 2)
    np.testing.assert_allclose(M @ out, np.broadcast_to(shared, (3, n, 2)), atol=1e-12)


@pytest.mark.parametrize("n", [1, 5, 64, 65, 120])
def test_cholesky_inverse_is_the_inverse_on_both_paths(n):
    """A⁻¹ from A = LLᵀ: a batched solve and product for n ≤ 64, LAPACK potri chain by chain beyond; symmetric to
    the bit (its upper triangle is the mirror of the lower) and numpy.linalg.inv's to round-off (κ(A) ≤ ~5)."""
    be = get_backend("numpy")
    rng = np.random.default_rng(n)
    A = rng.normal(size=(3, n, n))
    A = A @ np.swapaxes(A, 1, 2) + n * np.eye(n)
    inverse = be.cholesky_inverse(np.linalg.cholesky(A))
    expected = np.linalg.inv(A)
    np.testing.assert_allclose(inverse, expected, rtol=0, atol=1e-13 * np.abs(expected).max())
    if n > 64:
        assert np.array_equal(inverse, np.swapaxes(inverse, 1, 2))


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("transpose", [False, True])
def test_solve_lower_of_one_factor_is_the_left_triangular_solve(order, transpose):
    """One L (n, n): the right-side BLAS solve on Bᵀ gives scipy's left solve L⁻¹B (L⁻ᵀB) to round-off, for a
    matrix B in either memory order and a vector b."""
    from scipy.linalg import solve_triangular

    be = get_backend("numpy")
    rng = np.random.default_rng(7)
    n = 90
    A = rng.normal(size=(n, n))
    L = np.linalg.cholesky(A @ A.T + n * np.eye(n))
    for rhs in (np.asarray(rng.normal(size=(n, 13)), order=order), rng.normal(size=n)):
        expected = solve_triangular(L, rhs, lower=True, trans=int(transpose))
        solved = be.solve_lower(L, rhs, transpose=transpose)
        assert solved.shape == rhs.shape
        np.testing.assert_allclose(solved, expected, rtol=0, atol=1e-13 * np.abs(expected).max())


def test_only_the_command_line_reads_the_environment(monkeypatch):
    """get_backend(None) is numpy whatever $ATTNVERIFY_BACKEND says (the test session sets it to an invalid
    name, tests/conftest.py); backend_from_environment, which the command line uses, reads it."""
    from attnverify.base.backend import backend_from_environment, get_backend

    assert get_backend(None).name == "numpy"
    with pytest.raises(ValueError, match="backend must be one of"):
        backend_from_environment(None)
    monkeypatch.setenv("ATTNVERIFY_BACKEND", "numpy")
    assert backend_from_environment(None).name == "numpy"
    assert backend_from_environment("numpy").name == "numpy"
