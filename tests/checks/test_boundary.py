"""The boundary of the claim machinery (evidence helpers, runner, statistics, code generator, report)."""

from __future__ import annotations

import pytest
import sympy

from boundary_harness import EntryPoint, Parameter as P, boundary_tests

from attnverify.checks import at_most, claim, close, evaluate, run_claim, st, within_error
from attnverify.derivations.codegen import evaluator
from attnverify.numerics.statistics import Estimate, combine, fit_line, mean_estimate
from attnverify.run.report import build_report
from seeds import seeded

x_, y_ = sympy.symbols("x y")
GENERATED = evaluator(sympy.exp(-x_**2) * y_ + sympy.log(1 + x_**2), [x_, y_])


@claim("boundary.identity", parameters=st.fixed_dictionaries({"x": st.integers(0, 3)}),
       examples={"quick": 2, "thorough": 2})
def identity(params, ctx):
    """x = x."""
    return close(params["x"], params["x"])


def _estimate():
    return Estimate(1.0, 0.1, 100)


CLOSE_SIDE_BAD = (("string", "1.0"), ("none", None), ("dict", {"value": 1.0}), ("object", object()),
                  ("nan_entry", [1.0, float("nan")]), ("inf_entry", [float("inf"), 1.0]),
                  ("bool_array", [True, False]), ("string_array", ["a", "b"]))

ENTRY_POINTS = [
    EntryPoint("checks.close", close, lambda: dict(lhs=1.0, rhs=1.0 + 1e-13, rtol=1e-12, atol=0.0),
               # an array is a valid side (entrywise identity), so wrong_type's list is replaced by extras
               {"lhs": P("real", skip=("wrong_type",), extra=CLOSE_SIDE_BAD),
                "rhs": P("real", skip=("wrong_type",), extra=CLOSE_SIDE_BAD),
                "rtol": P("nonnegative"), "atol": P("nonnegative")}),
    EntryPoint("checks.at_most", at_most, lambda: dict(smaller=1.0, larger=2.0, tolerance=0.1, standard_error=0.01),
               {"smaller": P("real"), "larger": P("real"), "tolerance": P("nonnegative"),
                "standard_error": P("nonnegative", optional=True)}),  # None: a deterministic bound
    EntryPoint("checks.within_error", within_error, lambda: dict(theory=1.0, estimate=_estimate(), z=5.0, bias_budget=0.0),
               {"theory": P("real"), "estimate": P("object"),
                # z is a real ≥ 5: 0 and negatives are below the floor
                "z": P("positive", extra=(("below_five", 4.99),)), "bias_budget": P("nonnegative")}),
    EntryPoint("statistics.Estimate", Estimate, lambda: dict(mean=1.0, standard_error=0.1, samples=10),
               {"mean": P("real"), "standard_error": P("nonnegative"), "samples": P("count")}),
    EntryPoint("statistics.mean_estimate", mean_estimate, lambda: dict(values=[1.0, 2.0, 4.0]),
               {"values": P("array", skip=("wrong_ndim",))}),  # any shape is flattened: draws are draws
    EntryPoint("statistics.combine", combine, lambda: dict(estimates=[_estimate(), Estimate(2.0, 0.2, 50)]),
               {"estimates": P("object")}),
    EntryPoint("statistics.fit_line", fit_line,
               lambda: dict(x=[1.0, 2.0, 3.0, 4.0], y=[2.0, 2.9, 4.1, 5.0], standard_errors=[0.1, 0.1, 0.2, 0.2]),
               {"x": P("array"), "y": P("array", shape_partner=True),
                "standard_errors": P("array", shape_partner=True, optional=True,  # None: an unweighted fit
                                     extra=(("zero_error", [0.1, 0.0, 0.2, 0.2]),))}),
    EntryPoint("checks.run_claim", run_claim,
               lambda: dict(claim=identity, profile="quick", backend="numpy", seed=seeded(1)),
               {"claim": P("object"), "profile": P("choice", choices=("quick", "thorough")),
                "backend": P("backend"), "seed": P("natural")}),
    EntryPoint("checks.evaluate", evaluate,
               lambda: dict(claim=identity, parameters={"x": 1}, monte_carlo_seed=seeded(3), profile="quick",
                            backend="numpy"),
               {"backend": P("backend")}),
    # broadcasting is the point of an evaluator: any number of axes, and empty arrays, are valid
    EntryPoint("codegen.Evaluator", lambda x, y: GENERATED(x, y), lambda: dict(x=[0.5, 1.5, 3.0], y=[2.0, -1.0, 0.0]),
               {"x": P("array", skip=("wrong_ndim", "empty")),
                "y": P("array", skip=("wrong_ndim", "empty"), shape_partner=True)}),
    EntryPoint("codegen.evaluator", lambda backend: evaluator(sympy.sin(x_), [x_], backend)(0.3),
               lambda: dict(backend="numpy"), {"backend": P("backend")}),
]


test_refuses_bad_input, test_valid_input_gives_no_nan = boundary_tests(ENTRY_POINTS)


def test_build_report_refuses_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="profile"):
        build_report(tmp_path, profile="fast")
    with pytest.raises(ValueError, match="seed"):
        build_report(tmp_path, seed=-1)
    with pytest.raises(TypeError, match="backend"):
        build_report(tmp_path, backend=3)
