"""A claim's examples checked ahead (as tasks, or kept by an interrupted run) give the serial run's result."""

from __future__ import annotations

import json
import textwrap

import pytest

from attnverify import cli
from attnverify.checks import at_most, claim, run_claim, st, within_error
from attnverify.checks.runner import drawn_examples, evaluate, example_key
from attnverify.checks.saved import SavedChecks
from attnverify.run.claims import _batches, run_claims_as_tasks
from attnverify.execution.settings import RunSettings
from attnverify.base.backend import get_backend
from attnverify.numerics.statistics import mean_estimate
from attnverify.theories import from_file


@claim("demo.square_below_fifty", parameters=st.fixed_dictionaries({"x": st.floats(-10, 10)}),
       examples={"quick": 30, "thorough": 30})
def square_below_fifty(p, ctx):
    """x² ≤ 50 for every x in [−10, 10] (false)."""
    return at_most(p["x"] ** 2, 50.0)


@claim("demo.sample_mean", parameters=st.fixed_dictionaries({"mu": st.floats(-3, 3)}),
       examples={"quick": 12, "thorough": 12})
def sample_mean(p, ctx):
    """The sample mean of N(μ, 1) draws estimates μ."""
    return within_error(p["mu"], mean_estimate(ctx.rng.normal(p["mu"], 1.0, size=500)))


def _without_timings(result: dict) -> dict:
    result = json.loads(json.dumps(result))
    result.pop("seconds")
    for example in result["examples"] + ([result["counterexample"]] if result["counterexample"] else []):
        example.pop("seconds")
    return result


def test_the_drawn_examples_are_those_a_serial_run_checks():
    serial = run_claim(sample_mean, seed=4)
    assert serial.status == "holds"
    assert [(e.parameters, e.seed) for e in serial.examples] == drawn_examples(sample_mean, seed=4)
    assert len(drawn_examples(sample_mean, seed=4, examples=5)) == 5


@pytest.mark.parametrize("chosen", [sample_mean, square_below_fifty])
def test_examples_checked_ahead_give_the_serial_result_and_are_not_checked_again(chosen):
    serial = run_claim(chosen, seed=3)
    ahead = {example_key(p, s): evaluate(chosen, p, s, seed=3) for p, s in drawn_examples(chosen, seed=3)}
    checked_again = []
    result = run_claim(chosen, seed=3, evaluated=ahead, on_evaluated=checked_again.append)
    assert _without_timings(result.as_dict()) == _without_timings(serial.as_dict())
    # only the shrinking of a failure checks new examples; the drawn ones are all taken as they are
    assert len(checked_again) == result.shrink_trials
    assert {example_key(e.parameters, e.seed) for e in checked_again}.isdisjoint(ahead)
    assert result.seconds >= sum(e.seconds for e in result.examples)


@pytest.mark.parametrize("count, parts, pieces", [(10, 8, 8), (3, 8, 3), (0, 8, 0), (17, 1, 1)])
def test_batches_cover_the_examples_in_order(count, parts, pieces):
    batches = _batches(count, parts)
    assert len(batches) == pieces and [k for b in batches for k in b] == list(range(count))


COUNTED = '''
    """Claims that write down every example they check (for the resumed-run tests)."""
    import os
    import time
    from pathlib import Path

    from attnverify.checks import at_most, claim, st

    THEORY = "counted"
    LOG = Path(__file__).with_name("checked.log")


    def _checked(name, p, ctx):
        with open(LOG, "a") as log:
            log.write(f"{os.environ.get('COUNTED_RUN', '?')} {name} {p['x']} {ctx.seed}\\n")
        if os.environ.get("COUNTED_STOP_AT") == f"{name} {p['x']}":
            raise KeyboardInterrupt  # the user presses Ctrl-C during this example


    @claim("counted.first", parameters=st.fixed_dictionaries({"x": st.integers(0, 10**6)}),
           examples={"quick": 6, "thorough": 6})
    def first(p, ctx):
        """x ≥ 0."""
        _checked("first", p, ctx)
        return at_most(-p["x"], 0.0)


    @claim("counted.second", parameters=st.fixed_dictionaries({"x": st.integers(0, 10**6)}),
           examples={"quick": 16, "thorough": 16})
    def second(p, ctx):
        """x² ≥ 0, slowly."""
        _checked("second", p, ctx)
        time.sleep(0.05)
        return at_most(-p["x"] ** 2, 0.0)
'''


def _counted(tmp_path):
    path = tmp_path / "counted.py"
    path.write_text(textwrap.dedent(COUNTED))
    return path, tmp_path / "checked.log"


def _checked(log, run: str) -> list[tuple[str, int, int]]:
    rows = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    return [(name, int(x), int(seed)) for tag, name, x, seed in rows if tag == run]


def test_an_interrupted_serial_check_reruns_only_the_missing_examples(tmp_path, monkeypatch):
    path, log = _counted(tmp_path)
    store, whole = tmp_path / "store", tmp_path / "whole.json"
    monkeypatch.setenv("COUNTED_RUN", "whole")
    assert cli.main(["verify", str(path), "--backend", "numpy", "--json", str(whole)]) == 0
    drawn = [(name, x, seed) for name, x, seed in _checked(log, "whole")]
    stop = [row for row in drawn if row[0] == "second"][5]  # the sixth example of the second claim
    monkeypatch.setenv("COUNTED_RUN", "first")
    monkeypatch.setenv("COUNTED_STOP_AT", f"second {stop[1]}")
    assert cli.main(["verify", str(path), "--backend", "numpy", "--store", str(store), "--json", str(tmp_path / "stopped.json")]) == 130
    assert json.loads((tmp_path / "stopped.json").read_text())["not_run"] == ["counted.second"]
    monkeypatch.setenv("COUNTED_RUN", "rerun")
    monkeypatch.delenv("COUNTED_STOP_AT")
    assert cli.main(["verify", str(path), "--backend", "numpy", "--store", str(store), "--json", str(tmp_path / "rerun.json")]) == 0
    first_run, rerun = _checked(log, "first"), _checked(log, "rerun")
    finished = first_run[:-1]  # the interrupted example did not finish
    assert rerun == [row for row in drawn if row not in finished]  # the rest, once each, in the run's order
    assert [_without_timings(c) for c in json.loads((tmp_path / "rerun.json").read_text())["claims"]] == \
        [_without_timings(c) for c in json.loads(whole.read_text())["claims"]]


def test_an_interrupted_run_on_a_local_cluster_reruns_only_what_is_missing(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    path, log = _counted(tmp_path)
    theory = from_file(path)
    claims, store = theory.claim_list(), str(tmp_path / "store")
    settings = RunSettings()
    monkeypatch.setenv("COUNTED_RUN", "serial")
    serial = run_claims_as_tasks(claims, [theory], settings)

    done_before = []

    def interrupt(finished, not_run):
        if finished:  # the client is stopped (Ctrl-C) as soon as a claim is done
            done_before.extend(r["name"] for r in finished)
            raise KeyboardInterrupt

    monkeypatch.setenv("COUNTED_RUN", "first")
    with pytest.raises(KeyboardInterrupt):
        run_claims_as_tasks(claims, [theory], settings.but(scheduler="local:2", store=store), on_result=interrupt)
    saved, run = SavedChecks(store), settings
    kept = {c.name: {(e.parameters["x"], e.seed) for e in saved.examples(c, run).values()} for c in claims}
    assert [c.name for c in claims if saved.result(c, run) is not None] == done_before
    monkeypatch.setenv("COUNTED_RUN", "rerun")
    resumed = run_claims_as_tasks(claims, [theory], settings.but(scheduler="local:2", store=store))
    assert [_without_timings(r) for r in resumed] == [_without_timings(r) for r in serial]
    for c in claims:
        name = c.name.split(".")[1]
        rerun = {(x, seed) for checked, x, seed in _checked(log, "rerun") if checked == name}
        if c.name in done_before:
            assert not rerun  # a finished claim is not checked again
        else:  # nor any kept example, and nothing is missing
            assert not kept[c.name] & rerun
            assert {(x, seed) for checked, x, seed in _checked(log, "serial") if checked == name} == \
                kept[c.name] | rerun


def test_kept_examples_of_an_edited_claims_file_are_not_used(tmp_path):
    path, _ = _counted(tmp_path)
    (chosen,) = [c for c in from_file(path).claim_list() if c.name == "counted.first"]
    saved = SavedChecks(tmp_path / "store")
    example = evaluate(chosen, {"x": 3}, 11)
    saved.add_examples(chosen, [example], RunSettings())
    assert list(saved.examples(chosen, RunSettings())) == [example_key({"x": 3}, 11)]
    assert saved.examples(chosen, RunSettings(seed=1)) == {}
    path.write_text(path.read_text() + "\n# edited\n")
    assert saved.examples(chosen, RunSettings()) == {}
