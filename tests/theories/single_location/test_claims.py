"""Every built-in single-location claim, run through the same runner as the CLI, comes out as
expected; and the checks have power: a wrong theory makes them fail."""

import pytest

from attnverify.checks import run_claim
from attnverify.theories.single_location import claims as claims
from attnverify.theories import builtin_claims
from attnverify.theories.catalogue import claims_in_module
from attnverify.theories.single_location import derivations as theory
from claim_helpers import assert_comes_out_as_expected, unshrunk, run_seed

CLAIMS = claims_in_module(claims)


def test_the_papers_claims_are_registered():
    names = {c.name for c in builtin_claims()}
    for expected in ("closed_form_risk", "gaussian_identities", "asymptotic_bayes_optimality", "oracle_beats_linear",
                     "manifold_invariance", "manifold_is_attracting", "pgd_from_sphere_reaches_oracle", "oracle_is_global_minimiser"):
        assert f"single_location.{expected}" in names


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.name for c in CLAIMS])
def test_claim_comes_out_as_expected(claim):
    assert_comes_out_as_expected(claim)


def test_a_wrong_closed_form_is_caught(monkeypatch):
    """Power: a 2% error in the risk formula is refuted by the Monte Carlo comparison."""
    original = theory.population_risk
    monkeypatch.setattr(theory, "population_risk", lambda *a, **k: 1.02 * original(*a, **k))
    result = run_claim(unshrunk(claims.closed_form_risk), profile="quick", seed=run_seed(0))
    assert result.status == "refuted"


def test_a_wrong_identity_is_caught(monkeypatch):
    """Power: perturbing ζ's array implementation by 1e-9 breaks the quadrature identities."""
    from attnverify.derivations import codegen, gaussian

    original = gaussian.ErfSquareMean.array_implementation
    monkeypatch.setattr(gaussian.ErfSquareMean, "array_implementation",
                        staticmethod(lambda backend, t, g: original(backend, t, g) * (1 + 1e-9)))
    monkeypatch.setattr(codegen, "_CACHE", {})
    monkeypatch.setattr(claims.IDENTITIES, "_members", {})  # generated again, from the perturbed implementation
    result = run_claim(unshrunk(claims.gaussian_identities), profile="quick", seed=run_seed(0))
    assert result.status == "refuted"


@pytest.mark.thorough
@pytest.mark.parametrize("claim", CLAIMS, ids=[c.name for c in CLAIMS])
def test_claim_comes_out_as_expected_in_the_thorough_profile(claim):
    assert_comes_out_as_expected(claim, "thorough")
