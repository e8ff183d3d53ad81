"""Derivations export named results: code reads result("name"), never "the last step"."""

import pytest
import sympy

from attnverify.theories.attention_paths import derivations as attention_paths
from attnverify.theories.conditional_mean import derivations as conditional_mean
from attnverify.theories.single_location import derivations as single_location
from attnverify.derivations.derivation import DerivationRecorder

x = sympy.Symbol("x")


def test_a_display_step_after_the_result_does_not_change_it():
    rec = DerivationRecorder("demo.d", "Demo", "nowhere")
    rec.step("Square", sympy.Eq(sympy.Symbol("y"), x**2), name="y")
    rec.step("A step for the reader only", sympy.Eq(sympy.Symbol("y"), x * x))
    derivation = rec.finish()
    assert derivation.result("y").rhs == x**2 and derivation.results == {"y": sympy.Eq(sympy.Symbol("y"), x**2)}
    with pytest.raises(KeyError, match="no result named 'z'; its results are \\['y'\\]"):
        derivation.result("z")


def test_result_names_are_unique_and_non_empty():
    rec = DerivationRecorder("demo.d", "Demo", "nowhere")
    rec.step("one", x, name="a")
    with pytest.raises(ValueError, match="already has a result named 'a'"):
        rec.step("two", x, name="a")
    with pytest.raises(ValueError, match="non-empty string"):
        rec.step("three", x, name="")


@pytest.mark.parametrize("derivation, name", [
    (single_location.population_risk_derivation, "risk"), (single_location.oracle_risk_derivation, "oracle_risk"),
    (single_location.linear_risk_derivation, "linear_risk"), (attention_paths.readout_derivation, "U_a"),
    (conditional_mean.ratio_expansion_derivation, "constants"),
    (conditional_mean.gaussian_limit_derivation, "constants"),
    (conditional_mean.fixed_bandwidth_derivation, "constants"),
])
def test_the_builtin_derivations_export_what_the_code_uses(derivation, name):
    assert name in derivation().results
