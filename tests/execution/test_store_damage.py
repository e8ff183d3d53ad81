"""A store that cannot lie: every kept file (an experiment's result, a claim's examples or result, a
saddle-point solution) is verified when it is read. A damaged, truncated, empty, garbled, foreign or unreadable
file, or a folder in its place, is reported once, set aside as ``<name>.damaged-<n>`` and computed again; a write
that fails (a full disk, a read-only folder) is reported once, removes its partial file and leaves the earlier
files as they were."""

from __future__ import annotations

import errno
import logging
import pickle

import numpy as np
import pytest

from attnverify.base import files
from attnverify.checks import claim, close, st
from attnverify.checks.runner import Example, example_key, run_claim
from attnverify.execution.settings import RunSettings
from attnverify.checks.saved import SavedChecks
from attnverify.execution import Store
from attnverify.saddle import SolutionStore

calls = []


def cube(*, x):
    calls.append(x)
    return {"cube": x**3}


@pytest.fixture(autouse=True)
def fresh_reports(monkeypatch, caplog):
    """Each test sees its own reports (a process reports each damage and each failing disk once)."""
    monkeypatch.setattr(files, "_reported", set())
    caplog.set_level(logging.WARNING, logger="attnverify.store")


def _reports(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "attnverify.store"]


def _stored(tmp_path, x=2):
    """A store folder holding cube(x=x), and the path of that file."""
    Store(tmp_path).get(cube, x=x)
    (path,) = [p for p in tmp_path.glob("*.pickle") if p.is_file()]
    return path


def _recomputed_once(tmp_path, path, caplog, what: str) -> None:
    """A fresh store computes cube(x=2) again, sets the damaged file aside and says so once, naming it."""
    calls.clear()
    assert Store(tmp_path).get(cube, x=2) == {"cube": 8}
    assert calls == [2]  # computed again, not taken from the damaged file
    assert Store(tmp_path).get(cube, x=2) == {"cube": 8} and calls == [2]  # the new file is good
    assert path.with_name(path.name + ".damaged-1").exists()  # kept for inspection, not deleted
    (report,) = _reports(caplog)
    assert str(path) in report and what in report and "set aside as" in report


def test_a_truncated_experiment_file_is_set_aside_and_recomputed(tmp_path, caplog):
    path = _stored(tmp_path)
    path.write_bytes(path.read_bytes()[:-7])
    _recomputed_once(tmp_path, path, caplog, "truncated")


def test_an_empty_experiment_file_is_set_aside_and_recomputed(tmp_path, caplog):
    path = _stored(tmp_path)
    path.write_bytes(b"")
    _recomputed_once(tmp_path, path, caplog, "empty (0 bytes)")


def test_a_garbled_experiment_file_is_set_aside_and_recomputed(tmp_path, caplog):
    path = _stored(tmp_path)
    content = bytearray(path.read_bytes())
    content[-3] ^= 0xFF  # one flipped byte in the pickle: it may still unpickle, to a wrong value
    path.write_bytes(bytes(content))
    _recomputed_once(tmp_path, path, caplog, "SHA-256")


def test_a_file_from_an_older_version_or_elsewhere_is_set_aside(tmp_path, caplog):
    path = _stored(tmp_path)
    path.write_bytes(pickle.dumps((Store.key(cube, {"x": 2}), {"cube": "not 8"})))  # the old format: no header
    _recomputed_once(tmp_path, path, caplog, "not an attnverify store entry")


def test_a_file_holding_another_entry_is_set_aside(tmp_path, caplog):
    path = _stored(tmp_path, x=2)
    other = _stored(tmp_path / "other", x=3)
    path.write_bytes(other.read_bytes())  # a whole, valid entry, of cube(x=3)
    _recomputed_once(tmp_path, path, caplog, "another key")


def test_an_entry_that_cannot_be_unpickled_is_set_aside(tmp_path, caplog):
    """A whole entry with a right checksum whose pickle names a module that is gone (e.g. a class since moved)."""
    path = _stored(tmp_path)
    module = cube.__module__.encode()
    payload = pickle.dumps(cube).replace(module, b"x" * len(module))
    path.write_bytes(files.pack_entry(Store.key(cube, {"x": 2}), payload))
    _recomputed_once(tmp_path, path, caplog, "unreadable (ModuleNotFoundError")


def test_a_folder_in_place_of_an_experiment_file_is_set_aside(tmp_path, caplog):
    path = _stored(tmp_path)
    path.unlink()
    (path / "inside").mkdir(parents=True)
    _recomputed_once(tmp_path, path, caplog, "a folder where a file belongs")
    assert path.is_file() and (path.with_name(path.name + ".damaged-1") / "inside").is_dir()


def test_a_second_damage_of_one_file_is_set_aside_under_the_next_number(tmp_path, caplog):
    path = _stored(tmp_path)
    for n in (1, 2):
        path.write_bytes(b"garbage")
        files._reported.clear()
        assert Store(tmp_path).get(cube, x=2) == {"cube": 8}
        assert path.with_name(f"{path.name}.damaged-{n}").read_bytes() == b"garbage"


def test_a_damaged_file_is_reported_once_by_every_store_of_a_process(tmp_path, caplog, monkeypatch):
    """Set aside by the first reader; when it cannot be set aside (a read-only folder), still one report."""
    path = _stored(tmp_path)
    path.write_bytes(b"garbage")
    monkeypatch.setattr(files.os, "rename", _refuse(errno.EROFS))
    monkeypatch.setattr(files, "_open_temporary", _full_disk(after=0, code=errno.EROFS))
    for _ in range(3):
        assert Store(tmp_path).get(cube, x=2) == {"cube": 8}
    reports = _reports(caplog)
    assert len([r for r in reports if str(path) in r and "cannot be set aside" in r]) == 1
    assert len(reports) == 2 and "Read-only file system" in reports[1]  # and the write that failed, once
    assert path.read_bytes() == b"garbage"


def test_a_store_directory_that_is_a_file_is_refused_by_name(tmp_path):
    path = tmp_path / "a-file"
    path.write_text("x")
    with pytest.raises(ValueError, match="directory '.*a-file' exists and is not a directory"):
        Store(path)


def test_a_file_in_place_of_a_store_folder_is_set_aside(tmp_path, caplog):
    (tmp_path / "solutions").write_text("not a folder")
    assert Store(tmp_path).folder("solutions").is_dir()
    assert (tmp_path / "solutions.damaged-1").read_text() == "not a folder"
    assert "a file where a folder belongs" in _reports(caplog)[0]


# ----------------------------------------------------------------------------- writes that fail


class _FailingStream:
    """A temporary file's stream on a full disk: it takes half of the first write, then raises."""

    def __init__(self, stream, code):
        self.stream, self.code = stream, code

    def write(self, data):
        self.stream.write(bytes(data)[: len(data) // 2])
        raise OSError(self.code, files.os.strerror(self.code))

    def __getattr__(self, name):
        return getattr(self.stream, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stream.close()


def _full_disk(after: int, code: int = errno.ENOSPC):
    """An ``_open_temporary`` whose streams fail after ``after`` good files."""
    opened = []
    real = files.os.fdopen

    def open_temporary(handle):
        opened.append(handle)
        stream = real(handle, "wb")
        return stream if len(opened) <= after else _FailingStream(stream, code)

    return open_temporary


def _refuse(code: int):
    def refuse(*args, **kwargs):
        raise OSError(code, files.os.strerror(code))
    return refuse


def test_a_full_disk_keeps_the_result_in_memory_and_the_earlier_files(tmp_path, caplog, monkeypatch):
    earlier = _stored(tmp_path, x=2)
    before = earlier.read_bytes()
    monkeypatch.setattr(files, "_open_temporary", _full_disk(after=0))
    store = Store(tmp_path)
    for x in (3, 4):
        assert store.get(cube, x=x) == {"cube": x**3}  # the run goes on
    assert earlier.read_bytes() == before and store.get(cube, x=2) == {"cube": 8}
    assert not list(tmp_path.glob(".*.part"))  # the partial files are removed
    assert sorted(p.name for p in tmp_path.iterdir()) == [earlier.name]
    (report,) = _reports(caplog)  # one line for the disk, not one per file
    assert "No space left on device" in report and str(tmp_path) in report


def test_a_failing_rewrite_leaves_the_earlier_file_whole(tmp_path, caplog, monkeypatch):
    """Adding examples rewrites their file: on a full disk the examples kept before stay readable."""
    saved, run = SavedChecks(tmp_path), RunSettings()
    first = Example(parameters={"x": 1}, seed=11)
    saved.add_examples(tiny_claim, [first], run)
    monkeypatch.setattr(files, "_open_temporary", _full_disk(after=0))
    saved.add_examples(tiny_claim, [Example(parameters={"x": 2}, seed=12)], run)
    assert SavedChecks(tmp_path).examples(tiny_claim, run) == {example_key({"x": 1}, 11): first}
    assert not list((tmp_path / "checks").glob(".*.part"))
    assert "No space left on device" in _reports(caplog)[0]


def test_a_read_only_folder_is_reported_once_and_the_run_goes_on(tmp_path, caplog, monkeypatch):
    earlier = _stored(tmp_path, x=2)
    monkeypatch.setattr(files.tempfile, "mkstemp", _refuse(errno.EACCES))  # as chmod a-w would (not for root)
    store = Store(tmp_path)
    assert [store.get(cube, x=x) for x in (2, 3, 4)] == [{"cube": 8}, {"cube": 27}, {"cube": 64}]
    (report,) = _reports(caplog)
    assert "Permission denied" in report and str(tmp_path) in report and earlier.exists()


# ----------------------------------------------------------------------------- a claim's examples and result


@claim("tiny.square", parameters=st.fixed_dictionaries({"x": st.integers(-3, 3)}), examples={"quick": 3, "thorough": 3})
def tiny_claim(params, ctx):
    """x² = x·x."""
    return close(params["x"] ** 2, params["x"] * params["x"])


RUN = RunSettings()


def _saved_run(tmp_path):
    """A store folder holding tiny_claim's examples and result; (saved checks, result file, examples file)."""
    saved = SavedChecks(tmp_path)
    result = run_claim(tiny_claim, profile="quick", seed=0)
    saved.add_examples(tiny_claim, result.examples, RUN)
    saved.save_result(tiny_claim, result.as_dict(), RUN)
    (result_file,) = (tmp_path / "checks").glob("*.result.*.pickle")
    (examples_file,) = (tmp_path / "checks").glob("*.examples.*.pickle")
    return saved, result.as_dict(), result_file, examples_file


def test_kept_examples_and_results_are_read_back(tmp_path):
    saved, result, _, _ = _saved_run(tmp_path)
    assert SavedChecks(tmp_path).result(tiny_claim, RUN) == result
    assert len(SavedChecks(tmp_path).examples(tiny_claim, RUN)) == 3


def test_a_claim_result_cut_to_zero_bytes_is_set_aside(tmp_path, caplog):
    _, _, result_file, _ = _saved_run(tmp_path)
    result_file.write_bytes(b"")
    assert SavedChecks(tmp_path).result(tiny_claim, RUN) is None  # the claim runs again
    assert result_file.with_name(result_file.name + ".damaged-1").exists() and not result_file.exists()
    (report,) = _reports(caplog)
    assert str(result_file) in report and "empty (0 bytes)" in report


def test_a_garbled_examples_file_is_set_aside(tmp_path, caplog):
    _, _, _, examples_file = _saved_run(tmp_path)
    examples_file.write_bytes(b"\x80\x05garbled" + examples_file.read_bytes()[40:])
    assert SavedChecks(tmp_path).examples(tiny_claim, RUN) == {}
    assert str(examples_file) in _reports(caplog)[0]


@pytest.mark.parametrize("kind, wrong, what", [
    ("result", ["not", "a", "dict"], "a list, not a claim's result"),
    ("result", {"name": "other.claim", "status": "holds", "ok": True}, "the result of 'other.claim'"),
    ("examples", {"k": "not an example"}, "a str among the examples"),
    ("examples", [Example(parameters={}, seed=0)], "a list, not a dict of examples"),
])
def test_a_file_holding_the_wrong_object_is_set_aside(tmp_path, caplog, kind, wrong, what):
    """A whole entry under the right identity and with a right checksum, but not what it must hold."""
    saved, _, result_file, examples_file = _saved_run(tmp_path)
    path = result_file if kind == "result" else examples_file
    identity = saved._entry(kind, tiny_claim, *RUN.computed, *([None] if kind == "result" else []))[1]
    path.write_bytes(files.pack_entry(identity, pickle.dumps(wrong)))
    if kind == "result":
        assert SavedChecks(tmp_path).result(tiny_claim, RUN) is None
    else:
        assert SavedChecks(tmp_path).examples(tiny_claim, RUN) == {}
    (report,) = _reports(caplog)
    assert f"holding the wrong object ({what}" in report and str(path) in report


def test_a_folder_in_place_of_a_result_file_is_set_aside_and_written_again(tmp_path, caplog):
    saved, result, result_file, _ = _saved_run(tmp_path)
    result_file.unlink()
    result_file.mkdir()
    assert saved.result(tiny_claim, RUN) is None
    saved.save_result(tiny_claim, result, RUN)
    assert SavedChecks(tmp_path).result(tiny_claim, RUN) == result
    assert "a folder where a file belongs" in _reports(caplog)[0]


def test_a_file_in_place_of_the_checks_folder_is_set_aside(tmp_path, caplog):
    (tmp_path / "checks").write_text("x")
    assert SavedChecks(tmp_path).directory.is_dir()
    assert (tmp_path / "checks.damaged-1").read_text() == "x"


# ----------------------------------------------------------------------------- saddle-point solutions


def _key(width: float) -> tuple:
    """(features, action, parameter values (N, sigma1, sigma_a), T, tolerance) of a one-layer attention network."""
    from attnverify.theories.attention_paths.action import attention_paths_action
    return "abc", attention_paths_action((2,), equal_widths=True), (float(width), 1.0, 1.0), 0.5, 1e-9


def _order(scale: float) -> dict:
    return {"U1": np.eye(2) * scale, "Ua": 1.0}


def _solutions(tmp_path):
    store = SolutionStore(tmp_path)
    store.put(*_key(10), _order(3.0), 1.5)
    (path,) = tmp_path.glob("*.entry")
    return store, path


@pytest.mark.parametrize("damage, what", [
    (lambda path: path.write_bytes(path.read_bytes()[:-30]), "truncated or extended"),
    (lambda path: path.write_bytes(b""), "empty (0 bytes)"),
    (lambda path: (path.unlink(), path.mkdir()), "a folder where a file belongs"),
])
def test_a_damaged_solution_is_set_aside_and_solved_again(tmp_path, caplog, damage, what):
    store, path = _solutions(tmp_path)
    damage(path)
    assert store.get(*_key(10)) is None
    assert path.with_name(path.name + ".damaged-1").exists()
    assert str(path) in _reports(caplog)[0] and what in _reports(caplog)[0]
    store.put(*_key(10), _order(1.0), 1.0)
    assert store.get(*_key(10))[1] == 1.0


def test_a_solution_filed_under_another_name_is_set_aside(tmp_path, caplog):
    store, path = _solutions(tmp_path)
    store.put(*_key(20), _order(1.0), 2.0)
    other = next(p for p in tmp_path.glob("*.entry") if p != path)
    path.write_bytes(other.read_bytes())
    assert store.get(*_key(10)) is None
    assert "the entry of another key" in _reports(caplog)[0]


def test_a_solution_that_cannot_be_written_leaves_the_earlier_ones(tmp_path, caplog, monkeypatch):
    store, path = _solutions(tmp_path)
    monkeypatch.setattr(files, "_open_temporary", _full_disk(after=0))
    assert store.put(*_key(20), _order(1.0), 2.0) is None
    assert len(store) == 1 and store.get(*_key(10))[1] == 1.5
    assert not list(tmp_path.glob(".*.part")) and "No space left on device" in _reports(caplog)[0]
