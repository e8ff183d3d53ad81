"""Small random attention-path problems shared by the numerics tests."""

import numpy as np
from seeds import rng as seeded_rng


def random_features(P: int, N0: int, paths: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Path features with correlated paths (a shared component) and ±1 labels that depend on them (a fresh
    problem per ``seed`` under the suite's seed offset, ``seeds.seeded``)."""
    rng = seeded_rng(seed)
    shared = rng.normal(size=(P, N0, 1))
    X = (0.7 * rng.normal(size=(P, N0, paths)) + 0.5 * shared) / np.sqrt(N0 * paths)
    y = np.sign(X[:, 0, 0] + 0.3 * rng.normal(size=P))
    y[y == 0] = 1.0
    return X, y


def random_factor(D: int, rng: np.random.Generator) -> np.ndarray:
    """Lower-triangular factor of a well-conditioned random positive-definite matrix."""
    A = rng.normal(size=(D, D))
    return np.linalg.cholesky(A @ A.T / D + 0.5 * np.eye(D))


def five_point_derivative(f, h: float) -> float:
    """f'(0) by the five-point stencil (truncation error O(h⁴))."""
    return (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)
