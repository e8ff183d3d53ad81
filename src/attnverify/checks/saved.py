"""A run's finished examples and claim results, kept in its store folder, so that a rerun after an interruption
checks only what is missing (``--store DIR`` of ``check``, ``verify`` and ``report``).

An example is kept under its claim, the run's profile, backend and seed, and the fingerprint of the file that
defines the claim's check (an edited claims file starts afresh); a claim's result also under the run's number of
examples. What an example shows depends only on its parameters and Monte Carlo seed
(`example_key`), so a kept one is as good as one checked again. Only the process
that runs the run writes here (the client, on a cluster), each file atomically. Each file carries its identity and
a checksum (`attnverify.base.files`): one that is damaged, truncated, foreign, unreadable or holds the wrong object
is reported once, set aside and checked again; one that cannot be written is reported once and not kept.
"""

from __future__ import annotations

import inspect
import pickle
import threading
from pathlib import Path

from ..base.files import fingerprint, read_entry, subfolder, write_entry
from ..execution.settings import RunSettings
from .claim import Claim
from .runner import Example, example_key


def _fingerprint(claim: Claim) -> str:
    """The SHA-256 of the file that defines ``claim``'s check (its name when it has no file)."""
    try:
        source = Path(inspect.getsourcefile(claim.check)).read_bytes()
    except (TypeError, OSError):
        source = claim.name.encode()
    return fingerprint(source)


def _examples_problem(value) -> str | None:
    """What is wrong with ``value`` as kept examples (a dict of `Example` by key), or None."""
    if not isinstance(value, dict):
        return f"a {type(value).__name__}, not a dict of examples"
    wrong = next((v for k, v in value.items() if not (isinstance(k, str) and isinstance(v, Example))), None)
    return None if wrong is None else f"a {type(wrong).__name__} among the examples"


def _result_problem(claim: Claim):
    """The check of a kept result of ``claim``: a dict (``ClaimResult.as_dict()``) naming the claim."""
    def problem(value) -> str | None:
        if not isinstance(value, dict) or not {"name", "status", "ok"} <= value.keys():
            return f"a {type(value).__name__}, not a claim's result"
        return None if value["name"] == claim.name else f"the result of {value['name']!r}, not {claim.name!r}"
    return problem


class SavedChecks:
    """The examples and results of claims finished in a run whose store folder is ``directory``."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = subfolder(Path(directory) / "checks")
        self._lock = threading.Lock()

    def _entry(self, kind: str, claim: Claim, *parts) -> tuple[Path, str]:
        """(the file, the identity it is kept under) of ``kind`` for ``claim`` and the run's ``parts``."""
        identity = repr((claim.name, _fingerprint(claim), *parts))
        name = f"{claim.name}.{kind}.{fingerprint(identity)}.pickle"
        return self.directory / name, f"{kind} {identity}"

    def examples(self, claim: Claim, settings: RunSettings) -> dict[str, Example]:
        """The examples of ``claim`` kept for the run of ``settings``, by `example_key`."""
        path, identity = self._entry("examples", claim, *settings.computed)
        kept = read_entry(path, identity, pickle.loads, _examples_problem)
        return {} if kept is None else kept

    def add_examples(self, claim: Claim, examples: list[Example], settings: RunSettings) -> None:
        """Keep ``examples`` of ``claim`` with those kept already."""
        with self._lock:
            kept = self.examples(claim, settings)
            kept.update({example_key(e.parameters, e.seed): e for e in examples})
            path, identity = self._entry("examples", claim, *settings.computed)
            write_entry(path, identity, pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL))

    def result(self, claim: Claim, settings: RunSettings) -> dict | None:
        """The finished result (``ClaimResult.as_dict()``) of ``claim`` in the run of ``settings``, or None."""
        path, identity = self._entry("result", claim, *settings.computed, settings.examples)
        return read_entry(path, identity, pickle.loads, _result_problem(claim))

    def save_result(self, claim: Claim, result: dict, settings: RunSettings) -> None:
        """Keep the finished ``result`` of ``claim`` (not one whose task itself failed: that one runs again)."""
        path, identity = self._entry("result", claim, *settings.computed, settings.examples)
        write_entry(path, identity, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
