"""One run's settings as one value, made and checked once where a run starts (the command line, the pytest
plugin, a notebook's or a script's call of the API) and passed whole to everything below.

What a run computes with: its ``profile``, array ``backend``, ``seed`` and the ``examples`` that override each
claim's number; where it keeps what it computes: ``store``, the run's [`Store`][attnverify.execution.store.Store]
of experiments (a folder's, shared by the run's processes and tasks, or, for one call of the API, one in this
process's memory: a run of tasks keeps its store in a folder, `attnverify.run.claims.run_store`); how it runs:
``workers`` local processes or the Dask ``scheduler``. Every refusal names the setting and its valid values.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..base import MOST_EXAMPLES, PROFILES
from ..base.arguments import Checked, backend as checked_backend, checked, integer, one_of
from ..base.backend import Backend, get_backend
from .store import Store


def _backend_name(name: str, value: Any) -> str:
    """The name of the backend ``value`` (a name, a `Backend` or None for numpy), refused when it cannot run here."""
    if value is None or isinstance(value, (str, Backend)):
        return get_backend(value).name  # its refusal names the backend and the valid ones
    return checked_backend(value, name).name


def _store(name: str, value: Any) -> Store:
    """The run's store: ``value`` itself, a `Store` of the folder ``value`` (made if missing), or a fresh one in
    memory for None."""
    if value is None:
        return Store()
    if isinstance(value, Store):
        return value
    if not isinstance(value, (str, Path)):
        raise TypeError(f"{name} must be a folder, an attnverify.execution.Store or None, got {type(value).__name__}")
    return Store(value)


def _scheduler(name: str, value: Any) -> str:
    """A scheduler that `attnverify.execution.cluster.parse_scheduler` accepts, refused before any work."""
    from .cluster import parse_scheduler

    parse_scheduler(value)
    return value


@dataclass(frozen=True)
class RunSettings(Checked):
    """A run's settings (module docstring). ``RunSettings()`` is the quick profile on numpy, seed 0, each
    claim's own number of examples, a store in memory, in this process."""

    profile: str = checked(one_of, PROFILES, default="quick")
    backend: str = checked(_backend_name, default="numpy")
    seed: int = checked(integer, 0, default=0)
    examples: int | None = checked(integer, 1, MOST_EXAMPLES, default=None, optional=True)
    store: Store = checked(_store, default=None, compare=False)
    workers: int = checked(integer, 1, default=1)
    scheduler: str | None = checked(_scheduler, default=None, optional=True)

    @property
    def array_backend(self) -> Backend:
        """The `Backend` ``backend`` names."""
        return get_backend(self.backend)

    @property
    def parallel(self) -> bool:
        """Whether the run's tasks go to worker processes or a cluster (else one after another, here)."""
        return self.scheduler is not None or self.workers > 1

    @property
    def folder(self) -> str | None:
        """The store's folder (None for a store in memory)."""
        return None if self.store.directory is None else str(self.store.directory)

    @property
    def computed(self) -> tuple[str, str, int]:
        """What a claim's examples depend on besides their own parameters and seeds: (profile, backend, seed)."""
        return self.profile, self.backend, self.seed

    def of_task(self) -> RunSettings:
        """These settings with a `Store` of their folder of its own: what a task of the run computes with, in this
        process as in a worker (each task reads the folder afresh and holds its results only while it runs, and no
        two tasks share an object). The settings themselves for a store in memory."""
        return self if self.folder is None else self.but(store=self.folder)

    def choose(self, *, quick: Any, thorough: Any) -> Any:
        """The value for the run's profile (sample sizes, grid sizes, numbers of seeds)."""
        return quick if self.profile == "quick" else thorough

    def but(self, **changes: Any) -> RunSettings:
        """These settings with ``changes`` (checked as when made)."""
        return replace(self, **changes) if changes else self

    @classmethod
    def given(cls, settings: RunSettings | None = None, **changes: Any) -> RunSettings:
        """The settings of a call of the API: ``settings`` (default `RunSettings()`) with the settings named as
        keywords (``run_claim(claim, profile="thorough")``)."""
        if settings is None:
            return cls(**changes)
        if not isinstance(settings, cls):
            raise TypeError(f"settings must be an attnverify.RunSettings or None, got {type(settings).__name__}")
        return settings.but(**changes)
