"""Single-location regression (Marion, Berthier, Biau, Boyer, ICLR 2025): the whole theory in one package.

theory (the concise Theory object every part below registers on, as in a user's file), derivations (sympy:
the risk in the five overlaps, its gradient, the oracle and linear risks, checked steps),
task (data), predictors (Monte Carlo, oracle and Bayes risks), overlaps, dynamics (PGD, SGD), experiments (what
the claims and the section share), claims, section (the report section, drawing only). The names below are the
package's numerics, importable from here.

Model (spec ``single_location.md`` §1): J0 ~ Uniform{1..L}; X_{J0} ~ N(√(d/2)·k*, γ²I_d); X_ℓ ~ N(0, I_d)
for ℓ ≠ J0; Y = ⟨X_{J0}, v*⟩ + ε·ξ with ξ ~ N(0, 1); k*, v* orthonormal. Names as in the paper:
``k_star`` (k*), ``v_star`` (v*), ``gamma`` (γ), ``eps`` (ε), ``lam`` (λ, inverse temperature of the erf),
``d`` (token dimension), ``L`` (sequence length).

Every risk here is the full mean squared error E[(Y − f(X))²], ε² included (the authors' code logs the
excess ℛ − ε²; subtract it yourself). All arrays are float64 on the chosen backend (numpy or cupy);
randomness enters only through an explicit seed or Generator.

Exact dimension reduction (spec §6): a predictor that reads X only through ⟨X_ℓ, u⟩ for u in a set U
sees the tokens only through their coordinates on an orthonormal basis Q (d×r) of span{k*, v*, U}.
Those coordinates are N(0, I_r) for the noise tokens and N(√(d/2)·Qᵀk*, γ²I_r) for the informative one,
and the part of each token orthogonal to the span has squared norm χ²_{d−r} (noise) or γ²·χ²_{d−r}
(informative), independent of the coordinates. Monte Carlo risks use this, so their cost does not grow
with d.

The simulations live in submodules by job: `.task`, `.predictors`, `.overlaps` and
`.dynamics` (argument checks and random draws they share: `._common`); their public names are
importable from here.
"""

from .task import ReducedSample, RegressionTask, make_task, sample, sample_reduced
from .predictors import (bayes_posterior, bayes_predict, bayes_risk_monte_carlo, linear_fit_least_squares,
                         linear_oracle_coefficients, linear_predict, linear_risk_monte_carlo, predict, risk_monte_carlo,
                         risk_monte_carlo_full)
from .overlaps import overlap_gradient_to_vectors, overlaps, reduce_to_four_dimensions
from .dynamics import (Trajectory, empirical_risk, empirical_risk_gradient, initialize_on_manifold,
                       initialize_on_sphere, lambda_schedule, population_gradient,
                       population_projected_gradient_descent, projected_gradient_descent, stochastic_gradient_descent)

__all__ = [
    "RegressionTask",
    "make_task",
    "sample",
    "ReducedSample",
    "sample_reduced",
    "predict",
    "risk_monte_carlo",
    "risk_monte_carlo_full",
    "bayes_posterior",
    "bayes_predict",
    "bayes_risk_monte_carlo",
    "linear_fit_least_squares",
    "linear_predict",
    "linear_risk_monte_carlo",
    "linear_oracle_coefficients",
    "overlaps",
    "overlap_gradient_to_vectors",
    "reduce_to_four_dimensions",
    "lambda_schedule",
    "Trajectory",
    "projected_gradient_descent",
    "initialize_on_sphere",
    "initialize_on_manifold",
    "empirical_risk",
    "empirical_risk_gradient",
    "stochastic_gradient_descent",
    "population_gradient",
    "population_projected_gradient_descent",
]
