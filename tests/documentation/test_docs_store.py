"""`make docs` after `make report` reads the report's finished claims and experiments back from their shared store
(build/store/KEY, KEY = :func:`attnverify.run.report.store_key`), and only for the same code, profile and seed.

A tiny theory made in this session (two claims, one planned experiment, a section without figures) stands in for
the papers', so no full report runs here.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import types
from pathlib import Path

import pytest

from attnverify.checks import close, st
from attnverify.checks.claim import claim
from attnverify.execution.store import planned
from attnverify.report import Section
from attnverify.run import report as builder
from attnverify.theories import of_module

ROOT = Path(__file__).resolve().parents[2]
COMPUTED: list[int] = []  # one entry per computation of the experiment below


def offset(seed: int) -> float:
    """The tiny theory's experiment; counts its computations."""
    COMPUTED.append(seed)
    return 0.0


@claim("storetiny.square_is_product", parameters=st.fixed_dictionaries({"x": st.integers(-5, 5)}),
       examples={"quick": 3, "thorough": 4}, origin="")
def square_is_product(params, ctx):
    """x² equals x·x."""
    return close(params["x"] ** 2 + ctx.store.get(offset, seed=ctx.run_seed), params["x"] * params["x"])


@claim("storetiny.square_is_two", parameters=st.fixed_dictionaries({"x": st.integers(-5, 5)}),
       expect="refuted", examples={"quick": 3, "thorough": 4}, origin="")
def square_is_two(params, ctx):
    """x² = 2 for integers (false)."""
    return close(float(params["x"] ** 2), 2.0)


def _section(out_dir, settings, progress):
    settings.store.get(offset, seed=settings.seed)
    return Section(theory="storetiny", title="A tiny theory", introduction="", derivations=[], figures=[], tables=[])


@pytest.fixture
def theory():
    module = types.ModuleType("attnverify_test_storetiny")
    module.build_section = _section
    module.plan_experiments = lambda settings: [planned(offset, seed=settings.seed)]
    module.square_is_product, module.square_is_two = square_is_product, square_is_two
    return of_module(module, "storetiny")


@pytest.fixture
def package(tmp_path):
    """A stand-in for the package's folder: store_key reads every file under it."""
    folder = tmp_path / "package"
    (folder / "sub" / "__pycache__").mkdir(parents=True)
    (folder / "__init__.py").write_text("x = 1\n")
    (folder / "sub" / "data.npz").write_bytes(b"\x00\x01")
    (folder / "sub" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"compiled")
    return folder


def _report(tmp_path, theory, name, store, **settings) -> dict:
    COMPUTED.clear()
    document = builder.build_report(tmp_path / name, theories=[theory], store=store, **settings)
    assert document["complete"] and document["ok"]
    return document


def test_a_store_of_the_same_code_profile_and_seed_is_read_back(tmp_path, theory, package):
    store = tmp_path / "store" / builder.store_key(package=package)
    first = _report(tmp_path, theory, "report", store)
    assert first["metadata"]["kept_claims"] == [] and COMPUTED == [0]
    again = _report(tmp_path, theory, "docs", store)
    assert again["metadata"]["kept_claims"] == ["storetiny.square_is_product", "storetiny.square_is_two"]
    assert again["metadata"]["store"] == str(store)
    assert COMPUTED == []  # the experiment too is read back, not computed again
    assert again["claims"] == first["claims"]


@pytest.mark.parametrize("settings, computed", [(dict(seed=1), [1]), (dict(profile="thorough"), [])])
def test_another_seed_or_profile_checks_every_claim_again(tmp_path, theory, settings, computed):
    """Claims are kept under the run's profile and seed; the experiment under its parameters (here the seed)."""
    store = tmp_path / "store"
    _report(tmp_path, theory, "report", store)
    other = _report(tmp_path, theory, "other", store, **settings)
    assert other["metadata"]["kept_claims"] == [] and COMPUTED == computed


def test_changed_code_gets_a_new_store(tmp_path, theory, package):
    """The store keys an experiment by its parameters only: a change of the code must change the folder."""
    before = builder.store_key(package=package)
    _report(tmp_path, theory, "report", tmp_path / "store" / before)
    (package / "__init__.py").write_text("x = 2\n")
    after = builder.store_key(package=package)
    assert after != before
    changed = _report(tmp_path, theory, "docs", tmp_path / "store" / after)
    assert changed["metadata"]["kept_claims"] == [] and COMPUTED == [0]


def test_the_key_follows_the_code_the_examples_the_versions_and_the_settings(tmp_path, package, monkeypatch):
    example = tmp_path / "example.py"
    example.write_text("a = 1\n")
    monkeypatch.delenv("ATTNVERIFY_STEP_BUDGET", raising=False)
    key = builder.store_key(example, package=package)
    assert builder.store_key(example, package=package) == key

    (package / "sub" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"compiled again")
    monkeypatch.setenv("ATTNVERIFY_CACHE", str(tmp_path / "elsewhere"))  # where things are kept, not what
    assert builder.store_key(example, package=package) == key

    monkeypatch.setenv("ATTNVERIFY_STEP_BUDGET", "1000")
    assert builder.store_key(example, package=package) != key
    monkeypatch.delenv("ATTNVERIFY_STEP_BUDGET")

    example.write_text("a = 2\n")
    assert builder.store_key(example, package=package) != key
    example.write_text("a = 1\n")

    (package / "sub" / "data.npz").write_bytes(b"\x00\x02")
    assert builder.store_key(example, package=package) != key
    (package / "sub" / "data.npz").write_bytes(b"\x00\x01")

    real = builder._versions
    monkeypatch.setattr(builder, "_versions", lambda: {**real(), "numpy": "0.0"})
    assert builder.store_key(example, package=package) != key


def test_make_report_and_make_docs_share_the_store_of_one_key():
    """Both recipes name the same folder, build/store/KEY, with KEY computed the same way."""
    dry = subprocess.run(["make", "-n", "report", "docs"], cwd=ROOT, capture_output=True, text=True, check=True)
    runs = [line for line in dry.stdout.splitlines() if "attnverify report --out" in line]
    assert len(runs) == 2, dry.stdout
    prefixes = {re.sub(r"attnverify report --out .*", "", line) for line in runs}
    assert len(prefixes) == 1 and "store_key(" in prefixes.pop()
    assert all('--store "$store"' in line for line in runs)


def test_the_run_line_says_which_claims_were_read_back():
    pytest.importorskip("mkdocs")
    spec = importlib.util.spec_from_file_location("attnverify_docs_results_hook", ROOT / "docs/hooks/results.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    metadata = {"generator": "attnverify report", "date": "2026-01-01T00:00:00+00:00", "profile": "quick",
                "backend": "numpy", "seed": 0, "versions": {"attnverify": "0"}, "store": "build/store/abc",
                "kept_claims": ["a.one", "a.two"]}
    hook._RESULTS.update(metadata=metadata, summary="3 claims: 3 as expected", claims=[{}, {}, {}])
    assert "2 of its 3 claims were not checked again but read back from its store `build/store/abc`" in hook._run()
    metadata["kept_claims"] = []
    assert "read back" not in hook._run()


def test_a_claims_text_keeps_its_asterisks_outside_code_and_maths():
    """k*, v*, T* (the papers' optima) in a statement or caption stay asterisks on the page instead of italicising
    the text between two of them; code spans and inline maths are left as written, and pipes cannot split a cell."""
    pytest.importorskip("mkdocs")
    spec = importlib.util.spec_from_file_location("attnverify_docs_results_hook", ROOT / "docs/hooks/results.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    assert hook._cell("the oracle T* reaches ±(k*, v*) | `a*b` and $x*y$") == \
        "the oracle T\\* reaches ±(k\\*, v\\*) \\| `a*b` and $x*y$"
