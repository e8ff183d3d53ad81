"""Where the saddle-point solve's energy runs under the cupy backend (counted on the strict stand-in): a small problem
(the P × P kernel under base.backend.HOST_ELEMENTS) on the host, with numpy's answer bit for bit; a large one on the
device. Newton's steps over the order parameters run on the host either way."""

from __future__ import annotations

import numpy as np
import pytest
import sympy

from attnverify.base.backend import HOST_ELEMENTS, cupy_works
from attnverify.saddle import SaddlePointAction, positive, solve

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cupy_works(), reason="no working cupy (GPU or stand-in)")]


def _problem(P: int):
    Q = positive("Q")
    N, s = sympy.symbols("N sigma2", positive=True)
    action = SaddlePointAction(order_parameters={"Q": Q}, entropy=N / 2 * (Q / s - sympy.log(Q)), kernel="Q", width=N)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((P, 3))
    return action, dict(C=X @ X.T / 3 + 0.1 * np.eye(P), y=X[:, 0] + 0.3 * rng.standard_normal(P))


def _solve_counting(action, data, backend: str):
    import cupy

    created = cupy.created() if hasattr(cupy, "created") else None
    solution = solve(action, data, temperature=0.1, N=50, sigma2=1.0, backend=backend)
    return solution, None if created is None else cupy.created() - created


def test_a_small_solve_runs_on_the_host_and_equals_numpy():
    action, data = _problem(30)
    assert 30 * 30 < HOST_ELEMENTS
    on_cupy, made = _solve_counting(action, data, "cupy")
    on_numpy = solve(action, data, temperature=0.1, N=50, sigma2=1.0, backend="numpy")
    assert on_cupy.order_parameters["Q"] == on_numpy.order_parameters["Q"]  # the same arithmetic, bit for bit
    if made is not None:
        assert made == 0, made


def test_a_large_solve_runs_on_the_device():
    action, data = _problem(400)
    assert 400 * 400 >= HOST_ELEMENTS
    on_cupy, made = _solve_counting(action, data, "cupy")
    on_numpy = solve(action, data, temperature=0.1, N=50, sigma2=1.0, backend="numpy")
    assert on_cupy.order_parameters["Q"] == pytest.approx(on_numpy.order_parameters["Q"], rel=1e-10)
    if made is not None:
        assert made > 0
