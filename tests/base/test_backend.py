"""The rule by size (base.backend.for_size): a launch-bound step over fewer than HOST_ELEMENTS elements runs on the
host, a larger one on the backend it was given."""

import numpy as np
import pytest
import scipy.special

from attnverify.base.backend import HOST_ELEMENTS, Backend, cupy_works, for_size, get_backend


def test_below_the_threshold_the_host_above_it_the_backend_given():
    device = Backend("device", np, scipy.special)  # any backend other than numpy's
    assert for_size(device, 0) is get_backend("numpy")
    assert for_size(device, HOST_ELEMENTS - 1) is get_backend("numpy")
    assert for_size(device, HOST_ELEMENTS) is device
    assert for_size("numpy", 10**9) is get_backend("numpy")
    assert for_size(None, 4) is get_backend("numpy")


def test_a_backend_that_does_not_exist_is_refused_by_name_whatever_the_size():
    with pytest.raises(ValueError, match="backend must be one of"):
        for_size("tpu", 4)


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_works(), reason="no working cupy (GPU or stand-in)")
def test_cupy_keeps_large_steps_and_gives_small_ones_to_the_host():
    assert for_size("cupy", 4 * 30).name == "numpy"
    assert for_size("cupy", HOST_ELEMENTS).name == "cupy"
