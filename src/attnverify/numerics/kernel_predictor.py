"""Predictor statistics of a network whose kernel is linear in an order parameter U, K(U) = Σ_ab U_ab C_ab: the
Bayesian attention network (spec §2.3), or any declared saddle-point theory
([`attnverify.saddle.predict`][attnverify.saddle.predict]).

For a test input x, with k_μ(x) = Σ_{ππ'} U_{ππ'} X^μ_π·X_{π'}(x) and K the training kernel K(U):

    ⟨f(x)⟩   = k(x)ᵀ (K + T I)^{-1} Y
    ⟨δf(x)²⟩ = K(x, x) − k(x)ᵀ (K + T I)^{-1} k(x)

(authors' code ``compute_predictor_statistics``). With a factor U = R Rᵀ and Φ = X(I ⊗ R) these are
computed in the P × P kernel space, or, when N0·𝓗 < P, in the feature space through
B = ΦᵀΦ + T I:  ⟨f⟩ = φᵀ B^{-1} ΦᵀY and ⟨δf²⟩ = T φᵀ B^{-1} φ (Woodbury), never forming C. The features
live on the chosen backend (numpy, or cupy for the device); the statistics come back to the host.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..base import arguments
from .kernel_energy import SPACES, add_to_diagonal, cholesky_solve, lower_cholesky
from .statistics import Estimate, mean_estimate


@dataclass(frozen=True)
class PredictorStatistics:
    """Mean and variance of the posterior predictor on each test input."""

    mean: np.ndarray
    variance: np.ndarray

    def accuracy(self, y) -> Estimate:
        """Classification accuracy of the mean predictor, mean_x 1[sign⟨f(x)⟩ = y(x)], with its SE."""
        y = arguments.array("y", y, shape=self.mean.shape)
        return mean_estimate((np.sign(self.mean) == np.sign(y)).astype(float))

    def generalisation_error(self, y) -> Estimate:
        """ε_g = E_x[(⟨f(x)⟩ − y(x))²] + E_x[⟨δf(x)²⟩], with its standard error over test inputs."""
        y = arguments.array("y", y, shape=self.mean.shape)
        return mean_estimate((self.mean - y) ** 2 + self.variance)


def factor(U) -> np.ndarray:
    """A square factor R with U = R Rᵀ for a symmetric positive-semidefinite U (its eigenvalues within round-off
    below 0 are clipped to 0; pruned order parameters are singular, so no Cholesky here)."""
    values, vectors = arguments.semidefinite_eigh("U", U)
    return vectors * np.sqrt(np.clip(values, 0.0, None))


def lifted_features(X, R):
    """Φ = X(I ⊗ R) (P, N0·𝓗) from the path features X (P, N0, 𝓗) and a factor R of U = RRᵀ: the renormalised
    kernel is K(U) = ΦΦᵀ, Σ_{i,ab} X^μ_{ia} U_ab X^ν_{ib}, by one product of BLAS size."""
    return (X @ R).reshape(X.shape[0], -1)


def principal_components(K=None, *, features=None) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues, descending; unit eigenvectors as columns), all P of them, of a kernel K = ΦΦᵀ (P × P): from the
    SVD of the features Φ where they are given (K never formed, so its small eigenvalues keep Φ's precision instead of
    K's; beyond Φ's rank they are 0), else from the symmetric K itself. Within a repeated eigenvalue (the null space
    beyond Φ's rank) the eigenvectors are one basis of many: only sums over it are defined."""
    if features is not None:
        # all P left vectors: the complete ones only where Φ has fewer columns than rows (else they are all P)
        vectors, singular, _ = np.linalg.svd(features, full_matrices=features.shape[1] < features.shape[0])
        values = np.zeros(vectors.shape[0])
        values[:singular.size] = singular**2
        return values, vectors
    values, vectors = np.linalg.eigh(0.5 * (K + K.T))
    return values[::-1], vectors[:, ::-1]


def predictor_statistics(U, X_train, y_train, X_test, temperature: float, *, space: str = "auto",
                         backend=None) -> PredictorStatistics:
    """⟨f(x)⟩ and ⟨δf(x)²⟩ on the test features X_test (Q, N0, 𝓗) given training X_train (P, N0, 𝓗), computed on
    ``backend`` (numpy by default), returned on the host."""
    be = arguments.backend(backend)
    xp = be.xp
    X_train = arguments.array("X_train", X_train, be, ndim=3)
    _, N0, paths = X_train.shape
    X_test = arguments.array("X_test", X_test, be, shape=(None, N0, paths))
    y = arguments.array("y_train", y_train, be, shape=(X_train.shape[0],))
    temperature = arguments.positive("temperature", temperature)
    space = arguments.one_of("space", space, SPACES)
    R = factor(U)
    if R.shape[0] != paths:
        raise ValueError(f"U is {R.shape[0]}×{R.shape[0]} but the features have {paths} paths")
    R = be.asarray(R)
    Phi, phi = lifted_features(X_train, R), lifted_features(X_test, R)
    P, D = Phi.shape
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused by `statistics`, in one line
        if space == "feature" or (space == "auto" and D < P):
            LB = lower_cholesky(be, add_to_diagonal(be, Phi.T @ Phi, temperature))
            mean = phi @ cholesky_solve(be, LB, Phi.T @ y)
            W = be.solve_triangular(LB, phi.T, lower=True, check_finite=False)
            variance = temperature * xp.sum(W * W, axis=0)
        else:
            return kernel_statistics(be, Phi @ Phi.T, Phi @ phi.T, xp.sum(phi * phi, axis=1), y, temperature,
                                     "X_test")
    return statistics(be.to_numpy(mean), be.to_numpy(variance), "X_test")


def kernel_statistics(be, K, k, kappa, y, temperature: float, inputs: str) -> PredictorStatistics:
    """The predictor from kernels: ⟨f(x)⟩ = kᵀ(K + T·I)⁻¹y and ⟨δf(x)²⟩ = κ − |L⁻¹k|² with L the Cholesky factor of
    K + T·I, for the training kernel K (P, P; overwritten), k (P, Q) between training and test inputs and the test
    inputs' prior variances κ (Q,), all on ``be``; `statistics` names ``inputs`` where float64 overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        L = lower_cholesky(be, add_to_diagonal(be, K, temperature))
        mean = k.T @ cholesky_solve(be, L, y)
        W = be.solve_triangular(L, k, lower=True, check_finite=False)
        variance = kappa - be.xp.sum(W * W, axis=0)
    return statistics(be.to_numpy(mean), be.to_numpy(variance), inputs)


def statistics(mean: np.ndarray, variance: np.ndarray, inputs: str) -> PredictorStatistics:
    """`PredictorStatistics` of a computed mean and variance (the variance's round-off below 0 clipped), refused in
    one line naming the test ``inputs`` where float64 overflowed (an infinite variance, or ∞ − ∞ that clipping
    would turn into 0)."""
    with np.errstate(invalid="ignore"):
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(variance))):
            raise ValueError(f"{inputs} is too large: the predictor's mean or variance overflows float64 there "
                             f"(rescale the inputs)")
    return PredictorStatistics(mean=mean, variance=np.clip(variance, 0.0, None))
