"""``--store`` and ``--scheduler`` on the command line: a damaged store is recomputed with the verdicts
of an undamaged run, never turned into a verdict or a crash; a store path that cannot be a folder to write into
is a usage error naming it; a full disk is one line, and what had finished stays readable; a scheduler address
without a host is refused by argparse, naming --scheduler and the forms it takes."""

from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from attnverify import cli, commands
from attnverify.base import files
from attnverify.execution.cluster import parse_scheduler

CLAIMS = textwrap.dedent('''
    """Three claims that read one experiment from the run's store."""
    from attnverify.checks import claim, close, st

    KEYS = st.fixed_dictionaries({"k": st.integers(0, 4)})
    FEW = {"quick": 3, "thorough": 3}


    def squares(*, n):
        return [k * k for k in range(n)]


    @claim("stored.first", parameters=KEYS, examples=FEW)
    def first(p, ctx):
        """The table holds k²."""
        return close(float(ctx.store.get(squares, n=5)[p["k"]]), float(p["k"] ** 2))


    @claim("stored.second", parameters=KEYS, examples=FEW)
    def second(p, ctx):
        """The table holds k·k."""
        return close(float(ctx.store.get(squares, n=5)[p["k"]]), float(p["k"] * p["k"]))


    @claim("stored.shifted", parameters=KEYS, examples=FEW, expect="refuted")
    def shifted(p, ctx):
        """The table holds k² + 1 (false, and expected to be refuted)."""
        return close(float(ctx.store.get(squares, n=5)[p["k"]]), float(p["k"] ** 2 + 1))
''')


@pytest.fixture(autouse=True)
def fresh_reports(monkeypatch, caplog):
    monkeypatch.setattr(files, "_reported", set())
    monkeypatch.delenv("ATTNVERIFY_BACKEND", raising=False)
    caplog.set_level(logging.WARNING, logger="attnverify.store")


@pytest.fixture
def claims_file(tmp_path) -> str:
    path = tmp_path / "stored_claims.py"
    path.write_text(CLAIMS, encoding="utf-8")
    return str(path)


def _verify(claims_file: str, store: Path, *extra: str) -> int:
    return cli.main(["verify", claims_file, "--backend", "numpy", "--store", str(store), *extra])


def _verdicts(path: Path) -> dict:
    return {c["name"]: (c["status"], c["ok"]) for c in json.loads(path.read_text())["claims"]}


def _reports(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "attnverify.store"]


@pytest.fixture
def undamaged(tmp_path, claims_file) -> dict:
    """The verdicts of a run with a fresh store."""
    assert _verify(claims_file, tmp_path / "fresh", "--json", str(tmp_path / "fresh.json")) == 0
    verdicts = _verdicts(tmp_path / "fresh.json")
    assert verdicts == {"stored.first": ("holds", True), "stored.second": ("holds", True),
                        "stored.shifted": ("refuted", True)}
    return verdicts


def _kept(store: Path, kind: str, claim: str) -> Path:
    (path,) = (store / "checks").glob(f"{claim}.{kind}.*.pickle")
    return path


# ----------------------------------------------------------------------------- a damaged store


def test_a_truncated_experiment_file_is_recomputed_with_the_verdicts_of_an_undamaged_run(tmp_path, claims_file,
                                                                                          undamaged):
    """One truncated experiment file is recomputed, not turned into `error` for claims that hold. Run as
    a command, so that the report is seen on stderr as a user sees it: one line naming the file."""
    store = tmp_path / "store"
    assert _verify(claims_file, store, "--only", "stored.first") == 0  # keeps the experiment, then is stopped
    (experiment,) = store.glob("*.pickle")
    experiment.write_bytes(experiment.read_bytes()[: experiment.stat().st_size // 2])
    run = subprocess.run([sys.executable, "-m", "attnverify", "verify", claims_file, "--backend", "numpy",
                          "--store", str(store), "--json", str(tmp_path / "rerun.json")],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert run.returncode == 0, run.stderr
    assert _verdicts(tmp_path / "rerun.json") == undamaged
    lines = [line for line in run.stderr.splitlines() if str(experiment) in line]
    assert len(lines) == 1 and "truncated" in lines[0] and "Traceback" not in run.stderr
    assert experiment.with_name(experiment.name + ".damaged-1").exists() and experiment.is_file()


def test_a_claim_result_cut_to_zero_bytes_is_checked_again(tmp_path, claims_file, undamaged, caplog, capsys):
    store = tmp_path / "store"
    assert _verify(claims_file, store) == 0
    result = _kept(store, "result", "stored.second")
    result.write_bytes(b"")
    capsys.readouterr()
    assert _verify(claims_file, store, "--json", str(tmp_path / "rerun.json")) == 0
    assert _verdicts(tmp_path / "rerun.json") == undamaged
    err = capsys.readouterr().err
    assert "[2/3] stored.second (3 examples) ... holds, OK" in err  # checked again, not kept
    assert [r for r in _reports(caplog) if str(result) in r and "empty (0 bytes)" in r]


def test_a_garbled_examples_file_is_checked_again(tmp_path, claims_file, undamaged, caplog):
    """A run stopped before the claim finished left its examples and no result; the examples are garbled."""
    store = tmp_path / "store"
    assert _verify(claims_file, store) == 0
    _kept(store, "result", "stored.first").unlink()
    examples = _kept(store, "examples", "stored.first")
    examples.write_bytes(bytes(b ^ 0x5A for b in examples.read_bytes()))
    assert _verify(claims_file, store, "--json", str(tmp_path / "rerun.json")) == 0
    assert _verdicts(tmp_path / "rerun.json") == undamaged
    assert [r for r in _reports(caplog) if str(examples) in r]


def test_a_file_holding_the_wrong_object_is_checked_again(tmp_path, claims_file, undamaged, caplog):
    store = tmp_path / "store"
    assert _verify(claims_file, store) == 0
    result = _kept(store, "result", "stored.shifted")
    result.write_bytes(_kept(store, "examples", "stored.shifted").read_bytes())  # a whole entry, of examples
    assert _verify(claims_file, store, "--json", str(tmp_path / "rerun.json")) == 0
    assert _verdicts(tmp_path / "rerun.json") == undamaged
    assert [r for r in _reports(caplog) if str(result) in r and "another key" in r]


def test_a_folder_in_place_of_a_file_is_set_aside(tmp_path, claims_file, undamaged, caplog):
    store = tmp_path / "store"
    assert _verify(claims_file, store) == 0
    result = _kept(store, "result", "stored.first")
    result.unlink()
    result.mkdir()
    _kept(store, "examples", "stored.first").unlink()  # so that its examples read the experiment again
    (experiment,) = store.glob("*.pickle")
    experiment.unlink()
    experiment.mkdir()
    assert _verify(claims_file, store, "--json", str(tmp_path / "rerun.json")) == 0
    assert _verdicts(tmp_path / "rerun.json") == undamaged
    assert result.is_file() and experiment.is_file()  # written anew, the folders set aside
    assert (store / (experiment.name + ".damaged-1")).is_dir()
    assert (store / "checks" / (result.name + ".damaged-1")).is_dir()
    assert len([r for r in _reports(caplog) if "a folder where a file belongs" in r]) == 2


# ----------------------------------------------------------------------------- --store that cannot be written


def _one_line_usage_error(capsys, *fragments: str) -> None:
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Error:" not in err
    (line,) = [line for line in err.splitlines() if "error" in line]
    assert "--store" in line and all(fragment in line for fragment in fragments), line


def test_store_on_a_file_is_a_usage_error_naming_it(tmp_path, claims_file, capsys):
    path = tmp_path / "a-file"
    path.write_text("not a folder")
    assert _verify(claims_file, path) == 2
    _one_line_usage_error(capsys, str(path), "exists and is not a directory")
    assert path.read_text() == "not a folder"
    assert cli.main(["check", "--store", str(path)]) == 2
    assert cli.main(["report", "--out", str(tmp_path / "report"), "--store", str(path)]) == 2


def test_store_under_a_file_is_a_usage_error_naming_it(tmp_path, claims_file, capsys):
    (tmp_path / "a-file").write_text("")
    assert _verify(claims_file, tmp_path / "a-file" / "store") == 2
    _one_line_usage_error(capsys, str(tmp_path / "a-file" / "store"), "cannot be made or written into")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root writes into a read-only folder; see the simulated test below")
def test_store_on_a_read_only_folder_is_a_usage_error_naming_it(tmp_path, claims_file, capsys):
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        assert _verify(claims_file, folder) == 2
    finally:
        folder.chmod(0o755)
    _one_line_usage_error(capsys, str(folder), "Permission denied")


def test_store_on_a_read_only_folder_simulated_is_a_usage_error_naming_it(tmp_path, claims_file, capsys,
                                                                          monkeypatch):
    """What a read-only folder (or file system) does to a writer that is not root: the first file fails."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    real = files.tempfile.mkstemp

    def mkstemp(*args, dir=None, **kwargs):
        if Path(dir) == folder:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(folder))
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(files.tempfile, "mkstemp", mkstemp)
    assert _verify(claims_file, folder) == 2
    _one_line_usage_error(capsys, str(folder), "Read-only file system")
    assert list(folder.iterdir()) == []


def test_an_empty_store_path_is_a_usage_error(claims_file, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # an empty path must not mean the current folder
    assert cli.main(["verify", claims_file, "--store", ""]) == 2
    _one_line_usage_error(capsys, "is empty")


# ----------------------------------------------------------------------------- a full disk during a run


def test_a_full_disk_is_one_line_and_what_had_finished_stays_readable(tmp_path, claims_file, undamaged, caplog,
                                                                      capsys, monkeypatch):
    """The first claim's files (the experiment, 3 example files, its result) are written; then the disk is full.
    The run ends with every verdict; a rerun finds the first claim finished and checks the others."""
    store = tmp_path / "store"
    written, real = [], files._open_temporary

    def open_temporary(handle):
        written.append(handle)
        if len(written) <= 5:
            return real(handle)
        os.close(handle)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files, "_open_temporary", open_temporary)
    capsys.readouterr()
    assert _verify(claims_file, store) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in undamaged)  # every claim in the results table
    (report,) = [r for r in _reports(caplog) if "No space left on device" in r]
    assert str(store) in report
    assert not [p for p in store.rglob("*") if p.name.endswith(".part")]  # no partial file left
    monkeypatch.setattr(files, "_open_temporary", real)
    assert _verify(claims_file, store, "--json", str(tmp_path / "rerun.json")) == 0
    assert _verdicts(tmp_path / "rerun.json") == undamaged
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.startswith("[1/3] stored.first: holds, OK (")
            and line.endswith("[kept from an earlier run]")]
    assert "[2/3] stored.second (3 examples) ... holds, OK" in err


# ----------------------------------------------------------------------------- --scheduler


@pytest.mark.parametrize("text, problem", [
    ("tcp://", "no host"), ("tcp://:8786", "no host"), (":8786", "no host"),
    ("tcp://host:99999", "PORT"), ("tcp://host:0", "PORT"), ("tcp://host:port", "PORT"),
    ("foo://host:8786", "unknown protocol 'foo'"), ("tcp://host:8786/path", "nothing may come"),
])
def test_a_scheduler_address_without_a_host_or_port_is_refused_by_name(text, problem, capsys):
    """`--scheduler tcp://` is refused in one line, never with Dask's traceback."""
    with pytest.raises(ValueError, match="--scheduler must be local, local:N or a scheduler address"):
        parse_scheduler(text)
    assert cli.main(["check", "--scheduler", text]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = [line for line in err.splitlines() if "error" in line]
    assert "argument --scheduler" in line and "SCHEME://HOST[:PORT]" in line and problem in line


@pytest.mark.parametrize("text", ["tcp://10.0.0.5:8786", "tcp://node7", "tls://node7.cluster:8786",
                                  "tcp://[::1]:8786", "node7:8786"])
def test_scheduler_addresses_with_a_host_are_taken(text):
    assert parse_scheduler(text) == ("address", text)


def test_a_full_disk_while_writing_the_json_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys):
    """The results file itself cannot be written (ENOSPC): one line naming it, exit 1, no traceback."""
    import errno

    from attnverify.base import files

    monkeypatch.delenv("ATTNVERIFY_BACKEND", raising=False)
    user = tmp_path / "mine.py"
    user.write_text("from attnverify.checks import claim, close, st\n"
                    "@claim('mine.one', parameters=st.fixed_dictionaries({'x': st.just(1)}))\n"
                    "def one(p, ctx):\n    '''1 = 1.'''\n    return close(1.0, 1.0)\n")

    def no_space(stream):
        raise OSError(errno.ENOSPC, "No space left on device")

    calls = []

    def write_json(document, path):  # the up-front check of --json passes; then the disk is full
        calls.append(path)
        files.write_atomically(path, no_space if len(calls) > 1 else b"{}")

    monkeypatch.setattr(commands, "write_json", write_json)
    target = tmp_path / "results.json"
    assert cli.main(["verify", str(user), "--json", str(target)]) == 1
    err = capsys.readouterr().err
    assert f"cannot write {target}" in err and "No space left" in err and "Traceback" not in err
