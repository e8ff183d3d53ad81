"""The saddle engine takes real data only: complex or object kernels and features are refused in one line by name,
never cast (numpy's cast of a complex array drops its imaginary part with only a ComplexWarning)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from attnverify.saddle import predict, solve
from attnverify.saddle.solve import data_energy
from attnverify.theories.attention_paths.action import ActionConfig, solve_paths


def _features(P: int = 6, N0: int = 2, paths: int = 2):
    X = np.random.default_rng(0).normal(size=(P, N0, paths)) / np.sqrt(N0 * paths)
    return X, np.where(np.arange(P) % 2 == 0, 1.0, -1.0)


def _kernels():
    X, y = _features()
    return np.einsum("pia,qib->abpq", X, X), y


def _bad(value: np.ndarray) -> list[tuple[np.ndarray, str]]:
    return [(value.astype(complex) + 1e-3j, "complex128"), (value.astype(object), "object")]


def _refused(call, key: str, dtype: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ComplexWarning would mean the array was cast before it was checked
        with pytest.raises(TypeError, match=rf"^{key} must be an array of real numbers, got dtype {dtype}$"):
            call()


@pytest.mark.parametrize("key", ["C", "X"])
def test_solve_paths_refuses_complex_and_object_data_by_name(key):
    data, y = _kernels() if key == "C" else _features()
    for bad, dtype in _bad(data):
        _refused(lambda: solve_paths({key: bad, "y": y}, heads=(2,), width=5, temperature=0.5, tolerance=1e-8),
                 key, dtype)


@pytest.mark.parametrize("key", ["C", "X"])
def test_the_engines_data_entry_points_refuse_complex_and_object_data_by_name(key):
    data, y = _kernels() if key == "C" else _features()
    config = ActionConfig.build((2,), 5, 0.5, 1.0)
    for bad, dtype in _bad(data):
        _refused(lambda: data_energy({key: bad, "y": y}, 0.5), key, dtype)
        _refused(lambda: solve(config.action, {key: bad, "y": y}, temperature=0.5, **config.parameters()), key,
                 dtype)


@pytest.mark.parametrize("key", ["C", "X"])
def test_predict_refuses_complex_and_object_training_data_by_name(key):
    data, y = _kernels() if key == "C" else _features()
    config = ActionConfig.build((2,), 5, 0.5, 1.0)
    solution = solve_paths({key: data, "y": y}, heads=(2,), width=5, temperature=0.5, tolerance=1e-8)
    test = {"X_test": data} if key == "X" else {"C_test": data, "C_test_diagonal": np.einsum("abpp->abp", data)}
    for bad, dtype in _bad(data):
        _refused(lambda: predict(config.action, solution, {key: bad, "y": y}, test), key, dtype)
