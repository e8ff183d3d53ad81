"""The paper's figure-2 experiments as functions: GP reference lines and sweeps over the width N.

Shared by the claims and the report, so that both state the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ...numerics.statistics import Estimate, mean_estimate
from ...numerics.kernel_predictor import predictor_statistics
from ...saddle import posterior_mean, sweep as saddle_sweep
from .action import ActionConfig, solve_paths

#: The authors' 4-path Markov features, shipped as package data (provenance and arrays: data/README.md).
AUTHORS_MARKOV_FILE = "markov_4paths_authors.npz"
AUTHORS_MARKOV_PATH = Path(__file__).resolve().parent / "data" / AUTHORS_MARKOV_FILE


def authors_markov_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """(X, y, X_test, y_test) of the authors' 4-path network (T = 0.01 in the paper), or None where an
    installation left out the package data."""
    path = AUTHORS_MARKOV_PATH
    if not path.is_file():
        return None
    with np.load(path) as data:
        return data["Xa"], data["y"], data["Xta"], data["yt"]


def subnetwork_features(X: np.ndarray, paths: Sequence[int]) -> np.ndarray:
    """Features of the network made of ``paths`` only: X_π = sqrt(σ0²/(N0 𝓗')) ξ^π, so the columns of
    the full network's X (normalised by 𝓗) are rescaled by sqrt(𝓗/𝓗')."""
    paths = list(paths)
    if not paths or min(paths) < 0 or max(paths) >= X.shape[2]:
        raise ValueError(f"paths must index the {X.shape[2]} paths of X, got {paths}")
    return X[:, :, paths] * np.sqrt(X.shape[2] / len(paths))


@dataclass(frozen=True)
class TheoryPoint:
    """Test statistics of the mean predictor at one width (or in the GP limit, width = inf)."""

    width: float
    accuracy: Estimate
    generalisation_error: Estimate
    correct: np.ndarray
    order_parameter: np.ndarray
    seconds: float = 0.0
    predictor_mean: np.ndarray | None = None  # ⟨f(x)⟩ at each test point: the margin whose sign ``correct`` scores


def evaluate(U, X, y, X_test, y_test, temperature: float, width: float = np.inf, seconds: float = 0.0, *,
             backend=None) -> TheoryPoint:
    """The test statistics of the mean predictor at U (computed on ``backend``; host arrays out)."""
    stats = predictor_statistics(U, X, y, X_test, temperature, backend=backend)
    correct = (np.sign(stats.mean) == np.sign(y_test)).astype(float)
    return TheoryPoint(width, mean_estimate(correct), stats.generalisation_error(y_test), correct,
                       np.asarray(U, dtype=float), seconds, np.asarray(stats.mean, dtype=float))


def gp_point(X, y, X_test, y_test, temperature: float, prior_scale: float = 1.0, *, backend=None) -> TheoryPoint:
    """The GP limit: U = σ_a² Π σ_ℓ² I (spec §3)."""
    return evaluate(prior_scale * np.eye(X.shape[2]), X, y, X_test, y_test, temperature, backend=backend)


def width_sweep(X, y, X_test, y_test, *, heads: Sequence[int], widths: Sequence[float], temperature: float,
                progress: Callable[[str], None] | None = None, backend=None) -> list[TheoryPoint]:
    """The finite-width theory at each N (equal widths, unit prior variances), in the order given, solved
    by continuation from the widest (`attnverify.saddle.sweep`), its P-sized work on ``backend``."""
    config = ActionConfig.build(heads, 1.0, temperature)
    sweep = saddle_sweep(config.action, dict(X=X, y=y), widths=widths, temperatures=[temperature], backend=backend,
                         **config.parameters())
    points = []
    for N in widths:
        solution = sweep.at(N, temperature)
        points.append(evaluate(solution.matrix("U1"), X, y, X_test, y_test, temperature, N, solution.seconds,
                               backend=backend))
        if progress:
            progress(f"N = {N:g}: accuracy {points[-1].accuracy.mean:.3f} ({solution.seconds:.1f} s)")
    return points


def paired_difference(a: TheoryPoint, b: TheoryPoint) -> Estimate:
    """Accuracy of a minus accuracy of b on the same test inputs, with the paired standard error."""
    return mean_estimate(a.correct - b.correct)


def wishart_shifted_widths(heads: Sequence[int], width: int) -> tuple[int, ...]:
    """Widths n_{ℓ−1} − D_ℓ − 1 (ℓ = 1..L+1, D_{L+1} = 1 for U_a): the degrees of freedom of the exact
    Wishart density of U_ℓ given U_{ℓ+1}, whose log-det coefficient is (n − D − 1)/2 where the large-N
    entropy keeps n/2. Solving the theory at these widths moves U by the size of the first neglected
    O(1/N) term; the comparison with sampled networks uses that move as its finite-size budget."""
    dims = [int(np.prod(heads[level:])) for level in range(len(heads))] + [1]
    shifted = tuple(int(width) - d - 1 for d in dims)
    if min(n - d for n, d in zip(shifted, dims)) < 0:
        raise ValueError(f"width {width} is too small for a Wishart shift with heads {tuple(heads)}")
    return shifted


@dataclass(frozen=True)
class SampledPoint:
    """Sampled finite-width networks at one width: Û ± MCSE, accuracy ± MCSE, and the sampler's diagnostics,
    next to the theory at that width (its saddle point, and the action's next-order posterior mean of U_1 with its
    stated error) and at the Wishart-shifted widths (the accuracy's O(1/N) budget)."""

    width: int
    order_parameter: np.ndarray
    order_parameter_mcse: np.ndarray
    accuracy: Estimate
    diagnostics: dict
    converged: bool
    theory: TheoryPoint
    theory_shifted: TheoryPoint
    #: per entry, the multiple of the MCSE within which all entries of U lie together with probability ≥ 1 − 10⁻³
    #: (``ChainSummary.mcse_z``: Bonferroni over the entries, Student's t for an estimated MCSE; at least 5)
    order_parameter_z: np.ndarray | None = None
    #: the fraction of test points whose sign neither side resolves: the theory's margin |⟨f(x)⟩| within z MCSE
    #: of the sampled mean (z: Bonferroni over the test points) plus the predictor's move under the Wishart shift
    accuracy_resolution: float = 0.0
    #: the action's own posterior mean E[U_1] at this width (the next order of the Laplace expansion around the saddle
    #: point, `attnverify.saddle.posterior_mean`) and that prediction's stated error, per entry
    prediction: np.ndarray | None = None
    prediction_error: np.ndarray | None = None

    @property
    def mcse_multiple(self) -> np.ndarray:
        """The z multiplying the MCSE in the comparison with the theory (5 where no per-entry z was stored)."""
        return np.full(np.shape(self.order_parameter), 5.0) if self.order_parameter_z is None \
            else np.asarray(self.order_parameter_z, dtype=float)

    @property
    def wishart_shift(self) -> np.ndarray:
        """|U(n) − U(n − D − 1)|: how far the theory moves under the exact Wishart degrees of freedom."""
        return np.abs(self.theory.order_parameter - self.theory_shifted.order_parameter)

    @property
    def allowance(self) -> np.ndarray:
        """Per entry of U, z·MCSE + the next order's stated error: how far the networks' U may lie from the next
        order (``attention_paths.sampled_networks_match_theory``)."""
        return self.mcse_multiple * self.order_parameter_mcse + self.prediction_error

    def gap_over_allowance(self, U: np.ndarray) -> float:
        """max over the entries of |Û − U| / `allowance`: the networks' distance from U (the next order, or
        the saddle point beside it) in units of the claim's allowance."""
        return float(np.max(np.abs(self.order_parameter - U) / self.allowance))

    @property
    def accuracy_budget(self) -> float:
        """The accuracy's move under the Wishart shift, plus the fraction of test points whose sign is unresolved
        (`accuracy_resolution`): each may flip without contradicting the theory."""
        return abs(self.theory.accuracy.mean - self.theory_shifted.accuracy.mean) + self.accuracy_resolution


def sampled_point(X, y, X_test, y_test, *, heads: Sequence[int], width: int, temperature: float, seed: int,
                  settings, progress: Callable[[str], None] | None = None, backend=None) -> SampledPoint:
    """Sample the posterior at ``width`` (collapsed HMC) and solve the theory at the same data, both on
    ``backend`` (host data in, host statistics out)."""
    from .posterior import network_posterior
    from .sampling import sample_posterior

    posterior = network_posterior(X, y, heads=heads, width=width, temperature=temperature, backend=backend)
    samples = sample_posterior(posterior, seed=seed, settings=settings, X_test=X_test, progress=progress)
    U = samples.order_parameter_summary()
    predictor = samples.predictor_summary()
    theory = width_sweep(X, y, X_test, y_test, heads=heads, widths=[width], temperature=temperature,
                         backend=backend)[0]
    shifted = solve_paths(dict(X=X, y=y), heads=heads, width=wishart_shifted_widths(heads, width),
                          temperature=temperature, backend=backend)
    theory_shifted = evaluate(shifted.matrix("U1"), X, y, X_test, y_test, temperature, width, backend=backend)
    config = ActionConfig.build(heads, width, temperature)
    prediction = posterior_mean(config.action, dict(X=X, y=y), temperature=config.temperature, backend=backend,
                                **config.parameters())
    # Each summary's own gate (ChainSummary.converged): R-hat within its limit for the maximum over U's entries (false
    # alarm ≤ 10⁻³; nested R-hat over the superchains where many short chains ran) and bulk and tail ESS ≥ 400 each.
    # The predictor has one R-hat per test point (1000 here), gated the same way for the maximum over its points
    # (ChainSummary.rhat_converged); its ESS is not gated, as its MCSE enters only through the accuracy's. The
    # MCSE and its z (Bonferroni over the entries) are the summary's: with superchains, the superchain means'
    # standard error and Student's t with K − 1 degrees of freedom (ChainSummary.mcse_z).
    converged = U.converged and predictor.rhat_converged()
    # The accuracy counts signs: a test point whose theory margin lies inside the sampler's z·MCSE (or inside the
    # predictor's O(1/N) move) can take either sign in the samples without contradicting the theory.
    margin, moved = theory.predictor_mean, theory_shifted.predictor_mean
    unresolved = np.abs(margin) <= predictor.mcse_z() * np.asarray(predictor.mcse) + np.abs(margin - moved)
    return SampledPoint(int(width), U.mean, U.mcse, samples.accuracy(y_test), samples.diagnostics(),
                        converged, theory, theory_shifted, order_parameter_z=U.mcse_z(),
                        accuracy_resolution=float(np.mean(unresolved)),
                        prediction=np.atleast_2d(prediction.mean["U1"]),
                        prediction_error=np.abs(np.atleast_2d(prediction.error["U1"])))
