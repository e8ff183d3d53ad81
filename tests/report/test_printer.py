"""The report is walked once (`ReportPrinter.doprint`); a format overrides only the leaves.

Every format tells the same parts in the same order, a new format is one class of leaves, and ``print(result)``
is the story every format tells.
"""

from __future__ import annotations

import html

import pytest
import sympy

from attnverify.checks import at_most, claim, run_claim, st
from attnverify.checks.story import claim_story, story_text
from attnverify.derivations.derivation import DerivationRecorder
from attnverify.report.latex import LatexPrinter
from attnverify.report.markdown import MarkdownPrinter
from attnverify.report.printer import ReportPrinter
from attnverify.report.render import HtmlPrinter
from attnverify.report.results import TextPrinter
from attnverify.report.section import Figure, Section, Table, TheoryOutcome


@claim("walk.three_at_most_two", parameters=st.fixed_dictionaries({"x": st.just(3.0)}),
       examples={"quick": 2, "thorough": 2}, expect="refuted", statement="Three is at most two (false).")
def _refuted(p, ctx):
    return at_most(p["x"], 2.0, note="three is more than two")


@pytest.fixture(scope="module")
def outcomes() -> list[TheoryOutcome]:
    x = sympy.Symbol("x", positive=True)
    recorder = DerivationRecorder("walk.square", "Squaring a sum", "nowhere")
    recorder.step("Expand the square.", sympy.Eq((x + 1) ** 2, x**2 + 2 * x + 1), name="square")
    section = Section(theory="walk", title="A walked theory", introduction="Words before the derivations.",
                      derivations=[recorder.finish()], figures=[Figure("walk.png", "A figure's caption.")],
                      tables=[Table("A table's caption.", ["n", "value"], [[1, 0.5]])])
    result = run_claim(_refuted, seed=0).as_dict()
    return [TheoryOutcome("walk", section=section, claims=[result], errors=["Traceback: a part that failed"],
                          warnings=["a warning of the build"])]


MARKERS = ("A walked theory", "a part that failed", "a warning of the build", "Words before the derivations",
           "Squaring a sum", "Expand the square", "A figure", "A table", "Three is at most two",
           "three is more than two", "replay")

PRINTERS = {"html": HtmlPrinter(), "markdown": MarkdownPrinter(), "latex": LatexPrinter(), "text": TextPrinter()}


@pytest.mark.parametrize("form", PRINTERS)
def test_every_format_tells_the_parts_in_the_walks_order(outcomes, form):
    printed = html.unescape(PRINTERS[form].doprint(outcomes, {"profile": "quick", "seed": 0}))
    # LaTeX's story is its replay line (the claims table holds the rest): its counterexample note is not printed
    markers = [m for m in MARKERS if not (form == "latex" and m == "three is more than two")]
    positions = [printed.lower().find(m.lower(), printed.find("A walked theory")) for m in markers]
    assert -1 not in positions, [m for m, p in zip(markers, positions) if p == -1]
    assert positions == sorted(positions), dict(zip(markers, positions))
    assert "1 claims: 1 as expected, 0 unexpected. 1 error(s) while building the report" in printed


def test_a_new_format_is_one_class_of_leaves(outcomes):
    """A printer that tags each leaf it is asked for: the walk alone decides what is printed and in which order."""

    def tagged(name):
        return lambda self, *args: f"<{name}>"

    leaves = ("title", "settings", "summary", "section_heading", "build_error", "warning", "introduction",
              "heading", "figure", "table", "claims_table", "step", "story_heading", "statement", "examples",
              "counterexample", "replay")
    Tagged = type("Tagged", (ReportPrinter,), {
        **{name: tagged(name) for name in leaves},
        "document": lambda self, parts: " ".join(parts),
        "derivation_block": lambda self, derivation, checked, steps: " ".join(["<derivation>", *steps]),
        "stories": lambda self, parts: " ".join(parts),
        "story_block": lambda self, story, parts: " ".join(parts),
        "drawn": lambda self, text: "", "note": lambda self, text: ""})
    assert Tagged().doprint(outcomes, {}) == (
        "<title> <settings> <summary> <section_heading> <build_error> <warning> <introduction> "
        "<derivation> <step> <figure> <table> <heading> <claims_table> "
        "<story_heading> <statement> <examples> <counterexample> <replay>")


def test_print_of_a_result_is_the_story_the_report_tells():
    result = run_claim(_refuted, seed=0)
    story = claim_story(result.as_dict())
    assert str(result) == story_text(story)
    assert str(result).startswith("--- walk.three_at_most_two: refuted (expected refuted) -> OK")
    assert "three is more than two" in str(result) and f"replay:     {result.replay_command}" in str(result)


def test_the_text_story_shows_sides_apart_beyond_six_digits_in_full_and_every_condition():
    from attnverify.checks import close
    from attnverify.checks.evidence import Evidence

    @claim("walk.tiny_gap", parameters=st.fixed_dictionaries({"x": st.just(1.0)}),
           examples={"quick": 1, "thorough": 1}, statement="x = x + 1e-9 (false).")
    def tiny_gap(p, ctx):
        return close(p["x"], p["x"] + 1e-9, labels=("generated", "sympy"))

    text = str(run_claim(tiny_gap, seed=0))
    assert "  generated:  1.0\n  sympy:      1.000000001\n" in text  # 6 digits would print 1 and 1

    @claim("walk.conditions", parameters=st.fixed_dictionaries({"x": st.just(1.0)}),
           examples={"quick": 1, "thorough": 1}, statement="A custom verdict.")
    def conditions(p, ctx):
        return Evidence(holds=False, relation="custom", conditions={"Hessian positive": False, "gradient small": True})

    text = str(run_claim(conditions, seed=0))
    assert "  condition:  Hessian positive: False\n  condition:  gradient small: True" in text


def test_a_ragged_table_prints_every_cell_in_text():
    printed = TextPrinter().table(Table("ragged", ["a", "b", "c"], [[1, 2], [1, 2, 3, 4]]))
    assert printed.splitlines()[0] == "ragged" and printed.splitlines()[-1].split() == ["1", "2", "3", "4"]
    assert TextPrinter().table(Table("empty", [], [])) == "empty"


@pytest.mark.parametrize("form", ["html", "markdown", "text"])
def test_a_claim_shown_in_a_figure_points_to_it_in_every_format_that_tells_its_notes(form):
    """A figure that names the claims it shows (a Monte Carlo claim's own figure): that claim's story says which
    figure, by the report's number; a claim no figure shows says nothing of figures. (LaTeX tells a claim as a row
    of its table and its replay, without notes.)"""
    shown = Figure("walk.png", "The claim's figure.", claims=("walk.three_at_most_two",))
    section = Section(theory="walk", title="A walked theory", figures=[Figure("other.png", "Another."), shown])
    result = run_claim(_refuted, seed=0).as_dict()
    printed = PRINTERS[form].doprint([TheoryOutcome("walk", section=section, claims=[result])], {})
    assert "shown in Figure 2" in printed and "shown in Figure 1" not in printed
    alone = Section(theory="walk", title="A walked theory", figures=[Figure("other.png", "Another.")])
    assert "shown in Figure" not in PRINTERS[form].doprint([TheoryOutcome("walk", section=alone, claims=[result])], {})
