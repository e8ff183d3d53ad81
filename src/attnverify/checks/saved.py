"""A run's finished examples and claim results, kept in its store folder, so that a rerun after an interruption
checks only what is missing (``--store DIR`` of ``check``, ``verify`` and ``report``).

An example is kept under its claim, the run's profile, backend and seed, and the fingerprint of the file that
defines the claim's check (an edited claims file starts afresh); a claim's result also under the run's number of
examples. What an example shows depends only on its parameters and Monte Carlo seed
(:func:`~attnverify.checks.runner.example_key`), so a kept one is as good as one checked again. Only the process
that runs the run writes here (the client, on a cluster), each file atomically.
"""

from __future__ import annotations

import hashlib
import inspect
import pickle
import threading
from pathlib import Path

from ..files import write_atomically
from .claim import Claim
from .runner import Example, example_key


def _fingerprint(claim: Claim) -> str:
    """The SHA-256 of the file that defines ``claim``'s check (its name when it has no file)."""
    try:
        source = Path(inspect.getsourcefile(claim.check)).read_bytes()
    except (TypeError, OSError):
        source = claim.name.encode()
    return hashlib.sha256(source).hexdigest()[:16]


class SavedChecks:
    """The examples and results of claims finished in a run whose store folder is ``directory``."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory) / "checks"
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def _path(self, kind: str, claim: Claim, *parts) -> Path:
        identity = repr((claim.name, _fingerprint(claim), *parts))
        return self.directory / f"{claim.name}.{kind}.{hashlib.sha256(identity.encode()).hexdigest()[:16]}.pickle"

    def examples(self, claim: Claim, *, profile: str, backend: str, seed: int) -> dict[str, Example]:
        """The examples of ``claim`` kept for this run, by :func:`example_key`."""
        path = self._path("examples", claim, profile, backend, seed)
        if not path.is_file():
            return {}
        with open(path, "rb") as handle:
            return pickle.load(handle)

    def add_examples(self, claim: Claim, examples: list[Example], *, profile: str, backend: str, seed: int) -> None:
        """Keep ``examples`` of ``claim`` with those kept already."""
        with self._lock:
            kept = self.examples(claim, profile=profile, backend=backend, seed=seed)
            kept.update({example_key(e.parameters, e.seed): e for e in examples})
            write_atomically(self._path("examples", claim, profile, backend, seed),
                             pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL))

    def result(self, claim: Claim, *, profile: str, backend: str, seed: int, examples: int | None) -> dict | None:
        """The finished result (``ClaimResult.as_dict()``) of ``claim`` in this run, or None."""
        path = self._path("result", claim, profile, backend, seed, examples)
        if not path.is_file():
            return None
        with open(path, "rb") as handle:
            return pickle.load(handle)

    def save_result(self, claim: Claim, result: dict, *, profile: str, backend: str, seed: int,
                    examples: int | None) -> None:
        """Keep the finished ``result`` of ``claim`` (not one whose task itself failed: that one runs again)."""
        write_atomically(self._path("result", claim, profile, backend, seed, examples),
                         pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
