"""Array backends: numpy (default, CPU) or cupy (GPU, only when asked for and working).

The backend is chosen at the edge and passed down explicitly: a function given ``backend=None`` uses
numpy. Only the command line reads the environment variable ``ATTNVERIFY_BACKEND`` (when
``--backend`` is not given), through `backend_from_environment`. Asking for cupy where no GPU
works raises `BackendUnavailable`; there is no silent fallback to the CPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType
from typing import Any, Callable

import numpy as np

ENVIRONMENT_VARIABLE = "ATTNVERIFY_BACKEND"
BACKEND_NAMES = ("numpy", "cupy")


CHAIN_BY_CHAIN = 64
"""Above this matrix size a batch of triangular solves or inverses runs on numpy chain by chain through LAPACK, whose
arithmetic then outweighs a Python loop over the chains; at or below it, one batched call."""


class BackendUnavailable(RuntimeError):
    """The requested array backend cannot run on this machine."""


@dataclass(frozen=True)
class Backend:
    """An array namespace ``xp`` with its special-function module ``special``."""

    name: str
    xp: ModuleType
    special: ModuleType

    def asarray(self, x: Any, dtype: Any = None) -> Any:
        """Move ``x`` onto this backend (float64 unless ``dtype`` says otherwise)."""
        return self.xp.asarray(x, dtype=self.xp.float64 if dtype is None else dtype)

    def to_numpy(self, x: Any) -> np.ndarray:
        """Bring an array of this backend back to host memory as numpy."""
        return to_numpy(x)

    def random(self, seed: int | None) -> Any:
        """A random generator of this backend, seeded explicitly."""
        return self.xp.random.default_rng(seed)

    def fused(self, function: Callable) -> Callable:
        """``function(xp, *arguments)`` with this backend's array module bound (`fused`)."""
        return fused(function, self.xp)

    def cholesky(self, matrix: Any) -> Any:
        """The lower Cholesky factor of ``matrix`` (or of each matrix of a batch), or ``numpy.linalg.LinAlgError``
        when one is not positive definite, on either backend. cupy's default (``linalg='ignore'``) skips
        cuSOLVER's ``info`` and returns a wrong factor without a word (NaN, or finite garbage: nothing promises
        NaN); here cupy factorises under ``cupyx.errstate(linalg='raise')``, which reads ``info`` (one
        device-to-host copy) and raises as numpy does."""
        if self.name == "numpy":
            return self.xp.linalg.cholesky(matrix)
        import cupyx

        with cupyx.errstate(linalg="raise"):
            return self.xp.linalg.cholesky(matrix)

    def cholesky_each(self, matrices: Any, substitute: Any) -> tuple[Any, Any]:
        """(factors, failed) of a batch (C, n, n): each matrix's lower Cholesky factor, and for each matrix that is
        not finite or not positive definite ``failed`` True and the factor ``substitute`` (n, n) in its place. On
        numpy one batched factorisation when every matrix has one, matrix by matrix only when one fails. On cupy
        one batched factorisation that reads nothing back to the host: a factor counts as failed unless its
        diagonal is positive and finite and its rows' squared norms reproduce diag(A) within the factorisation's
        backward error, 4(n + 1)·u·Σ_k L_jk² (Higham, Accuracy and Stability, Thm 10.3), which cuSOLVER's factor of
        a matrix that is not positive definite (stopped at a non-positive pivot, or finite garbage) does not."""
        xp = self.xp
        if self.name != "numpy":  # a non-finite A gives a NaN diagonal or NaN norms: failed, with no check before
            factors = xp.linalg.cholesky(matrices)
            norms = self.fused(_row_norms)(factors)
            failed = self.fused(_unfactored)(norms, xp.diagonal(matrices, axis1=1, axis2=2),
                                             xp.diagonal(factors, axis1=1, axis2=2),
                                             4.0 * (matrices.shape[-1] + 1) * float(np.finfo(np.float64).eps))
            return xp.where(failed[:, None, None], substitute, factors), failed
        failed = ~xp.all(xp.isfinite(matrices), axis=(1, 2))
        matrices = xp.where(failed[:, None, None], substitute, matrices)
        try:
            return self.cholesky(matrices), failed
        except np.linalg.LinAlgError:
            pass
        factors = []
        for c, matrix in enumerate(matrices):
            try:
                factors.append(self.cholesky(matrix))
            except np.linalg.LinAlgError:
                failed[c] = True
                factors.append(substitute)
        return xp.stack(factors), failed

    def solve_triangular(self, *args: Any, **kwargs: Any) -> Any:
        """``scipy.linalg.solve_triangular`` on numpy, ``cupyx.scipy.linalg.solve_triangular`` on cupy."""
        if self.name == "cupy":
            from cupyx.scipy.linalg import solve_triangular
        else:
            from scipy.linalg import solve_triangular
        return solve_triangular(*args, **kwargs)

    def solve_lower(self, factor: Any, rhs: Any, *, transpose: bool = False, shared: bool = False) -> Any:
        """L⁻¹B (or L⁻ᵀB) for a batch of lower-triangular L (C, n, n) and B (C, n, …), or one B (n, …) for all
        when ``shared``; for one L (n, n) and B (n, k) or (n,), one triangular solve (on numpy
        `_lower_solve_one`). For a batch with n > `CHAIN_BY_CHAIN` on numpy, triangular solves chain by chain (n²k
        flops for k right-hand sides; ``xp.linalg.solve`` would factorise L again by LU, ≈ 2n²k + ⅔n³); for small n,
        where a Python loop over many chains costs more than the arithmetic, one batched ``xp.linalg.solve``; on cupy
        always the batched solve, whose launches do not grow with the chains."""
        xp = self.xp
        if factor.ndim == 2:
            if self.name == "numpy":
                return _lower_solve_one(factor, rhs, transpose)
            return self.solve_triangular(factor, rhs, lower=True, trans=1 if transpose else 0)
        if factor.shape[-1] <= CHAIN_BY_CHAIN or self.name != "numpy":
            L = xp.swapaxes(factor, -1, -2) if transpose else factor
            B = xp.broadcast_to(rhs, factor.shape[:1] + rhs.shape) if shared else rhs
            vector = B.ndim == factor.ndim - 1
            out = xp.linalg.solve(L, B[..., None] if vector else B)
            return out[..., 0] if vector else out
        # LAPACK's trtrs chain by chain, as scipy.linalg.solve_triangular calls it (the same bits), without its
        # argument checks, which cost more than a 100 × 100 solve: L (C order) is Lᵀ in Fortran order, upper
        from scipy.linalg import LinAlgError, get_lapack_funcs

        (trtrs,) = get_lapack_funcs(("trtrs",), (factor,))
        solved = []
        for c, Lc in enumerate(factor):
            x, info = trtrs(Lc.T, rhs if shared else rhs[c], lower=0, trans=0 if transpose else 1)
            if info != 0:
                raise LinAlgError(f"singular matrix: resolution failed at diagonal {info - 1}" if info > 0
                                  else f"illegal value in argument {-info} of trtrs")
            solved.append(x)
        return xp.stack(solved)


    def cholesky_inverse(self, factor: Any, identity: Any = None) -> Any:
        """A⁻¹ for each lower Cholesky factor L of A = LLᵀ in a batch (C, n, n): the matrix itself, where a formula
        needs A⁻¹ (not A⁻¹B, which `solve_lower` gives); L is zero above its diagonal, as a factorisation gives
        it. For n > `CHAIN_BY_CHAIN` on numpy LAPACK's ``potri`` chain by chain
        (⅔n³ flops: L⁻¹, then L⁻ᵀL⁻¹ on its triangle); otherwise L⁻¹ by one batched solve and L⁻ᵀL⁻¹ by one
        batched product (3n³ flops in two operations, whose launches do not grow with the chains on cupy), against
        ``identity`` (n, n) when the caller keeps one."""
        xp = self.xp
        if self.name == "numpy" and factor.shape[-1] > CHAIN_BY_CHAIN:
            from scipy.linalg import LinAlgError, get_lapack_funcs

            (potri,) = get_lapack_funcs(("potri",), (factor,))
            lower = np.empty_like(factor)
            for c, Lc in enumerate(factor):
                # L in C order is Lᵀ in Fortran order: potri of that upper factor writes A⁻¹ on its upper triangle
                # and leaves the zeros below, so its transpose is A⁻¹'s lower triangle with zeros above
                inverse, info = potri(Lc.T, lower=0)
                if info != 0:
                    raise LinAlgError(f"singular factor: zero at diagonal {info - 1}" if info > 0
                                      else f"illegal value in argument {-info} of potri")
                lower[c] = inverse.T
            inverses = lower + np.swapaxes(lower, -1, -2)
            inverses.reshape(*inverses.shape[:-2], -1)[..., ::factor.shape[-1] + 1] *= 0.5  # the diagonal, twice
            return inverses
        identity = xp.eye(factor.shape[-1]) if identity is None else identity
        lower_inverse = self.solve_lower(factor, identity, shared=True)
        return xp.swapaxes(lower_inverse, -1, -2) @ lower_inverse


def _row_norms(xp, factors):
    """Σ_k L_jk² for each row j of each factor (C, n, n) -> (C, n)."""
    return xp.sum(factors * factors, axis=2)


def _unfactored(xp, norms, diagonal, pivots, backward):
    """For each chain (C,): whether a row's squared norm misses diag(A) by more than ``backward`` × its norm, or a
    pivot is not positive (NaN fails both)."""
    return xp.any(~((xp.abs(norms - diagonal) <= backward * norms) & (pivots > 0)), axis=1)


@lru_cache(maxsize=None)
def fused(function: Callable, xp: ModuleType) -> Callable:
    """``function(xp, *arguments)`` with the array module ``xp`` bound: for cupy one kernel (``cupy.fuse``, made once
    per function, compiled once per dtypes and dimensions), so ``function`` uses only elementwise operations and at
    most one reduction, its last (no indexing, reshaping or products: pass views in); for numpy the same operations
    one after another, the bits of the body written out."""
    def bound(*arguments):
        return function(xp, *arguments)

    bound.__name__ = function.__name__
    return bound if xp is np else xp.fuse(kernel_name=function.__name__.lstrip("_"))(bound)


def _lower_solve_one(factor: np.ndarray, rhs: np.ndarray, transpose: bool) -> np.ndarray:
    """L⁻¹B (L⁻ᵀB) for one lower-triangular L (n, n) and a C-ordered B (n, k), as BLAS ``trsm`` from the right
    on Bᵀ, which is B's own buffer in Fortran order: Zᵀ = Bᵀ L⁻ᵀ (Bᵀ L⁻¹). A solve from the left, as LAPACK's
    ``trtrs`` does it, first copies B to Fortran order, and OpenBLAS's left solve on that copy measured 11–13 ms
    against 10 ms for the right solve at n = 600, k = 1,024 (one thread): the same n²k flops either way."""
    from scipy.linalg import get_blas_funcs

    rhs = np.ascontiguousarray(rhs, dtype=np.result_type(factor, rhs, np.float64))
    vector = rhs.ndim == 1
    B = rhs[:, None] if vector else rhs
    (trsm,) = get_blas_funcs(("trsm",), (factor, B))
    solved = trsm(1.0, factor, B.T, side=1, lower=1, trans_a=0 if transpose else 1).T
    return solved[:, 0] if vector else solved


HOST_ELEMENTS = 100_000
"""A step whose largest array holds fewer elements than this runs on the host (`for_size`).

A step of a loop (a descent step, an optimiser's evaluation) costs on a GPU about one kernel launch per array
operation, 5–10 µs each whatever the size, and a host synchronisation where the loop reads a value back; the
single-location descent step makes ~370 such operations, 4–5 ms on an H100 for (runs, 4) states. The host does
elementwise float64 arithmetic at ~1 element per ns (a transcendental at a few ns), so below ~10⁵ elements an
operation finishes on the host within the time of launching it: the device pays only above this size."""


def for_size(backend: Backend | str | None, elements: int) -> Backend:
    """The backend a launch-bound step over arrays of at most ``elements`` elements runs on: numpy when
    ``elements`` < `HOST_ELEMENTS` (the reason is there), else ``backend``. A caller that routes a loop
    through this rule moves its inputs to the returned backend once, runs the loop there, and moves the results
    back once; on the host the arithmetic is numpy's, so the results are bit for bit those of the numpy backend
    given the same inputs."""
    chosen = get_backend(backend)
    if int(elements) < HOST_ELEMENTS:
        return _numpy_backend()
    return chosen


def on_device(x: Any) -> bool:
    """Whether ``x`` is cupy's: a device array, or cupy's random Generator."""
    return type(x).__module__.split(".")[0] == "cupy"


def to_numpy(x: Any) -> np.ndarray:
    """numpy view/copy of a numpy or cupy array (or scalar)."""
    get = getattr(x, "get", None)
    if callable(get) and on_device(x):
        return get()
    return np.asarray(x)


def array_module(x: Any) -> ModuleType:
    """The array namespace of ``x``: cupy for a cupy array, else numpy."""
    if on_device(x):
        import cupy

        return cupy
    return np


@lru_cache(maxsize=None)
def _numpy_backend() -> Backend:
    import scipy.special

    return Backend("numpy", np, scipy.special)


@lru_cache(maxsize=None)
def _cupy_backend() -> Backend:
    try:
        import cupy
        import cupyx.scipy.special
    except Exception as error:  # ImportError, or a broken CUDA library load
        raise BackendUnavailable(
            "backend 'cupy' was requested but cupy cannot be imported "
            f"({type(error).__name__}: {error}); install the [gpu] extra on a machine with "
            "an NVIDIA GPU, or use backend='numpy'"
        ) from error
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise BackendUnavailable("no CUDA device is visible")
        probe = cupy.arange(4, dtype=cupy.float64) * 2.0  # a real allocation and kernel launch
        if float(probe.sum()) != 12.0:
            raise BackendUnavailable("a test kernel on the GPU returned a wrong result")
    except BackendUnavailable as error:
        raise BackendUnavailable(f"backend 'cupy' was requested but {error}") from None
    except Exception as error:
        raise BackendUnavailable(
            "backend 'cupy' was requested but a test allocation on the GPU failed "
            f"({type(error).__name__}: {error}); use backend='numpy'"
        ) from error
    return Backend("cupy", cupy, cupyx.scipy.special)


def backend_from_environment(name: str | Backend | None = None) -> Backend:
    """The command line's choice: ``name`` (``--backend``) if given, else ``$ATTNVERIFY_BACKEND``, else numpy."""
    if name is None:
        name = os.environ.get(ENVIRONMENT_VARIABLE, "") or "numpy"
    return get_backend(name)


def get_backend(name: str | Backend | None = None) -> Backend:
    """The backend called ``name`` (``'numpy'`` or ``'cupy'``); ``None`` is numpy (the environment is
    read only at the command line: `backend_from_environment`)."""
    if isinstance(name, Backend):
        return name
    if name is None:
        name = "numpy"
    key = str(name).strip().lower()
    if key == "numpy":
        return _numpy_backend()
    if key == "cupy":
        return _cupy_backend()
    raise ValueError(f"backend must be one of {BACKEND_NAMES}, got {name!r}")


def cupy_works() -> bool:
    """True where the cupy backend can run (it decides which GPU tests are skipped, never a fallback)."""
    try:
        _cupy_backend()
    except BackendUnavailable:
        return False
    return True
