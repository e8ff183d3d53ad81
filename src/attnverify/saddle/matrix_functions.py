"""ln det U and the entries of U⁻¹ of a declared matrix order parameter, as sympy atoms the solver evaluates by
Cholesky instead of expanding (a symbolic det of a 16 × 16 matrix has 16! terms).

An entropy is a sympy expression in the order parameters' entries u and in these atoms a(u). The declaration
differentiates it over v = (u, a) as if the atoms were free; the chain rule back to u uses the matrix calculus of
U = Σ_k u_k B_k (B_k = E_ij + E_ji, or E_ii on the diagonal) with W = U⁻¹:

    ∂ ln det U/∂u_k = tr(W B_k),            ∂² ln det U/∂u_k∂u_l = −tr(W B_k W B_l),
    ∂W/∂u_k = −W B_k W,                     ∂²W/∂u_k∂u_l = W B_k W B_l W + W B_l W B_k W,

(Magnus & Neudecker, Matrix Differential Calculus, ch. 8), so that with 𝓛_v, 𝓛_vv the generated derivatives and
J = ∂a/∂u:  ∂𝓛/∂u = 𝓛_u + Jᵀ𝓛_a  and  ∂²𝓛/∂u∂u' = 𝓛_uu + 𝓛_ua J + Jᵀ𝓛_au + Jᵀ𝓛_aa J + Σ_m 𝓛_{a_m} ∂²a_m/∂u∂u'.
"""

from __future__ import annotations

import numpy as np
import sympy
from scipy.linalg import cho_solve
from sympy.core.symbol import Str

from ..base.backend import get_backend
from ..numerics.symmetric import triangle


def _name_and_entries(U) -> tuple[str, int, tuple]:
    if not isinstance(U, sympy.MatrixBase) or U.shape[0] != U.shape[1] or U.shape[0] < 1:
        raise TypeError(f"U must be a matrix order parameter (positive_definite(name, n)), got {U!r}"[:200])
    n = U.shape[0]
    rows, cols = triangle(n)
    entries = tuple(U[i, j] for i, j in zip(rows, cols))
    if not all(isinstance(s, sympy.Symbol) for s in entries):
        raise TypeError("U must be a matrix order parameter (positive_definite(name, n)): one symbol per entry")
    return str(entries[0]).rsplit("_", 1)[0], n, entries


def _matrix(n: int, entries: tuple) -> sympy.Matrix:
    """The symmetric n × n matrix of the entries i ≤ j (numpy's triu order)."""
    rows, cols = triangle(n)
    at = {}
    for k, (i, j) in enumerate(zip(rows, cols)):
        at[(i, j)] = at[(j, i)] = entries[k]
    return sympy.Matrix(n, n, lambda i, j: at[(i, j)])


def _position(n: int, entries: tuple, symbol) -> tuple[int, int]:
    rows, cols = triangle(n)
    k = list(entries).index(symbol)
    return int(rows[k]), int(cols[k])


def _inverse_atom(args: tuple, i: int, j: int):
    """(U⁻¹)_ij from a LogDet's arguments (name, n, entries…)."""
    return InverseEntry(args[0], args[1], sympy.Integer(min(i, j)), sympy.Integer(max(i, j)), *args[2:])


class LogDet(sympy.Function):
    """ln det U of a matrix order parameter U; arguments (name, n, U's entries i ≤ j). ``doit()`` expands it
    (for small n: the determinant has n! terms)."""

    @classmethod
    def eval(cls, *args):
        if all(a.is_number for a in args[2:]):  # at numbers: the value itself
            return sympy.log(_matrix(int(args[1]), args[2:]).det())
        return None

    def doit(self, **hints):
        return sympy.log(_matrix(int(self.args[1]), self.entries).det())

    def _eval_derivative(self, s):
        """∂ ln det U/∂u_k = tr(U⁻¹ B_k): (U⁻¹)_rc, twice off the diagonal."""
        if s not in self.entries:
            return sympy.S.Zero
        r, c = _position(int(self.args[1]), self.entries, s)
        return _inverse_atom(self.args, r, c) * (1 if r == c else 2)

    @property
    def matrix_name(self) -> str:
        return str(self.args[0])

    @property
    def entries(self) -> tuple:
        return self.args[2:]

    def _latex(self, printer):
        return rf"\ln\det {printer._print(sympy.Symbol(self.matrix_name))}"

    def _sympystr(self, printer):
        return f"log(det({self.matrix_name}))"


class InverseEntry(sympy.Function):
    """The entry (i, j) of U⁻¹ for a matrix order parameter U; arguments (name, n, i, j, U's entries i ≤ j).
    ``doit()`` expands it by cofactors (for small n)."""

    @classmethod
    def eval(cls, *args):
        if all(a.is_number for a in args[4:]):  # at numbers: the value itself
            return _matrix(int(args[1]), args[4:]).inv(method="ADJ")[int(args[2]), int(args[3])]
        return None

    def doit(self, **hints):
        i, j = self.index
        return _matrix(int(self.args[1]), self.entries).inv(method="ADJ")[i, j]

    def _eval_derivative(self, s):
        """∂(U⁻¹)_ij/∂u_k = −(U⁻¹ B_k U⁻¹)_ij for u_k = U_rc (B_k = E_rc + E_cr, or E_rr)."""
        if s not in self.entries:
            return sympy.S.Zero
        n = int(self.args[1])
        r, c = _position(n, self.entries, s)
        i, j = self.index
        head = (self.args[0], self.args[1])

        def W(a, b):
            return _inverse_atom(head + tuple(self.entries), a, b)
        if r == c:
            return -W(i, r) * W(r, j)
        return -(W(i, r) * W(c, j) + W(i, c) * W(r, j))

    @property
    def matrix_name(self) -> str:
        return str(self.args[0])

    @property
    def index(self) -> tuple[int, int]:
        i, j = int(self.args[2]), int(self.args[3])
        return min(i, j), max(i, j)

    @property
    def entries(self) -> tuple:
        return self.args[4:]

    def _latex(self, printer):
        i, j = self.index
        return rf"({printer._print(sympy.Symbol(self.matrix_name))}^{{-1}})_{{{i}{j}}}"

    def _sympystr(self, printer):
        i, j = self.index
        return f"inv({self.matrix_name})[{i},{j}]"


def log_det(U) -> sympy.Expr:
    r"""$\ln\det U$ of a [`positive_definite`][attnverify.saddle.positive_definite] order parameter, evaluated by
    Cholesky (its derivatives by matrix calculus, see the module docstring), never expanded as a polynomial in the
    entries."""
    name, n, entries = _name_and_entries(U)
    if n == 1:
        return sympy.log(entries[0])
    return LogDet(Str(name), sympy.Integer(n), *entries)


def inverse(U) -> sympy.ImmutableMatrix:
    r"""$U^{-1}$ of a [`positive_definite`][attnverify.saddle.positive_definite] order parameter as a matrix of atoms
    evaluated by Cholesky solves (never the cofactor expansion), symmetric like $U$."""
    name, n, entries = _name_and_entries(U)
    if n == 1:
        return sympy.ImmutableMatrix([[1 / entries[0]]])
    return sympy.ImmutableMatrix(n, n, lambda i, j: InverseEntry(Str(name), sympy.Integer(n), sympy.Integer(min(i, j)),
                                                                 sympy.Integer(max(i, j)), *entries))


def pair_form(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """M_kl = tr(X B_k Y B_l) over the independent entries k, l (i ≤ j, numpy's triu order) of a symmetric
    n × n matrix: tr(X E_ab Y E_cd) = X_da Y_bc, summed over each entry's one or two positions."""
    n = X.shape[0]
    rows, cols = triangle(n)
    F = np.einsum("da,bc->abcd", X, Y)
    F = F + F.transpose(1, 0, 2, 3)
    F = F + F.transpose(0, 1, 3, 2)
    half = np.where(rows == cols, 0.5, 1.0)
    return F[rows, cols][:, rows, cols] * np.outer(half, half)


class MatrixAtoms:
    """The atoms of one matrix order parameter that an entropy uses: ``log_det`` (bool) and the inverse's entries
    ``inverse`` (a tuple of (i, j), i ≤ j), in that order as the auxiliary variables a."""

    def __init__(self, size: int, log_det_used: bool, inverse_entries: tuple):
        self.size, self.log_det, self.inverse = size, log_det_used, tuple(inverse_entries)
        self.count = int(log_det_used) + len(self.inverse)
        self.rows, self.cols = triangle(size)
        self._weight = np.where(self.rows == self.cols, 1.0, 2.0)
        self._identity = np.eye(size)

    def evaluate(self, U: np.ndarray):
        """(a, J = ∂a/∂u, W = U⁻¹) at U (as `evaluate_each`, with W by LAPACK's solves against the Cholesky factor:
        this is the solver's point, whose gradient must stay accurate down to its tolerance where U is ill-conditioned,
        more than the batched inverse R⁻ᵀR⁻¹ gives); LinAlgError where U has no Cholesky factor (outside the
        domain)."""
        R = np.linalg.cholesky(U)
        a, J, W = self._each(R[None], cho_solve((R, True), self._identity)[None])
        return a[0], J[0], W[0]

    def evaluate_each(self, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(a (C, count), J = ∂a/∂u (C, count, k)) for a batch of U = RRᵀ given by their lower Cholesky factors R
        (C, n, n); NaN for a factor that is not finite or whose diagonal is not above 1e-150 (U there is singular to
        float64's range: what uses this, HMC on the action, gives such a chain no weight)."""
        return self._each(R)[:2]

    def _each(self, R: np.ndarray, W: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(a, J, W = U⁻¹) per factor of the batch: ln det U = 2 Σ ln R_ii and its gradient W (off the diagonal
        twice, as u counts it), the inverse's entries W_ij and ∂W_ij/∂u_k = −(W B_k W)_ij = −(W_ir W_cj + W_ic W_rj)
        for k = (r, c) (once on the diagonal); W as given, else R⁻ᵀR⁻¹ from the factors
        (`Backend.cholesky_inverse`)."""
        chains = R.shape[0]
        diagonal = np.diagonal(R, axis1=1, axis2=2)
        outside = ~(np.all(np.isfinite(R), axis=(1, 2)) & np.all(diagonal > 1e-150, axis=1))
        R = np.where(outside[:, None, None], self._identity, R)
        if W is None:
            W = get_backend("numpy").cholesky_inverse(R, self._identity)
        W = 0.5 * (W + W.transpose(0, 2, 1))
        values, rows = [], []
        if self.log_det:
            values.append(2.0 * np.sum(np.log(np.diagonal(R, axis1=1, axis2=2)), axis=1))
            rows.append(W[:, self.rows, self.cols] * self._weight)
        r, c = self.rows, self.cols
        off = np.where(r != c, 1.0, 0.0)
        for i, j in self.inverse:
            values.append(W[:, i, j])
            rows.append(-(W[:, i, r] * W[:, c, j] + off * W[:, i, c] * W[:, r, j]))
        a, J = np.stack(values, axis=1), np.stack(rows, axis=1).reshape(chains, self.count, -1)
        a[outside], J[outside], W[outside] = np.nan, np.nan, np.nan
        return a, J, W

    def curvature(self, W: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
        """Σ_m c_m ∂²a_m/∂u∂u' for the coefficients c_m = ∂𝓛/∂a_m (module docstring)."""
        out = np.zeros((self.rows.size, self.rows.size))
        start = 0
        if self.log_det:
            out -= coefficients[0] * pair_form(W, W)
            start = 1
        if self.inverse:
            G = np.zeros((self.size, self.size))
            for c, (i, j) in zip(coefficients[start:], self.inverse):
                G[i, j] += c if i == j else 0.5 * c
                G[j, i] += 0.0 if i == j else 0.5 * c
            Z = W @ G @ W
            M = pair_form(Z, W)
            out += M + M.T
        return out


def is_matrix_order_parameter(V) -> bool:
    """Whether V is a square sympy matrix of distinct symbols, symmetric (a
    [`positive_definite`][attnverify.saddle.positive_definite])."""
    if not isinstance(V, sympy.MatrixBase) or V.shape[0] != V.shape[1]:
        return False
    rows, cols = triangle(V.shape[0])
    entries = [V[i, j] for i, j in zip(rows, cols)]
    return all(isinstance(s, sympy.Symbol) for s in entries) and len(set(entries)) == len(entries) and \
        all(V[i, j] == V[j, i] for i, j in zip(rows, cols))
