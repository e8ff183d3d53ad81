"""Derivations kept on disk (:mod:`attnverify.derivations.kept`): read back step for step, derived afresh when
the code, the file or the setting says so."""

from __future__ import annotations

import pickle

import pytest
import sympy
from sympy import Eq, MatrixSymbol, Sum, Symbol

import attnverify.theories.attention_paths.derivations.report_derivations  # noqa: F401  (registers its derivations)
import attnverify.theories.conditional_mean.derivations  # noqa: F401
import attnverify.theories.single_location.derivations  # noqa: F401
from attnverify.base.cache import KEEP_VARIABLE
from attnverify.base.files import unpack_entry
from attnverify.derivations import kept
from attnverify.derivations.derivation import DerivationRecorder


def _same_steps(a, b) -> bool:
    return len(a.steps) == len(b.steps) and all(
        x.description == y.description and x.name == y.name and sympy.srepr(x.expression) == sympy.srepr(y.expression)
        and x.expression == y.expression for x, y in zip(a.steps, b.steps))


@pytest.mark.parametrize("function", list(kept.KEPT), ids=lambda f: f.__name__)
def test_every_kept_derivation_reads_back_step_for_step(function):
    fresh = function.derive()
    data = kept.encoded(fresh)
    assert data is not None, "a step that neither way of reading gives back: this derivation is never kept"
    read = kept.decoded(pickle.loads(pickle.dumps(data)))
    assert _same_steps(read, fresh) and (read.name, read.title, read.source) == (fresh.name, fresh.title, fresh.source)
    assert _same_steps(function(), fresh)  # what this process uses (from disk or not) is the fresh derivation


def _toy_derivation(calls: list):
    """A derivation with an unevaluated step (read back as ``false`` if rebuilt evaluated) and a Sum (which an
    unevaluated rebuild turns into Sum(1·x))."""

    def toy():
        calls.append(1)
        rec = DerivationRecorder("toy", "Toy", "here")
        d = Symbol("d", integer=True, positive=True)
        rec.step("unevaluated", Eq(Symbol("m"), MatrixSymbol("a", d, 1) + MatrixSymbol("b", d, 1), evaluate=False))
        rec.step("a sum", Eq(Symbol("R"), Sum(Symbol("x"), (Symbol("k"), 1, Symbol("L")))), name="sum")
        return rec.finish()

    return toy


def test_a_kept_derivation_is_read_by_the_next_process_and_derived_afresh_when_it_must_be(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNVERIFY_CACHE", str(tmp_path))
    monkeypatch.delenv(KEEP_VARIABLE, raising=False)
    monkeypatch.setattr(kept, "KEPT", [])
    calls: list = []
    toy = _toy_derivation(calls)
    first = kept.kept_derivation(toy)()
    path = kept.kept_path(toy)
    assert calls == [1] and path.is_file()
    again = kept.kept_derivation(toy)()  # a new process: its own memo, the same file
    assert calls == [1] and _same_steps(again, first)
    assert sympy.srepr(again.steps[0].expression) != "false"
    assert [mode for _, _, mode, _ in kept.encoded(first)[3]] == [False, True]  # both ways of reading are needed

    path.write_bytes(b"damaged")
    assert _same_steps(kept.kept_derivation(toy)(), first) and calls == [1, 1]
    assert _same_steps(kept.decoded(pickle.loads(unpack_entry(path.read_bytes(), path.stem))), first)  # written anew

    monkeypatch.setattr(kept, "code_version", lambda: "changed-code")
    kept.kept_derivation(toy)()
    assert calls == [1, 1, 1] and kept.kept_path(toy).is_file() and kept.kept_path(toy) != path

    monkeypatch.setenv(KEEP_VARIABLE, "0")
    monkeypatch.setattr(kept, "code_version", lambda: "switched-off")
    kept.kept_derivation(toy)()
    assert calls == [1, 1, 1, 1] and not kept.kept_path(toy).exists()


def test_a_derivation_that_does_not_read_back_exactly_is_not_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNVERIFY_CACHE", str(tmp_path))
    monkeypatch.delenv(KEEP_VARIABLE, raising=False)
    monkeypatch.setattr(kept, "KEPT", [])
    monkeypatch.setattr(kept, "_same", lambda a, b: False)  # as if no way of reading gave a step back
    calls: list = []
    toy = _toy_derivation(calls)
    kept.kept_derivation(toy)()
    kept.kept_derivation(toy)()
    assert calls == [1, 1] and not kept.kept_path(toy).exists()


def test_the_fingerprint_changes_with_any_source_file(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "module.py").write_text("x = 1\n")
    monkeypatch.setattr(kept, "PACKAGE", tmp_path)
    before = kept.code_version.__wrapped__()
    (tmp_path / "sub" / "module.py").write_text("x = 2\n")
    assert kept.code_version.__wrapped__() != before
    assert (kept.PACKAGE / "sub" / "module.py").is_file() and len(before) == 24


def test_display_symbols_keep_the_assumptions_as_given():
    """The saddle action's display symbols (σ₁² for sigma1) carry positive=True as given, not every assumption it
    implies: an equal symbol with them spelt out enters sympy's caches, and a derivation derived after the action
    was rendered came out with it, so that the kept derivation no longer read back as the fresh one."""
    from attnverify.theories.attention_paths.action import attention_paths_action

    display = attention_paths_action((2, 2)).display
    assert {sympy.srepr(s) for s in display.values()} == {
        f"Symbol('{name}', positive=True)" for name in ("sigma_1^2", "sigma_2^2", "sigma_a^2")}
