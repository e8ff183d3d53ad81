"""A folder of finished results (saddle-point solutions, sampler summaries), so that a long sweep never
loses or repeats one.

A result is filed under what it is a function of: a fingerprint of the training features and labels
(X, y) and the settings (heads, width N, temperature T, solver tolerance, or the sampler's settings and
seed). One entry per result in the package's one store format (:mod:`attnverify.base.files`: a header with its
name and the SHA-256 of its content, written to a temporary name and renamed), so an interrupted run leaves only
whole files, and a rerun (or the report, or a claim) finds every result already computed for the same inputs.
A damaged, truncated, foreign or unreadable record (or a folder in its place) is reported once, set aside as
``<name>.entry.damaged-<n>`` and computed again; one that cannot be written (full disk, read-only folder) is
reported once and not kept.
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Sequence

import numpy as np

from ...base import files
from ...base.files import read_entry, report_unwritable, set_aside, subfolder, write_entry


def fingerprint(X, y) -> str:
    """The features' key: :func:`attnverify.base.files.fingerprint` of X and y (values and shapes)."""
    return files.fingerprint(X, y)


def _unpickled(payload: bytes) -> tuple:
    return pickle.loads(payload)


def _record_problem(value) -> str | None:
    """What is wrong with ``value`` as a record ((arrays, metadata)), or None."""
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], dict) and isinstance(value[1], dict)):
        return f"a {type(value).__name__}, not a record of arrays and metadata"
    return None


def solution_name(features: str, heads: Sequence[int], width: float, temperature: float, tolerance: float) -> str:
    """The record name (the file without its ``.entry``) of a saddle-point solution."""
    heads_text = "x".join(str(int(h)) for h in heads)
    return f"{features}_H{heads_text}_N{float(width):g}_T{float(temperature):g}_tol{float(tolerance):g}"


class SolutionStore:
    """Named records of float64 arrays plus metadata; saddle-point solutions keyed by inputs and settings."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def _path(self, name: str) -> Path:
        return self.folder / f"{name}.entry"

    def load(self, name: str) -> tuple[dict[str, np.ndarray], dict] | None:
        """(arrays, metadata) of the record ``name``, or None if there is none (or it was damaged: set aside)."""
        return read_entry(self._path(name), name, _unpickled, _record_problem)

    def save(self, name: str, arrays: dict[str, np.ndarray], metadata: dict) -> Path | None:
        """Write one record atomically: a crash leaves the old state or the new file, never half of it. None
        (reported once) when it cannot be written, e.g. on a full disk: the records written before stay."""
        if "metadata" in arrays:
            raise ValueError("arrays must not contain the key 'metadata' (it holds the record's metadata)")
        content = {key: np.asarray(value, dtype=np.float64) for key, value in arrays.items()}
        path = self._path(name)
        try:
            subfolder(self.folder)
        except OSError as error:
            report_unwritable(path, error)
            return None
        payload = pickle.dumps((content, json.loads(json.dumps(metadata))), protocol=pickle.HIGHEST_PROTOCOL)
        return path if write_entry(path, name, payload) else None

    def get(self, features: str, heads: Sequence[int], width: float, temperature: float,
            tolerance: float) -> tuple[tuple[np.ndarray, ...], float] | None:
        """(order parameters (U_1, …, U_L), solve seconds) if this solution was stored, else None."""
        name = solution_name(features, heads, width, temperature, tolerance)
        record = self.load(name)
        if record is None:
            return None
        arrays, metadata = record
        try:
            return tuple(arrays[f"U_{level}"] for level in range(1, metadata["layers"] + 1)), float(metadata["seconds"])
        except (KeyError, TypeError, ValueError) as error:
            problem = f"not a saddle-point solution ({type(error).__name__}: {error})"
            set_aside(self._path(name), problem)
            return None

    def put(self, features: str, heads: Sequence[int], width: float, temperature: float, tolerance: float,
            order_parameters: Sequence[np.ndarray], seconds: float) -> Path | None:
        """Store one saddle-point solution (None when it cannot be written, see :meth:`save`)."""
        arrays = {f"U_{level}": U for level, U in enumerate(order_parameters, start=1)}
        return self.save(solution_name(features, heads, width, temperature, tolerance), arrays,
                         {"layers": len(arrays), "seconds": float(seconds)})

    def __len__(self) -> int:
        return len(list(self.folder.glob("*.entry"))) if self.folder.is_dir() else 0
