"""The run-scoped store: an experiment runs once per store (and per folder), keyed by its parameters."""

import pickle

import pytest

from attnverify.execution import Store
from attnverify.base.files import unpack_entry

calls = []


def square(*, x):
    calls.append(x)
    return {"square": x * x}


def test_an_experiment_runs_once_per_parameters():
    calls.clear()
    store = Store()
    assert store.get(square, x=3) == {"square": 9}
    assert store.get(square, x=3) is store.get(square, x=3)
    assert store.get(square, x=4) == {"square": 16}
    assert calls == [3, 4] and len(store) == 2


def test_a_folder_shares_results_between_stores(tmp_path):
    calls.clear()
    first = Store(tmp_path)
    first.get(square, x=5)
    second = Store(tmp_path)  # e.g. another worker process of the same run
    assert second.get(square, x=5) == {"square": 25}
    assert calls == [5]
    (stored,) = tmp_path.glob("*.pickle")
    # the file names its key and carries a checksum of the pickled result
    assert pickle.loads(unpack_entry(stored.read_bytes(), Store.key(square, {"x": 5}))) == {"square": 25}


def power(*, x, exponent=2):
    return x**exponent


def test_the_key_names_the_experiment_and_all_its_parameters_sorted():
    assert Store.key(power, {"x": 1}) == f"{__name__}.power(exponent=2, x=1)"
    assert Store.key(power, {"x": 1, "exponent": 2}) == Store.key(power, {"x": 1})


def test_parameters_the_experiment_does_not_take_are_refused():
    with pytest.raises(TypeError, match="does not take these parameters"):
        Store().get(power, y=1)


@pytest.mark.parametrize("value", [[1, 2], {"a": 1}, object(), (1, [2])])
def test_parameters_must_be_plain_values(value):
    with pytest.raises(TypeError, match="experiment parameter 'x'"):
        Store().get(square, x=value)


def test_lambdas_and_closures_of_one_name_keep_their_own_results(tmp_path):
    """Two lambdas, or two closures made by one function, share a module and a qualified name: each keeps its own
    result in an in-memory store; a store with a directory, whose results outlive the run under that name, refuses
    them in one line. A result that cannot be pickled is refused there too, naming the experiment."""
    store = Store()
    assert (store.get(lambda n: n, n=3), store.get(lambda n: 100 * n, n=3)) == (3, 300)

    def scaled_by(k):
        def scaled(n):
            return k * n
        return scaled

    assert (store.get(scaled_by(1), n=3), store.get(scaled_by(7), n=3)) == (3, 21)
    kept = Store(tmp_path)
    with pytest.raises(TypeError, match="^experiment must be a function defined at the top level of a module"):
        kept.get(lambda n: n, n=1)
    with pytest.raises(TypeError, match="^experiment unpicklable returned a function that cannot be pickled"):
        kept.get(unpicklable, n=1)


def unpicklable(n):
    return lambda: n


def test_a_directory_that_is_no_path_is_refused_by_name():
    with pytest.raises(TypeError, match="^directory must be a path"):
        Store(5)


def test_experiment_must_be_callable():
    with pytest.raises(TypeError, match="experiment must be callable"):
        Store().get(3)


def test_a_planned_experiment_is_read_by_the_value_the_plan_made():
    """``store.result(plan)`` is ``store.get`` of the planned call: one computation for the plan and its readers;
    what is not a plan is refused by name."""
    from attnverify.execution.store import planned

    calls = []

    def sized(*, replicates, seed):
        calls.append((replicates, seed))
        return replicates + seed

    store = Store()
    plan = planned(sized, replicates=4, seed=1)
    assert store.result(plan) == 5 == store.get(sized, replicates=4, seed=1) == store.result(planned(sized, seed=1,
                                                                                               replicates=4))
    assert calls == [(4, 1)]
    with pytest.raises(TypeError, match="plan must be a planned experiment"):
        store.result(sized)
