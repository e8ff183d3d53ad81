"""The action of a declared saddle-point theory on data: S = ½E(U_K) + 𝓛(U), its gradient and its exact Hessian,
in the solver's coordinates θ.

θ keeps every order parameter positive definite by construction: a positive scalar q = e^θ, a matrix U = R Rᵀ with
R lower triangular and a log-parametrised diagonal. Gradients and Hessians are first formed over the independent
entries u (the coordinates of [`SaddlePointAction`][attnverify.saddle.declaration.SaddlePointAction]: entropy from
sympy, energy E = ln det(K + T·I) + Yᵀ(K + T·I)⁻¹Y from `attnverify.numerics.kernel_energy`), then chained to θ:

    ∂S/∂θ = Jᵀ g,   ∂²S/∂θ∂θ' = Jᵀ H J + Σ_k g_k ∂²u_k/∂θ∂θ',   J = ∂u/∂θ,

exactly (no finite differences). At a stationary point g = 0, so the Hessian over u decides whether it is a minimum.
Everything is divided by the width N (S = O(N)), as the saddle-point equations are read at that scale.
"""

from __future__ import annotations

import functools

import numpy as np

from ..numerics.symmetric import entry_gradient, entry_weights, gradient_matrix, triangle
from .declaration import OrderParameter, SaddlePointAction
from .term import entry_slices


class Parametrisation:
    """θ ↔ u for the order parameters, with the Jacobian J = ∂u/∂θ and the second-order term of the chain rule."""

    def __init__(self, order_parameters: tuple[OrderParameter, ...]):
        self.order_parameters = order_parameters
        self.size = sum(op.count for op in order_parameters)

    def _blocks(self):
        yield from zip(self.order_parameters, entry_slices(self.order_parameters).values())

    def theta(self, entries: np.ndarray) -> np.ndarray:
        """θ of the entries u (each order parameter positive definite)."""
        out = np.empty(self.size)
        for op, part in self._blocks():
            if op.size == 0:
                out[part] = np.log(entries[part])
            else:
                R = np.linalg.cholesky(op.value(entries[part]))
                R[np.diag_indices(op.size)] = np.log(np.diag(R))
                out[part] = R[triangle(op.size, upper=False)]
        return out

    def factor(self, op: OrderParameter, theta_part: np.ndarray) -> np.ndarray:
        """R (lower, positive diagonal) of a matrix order parameter from its θ."""
        R = np.zeros((op.size, op.size))
        R[triangle(op.size, upper=False)] = theta_part
        R[np.diag_indices(op.size)] = np.exp(np.diag(R))
        return R

    def entries(self, theta: np.ndarray) -> np.ndarray:
        """u of one θ (`entries_each` of a batch of one)."""
        return self.entries_each(np.asarray(theta, dtype=float)[None, :])[0][0]

    def entries_each(self, thetas: np.ndarray) -> tuple[np.ndarray, dict]:
        """(u (C, n), factors) for a batch of θ (C, n): the entries, as `entries` chain by chain, and each
        order parameter's lower factor by name (R (C, d, d) of U = RRᵀ; √q (C, 1, 1) for a scalar q)."""
        chains = thetas.shape[0]
        out, factors = np.empty_like(thetas), {}
        for op, part in self._blocks():
            if op.size == 0:
                q = np.exp(thetas[:, part])
                out[:, part] = q
                factors[op.name] = np.sqrt(q).reshape(chains, 1, 1)
                continue
            rows, cols = triangle(op.size, upper=False)
            R = np.zeros((chains, op.size, op.size))
            R[:, rows, cols] = thetas[:, part]
            diagonal = np.arange(op.size)
            R[:, diagonal, diagonal] = np.exp(R[:, diagonal, diagonal])
            upper_rows, upper_cols = triangle(op.size)
            out[:, part] = (R @ R.transpose(0, 2, 1))[:, upper_rows, upper_cols]
            factors[op.name] = R
        return out, factors

    def gradient_each(self, thetas: np.ndarray, gradients: np.ndarray, factors: dict) -> np.ndarray:
        """∂S/∂θ (C, n) from g = ∂S/∂u (C, n) for a batch, as `chain` chain by chain: q g for a scalar; for
        U = RRᵀ, ∂S/∂R = 2 G R with G the symmetric matrix of g (g_k on the diagonal, g_k/2 off it), read at R's
        lower entries and times R_rr on the diagonal (θ = ln R_rr there)."""
        out = np.empty_like(gradients)
        for op, part in self._blocks():
            if op.size == 0:
                out[:, part] = np.exp(thetas[:, part]) * gradients[:, part]
                continue
            d, R = op.size, factors[op.name]
            G = gradient_matrix(gradients[:, part], d)
            rows, cols = triangle(d, upper=False)
            dR = 2.0 * (G @ R)[:, rows, cols]
            out[:, part] = np.where(rows == cols, dR * R[:, rows, cols], dR)
        return out

    def relative_gradient(self, gradient: np.ndarray, factors: dict) -> np.ndarray:
        """∂S/∂e from g = ∂S/∂u at one point (its factors as `entries_each` gives them): the gradient over the
        independent entries e of a relative change of each order parameter, U → R(I + E)Rᵀ with E symmetric
        (q → q(1 + e) for a scalar), that is the entries of RᵀGR (G the symmetric matrix of g), an off-diagonal
        one counted twice as in g. It does not change when an order parameter is rescaled (U → cU sends g to
        g/c), so a tolerance on it means the same at U ~ 10⁸ as at U ~ 10⁻⁸; at U = I it is g."""
        out = np.empty_like(gradient)
        for name, part, rows, cols, double in self._relative_layout:
            R = factors[name][0]
            if rows is None:  # a scalar q = R²: q·g
                out[part] = R[0, 0] ** 2 * gradient[part]
                continue
            out[part] = (R.T @ gradient_matrix(gradient[part], R.shape[0]) @ R)[rows, cols] * double
        return out

    @functools.cached_property
    def _relative_layout(self) -> list:
        """Per order parameter: its name, slice, and for a matrix its triu indices with the weights 2 off the
        diagonal (the entries of RᵀGR as g's); None for a scalar."""
        layout = []
        for op, part in self._blocks():
            if op.size == 0:
                layout.append((op.name, part, None, None, None))
                continue
            rows, cols = triangle(op.size)
            layout.append((op.name, part, rows, cols, entry_weights(op.size)))
        return layout

    def chain(self, theta: np.ndarray, gradient: np.ndarray, hessian: np.ndarray | None = None):
        """(∂S/∂θ, ∂²S/∂θ∂θ' or None) from g = ∂S/∂u and H = ∂²S/∂u∂u' at θ.

        For U = R Rᵀ and θ_t ↔ R_rc (θ = ln R_rr on the diagonal, scale s_t = R_rr there, else 1):
        ∂U/∂θ_t = s_t (E_rc Rᵀ + R E_cr), and Σ_k g_k ∂²u_k/∂θ_t∂θ_s = 2 s_t s_s δ_cc' G_rr' with G = ∂S/∂U
        (the symmetric matrix of g: g_k on the diagonal, g_k/2 off it), plus ∂S/∂θ_t on the diagonal of R
        (∂²e^θ = e^θ)."""
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
            lrows, lcols = triangle(d, upper=False)
            urows, ucols = triangle(d)
            scale = np.where(lrows == lcols, R[lrows, lcols], 1.0)
            E = np.zeros((lrows.size, d, d))
            E[np.arange(lrows.size), lrows, lcols] = scale
            dU = E @ R.T
            dU = dU + dU.transpose(0, 2, 1)
            J[part, part] = dU[:, urows, ucols].T
            g = gradient[part]
            G = gradient_matrix(g, d)
            term = 2.0 * np.outer(scale, scale) * (lcols[:, None] == lcols[None, :]) * G[lrows[:, None], lrows[None, :]]
            diagonal = lrows == lcols
            term[diagonal, diagonal] += (g @ J[part, part])[diagonal]
            second[part, part] = term
        grad_theta = J.T @ gradient
        if hessian is None:
            return grad_theta, None
        full = J.T @ hessian @ J + second
        return grad_theta, 0.5 * (full + full.T)


ROUNDOFF_SAMPLES = 2
"""Reordered factorisations per solution (`NumericAction.roundoff_gradients`): a single sample of a round-off
difference can fall near zero by chance (where the kernel order parameter has one entry, the sample is one number);
the larger of two falls below a tenth of its typical size about a hundred times less often."""


class NumericAction:
    """S/N over θ for one declaration, one data set, parameter values and temperature: ``(value, gradient)`` on
    call (+inf where θ leaves float64 or K + T·I has no Cholesky factor), ``hessian(θ)``, ``residual(θ)`` =
    max |∂(S/N)/∂e| (the saddle-point equations in the order parameters' relative entries), and ``parts(θ)``."""

    def __init__(self, declaration: SaddlePointAction, energy, parameters: tuple, *, with_energy: bool = True):
        self.declaration, self.energy, self.parameters = declaration, energy, parameters
        self.with_energy = with_energy
        self.parametrisation = Parametrisation(declaration.order_parameters)
        self.scale = declaration.scale(parameters)
        self.kernel_part = entry_slices(declaration.order_parameters)[declaration.kernel.name]
        self._rows, self._cols = triangle(max(declaration.kernel.size, 1))
        self._weight = entry_weights(max(declaration.kernel.size, 1))
        self.evaluations = 0
        self._last = self._last_hessian = None

    def kernel_factor(self, entries: np.ndarray) -> np.ndarray:
        """The factor R of the kernel order parameter at the entries u (U = R Rᵀ; √q for a scalar q)."""
        op = self.declaration.kernel
        value = op.value(entries[self.kernel_part])
        return np.array([[np.sqrt(value)]]) if op.size == 0 else np.linalg.cholesky(value)

    def parts(self, theta: np.ndarray):
        """(E, 𝓛, u, g = ∂S/∂u, factors) at θ (S = ½E + 𝓛; the factors of the order parameters, as
        `Parametrisation.entries_each` gives them; the last θ's are kept)."""
        if self._last is not None and np.array_equal(self._last[0], theta):
            return self._last[1]
        self.evaluations += 1
        entries, factors = self.parametrisation.entries_each(np.asarray(theta, dtype=float)[None, :])
        u = entries[0]
        L, g = self.declaration.entropy_value_and_gradient(u, self.parameters)
        E = 0.0
        if self.with_energy:
            E, G = self.energy(self.kernel_factor(u))
            g = g.copy()
            g[self.kernel_part] += 0.5 * entry_gradient(G)
        parts = (E, L, u, g, factors)
        self._last = (np.array(theta, dtype=float), parts)
        return parts

    def roundoff_gradients(self, theta: np.ndarray) -> np.ndarray:
        """(`ROUNDOFF_SAMPLES`, n): ∂S/∂u at θ with the energy factorised in other elimination orders (`reordered`
        of the energy) less ∂S/∂u as `parts` computes it: zero in exact arithmetic, so samples of the round-off of
        the gradient, which the factorisation's condition number (up to ‖K‖/T) amplifies; the entropy's small
        matrices add none of note. Zeros without the energy; +inf where a reordered factorisation fails (K + T·I
        singular in float64)."""
        u = self.parts(theta)[2]
        out = np.zeros((ROUNDOFF_SAMPLES, self.parametrisation.size))
        if self.with_energy:
            R = self.kernel_factor(u)
            G = self.energy(R)[1]
            for sample, row in enumerate(out):
                try:
                    reordered = self.energy.reordered(R, sample)[1]
                except np.linalg.LinAlgError:
                    return np.full_like(out, np.inf)
                row[self.kernel_part] = 0.5 * entry_gradient(reordered - G)
        return out

    def __call__(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        with np.errstate(over="ignore"):
            if not np.all(np.isfinite(np.exp(theta))):
                return np.inf, np.zeros_like(theta)
        try:
            E, L, u, g, factors = self.parts(theta)
        except (np.linalg.LinAlgError, ValueError):  # K + T·I without a factor, or 𝓛 undefined (NaN): S undefined
            return np.inf, np.zeros_like(theta)
        gradient = self.parametrisation.gradient_each(np.asarray(theta, dtype=float)[None, :], g[None, :], factors)[0]
        return (0.5 * E + L) / self.scale, gradient / self.scale

    def residual(self, theta: np.ndarray) -> float:
        """max |∂(S/N)/∂e|: the saddle-point equations in the relative entries e of the order parameters
        (`Parametrisation.relative_gradient`), which no rescaling of an order parameter changes."""
        _, _, _, g, factors = self.parts(theta)
        return float(np.max(np.abs(self.parametrisation.relative_gradient(g, factors))) / self.scale)

    def entries_hessian(self, theta: np.ndarray) -> np.ndarray:
        """∂²(S/N)/∂u∂u' at θ (the last θ's is kept: a rejected trust-region step asks again at the same point, and
        the energy's Hessian costs O(𝓗² P³) in the kernel space)."""
        if self._last_hessian is not None and np.array_equal(self._last_hessian[0], theta):
            return self._last_hessian[1].copy()
        u = self.parts(theta)[2]
        H = self.declaration.entropy_hessian(u, self.parameters)
        if self.with_energy:
            HE = self.energy.hessian(self.kernel_factor(u))
            # Σ_abcd (B_k)_ab HE_abcd (B_l)_cd for B_k = E_ij + E_ji (E_ii): HE is symmetric within each pair
            block = HE[self._rows, self._cols][:, self._rows, self._cols] * np.outer(self._weight, self._weight)
            H[self.kernel_part, self.kernel_part] += 0.5 * block
        H = H / self.scale
        self._last_hessian = (np.array(theta, dtype=float), H)
        return H.copy()

    def hessian(self, theta: np.ndarray) -> np.ndarray:
        g = self.parts(theta)[3]
        return self.parametrisation.chain(theta, g / self.scale, self.entries_hessian(theta))[1]
