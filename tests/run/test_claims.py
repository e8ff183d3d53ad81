"""The run layer: a crash outside a claim's check is a result, the exit status of a run's verdicts, the run's store
folder, and the order in which a run hands its tasks (claims and the tasks ahead of them) to the scheduler."""

from __future__ import annotations

from pathlib import Path

import pytest

from attnverify.base.backend import get_backend
from attnverify.checks import at_most, claim, st
from attnverify.checks.story import verdict
from attnverify.execution.tasks import Task
from attnverify.execution.settings import RunSettings
from attnverify.run.claims import (_in_run_order, exit_status, run_claim_or_error, run_claims_as_tasks, run_store,
                                   verify_command)


def _result(ok: bool, status: str) -> dict:
    return {"ok": ok, "status": status}


def test_verdicts_and_the_exit_status_of_a_run():
    assert [verdict(_result(True, "holds")), verdict(_result(True, "refuted")), verdict(_result(False, "refuted")),
            verdict(_result(False, "inconclusive")), verdict(_result(False, "error"))] == [
        "OK", "OK", "UNEXPECTED", "UNDECIDED", "UNEXPECTED"]
    assert exit_status([]) == 0
    assert exit_status([_result(True, "holds"), _result(True, "refuted")]) == 0
    assert exit_status([_result(True, "holds"), _result(False, "inconclusive")]) == 3
    assert exit_status([_result(False, "inconclusive"), _result(False, "error")]) == 1


def test_a_strategy_that_crashes_is_an_error_result_not_an_exception():
    def broken(x):
        raise RuntimeError("no parameters today")

    @claim("demo.crashes", parameters=st.fixed_dictionaries({"x": st.just(1.0).map(broken)}),
           examples={"quick": 2, "thorough": 2}, statement="Never checked.")
    def crashes(p, ctx):
        return at_most(0.0, 1.0)

    result = run_claim_or_error(crashes, RunSettings())
    assert result.status == "error" and not result.ok and result.examples == []
    assert "no parameters today" in result.error.error
    assert verdict(result.as_dict()) == "UNEXPECTED"


def test_a_temporary_store_is_removed_and_a_given_one_kept(tmp_path):
    with run_store(RunSettings()) as settings:
        folder = settings.folder
        assert Path(folder).is_dir()
        (Path(folder) / "x").write_text("kept until the end of the run")
    assert not Path(folder).exists()
    with pytest.raises(KeyboardInterrupt):
        with run_store(RunSettings()) as settings:
            folder = settings.folder
            raise KeyboardInterrupt
    assert not Path(folder).exists()
    given = tmp_path / "a" / "store"
    with run_store(RunSettings(store=given)) as settings:
        assert settings.folder == str(given.resolve()) and given.is_dir()
    assert given.is_dir()


def _task(name: str, after: tuple[str, ...] = ()) -> Task:
    return Task(name, print, {}, after=after)


def test_on_one_worker_a_claim_runs_right_after_what_it_waits_for():
    ahead = [_task("a: experiment"), _task("a (section)", ("a: experiment",)), _task("b (section)")]
    claims = [_task("a.one [examples 1–2]", ("a (section)",)), _task("a.one", ("a (section)",)),
              _task("b.one", ("b (section)",)), _task("free")]
    one = [t.name for t in _in_run_order(ahead, claims, workers=1)]
    assert one == ["free", "a: experiment", "a (section)", "a.one [examples 1–2]", "a.one", "b (section)", "b.one"]
    several = [t.name for t in _in_run_order(ahead, claims, workers=2)]
    assert several == [t.name for t in ahead + claims]


def test_a_serial_run_tells_each_result_and_what_is_still_to_come(tmp_path):
    @claim("demo.first", parameters=st.fixed_dictionaries({"x": st.just(1.0)}), examples={"quick": 1, "thorough": 1},
           statement="x ≤ 2.")
    def first(p, ctx):
        return at_most(p["x"], 2.0)

    @claim("demo.second", parameters=st.fixed_dictionaries({"x": st.just(3.0)}),
           examples={"quick": 1, "thorough": 1}, statement="x ≤ 2.", expect="refuted")
    def second(p, ctx):
        return at_most(p["x"], 2.0)

    seen = []
    results = run_claims_as_tasks([first, second], [], RunSettings(),
                                  on_result=lambda finished, not_run: seen.append(([r["name"] for r in finished],
                                                                                   not_run)))
    assert [(r["name"], r["status"], verdict(r)) for r in results] == [("demo.first", "holds", "OK"),
                                                                      ("demo.second", "refuted", "OK")]
    assert verify_command("my file.py") == "attnverify verify 'my file.py'"
    assert seen == [(["demo.first"], ["demo.second"]), (["demo.first", "demo.second"], [])]
    store = tmp_path / "store"
    run_claims_as_tasks([first, second], [], RunSettings(store=str(store)))
    again = run_claims_as_tasks([first, second], [], RunSettings(store=str(store)),
                                on_result=lambda finished, not_run: seen.append(([r["name"] for r in finished],
                                                                                 not_run)))
    assert again == run_claims_as_tasks([first, second], [], RunSettings(store=str(store)))
    assert seen[-1] == (["demo.first", "demo.second"], [])  # kept from the first run with the folder: no task


CONCISE = '''"""Parallel

A theory whose claims run on worker processes."""
from attnverify import Theory, st
from attnverify.checks import close

theory = Theory("parallel")


@theory.claim(x=st.floats(0, 1))
def square_is_product(x):
    """x² = x·x."""
    return close(x**2, x * x)
'''

LONG_FORM = '''"""Long form"""
from attnverify.checks import claim, close, st

THEORY = "long_form"


@claim("long_form.one", parameters=st.just({}))
def one(p, ctx):
    """1 = 1."""
    return close(1.0, 1.0)
'''


def test_a_theory_crosses_a_process_boundary_as_its_name_and_file(tmp_path):
    """Pickled, a built-in theory is found again as the same object, a user's file (concise or long form) as the
    theory of the file loaded again, with the same claims."""
    import pickle

    from attnverify.theories import builtin_theory, by_reference, from_file

    paths = builtin_theory("conditional_mean")
    assert pickle.loads(pickle.dumps(paths)) is paths
    for name, text in (("parallel", CONCISE), ("long_form", LONG_FORM)):
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        theory = from_file(path)
        payload = pickle.dumps(theory)
        assert str(path).encode() in payload and len(payload) < 500  # a reference, not the claims' functions
        again = pickle.loads(payload)
        assert again.name == name and [c.name for c in again.claim_list()] == [c.name for c in theory.claim_list()]
    with pytest.raises(ValueError, match="defines theory 'parallel', not 'other'"):
        by_reference("other", str(tmp_path / "parallel.py"))


def test_a_users_claims_run_on_worker_processes_as_in_this_one(tmp_path):
    """Two spawned workers load the user's file again by its path: the same verdicts, replayed through verify."""
    from attnverify.theories import from_file

    path = tmp_path / "parallel.py"
    path.write_text(CONCISE)
    theory = from_file(path)
    serial = run_claims_as_tasks(theory.claim_list(), [theory], RunSettings(examples=3, workers=1))
    parallel = run_claims_as_tasks(theory.claim_list(), [theory], RunSettings(examples=3, workers=2))
    assert [(r["name"], r["status"]) for r in parallel] == [(r["name"], r["status"]) for r in serial] == [
        ("parallel.square_is_product", "holds")]
    assert parallel[0]["replay"] == serial[0]["replay"]
    assert parallel[0]["replay"].startswith(f"{verify_command(path)} --only parallel.square_is_product")


def test_a_claim_starts_with_the_examples_its_parameters_can_have():
    """The start line names the examples asked for, or the points a finite parameter space holds where they are
    fewer (each point is checked once): 1 for st.just, 2 × 3 for a boolean and a sampled_from of three."""
    from attnverify.run.claims import claim_started

    def made(name, parameters):
        return claim(f"fake.{name}", parameters=st.fixed_dictionaries(parameters), statement="s",
                     examples={"quick": 21, "thorough": 90})(lambda p, ctx: at_most(0.0, 1.0))

    settings = RunSettings(profile="quick")
    assert claim_started(1, 1, made("fixed", {"x": st.just(3.0)}), settings).examples == 1
    six = made("six", {"b": st.booleans(), "s": st.sampled_from([1, 2, 3])})
    assert claim_started(1, 1, six, settings).examples == 6
    assert claim_started(1, 1, made("drawn", {"x": st.floats(0, 1), "n": st.integers(1, 2)}), settings).examples == 21
    assert claim_started(1, 1, made("wide", {"n": st.integers(1, 100)}), settings).examples == 21
