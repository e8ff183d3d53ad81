"""checks/strategies.py and the runner's end examples: every bounded parameter is checked at both its ends."""

import numpy as np
import pytest
from hypothesis import strategies as hypothesis_strategies

from attnverify.checks import at_most, claim, run_claim, st, within_error
from attnverify.checks.runner import END_NUMBERS, drawn_examples, end_examples, example_seed
from attnverify.numerics.statistics import Estimate


def _holds(p, ctx):
    return within_error(0.0, Estimate(0.0, 1.0, 2))


angle_and_width = claim("demo.angle_and_width", parameters={"theta": st.floats(0, np.pi), "d": st.integers(2, 64)},
                        statement="holds everywhere", examples={"quick": 5, "thorough": 5})(_holds)


@pytest.mark.parametrize("seed", [0, 1, 2, 7, 123])
def test_five_examples_hold_both_ends_of_every_bounded_parameter(seed):
    drawn = [parameters for parameters, _ in drawn_examples(angle_and_width, seed=seed)]
    assert len(drawn) == 5
    assert {"theta": 0.0, "d": 2} in drawn and {"theta": np.pi, "d": 64} in drawn  # exactly the ends, as floats
    assert len({repr(sorted(p.items())) for p in drawn}) == 5  # hypothesis' draws never repeat an end
    # the three draws are hypothesis' own: inside the ranges, not all at an end
    assert all(0 <= p["theta"] <= np.pi and 2 <= p["d"] <= 64 for p in drawn)


def test_a_run_checks_the_drawn_examples_and_replays_them_from_its_seed():
    first, again = run_claim(angle_and_width, seed=5), run_claim(angle_and_width, seed=5)
    examples = [(e.parameters, e.seed) for e in first.examples]
    assert examples == [(e.parameters, e.seed) for e in again.examples] == drawn_examples(angle_and_width, seed=5)
    # the low end comes before hypothesis' draws, the high end after them, each with its own Monte Carlo seed
    assert [examples[0], examples[-1]] == [({"theta": 0.0, "d": 2}, example_seed(5, END_NUMBERS["low"])),
                                           ({"theta": np.pi, "d": 64}, example_seed(5, END_NUMBERS["high"]))]
    assert [e.parameters for e in run_claim(angle_and_width, seed=6).examples][1:4] != [p for p, _ in examples[1:4]]


broken_at_pi = claim("demo.broken_at_pi", parameters={"theta": st.floats(0, np.pi), "x": st.floats(min_value=0.5)},
                     statement="false at θ = π only", examples={"quick": 5, "thorough": 5})(
    lambda p, ctx: within_error(0.0, Estimate(1.0 if p["theta"] == np.pi else 0.0, 0.01, 2)))


@pytest.mark.parametrize("seed", [0, 3])
def test_a_flaw_at_the_end_of_a_range_is_found_there(seed):
    result = run_claim(broken_at_pi, seed=seed)
    assert result.status == "refuted" and result.counterexample.parameters["theta"] == np.pi
    assert result.counterexample.parameters["x"] == 1.0  # hypothesis' simplest x ≥ 0.5 (the unbounded one)
    assert len(result.examples) == 5


deep_enough = claim("demo.deep_enough", parameters={"theta": st.floats(0, np.pi), "d": st.integers(2, 64)},
                    statement="false from d = 20 on", examples={"quick": 30, "thorough": 30})(
    lambda p, ctx: within_error(0.0, Estimate(1.0 if p["d"] >= 20 else 0.0, 0.01, 2)))


def test_a_flaw_found_by_hypothesis_still_shrinks_to_its_boundary():
    result = run_claim(deep_enough, seed=0)
    assert result.status == "refuted" and result.shrink_trials > 0
    assert result.counterexample.parameters["d"] == 20


def test_examples_below_the_number_of_ends_take_the_low_end_first_and_a_small_space_is_not_padded():
    one = claim("demo.one", parameters={"theta": st.floats(0, np.pi), "order": st.permutations([1, 2, 3])},
                statement="s", examples={"quick": 1, "thorough": 2})(_holds)
    assert [p for p, _ in drawn_examples(one)] == [{"theta": 0.0, "order": [1, 2, 3]}]
    assert [p["theta"] for p, _ in drawn_examples(one, profile="thorough")] == [0.0, np.pi]
    tiny = claim("demo.tiny", parameters={"n": st.integers(2, 3)}, statement="s",
                 examples={"quick": 5, "thorough": 5})(_holds)
    assert [p for p, _ in drawn_examples(tiny)] == [{"n": 2}, {"n": 3}]
    assert run_claim(tiny).status == "holds"


def test_dependent_parameters_take_the_ends_of_the_range_they_follow():
    dependent = claim("demo.dependent", statement="s", examples={"quick": 4, "thorough": 4}, parameters=st.integers(
        1, 40).flatmap(lambda L: st.fixed_dictionaries({"L": st.just(L), "order": st.permutations(range(L))})))(_holds)
    assert [(end, p["L"], len(p["order"])) for end, p in end_examples(dependent)] == [("low", 1, 1), ("high", 40, 40)]


def test_claims_without_a_bounded_number_draw_as_hypothesis_does():
    free = claim("demo.free", parameters={"x": st.floats(min_value=0.0), "k": st.sampled_from([1, 2, 3]),
                                          "y": hypothesis_strategies.floats(0, 1)},
                 statement="s", examples={"quick": 5, "thorough": 5})(_holds)
    assert end_examples(free) == []
    assert all(seed < 2**32 for _, seed in drawn_examples(free))  # no end's Monte Carlo seed among them


def test_st_is_hypothesis_strategies_with_bounded_numbers_that_know_their_ends():
    assert all(hasattr(st, name) for name in hypothesis_strategies.__all__)
    assert st.tuples is hypothesis_strategies.tuples and st.SearchStrategy is hypothesis_strategies.SearchStrategy
    assert repr(st.floats(0, 1)) == "floats(0, 1)" and repr(st.integers(min_value=2, max_value=64)) == (
        "integers(2, 64)")
    assert st.floats(min_value=0) == hypothesis_strategies.floats(min_value=0)  # unbounded: hypothesis' own
    assert st.range_of(st.floats(0, np.pi)) == (0.0, np.pi) and st.range_of(st.integers(2, 64)) == (2, 64)
    assert st.range_of(st.floats(0, 1, exclude_max=True)) == (0.0, np.nextafter(1.0, 0.0))
    assert st.range_of(hypothesis_strategies.floats(-3, 3)) == (-3.0, 3.0)  # hypothesis' own, for the display
    assert st.range_of(st.floats(0, 1).map(abs)) is None and st.range_of(st.floats(-np.inf, 0)) is None
    with pytest.raises(Exception, match="min_value"):
        st.floats(2, 1)  # hypothesis' own argument error, where the strategy is written
    pairs = claim("demo.pairs", parameters={"xs": st.lists(st.integers(0, 9), min_size=2, max_size=2)},
                  statement="s", examples={"quick": 5, "thorough": 5})(_holds)
    assert end_examples(pairs) == [("low", {"xs": [0, 0]}), ("high", {"xs": [9, 9]})]
    with pytest.raises(ValueError, match="end must be 'low' or 'high'"):
        with st.drawing_ends("middle"):
            pass


def test_an_end_the_strategy_filters_out_is_not_checked():
    positive = claim("demo.positive", parameters={"x": st.floats(0, 1).filter(lambda x: x > 0), "d": st.integers(2, 5)},
                     statement="s", examples={"quick": 5, "thorough": 5})(_holds)
    assert end_examples(positive) == [("high", {"x": 1.0, "d": 5})]
    drawn = [p for p, _ in drawn_examples(positive)]
    assert len(drawn) == 5 and drawn[-1] == {"x": 1.0, "d": 5} and all(p["x"] > 0 for p in drawn)


def test_a_claim_false_at_hypothesis_simplest_draw_is_refuted_at_its_first_check():
    """The low end of floats(0.01, 2) × integers(4, 1000) is hypothesis' simplest draw: it is checked first, so a
    claim false there costs one check, not a later draw's shrinking (up to shrink_budget further checks)."""
    checked = []

    def false_everywhere(p, ctx):
        checked.append(dict(p))
        return at_most(1.0, 0.0)

    false = claim("demo.false_everywhere", parameters={"lam": st.floats(0.01, 2.0), "d": st.integers(4, 1000)},
                  statement="false", examples={"quick": 10, "thorough": 10}, shrink_budget=60)(false_everywhere)
    result = run_claim(false, seed=0)
    assert result.status == "refuted" and result.shrink_trials == 0
    assert checked[0] == {"lam": 0.01, "d": 4} and result.counterexample.parameters == {"lam": 0.01, "d": 4}
    assert len(result.examples) == 1
