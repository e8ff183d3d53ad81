"""The run's scheduler: every task once, each after its prerequisites, the same results on 1 or 2 workers."""

import textwrap
from fractions import Fraction

import pytest

from attnverify.experiments.scheduler import Task, run_tasks


def _tasks():
    return [Task("a", Fraction, {"numerator": 6, "denominator": 8}),
            Task("b", textwrap.shorten, {"text": "the quick brown fox", "width": 12}, after=("a",)),
            Task("c", Fraction, {"numerator": 1, "denominator": 0}),
            Task("d", textwrap.fill, {"text": "a b c", "width": 1}, after=("c", "b"))]


def _run(workers):
    order = []
    outcomes = run_tasks(_tasks(), workers=workers, on_done=lambda o: order.append(o.name))
    return outcomes, order


@pytest.mark.parametrize("workers", [1, 2])
def test_every_task_runs_after_its_prerequisites(workers):
    outcomes, order = _run(workers)
    assert sorted(order) == ["a", "b", "c", "d"]
    assert order.index("a") < order.index("b") < order.index("d") and order.index("c") < order.index("d")
    assert outcomes["a"].result == Fraction(3, 4) and outcomes["b"].result == "the [...]"
    assert outcomes["d"].result == "a\nb\nc"
    assert outcomes["c"].result is None and "ZeroDivisionError" in outcomes["c"].error  # reported, not fatal


def test_two_workers_give_the_serial_results():
    serial, _ = _run(1)
    parallel, _ = _run(2)
    assert {k: v.result for k, v in serial.items()} == {k: v.result for k, v in parallel.items()}


@pytest.mark.parametrize("tasks, message", [
    ([Task("a", abs, {"x": 1}), Task("a", abs, {"x": 2})], "unique"),
    ([Task("a", abs, {"x": 1}, after=("z",))], "not tasks of this run"),
    ([Task("a", abs, {"x": 1}, after=("b",)), Task("b", abs, {"x": 1}, after=("a",))], "cycle"),
])
def test_bad_task_lists_are_refused(tasks, message):
    with pytest.raises(ValueError, match=message):
        run_tasks(tasks)


def test_workers_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="workers"):
        run_tasks([], workers=0)
