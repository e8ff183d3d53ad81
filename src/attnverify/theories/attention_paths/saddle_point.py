"""The saddle point of the attention-path action: the order parameters U_1 (= U), …, U_L, U_a.

Minimises S = E(U_1) + 𝓛(U_a, U_L, …, U_1) (spec §2.1) over positive-definite U_ℓ:

* positive definiteness by construction: U_ℓ = R_ℓ R_ℓᵀ, R_ℓ lower triangular with a
  log-parametrised diagonal;
* U_a profiled out in closed form (∂S/∂U_a = 0, generated from sympy in
  ``attnverify.theories.attention_paths.derivations``); by the envelope theorem ∂S/∂U_L is unchanged;
* analytic gradients (matrix formulas of §2.2, chained to the Cholesky parameters) and exact
  Hessians (:mod:`.second_derivatives`: §2.2 differentiated once more, checked against sympy);
* started at the GP point U_ℓ = σ_a² Π_{k≥ℓ} σ_k² I (§3) or a warm start, trust-region Newton
  (:mod:`attnverify.numerics.trust_region`: the exact subproblem from the Hessian's eigenvalues; at
  round-off, steps judged by the residual of the saddle-point equations);
* converged when max |∂(S/n_max)/∂U_ℓ| ≤ ``tolerance`` (the saddle-point equations themselves), and
  accepted only when the exact Hessian in the order parameters (U_a profiled out) is positive
  definite there (a minimum, as the authors' code tests).
Otherwise :class:`SaddlePointError` says what failed. A temperature so small that T·I is lost in the float64
round-off of the kernel K(U) at the start (T < ε·Tr K(U)) is refused by name before any step, and a trial
point where K(U) + T·I has no Cholesky factor in float64 is rejected as a step to where S is undefined.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from . import derivations as derived
from ...base import arguments, blas
from ...numerics import trust_region
from ...saddle.solve import SaddlePointError  # the one error of every saddle-point solver
from . import second_derivatives
from .energy import energy_for
from .entropy import ActionConfig, entropy, entropy_gradients


@dataclass(frozen=True)
class SaddlePoint:
    """The solution. ``order_parameter`` is U = U_1 (𝓗 × 𝓗); ``order_parameters`` is (U_1, …, U_L);
    ``error_estimate`` bounds max |U_ℓ − U_ℓ*| by the size of one more Newton step;
    ``hessian_eigenvalues`` are those of ∂²(S/n_max)/∂u∂u' over the entries u of the U_ℓ (U_a profiled
    out); ``iterations`` counts trust-region steps and ``newton_steps`` those of them accepted at round-off
    (the objective's change below its rounding, the residual decreasing)."""

    order_parameter: np.ndarray
    order_parameters: tuple[np.ndarray, ...]
    readout_order_parameter: float
    action: float
    energy: float
    entropy: float
    gradient_norm: float
    error_estimate: float
    hessian_eigenvalues: np.ndarray
    converged: bool
    iterations: int
    newton_steps: int
    evaluations: int
    seconds: float
    space: str
    config: ActionConfig
    message: str = ""
    history: list[float] = field(default_factory=list, repr=False)

    @property
    def is_minimum(self) -> bool:
        return bool(self.hessian_eigenvalues.size and self.hessian_eigenvalues.min() > 0)

    @property
    def below_wishart_rank(self) -> bool:
        """n_{ℓ−1} < D_ℓ for some layer: the leading-order theory is then a formal extrapolation
        (a sampled U_ℓ would be rank-deficient; spec §5 quirk 7)."""
        c = self.config
        return any(c.widths[level - 1] < c.dimension(level) for level in range(1, c.depth + 1))


class _Parametrisation:
    """θ ↔ (R_1, …, R_L): lower-triangular entries, diagonal as logs."""

    def __init__(self, config: ActionConfig):
        self.sizes = [config.dimension(level) for level in range(1, config.depth + 1)]
        self.indices = [np.tril_indices(D) for D in self.sizes]
        self.counts = [D * (D + 1) // 2 for D in self.sizes]
        self.size = sum(self.counts)

    def factors(self, theta: np.ndarray) -> list[np.ndarray]:
        out, start = [], 0
        for D, (rows, cols), count in zip(self.sizes, self.indices, self.counts):
            R = np.zeros((D, D))
            R[rows, cols] = theta[start:start + count]
            R[np.diag_indices(D)] = np.exp(np.diag(R))
            out.append(R)
            start += count
        return out

    def theta(self, factors: Sequence[np.ndarray]) -> np.ndarray:
        parts = []
        for R, (rows, cols) in zip(factors, self.indices):
            R = np.array(R, dtype=float)
            R[np.diag_indices(R.shape[0])] = np.log(np.diag(R))
            parts.append(R[rows, cols])
        return np.concatenate(parts)

    def chain(self, factors: Sequence[np.ndarray], gradients: Sequence[np.ndarray]) -> np.ndarray:
        """dS/dθ from the symmetric dS/dU_ℓ: dS/dR = 2 G R (lower part), diagonal × R_ii."""
        parts = []
        for R, G, (rows, cols) in zip(factors, gradients, self.indices):
            dR = 2.0 * G @ R
            dR[np.diag_indices(R.shape[0])] *= np.diag(R)
            parts.append(dR[rows, cols])
        return np.concatenate(parts)


class Action:
    """S(θ)/scale and its gradient for one problem; U_a is profiled out in closed form.

    ``config`` comes from :meth:`ActionConfig.build` and ``energy`` from :func:`energy_for`, both
    checked when they were made; an evaluation (thousands per solve) checks nothing again.
    """

    def __init__(self, config: ActionConfig, energy: Callable[[np.ndarray], tuple[float, np.ndarray]]):
        if not isinstance(config, ActionConfig):
            raise TypeError(f"config must be an ActionConfig (ActionConfig.build), got {type(config).__name__}")
        if not callable(energy):
            raise TypeError(f"energy must be an energy from energy_for, got {type(energy).__name__}")
        self.config, self.energy = config, energy
        self.parametrisation = _Parametrisation(config)
        self.scale = max(config.widths)
        self.evaluations = 0
        self._last = None
        self._last_hessians = None
        L = config.depth
        # the arguments of U_a's closed form other than Tr U_L: fixed, and checked by ActionConfig.build
        self._readout_constants = (config.heads[L - 1], config.widths[L - 1], config.widths[L],
                                   config.variances[L - 1], config.variances[L])

    def readout(self, factors: Sequence[np.ndarray]) -> float:
        """U_a (§2.1) at Tr U_L = |R_L|²_F, which is > 0 as R_L has a positive diagonal: nothing to check."""
        trace = float(np.sum(factors[self.config.depth - 1] ** 2))
        return float(derived.readout_order_parameter(trace, *self._readout_constants, check_arguments=False))

    def parts(self, theta: np.ndarray) -> tuple[float, float, list[np.ndarray], float, list[np.ndarray]]:
        """(E, 𝓛, factors, U_a, [∂S/∂U_ℓ]) at θ (the last θ's are kept: a solver asks for the value, the
        residual and the Hessian at one point)."""
        if self._last is not None and np.array_equal(self._last[0], theta):
            return self._last[1]
        self.evaluations += 1
        factors = self.parametrisation.factors(theta)
        U_a = self.readout(factors)
        E, dE = self.energy(factors[0])
        grads, _ = entropy_gradients(self.config, factors, U_a)
        grads[0] = grads[0] + dE
        parts = (E, entropy(self.config, factors, U_a), factors, U_a, grads)
        self._last = (np.array(theta, dtype=float), parts)
        return parts

    def __call__(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """(S/n_max, its gradient in θ); +inf where θ leaves the float64 range (exp of the log-diagonal
        overflows), which a trust-region or line-search step then rejects."""
        with np.errstate(over="ignore"):
            if not np.all(np.isfinite(np.exp(theta))):
                return np.inf, np.zeros_like(theta)
        try:
            E, H, factors, _, grads = self.parts(theta)
        except np.linalg.LinAlgError:  # K(U) + T·I not positive definite in float64: S is undefined there
            return np.inf, np.zeros_like(theta)
        return (E + H) / self.scale, self.parametrisation.chain(factors, grads) / self.scale

    def gradient_norm(self, theta: np.ndarray) -> float:
        """max_ℓ max |∂(S/n_max)/∂U_ℓ|: the residual of the saddle-point equations."""
        grads = self.parts(theta)[4]
        return float(max(np.max(np.abs(G)) for G in grads) / self.scale)

    def hessian(self, theta: np.ndarray) -> np.ndarray:
        """∂²(S/n_max)/∂θ∂θ, exactly: the profiled order-parameter Hessian chained to the Cholesky
        parameters (:func:`.second_derivatives.cholesky_hessian`)."""
        return self.hessians(theta)[0]

    def hessians(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Hessian in θ, Hessian in the entries of U_ℓ), both of S/n_max with U_a profiled out (the last
        θ's are kept)."""
        if self._last_hessians is not None and np.array_equal(self._last_hessians[0], theta):
            return self._last_hessians[1]
        _, _, factors, U_a, grads = self.parts(theta)
        full = second_derivatives.order_parameter_hessian(self.config, self.energy, factors, U_a)
        profiled = second_derivatives.profiled_hessian(full)
        result = (second_derivatives.cholesky_hessian(profiled, factors, grads) / self.scale, profiled / self.scale)
        self._last_hessians = (np.array(theta, dtype=float), result)
        return result


def gp_start(config: ActionConfig) -> list[np.ndarray]:
    """Cholesky factors of the GP order parameters U_ℓ = σ_a² Π_{k≥ℓ} σ_k² I (spec §3)."""
    U = derived.gp_order_parameters(config.heads, config.variances)
    return [np.linalg.cholesky(np.asarray(U_l, dtype=float)) for U_l in U[:-1]]


def _newton_error_estimate(action: Action, theta: np.ndarray, hessian: np.ndarray, gradient: np.ndarray,
                           order) -> float:
    """max_ℓ max |ΔU_ℓ| of one more Newton step: the a-posteriori error of the order parameters
    (quadratic convergence makes the next step the size of the remaining error, or of the
    round-off noise in the gradient once that dominates)."""
    step = np.linalg.solve(hessian, gradient)
    moved = action.parametrisation.factors(theta - step)
    return float(max(np.max(np.abs(R @ R.T - U)) for R, U in zip(moved, order)))


def solve(
    action: Action,
    *,
    tolerance: float = 1e-9,
    max_iterations: int = 500,
    start: Sequence[np.ndarray] | None = None,
    space: str = "",
    raise_on_failure: bool = True,
    blas_threads: int | None = 1,
) -> SaddlePoint:
    """Minimise ``action`` from the GP point (or ``start`` factors) by a trust-region Newton method on the
    exact Hessian (:func:`attnverify.numerics.trust_region.minimise`); stop when max |∂(S/n)/∂U_ℓ| ≤
    ``tolerance``. The minimum test and the error estimate use the exact Hessian at the solution.
    ``blas_threads``: BLAS threads inside the solve (1: faster at the solver's matrix sizes, see
    :mod:`attnverify.base.blas`; ``None`` keeps the libraries' own setting)."""
    tolerance = arguments.positive("tolerance", tolerance)
    max_iterations = arguments.integer("max_iterations", max_iterations, 1)
    raise_on_failure = arguments.flag("raise_on_failure", raise_on_failure)
    if blas_threads is not None:
        blas_threads = arguments.integer("blas_threads", blas_threads, 1)
    with blas.threads(blas_threads):
        return _solve(action, tolerance, max_iterations, start, space, raise_on_failure)




def _check_temperature(action: Action, theta: np.ndarray) -> None:
    """Refuse a temperature below ε·Tr K(U) at the start where the kernel K(U) is singular in float64 (always in
    the feature space, where N0·𝓗 < P): T·I, which alone makes K(U) + T·I definite, is then lost in the round-off
    of K, and the action is not defined numerically. (A K(U) definite by itself needs no T·I.)"""
    traces = getattr(action.energy, "path_traces", None)  # T_ππ' = Σ_μ C^{μμ}_{ππ'}: Tr K(U) = Σ U_ππ' T_ππ'
    temperature = getattr(action.energy, "temperature", action.config.temperature)
    if traces is None:
        return
    R = action.parametrisation.factors(theta)[0]
    lowest = float(np.finfo(float).eps * abs(np.sum((R @ R.T) * traces)))
    if temperature >= lowest:
        return
    if not hasattr(action.energy, "gram") and hasattr(action.energy, "kernel"):
        if float(action.energy.backend.xp.linalg.eigvalsh(action.energy.kernel(R))[0]) > lowest:
            return
    raise ValueError(f"temperature must be in [{lowest:.3g}, inf) for these path features: the kernel K(U) at the "
                     f"solver's start is singular in float64, and below ε·Tr K(U) the T·I that makes K(U) + T·I "
                     f"definite is lost in its round-off; got {temperature!r}")


def _solve(action: Action, tolerance: float, max_iterations: int, start, space: str,
           raise_on_failure: bool) -> SaddlePoint:
    t0 = time.perf_counter()
    theta = action.parametrisation.theta(start if start is not None else gp_start(action.config))
    _check_temperature(action, theta)
    result = trust_region.minimise(action, action.hessian, action.gradient_norm, theta, tolerance=tolerance,
                                   max_iterations=max_iterations)
    theta, residual, history = result.x, result.residual, result.history
    iterations, polished = result.iterations, result.round_off_steps
    hessian, order_hessian = action.hessians(theta)
    eigenvalues = np.linalg.eigvalsh(order_hessian)
    E, H, factors, U_a, _ = action.parts(theta)
    order = tuple(R @ R.T for R in factors)
    gradient = action(theta)[1]
    error = _newton_error_estimate(action, theta, hessian, gradient, order) if eigenvalues.min() > 0 else np.inf
    converged = residual <= tolerance
    message = (f"max |∂(S/n)/∂U| = {residual:.3g} (tolerance {tolerance:g}) after {iterations} trust-region "
               f"Newton iterations ({polished} judged by the residual at round-off; {result.stopped}); "
               f"smallest Hessian eigenvalue {eigenvalues.min():.3g}; "
               f"estimated error of U {error:.2g}")
    solution = SaddlePoint(
        order_parameter=order[0], order_parameters=order, readout_order_parameter=U_a,
        action=E + H, energy=E, entropy=H, gradient_norm=residual, error_estimate=error,
        hessian_eigenvalues=eigenvalues,
        converged=converged, iterations=iterations, newton_steps=polished, evaluations=action.evaluations,
        seconds=time.perf_counter() - t0, space=space, config=action.config, message=message, history=history,
    )
    if raise_on_failure and not (converged and solution.is_minimum):
        what = "did not converge" if not converged else "is not a minimum (Hessian not positive definite)"
        raise SaddlePointError(f"the saddle point {what}: {message}")
    return solution


def saddle_point(
    C,
    y,
    *,
    heads: Sequence[int],
    width,
    temperature: float,
    prior_var=1.0,
    tolerance: float = 1e-9,
    raise_on_failure: bool = True,
    backend=None,
) -> SaddlePoint:
    """Saddle point from the path-path kernels C (𝓗, 𝓗, P, P), C[π,π',μ,ν] = X^μ_π·X^ν_{π'}.

    heads = (H_1, …, H_L); width = N or (n_0, …, n_L); prior_var = σ² or (σ_1², …, σ_L², σ_a²).
    For large P use :func:`saddle_point_from_features`, which never forms C. C must be symmetric
    (C[π,π',μ,ν] = C[π',π,ν,μ]) and positive semi-definite as a (𝓗P × 𝓗P) matrix, as path-path
    kernels are; heads must be integers ≥ 1.
    """
    config = ActionConfig.build(heads, width, temperature, prior_var)
    if C is None:
        raise TypeError("C must be the path-path kernels, an array of shape (𝓗, 𝓗, P, P), got None")
    energy = energy_for(C=C, y=y, temperature=config.temperature, backend=backend)
    _check_paths(config, energy.paths, "C.shape[0]")
    return solve(Action(config, energy), tolerance=tolerance, space="kernel", raise_on_failure=raise_on_failure)


def saddle_point_from_features(
    X,
    y,
    *,
    heads: Sequence[int],
    width,
    temperature: float,
    prior_var=1.0,
    space: str = "auto",
    tolerance: float = 1e-9,
    raise_on_failure: bool = True,
    start: Sequence[np.ndarray] | None = None,
    backend=None,
) -> SaddlePoint:
    """Saddle point from the path features X (P, N0, 𝓗), without forming C; the P-sized work on ``backend``
    (numpy, or cupy for the device), the trust-region Newton steps over the 𝓗 × 𝓗 order parameters on the host.

    ``space="auto"`` works in the (N0𝓗)-dimensional feature space (Woodbury) when N0·𝓗 < P, so an
    iteration costs O((N0𝓗)³) independently of P, and in the P × P kernel space otherwise.
    ``start``: order parameters (U_1, …, U_L) to start from (a neighbouring solution's
    ``order_parameters``, for sweeps) instead of the GP point; they must be positive definite.
    """
    config = ActionConfig.build(heads, width, temperature, prior_var)
    if X is None:
        raise TypeError("X must be the path features, an array of shape (P, N0, 𝓗), got None")
    energy = energy_for(X=X, y=y, temperature=config.temperature, space=space, backend=backend)
    _check_paths(config, energy.paths, "X.shape[2]")
    chosen = "feature" if type(energy).__name__ == "FeatureSpaceEnergy" else "kernel"
    factors = None if start is None else _start_factors(start, config)
    return solve(Action(config, energy), tolerance=tolerance, space=chosen, raise_on_failure=raise_on_failure,
                 start=factors)


def _start_factors(start, config: ActionConfig) -> list[np.ndarray]:
    """Lower Cholesky factors of the starting order parameters (U_1, …, U_L), each checked by name."""
    shapes = [(config.dimension(level),) * 2 for level in range(1, config.depth + 1)]
    if isinstance(start, (str, bytes)) or not isinstance(start, (Sequence, np.ndarray)) or len(start) != len(shapes):
        raise ValueError(f"start must hold L = {config.depth} order parameters (U_1, …, U_L) of shapes {shapes} "
                         f"for heads = {config.heads}, got {start!r}"[:300])
    factors = []
    for level, (U, shape) in enumerate(zip(start, shapes)):
        U = arguments.array(f"start[{level}]", U, shape=shape)
        factors.append(np.tril(arguments.positive_definite_factor(f"start[{level}]", U)[0]))
    return factors


def _check_paths(config: ActionConfig, paths: int, where: str) -> None:
    if paths != config.paths:
        raise ValueError(f"{where} = {paths} paths, but heads = {config.heads} give 𝓗 = {config.paths}")
