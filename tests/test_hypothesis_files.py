"""hypothesis writes nothing where attnverify or pytest runs: its files go under ``$ATTNVERIFY_CACHE/hypothesis``
(README, "Checking a theorem of your own"), for ``attnverify verify FILE``, ``pytest FILE`` and the repo's own tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


REPO = Path(__file__).resolve().parent.parent

#: a claim, and a plain hypothesis test with the default settings (its example database and its cache of constants)
USER_FILE = '''"""Lengths"""
from hypothesis import given, strategies as st
from attnverify import Theory, close

theory = Theory("lengths")

@theory.claim(s=st.text(), examples=dict(quick=3, thorough=3))
def length_is_length(s):
    """len(s) equals itself."""
    return close(float(len(s)), float(len(s)))

@given(st.text())
def test_plain(s):
    assert s == s
'''


def _environment(cache: Path) -> dict:
    environment = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_STORAGE_DIRECTORY"}
    environment["ATTNVERIFY_CACHE"] = str(cache)
    return environment


def _pytest(arguments: list[str], where: Path, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           *arguments], cwd=where, env=_environment(cache), capture_output=True, text=True,
                          timeout=600)


@pytest.fixture
def fresh(tmp_path) -> tuple[Path, Path]:
    where, cache = tmp_path / "here", tmp_path / "cache"
    where.mkdir()
    (where / "test_lengths.py").write_text(USER_FILE, encoding="utf-8")
    return where, cache


def test_verify_writes_no_hypothesis_folder_where_it_runs(fresh):
    where, cache = fresh
    environment = _environment(cache)
    environment.pop("ATTNVERIFY_BACKEND", None)
    run = subprocess.run([sys.executable, "-m", "attnverify", "verify", "test_lengths.py"], cwd=where,
                         env=environment, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert not (where / ".hypothesis").exists()
    assert (cache / "hypothesis").is_dir()  # st.text() keeps its table of characters there


def test_pytest_of_a_users_file_writes_no_hypothesis_folder_where_it_runs(fresh):
    where, cache = fresh
    run = _pytest(["test_lengths.py"], where, cache)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 passed" in run.stdout
    assert not (where / ".hypothesis").exists()
    assert (cache / "hypothesis").is_dir()  # where hypothesis wrote instead


def test_pytest_of_the_repositorys_tests_writes_no_hypothesis_folder_where_it_runs(fresh):
    where, cache = fresh
    run = _pytest([str(REPO / "tests" / "numerics" / "test_trust_region.py")], where, cache)
    assert run.returncode == 0, run.stdout + run.stderr
    assert not (where / ".hypothesis").exists()
    assert not (REPO / "tests" / "numerics" / ".hypothesis").exists()
