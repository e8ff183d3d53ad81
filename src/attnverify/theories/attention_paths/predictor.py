"""Predictor statistics of the Bayesian attention network at an order parameter U (spec §2.3): the generic ones of
:mod:`attnverify.numerics.kernel_predictor` (any kernel linear in U shares them), under this theory's names."""

from ...numerics.kernel_predictor import PredictorStatistics, factor, predictor_statistics  # noqa: F401
