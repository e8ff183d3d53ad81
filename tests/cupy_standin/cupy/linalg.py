"""``cupy.linalg`` of the stand-in: numpy's LAPACK on device arrays. Under cupy's default ``linalg='ignore'``
cuSOLVER's ``info`` is not read, so a failed factorisation raises nothing: the Cholesky factor of a matrix
that is not positive definite is finite and wrong, and so is the solution of a singular system. Under
``cupyx.errstate(linalg='raise')`` both raise numpy's LinAlgError, as cupy does."""

from __future__ import annotations

import numpy as _np

from . import _function, _outside_fusion, _unwrap, _wrap, ndarray


def _cholesky_ignoring_failure(a: _np.ndarray) -> _np.ndarray:
    """The lower Cholesky factor where it exists; where a pivot is not positive, the factorisation goes on with
    its absolute value plus one (finite, wrong, and silent, as cuSOLVER's factor is when nobody reads info)."""
    try:
        return _np.linalg.cholesky(a)
    except _np.linalg.LinAlgError:
        pass
    batch = a.reshape(-1, *a.shape[-2:]).copy()
    out = _np.zeros_like(batch)
    for b, matrix in enumerate(batch):
        n = matrix.shape[0]
        L = out[b]
        for j in range(n):
            pivot = matrix[j, j] - L[j, :j] @ L[j, :j]
            L[j, j] = _np.sqrt(pivot) if pivot > 0 else _np.sqrt(abs(pivot) + 1.0)
            L[j + 1:, j] = (matrix[j + 1:, j] - L[j + 1:, :j] @ L[j, :j]) / L[j, j]
    return out.reshape(a.shape)


def _raising() -> bool:
    import cupyx

    return cupyx.geterr()["linalg"] == "raise"


def cholesky(a):
    _outside_fusion("linalg.cholesky")
    if _raising():  # under cupyx.errstate(linalg='raise'): numpy's LinAlgError, as cupy raises it
        return ndarray(_np.linalg.cholesky(_unwrap(a)))
    return ndarray(_cholesky_ignoring_failure(_unwrap(a)))


def solve(a, b):
    _outside_fusion("linalg.solve")
    a, b = _unwrap(a), _unwrap(b)
    if _raising():
        return _wrap(_np.linalg.solve(a, b))
    try:
        return _wrap(_np.linalg.solve(a, b))
    except _np.linalg.LinAlgError:  # cuSOLVER's getrs after a failed getrf: finite garbage
        shifted = a + _np.eye(a.shape[-1]) * (_np.abs(a).max() + 1.0)
        return _wrap(_np.linalg.solve(shifted, b))


for _name in ("norm", "slogdet", "det", "eigh", "eigvalsh", "qr", "svd", "lstsq", "pinv", "matrix_power", "inv",
              "matrix_rank", "tensorsolve", "tensorinv"):
    globals()[_name] = _function(_name, getattr(_np.linalg, _name))

LinAlgError = _np.linalg.LinAlgError