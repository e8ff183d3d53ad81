"""Three verdicts and errors that are not counterexamples.

Refuted only when the evidence contradicts the claim at its bar; inconclusive when it neither reaches the
bar nor contradicts it, with what would decide it; an error of the claim's code (a raise, ``sys.exit``,
something other than evidence) is never shrunk nor shown as a counterexample, and the other claims run.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import textwrap

import numpy as np
import pytest

from attnverify import cli
from attnverify.checks import Evidence, claim, examples_needed, exceeds, run_claim, st, within_error
from attnverify.checks.comparisons import draws_to_resolve
from attnverify.checks.evidence import EvidenceError
from attnverify.checks.runner import evaluate
from attnverify.numerics.statistics import Estimate, mean_estimate

OFFSET = int(os.environ.get("ATTNVERIFY_TEST_SEED_OFFSET", "0"))
ONE = st.fixed_dictionaries({"x": st.just(1)})


def test_a_one_sided_bound_short_of_the_bar_is_inconclusive_with_the_seeds_it_needs():
    """The pruning claim's thorough figures: ρ = 0.431 ± 0.094 over 13 seeds is 4.6 SE above 0."""
    evidence = exceeds(Estimate(0.431, 0.094, 13), 0.0, unit="seeds")
    assert evidence.status == "inconclusive" and not evidence.holds
    assert evidence.needed == {"seeds": math.ceil(13 * (5 * 0.094 / 0.431) ** 2)} == {"seeds": 16}
    assert exceeds(Estimate(0.6, 0.1, 13), 0.0).status == "holds"
    assert exceeds(Estimate(-0.6, 0.1, 13), 0.0).status == "refuted"  # contradicted at 5 SE
    below = exceeds(Estimate(-0.2, 0.1, 13), 0.0)  # below the bound, not by 5 SE: more draws would decide
    assert below.status == "inconclusive" and below.needed["draws"] > 13


def test_an_equality_whose_error_bar_is_wider_than_its_resolution_is_inconclusive():
    wide = within_error(1.0, Estimate(1.01, 0.01, 100), resolution=0.02)  # 5 SE = 0.05 > 0.02
    assert wide.status == "inconclusive" and wide.needed["draws"] == draws_to_resolve(100, 0.05, 0.02 - wide.figures["roundoff_floor"])
    assert 600 <= wide.needed["draws"] <= 700  # 100·(0.05/0.02)² = 625
    assert within_error(1.0, Estimate(1.001, 0.001, 100), resolution=0.02).status == "holds"
    assert within_error(1.0, Estimate(1.2, 0.01, 100), resolution=0.02).status == "refuted"  # contradicts anyway
    hopeless = within_error(1.0, Estimate(1.0, 0.01, 100), bias_budget=0.03, resolution=0.02)
    assert hopeless.status == "inconclusive" and not hopeless.needed and "no number of draws" in hopeless.inconclusive


def test_evidence_cannot_both_hold_and_be_inconclusive():
    with pytest.raises(EvidenceError, match="inconclusive"):
        Evidence(holds=True, inconclusive="not converged")
    with pytest.raises(EvidenceError, match="needed"):
        Evidence(holds=False, inconclusive="short", needed={"draws": -3})


@claim("mine.undecided", parameters=ONE, examples={"quick": 2, "thorough": 2})
def undecided(p, ctx):
    """A mean of 0.3 ± 0.1 (3 SE) said to exceed 0: supported, short of the bar."""
    return exceeds(Estimate(0.3, 0.1, 10), 0.0)


def test_a_claim_with_an_undecided_example_is_inconclusive_not_refuted_and_not_shrunk():
    result = run_claim(undecided, seed=OFFSET)
    assert result.status == "inconclusive" and not result.ok and result.counterexample is None
    assert result.shrink_trials == 0 and result.needed == {"draws": math.ceil(10 * (0.5 / 0.3) ** 2)}
    assert result.as_dict()["needed"] == result.needed


@claim("mine.keyerror", parameters=st.fixed_dictionaries({"x": st.floats(0, 1)}))
def keyerror(p, ctx):
    """Reads a parameter it was never given."""
    return within_error(0.0, mean_estimate(ctx.rng.standard_normal(100) * p["sigma"]))


@claim("mine.exits", parameters=ONE)
def exits(p, ctx):
    """Calls sys.exit(3)."""
    raise SystemExit(3)


@claim("mine.not_evidence", parameters=ONE)
def not_evidence(p, ctx):
    """Returns a bool."""
    return True


@pytest.mark.parametrize("broken, says", [(keyerror, "KeyError: 'sigma'"), (exits, "sys.exit(3)"),
                                          (not_evidence, "returned bool, not Evidence")])
def test_an_error_of_the_claims_code_is_an_error_never_a_counterexample(broken, says):
    result = run_claim(broken, seed=OFFSET)
    assert result.status == "error" and result.counterexample is None and result.shrink_trials == 0
    assert says in result.error.error
    assert len(result.examples) == 1  # stopped at the first: a broken check is not searched further


def test_the_claims_own_frames_come_first():
    example = evaluate(keyerror, {"x": 0.5}, 1)
    text = example.error
    own = text.index("in the claim's code")
    assert text.index("test_verdicts.py") > own and text.index("test_verdicts.py") < text.index("full traceback")


def test_the_command_line_runs_the_other_claims_past_an_error_and_an_exit(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ATTNVERIFY_BACKEND", raising=False)
    path = tmp_path / "mine.py"
    path.write_text(textwrap.dedent('''
        import sys
        from attnverify.checks import claim, close, exceeds, st
        from attnverify.numerics.statistics import Estimate

        ONE = st.fixed_dictionaries({"x": st.just(1)})

        @claim("mine.crashes", parameters=ONE)
        def crashes(p, ctx):
            """Reads a missing key."""
            return close(p["sigma"], 1.0)

        @claim("mine.exits", parameters=ONE)
        def exits(p, ctx):
            """Exits."""
            sys.exit(3)

        @claim("mine.holds", parameters=ONE)
        def holds(p, ctx):
            """1 = 1."""
            return close(1.0, 1.0)
    '''))
    report = tmp_path / "results.json"
    assert cli.main(["verify", str(path), "--json", str(report)]) == 1
    out = capsys.readouterr().out
    assert "error in the claim's code (not a counterexample" in out and "counterexample (after" not in out
    statuses = {c["name"]: c["status"] for c in json.loads(report.read_text())["claims"]}
    assert statuses == {"mine.crashes": "error", "mine.exits": "error", "mine.holds": "holds"}


def test_the_command_line_exits_3_when_only_undecided(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ATTNVERIFY_BACKEND", raising=False)
    path = tmp_path / "mine.py"
    path.write_text(textwrap.dedent('''
        from attnverify.checks import claim, exceeds, st
        from attnverify.numerics.statistics import Estimate

        @claim("mine.short", parameters=st.fixed_dictionaries({"x": st.just(1)}))
        def short(p, ctx):
            """0.3 ± 0.1 exceeds 0 (3 SE: short of the bar)."""
            return exceeds(Estimate(0.3, 0.1, 10), 0.0)
    '''))
    assert cli.main(["verify", str(path)]) == 3
    out = capsys.readouterr().out
    assert "UNDECIDED" in out and "28 draws" in out and "1 undecided" in out


def test_expect_inconclusive_is_accepted_and_bad_claim_settings_are_refused():
    assert claim("mine.x", parameters=ONE, statement="x", expect="inconclusive")(lambda p, c: None).expect == "inconclusive"
    with pytest.raises(ValueError, match="expect"):
        claim("mine.x", parameters=ONE, statement="x", expect="maybe")(lambda p, c: None)
    with pytest.raises(ValueError, match="shrink_budget"):
        claim("mine.x", parameters=ONE, statement="x", shrink_budget=-1)(lambda p, c: None)
    with pytest.raises(ValueError, match="exposed_fraction"):
        examples_needed("a")
    with pytest.raises(ValueError, match="at least one entry"):
        from attnverify.checks import close

        close(np.array([]), np.array([]))


def _point(width, converged, shift=0.0):
    """A sampled width whose Û is the theory's U plus ``shift`` (MCSE 0.01, budget 0), accuracy equal."""
    from types import SimpleNamespace

    from attnverify.theories.attention_paths.theory_points import SampledPoint

    U = np.array([[1.0, 0.2], [0.2, 1.0]])
    theory = SimpleNamespace(order_parameter=U, accuracy=Estimate(0.8, 0.01, 100), predictor_mean=None)
    return SampledPoint(width, U + shift, np.full((2, 2), 0.01), Estimate(0.8, 0.01, 100),
                        {"max_rhat": 1.02, "draws_needed": 1600, "draws": 400}, converged, theory, theory,
                        order_parameter_z=np.full((2, 2), 5.0), prediction=U, prediction_error=np.zeros((2, 2)))


@pytest.mark.parametrize("converged, shift, status", [
    (True, 0.0, "holds"), (True, 1.0, "refuted"), (False, 0.0, "inconclusive"), (False, 1.0, "inconclusive")])
def test_an_unconverged_sampler_is_a_reason_to_draw_more_not_evidence(monkeypatch, converged, shift, status):
    from attnverify.theories.attention_paths import claims as attention_paths
    from attnverify.checks.claim import Context
    from attnverify.execution.settings import RunSettings

    monkeypatch.setattr(attention_paths, "_point_figures", lambda q: {})
    monkeypatch.setattr(attention_paths, "sampled_points",
                        lambda data, ctx: ([_point(10, True), _point(30, converged, shift)], "test"))
    ctx = Context(RunSettings(), np.random.default_rng(0), 0)
    evidence = attention_paths.sampled_networks_match_theory.check({"data": "authors"}, ctx)
    assert evidence.status == status
    if status == "inconclusive":
        assert "N = 30" in evidence.inconclusive and evidence.needed == {"draws per chain": 1600}


@pytest.mark.parametrize("closer, status", [(0.9, "holds"), (-0.9, "refuted"), (0.07, "inconclusive")])
def test_the_approach_to_the_gp_is_a_one_sided_bound_with_three_verdicts(monkeypatch, closer, status):
    """d(N) = |Û − I| falling by > 5 SE holds, rising by > 5 SE refutes, anything between asks for more draws
    (|U − I| = 0.283 at N = 10 and falls by the fraction ``closer``; the SE of the drop is sqrt(2)·0.01 = 0.014,
    so 0.9 is a drop of 18 SE and 0.07 one of 1.4 SE)."""
    from attnverify.theories.attention_paths import claims as attention_paths
    from attnverify.checks.claim import Context
    from attnverify.execution.settings import RunSettings

    far, near = _point(10, True, 0.0), _point(30, True, 0.0)
    near = dataclasses.replace(near, order_parameter=np.eye(2) + (far.order_parameter - np.eye(2)) * (1 - closer))
    monkeypatch.setattr(attention_paths, "sampled_points", lambda data, ctx: ([far, near], "test"))
    ctx = Context(RunSettings(), np.random.default_rng(0), 0)
    evidence = attention_paths.sampled_networks_approach_gp.check({"data": "authors"}, ctx)
    assert evidence.status == status
    if status == "inconclusive":
        assert "N = 10 to 30" in evidence.inconclusive
        assert evidence.needed["draws per chain"] > 400
