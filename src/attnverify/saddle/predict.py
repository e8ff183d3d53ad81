"""What a solved saddle-point theory predicts on test data: the posterior predictor's mean and variance, the
generalisation error, and how the renormalised kernel aligns with the labels (Tiberi et al. 2024, figure 2d).

With the renormalised kernel K(U) = Σ_ab U_ab C_ab on the training inputs, k(x) = Σ_ab U_ab C_ab(·, x) and
κ(x) = Σ_ab U_ab C_ab(x, x):

    ⟨f(x)⟩ = k(x)ᵀ (K + T·I)⁻¹ Y,     ⟨δf(x)²⟩ = κ(x) − k(x)ᵀ (K + T·I)⁻¹ k(x),

by Cholesky solves (never an inverse). The kernels are given as arrays: ``C`` (𝓗, 𝓗, P, P) on the training
inputs, ``C_test`` (𝓗, 𝓗, Q, P) between test and training inputs and ``C_test_diagonal`` (𝓗, 𝓗, Q); for a scalar
kernel order parameter (P, P), (Q, P) and (Q,). With features instead (``X``, ``X_test``: (P, N0, 𝓗) or (P, N0)),
C_ab(x, x') = Σ_i X_ia(x) X_ib(x').
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from ..base import arguments
from ..numerics.statistics import Estimate, mean_estimate
from .declaration import SaddlePointAction
from .solve import Solution


def _matrix(declaration: SaddlePointAction, solution: Solution) -> np.ndarray:
    value = solution.order_parameters[declaration.kernel.name]
    return np.array([[value]]) if declaration.kernel.size == 0 else np.asarray(value)


def _kernels(data: Mapping[str, Any], test: Mapping[str, Any] | None, U: np.ndarray):
    """(K(U) on the training inputs, k(U) test × train, κ(U) on the test inputs) from kernels or features."""
    if "X" in data:
        R = np.linalg.cholesky(U)

        def lifted(X):  # Φ = X (I ⊗ R), so that Φ Φ'ᵀ = Σ_ab U_ab Σ_i X_ia X'_ib
            X = np.asarray(X, dtype=float)
            X = X[:, :, None] if X.ndim == 2 else X
            return np.einsum("pia,ab->pib", X, R).reshape(len(X), -1)

        Phi = lifted(data["X"])
        if test is None:
            return Phi @ Phi.T, None, None
        phi = lifted(test["X_test"])
        return Phi @ Phi.T, phi @ Phi.T, np.sum(phi * phi, axis=1)
    C = np.asarray(data["C"], dtype=float)
    C = C[None, None] if C.ndim == 2 else C
    K = np.einsum("ab,abpq->pq", U, C)
    if test is None:
        return K, None, None
    Ct, Cd = np.asarray(test["C_test"], dtype=float), np.asarray(test["C_test_diagonal"], dtype=float)
    Ct, Cd = (Ct[None, None], Cd[None, None]) if Ct.ndim == 2 else (Ct, Cd)
    return K, np.einsum("ab,abqp->qp", U, Ct), np.einsum("ab,abq->q", U, Cd)


class Prediction:
    """Mean and variance of the predictor on each test input, with the generalisation error and accuracy."""

    def __init__(self, mean: np.ndarray, variance: np.ndarray):
        self.mean, self.variance = mean, variance

    def generalisation_error(self, y) -> Estimate:
        """ε_g = E_x[(⟨f(x)⟩ − y(x))² + ⟨δf(x)²⟩], with its standard error over the test inputs."""
        y = arguments.array("y", y, shape=self.mean.shape)
        return mean_estimate((self.mean - y) ** 2 + self.variance)

    def accuracy(self, y) -> Estimate:
        """mean_x 1[sign⟨f(x)⟩ = sign y(x)], with its standard error."""
        y = arguments.array("y", y, shape=self.mean.shape)
        return mean_estimate((np.sign(self.mean) == np.sign(y)).astype(float))


def predict(declaration: SaddlePointAction, solution: Solution, data: Mapping[str, Any],
            test: Mapping[str, Any]) -> Prediction:
    """⟨f(x)⟩ and ⟨δf(x)²⟩ at the solution's order parameters, on ``test`` (``X_test``, or ``C_test`` and
    ``C_test_diagonal``), given the training ``data`` the solution was solved on."""
    if solution.temperature is None:
        raise ValueError("solution must be a solve's (with a temperature), not the GP point's")
    K, k, kappa = _kernels(data, test, _matrix(declaration, solution))
    y = arguments.array("y", data["y"], shape=(K.shape[0],))
    factor = cho_factor(K + solution.temperature * np.eye(K.shape[0]), lower=True)
    mean = k @ cho_solve(factor, y)
    W = np.linalg.solve(np.tril(factor[0]), k.T)
    return Prediction(mean, np.clip(kappa - np.sum(W * W, axis=0), 0.0, None))


def kernel_alignment(declaration: SaddlePointAction, solution: Solution,
                     data: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """The renormalised kernel's principal components against the labels: its eigenvalues (descending) and the
    fraction of |Y|² along each eigenvector, (vᵀY)²/|Y|² (figure 2d of Tiberi et al.: the renormalisation moves
    the label's weight onto the leading components)."""
    K, _, _ = _kernels(data, None, _matrix(declaration, solution))
    y = arguments.array("y", data["y"], shape=(K.shape[0],))
    values, vectors = np.linalg.eigh(0.5 * (K + K.T))
    order = np.argsort(values)[::-1]
    overlaps = (vectors[:, order].T @ y) ** 2 / float(y @ y)
    return values[order], overlaps
