"""The energy E(U) = ln det(K(U) + T I) + Yᵀ(K(U) + T I)^{-1} Y and its gradient ∂E/∂U, three ways.

K(U)^{μν} = Σ_{ππ'} U_{ππ'} C^{μν}_{ππ'} is the renormalized kernel (spec §1.2, §2.1) and

    ∂E/∂U_{ππ'} = Tr(A C_{ππ'}) − rᵀ C_{ππ'} r,   A = (K + T I)^{-1},  r = A Y        (spec §2.2)

(symmetrised). All three representations take the Cholesky factor R of U = R Rᵀ (a host array: the solver's
side), keep their data on the chosen backend (numpy, or cupy: the P-sized work on the device) and return the
value, gradient and Hessian on the host:

* `KernelEnergy` from the path-path kernels C (𝓗, 𝓗, P, P): small problems and tests.
* `FeatureKernelEnergy` from the path features X (P, N0, 𝓗) without forming C: with
  Φ = X(I ⊗ R) (P × N0𝓗), K = ΦΦᵀ, and Tr(A C_{ππ'}) = Σ_i (L^{-1}X_{·iπ})·(L^{-1}X_{·iπ'}) for
  the Cholesky factor L of K + T I. Cost per call O(P² N0 𝓗 + P³).
* `FeatureSpaceEnergy` when D = N0·𝓗 < P: Woodbury and the matrix-determinant lemma on
  B = ΦᵀΦ + T I_D = (I ⊗ R)ᵀ Γ (I ⊗ R) + T I_D, with the Gram matrix Γ = XᵀX formed once, so a
  call costs O(D³) whatever P is:
      ln det(K + T I_P) = (P − D) ln T + ln det B,
      Yᵀ(K + T I)^{-1}Y = (YᵀY − cᵀB^{-1}c)/T,           c = (I ⊗ R)ᵀ XᵀY,
      Xᵀ A X = (Γ − QᵀB^{-1}Q)/T,  Xᵀ r = (XᵀY − QᵀB^{-1}c)/T,   Q = (I ⊗ R)ᵀ Γ.
"""

from __future__ import annotations

import copy

import numpy as np
from scipy.linalg import cho_solve, cholesky

from ..base import arguments
from ..base.backend import Backend, on_device
from .kernel_solve import solve_each
from .symmetric import entry_weights, symmetric_basis, triangle

SPACES = ("auto", "kernel", "feature")


def lower_cholesky(be: Backend, G):
    """The lower Cholesky factor of G (overwritten on numpy); numpy's LinAlgError on both backends."""
    if be.name == "numpy":
        return cholesky(G, lower=True, overwrite_a=True, check_finite=False)
    return be.cholesky(G)


def cholesky_solve(be: Backend, L, b):
    """(L Lᵀ)⁻¹ b from the lower factor L."""
    if be.name == "numpy":
        return cho_solve((L, True), b, check_finite=False)
    return be.solve_triangular(L, be.solve_triangular(L, b, lower=True), lower=True, trans=1)


def add_to_diagonal(be: Backend, G, value: float):
    """G + value·I, in place on G (a square array of the backend)."""
    index = be.xp.arange(G.shape[0])
    G[index, index] += value
    return G


def _labels(y, P: int, be: Backend) -> np.ndarray:
    """The labels Y as a finite (P,) array of the backend, one per training example."""
    return arguments.array("y", y, be, shape=(P,))


def _temperature(temperature) -> float:
    return arguments.positive("temperature", temperature)


def _diagonal_blocks(matrix: np.ndarray, N0: int, paths: int) -> np.ndarray:
    """Σ_i matrix[(i,π),(i,π')] for a (N0𝓗 × N0𝓗) matrix indexed (i, π) with π fast."""
    return np.einsum("iaib->ab", matrix.reshape(N0, paths, N0, paths))


def _symmetric(G: np.ndarray) -> np.ndarray:
    return 0.5 * (G + G.T)


def _symmetric_pairs(H: np.ndarray) -> np.ndarray:
    """H[a,b,c,d] averaged over a↔b, over c↔d and over the pair swap (ab)↔(cd): the same quadratic form
    Σ H dU_ab dU_cd on symmetric dU, written symmetrically."""
    H = 0.5 * (H + H.transpose(1, 0, 2, 3))
    H = 0.5 * (H + H.transpose(0, 1, 3, 2))
    return 0.5 * (H + H.transpose(2, 3, 0, 1))


def hessian_from_feature_blocks(M: np.ndarray, x: np.ndarray) -> np.ndarray:
    """∂²E/∂U_ab∂U_cd from M = Xᵀ A X (N0, 𝓗, N0, 𝓗) and x = Xᵀ r (N0, 𝓗), A = (K + T I)^{-1}, r = A Y.

    Differentiating ∂E/∂U_ab = Tr(A C_ab) − rᵀ C_ab r once more (dA = −A dK A, dr = −A dK r):
        ∂²E/∂U_ab∂U_cd = −Tr(A C_cd A C_ab) + rᵀ C_dc A C_ab r + rᵀ C_ab A C_cd r,
    and with C_ab = Σ_i X_{·ia} X_{·ib}ᵀ every term is a contraction of M and x over the width index:
        Tr(A C_cd A C_ab) = Σ_ij M[j,b,i,c] M[i,d,j,a],   rᵀ C_ab A C_cd r = Σ_ij x[i,a] M[i,b,j,c] x[j,d].
    Cost O(N0² 𝓗⁴). Returned symmetric under a↔b, c↔d and (ab)↔(cd).

    As M is symmetric (M[j,b,i,c] = M[i,c,j,b]) the trace term is one Gram matrix through BLAS:
    Tr(A C_cd A C_ab) = Σ_ij F[ij,cb] F[ij,da] with F[ij,cb] = M[i,c,j,b], a (𝓗² × N0²)·(N0² × 𝓗²) product.
    """
    N0, paths = x.shape
    F = M.transpose(0, 2, 1, 3).reshape(N0 * N0, paths * paths)
    trace = (F.T @ F).reshape((paths,) * 4).transpose(3, 1, 0, 2)
    # Σ_i x[i,a] M[i,b,j,c] as one (𝓗 × N0)·(N0 × 𝓗N0𝓗) product, then Σ_j … x[j,d] as another
    left = (x.T @ M.reshape(N0, -1)).reshape(paths, paths, N0, paths)
    labels = left.transpose(0, 1, 3, 2) @ x
    return _symmetric_pairs(2.0 * labels - trace)


def third_from_blocks(A: np.ndarray, r: np.ndarray, D: np.ndarray) -> np.ndarray:
    """∂³E/∂u_k∂u_l∂u_m over the independent entries u_k of U (numpy's triu order) from A = (K + T I)^{-1},
    r = A Y and D_k = ∂K/∂u_k (host arrays; (n, n), (n,), (m, n, n)).

    Differentiating ∂²E/∂u_k∂u_l = −tr(A D_l A D_k) + 2 rᵀ D_k A D_l r once more (dA = −A D_m A, dr = −A D_m r;
    K is linear in u, so ∂D_k = 0), with B_k = A D_k and a_k = A D_k r:

        ∂³E/∂u_k∂u_l∂u_m = tr(B_k B_l B_m) + tr(B_k B_m B_l) − 2 [a_mᵀ D_k a_l + a_kᵀ D_m a_l + a_kᵀ D_l a_m],

    symmetric in (k, l, m) (the two cyclic orders of the trace; each index once in the middle of the labels'
    term). The same formula holds in the feature space with A → XᵀAX, r → XᵀAY and D_k → I_{N0} ⊗ B_k, because
    C_ab = X (I ⊗ E_ab) Xᵀ makes every term a product of those blocks. Cost O(m² n³ + m³ n²)."""
    m = D.shape[0]
    B = A @ D  # B_k = A D_k
    a = B @ r  # a_k = A D_k r, (m, n)
    middle = np.einsum("xp,kpy->kxy", a, D @ a.T, optimize=True)  # middle[k, x, y] = a_xᵀ D_k a_y
    transposed = B.transpose(0, 2, 1).reshape(m, -1)  # tr(Z B_m) = Σ_ij Z_ij (B_m)_ji
    trace = np.empty((m, m, m))
    for k in range(m):
        trace[k] = (B[k] @ B).reshape(m, -1) @ transposed.T  # [l, m] = tr(B_k B_l B_m)
    labels = middle.transpose(0, 2, 1) + middle.transpose(1, 2, 0) + middle.transpose(1, 0, 2)
    return trace + trace.transpose(0, 2, 1) - 2.0 * labels


def feature_entry_kernels(N0: int, paths: int) -> np.ndarray:
    """I_{N0} ⊗ B_k (D × D, D = N0·𝓗, the path index fast) for each independent entry k of U: ∂K/∂u_k in the
    feature space (K = X (I ⊗ U) Xᵀ)."""
    _, _, basis = symmetric_basis(paths)
    return np.stack([np.kron(np.eye(N0), b) for b in basis])


def reordering(n: int, sample: int = 0) -> np.ndarray:
    """A fixed permutation of n ≥ 2 indices that moves some of them, one per ``sample`` (seeded by it, so every run
    reorders alike); the identity for n = 1."""
    order = np.random.default_rng(sample).permutation(n)
    return order[::-1].copy() if n > 1 and np.array_equal(order, np.arange(n)) else order


class _Energy:
    """What the three representations share: ``at_temperature(T)``, the same energy at another temperature
    sharing every precomputed array (C, X, the Gram matrix Γ = XᵀX), so that a sweep over T pays for them
    once; and ``_at_point(R)``, the representation's factorisation (``_factorise``) at U = R Rᵀ, kept for
    the last R asked for, so that the value, gradient and Hessian at one point share it."""

    _last = None
    backend: Backend

    def _at_point(self, R: np.ndarray):
        if self._last is None or not np.array_equal(self._last[0], R):
            self._last = (R.copy(), self._factorise(self.backend.asarray(R)))
        return self._last[1]

    def __call__(self, R: np.ndarray) -> tuple[float, np.ndarray]:
        return self._value_and_gradient(self._at_point(R))

    def reordered(self, R: np.ndarray, sample: int = 0) -> tuple[float, np.ndarray]:
        """(E, ∂E/∂U) at U = R Rᵀ as ``self(R)``, with the factorisation's elimination order permuted (`reordering`
        of the examples; in the feature space, of the D rows of B: E is invariant under either). Equal
        to ``self(R)`` in exact arithmetic, so the difference samples the round-off that the factorisation's
        condition number amplifies, which ``self(R)`` alone cannot show (none where the matrix is 1 × 1); ``sample``
        picks the permutation. Not kept as the last point."""
        order = reordering(self._reorderable, sample)
        return self._value_and_gradient(self._factorise(self.backend.asarray(R), order))

    def each(self, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(E (C,), ∂E/∂U (C, 𝓗, 𝓗)) for a batch of U = RRᵀ given by their lower factors R (C, 𝓗, 𝓗), on the host,
        as the call chain by chain (one batched factorisation: what HMC on the action asks for its chains);
        E = +∞ and the gradient 0 where K + T·I has no factor."""
        be = self.backend
        value, gradient, failed = self._each(be.asarray(np.asarray(R, dtype=float)))
        value, gradient, failed = be.to_numpy(value), be.to_numpy(gradient), be.to_numpy(failed)
        gradient = 0.5 * (gradient + gradient.transpose(0, 2, 1))
        return np.where(failed, np.inf, value), np.where(failed[:, None, None], 0.0, gradient)

    def at_temperature(self, temperature: float):
        other = copy.copy(self)
        other.temperature = _temperature(temperature)
        other._last = None
        return other


class KernelEnergy(_Energy):
    """E and ∂E/∂U from the path-path kernels C[π, π', μ, ν] (shape (𝓗, 𝓗, P, P)).

    C is checked once, here: symmetric (C[π,π',μ,ν] = C[π',π,ν,μ]) and positive semi-definite as the
    (𝓗P × 𝓗P) matrix C[(π,μ),(π',ν)] — a Gram matrix of the path features, which is what keeps
    K(U) + T I positive definite (and its Cholesky factor defined) for every positive-definite U.
    """

    def __init__(self, C, y, temperature: float, backend=None):
        self.backend = be = arguments.backend(backend)
        # checked on the host (a device C fetched once, not sent there and back), then used on the backend
        C = arguments.array("C", C.get() if be.name == "cupy" and on_device(C) else C, ndim=4)
        if C.shape[0] != C.shape[1] or C.shape[2] != C.shape[3]:
            raise ValueError(f"C must have shape (𝓗, 𝓗, P, P), got {C.shape}")
        paths, P = C.shape[0], C.shape[2]
        # the (𝓗P × 𝓗P) matrix C[(π,μ),(π',ν)], symmetrised: its symmetry is C[π,π',μ,ν] = C[π',π,ν,μ], checked and
        # imposed block by block (a P × P block's transpose stays in the cache; the whole matrix's does not)
        gram = np.empty((paths * P, paths * P))
        blocks = gram.reshape(paths, P, paths, P)  # blocks[a, :, b, :] is the block (a, b), a view
        asymmetry, diagonal = 0.0, 0.0
        for a in range(paths):
            diagonal = max(diagonal, float(np.max(np.abs(np.diagonal(C[a, a])))))
            for b in range(a, paths):
                difference = C[a, b] - C[b, a].T
                asymmetry = max(asymmetry, float(np.max(np.abs(difference))))
                difference *= 0.5
                np.subtract(C[a, b], difference, out=blocks[a, :, b, :])  # (C_ab + C_baᵀ)/2
                blocks[b, :, a, :] = blocks[a, :, b, :].T
        # the diagonal bounds every entry of a positive semi-definite matrix (one that is not fails below)
        if asymmetry > 1e-10 * max(1.0, diagonal):
            condition = "be symmetric, C[μ,ν] = C[ν,μ]" if paths == 1 else \
                "satisfy C[π,π',μ,ν] = C[π',π,ν,μ] (path-path kernels)"
            raise ValueError(f"C must {condition}; asymmetry {asymmetry:.3g}")
        arguments.positive_semidefinite("C", gram, symmetrised=True, scratch=True)
        self.paths, self.P = paths, P
        self.y = _labels(y, self.P, be)
        self.temperature = _temperature(temperature)
        # S_k = (C_ab + C_ba)/2 over the pairs k = (a ≤ b), and the pair index k of each (a, b): on symmetric U
        # only these enter the energy (K = Σ_k w_k U_k S_k, w = 1 on the diagonal and 2 off it), its gradient and
        # its Hessian
        rows, cols = triangle(paths)
        self._rows, self._cols = be.xp.asarray(rows), be.xp.asarray(cols)
        self._weights = be.asarray(entry_weights(paths))
        self.pair = np.zeros((paths, paths), dtype=int)
        self.pair[rows, cols] = self.pair[cols, rows] = np.arange(rows.size)
        symmetric = np.empty((rows.size, P, P))
        for k, (a, b) in enumerate(zip(rows, cols)):  # slices, not a fancy-indexed copy of C
            np.add(C[a, b], C[b, a], out=symmetric[k])
        symmetric *= 0.5
        self.symmetric_kernels = be.asarray(symmetric)
        self._flat_kernels = self.symmetric_kernels.reshape(rows.size, P * P)
        self.path_traces = np.einsum("abpp->ab", C)  # T_ππ' = Σ_μ C^{μμ}_{ππ'} (host)

    def kernel(self, R):
        """K(U) = Σ_ab U_ab C_ab at U = R Rᵀ: one (pairs × P²) matrix-vector product on the symmetric kernels."""
        R = self.backend.asarray(R)
        U = R @ R.T
        return ((self._weights * U[self._rows, self._cols]) @ self._flat_kernels).reshape(self.P, self.P)

    @property
    def _reorderable(self) -> int:
        return self.P

    def _factorise(self, R, order=None):
        """(ln det(K + T I), Yᵀr, r, A = (K + T I)^{-1}) at U = R Rᵀ. Tr(A C_{ππ'}) needs every entry of A;
        it is formed from the Cholesky factor (`Backend.cholesky_inverse`). ``order``: the examples' order to
        factorise K + T I in (`reordered`); r and A come back in the given one."""
        be, xp = self.backend, self.backend.xp
        G = self.kernel(R) + self.temperature * xp.eye(self.P)
        y = self.y
        if order is not None:
            order = xp.asarray(order)
            G, y = G[order][:, order], y[order]
        L = lower_cholesky(be, G)
        r = cholesky_solve(be, L, y)
        A = be.cholesky_inverse(L[None])[0]
        fit = float(y @ r)
        if order is not None:
            back = xp.argsort(order)
            r, A = r[back], A[back][:, back]
        return 2.0 * xp.sum(xp.log(xp.diag(L))), fit, r, A

    def _value_and_gradient(self, factorised) -> tuple[float, np.ndarray]:
        logdet, fit, r, A = factorised
        xp = self.backend.xp
        # on symmetric U only S_ab enters: ∂E/∂U_ab = Tr(A S_ab) − rᵀ S_ab r = ⟨S_ab, A − r rᵀ⟩, symmetric in a ↔ b
        grad = self._flat_kernels @ (A - xp.outer(r, r)).ravel()
        return float(logdet + fit), self.backend.to_numpy(grad)[self.pair]

    def _each(self, R):
        be, xp = self.backend, self.backend.xp
        chains, P = R.shape[0], self.P
        U = R @ xp.swapaxes(R, 1, 2)
        G = ((self._weights * U[:, self._rows, self._cols]) @ self._flat_kernels).reshape(chains, P, P)
        G += self.temperature * xp.eye(P)
        solved = solve_each(be, G, self.y)
        # ⟨S_ab, A − r rᵀ⟩ per chain, A − r rᵀ twice the solve's energy gradient
        pairs = solved.energy_gradient(2.0).reshape(chains, P * P) @ self._flat_kernels.T
        return 2.0 * solved.half_logdet + solved.quadratic, pairs[:, self.pair], solved.failed

    def hessian(self, R: np.ndarray) -> np.ndarray:
        """∂²E/∂U_ab∂U_cd (𝓗, 𝓗, 𝓗, 𝓗) at U = R Rᵀ: −Tr(A C_cd A C_ab) + rᵀC_dc A C_ab r + rᵀC_ab A C_cd r
        (see `hessian_from_feature_blocks`), from C directly, symmetrised as the quadratic form on
        symmetric dU. Only the symmetric combinations S_ab = (C_ab + C_ba)/2, a ≤ b, enter it (K = Σ U_ab S_ab),
        where it reads −Tr(A S_cd A S_ab) + 2 (S_ab r)ᵀ A (S_cd r). Cost O(𝓗² P³/2 + 𝓗⁴ P²/4)."""
        _, _, r, A = self._at_point(R)
        S, pair = self.symmetric_kernels, self.pair
        m, P = S.shape[0], self.P
        AS = A @ S  # A S_k, one batched product
        # Tr(A S_k A S_l) = Σ_ij (A S_k)[i,j] (A S_l)[j,i]: one (m × P²)·(P² × m) product
        trace = AS.reshape(m, P * P) @ AS.transpose(0, 2, 1).reshape(m, P * P).T
        v = S @ r  # S_k r
        labels = v @ A @ v.T  # (S_k r)ᵀ A (S_l r)
        pairs = self.backend.to_numpy(2.0 * labels - trace)
        pairs = 0.5 * (pairs + pairs.T)
        return pairs[pair[:, :, None, None], pair[None, None, :, :]]

    def entry_third_derivative(self, R: np.ndarray) -> np.ndarray:
        """∂³E/∂u_k∂u_l∂u_m over the independent entries of U (m = 𝓗(𝓗+1)/2 of them, triu order) at U = R Rᵀ,
        exactly (`third_from_blocks` with D_k = ∂K/∂u_k = w_k S_k, w = 1 on the diagonal, 2 off it), on
        the host."""
        _, _, r, A = self._at_point(R)
        be = self.backend
        D = be.to_numpy(self.symmetric_kernels) * be.to_numpy(self._weights)[:, None, None]
        return third_from_blocks(be.to_numpy(A), be.to_numpy(r), D)


def _features(X, be: Backend) -> np.ndarray:
    """The path features X (P, N0, 𝓗) on the backend, finite, with a finite squared norm (so the kernels
    K = ΦΦᵀ, whose entries it bounds at U = I, do not overflow)."""
    X = arguments.array("X", X, be, ndim=3)
    with np.errstate(over="ignore"):
        if not bool(be.xp.isfinite(be.xp.einsum("pia,pia->", X, X))):
            raise ValueError("X is too large: its squared norm Σ X² overflows float64 (rescale the features)")
    return X


class FeatureKernelEnergy(_Energy):
    """E and ∂E/∂U from the path features X (P, N0, 𝓗), in the P × P kernel space, without C."""

    def __init__(self, X, y, temperature: float, backend=None):
        self.backend = be = arguments.backend(backend)
        self.X = X = _features(X, be)
        self.P, self.N0, self.paths = X.shape
        self.y = _labels(y, self.P, be)
        self.temperature = _temperature(temperature)
        self.path_traces = be.to_numpy(be.xp.einsum("pia,pib->ab", X, X))  # T_ππ' = Σ_μ C^{μμ}_{ππ'} (host)

    def kernel(self, R):
        Phi = (self.X @ self.backend.asarray(R)).reshape(self.P, -1)
        return Phi @ Phi.T

    @property
    def _reorderable(self) -> int:
        return self.P

    def _factorise(self, R, order=None):
        """(ln det(K + T I), Yᵀ r, r, Z = L^{-1}X flattened (P, N0𝓗)) at U = R Rᵀ. ``order``: the examples' order
        to factorise K + T I in (`reordered`); r comes back in the given one, Z's rows in that order (only ZᵀZ,
        which does not depend on it, is used)."""
        be, xp = self.backend, self.backend.xp
        G = add_to_diagonal(be, self.kernel(R), self.temperature)
        y, X = self.y, self.X.reshape(self.P, -1)
        if order is not None:
            order = xp.asarray(order)
            G, y, X = G[order][:, order], y[order], X[order]
        L = lower_cholesky(be, G)
        r = cholesky_solve(be, L, y)
        Z = be.solve_lower(L, X)
        fit = float(y @ r)
        if order is not None:
            r = r[xp.argsort(order)]
        return 2.0 * xp.sum(xp.log(xp.diag(L))), fit, r, Z

    def _value_and_gradient(self, factorised) -> tuple[float, np.ndarray]:
        logdet, fit, r, Z = factorised
        # Σ_{p,i} Z[p,i,a] Z[p,i,b] and Σ_p X[p,i,a] r[p], each one BLAS product on the flattened arrays
        Z = Z.reshape(-1, self.paths)
        Xr = (r @ self.X.reshape(self.P, -1)).reshape(self.N0, self.paths)
        grad = Z.T @ Z - Xr.T @ Xr
        return float(logdet + fit), _symmetric(self.backend.to_numpy(grad))

    def _each(self, R):
        be, xp = self.backend, self.backend.xp
        chains, P = R.shape[0], self.P
        Phi = (self.X[None] @ R[:, None]).reshape(chains, P, -1)  # X(I ⊗ R) per chain
        G = Phi @ xp.swapaxes(Phi, 1, 2)
        G += self.temperature * xp.eye(P)
        solved = solve_each(be, G, self.y)
        flat = self.X.reshape(P, -1)
        Z = solved.whiten(flat, shared=True).reshape(chains, -1, self.paths)  # L⁻¹X, rows (μ, i)
        Xr = (solved.alpha @ flat).reshape(chains, self.N0, self.paths)
        gradient = xp.swapaxes(Z, 1, 2) @ Z - xp.swapaxes(Xr, 1, 2) @ Xr
        return 2.0 * solved.half_logdet + solved.quadratic, gradient, solved.failed

    def hessian(self, R: np.ndarray) -> np.ndarray:
        """∂²E/∂U_ab∂U_cd at U = R Rᵀ from M = XᵀAX = ZᵀZ (Z = L^{-1}X) and x = Xᵀr
        (`hessian_from_feature_blocks`). Cost O(P² N0𝓗 + P (N0𝓗)² + N0² 𝓗⁴)."""
        _, _, r, Z = self._at_point(R)
        be = self.backend
        M = be.to_numpy(Z.T @ Z).reshape(self.N0, self.paths, self.N0, self.paths)
        return hessian_from_feature_blocks(M, be.to_numpy(r @ self.X.reshape(self.P, -1)).reshape(self.N0, self.paths))

    def entry_third_derivative(self, R: np.ndarray) -> np.ndarray:
        """∂³E/∂u_k∂u_l∂u_m over the independent entries of U at U = R Rᵀ in the P × P kernel space (here
        N0·𝓗 ≥ P): `third_from_blocks` with A = (K + T I)^{-1} and D_k = X (I ⊗ B_k) Xᵀ, on the host."""
        _, _, r, _ = self._at_point(R)
        be = self.backend
        X = be.to_numpy(self.X)
        G = be.to_numpy(self.kernel(R)) + self.temperature * np.eye(self.P)
        L = cholesky(G, lower=True, check_finite=False)
        A = cho_solve((L, True), np.eye(self.P), check_finite=False)
        rows, cols, _ = symmetric_basis(self.paths)
        D = np.einsum("pik,qil->klpq", X, X)  # C_kl (𝓗, 𝓗, P, P)
        D = D[rows, cols] + np.where((rows != cols)[:, None, None], D[cols, rows], 0.0)
        return third_from_blocks(0.5 * (A + A.T), be.to_numpy(r), D)


class FeatureSpaceEnergy(_Energy):
    """E and ∂E/∂U from the path features in the D = N0·𝓗 feature space (Woodbury), for D < P.

    The Gram matrix Γ = XᵀX (D × D) and XᵀY are formed once; a call never touches P again.
    """

    def __init__(self, X, y, temperature: float, backend=None):
        self.backend = be = arguments.backend(backend)
        X = _features(X, be)
        self.P, self.N0, self.paths = X.shape
        self.D = self.N0 * self.paths
        if self.D >= self.P:
            raise ValueError(
                f"feature space needs N0·𝓗 < P (here {self.N0}·{self.paths} = {self.D} ≥ P = {self.P}); "
                "use the kernel space (FeatureKernelEnergy)"
            )
        self.y = _labels(y, self.P, be)
        self.temperature = _temperature(temperature)
        flat = X.reshape(self.P, self.D)
        self.gram = flat.T @ flat  # Γ = XᵀX, on the backend: the one O(P D²) product
        self.Xy = flat.T @ self.y
        self.yy = float(self.y @ self.y)
        self.path_traces = _diagonal_blocks(be.to_numpy(self.gram), self.N0, self.paths)  # (host)

    def _lift(self, R, M):
        """(I_{N0} ⊗ R)ᵀ M for M with D rows (R acts on the fast path index)."""
        shaped = M.reshape(self.N0, self.paths, -1)
        return self.backend.xp.einsum("ab,iaj->ibj", R, shaped).reshape(self.D, -1)

    @property
    def _reorderable(self) -> int:
        return self.D

    def _factorise(self, R, order=None) -> tuple[float, np.ndarray, np.ndarray]:
        """(E, XᵀAX, XᵀAY) by Woodbury at U = R Rᵀ, the last two on the host (D × D and D). ``order``: the order of
        B's D rows to factorise it in (`reordered`), Q's rows and c permuted alike (QᵀB⁻¹Q and cᵀB⁻¹c do not
        change)."""
        be, xp = self.backend, self.backend.xp
        T = self.temperature
        Q = self._lift(R, self.gram)  # (I ⊗ R)ᵀ Γ
        B = self._lift(R, Q.T.copy())  # (I ⊗ R)ᵀ Γ (I ⊗ R)
        B = add_to_diagonal(be, 0.5 * (B + B.T), T)
        c = self._lift(R, self.Xy[:, None])[:, 0]  # (I ⊗ R)ᵀ XᵀY
        if order is not None:
            order = xp.asarray(order)
            B, Q, c = B[order][:, order], Q[order], c[order]
        LB = lower_cholesky(be, B)
        W = be.solve_triangular(LB, Q, lower=True, check_finite=False)  # L_B^{-1} Q
        w = be.solve_triangular(LB, c, lower=True, check_finite=False)
        value = (self.P - self.D) * np.log(T) + 2.0 * xp.sum(xp.log(xp.diag(LB))) + (self.yy - w @ w) / T
        return float(value), be.to_numpy((self.gram - W.T @ W) / T), be.to_numpy((self.Xy - W.T @ w) / T)

    def _each(self, R):
        be, xp = self.backend, self.backend.xp
        chains, T, N0, paths, D = R.shape[0], self.temperature, self.N0, self.paths, self.D

        def lift(M):  # (I ⊗ R)ᵀ M per chain, M (D, k) shared or (C, D, k)
            if M.ndim == 2:
                return xp.einsum("cab,iaj->cibj", R, M.reshape(N0, paths, -1)).reshape(chains, D, -1)
            return xp.einsum("cab,ciaj->cibj", R, M.reshape(chains, N0, paths, -1)).reshape(chains, D, -1)

        Q = lift(self.gram)
        B = lift(xp.swapaxes(Q, 1, 2))
        B = 0.5 * (B + xp.swapaxes(B, 1, 2)) + T * xp.eye(D)
        # Woodbury's labels c = (I ⊗ R)ᵀXᵀY per chain: the solve's whitened labels are w = L_B⁻¹c
        solved = solve_each(be, B, lift(self.Xy[:, None])[:, :, 0])
        W, w = solved.whiten(Q), solved.whitened
        value = (self.P - D) * np.log(T) + 2.0 * solved.half_logdet + (self.yy - solved.quadratic) / T
        XAX = (self.gram - xp.swapaxes(W, 1, 2) @ W) / T
        Xr = ((self.Xy - xp.einsum("cdk,cd->ck", W, w)) / T).reshape(chains, N0, paths)
        blocks = xp.einsum("ciaib->cab", XAX.reshape(chains, N0, paths, N0, paths))
        return value, blocks - xp.swapaxes(Xr, 1, 2) @ Xr, solved.failed

    def _value_and_gradient(self, factorised) -> tuple[float, np.ndarray]:
        value, XAX, XAy = factorised
        Xr = XAy.reshape(self.N0, self.paths)
        grad = _diagonal_blocks(XAX, self.N0, self.paths) - Xr.T @ Xr
        return value, _symmetric(grad)

    def hessian(self, R: np.ndarray) -> np.ndarray:
        """∂²E/∂U_ab∂U_cd at U = R Rᵀ from XᵀAX and XᵀAY (`hessian_from_feature_blocks`).
        Cost O(D³ + N0² 𝓗⁴), independent of P."""
        _, XAX, XAy = self._at_point(R)
        M = XAX.reshape(self.N0, self.paths, self.N0, self.paths)
        return hessian_from_feature_blocks(M, XAy.reshape(self.N0, self.paths))

    def entry_third_derivative(self, R: np.ndarray) -> np.ndarray:
        """∂³E/∂u_k∂u_l∂u_m over the independent entries of U at U = R Rᵀ in the D-dimensional feature space:
        `third_from_blocks` with XᵀAX, XᵀAY and I_{N0} ⊗ B_k. Cost O(m² D³), independent of P."""
        _, XAX, XAy = self._at_point(R)
        return third_from_blocks(0.5 * (XAX + XAX.T), XAy, feature_entry_kernels(self.N0, self.paths))


def energy_for(X=None, C=None, *, y, temperature: float, space: str = "auto", backend=None):
    """The energy representation for the given inputs; ``space`` ∈ {"auto", "kernel", "feature"}; its data on
    ``backend`` (numpy by default; cupy puts the P-sized work on the device).

    Every argument is checked here, once; the returned object's calls (one per action evaluation)
    work on the checked arrays.
    """
    if (X is None) == (C is None):
        raise ValueError("give exactly one of X (path features, (P, N0, 𝓗)) and C (path-path kernels)")
    space = arguments.one_of("space", space, SPACES)
    be = arguments.backend(backend)
    if C is not None:
        if space == "feature":
            raise ValueError("space='feature' needs the path features X, not C")
        return KernelEnergy(C, y, temperature, be)
    X = _features(X, be)
    P, N0, paths = X.shape
    if space == "feature" or (space == "auto" and N0 * paths < P):
        return FeatureSpaceEnergy(X, y, temperature, be)
    return FeatureKernelEnergy(X, y, temperature, be)
