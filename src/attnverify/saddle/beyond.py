"""The posterior mean of a declared action's order parameters under e^{−S} dμ, beyond its saddle point.

    E[u] = ∫ u e^{−S(u)} dμ(u) / ∫ e^{−S(u)} dμ(u),   S = ½ ln det(K(u) + T·I) + ½ Yᵀ(K(u) + T·I)⁻¹Y + 𝓛(u),

with dμ = e^{m(u)} du the measure the declaration states (`measure`; the Wishart's by
default). Three ways, each with its error:

* ``"quadrature"`` (at most three positive scalars): the integral itself, in θ = ln q (dq = q dθ), on an
  axis-aligned tensor grid centred at the saddle θ* and scaled by the marginal widths √(H_θ⁻¹)_ii of the saddle's
  Hessian, out to where e^{−(S−S*)} < 1e-300 of its peak; composite Gauss–Legendre with the project's two rules
  (`attnverify.derivations.gaussian.panels`), the error their difference plus the float64 rounding of S.
* ``"hmc"`` (any declaration): the integral sampled, by the project's HMC
  (`run_sampler`) on θ, the solver's log-Cholesky coordinates (U = RRᵀ, ln R_ii; ln q for a scalar), whitened by the
  saddle's Hessian in θ, with the potential S(u(θ)) − m(u(θ)) − ln|∂u/∂θ| (for a d × d matrix
  ln|∂u/∂θ| = d ln 2 + Σ_i (d − i + 2) θ_ii, Muirhead, Aspects of Multivariate Statistical Theory, Thm 2.1.9, times
  ∂R_ii/∂θ_ii = R_ii; θ for a scalar), step sizes adapted to acceptance 0.9; its error z·MCSE of the sampled mean (z ≥ 5, Student's t with Bonferroni
  over the entries), and only where the chains pass the R̂/ESS gate (else a
  [`SaddlePointError`][attnverify.saddle.SaddlePointError] saying so).
* ``"laplace"`` (any declaration): the next order of the Laplace expansion around the saddle u*, in the entries u
  (the coordinates the mean is asked of, the measure is declared in and sympy differentiates the entropy in; the
  O(1/N) term is the same in any smooth coordinates, so the log-Cholesky θ of the solver would give the same value),

      E[u] − u* = H⁻¹ (∇m − ½ F : H⁻¹) + O(1/N²),   H = ∂²S/∂u∂u',  F = ∂³S/∂u∂u'∂u'',  (F : H⁻¹)_i = F_ijk H⁻¹_jk

  (the standard expansion: e^{−S+m} ≈ e^{−½xᵀHx}(1 + ∇m·x − F x³/6), and Isserlis' E₀[x_i x_j x_k x_l]; e.g. Tierney,
  Kass & Kadane 1989), with F exact (`term` for 𝓛, ``entry_third_derivative`` of
  `kernel_energy` for the energy). Its error, the O(1/N²) term, is estimated by the
  expansion's own scaling: that term is the O(1/N) one times the expansion parameter ε = max_k Var(u_k)/s_k² (the
  leading variance H⁻¹ in units of each entry's scale s_k: q for a scalar, √(U_ii U_jj) for U_ij; 2/N for a χ²).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..base import arguments, blas
from ..numerics.symmetric import entry_gradient, triangle
from ..derivations.gaussian.panels import BULK_CUTS, RULES, composite_rule
from .action import NumericAction, Parametrisation
from .declaration import SaddlePointAction
from .term import entry_slices
from .solve import Solution, data_energy, given_temperature, solve_energy
from .term import Term

METHODS = ("auto", "quadrature", "laplace", "hmc")

CUTOFF = math.log(1e300)
"""The grid reaches where e^{−(S − S*)} < 1e-300 of its peak: S − S* > ln 10³⁰⁰ ≈ 690.8 on every face."""

TOLERANCE = 1e-10
"""The two rules must agree to this relative accuracy on every mean and variance, else every panel is halved (while
the finer rule stays within `POINTS` and `KERNEL_NODES`)."""

POINTS = 3e7
"""The most grid points the finer rule may use (a 3-D grid of 300 nodes per axis)."""

KERNEL_NODES = 2**14
"""The most nodes the finer rule may put on the kernel order parameter's axis: each is an energy evaluation (a
Cholesky factorisation of the P × P kernel), the quadrature's dearest work."""

CHUNK = 1e6
"""Grid points evaluated at once (the first axis is taken in slices of about this many)."""


NEGLIGIBLE = 1e-18
"""Nodes of a kernel marginal carrying less than this share of the mass are not evaluated by
[`Prediction.kernel_average`][attnverify.saddle.beyond.Prediction.kernel_average]; what they leave out enters its error
as their mass times the largest |g| met."""


@dataclass(frozen=True)
class KernelMarginal:
    """One quadrature rule's marginal over the kernel order parameter q: its nodes and their weights (summing to 1)
    under e^{−S} dμ, the other order parameters integrated out."""

    nodes: np.ndarray
    weights: np.ndarray

    def average(self, g) -> tuple[np.ndarray, float]:
        """(Σ_k w_k g(q_k) over the nodes carrying at least `NEGLIGIBLE` of the mass, the mass left out)."""
        kept = self.weights >= NEGLIGIBLE
        values = np.array([np.asarray(g(float(q)), dtype=float) for q in self.nodes[kept]])
        return np.tensordot(self.weights[kept], values, axes=1), float(self.weights[~kept].sum())


@dataclass(frozen=True)
class Prediction:
    r"""The action's own prediction for the order parameters at finite $N$: ``mean`` $\mathbb{E}[u]$ (name → a float,
    or a matrix), its ``error`` (same shapes, per entry: the quadrature's numerical error, the two rules'
    difference; the Laplace expansion's estimated $O(1/N^2)$ term plus the saddle's error, an estimate, not a bound;
    HMC's $z \ge 5$ Monte Carlo standard errors), ``variance`` (per entry: $\operatorname{Var}(U_{ij})$; exact
    for the quadrature, the leading $H^{-1}$ for the Laplace expansion), the ``saddle`` values beside them, the
    ``method`` used ("quadrature", "laplace" or "hmc"), the ``measure`` (name → its log-density $m(u)$) and ``notes``
    on how."""

    saddle: dict
    mean: dict
    error: dict
    variance: dict
    method: str
    measure: dict
    notes: str
    solution: Solution = field(repr=False, default=None)
    kernel_marginals: tuple = field(repr=False, default=None)
    rounding: float = field(repr=False, default=0.0)

    def __getitem__(self, name: str):
        return self.mean[name]

    def kernel_average(self, g) -> tuple[np.ndarray, np.ndarray]:
        r"""($\mathbb{E}[g(q)]$, its error) under $e^{-S}\,d\mu$ for a function ``g`` of the kernel order parameter $q$
        alone (a float → a number or an array, e.g. the generalisation error at $K(q)$), by the quadrature's two rules
        (``"quadrature"`` only): the finer rule's value, and its error the two rules' difference, the relative rounding
        of the weights and the mass left out (`NEGLIGIBLE`) times the largest $\lvert g\rvert$."""
        if self.kernel_marginals is None:
            raise ValueError(f"kernel_average needs the quadrature's marginals (method 'quadrature'), this prediction's "
                             f"method is {self.method!r}")
        (coarse, left_coarse), (fine, left_fine) = (m.average(g) for m in self.kernel_marginals)
        largest = float(np.max(np.abs(fine))) if np.size(fine) else 0.0
        error = np.abs(fine - coarse) + self.rounding * np.abs(fine) + max(left_coarse, left_fine) * largest
        return fine, error


@functools.lru_cache(maxsize=16)
def _terms(declaration: SaddlePointAction) -> tuple[Term, Term]:
    """The entropy (the declaration's own generated term) and the measure's log-density as a generated term (per
    declaration, once)."""
    measure = sum(declaration.measure.values())
    return declaration.entropy_term, Term(measure, declaration.order_parameters, (), what="the measure's log-density")


def posterior_mean(declaration: SaddlePointAction, data: Mapping[str, Any], *, temperature: float | None = None,
                   method: str = "auto", saddle: Solution | None = None, space: str = "auto", backend=None,
                   seed: int = 0, sampler: Mapping[str, int] | None = None, **parameters) -> Prediction:
    r"""$\mathbb{E}[u]$ under $e^{-S}\,d\mu$ for ``data`` (as [`solve`][attnverify.saddle.solve]: kernels ``C`` or
    features ``X``, labels ``y``) at ``temperature`` and the parameter values given by name: by ``"quadrature"`` (at
    most three positive scalar order parameters), by ``"laplace"`` (the next order around the saddle point, any
    declaration), by ``"hmc"`` (sampled, any declaration: ``seed`` and ``sampler``, a dict of chains, warmup and draws,
    default `HMC_SIZE`), or ``"auto"`` (the quadrature where it applies, else the next order). ``saddle``: the
    [`Solution`][attnverify.saddle.Solution] at these values if already solved (else solved here). The module
    docstring gives the methods and their errors."""
    if not isinstance(declaration, SaddlePointAction):
        raise TypeError(f"declaration must be a SaddlePointAction, got {type(declaration).__name__}")
    method = arguments.one_of("method", method, METHODS)
    seed = arguments.integer("seed", seed, 0)
    sampler = _sampler_size(sampler)
    temperature = given_temperature(temperature, parameters)
    values = declaration.parameter_values(parameters)
    scalars = all(op.size == 0 for op in declaration.order_parameters)
    if method == "quadrature" and not (scalars and declaration.size <= 3):
        raise ValueError(f"method must be 'laplace', 'hmc' or 'auto' for this declaration: the quadrature takes at "
                         f"most three positive scalar order parameters, got {declaration!r}"[:300])
    if method == "auto":
        method = "quadrature" if scalars and declaration.size <= 3 else "laplace"
    energy = data_energy(data, temperature, space=space, backend=backend)
    solution = _saddle(declaration, energy, values, temperature, saddle)
    with blas.threads(1):
        marginals, rounding = None, 0.0
        if method == "quadrature":
            mean, error, variance, notes, marginals, rounding = _quadrature(declaration, energy, values, solution)
        elif method == "hmc":
            mean, error, variance, notes = _hmc(declaration, energy, values, solution, seed, sampler)
        else:
            mean, error, variance, notes = _laplace(declaration, energy, values, solution)
    measure = {name: str(term) for name, term in declaration.measure.items()}
    return Prediction(saddle=declaration.split(solution.entries), mean=declaration.split(mean),
                      error=declaration.split(np.asarray(error, dtype=float)),
                      variance=declaration.split(np.asarray(variance, dtype=float)),
                      method=method, measure=measure, notes=notes, solution=solution, kernel_marginals=marginals,
                      rounding=rounding)


def _saddle(declaration, energy, values, temperature, saddle) -> Solution:
    """The saddle point at these values: ``saddle`` checked against them, or solved."""
    if saddle is None:
        return solve_energy(declaration, energy, values, temperature=temperature)
    if not isinstance(saddle, Solution):
        raise TypeError(f"saddle must be a Solution (from solve) or None, got {type(saddle).__name__}")
    given = dict(zip(declaration.parameter_names, values))
    if saddle.temperature != temperature or saddle.parameters != given or not (saddle.converged and
                                                                                saddle.is_minimum):
        raise ValueError(f"saddle must be the converged minimum at these values (temperature {temperature:g}, "
                         f"{given}), got one at temperature {saddle.temperature} and {saddle.parameters}")
    return saddle


def _scales(declaration: SaddlePointAction, u: np.ndarray) -> np.ndarray:
    """Each entry's scale: q for a scalar, √(U_ii U_jj) for U_ij (the size its shift and variance are read in)."""
    out, start = [], 0
    for op in declaration.order_parameters:
        if op.size == 0:
            out.append(abs(u[start:start + 1]))
        else:
            diagonal = np.diag(op.value(u[start:start + op.count]))
            rows, cols = triangle(op.size)
            out.append(np.sqrt(diagonal[rows] * diagonal[cols]))
        start += op.count
    return np.concatenate(out)


# ----------------------------------------------------------------------------------------------- the next order


def leading_covariance(H: np.ndarray) -> np.ndarray:
    """H⁻¹, the leading covariance of the entries, by Cholesky solves (H, the Hessian of S at a minimum, is
    positive definite), symmetrised."""
    from scipy.linalg import cho_factor, cho_solve

    covariance = cho_solve(cho_factor(H, lower=True), np.eye(H.shape[0]))
    return 0.5 * (covariance + covariance.T)


def laplace_shift(covariance: np.ndarray, F: np.ndarray, measure_gradient: np.ndarray) -> np.ndarray:
    """E[u] − u* = H⁻¹(∇m − ½ F : H⁻¹) to O(1/N) (module docstring), from the leading covariance H⁻¹
    (`leading_covariance`), the third derivatives F of S over the entries at the saddle and the measure's
    gradient ∇m there."""
    return covariance @ (measure_gradient - 0.5 * np.einsum("ijk,jk->i", F, covariance))


def action_derivatives(declaration: SaddlePointAction, energy, values: tuple, u: np.ndarray):
    """(H, F, ∇m) at the entries u: ∂²S/∂u∂u' (the engine's exact Hessian), ∂³S/∂u∂u'∂u'' (the entropy's by
    `Term`, plus ½ the energy's over the kernel's entries) and the measure's
    gradient."""
    entropy, measure = _terms(declaration)
    action = NumericAction(declaration, energy, values)
    theta = action.parametrisation.theta(u)
    H = action.entries_hessian(theta) * action.scale
    F = entropy.third(u, values)
    kernel = action.kernel_part
    F[kernel, kernel, kernel] += 0.5 * energy.entry_third_derivative(action.kernel_factor(u))
    _, gradient = measure.value_and_gradient(u)
    return 0.5 * (H + H.T), F, gradient


def _laplace(declaration, energy, values, solution):
    u = np.asarray(solution.entries, dtype=float)
    H, F, gradient = action_derivatives(declaration, energy, values, u)
    covariance = leading_covariance(H)
    shift = laplace_shift(covariance, F, gradient)
    scales = _scales(declaration, u)
    epsilon = float(np.max(np.diag(covariance) / scales ** 2))
    # the O(1/N²) term by the expansion's scaling: ε times the O(1/N) term, taken at the largest relative shift
    # over the entries so that one entry's shift crossing zero does not make its estimate vanish
    error = epsilon * scales * float(np.max(np.abs(shift) / scales)) + solution.error_estimate
    notes = (f"next order of the Laplace expansion in the entries u: E[u] − u* = H⁻¹(∇m − ½F:H⁻¹), F exact; error: "
             f"the O(1/N²) term's size, ε·s_k·max_j |shift_j|/s_j with the expansion parameter ε = max_j "
             f"Var(u_j)/s_j² = {epsilon:.3g} and s_j each entry's scale, plus the saddle's own error "
             f"{solution.error_estimate:.2g}; variance: the leading H⁻¹")
    return u + shift, error, np.diag(covariance), notes


# ------------------------------------------------------------------------------------------------ HMC on the action

HMC_SIZE = {"chains": 8, "warmup": 500, "draws": 1000}
"""The sampler's default size for ``method="hmc"``: chains, warm-up and kept draws per chain."""

HMC_TARGET_ACCEPTANCE = 0.9
"""The acceptance the step sizes are adapted to for ``method="hmc"``. At 0.8 (dual averaging's usual target) a chain
on the attention-path action (heads (2, 2), N = 8, T = 0.01) now and then settles on a step too long for the tail of
the log-Cholesky coordinates: 22 divergences, acceptance 0.65, lag-10 autocorrelation 0.3, and the R̂/ESS gate refuses
the run (1 sampler seed in 8 at the default size); at 0.9 every one of 23 seeds passed, at the same cost."""


def _sampler_size(sampler) -> dict:
    """The sampler's size: `HMC_SIZE` with the given entries replaced, each a whole number (chains ≥ 2)."""
    if sampler is None:
        return dict(HMC_SIZE)
    if not isinstance(sampler, Mapping) or set(sampler) - set(HMC_SIZE):
        raise ValueError(f"sampler must be a dict with some of {', '.join(HMC_SIZE)}, got {sampler!r}"[:200])
    size = {**HMC_SIZE, **sampler}
    return {"chains": arguments.integer("sampler['chains']", size["chains"], 2),
            "warmup": arguments.integer("sampler['warmup']", size["warmup"], 1),
            "draws": arguments.integer("sampler['draws']", size["draws"], 4)}


def log_jacobian_weights(declaration: SaddlePointAction) -> np.ndarray:
    """w with ln|∂u/∂θ| = w·θ + const over the solver's θ (module docstring): 1 for a scalar's ln q; d − r + 1 for
    the diagonal entry ln R_rr (r from 0) of a d × d factor, 0 off the diagonal."""
    weights = []
    for op in declaration.order_parameters:
        if op.size == 0:
            weights.append(np.ones(1))
            continue
        rows, cols = triangle(op.size, upper=False)
        weights.append(np.where(rows == cols, op.size - rows + 1.0, 0.0))
    return np.concatenate(weights)


def potential_each(declaration: SaddlePointAction, energy, values: tuple):
    """``potential(θ) -> (Φ (C,), ∂Φ/∂θ (C, n))`` for a batch of the solver's θ (C, n), every chain at once:
    Φ = S(u(θ)) − m(u(θ)) − ln|∂u/∂θ| (module docstring), from the entries and factors of θ, the entropy's and the
    measure's generated terms with their atoms, the energy's batched factorisation and the chain rule to θ, each as the
    action's own call gives it one θ at a time; Φ = +∞ (gradient 0) where a chain leaves the domain or float64."""
    parametrisation = Parametrisation(declaration.order_parameters)
    entropy, measure = _terms(declaration)
    weights = log_jacobian_weights(declaration)
    kernel = declaration.kernel.name
    part = entry_slices(declaration.order_parameters)[kernel]

    def potential(thetas: np.ndarray):
        with np.errstate(all="ignore"):
            u, factors = parametrisation.entries_each(thetas)
            L, g = entropy.values_and_gradients(u, factors, values)
            m, m_gradient = measure.values_and_gradients(u, factors)
            E, G = energy.each(factors[kernel])
            g[:, part] += 0.5 * entry_gradient(G)
            phi = 0.5 * E + L - m - thetas @ weights
            gradient = parametrisation.gradient_each(thetas, g - m_gradient, factors) - weights
        bad = ~(np.isfinite(phi) & np.all(np.isfinite(gradient), axis=1))
        phi[bad], gradient[bad] = np.inf, 0.0
        return phi, gradient

    return potential


def _hmc(declaration, energy, values, solution, seed: int, size: dict):
    from scipy.linalg import solve_triangular

    from ..base.backend import get_backend
    from ..numerics.diagnostics import summarize
    from .sampling import run_sampler
    from .solve import SaddlePointError

    action = NumericAction(declaration, energy, values)
    parametrisation, scale = action.parametrisation, action.scale
    potential_in_theta = potential_each(declaration, energy, values)
    centre = parametrisation.theta(np.asarray(solution.entries, dtype=float))
    curvature = scale * action.hessian(centre)  # ∂²S/∂θ∂θ' at the saddle: θ = θ* + C⁻ᵀz, the bulk near N(0, I)
    try:
        factor = np.linalg.cholesky(0.5 * (curvature + curvature.T))
    except np.linalg.LinAlgError:
        raise SaddlePointError("method='hmc' needs a positive-definite Hessian in θ at the saddle point") from None

    def theta_of(z):  # (C, d) → θ (C, d)
        return centre + solve_triangular(factor, z.T, lower=True, trans=1).T

    def potential_and_gradient(z):
        potential, gradient = potential_in_theta(theta_of(z))
        # ∂/∂z = C⁻¹ ∂/∂θ (θ − θ* = C⁻ᵀ z)
        return potential, solve_triangular(factor, gradient.T, lower=True).T

    def record(z):
        return {"u": parametrisation.entries_each(theta_of(z))[0]}

    rng = np.random.default_rng(seed)
    host = get_backend("numpy")
    run = run_sampler(potential_and_gradient, lambda chains: rng.standard_normal((chains, centre.size)), record,
                      chains=size["chains"], warmup=size["warmup"], draws=size["draws"], rng=rng, backend=host,
                      chain_bytes=(8 * 6 * centre.size, 0), what=f"the action's {centre.size} coordinates θ",
                      target_acceptance=HMC_TARGET_ACCEPTANCE)
    summary = summarize(run.draws["u"], superchains=run.superchains)
    if not summary.converged:
        raise SaddlePointError(f"method='hmc': the chains on the action have not converged ({size['chains']} chains "
                               f"× {size['draws']} draws; R̂ {float(np.max(summary.rhat)):.3g}, bulk ESS "
                               f"{float(np.min(summary.ess_bulk)):.0f}): give more draws in sampler=")
    z = summary.mcse_z()
    acceptance = float(np.mean(run.acceptance))
    notes = (f"HMC on the action in θ (log-Cholesky, whitened by the saddle's Hessian), {size['chains']} chains × "
             f"{size['draws']} draws after {size['warmup']} of warm-up, acceptance {acceptance:.2f}; "
             f"error: {float(np.max(z)):.3g} MCSE of the sampled mean (max R̂ {float(np.max(summary.rhat)):.3g}, "
             f"min bulk ESS {float(np.min(summary.ess_bulk)):.0f})")
    return np.asarray(summary.mean, dtype=float), z * np.asarray(summary.mcse, dtype=float), \
        np.asarray(summary.standard_deviation, dtype=float) ** 2, notes


# ------------------------------------------------------------------------------------------------ the quadrature


def _nodes(degree: int) -> int:
    """The nodes a panel of the project's Gauss–Legendre rule of this degree has, 3·2^(degree−1) (`RULES`)."""
    return 3 * 2 ** (degree - 1)


def _cuts(low: float, high: float, halvings: int) -> np.ndarray:
    """Panel ends on [low, high] in units of the marginal width: the bulk's (`BULK_CUTS`), then 12·3^k out
    to the ends, each panel split into 2^halvings."""
    outer = [12.0 * 3.0 ** k for k in range(1, 12)]
    cuts = sorted({low, high, *(c for c in BULK_CUTS if low < c < high),
                   *(c for c in outer if c < high), *(-c for c in outer if -c > low)})
    cuts = np.array(cuts, dtype=float)
    parts = 2 ** halvings
    fractions = np.arange(parts) / parts
    return np.append((cuts[:-1, None] + np.diff(cuts)[:, None] * fractions).ravel(), cuts[-1])


class _Integrand:
    """Φ(θ) = S(e^θ) − m(e^θ) − Σθ on an open mesh of z (θ_i = θ*_i + s_i z_i): the integrand e^{−Φ} dθ of
    e^{−S} dμ in log coordinates (dq = q dθ). The energy depends on the kernel's coordinate alone, so it is
    evaluated on that axis's nodes by the engine's own energy and broadcast."""

    def __init__(self, declaration, energy, values, centre, widths):
        self.entropy, self.measure = _terms(declaration)
        self.energy, self.values = energy, values
        self.centre, self.widths = centre, widths
        self.kernel = [op.name for op in declaration.order_parameters].index(declaration.kernel.name)
        self._energies = {}
        # ½E ≥ ½P ln T (K(q) ⪰ 0): where K(q) + T·I has no factor in float64 (q so large that T·I is lost in its
        # rounding), Φ is bounded below by Φ with ½E replaced by this; the least such bound over those nodes
        self.energy_floor = 0.5 * energy.P * math.log(energy.temperature)
        self.unfactorised = (np.inf, math.nan)

    def energies(self, q: np.ndarray) -> np.ndarray:
        """½E at each kernel scalar q (+inf where q overflows: the entropy is infinite there too; NaN where
        K(q) + T·I has no Cholesky factor in float64), each node's kept (the grid's chunks and faces ask again for
        the same nodes)."""
        out = np.full(q.shape, np.inf)
        for k, value in enumerate(q):
            if np.isfinite(value) and value > 0:
                key = float(value)
                if key not in self._energies:
                    try:
                        self._energies[key] = 0.5 * self.energy(np.array([[math.sqrt(key)]]))[0]
                    except np.linalg.LinAlgError:
                        self._energies[key] = math.nan
                out[k] = self._energies[key]
        return out

    def __call__(self, axes: list) -> np.ndarray:
        """Φ on the open mesh of the axes' z nodes (one 1-D array per axis)."""
        d = len(axes)
        thetas = [(self.centre[i] + self.widths[i] * z).reshape([-1 if j == i else 1 for j in range(d)])
                  for i, z in enumerate(axes)]
        with np.errstate(over="ignore", under="ignore"):
            qs = [np.exp(t) for t in thetas]
        entropy = self.entropy.values(qs, self.values)
        measure = self.measure.values(qs)
        energy = self.energies(qs[self.kernel].ravel()).reshape(qs[self.kernel].shape)
        with np.errstate(invalid="ignore"):
            phi = entropy - measure + energy - sum(thetas)
        outside = np.zeros(phi.shape, dtype=bool)
        for q in qs:
            outside = outside | ~(np.isfinite(q) & (q > 0))
        unfactorised = np.broadcast_to(np.isnan(energy), phi.shape) & ~outside
        if unfactorised.any():  # no weight, and the least bound on Φ there kept (checked in _quadrature)
            with np.errstate(invalid="ignore"):
                bound = np.broadcast_to(entropy - measure + self.energy_floor - sum(thetas), phi.shape)
            least = float(np.min(np.where(unfactorised & ~np.isnan(bound), bound, np.inf)))
            smallest_q = float(np.broadcast_to(qs[self.kernel], phi.shape)[unfactorised].min())
            if least < self.unfactorised[0]:
                self.unfactorised = (least, smallest_q)
        phi[outside | np.isnan(phi)] = np.inf  # beyond float64 (q overflowed or underflowed): no weight
        return phi


def _moments(phi_of, axes, weights, reference: float):
    """(Z, Σ w q_i, Σ w q_i q_j, min Φ, the kernel axis's marginal Σ_others w) for w = Π weights · e^{−(Φ − reference)}
    over the tensor grid, the first axis in chunks of about `CHUNK` points (a 3-D grid is never held whole)."""
    d, kernel = len(axes), phi_of.kernel
    chunk = max(1, int(CHUNK // max(1, math.prod(a.size for a in axes[1:]))))
    Z, first, second, lowest = 0.0, np.zeros(d), np.zeros((d, d)), np.inf
    marginal = np.zeros(axes[kernel].size)
    for start in range(0, axes[0].size, chunk):
        part = [axes[0][start:start + chunk], *axes[1:]]
        phi = phi_of(part)
        lowest = min(lowest, float(phi.min()))
        w = np.exp(-(phi - reference))
        for i, weight in enumerate([weights[0][start:start + chunk], *weights[1:]]):
            w = w * weight.reshape([-1 if j == i else 1 for j in range(d)])
        with np.errstate(over="ignore", invalid="ignore"):
            qs = [np.exp(phi_of.centre[i] + phi_of.widths[i] * z).reshape([-1 if j == i else 1 for j in range(d)])
                  for i, z in enumerate(part)]
            weighted = [np.where(w > 0, w * q, 0.0) for q in qs]  # no 0·inf where q overflowed without weight
            Z += float(w.sum())
            summed = np.broadcast_to(w, [a.size for a in part]).sum(axis=tuple(j for j in range(d) if j != kernel))
            if kernel == 0:
                marginal[start:start + summed.size] += summed
            else:
                marginal += summed
            for i in range(d):
                first[i] += float(weighted[i].sum())
                for j in range(i, d):
                    second[i, j] += float(np.where(w > 0, weighted[i] * qs[j], 0.0).sum())
    second = np.triu(second) + np.triu(second, 1).T
    return Z, first, second, lowest, marginal


def _short_faces(phi_of, bounds, axes, lowest: float) -> list:
    """The (axis, side) whose face of the box still carries e^{−(Φ − Φ_min)} ≥ 1e-300 (on the other axes' nodes)."""
    short = []
    for i in range(len(bounds)):
        for side in (0, 1):
            face = [np.array([bounds[i][side]]) if j == i else axes[j] for j in range(len(bounds))]
            if float(phi_of(face).min()) - lowest < CUTOFF:
                short.append((i, side))
    return short


def _coarse_on_a_clear_box(phi_of, bounds, degree, halvings, reference):
    """The coarser rule's moments on a box widened (each short face pushed out twice as far, up to 12 times)
    until no face carries 1e-300 of the peak, and the reference Φ lowered to the grid's minimum where the peak lies
    far below the saddle's value (no overflow of e^{−(Φ − reference)}). Returns (moments, bounds, reference,
    whether the faces cleared, the rule's nodes on each axis)."""
    d = len(bounds)
    for _ in range(12):
        rule = [composite_rule(_cuts(*bounds[i], halvings), _nodes(degree)) for i in range(d)]
        moments = _moments(phi_of, [x for x, _ in rule], [w for _, w in rule], reference)
        lowest = moments[3]
        if lowest < reference - 600:
            reference = lowest
            continue
        short = _short_faces(phi_of, bounds, [x for x, _ in rule], min(lowest, reference))
        if not short:
            return moments, bounds, reference, True, [x for x, _ in rule]
        for i, side in short:
            bounds[i][side] *= 2.0
    return moments, bounds, reference, False, [x for x, _ in rule]


def _quadrature(declaration, energy, values, solution):
    u = np.asarray(solution.entries, dtype=float)
    action = NumericAction(declaration, energy, values)
    centre = np.log(u)
    widths = np.sqrt(np.diag(leading_covariance(action.hessian(centre) * action.scale)))
    phi_of = _Integrand(declaration, energy, values, centre, widths)
    d = u.size
    degrees = RULES if d <= 2 else tuple(r - 1 for r in RULES)  # 3-D: 12 and 24 nodes a panel, as many panels
    reach = math.sqrt(2 * CUTOFF)  # a Gaussian's 1e-300 in its own widths
    bounds = [[-reach, reach] for _ in range(d)]
    reference = float(phi_of([np.zeros(1)] * d).min())
    halvings = 0
    while True:
        coarse, bounds, reference, cleared, coarse_axes = _coarse_on_a_clear_box(phi_of, bounds, degrees[0], halvings,
                                                                                 reference)
        _factorised_where_it_weighs(declaration, phi_of, min(reference, coarse[3]))
        rule = [composite_rule(_cuts(*bounds[i], halvings), _nodes(degrees[1])) for i in range(d)]
        fine = _moments(phi_of, [x for x, _ in rule], [w for _, w in rule], reference)
        _factorised_where_it_weighs(declaration, phi_of, min(reference, fine[3]))
        (mean_c, covariance_c), (mean_f, covariance_f) = _mean_and_covariance(coarse), _mean_and_covariance(fine)
        difference = np.abs(mean_f - mean_c)
        spread = np.abs(np.diag(covariance_f) - np.diag(covariance_c))
        # what is reported, the means and variances: a rounding of the weights common to Z and the moments (S ~ N
        # far from 1) cancels in them
        agreed = np.all(difference <= TOLERANCE * np.abs(mean_f)) and \
            np.all(spread <= TOLERANCE * np.abs(np.diag(covariance_f)))
        spent = math.prod(x.size for x, _ in rule) * 2 ** d > POINTS or rule[phi_of.kernel][0].size * 2 > KERNEL_NODES
        if agreed or spent:
            break
        halvings += 1
    # S is computed to a few units of its last place: every weight's relative rounding is ε·|S| at most that
    rounding = 64 * np.finfo(float).eps * (abs(solution.action) + 1.0)
    error = difference + rounding * np.abs(mean_f)
    nodes = " × ".join(str(x.size) for x, _ in rule)
    notes = (f"Gauss–Legendre tensor rule in ln q ({_nodes(degrees[0])} and {_nodes(degrees[1])} "
             f"nodes a panel, {nodes} nodes), centred at the saddle in units of its marginal widths "
             f"{np.array2string(widths, precision=3)}, out to e^{{−(S−S*)}} < 1e-300 (z ∈ "
             f"{[[round(b, 1) for b in bound] for bound in bounds]}); error = the two rules' difference + rounding; "
             f"variance exact (the two rules differ by "
             f"{float(np.max(np.abs(np.diag(covariance_f) - np.diag(covariance_c)))):.2g})"
             + ("" if agreed else f"; the rules did not agree to {TOLERANCE:g} within {POINTS:g} points and "
                                  f"{KERNEL_NODES} kernel nodes")
             + ("" if cleared else "; a face of the box still carries more than 1e-300 of the peak"))
    kernel = phi_of.kernel
    marginals = tuple(KernelMarginal(np.exp(centre[kernel] + widths[kernel] * axis[kernel]), moments[4] / moments[0])
                      for axis, moments in ((coarse_axes, coarse), ([x for x, _ in rule], fine)))
    return mean_f, error, np.diag(covariance_f), notes, marginals, rounding


def _factorised_where_it_weighs(declaration, phi_of: _Integrand, lowest: float) -> None:
    """Nodes where K + T·I had no float64 factor got no weight: refused (one line) unless the bound on Φ there
    leaves e^{−(Φ − Φ_min)} below 1e-300."""
    bound, q = phi_of.unfactorised
    if bound - lowest < CUTOFF:
        raise ValueError(f"the quadrature reaches {declaration.kernel.name} = {q:.3g}, where K + T·I has no Cholesky "
                         f"factor in float64 (T·I lost in K's rounding), while e^{{−(S − S*)}} there may exceed 1e-300 "
                         f"of its peak: the integral is not decided in float64 at these values (a larger width N "
                         f"or temperature T narrows it)")


def _mean_and_covariance(moments) -> tuple[np.ndarray, np.ndarray]:
    Z, first, second = moments[:3]
    mean = first / Z
    return mean, second / Z - np.outer(mean, mean)
