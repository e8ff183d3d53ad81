"""A claim's story is made once (``claim_story``) and every printer tells it: terminal, HTML, Markdown, LaTeX."""

from __future__ import annotations

import html

import pytest

from attnverify.checks import at_most, claim, exceeds, run_claim, st
from attnverify.numerics.statistics import Estimate
from attnverify.report.latex import escape, story_latex
from attnverify.report.markdown import story_markdown
from attnverify.report.render import story_html
from attnverify.checks.story import story_text
from attnverify.checks.story import UNDECIDED, claim_story

ONE = st.fixed_dictionaries({"x": st.just(3.0)})
TWO = st.fixed_dictionaries({"x": st.sampled_from([2.5, 3.0])})
"""Parameter spaces of one point and of two (each point is one example)."""


def _run(name: str, check, expect: str = "holds", parameters=None) -> dict:
    made = claim(f"demo.{name}", parameters=ONE if parameters is None else parameters,
                 examples={"quick": 2, "thorough": 2}, expect=expect, statement=f"The {name} claim.")(check)
    return run_claim(made, seed=0).as_dict()


def _refuted(p, ctx):
    return at_most(p["x"], 2.0, note="three is more than two")


def _raises(p, ctx):
    raise ZeroDivisionError("a bug in the claim's code")


def _undecided(p, ctx):
    return exceeds(Estimate(0.431, 0.094, 13), 0.0, unit="seeds")  # 4.6 SE above 0: 16 seeds would decide


@pytest.mark.parametrize("name, check", [("refuted", _refuted), ("raises", _raises), ("undecided", _undecided)])
def test_every_printer_tells_the_story_it_is_given(name, check):
    result = _run(name, check)
    story = claim_story(result)
    assert story.verdict == {"refuted": "UNEXPECTED", "raises": "UNEXPECTED", "undecided": "UNDECIDED"}[name]
    text, page, markdown = story_text(story), story_html(story), story_markdown(story)
    for printed in (text, html.unescape(page), markdown):
        assert story.name in printed and story.statement in printed and story.replay in printed
        assert story.verdict in printed
    assert escape(story.verdict) in story_latex(story) and escape(story.statement) in story_latex(story)
    if name == "refuted":
        assert story.shown.kind == "counterexample" and story.counterexample_note == "three is more than two"
        assert story.shrink_trials is not None and f"after {story.shrink_trials} shrink trials" in text
        assert f"Shrink trials: {story.shrink_trials}" in page
        for printed in (text, page, markdown):
            assert "three is more than two" in printed
        assert story.row_classes[-1] == "counterexample" and story.example_header[3:5] == ("value", "bound")
    if name == "raises":
        assert story.shown.kind == "error" and "ZeroDivisionError" in story.failure["error"]
        for printed in (text, html.unescape(page), markdown):
            assert "a bug in the claim's code" in printed and "not a counterexample" in printed
    if name == "undecided":
        assert story.inconclusive and story.needed == "16 seeds" and story.shown.kind == "inconclusive"
        assert story.example_header[3:5] == ("bound", "observed")  # exceeds: its first side is the bound, no theory
        for printed in (text, page, markdown):
            assert UNDECIDED in printed and "deciding them all would take 16 seeds" in printed


def test_a_result_that_held_shows_the_example_nearest_its_tolerance():
    def check(p, ctx):
        return at_most(p["x"], 4.0)

    story = claim_story(_run("held", check, parameters=TWO))
    assert story.verdict == "OK" and story.shown.kind == "held" and story.failure is None
    assert story.shrink_trials is None and story.counterexample_note is None and not story.needed
    assert "held on all 2 examples; the nearest to its tolerance:" in story_text(story)
    assert "held on its one example:" in story_text(claim_story(_run("held", check)))  # one point: one example
    assert story.key_figures.startswith("3 ≤ 4")  # a bound, with its round-off floor as tolerance
    assert not any("find a flaw" in note for note in story.notes)  # expected to hold: nothing to say
    unexpected = claim_story(_run("held", check, expect="refuted", parameters=TWO))
    # 1 − 0.01^(1/2) = 90%: two examples see with 99% only a flaw on nine tenths of the space
    assert unexpected.verdict == "UNEXPECTED" and unexpected.notes[-1].startswith(
        "2 examples find a flaw showing on 90% of the drawn parameters or more with probability 99%")
    assert unexpected.notes[-1] in story_text(unexpected)


def test_the_example_shown_is_the_nearest_its_tolerance_and_custom_evidence_says_how_near_by_its_worst_figure():
    """Of examples that held, the summary shows the one nearest failing: |gap|/tolerance where the evidence has
    sides, the ``worst`` figure where it states its own summary (a sampled-network claim's max gap/allowed)."""
    from attnverify.checks.story import shown_example

    def held(evidence):
        return {"parameters": {}, "seed": 0, "evidence": {"holds": True, "status": "holds", **evidence}}

    sided = [held({"theory": 1.0, "observed": 1.1, "tolerance": 0.5}),
             held({"theory": 1.0, "observed": 1.4, "tolerance": 0.5}),
             held({"theory": 1.0, "observed": 0.9, "tolerance": 0.5})]
    assert shown_example({"examples": sided}) is sided[1]
    custom = [held({"relation": "custom", "figures": {"worst": w}}) for w in (0.2, 0.9, 0.4)]
    assert shown_example({"examples": custom}) is custom[1]
    silent = [held({"relation": "custom"}) for _ in range(3)]
    assert shown_example({"examples": silent}) is silent[-1]


def test_an_example_without_two_sides_shows_dashes_not_none():
    """Evidence with no theory, observed or tolerance (a claim over derivation steps): the table shows "–" there,
    in every printer, never Python's None."""
    from attnverify.checks import Evidence

    result = _run("sideless", lambda p, ctx: Evidence(holds=True, relation="custom", note="every step holds"))
    story = claim_story(result)
    assert story.example_rows[0][3:6] == ["–", "–", "–"]
    assert "None" not in story_markdown(story) and "None" not in story_html(story)
