"""The energy E(U) and ∂E/∂U: three representations agree, and the gradient is the derivative."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from numpy.testing import assert_allclose
from theories.attention_paths.problems import five_point_derivative, random_factor, random_features

from attnverify.theories.attention_paths import FeatureKernelEnergy, FeatureSpaceEnergy, KernelEnergy, energy_for
from seeds import seeded


def direct_energy(U, X, y, T):
    """ln det(K+TI) + Yᵀ(K+TI)^{-1}Y with K formed entry by entry from C (slogdet and solve)."""
    C = np.einsum("pia,qib->abpq", X, X)
    G = np.einsum("ab,abpq->pq", U, C) + T * np.eye(len(y))
    sign, logdet = np.linalg.slogdet(G)
    assert sign > 0
    return logdet + y @ np.linalg.solve(G, y)


@settings(max_examples=15)
@given(paths=st.sampled_from([1, 2, 4]), N0=st.integers(1, 6), P=st.integers(3, 40),
       T=st.floats(1e-3, 2.0), seed=st.integers(0, 2**16))
def test_three_representations_equal_the_direct_evaluation(paths, N0, P, T, seed):
    X, y = random_features(P, N0, paths, seed)
    R = random_factor(paths, np.random.default_rng(seed + 1))
    expected = direct_energy(R @ R.T, X, y, T)
    C = np.einsum("pia,qib->abpq", X, X)
    values = [KernelEnergy(C, y, T)(R), FeatureKernelEnergy(X, y, T)(R)]
    if N0 * paths < P:
        values.append(FeatureSpaceEnergy(X, y, T)(R))
    # ∂E/∂U = Tr(A C) − rᵀCr cancels between two terms of order P/T: compare on their scale
    G = np.einsum("ab,abpq->pq", R @ R.T, C) + T * np.eye(P)
    r = np.linalg.solve(G, y)
    scale = np.abs(np.einsum("pq,abpq->ab", np.linalg.inv(G), C)).max() + np.abs(np.einsum("p,abpq,q->ab", r, C, r)).max()
    for value, grad in values:
        assert_allclose(value, expected, rtol=1e-10)
        assert_allclose(grad, values[0][1], rtol=0, atol=1e-11 * np.linalg.cond(G) * scale)


@settings(max_examples=10)
@given(paths=st.sampled_from([1, 2, 4]), N0=st.integers(1, 6), P=st.integers(3, 40),
       T=st.floats(1e-3, 2.0), seed=st.integers(0, 2**16))
def test_the_reordered_factorisation_gives_the_same_energy_and_gradient(paths, N0, P, T, seed):
    """`reordered` factorises in a permuted order and maps r, A (XᵀAX) back: the same value and gradient as the
    call, to the round-off within which the representations agree (a permutation not undone moves them by O(1))."""
    X, y = random_features(P, N0, paths, seed)
    R = random_factor(paths, np.random.default_rng(seed + 1))
    C = np.einsum("pia,qib->abpq", X, X)
    energies = [KernelEnergy(C, y, T), FeatureKernelEnergy(X, y, T)]
    if N0 * paths < P:
        energies.append(FeatureSpaceEnergy(X, y, T))
    G = np.einsum("ab,abpq->pq", R @ R.T, C) + T * np.eye(P)
    r = np.linalg.solve(G, y)
    scale = np.abs(np.einsum("pq,abpq->ab", np.linalg.inv(G), C)).max() + np.abs(np.einsum("p,abpq,q->ab", r, C, r)).max()
    for energy in energies:
        (value, grad), (again, regrad) = energy(R), energy.reordered(R)
        assert_allclose(again, value, rtol=1e-10)
        assert_allclose(regrad, grad, rtol=0, atol=1e-11 * np.linalg.cond(G) * scale)


@pytest.mark.parametrize("N0, paths", [(1, 2), (2, 1), (2, 2), (6, 4)])
def test_the_reordered_factorisation_moves_the_round_off_and_keeps_the_call(N0, paths):
    """At T = 1e-6 (K + T·I's condition number ~1e6 and more) the reordered gradient differs from the call's in its
    last digits, in every representation, the feature space with one or two features too (B's D ≥ 2 rows are
    permuted); the call's factorisation stays the one kept for its point."""
    X, y = random_features(30, N0, paths, seed=5)
    R = random_factor(paths, np.random.default_rng(6))
    energies = [KernelEnergy(np.einsum("pia,qib->abpq", X, X), y, 1e-6), FeatureKernelEnergy(X, y, 1e-6)]
    if N0 * paths < 30:
        energies.append(FeatureSpaceEnergy(X, y, 1e-6))
    for energy in energies:
        grad = energy(R)[1]
        assert not np.array_equal(energy.reordered(R)[1], grad), type(energy).__name__
        assert np.array_equal(energy(R)[1], grad)


@pytest.mark.parametrize("representation", ["kernel", "features", "feature_space"])
def test_gradient_is_the_derivative(representation):
    """Five-point differences along symmetric directions: truncation O(h⁴) ≈ 1e-10, round-off 1.5 (the stencil's
    weights, Σ|c|/12) × 100 ulps of E per evaluation, divided by h: an absolute floor from the magnitude of E, since a
    directional derivative can be small where E is not (a fresh seed gave −0.0198 against |E| ≈ 500, off by 5e-8
    relative). Measured over 40 seed offsets, 3 representations, 5 directions: at most 32 ε|E|/h."""
    X, y = random_features(60, 4, 4, seed=seeded(3))
    T = 0.05
    energy = {"kernel": lambda: KernelEnergy(np.einsum("pia,qib->abpq", X, X), y, T),
              "features": lambda: FeatureKernelEnergy(X, y, T),
              "feature_space": lambda: FeatureSpaceEnergy(X, y, T)}[representation]()
    rng = np.random.default_rng(seeded(4))
    R = random_factor(4, rng)
    U = R @ R.T
    value, grad = energy(R)
    h = 2e-4
    round_off = 1.5 * 100 * np.finfo(float).eps * abs(value) / h
    for _ in range(5):
        V = rng.normal(size=(4, 4))
        V = V + V.T
        along = lambda t: energy(np.linalg.cholesky(U + t * V))[0]  # noqa: E731
        assert_allclose(five_point_derivative(along, h), np.sum(grad * V), rtol=1e-8, atol=round_off)


def test_feature_space_refuses_when_it_does_not_pay():
    X, y = random_features(10, 4, 4, seed=seeded(0))
    with pytest.raises(ValueError, match="N0·𝓗 < P"):
        FeatureSpaceEnergy(X, y, 0.1)
    assert isinstance(energy_for(X=X, y=y, temperature=0.1), FeatureKernelEnergy)


def test_bad_inputs_are_named():
    X, y = random_features(10, 2, 2, seed=seeded(0))
    with pytest.raises(ValueError, match="y must have shape"):
        energy_for(X=X, y=y[:-1], temperature=0.1)
    with pytest.raises(ValueError, match="exactly one of X"):
        energy_for(y=y, temperature=0.1)
    C = np.einsum("pia,qib->abpq", X, X)
    C[0, 1, 0, 1] += 1.0
    with pytest.raises(ValueError, match="C must satisfy"):
        KernelEnergy(C, y, 0.1)


@pytest.mark.parametrize("paths", [1, 4])
def test_the_checks_of_C_leave_the_callers_array_as_it_was(paths):
    """C's Gram matrix is symmetrised and factorised in place: on a copy, even where (one path) the transposed C is
    C itself."""
    X, y = random_features(12, 3, paths, seed=5)
    C = np.einsum("pia,qib->abpq", X, X)
    kept = C.copy()
    KernelEnergy(C, y, 0.1)
    assert np.array_equal(C, kept)
