"""The attention-parameter fit under backend cupy, counted on the strict cupy stand-in (tests/cupy_standin): data whose
risk evaluation touches fewer than 10⁵ numbers is fitted on the host (base.backend.for_size), with no device array an
iteration and numpy's Ŵ bit for bit; larger data is fitted where it lives."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify.base.backend import cupy_works, get_backend
from attnverify.theories.conditional_mean import learning

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cupy_works(), reason="no working cupy (GPU or stand-in)")]


def _task() -> learning.LatentLinearTask:
    return learning.LatentLinearTask(np.array([[1.3, 0.2], [0.2, 0.8]]), 1.0, 0.5)


def _on_device(data: learning.Dataset) -> learning.Dataset:
    be = get_backend("cupy")
    return learning.Dataset(data.objective, *(be.asarray(x) for x in (data.queries, data.keys, data.values,
                                                                      data.targets)))


def test_a_small_fit_runs_on_the_host_and_equals_numpys(cupy):
    """N·L·max(M, d, d_v) = 128·64·8 = 65,536 < 10⁵: the fit makes no device array and gives numpy's Ŵ exactly."""
    data = learning.draw_dataset(_task(), "masked", 128, 64, 0)
    host = learning.fit_attention_parameter(data)
    on_device = _on_device(data)
    before = cupy.created()
    device = learning.fit_attention_parameter(on_device)
    assert cupy.created() == before
    assert host.iterations > 3
    np.testing.assert_array_equal(device.W, host.W)
    assert device.train_risk == host.train_risk and device.iterations == host.iterations


def test_a_large_fit_stays_on_the_device(cupy):
    """128·256·8 = 262,144 ≥ 10⁵: every evaluation runs on the device, and Ŵ agrees with numpy's to round-off."""
    data = learning.draw_dataset(_task(), "masked", 128, 256, 1)
    host = learning.fit_attention_parameter(data, tol=1e-6)
    before = cupy.created()
    device = learning.fit_attention_parameter(_on_device(data), tol=1e-6)
    assert cupy.created() - before >= 10 * device.iterations
    np.testing.assert_allclose(device.W, host.W, rtol=1e-8, atol=1e-10)
