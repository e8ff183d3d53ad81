r"""What a solved saddle-point theory predicts on test data: the posterior predictor's mean and variance, the
generalisation error, and how the renormalised kernel aligns with the labels (Tiberi et al. 2024, figure 2d).

With the renormalised kernel $K(U) = \sum_{ab} U_{ab} C_{ab}$ on the training inputs,
$k(x) = \sum_{ab} U_{ab} C_{ab}(\cdot, x)$ and $\kappa(x) = \sum_{ab} U_{ab} C_{ab}(x, x)$:

$$
\langle f(x)\rangle = k(x)^\top (K + T \cdot I)^{-1} Y, \qquad
\langle \delta f(x)^2\rangle = \kappa(x) - k(x)^\top (K + T \cdot I)^{-1} k(x),
$$

by Cholesky solves (never an inverse), returned as `PredictorStatistics`, whose ``accuracy(y_test)`` and
``generalisation_error(y_test)`` take the test labels. The kernels are given as arrays: ``C``
$(\mathcal{H}, \mathcal{H}, P, P)$ on the training inputs, ``C_test`` $(\mathcal{H}, \mathcal{H}, Q, P)$ between test
and training inputs and ``C_test_diagonal`` $(\mathcal{H}, \mathcal{H}, Q)$; for a scalar kernel order parameter
$(P, P)$, $(Q, P)$ and $(Q,)$. With features instead (``X``, ``X_test``: $(P, N_0, \mathcal{H})$ or $(P, N_0)$),
$C_{ab}(x, x') = \sum_i X_{ia}(x) X_{ib}(x')$.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..base import arguments, blas
from ..base.backend import get_backend
from ..numerics.kernel_predictor import (PredictorStatistics, factor, kernel_statistics, lifted_features,
                                         predictor_statistics, principal_components)
from .declaration import SaddlePointAction
from .solve import Solution, training_data


def _matrix(declaration: SaddlePointAction, solution: Solution) -> np.ndarray:
    value = solution.order_parameters[declaration.kernel.name]
    return np.array([[value]]) if declaration.kernel.size == 0 else np.asarray(value)


def _features(X, name: str = "X") -> np.ndarray:
    X = arguments.array(name, X)
    return X[:, :, None] if X.ndim == 2 else X


def _kernels(data: Mapping[str, Any], U: np.ndarray):
    """K(U) on the training inputs, from the kernels C or the features X."""
    if "X" in data:
        Phi = lifted_features(_features(data["X"]), factor(U))  # K(U) = ΦΦᵀ, one product of BLAS size
        return Phi @ Phi.T
    C = arguments.array("C", data["C"])
    return np.einsum("ab,abpq->pq", U, C[None, None] if C.ndim == 2 else C)


def predict(declaration: SaddlePointAction, solution: Solution, data: Mapping[str, Any],
            test: Mapping[str, Any]) -> PredictorStatistics:
    r"""$\langle f(x)\rangle$ and $\langle \delta f(x)^2\rangle$ at the solution's order parameters, on ``test``
    (``X_test``, or ``C_test`` and ``C_test_diagonal``), given the training ``data`` the solution was solved on: from
    kernels by `attnverify.numerics.kernel_predictor.kernel_statistics`, from features by
    `attnverify.numerics.kernel_predictor.predictor_statistics` (in the feature space where it is smaller).
    Its factorisations are $P \times P$, small as the solver's: one BLAS thread (`attnverify.base.blas`)."""
    with blas.threads(1):
        return _predict(declaration, solution, data, test)


def _solved(declaration: SaddlePointAction, solution: Solution) -> None:
    """Refuse a declaration that is not one or a solution that is not of it, by name."""
    if not isinstance(declaration, SaddlePointAction):
        raise TypeError(f"declaration must be a SaddlePointAction, got {type(declaration).__name__}")
    if not isinstance(solution, Solution):
        raise TypeError(f"solution must be a Solution (from attnverify.saddle.solve), got {type(solution).__name__}")
    if declaration.kernel.name not in solution.order_parameters:
        raise ValueError(f"solution must be of this declaration, whose kernel order parameter is "
                         f"{declaration.kernel.name}; the solution has {', '.join(solution.order_parameters)}")


def _predict(declaration: SaddlePointAction, solution: Solution, data: Mapping[str, Any],
             test: Mapping[str, Any]) -> PredictorStatistics:
    _solved(declaration, solution)
    if solution.temperature is None:
        raise ValueError("solution must be a solve's (with a temperature), not the GP point's")
    return _predict_at(_matrix(declaration, solution), solution.temperature, data, test)


def predict_at(U, temperature: float, data: Mapping[str, Any], test: Mapping[str, Any]) -> PredictorStatistics:
    r"""[`predict`][attnverify.saddle.predict.predict] at the kernel order parameter's value ``U`` (a matrix; $[[q]]$
    for a scalar $q$) and ``temperature`` rather than at a solution's: the predictor of the renormalised kernel $K(U)$
    at any point, e.g. each node of the action's quadrature
    ([`kernel_average`][attnverify.saddle.beyond.Prediction.kernel_average])."""
    with blas.threads(1):
        return _predict_at(np.atleast_2d(np.asarray(U, dtype=float)), arguments.positive("temperature", temperature),
                           data, test)


def _predict_at(U: np.ndarray, temperature: float, data: Mapping[str, Any],
                test: Mapping[str, Any]) -> PredictorStatistics:
    training_data(data)
    wanted = ("X_test",) if "X" in data else ("C_test", "C_test_diagonal")
    if not isinstance(test, Mapping) or sorted(test) != sorted(wanted):
        labels = (" (the test labels go to the result's generalisation_error(y) and accuracy(y))"
                  if isinstance(test, Mapping) and any(str(key).startswith("y") for key in test) else "")
        raise ValueError(f"test must be a dict with {' and '.join(wanted)} and nothing else (the training data have "
                         f"{'features X' if 'X' in data else 'kernels C'}), got "
                         f"{sorted(map(str, test)) if isinstance(test, Mapping) else type(test).__name__}{labels}")
    if "X" in data:
        X = _features(data["X"])
        X_test = arguments.array("X_test", _features(test["X_test"], "X_test"), shape=(None, *X.shape[1:]))
        return predictor_statistics(U, X, data["y"], X_test, temperature)
    K = _kernels(data, U)
    H, P = U.shape[0], K.shape[0]
    plain = H == 1 and np.ndim(test["C_test"]) == 2  # one path: (Q, P) and (Q,), as the training C may be (P, P)
    Ct = arguments.array("C_test", test["C_test"], shape=(None, P) if plain else (H, H, None, P))
    Q = Ct.shape[-2]
    Cd = arguments.array("C_test_diagonal", test["C_test_diagonal"], shape=(Q,) if plain else (H, H, Q))
    Ct, Cd = (Ct[None, None], Cd[None, None]) if plain else (Ct, Cd)
    with np.errstate(over="ignore", invalid="ignore"):
        k, kappa = np.einsum("ab,abqp->qp", U, Ct), np.einsum("ab,abq->q", U, Cd)
    negative = np.flatnonzero(kappa < -1e-12 * np.max(np.abs(kappa), initial=0.0))
    if negative.size:
        raise ValueError(f"C_test_diagonal must be a kernel's diagonal: the prior variance Σ U_ab C_ab(x, x) of test "
                         f"input {int(negative[0])} is {kappa[negative[0]]:.3g} < 0")
    y = arguments.array("y", data["y"], shape=(K.shape[0],))
    return kernel_statistics(get_backend("numpy"), K, k.T, kappa, y, temperature, "C_test")


def kernel_alignment(declaration: SaddlePointAction, solution: Solution,
                     data: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    r"""The renormalised kernel's principal components against the labels: its eigenvalues (descending) and the
    fraction of $\lvert Y\rvert^2$ along each eigenvector, $(v^\top Y)^2/\lvert Y\rvert^2$ (figure 2d of Tiberi et
    al.: the renormalisation moves the label's weight onto the leading components). From features X, the SVD of
    $\Phi$ with $K = \Phi\Phi^\top$ (`attnverify.numerics.kernel_predictor.principal_components`)."""
    _solved(declaration, solution)
    training_data(data)
    U = _matrix(declaration, solution)
    if "X" in data:
        values, vectors = principal_components(features=lifted_features(_features(data["X"]), factor(U)))
    else:
        values, vectors = principal_components(_kernels(data, U))
    y = arguments.array("y", data["y"], shape=(values.size,))
    largest = float(np.max(np.abs(y)))
    if largest == 0.0:
        raise ValueError("y must not be all zeros: the fractions of |Y|² along the kernel's eigenvectors need |Y| > 0")
    unit = y / largest  # (vᵀY)²/|Y|² is unchanged by Y's scale; rescaled, neither overflows nor underflows
    return values, (vectors.T @ unit) ** 2 / float(unit @ unit)
