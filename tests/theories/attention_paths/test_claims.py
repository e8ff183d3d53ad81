"""Every built-in attention-path claim, run through the same runner as the CLI, comes out as
expected; and the checks have power: a wrong theory makes them fail."""

import inspect

import pytest

from attnverify.theories.attention_paths import claims as claims
from attnverify.theories.attention_paths.one_shot import claims as one_shot_claims
from attnverify.checks.runner import end_examples
from attnverify.checks.strategies import declared_ranges
from attnverify.checks import run_claim
from claim_helpers import assert_comes_out_as_expected, run_seed
from attnverify.theories import builtin_claims
from attnverify.theories.catalogue import claims_in_module
from attnverify.execution import Store
from attnverify.saddle import SaddlePointAction

CLAIMS = claims_in_module(claims)
SHARED_WITH_SECTION = ("attention_paths.sampled_networks_match_theory", "attention_paths.sampled_networks_approach_gp",
                       "attention_paths.one_shot_cache_is_the_trained_network",
                       "attention_paths.one_shot_head_scores_predict_pruning",
                       "attention_paths.one_shot_network_generalises_to_new_classes")
"""Claims on the experiments of figures 2c and 3 (sampled networks, the one-shot networks and their analyses):
the quick tier runs them, and their power tests, with the section that computes those experiments
(``tests/theories/attention_paths/test_section.py``), sharing its store as a report does."""


def test_the_six_claims_of_the_issue_are_registered():
    """The minimum and the head-relabelling symmetry are the engine's, over drawn heads; no hand-written copy."""
    names = {c.name for c in builtin_claims()}
    for expected in ("generic_saddle_point_is_a_minimum", "gp_limit", "single_head_reduction", "generated_action",
                     "markov_accuracy_between_gp_lines", "generic_symmetric_under_head_relabelling"):
        assert f"attention_paths.{expected}" in names
    assert not names & {"attention_paths.saddle_point_is_a_minimum", "attention_paths.head_permutation_symmetry"}


SAMPLED_BY_THE_REPORT = ("attention_paths.generic_sampled_networks_match_theory",)
"""Claims whose quick run (13–16 s of sampling) is the report's, which ``make docs`` builds in CI and whose verdicts
it checks against the expected ones; the quick tier tests the same comparison with its power on the same network
(``test_beyond_saddle.py``), and the thorough tier runs the claim itself."""

QUICK = [pytest.param(c, marks=pytest.mark.thorough, id=c.name) if c.name in SAMPLED_BY_THE_REPORT
         else pytest.param(c, id=c.name) for c in CLAIMS if c.name not in SHARED_WITH_SECTION]
WRITTEN = [c for c in CLAIMS if inspect.unwrap(c.check).__module__ in (claims.__name__, one_shot_claims.__name__)]


@pytest.mark.parametrize("claim", WRITTEN, ids=[c.name for c in WRITTEN])
def test_claim_names_its_parameters_and_checks_the_ends_of_its_ranges(claim):
    """The README's form: the claim's function takes each drawn parameter by name (no ``**p``), and a claim with a
    bounded number draws it with attnverify's ``st``, so that a run checks the all-low and the all-high example."""
    signature = inspect.signature(inspect.unwrap(claim.check)).parameters
    assert all(p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in signature.values())
    ranges = declared_ranges(claim.parameters)
    assert set(signature) - {"ctx", "rng"} == set(ranges)
    if any(r is not None for r in ranges.values()):
        assert [end for end, _ in end_examples(claim)] == ["low", "high"]


@pytest.mark.parametrize("claim", QUICK)
def test_claim_comes_out_as_expected(claim):
    assert_comes_out_as_expected(claim)


def test_a_wrong_entropy_gradient_is_caught(monkeypatch):
    """Power: a 1e-4 relative error in the first entry of the entropy's gradient breaks the finite-difference check."""
    original = SaddlePointAction.entropy_value_and_gradient

    def wrong(self, entries, parameters):
        value, gradient = original(self, entries, parameters)
        gradient = gradient.copy()
        gradient[0] *= 1 + 1e-4
        return value, gradient

    monkeypatch.setattr(SaddlePointAction, "entropy_value_and_gradient", wrong)
    result = run_claim(claims.generated_action, profile="quick", seed=run_seed(0))
    assert result.status == "refuted"


def test_a_wrong_readout_term_is_caught(monkeypatch):
    """Power: a tilt of 1e-6·n·U_a in the entropy (value and gradient, so the solver converges to its minimum) moves
    the H = 1 saddle point off the independent scalar solution."""
    original = SaddlePointAction.entropy_value_and_gradient

    def tilted(self, entries, parameters):
        value, gradient = original(self, entries, parameters)
        tilt = 1e-6 * self.scale(parameters)
        gradient = gradient.copy()
        gradient[-1] += tilt  # U_a is the last entry of the attention-path action
        return value + tilt * entries[-1], gradient

    monkeypatch.setattr(SaddlePointAction, "entropy_value_and_gradient", tilted)
    result = run_claim(claims.single_head_reduction, profile="quick", seed=run_seed(0))
    assert result.status == "refuted"


THOROUGH_STORE = Store()  # claims 7 and 8 share one sampling, as in a run


@pytest.mark.thorough
@pytest.mark.parametrize("claim", CLAIMS, ids=[c.name for c in CLAIMS])
def test_claim_comes_out_as_expected_in_the_thorough_profile(claim):
    assert_comes_out_as_expected(claim, "thorough", store=THOROUGH_STORE)


