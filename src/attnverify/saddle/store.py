"""A folder of finished results (saddle-point solutions, sampler summaries), so that a long sweep never
loses or repeats one.

A result is filed under what it is a function of: a fingerprint of the training data (X or C, and y) and the
settings (the declared action, its parameter values, the temperature T and the solver tolerance; or a sampler's
settings and seed). One entry per result in the package's one store format (`attnverify.base.files`: a header with its
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
from typing import Any, Mapping, Sequence

import numpy as np

from ..base import files
from ..base.files import read_entry, report_unwritable, set_aside, subfolder, write_entry


def fingerprint(X, y) -> str:
    """The features' key: `attnverify.base.files.fingerprint` of X and y (values and shapes)."""
    return files.fingerprint(X, y)


def _unpickled(payload: bytes) -> tuple:
    return pickle.loads(payload)


def _record_problem(value) -> str | None:
    """What is wrong with ``value`` as a record ((arrays, metadata)), or None."""
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], dict) and isinstance(value[1], dict)):
        return f"a {type(value).__name__}, not a record of arrays and metadata"
    return None


def solution_name(features: str, declaration, values: Sequence[float], temperature: float, tolerance: float) -> str:
    """The record name (the file without its ``.entry``) of a saddle-point solution: the data's fingerprint and a
    digest of the action (its entropy and kernel), the parameter values, T and the tolerance."""
    key = json.dumps([str(declaration.entropy), declaration.kernel.name, [float(v) for v in values],
                      float(temperature), float(tolerance)])
    return f"{features}_{files.fingerprint(key)[:20]}"


class SolutionStore:
    """Named records of float64 arrays plus metadata; saddle-point solutions keyed by data, action and settings."""

    def __init__(self, folder: str | Path):
        if not isinstance(folder, (str, Path)) or not str(folder).strip():
            raise TypeError(f"folder must be a path (str or pathlib.Path), got {folder!r}"[:200])
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
        content = {}
        for key, value in arrays.items():
            try:
                content[key] = np.asarray(value, dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError(f"arrays[{key!r}] must be an array of numbers (a record holds float64 arrays), got "
                                f"{type(value).__name__} {value!r}"[:200]) from None
        path = self._path(name)
        try:
            subfolder(self.folder)
        except OSError as error:
            report_unwritable(path, error)
            return None
        payload = pickle.dumps((content, json.loads(json.dumps(metadata))), protocol=pickle.HIGHEST_PROTOCOL)
        return path if write_entry(path, name, payload) else None

    def get(self, features: str, declaration, values: Sequence[float], temperature: float,
            tolerance: float) -> tuple[dict[str, Any], float] | None:
        """(order parameters by name, solve seconds) if this solution was stored, else None."""
        name = solution_name(features, declaration, values, temperature, tolerance)
        record = self.load(name)
        if record is None:
            return None
        arrays, metadata = record
        try:
            order = {op.name: (float(arrays[op.name]) if op.size == 0 else arrays[op.name])
                     for op in declaration.order_parameters}
            return order, float(metadata["seconds"])
        except (KeyError, TypeError, ValueError) as error:
            problem = f"not a saddle-point solution of this action ({type(error).__name__}: {error})"
            set_aside(self._path(name), problem)
            return None

    def put(self, features: str, declaration, values: Sequence[float], temperature: float, tolerance: float,
            order_parameters: Mapping[str, Any], seconds: float) -> Path | None:
        """Store one saddle-point solution (None when it cannot be written, see `save`)."""
        return self.save(solution_name(features, declaration, values, temperature, tolerance),
                         {name: np.asarray(value, dtype=float) for name, value in order_parameters.items()},
                         {"seconds": float(seconds)})

    def __len__(self) -> int:
        return len(list(self.folder.glob("*.entry"))) if self.folder.is_dir() else 0
