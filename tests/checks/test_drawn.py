"""What a claim's examples covered: the drawn range of each parameter, in the result, its JSON and the report;
and an ``expected=`` that cannot take a drawn parameter, named at definition."""

import json

import numpy as np
import pytest

from attnverify import Theory
from attnverify.checks import claim, run_claim, st, within_error
from attnverify.checks.drawn import drawn_ranges, drawn_text
from attnverify.checks.runner import jsonable
from attnverify.numerics.statistics import Estimate
from attnverify.report.markdown import claim_detail_markdown
from attnverify.report.render import claim_detail_html
from attnverify.report.results import result_details


@claim("demo.covered", parameters={"theta": st.floats(0, np.pi), "log_norm": st.floats(-100, 100),
                                   "order": st.permutations([1, 2, 3]), "k": st.sampled_from([3, 5])},
       statement="holds everywhere", examples={"quick": 6, "thorough": 6})
def covered(p, ctx):
    return within_error(0.0, Estimate(0.0, 1.0, 2))


def test_the_result_shows_each_numeric_parameter_drawn_against_its_declared_range():
    result = run_claim(covered, seed=2)
    drawn = result.as_dict()["drawn"]
    assert list(drawn) == ["theta", "log_norm", "k"]  # the claim's order; the permutation is not a number
    assert drawn["theta"] == {"drawn": [0.0, np.pi], "declared": [0.0, np.pi]}
    assert drawn["log_norm"] == {"drawn": [-100.0, 100.0], "declared": [-100.0, 100.0]}
    assert drawn["k"]["declared"] is None and set(drawn["k"]["drawn"]) <= {3, 5}
    json.dumps(jsonable(result.as_dict()), allow_nan=False)
    line = "theta: drawn 0 … 3.14159 of [0, 3.14159]; log_norm: drawn -100 … 100 of [-100, 100]; k: drawn "
    assert line in str(result)
    as_dict = result.as_dict()
    assert line in result_details(as_dict)
    assert f"Drawn: {line}" in claim_detail_markdown(as_dict)
    assert line in claim_detail_html(as_dict)


def test_a_result_written_before_the_drawn_ranges_shows_none():
    as_dict = run_claim(covered, seed=2).as_dict()
    del as_dict["drawn"]
    assert "drawn:" not in result_details(as_dict) and "Drawn:" not in claim_detail_markdown(as_dict)


def test_drawn_ranges_skip_what_is_not_a_number_and_show_a_single_value_once():
    class Drawn:
        def __init__(self, parameters):
            self.parameters = parameters

    examples = [Drawn({"n": np.int64(4), "flag": True, "x": float("nan"), "y": 2.5}),
                Drawn({"n": np.int64(4), "flag": False, "x": 1.0, "y": -1e-30})]
    ranges = drawn_ranges(examples, {"n": (2, 64), "y": None})
    assert ranges == {"n": {"drawn": [4, 4], "declared": [2, 64]}, "y": {"drawn": [-1e-30, 2.5], "declared": None}}
    assert type(ranges["n"]["drawn"][0]) is int  # numpy scalars become plain numbers for JSON
    assert drawn_text(ranges) == "n: drawn 4 of [2, 64]; y: drawn -1e-30 … 2.5"


def test_an_expected_value_that_cannot_take_a_drawn_parameter_is_named_at_definition():
    theory = Theory("mine")

    def k_at(theta, log_norm):
        return 0.0

    def units(rng, n, theta, log_norm, d):
        """E[a standard normal] = 0."""
        return rng.standard_normal(n)

    angles = dict(theta=st.floats(0, np.pi), log_norm=st.floats(-100, 100), d=st.integers(2, 64))
    with pytest.raises(TypeError, match=r"expected k_at must accept the drawn parameter 'd' \(its parameters: "
                                        r"theta, log_norm\); add d=\.\.\. or \*\*p"):
        theory.monte_carlo(units, expected=k_at, relative=0.02, **angles)
    with pytest.raises(TypeError, match=r"drawn parameters 'log_norm', 'd' \(its parameters: theta\)"):
        theory.monte_carlo(units, expected=lambda theta: 0.0, relative=0.02, **angles)
    made = theory.monte_carlo(units, expected=lambda theta, **p: 0.0, relative=0.02, **angles)
    assert made.name == "mine.units"


def test_the_drawn_ranges_include_the_shrunk_counterexample():
    """A refuted claim's counterexample was checked too: hypothesis shrinks a float to its simplest failing value
    (1 for a flaw from 0.5 on), often beyond what the examples before it drew, and the ranges show it."""

    @claim("demo.beyond_a_half", parameters={"beta": st.floats(0.05, 1.5)},
           statement="beta ≤ 1/2 (false beyond it)", examples={"quick": 21, "thorough": 21})
    def beyond_a_half(p, ctx):
        return within_error(0.0, Estimate(0.0 if p["beta"] <= 0.5 else 10.0, 1.0, 2))

    for seed in range(3):
        result = run_claim(beyond_a_half, seed=seed)
        assert result.status == "refuted"
        low, high = result.drawn["beta"]["drawn"]
        assert low <= result.counterexample.parameters["beta"] <= high
