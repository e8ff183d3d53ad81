"""Tests of numerics/statistics.py: estimates, running moments, pooling."""

import numpy as np
import pytest

from attnverify.numerics.statistics import Estimate, RunningMoments, combine, fit_line, mean_estimate


def test_estimate_keeps_positional_construction_and_new_fields_default():
    e = Estimate(1.0, 0.1, 10)
    assert (e.magnitude, e.identical) == (None, False)
    assert e.as_dict() == {"mean": 1.0, "standard_error": 0.1, "samples": 10, "magnitude": None, "identical": False,
                           "low": None, "high": None, "tail_draws": None, "bounds": None}
    assert Estimate(**e.as_dict()) == e


def test_estimate_refuses_bad_magnitude_and_identical_by_name():
    with pytest.raises(ValueError, match="magnitude"):
        Estimate(1.0, 0.1, 10, magnitude=-1.0)
    with pytest.raises(TypeError, match="identical"):
        Estimate(1.0, 0.1, 10, identical=1)


def test_mean_estimate_records_the_magnitude_of_the_terms_and_identical_draws():
    e = mean_estimate(np.array([-3.0, 3.0, -1.0, 1.0]))
    assert e.mean == 0.0 and e.magnitude == 2.0 and not e.identical
    zeros = mean_estimate(np.zeros(7))
    assert zeros.identical and zeros.standard_error == 0.0 and zeros.magnitude == 0.0


def test_running_moments_equal_one_pass_with_magnitude_and_identical():
    x = np.random.default_rng(3).standard_normal(1001) ** 3
    acc = RunningMoments()
    for chunk in np.array_split(x, 7):
        acc.add(chunk)
    one, batched = mean_estimate(x), acc.estimate()
    assert abs(batched.mean - one.mean) < 1e-14 and abs(batched.standard_error - one.standard_error) < 1e-14
    assert abs(batched.magnitude - one.magnitude) < 1e-14 and not batched.identical
    same = RunningMoments()
    for chunk in np.array_split(np.full(10, 0.25), 3):
        same.add(chunk)
    assert same.estimate().identical and same.estimate().standard_error == 0.0


def test_combine_pools_magnitude_and_identical():
    a, b = mean_estimate(np.full(4, 2.0)), mean_estimate(np.full(6, 2.0))
    pooled = combine([a, b])
    assert pooled.identical and pooled.magnitude == 2.0 and pooled.samples == 10
    assert not combine([a, mean_estimate(np.full(6, 1.0))]).identical
    assert combine([Estimate(1.0, 0.1, 10), a]).magnitude is None


def test_a_line_through_two_points_with_known_errors_has_its_slope_and_error():
    """Given standard errors, two points fix the line and its error, σ_slope = √(σ₁² + σ₂²)/|x₂ − x₁|; without
    them the residual variance needs a third point, and two are refused by name."""
    fit = fit_line([1.0, 3.0], [2.0, 5.0], standard_errors=[0.3, 0.4])
    assert fit.slope == pytest.approx(1.5, abs=1e-14) and fit.intercept == pytest.approx(0.5, abs=1e-14)
    assert fit.slope_standard_error == pytest.approx(0.25, rel=1e-12)
    with pytest.raises(ValueError, match="at least 3 points"):
        fit_line([1.0, 3.0], [2.0, 5.0])


def test_a_line_fits_slope_is_its_weights_on_the_points():
    """slope = Σ c_i y_i with c the fit's slope weights, for the fitted y and for any other y at the same x and
    errors (the slope is linear in y); the weights sum to 0 (a constant shift of y leaves the slope) and Σ c_i x_i
    = 1 (y = x has slope 1), and they stay out of the fit's recorded figures."""
    x, errors = np.array([0.0, 1.0, 2.5, 4.0]), np.array([0.1, 0.3, 0.2, 0.5])
    y, other = np.array([1.0, 2.2, 3.1, 5.3]), np.array([-2.0, 0.5, 0.1, 7.0])
    fit = fit_line(x, y, standard_errors=errors)
    c = np.array(fit.slope_weights)
    assert c @ y == pytest.approx(fit.slope, abs=1e-12)
    assert c @ other == pytest.approx(fit_line(x, other, standard_errors=errors).slope, abs=1e-12)
    assert c.sum() == pytest.approx(0.0, abs=1e-12) and c @ x == pytest.approx(1.0, abs=1e-12)
    assert "slope_weights" not in fit.as_dict()
