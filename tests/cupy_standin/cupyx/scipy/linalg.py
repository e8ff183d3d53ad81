"""``cupyx.scipy.linalg`` of the stand-in: ``solve_triangular`` and the LU pair, on device arrays."""

import scipy.linalg as _linalg

from cupy import _function

for _name in ("solve_triangular", "lu_factor", "lu_solve", "block_diag", "expm", "tril", "triu", "toeplitz"):
    if hasattr(_linalg, _name):
        globals()[_name] = _function(_name, getattr(_linalg, _name))
