"""How many threads the BLAS libraries (numpy's and scipy's OpenBLAS/MKL) may use inside a block.

The saddle-point solver's matrices are small to medium (P × P or (N0𝓗)² with P, N0𝓗 ≲ 2,000): at those
sizes a BLAS call spends more on waking and joining its threads than it gains, and measured on the 2-core
CI machine one thread is faster at every size the solver sees (Markov P = 100: 1.4–3× per solve; one-shot
P = 600 with N0𝓗 = 1,024: 1.4–2.2×). The parallelism that pays there is across solves (sweeps, seeds,
workers), not inside one product. ``threadpoolctl`` reaches only libraries already loaded, so numpy and
scipy.linalg are imported before the controller is made.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

_controller = None  # threadpoolctl's view of the loaded BLAS libraries, made on first use


@contextmanager
def threads(count: int | None) -> Iterator[None]:
    """Limit every loaded BLAS to ``count`` threads inside the block; ``None`` leaves them as they are."""
    if count is None:
        yield
        return
    global _controller
    if _controller is None:
        import numpy  # noqa: F401
        import scipy.linalg  # noqa: F401
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    with _controller.limit(limits=count, user_api="blas"):
        yield


_process_limit = None  # the limit set_process_threads keeps open for the life of the process


def set_process_threads(count: int) -> None:
    """Limit every loaded BLAS to ``count`` threads for the rest of this process (a worker of a parallel run,
    where the parallelism is across workers)."""
    global _controller, _process_limit
    if _controller is None:
        import numpy  # noqa: F401
        import scipy.linalg  # noqa: F401
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    _process_limit = _controller.limit(limits=count, user_api="blas")
