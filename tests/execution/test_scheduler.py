"""The run's scheduler: every task once, each after its prerequisites, the same results on 1 or 2 workers."""

import textwrap
from fractions import Fraction

import pytest

from attnverify.execution.scheduler import Task, by_priority, run_tasks


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


def _results_of(inputs):
    return [outcome.result for outcome in inputs.values()]


def test_a_serial_run_puts_each_task_after_those_it_waits_for_whatever_the_order_given():
    tasks = [Task("sum", _results_of, inputs=("one",)), Task("after", Fraction, {"numerator": 2}, after=("sum",)),
             Task("one", Fraction, {"numerator": 1})]
    started = []
    outcomes = run_tasks(tasks, on_start=lambda t: started.append(t.name))
    assert started == ["one", "sum", "after"]
    assert outcomes["sum"].result == [1] and outcomes["after"].result == 2


def _seed_sweep(seeds):
    """Figure 3's shape: each seed's features (short), then its analysis (long), then one section of them all."""
    tasks = []
    for s in range(seeds):
        tasks += [Task(f"features {s}", Fraction, {"numerator": s}),
                  Task(f"analysis {s}", Fraction, {"numerator": s}, after=(f"features {s}",))]
    return tasks + [Task("section", Fraction, {"numerator": 0}, after=tuple(f"analysis {s}" for s in range(seeds)))]


def test_by_priority_starts_the_tasks_that_longer_chains_wait_for_first():
    ordered = [t.name for t in by_priority(_seed_sweep(3))]
    assert ordered == ["features 0", "features 1", "features 2", "analysis 0", "analysis 1", "analysis 2", "section"]
    chain_and_loner = [Task("loner", Fraction), Task("a", Fraction), Task("b", Fraction, after=("a",))]
    assert [t.name for t in by_priority(chain_and_loner)] == ["a", "loner", "b"]  # ties keep the run's order


def test_two_workers_start_tasks_by_priority():
    started = []
    outcomes = run_tasks(_seed_sweep(3), workers=2, on_start=lambda t: started.append(t.name))
    assert started[:3] == ["features 0", "features 1", "features 2"] and started[-1] == "section"
    assert all(o.error is None for o in outcomes.values())


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
