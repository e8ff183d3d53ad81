"""A folder of finished results (saddle-point solutions, sampler summaries), so that a long sweep never
loses or repeats one.

A result is filed under what it is a function of: a fingerprint of the training features and labels
(X, y) and the settings (heads, width N, temperature T, solver tolerance, or the sampler's settings and
seed). One ``.npz`` per result, written to a temporary name and renamed, so an interrupted run leaves only
whole files, and a rerun (or the report, or a claim) finds every result already computed for the same inputs.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

import numpy as np

from ...files import write_atomically


def fingerprint(X, y) -> str:
    """16 hex digits of SHA-256 over the float64 bytes and shapes of X and y."""
    digest = hashlib.sha256()
    for array in (X, y):
        array = np.ascontiguousarray(np.asarray(array, dtype=np.float64))
        digest.update(repr(array.shape).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()[:16]


def solution_name(features: str, heads: Sequence[int], width: float, temperature: float, tolerance: float) -> str:
    """The file name (without .npz) of a saddle-point solution."""
    heads_text = "x".join(str(int(h)) for h in heads)
    return f"{features}_H{heads_text}_N{float(width):g}_T{float(temperature):g}_tol{float(tolerance):g}"


class SolutionStore:
    """Named records of float64 arrays plus JSON metadata; saddle-point solutions keyed by inputs and settings."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def load(self, name: str) -> tuple[dict[str, np.ndarray], dict] | None:
        """(arrays, metadata) of the record ``name``, or None if there is none."""
        path = self.folder / f"{name}.npz"
        if not path.is_file():
            return None
        with np.load(path) as stored:
            arrays = {key: stored[key] for key in stored.files if key != "metadata"}
            return arrays, json.loads(str(stored["metadata"]))

    def save(self, name: str, arrays: dict[str, np.ndarray], metadata: dict) -> Path:
        """Write one record atomically: a crash leaves the old state or the new file, never half of it."""
        if "metadata" in arrays:
            raise ValueError("arrays must not contain the key 'metadata' (it holds the record's JSON metadata)")
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{name}.npz"
        write_atomically(path, lambda stream: np.savez(
            stream, metadata=np.array(json.dumps(metadata)),
            **{key: np.asarray(value, dtype=np.float64) for key, value in arrays.items()}))
        return path

    def get(self, features: str, heads: Sequence[int], width: float, temperature: float,
            tolerance: float) -> tuple[tuple[np.ndarray, ...], float] | None:
        """(order parameters (U_1, …, U_L), solve seconds) if this solution was stored, else None."""
        record = self.load(solution_name(features, heads, width, temperature, tolerance))
        if record is None:
            return None
        arrays, metadata = record
        return tuple(arrays[f"U_{level}"] for level in range(1, metadata["layers"] + 1)), float(metadata["seconds"])

    def put(self, features: str, heads: Sequence[int], width: float, temperature: float, tolerance: float,
            order_parameters: Sequence[np.ndarray], seconds: float) -> Path:
        """Store one saddle-point solution."""
        arrays = {f"U_{level}": U for level, U in enumerate(order_parameters, start=1)}
        return self.save(solution_name(features, heads, width, temperature, tolerance), arrays,
                         {"layers": len(arrays), "seconds": float(seconds)})

    def __len__(self) -> int:
        return len(list(self.folder.glob("*.npz"))) if self.folder.is_dir() else 0
