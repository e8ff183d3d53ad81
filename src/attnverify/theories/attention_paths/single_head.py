"""Back-propagating kernel renormalization for one head per layer (Li & Sompolinsky, PRX 11, 031059, 2021).

With H_ℓ = 1 every order parameter is a scalar and the kernel is U_1 K_0. In the ratio variables
u_a = U_a/σ_a², u_ℓ = U_ℓ/(σ_ℓ² U_{ℓ+1}) the entropy is Σ_m n_m (u_m − ln u_m) + const, and
stationarity gives u_m = 1 − s/n_m with s = U_1 E'(U_1), hence the single scalar equation

    U_1 = σ_a² Π_ℓ σ_ℓ² · Π_{m=0}^{L} (1 − U_1 E'(U_1)/n_m),
    E(U) = Σ_i ln(U λ_i + T) + Σ_i z_i²/(U λ_i + T),   K_0 = V diag(λ) Vᵀ, z = VᵀY.

This module solves it in the eigenbasis of K_0 by bracketing and Brent's method: an independent
route to the H = 1 saddle point, against which the matrix solver is checked (spec §2.2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from ...base import arguments


@dataclass(frozen=True)
class ScalarRenormalization:
    """U_1 (the kernel's scale), the ratio variables u_0..u_L (u_L is u_a) and U_a;
    ``error_estimate`` is the round-off error of U_1 (noise of the residual over its slope);
    ``data_sensitivity`` the largest first-order change of U_1 under a change δK_0 of the kernel of
    Frobenius norm ‖δK_0‖_F = ‖K_0‖₂: ‖∂F/∂K_0‖_F ‖K_0‖₂ / |∂F/∂U_1| for the equation F = 0 below, so
    that a float64 route exact for a kernel off by ε‖K_0‖₂ in that norm carries ε times it (LAPACK's
    worst-case backward error of a Cholesky factor or an eigendecomposition is a modest multiple of ε·P
    times ‖K_0‖; a budget of ε per route assumes the typical, not that worst case)."""

    order_parameter: float
    ratios: tuple[float, ...]
    readout_order_parameter: float
    action: float
    error_estimate: float
    data_sensitivity: float


def _energy_terms(K0, y, temperature):
    eigenvalues, vectors = arguments.semidefinite_eigh("K0", K0)
    y = arguments.array("y", y, shape=(K0.shape[0],))
    # Eigenvalues within round-off of zero (|λ| ≤ P·eps·λ_max) are zero: K_0 = X Xᵀ has rank ≤ N0, and
    # the noise of a float64 null eigenvalue would enter U E'(U) amplified by 1/T².
    floor = K0.shape[0] * np.finfo(float).eps * max(eigenvalues.max(), 0.0)
    return np.where(eigenvalues > floor, eigenvalues, 0.0), (vectors.T @ y) ** 2


def scalar_renormalization(K0, y, *, depth: int, width, temperature: float, prior_var=1.0) -> ScalarRenormalization:
    """The H = 1 saddle point of a depth-L network with path kernel K0 (= C_{11}, P × P).

    width = N or (n_0, …, n_L); prior_var = σ² or (σ_1², …, σ_L², σ_a²)."""
    depth = arguments.integer("depth", depth, 1)
    arguments.fits_in_memory("depth", 10 * 8 * (depth + 1), "the widths, prior variances and ratios of its "
                             "depth + 1 layers (about 10 arrays of depth + 1 float64 at once)", value=depth)
    n = np.array(arguments.positives("width", width, depth + 1, "(n_0, …, n_L)"))
    s2 = np.array(arguments.positives("prior_var", prior_var, depth + 1, "(σ_1², …, σ_L², σ_a²)"))
    temperature = arguments.positive("temperature", temperature)
    lam, z2 = _energy_terms(K0, y, temperature)
    T, scale = float(temperature), float(np.prod(s2))

    def slope(U):  # U E'(U); d² beyond float64 (huge eigenvalues of K0) makes its term 0, its limit
        d = U * lam + T
        with np.errstate(over="ignore"):
            return float(np.sum(U * lam / d) - np.sum(z2 * U * lam / d**2))

    def ratios(U):
        return 1.0 - slope(U) / n

    def residual(U):
        return np.log(U) - np.log(scale) - np.sum(np.log(ratios(U)))

    def action(U):
        u = ratios(U)
        d = U * lam + T
        return float(np.sum(np.log(d)) + np.sum(z2 / d) + np.sum(n * (u - np.log(u) - np.log(s2))))

    # Bracket the roots on a logarithmic grid where every ratio stays positive; keep the one of
    # smallest action (the saddle point is the minimum of S).
    grid = scale * np.logspace(-12, 12, 2401)
    with np.errstate(over="ignore", invalid="ignore"):  # where U·λ overflows the ratios are NaN: not valid
        valid = [U for U in grid if np.all(ratios(U) > 0)]
        if len(valid) < 2:
            raise ValueError("no order parameter keeps every ratio 1 − s/n_m positive; widths too small for this task")
        values = [residual(U) for U in valid]
    roots = [brentq(residual, a, b, xtol=1e-15 * b, rtol=1e-15, maxiter=500)
             for a, b, fa, fb in zip(valid, valid[1:], values, values[1:])
             if np.sign(fa) != np.sign(fb) and b / a < 1.1]
    if not roots:
        raise ValueError("no root of the scalar saddle-point equation was bracketed")
    best = min(roots, key=action)
    u = ratios(best)
    d = best * lam + T
    with np.errstate(over="ignore"):
        magnitude = np.sum(best * lam / d) + np.sum(z2 * best * lam / d**2)  # terms cancelling in U E'(U)
    noise = 4 * np.finfo(float).eps * (abs(np.log(best)) + np.sum(magnitude / (n * u)) + np.sum(np.abs(np.log(u))))
    h = 1e-6 * best
    slope_of_residual = abs(residual(best + h) - residual(best - h)) / (2 * h)
    return ScalarRenormalization(order_parameter=float(best), ratios=tuple(float(v) for v in u),
                                 readout_order_parameter=float(s2[-1] * u[-1]), action=action(best),
                                 error_estimate=float(noise / slope_of_residual),
                                 data_sensitivity=_data_sensitivity(best, lam, z2, T, n, u, slope_of_residual))


def _data_sensitivity(U: float, lam: np.ndarray, z2: np.ndarray, T: float, n: np.ndarray, u: np.ndarray,
                      slope_of_residual: float) -> float:
    """‖∂F/∂K_0‖_F ‖K_0‖₂ / |∂F/∂U| for F(U) = ln U − ln Πσ² − Σ_m ln(1 − s/n_m), s = U E'(U), at the root U.

    With G = U K_0 + T I, A = G⁻¹ and r = A Y, s = Tr(A U K_0) − rᵀ U K_0 r = P − T Tr A − YᵀAY + T rᵀr, so
    ∂s/∂K_0 = U (T A² + r rᵀ − T (r (Ar)ᵀ + (Ar) rᵀ)) and ∂F/∂K_0 = −Σ_m ∂s/∂K_0 · ∂ln u_m/∂s =
    Σ_m ∂s/∂K_0 / (n_m u_m). The Frobenius norm is that of the same matrix in K_0's eigenbasis, where A is
    diag(1/d) (d = Uλ + T), r is z/d and Ar is z/d²; its entries z_i z_j (…) enter squared, so z² suffices."""
    with np.errstate(all="ignore"):  # beyond float64 (or a flat residual): inf, no budget
        d = U * lam + T
        w, v = 1.0 / d, 1.0 / d**2  # r = z·w, Ar = z·v
        # off the diagonal U z_i z_j (w_i w_j − T (w_i v_j + v_i w_j)); on it U (T v_i + z_i² (w_i² − 2 T w_i v_i))
        pair = np.outer(w, w) - T * (np.outer(w, v) + np.outer(v, w))
        off = U**2 * np.outer(z2, z2) * pair**2
        diagonal = U * (T * v + z2 * (w**2 - 2 * T * w * v))
        norm = np.sqrt(np.sum(off) - np.sum(np.diag(off)) + np.sum(diagonal**2))
        sensitivity = float(np.sum(1.0 / (n * u)) * norm * max(float(lam.max()), 0.0) / slope_of_residual)
    return sensitivity if np.isfinite(sensitivity) else float("inf")
