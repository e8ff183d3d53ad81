"""Runs on a Dask cluster (``--scheduler``): same results as a serial run, and a killed worker is survived."""

from __future__ import annotations

import json
import os
import signal

import pytest

from attnverify import cli
from attnverify.execution.cluster import LOCAL_CLUSTER_CONFIG, parse_scheduler
from attnverify.execution.scheduler import Task, run_tasks

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "partition_theory.py")


@pytest.mark.parametrize("text, parsed", [
    ("local:2", ("local", 2)), ("local", ("local", os.cpu_count() or 1)),
    ("tcp://10.0.0.5:8786", ("address", "tcp://10.0.0.5:8786")), ("node7:8786", ("address", "node7:8786")),
])
def test_scheduler_addresses(text, parsed):
    assert parse_scheduler(text) == parsed


@pytest.mark.parametrize("text", ["", "local:0", "local:two", "cluster", "tcp:/x"])
def test_bad_scheduler_addresses_are_refused_by_name(text, capsys):
    with pytest.raises(ValueError, match="scheduler"):
        parse_scheduler(text)
    assert cli.main(["check", "--only", "gp_limit", "--scheduler", text]) == 2
    assert "--scheduler" in capsys.readouterr().err


def _without_timings(document: dict) -> list[dict]:
    claims = json.loads(json.dumps(document["claims"]))
    for claim in claims:
        claim.pop("seconds")
        for example in claim["examples"] + ([claim["counterexample"]] if claim.get("counterexample") else []):
            example.pop("seconds", None)
    return claims


def test_verify_on_a_two_worker_local_cluster_equals_the_serial_run(tmp_path, capsys):
    pytest.importorskip("distributed")
    serial, dask = tmp_path / "serial.json", tmp_path / "dask.json"
    assert cli.main(["verify", EXAMPLE, "--backend", "numpy", "--examples", "4", "--json", str(serial)]) == 0
    assert cli.main(["verify", EXAMPLE, "--backend", "numpy", "--examples", "4", "--json", str(dask),
                     "--scheduler", "local:2"]) == 0
    a, b = json.loads(serial.read_text()), json.loads(dask.read_text())
    assert b["complete"] and [c["name"] for c in b["claims"]] == [c["name"] for c in a["claims"]]
    assert _without_timings(a) == _without_timings(b)  # drawn examples, seeds, numbers and verdicts
    assert "dashboard" in capsys.readouterr().err


def test_a_worker_killed_mid_task_is_replaced_and_the_run_completes(tmp_path):
    pytest.importorskip("distributed")
    marker = str(tmp_path / "killed-once")

    def square_or_die(x: int, marker: str = marker) -> int:
        if x == 3 and not os.path.exists(marker):  # the first attempt kills its own worker process
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return x * x

    def settings() -> dict:  # what the workers (the replaced one too) run under
        import dask

        return {key: dask.config.get(key) for key in LOCAL_CLUSTER_CONFIG}

    finished = []
    tasks = [Task(f"square {x}", square_or_die, {"x": x}) for x in range(5)] + [Task("settings", settings)]
    outcomes = run_tasks(tasks, scheduler="local:2", on_done=lambda outcome: finished.append(outcome.name))
    assert os.path.exists(marker)  # the worker did die
    worker_settings = outcomes.pop("settings").result
    assert {name: o.result for name, o in outcomes.items()} == {f"square {x}": x * x for x in range(5)}
    assert all(o.error is None for o in outcomes.values()) and sorted(finished) == sorted([*outcomes, "settings"])
    assert worker_settings == LOCAL_CLUSTER_CONFIG


def test_the_local_cluster_settings_are_dask_settings():
    """A misspelt key would be ignored by Dask without a word: each is one of distributed's own settings."""
    pytest.importorskip("distributed")
    import dask
    import distributed  # noqa: F401  (loads distributed's defaults into dask.config)

    for key in LOCAL_CLUSTER_CONFIG:
        dask.config.get(key)  # raises KeyError for a key Dask does not have


@pytest.mark.thorough
def test_a_report_on_a_two_worker_local_cluster_equals_the_serial_one(tmp_path):
    """The worked example's report (section, figure data, claims with their examples and counterexample): serial
    and on local:2, equal timings aside (it does no BLAS work whose bits depend on the thread count)."""
    pytest.importorskip("distributed")
    from attnverify.run import report as builder
    from attnverify.theories import from_file

    theory = from_file(EXAMPLE)
    documents = [builder.build_report(tmp_path / name, theories=[theory], only="partition", examples=3, **options)
                 for name, options in (("serial", {"workers": 1}), ("dask", {"scheduler": "local:2"}))]

    def without_timings(value):
        if isinstance(value, dict):
            return {k: without_timings(v) for k, v in value.items()
                    if "seconds" not in k and k not in ("date", "experiments")}
        return [without_timings(v) for v in value] if isinstance(value, list) else value

    serial, dask = (without_timings(d) for d in documents)
    assert serial["complete"] and serial["ok"] and serial == dask
