"""The claim runner: examples, shrinking to a minimal counterexample, replay, errors."""

import numpy as np
import pytest

from attnverify.checks import at_most, claim, evaluate, run_claim, st, within_error
from attnverify.numerics.statistics import mean_estimate


@claim("demo.square_below_fifty", parameters=st.fixed_dictionaries({"x": st.floats(-10, 10)}),
       examples={"quick": 60, "thorough": 60})
def square_below_fifty(p, ctx):
    """x² ≤ 50 for every x in [−10, 10] (false)."""
    return at_most(p["x"] ** 2, 50.0)


@claim("demo.sample_mean", parameters=st.fixed_dictionaries({"mu": st.floats(-3, 3)}),
       examples={"quick": 10, "thorough": 10})
def sample_mean(p, ctx):
    """The sample mean of N(μ, 1) draws estimates μ."""
    return within_error(p["mu"], mean_estimate(ctx.rng.normal(p["mu"], 1.0, size=2000)))


def test_a_false_claim_is_refuted_and_shrunk():
    result = run_claim(square_below_fifty, seed=1)
    assert result.status == "refuted" and not result.ok
    # hypothesis shrinks towards simple values: the minimal counterexample is an integer-valued x
    assert abs(result.counterexample.parameters["x"]) in (8.0, 7.5, 7.25, 7.125) or abs(result.counterexample.parameters["x"]) <= 8
    assert result.counterexample.parameters["x"] ** 2 > 50


def test_a_run_replays_from_its_seed():
    first, second = run_claim(square_below_fifty, seed=7), run_claim(square_below_fifty, seed=7)
    assert first.counterexample.parameters == second.counterexample.parameters
    assert first.counterexample.seed == second.counterexample.seed


@claim("demo.wide_floats", parameters=st.fixed_dictionaries({"a": st.floats(-1e6, 1e6), "b": st.floats(0, 100),
                                                              "c": st.integers(-10**6, 10**6)}),
       examples={"quick": 100, "thorough": 100})
def wide_floats(p, ctx):
    """A claim that always holds: only its draws matter here."""
    return at_most(0.0, 1.0)


def test_draws_do_not_depend_on_the_modules_loaded(tmp_path, monkeypatch):
    """hypothesis mixes in literal constants of the loaded local modules; a report (many modules loaded) and its
    replay (few) must draw the same examples, so that pool is kept empty."""
    before = [e.parameters for e in run_claim(wide_floats, seed=5).examples]
    constants = ", ".join(f"{k * 1234.5678:.4f}, {k * 7.25:.2f}, {k * 98765}" for k in range(1, 200))
    (tmp_path / "attnverify_constants_module.py").write_text(f"VALUES = [{constants}]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__("attnverify_constants_module")
    after = [e.parameters for e in run_claim(wide_floats, seed=5).examples]
    assert before == after


def test_an_example_replays_from_its_parameters_and_seed():
    result = run_claim(sample_mean, seed=3)
    example = result.examples[-1]
    again = evaluate(sample_mean, example.parameters, example.seed)
    assert again.evidence.observed == example.evidence.observed


@claim("demo.one_example", parameters=st.fixed_dictionaries({"mu": st.floats(-3, 3)}),
       examples={"quick": 1, "thorough": 1})
def one_example(p, ctx):
    """The sample mean of N(μ, 1) draws estimates μ (one example per run)."""
    return within_error(p["mu"], mean_estimate(ctx.rng.normal(p["mu"], 1.0, size=100)))


def test_every_run_seed_gives_the_first_example_its_own_monte_carlo_seed():
    """hypothesis starts every run with its simplest example (drawn number 0); the Monte Carlo seed mixes
    in the run's seed, so a claim with one example is a different experiment under each --seed (a seed
    sweep of it is not vacuous), and it still replays."""
    results = [run_claim(one_example, seed=s) for s in range(5)]
    seeds = [r.examples[0].seed for r in results]
    assert len(set(seeds)) == 5
    assert len({r.examples[0].evidence.observed for r in results}) == 5
    assert run_claim(one_example, seed=3).examples[0].evidence.observed == results[3].examples[0].evidence.observed


def test_a_true_stochastic_claim_holds():
    result = run_claim(sample_mean, seed=0)
    assert result.status == "holds" and result.ok and len(result.examples) == 10


def test_a_crash_is_an_error_with_its_traceback():
    @claim("demo.crash", parameters=st.fixed_dictionaries({"x": st.floats(0, 1)}))
    def crash(p, ctx):
        """Always crashes."""
        raise ZeroDivisionError("boom")

    result = run_claim(crash, seed=0)
    assert result.status == "error" and "ZeroDivisionError: boom" in result.error.error
    assert result.counterexample is None and result.shrink_trials == 0  # an error is not a counterexample


def test_a_crash_at_a_huge_draw_of_an_unbounded_strategy_names_the_parameter():
    @claim("demo.overflows", parameters=st.fixed_dictionaries({"x": st.floats(0.5, float("inf")),
                                                                "y": st.floats(0, 1)}))
    def overflows(p, ctx):
        """x² overflows where x is drawn beyond 1.3e154."""
        if p["x"] > 1e154:
            raise OverflowError("x squared")
        return at_most(0.0, 1.0)

    result = run_claim(overflows, seed=0)
    assert result.status == "error" and result.error.parameters["x"] > 1e154
    named = [note for note in result.notes if "no finite range" in note]
    assert len(named) == 1 and named[0].startswith("x=")  # y has finite ends: not named


def test_tolerances_below_five_standard_errors_are_refused():
    with pytest.raises(ValueError, match="z must be"):
        within_error(0.0, mean_estimate(np.arange(10.0)), z=2)


def test_claim_names_must_be_namespaced():
    with pytest.raises(ValueError, match="theory.name"):
        claim("nonamespace", parameters=st.just({}), statement="anything")(lambda p, c: None)


def test_the_examples_rule_and_the_default_that_follows_it():
    """n = ⌈log δ / log(1 − q)⌉: the smallest n with (1 − q)ⁿ ≤ δ."""
    from attnverify.checks import DEFAULT_EXAMPLES, examples_needed

    for q, delta in [(0.2, 0.01), (0.05, 0.01), (0.5, 0.001), (0.01, 0.05)]:
        n = examples_needed(q, delta)
        assert (1 - q) ** n <= delta < (1 - q) ** (n - 1)
    assert DEFAULT_EXAMPLES == {"quick": examples_needed(0.2), "thorough": examples_needed(0.05)} == \
        {"quick": 21, "thorough": 90}

    @claim("demo.defaulted", parameters=st.fixed_dictionaries({"x": st.floats(0, 1)}))
    def defaulted(p, ctx):
        """x ≤ 1."""
        return at_most(p["x"], 1.0)

    assert defaulted.examples == DEFAULT_EXAMPLES
    with pytest.raises(ValueError, match="exposed_fraction must be in"):
        examples_needed(1.0)
    with pytest.raises(ValueError, match="miss_probability must be in"):
        examples_needed(0.5, 0.0)


@claim("demo.square_below_fifty_away_from_zero", parameters=st.fixed_dictionaries({"x": st.floats(-10, 10)}),
       examples={"quick": 60, "thorough": 60})
def square_below_fifty_away_from_zero(p, ctx):
    """x² ≤ 50 for every x in [−10, 10] (false), by a check that cannot run below |x| = 7.5 once a failure is seen
    (the shrinking's candidates)."""
    if p["x"] ** 2 > 50:
        FAILURES_SEEN.append(p["x"])
    elif FAILURES_SEEN and abs(p["x"]) < 7.5:
        raise ValueError(f"no check at x = {p['x']}")
    return at_most(p["x"] ** 2, 50.0)


FAILURES_SEEN: list = []


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_shrink_candidates_the_check_cannot_run_are_counted_and_the_first_named(seed):
    """Shrinking towards 0 meets x the check cannot run: not a smaller failure, and the note says what it raised,
    where."""
    FAILURES_SEEN.clear()
    result = run_claim(square_below_fifty_away_from_zero, seed=seed)
    assert result.status == "refuted" and result.counterexample.parameters["x"] ** 2 > 50
    notes = [n for n in result.notes if "shrink candidates could not be checked" in n]
    assert len(notes) == 1 and "ValueError: no check at x = " in notes[0] and "the first, at x=" in notes[0]


def test_every_example_lists_its_parameters_in_the_declared_order():
    """hypothesis draws a fixed dictionary's entries in an order of its own, example by example; the examples (and
    so --json and the report's tables) list them as the claim declares them."""

    @claim("demo.ordered", parameters=st.fixed_dictionaries({"N": st.integers(1, 5), "sigma2": st.floats(0.1, 1.0),
                                                            "P": st.integers(1, 3)}))
    def ordered(p, ctx):
        """A bound."""
        return at_most(0.0, 1.0)

    result = run_claim(ordered, seed=3)
    assert len(result.examples) > 5
    assert all(list(example.parameters) == ["N", "sigma2", "P"] for example in result.examples)


def test_the_examples_are_distinct_points_and_a_small_space_is_checked_point_by_point():
    """hypothesis repeats simple values; each example is a point not checked before, so n examples cover n points
    (the coverage examples_needed counts on). A space of fewer points is checked once at each, and the notes say so;
    a failure still shrinks and replays (its point is never set aside)."""

    @claim("demo.repeats", parameters=st.fixed_dictionaries({"L": st.integers(1, 64),
                                                             "b": st.sampled_from([0.5, 1.0])}),
           examples={"quick": 21, "thorough": 90})
    def repeats(p, ctx):
        """A bound."""
        return at_most(0.0, 1.0)

    for profile, total in (("quick", 21), ("thorough", 90)):
        result = run_claim(repeats, profile=profile, seed=1)
        assert len({tuple(sorted(e.parameters.items())) for e in result.examples}) == len(result.examples) == total

    @claim("demo.four_points", parameters=st.fixed_dictionaries({"L": st.integers(1, 4)}))
    def four_points(p, ctx):
        """L ≤ 4."""
        return at_most(float(p["L"]), 4.0)

    small = run_claim(four_points, seed=1)
    assert small.status == "holds" and sorted(e.parameters["L"] for e in small.examples) == [1, 2, 3, 4]
    assert "4 of the 21 examples asked for: the parameters take only 4 distinct values" in " ".join(small.notes)

    @claim("demo.three_is_too_many", parameters=st.fixed_dictionaries({"L": st.integers(1, 4)}))
    def three_is_too_many(p, ctx):
        """L ≤ 2."""
        return at_most(float(p["L"]), 2.0)

    refuted = run_claim(three_is_too_many, seed=1)
    assert refuted.status == "refuted" and refuted.counterexample.parameters == {"L": 3}
