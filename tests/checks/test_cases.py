"""worst_case: several cases of one example, the one closest to failing decides."""

import pytest

from attnverify import Estimate, worst_case, within_error


def _case(mean: float, se: float = 0.1, theory: float = 0.0):
    return within_error(theory, Estimate(mean, se, 1000))


def test_the_case_closest_to_failing_decides_and_every_case_is_kept():
    holds = worst_case([("small", _case(0.01)), ("larger", _case(0.3))])
    assert holds.holds and holds.note.startswith("worst case larger:")
    assert set(holds.figures["cases"]) == {"small", "larger"} and holds.conditions == {"small": True, "larger": True}
    refuted = worst_case([("fine", _case(0.01)), ("off", _case(2.0)), ("near", _case(0.45))])
    assert not refuted.holds and refuted.status == "refuted" and refuted.note.startswith("worst case off:")
    assert refuted.conditions == {"fine": True, "off": False, "near": True}


@pytest.mark.parametrize("cases, error, words", [
    ([], TypeError, "non-empty sequence of \\(label, Evidence\\) pairs"),
    (None, TypeError, "non-empty sequence of \\(label, Evidence\\) pairs, got None"),
    (5, TypeError, "non-empty sequence of \\(label, Evidence\\) pairs, got 5"),
    ([("a", 1.0)], TypeError, "non-empty sequence of \\(label, Evidence\\) pairs"),
    ([("a", _case(0.0)), ("a", _case(0.1))], ValueError, "distinct labels"),
])
def test_bad_cases_are_refused_in_one_line(cases, error, words):
    with pytest.raises(error, match=words):
        worst_case(cases)
