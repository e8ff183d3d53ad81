"""The action of a declared saddle-point theory on data: S = ½E(U_K) + 𝓛(U), its gradient and its exact Hessian,
in the solver's coordinates θ.

θ keeps every order parameter positive definite by construction: a positive scalar q = e^θ, a matrix U = R Rᵀ with
R lower triangular and a log-parametrised diagonal. Gradients and Hessians are first formed over the independent
entries u (the coordinates of :class:`~attnverify.saddle.declaration.SaddlePointAction`: entropy from sympy, energy
E = ln det(K + T·I) + Yᵀ(K + T·I)⁻¹Y from :mod:`attnverify.numerics.kernel_energy`), then chained to θ:

    ∂S/∂θ = Jᵀ g,   ∂²S/∂θ∂θ' = Jᵀ H J + Σ_k g_k ∂²u_k/∂θ∂θ',   J = ∂u/∂θ,

exactly (no finite differences). At a stationary point g = 0, so the Hessian over u decides whether it is a minimum.
Everything is divided by the width N (S = O(N)), as the saddle-point equations are read at that scale.
"""

from __future__ import annotations

import numpy as np

from ..numerics.kernel_energy import entry_gradient, symmetric_basis
from .declaration import OrderParameter, SaddlePointAction


class Parametrisation:
    """θ ↔ u for the order parameters, with the Jacobian J = ∂u/∂θ and the second-order term of the chain rule."""

    def __init__(self, order_parameters: tuple[OrderParameter, ...]):
        self.order_parameters = order_parameters
        self.size = sum(op.count for op in order_parameters)

    def _blocks(self):
        start = 0
        for op in self.order_parameters:
            yield op, slice(start, start + op.count)
            start += op.count

    def theta(self, entries: np.ndarray) -> np.ndarray:
        """θ of the entries u (each order parameter positive definite)."""
        out = np.empty(self.size)
        for op, part in self._blocks():
            if op.size == 0:
                out[part] = np.log(entries[part])
            else:
                R = np.linalg.cholesky(op.value(entries[part]))
                R[np.diag_indices(op.size)] = np.log(np.diag(R))
                out[part] = R[np.tril_indices(op.size)]
        return out

    def factor(self, op: OrderParameter, theta_part: np.ndarray) -> np.ndarray:
        """R (lower, positive diagonal) of a matrix order parameter from its θ."""
        R = np.zeros((op.size, op.size))
        R[np.tril_indices(op.size)] = theta_part
        R[np.diag_indices(op.size)] = np.exp(np.diag(R))
        return R

    def entries(self, theta: np.ndarray) -> np.ndarray:
        out = np.empty(self.size)
        for op, part in self._blocks():
            if op.size == 0:
                out[part] = np.exp(theta[part])
            else:
                R = self.factor(op, theta[part])
                out[part] = (R @ R.T)[np.triu_indices(op.size)]
        return out

    def chain(self, theta: np.ndarray, gradient: np.ndarray, hessian: np.ndarray | None = None):
        """(∂S/∂θ, ∂²S/∂θ∂θ' or None) from g = ∂S/∂u and H = ∂²S/∂u∂u' at θ."""
        n = self.size
        J = np.zeros((n, n))
        second = np.zeros((n, n))
        for op, part in self._blocks():
            if op.size == 0:
                q = float(np.exp(theta[part][0]))
                J[part, part] = q
                second[part, part] = gradient[part][0] * q
                continue
            d = op.size
            R = self.factor(op, theta[part])
            lrows, lcols = np.tril_indices(d)
            urows, ucols = np.triu_indices(d)
            g = gradient[part]
            # dR/dθ_t is the unit matrix at (r, c), scaled by R_rr on the diagonal (R_rr = e^θ)
            scale = np.where(lrows == lcols, R[lrows, lcols], 1.0)
            for t, (r, c) in enumerate(zip(lrows, lcols)):
                E = np.zeros((d, d))
                E[r, c] = scale[t]
                dU = E @ R.T + R @ E.T
                J[part.start + np.arange(op.count), part.start + t] = dU[urows, ucols]
            # Σ_k g_k ∂²u_k/∂θ_t∂θ_s, θ_t ↔ R_rc, θ_s ↔ R_r'c': a_t a_s δ_cc' g_{min(r,r') max(r,r')}, twice when
            # r = r' (U_rr = Σ_m R_rm²); on the diagonal of R also ∂²R_rr/∂θ² = R_rr, i.e. ∂S/∂θ_t once more
            G = np.zeros((d, d))
            G[urows, ucols] = g
            for t, (r, c) in enumerate(zip(lrows, lcols)):
                for s, (r2, c2) in enumerate(zip(lrows, lcols)):
                    if c == c2:
                        second[part.start + t, part.start + s] += \
                            scale[t] * scale[s] * G[min(r, r2), max(r, r2)] * (2.0 if r == r2 else 1.0)
                if r == c:
                    second[part.start + t, part.start + t] += float(g @ J[part, part.start + t])
        grad_theta = J.T @ gradient
        if hessian is None:
            return grad_theta, None
        full = J.T @ hessian @ J + second
        return grad_theta, 0.5 * (full + full.T)


class NumericAction:
    """S/N over θ for one declaration, one data set, parameter values and temperature: ``(value, gradient)`` on
    call (+inf where θ leaves float64 or K + T·I has no Cholesky factor), ``hessian(θ)``, ``residual(θ)`` =
    max |∂(S/N)/∂u| (the saddle-point equations), and ``parts(θ)``."""

    def __init__(self, declaration: SaddlePointAction, energy, parameters: tuple, *, with_energy: bool = True):
        self.declaration, self.energy, self.parameters = declaration, energy, parameters
        self.with_energy = with_energy
        self.parametrisation = Parametrisation(declaration.order_parameters)
        self.scale = parameters[declaration.parameters.index(declaration.width)]
        start = 0
        for op in declaration.order_parameters:
            if op is declaration.kernel:
                self.kernel_part = slice(start, start + op.count)
            start += op.count
        self._rows, self._cols, self._basis = symmetric_basis(max(declaration.kernel.size, 1))
        self.evaluations = 0
        self._last = None

    def _kernel_factor(self, entries: np.ndarray) -> np.ndarray:
        op = self.declaration.kernel
        value = op.value(entries[self.kernel_part])
        return np.array([[np.sqrt(value)]]) if op.size == 0 else np.linalg.cholesky(value)

    def parts(self, theta: np.ndarray):
        """(E, 𝓛, u, g = ∂S/∂u) at θ (S = ½E + 𝓛; the last θ's are kept)."""
        if self._last is not None and np.array_equal(self._last[0], theta):
            return self._last[1]
        self.evaluations += 1
        u = self.parametrisation.entries(theta)
        L, g = self.declaration.entropy_value_and_gradient(u, self.parameters)
        E = 0.0
        if self.with_energy:
            E, G = self.energy(self._kernel_factor(u))
            g = g.copy()
            g[self.kernel_part] += 0.5 * entry_gradient(G, self._rows, self._cols)
        parts = (E, L, u, g)
        self._last = (np.array(theta, dtype=float), parts)
        return parts

    def __call__(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        with np.errstate(over="ignore"):
            if not np.all(np.isfinite(np.exp(theta))):
                return np.inf, np.zeros_like(theta)
        try:
            E, L, u, g = self.parts(theta)
        except (np.linalg.LinAlgError, ValueError):  # K + T·I without a factor, or 𝓛 undefined (NaN): S undefined
            return np.inf, np.zeros_like(theta)
        gradient, _ = self.parametrisation.chain(theta, g)
        return (0.5 * E + L) / self.scale, gradient / self.scale

    def residual(self, theta: np.ndarray) -> float:
        return float(np.max(np.abs(self.parts(theta)[3])) / self.scale)

    def entries_hessian(self, theta: np.ndarray) -> np.ndarray:
        """∂²(S/N)/∂u∂u' at θ."""
        _, _, u, _ = self.parts(theta)
        H = self.declaration.entropy_hessian(u, self.parameters)
        if self.with_energy:
            HE = self.energy.hessian(self._kernel_factor(u))
            block = np.einsum("kab,abcd,lcd->kl", self._basis, HE, self._basis)
            H[self.kernel_part, self.kernel_part] += 0.5 * block
        return H / self.scale

    def hessian(self, theta: np.ndarray) -> np.ndarray:
        _, _, _, g = self.parts(theta)
        return self.parametrisation.chain(theta, g / self.scale, self.entries_hessian(theta))[1]
