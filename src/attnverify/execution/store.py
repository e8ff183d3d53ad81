"""The run-scoped store of experiment results (no module-level caches).

``store.get(experiment, **parameters)`` returns ``experiment(**parameters)``, computed once per store
(``store.result(plan)`` that of a [`planned`][attnverify.execution.store.planned] one).
Parameters must be plain values (str, int, float, bool, None, or tuples of them): they make the key,
together with the experiment's module and name, so a result is found again only for the same call.
An experiment with a parameter named ``store`` is given the store itself (not part of the key), so that
it asks the store for the experiments it builds on.
With a ``directory``, results are also pickled there (atomically), so that worker processes of one run
share them and a result outlives the process that computed it. Each file carries its key and the SHA-256 of
its content (`attnverify.base.files`): a damaged, truncated, foreign or unreadable file is reported once, set
aside as ``<name>.damaged-<n>`` and computed again; a file that cannot be written (full disk, read-only
folder) is reported once, and the run goes on with the result in memory.

A theory names the experiments its section and claims use with [`planned`][attnverify.execution.store.planned] (its
``plan_experiments``, `attnverify.theories`): the run computes them ahead as tasks of their own, on every worker, and
the section and claims then find them in the store.
"""

from __future__ import annotations

import inspect
import pickle
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from ..base.files import fingerprint, read_entry, report_once, subfolder, write_entry

T = TypeVar("T")

_PLAIN = (str, int, float, bool, type(None))


def _check_plain(name: str, value: Any) -> None:
    if isinstance(value, tuple):
        for item in value:
            _check_plain(name, item)
    elif not isinstance(value, _PLAIN):
        raise TypeError(f"experiment parameter {name!r} must be a str, int, float, bool, None or a tuple of them "
                        f"(it is part of the store's key), got {type(value).__name__}")


def _unpickled(payload: bytes) -> tuple:
    """(the result,) pickled in ``payload``: a 1-tuple, so that a stored None is told from no entry."""
    return (pickle.loads(payload),)


def anonymous(experiment: Callable) -> bool:
    """Whether ``experiment`` has no name of its own: a lambda, a function defined inside another, a callable object
    (its module and qualified name are shared with others made alike)."""
    if not (inspect.isfunction(experiment) or inspect.ismethod(experiment) or inspect.isbuiltin(experiment)):
        return True
    return "<" in experiment.__qualname__


class Store:
    """Results of experiments for one run, keyed by (experiment, parameters)."""

    def __init__(self, directory: str | Path | None = None) -> None:
        if directory is not None and (not isinstance(directory, (str, Path)) or not str(directory).strip()):
            raise TypeError(f"directory must be a path (str or pathlib.Path) or None, got {directory!r}"[:200])
        self.directory = None if directory is None else Path(directory)
        if self.directory is not None:
            if self.directory.exists() and not self.directory.is_dir():
                raise ValueError(f"directory {str(directory)!r} exists and is not a directory; give a folder")
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise ValueError(f"directory {str(directory)!r} cannot be made ({error.strerror or error})") from None
        self._results: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._scratch: dict[str, tempfile.TemporaryDirectory] = {}
        self._anonymous: list[Callable] = []  # lambdas and local functions whose results are here (`anonymous`)

    def folder(self, name: str) -> Path:
        """A folder of the run for files an experiment keeps (e.g. saddle-point solutions): inside the store's
        directory, or a temporary folder removed with the store."""
        if not name.isidentifier():
            raise ValueError(f"folder name must be an identifier, got {name!r}")
        if self.directory is not None:
            try:
                return subfolder(self.directory / name)
            except OSError as error:  # e.g. a read-only store folder: the run keeps these files meanwhile
                report_once(("folder", str(self.directory / name)),
                            f"attnverify: error: cannot make {self.directory / name} ({error.strerror or error}); "
                            "this run keeps its files in a temporary folder instead")
        with self._lock:
            if name not in self._scratch:
                self._scratch[name] = tempfile.TemporaryDirectory(prefix=f"attnverify-{name}-")
            return Path(self._scratch[name].name)

    @staticmethod
    def key(experiment: Callable, parameters: dict) -> str:
        """``module.name(a=1, b='x')``: every parameter, defaults filled in, sorted by name (so that a call
        naming a default and one leaving it out find the same result)."""
        signature = inspect.signature(experiment)
        if "store" in signature.parameters:
            parameters = {**parameters, "store": None}
        try:
            bound = signature.bind(**parameters)
        except TypeError as error:
            raise TypeError(f"experiment {experiment.__qualname__} does not take these parameters: {error}") from None
        bound.apply_defaults()
        parameters = {k: v for k, v in bound.arguments.items() if k != "store"}
        for name, value in parameters.items():
            _check_plain(name, value)
        arguments = ", ".join(f"{k}={parameters[k]!r}" for k in sorted(parameters))
        # a lambda or a function made inside another shares its name with every other made there: the object itself
        # tells them apart (the store keeps it alive while it holds its results, so its id is not reused)
        unique = f"@{id(experiment):x}" if anonymous(experiment) else ""
        return f"{experiment.__module__}.{getattr(experiment, '__qualname__', type(experiment).__qualname__)}" \
               f"{unique}({arguments})"

    def _path(self, key: str) -> Path:
        return self.directory / (fingerprint(key) + ".pickle")

    def get(self, experiment: Callable[..., T], **parameters: Any) -> T:
        """``experiment(**parameters)``, computed at most once per store (and per directory)."""
        from ..base.arguments import function  # the store's import stays light: the CLI's --help reads it

        function("experiment", experiment)
        if "store" in parameters:
            raise TypeError("experiment parameter 'store' is not given: the store passes itself")
        if anonymous(experiment) and self.directory is not None:
            raise TypeError(f"experiment must be a function defined at the top level of a module for a store with a "
                            f"directory, whose results outlive the run under the experiment's module and name; got "
                            f"{experiment!r}, which has no name of its own")
        key = self.key(experiment, parameters)
        with self._lock:
            if key in self._results:
                return self._results[key]
            if anonymous(experiment):
                self._anonymous.append(experiment)
        if self.directory is not None:
            found = read_entry(self._path(key), key, _unpickled)
            if found is not None:
                with self._lock:
                    self._results[key] = found[0]
                return found[0]
        if "store" in inspect.signature(experiment).parameters:
            result = experiment(**parameters, store=self)
        else:
            result = experiment(**parameters)
        with self._lock:
            self._results[key] = result
        if self.directory is not None:
            try:
                pickled = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
            except (pickle.PicklingError, AttributeError, TypeError) as error:
                raise TypeError(f"experiment {experiment.__qualname__} returned a {type(result).__name__} that cannot "
                                f"be pickled ({error}): a store with a directory keeps results on disk") from None
            write_entry(self._path(key), key, pickled)
        return result

    def result(self, plan: Planned) -> Any:
        """The result of a planned experiment (`planned`): ``get(plan.experiment, **plan.parameters)``, so that a
        section or claim asks for what the theory's plan computed ahead by the same value."""
        if not isinstance(plan, Planned):
            raise TypeError(f"plan must be a planned experiment (attnverify.execution.store.planned), got {plan!r}")
        return self.get(plan.experiment, **dict(plan.parameters))

    def __reduce__(self):
        """A store with a folder goes to another process as its folder (the results there are read back); one in
        memory cannot go at all: a run on worker processes keeps its store in a folder (`attnverify.run.claims`)."""
        if self.directory is None:
            raise TypeError("a Store in memory cannot be sent to another process: give the run a store folder")
        return Store, (str(self.directory),)

    def __copy__(self) -> Store:
        return self  # a handle on the run's results: a copy of settings that hold it holds the same store

    def __deepcopy__(self, memo: dict) -> Store:
        return self

    def __contains__(self, key: str) -> bool:
        return key in self._results or (self.directory is not None and self._path(key).is_file())

    def __len__(self) -> int:
        return len(self._results)

    def __repr__(self) -> str:
        where = f", directory={str(self.directory)!r}" if self.directory is not None else ""
        return f"Store({len(self._results)} results{where})"


@dataclass(frozen=True)
class Planned:
    """``experiment(**parameters)``, to be computed by a task of the run after the experiments in ``after``
    (those it asks the store for: planning them first keeps two workers from computing one result twice)."""

    experiment: Callable
    parameters: tuple
    after: tuple = ()

    @property
    def key(self) -> str:
        """The store's key of the result ([`Store.key`][attnverify.execution.store.Store.key])."""
        return Store.key(self.experiment, dict(self.parameters))

    @property
    def label(self) -> str:
        """``name(a=1, b='x')``, the parameters as given: the task's name in progress lines and results.json."""
        arguments = ", ".join(f"{k}={v!r}" for k, v in self.parameters)
        return f"{self.experiment.__name__}({arguments})"


def planned(experiment: Callable, *, after: tuple = (), **parameters: Any) -> Planned:
    """An experiment a theory asks the run to compute ahead (checked now: a bad parameter fails at planning)."""
    from ..base.arguments import function

    function("experiment", experiment)
    for item in after:
        if not isinstance(item, Planned):
            raise TypeError(f"after must hold planned experiments, got {item!r}")
    plan = Planned(experiment, tuple(sorted(parameters.items())), tuple(after))
    plan.key  # noqa: B018  (raises on parameters the experiment does not take or that are not plain)
    return plan
