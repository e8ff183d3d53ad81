"""A folder of finished results (saddle-point solutions, sampler summaries), so that a long sweep never
loses or repeats one.

A result is filed under what it is a function of: a fingerprint of the training features and labels
(X, y) and the settings (heads, width N, temperature T, solver tolerance, or the sampler's settings and
seed). One ``.npz`` per result, written to a temporary name and renamed, so an interrupted run leaves only
whole files, and a rerun (or the report, or a claim) finds every result already computed for the same inputs.
A record names itself in its metadata and the zip format checks each array's CRC-32 as it is read: a damaged,
truncated, foreign or unreadable record (or a folder in its place) is reported once, set aside as
``<name>.npz.damaged-<n>`` and computed again; one that cannot be written (full disk, read-only folder) is
reported once and not kept (:mod:`attnverify.base.files`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ...base import files
from ...base.files import report_unwritable, set_aside, subfolder, write_atomically


def fingerprint(X, y) -> str:
    """The features' key: :func:`attnverify.base.files.fingerprint` of X and y (values and shapes)."""
    return files.fingerprint(X, y)


def solution_name(features: str, heads: Sequence[int], width: float, temperature: float, tolerance: float) -> str:
    """The file name (without .npz) of a saddle-point solution."""
    heads_text = "x".join(str(int(h)) for h in heads)
    return f"{features}_H{heads_text}_N{float(width):g}_T{float(temperature):g}_tol{float(tolerance):g}"


class SolutionStore:
    """Named records of float64 arrays plus JSON metadata; saddle-point solutions keyed by inputs and settings."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)

    def load(self, name: str) -> tuple[dict[str, np.ndarray], dict] | None:
        """(arrays, metadata) of the record ``name``, or None if there is none (or it was damaged: set aside)."""
        path = self.folder / f"{name}.npz"
        identity = None
        try:
            with open(path, "rb") as stream:
                identity = os.fstat(stream.fileno())
                with np.load(stream, allow_pickle=False) as stored:
                    arrays = {key: stored[key] for key in stored.files if key != "metadata"}
                    metadata = json.loads(str(stored["metadata"]))
        except FileNotFoundError:
            return None
        except IsADirectoryError:
            return self._set_aside(path, "a folder where a file belongs", identity)
        except OSError as error:
            return self._set_aside(path, f"unreadable ({error.strerror or error})", identity)
        except Exception as error:  # noqa: BLE001 (zipfile, numpy and json each have their own errors)
            return self._set_aside(path, f"damaged or truncated ({type(error).__name__}: {str(error)[:120]})", identity)
        if not isinstance(metadata, dict) or metadata.get("name", name) != name:
            return self._set_aside(path, "the record of another name", identity)
        return arrays, metadata

    @staticmethod
    def _set_aside(path: Path, reason: str, identity) -> None:
        set_aside(path, reason, identity)
        return None

    def save(self, name: str, arrays: dict[str, np.ndarray], metadata: dict) -> Path | None:
        """Write one record atomically: a crash leaves the old state or the new file, never half of it. None
        (reported once) when it cannot be written, e.g. on a full disk: the records written before stay."""
        if "metadata" in arrays:
            raise ValueError("arrays must not contain the key 'metadata' (it holds the record's JSON metadata)")
        path = self.folder / f"{name}.npz"
        content = {key: np.asarray(value, dtype=np.float64) for key, value in arrays.items()}
        try:
            subfolder(self.folder)
            if path.is_dir():
                set_aside(path, "a folder where a file belongs")
            return write_atomically(path, lambda stream: np.savez(
                stream, metadata=np.array(json.dumps({**metadata, "name": name})), **content))
        except OSError as error:
            report_unwritable(path, error)
            return None

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
            return self._set_aside(self.folder / f"{name}.npz", problem, None)

    def put(self, features: str, heads: Sequence[int], width: float, temperature: float, tolerance: float,
            order_parameters: Sequence[np.ndarray], seconds: float) -> Path | None:
        """Store one saddle-point solution (None when it cannot be written, see :meth:`save`)."""
        arrays = {f"U_{level}": U for level, U in enumerate(order_parameters, start=1)}
        return self.save(solution_name(features, heads, width, temperature, tolerance), arrays,
                         {"layers": len(arrays), "seconds": float(seconds)})

    def __len__(self) -> int:
        return len(list(self.folder.glob("*.npz"))) if self.folder.is_dir() else 0
