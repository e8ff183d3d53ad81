"""The single-location descents under backend cupy, counted on the strict cupy stand-in (tests/cupy_standin): a step of
the population PGD (runs × 4 states) and of SGD on seeded batches of fewer than 10⁵ numbers runs on the host
(base.backend.for_size), so it makes no device array, and the trajectory equals the numpy backend's bit for bit and
comes back on the device."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnverify.base.backend import cupy_works, get_backend, on_device
from attnverify.theories import single_location as sl

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cupy_works(), reason="no working cupy (GPU or stand-in)")]


def _unit_rows(rng, runs: int, dim: int) -> np.ndarray:
    x = rng.normal(size=(runs, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _population_pgd(k0, v0, steps: int, backend: str):
    return sl.population_projected_gradient_descent(
        k0, v0, lam0=0.9, scheduled=True, step_size=4e-3, steps=steps, d=400, L=10, gamma=math.sqrt(0.5), eps=0.1,
        record_every=max(steps // 4, 1), backend=backend)


def test_a_population_descent_step_makes_no_device_array(cupy):
    """Arrays made by 300 steps less those made by 100, with the same five records: 0 (on the device, ~370 a step)."""
    rng = np.random.default_rng(0)
    k0, v0 = _unit_rows(rng, 30, 4), _unit_rows(rng, 30, 4)
    made = []
    for steps in (100, 300):
        before = cupy.created()
        _population_pgd(cupy.asarray(k0), cupy.asarray(v0), steps, "cupy")
        made.append(cupy.created() - before)
    assert made[1] - made[0] == 0, made
    assert made[0] <= 20, made  # the inputs' checks and the trajectory moved back: a few arrays, once


def test_the_population_descent_on_cupy_is_numpys_bit_for_bit_and_comes_back_on_the_device(cupy):
    rng = np.random.default_rng(1)
    k0, v0 = _unit_rows(rng, 12, 4), _unit_rows(rng, 12, 4)
    host = _population_pgd(k0, v0, 400, "numpy")
    device = _population_pgd(cupy.asarray(k0), cupy.asarray(v0), 400, "cupy")
    assert on_device(device.k) and on_device(device.v) and device.test_risk is None
    np.testing.assert_array_equal(device.k.get(), host.k)
    np.testing.assert_array_equal(device.v.get(), host.v)
    np.testing.assert_array_equal(device.lam, host.lam)
    np.testing.assert_array_equal(device.steps, host.steps)


def _sgd(task, k0, v0, steps: int, backend, rng=7):
    return sl.stochastic_gradient_descent(task, k0, v0, lam_schedule=sl.lambda_schedule(2.0, True), step_size=1e-3,
                                          batch_size=5, steps=steps, rng=rng, test_size=50,
                                          record_every=max(steps // 2, 1), backend=backend)


def test_sgd_on_seeded_small_batches_runs_on_the_host_as_numpy_does(cupy):
    """runs·B·L·d = 4·5·10·80 = 16,000 numbers a step: no device array a step, and numpy's draws and bits."""
    task = sl.make_task(80, 10, seed=3)
    rng = np.random.default_rng(2)
    k0, v0 = _unit_rows(rng, 4, 80), _unit_rows(rng, 4, 80)
    made = []
    for steps in (20, 60):
        before = cupy.created()
        device = _sgd(task, cupy.asarray(k0), cupy.asarray(v0), steps, "cupy")
        made.append(cupy.created() - before)
    assert made[1] - made[0] == 0, made
    host = _sgd(task, k0, v0, 60, "numpy")
    assert on_device(device.k) and on_device(device.test_risk)
    np.testing.assert_array_equal(device.k.get(), host.k)
    np.testing.assert_array_equal(device.v.get(), host.v)
    np.testing.assert_array_equal(device.test_risk.get(), host.test_risk)


def test_sgd_with_a_device_generator_draws_on_the_device(cupy):
    """A cupy Generator draws where it lives: the steps stay on the device (and a numpy Generator is refused)."""
    task = sl.make_task(80, 10, seed=3)
    rng = np.random.default_rng(2)
    k0, v0 = cupy.asarray(_unit_rows(rng, 4, 80)), cupy.asarray(_unit_rows(rng, 4, 80))
    before = cupy.created()
    _sgd(task, k0, v0, 20, "cupy", rng=get_backend("cupy").random(7))
    assert cupy.created() - before > 20 * 10
    with pytest.raises(TypeError, match="numpy Generator but the computation runs on cupy"):
        _sgd(task, k0, v0, 2, "cupy", rng=np.random.default_rng(7))


def test_the_pgd_claim_makes_far_fewer_device_arrays_than_it_takes_steps(cupy):
    """pgd_on_manifold_reaches_oracle (2·10⁴ steps of 16 runs) under backend cupy: its device arrays are the task,
    the starts, their reduction and the recorded path's overlaps, not one per step."""
    from attnverify.checks import run_claim
    from attnverify.theories.single_location import claims

    before = cupy.created()
    result = run_claim(claims.pgd_on_manifold_reaches_oracle, profile="quick", backend="cupy", seed=0)
    made = cupy.created() - before
    assert result.status == "holds", result.status
    assert 0 < made <= 1_000, made  # 161 now; one array a step would be 20,000
