"""Single-location regression (Marion, Berthier, Biau, Boyer, ICLR 2025), derived symbolically.

Model (spec §1): J0 ~ U{1..L}; X_{J0} ~ N(√(d/2)k*, γ²I_d), X_ℓ ~ N(0, I_d) for ℓ ≠ J0;
Y = ⟨X_{J0}, v*⟩ + εξ. Predictor (spec §2.1): T(X) = Σ_ℓ erf(λ⟨X_ℓ,k⟩)⟨X_ℓ,v⟩ with k, v on the
unit sphere. The population risk ℛ = E[(Y − T)²] depends on (k, v) only through the overlaps
κ = ⟨k,k*⟩, ν = ⟨v,v*⟩, θ = ⟨v,k*⟩, η = ⟨k,v*⟩, ρ = ⟨k,v⟩ (spec §3.1). Here it is derived by
the Gaussian expectation engine of `.gaussian` (conditioning on the key coordinate and
Stein's lemma), differentiated by sympy, and turned into array evaluators by `.codegen`.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
import sympy
from sympy import Eq, Function, erf, sqrt

from ...base import arguments
from ...derivations.codegen import mpmath_evaluator
from ...derivations.gaussian import Expectation, gaussian, gaussian_expectation, gaussian_moments_expectation

from .tail_derivations import log_erfc_square_mean as gaussian_log_erfc_square_mean, log_zeta_at_zero
from .theory import SOURCE, theory

# Overlaps (spec §3.1) and parameters.
kappa, nu, theta, eta, rho = sympy.symbols("kappa nu theta eta rho", real=True)
lam = sympy.Symbol("lambda", positive=True)
gamma = sympy.Symbol("gamma", positive=True)
d = sympy.Symbol("d", positive=True)
L = sympy.Symbol("L", positive=True)
eps = sympy.Symbol("epsilon", nonnegative=True)
OVERLAPS = (kappa, nu, theta, eta, rho)
lam_symbol, gamma_symbol, d_symbol, L_symbol, eps_symbol = lam, gamma, d, L, eps  # unshadowed aliases
PARAMETERS = (lam, gamma, d, L, eps)
OVERLAP_NAMES = tuple(s.name for s in OVERLAPS)
PARAMETER_NAMES = tuple(s.name for s in PARAMETERS)
NOISE_TOKENS = sympy.Symbol("L_minus_1", nonnegative=True)
"""m = L − 1, the uninformative tokens: the linear risk's denominator γ² + m is exact in float64 where γ² + L − 1
would lose a small γ² to round-off."""

# Gaussian coordinates: g_k, w_1, w_2, ξ standard normal and independent.
g_k, w_1, w_2, xi = sympy.symbols("g_k w_1 w_2 xi", real=True)
E = Function("𝔼")  # expectation, printed as such in LaTeX and MathML
R = sympy.Symbol("ℛ")


def _coordinates() -> dict:
    """The tokens in Gaussian coordinates (spec §3.1): g_k, w₁, w₂, ξ independent standard normals, and
    ⟨X_J0,k⟩ = √(d/2)κ + γg_k, ⟨X_J0,v⟩ = √(d/2)θ + γg_v, Y = γg_v* + εξ for the informative token, ⟨X_ℓ,k⟩ = g_k and
    ⟨X_ℓ,v⟩ = g_v for an uninformative one, with g_v = ρg_k + √(1−ρ²)w₁ and g_v* = ηg_k + a w₁ + b w₂
    (a = (ν−ρη)/√(1−ρ²), b² = 1 − η² − a²), so that (g_k, g_v, g_v*) has the covariances ρ, η, ν."""
    m = sqrt(d / 2)
    a = (nu - rho * eta) / sqrt(1 - rho**2)
    g_v = rho * g_k + sqrt(1 - rho**2) * w_1
    g_vstar = eta * g_k + a * w_1 + sqrt(1 - eta**2 - a**2) * w_2
    key = m * kappa + gamma * g_k
    value = m * theta + gamma * g_v
    label = gamma * g_vstar + eps * xi
    return {"g_v": g_v, "g_vstar": g_vstar, "error": erf(lam * key) * value - label, "noise": erf(lam * g_k) * g_v}


_LAWS = tuple(gaussian(x) for x in (g_k, w_1, w_2, xi))


@theory.derivation(name="population_risk", title="Population risk of the erf-attention predictor in the five overlaps",
                   source=f"{SOURCE}, §3.1 (closed form of the authors' dynamics.R)")
def population_risk_derivation(step) -> None:
    """ℛ(κ, ν, θ, η, ρ) = E[(Y − T_λ^{k,v}(X))²]: the closed form of spec §3.1, derived step by step."""
    S, Y, N = sympy.symbols("S Y N")
    ell, m_ = sympy.symbols("ell m", integer=True)
    step(
        "Risk of T(X) = Σ_ℓ erf(λ⟨X_ℓ,k⟩)⟨X_ℓ,v⟩ = S + Σ_{ℓ≠J0} N_ℓ (S: informative token)",
        Eq(R, E((Y - S - sympy.Sum(sympy.Symbol("N_ell"), (ell, 1, L - 1))) ** 2)),
        kind="definition",
    )
    delta = sympy.KroneckerDelta(ell, m_)
    step(
        "Given J0 the tokens are independent and the L−1 uninformative ones identically distributed (the model): the "
        "square expanded, with E[(S−Y)N_ℓ] = E[S−Y]E[N], E[N_ℓN_m] = E[N]² for ℓ ≠ m and E[N_ℓ²] = E[N²]",
        Eq(R, E((S - Y) ** 2) + 2 * sympy.Sum(E(S - Y) * E(N), (ell, 1, L - 1))
           + sympy.Sum(delta * E(N**2) + (1 - delta) * E(N) ** 2, (ell, 1, L - 1), (m_, 1, L - 1))),
        kind="assumption",
    )
    decomposition = E((S - Y) ** 2) + 2 * (L - 1) * E(N) * E(S - Y) + (L - 1) * E(N**2) + (L - 1) * (L - 2) * E(N) ** 2
    step("Count the terms: L − 1 cross terms, L − 1 squares and (L − 1)(L − 2) products", Eq(R, decomposition))
    c = _coordinates()
    step(
        "Informative token in coordinates: ⟨X_J0,k⟩ = √(d/2)κ + γg_k, ⟨X_J0,v⟩ = √(d/2)θ + γg_v, "
        "Y = γg_v* + εξ, with g_v = ρg_k + √(1−ρ²)w₁ and g_v* = ηg_k + a w₁ + b w₂ "
        "(a = (ν−ρη)/√(1−ρ²), b² = 1 − η² − a²); g_k, w₁, w₂, ξ independent standard normals",
        sympy.Tuple(Eq(E((S - Y) ** 2), Expectation(c["error"] ** 2, *_LAWS)),
                    Eq(E(S - Y), Expectation(c["error"], *_LAWS))),
        kind="definition",
    )
    step(
        "Uninformative token: ⟨X_ℓ,k⟩ = g_k, ⟨X_ℓ,v⟩ = g_v = ρg_k + √(1−ρ²)w₁",
        sympy.Tuple(Eq(E(N), Expectation(c["noise"], *_LAWS[:2])), Eq(E(N**2), Expectation(c["noise"] ** 2, *_LAWS[:2]))),
        kind="definition",
    )
    g_v, g_vstar = c["g_v"], c["g_vstar"]
    step(
        "The coordinates have the model's covariances: g_v and g_v* are standard, Cov(g_k, g_v) = ⟨k,v⟩ = ρ, "
        "Cov(g_k, g_v*) = ⟨k,v*⟩ = η, Cov(g_v, g_v*) = ⟨v,v*⟩ = ν",
        Eq(sympy.Tuple(*(Expectation(x, *_LAWS[:3]) for x in (g_v**2, g_vstar**2, g_k * g_v, g_k * g_vstar,
                                                                   g_v * g_vstar))),
           sympy.Tuple(1, 1, rho, eta, nu)),
    )
    error = c["error"] ** 2
    conditional = sympy.simplify(gaussian_moments_expectation(error, [w_1, w_2, xi]))
    step("Average over w₁, w₂, ξ (Gaussian moments), conditionally on g_k",
         Eq(E((S - Y) ** 2), Expectation(conditional, gaussian(g_k))))
    signal = gaussian_expectation(conditional, g_k)
    step("Average over g_k by Stein's lemma from E erf(α+βZ) and ζ(α,β) = E erf(α+βZ)²",
         Eq(E((S - Y) ** 2), signal))
    signal_mean = gaussian_expectation(
        erf(lam * (sqrt(d / 2) * kappa + gamma * g_k)) * (sqrt(d / 2) * theta + gamma * rho * g_k), g_k
    )
    step("Mean of the informative token's error (E Y = 0)", Eq(E(S - Y), signal_mean))
    noise = c["noise"]
    noise_mean = gaussian_expectation(gaussian_moments_expectation(noise, [w_1]), g_k)
    noise_square = gaussian_expectation(gaussian_moments_expectation(noise**2, [w_1]), g_k)
    step("Uninformative token, first moment (Stein's lemma)", Eq(E(N), noise_mean))
    step("Uninformative token, second moment", Eq(E(N**2), sympy.simplify(noise_square)))
    risk = signal + 2 * (L - 1) * noise_mean * signal_mean + (L - 1) * noise_square + (L - 1) * (L - 2) * noise_mean**2
    risk = sympy.expand(risk)
    step("Assemble the four terms", Eq(R, risk))
    risk = sympy.collect(risk, [L, eps], evaluate=True)
    step("Collect in L and ε", Eq(R, risk), name="risk")


@lru_cache(maxsize=None)
def population_risk_expression() -> sympy.Expr:
    """ℛ(κ, ν, θ, η, ρ; λ, γ, d, L, ε), including the noise ε² (spec §3.1 plus ε²)."""
    return population_risk_derivation().result("risk").rhs


def risk_gradient() -> Any:
    """(∂ℛ/∂κ, ∂ℛ/∂ν, ∂ℛ/∂θ, ∂ℛ/∂η, ∂ℛ/∂ρ): the derivative of the derivation's result ``risk`` in the overlaps."""
    return population_risk_derivation.evaluator("risk").derivative(*OVERLAP_NAMES)


def risk_gradient_expressions() -> tuple[sympy.Expr, ...]:
    """(∂ℛ/∂κ, ∂ℛ/∂ν, ∂ℛ/∂θ, ∂ℛ/∂η, ∂ℛ/∂ρ) by sympy differentiation."""
    return tuple(risk_gradient().expression)


@lru_cache(maxsize=None)
def manifold_is_invariant() -> bool:
    """True when sympy proves ∂ℛ/∂θ = ∂ℛ/∂η = ∂ℛ/∂ρ = 0 on M = {θ = η = ρ = 0} (spec §3.3, fact 1).

    Then ∇_kℛ ∥ k* and ∇_vℛ ∥ v* on M, so every projected gradient step maps M into M.
    """
    on_manifold = {theta: 0, eta: 0, rho: 0}
    return all(sympy.simplify(partial.subs(on_manifold)) == 0 for partial in risk_gradient_expressions()[2:])


@theory.derivation(name="oracle_risk", title="Risk of the oracle predictor T* = T_λ^{k*,v*}",
                   source=f"{SOURCE}, Theorem 1 (spec §2.2)")
def oracle_risk_derivation(step) -> None:
    """ℛ(T*) at (k, v) = (k*, v*): κ = ν = 1, θ = η = ρ = 0 (spec §2.2, ≈ Theorem 1)."""
    risk = population_risk_expression()
    step("The population risk in the overlaps", Eq(R, risk), kind="assumption")  # derived above
    at_oracle = {kappa: 1, nu: 1, theta: 0, eta: 0, rho: 0}
    oracle = risk.subs(at_oracle)
    step("Substitute κ = ν = 1, θ = η = ρ = 0", Eq(R, oracle), substitute=at_oracle)
    step("Simplify", Eq(R, sympy.collect(sympy.simplify(oracle), [L, gamma**2])), name="oracle_risk")


@theory.derivation(name="linear_risk", title="Risk of the best linear predictor",
                   source=f"{SOURCE}, Proposition 3 (spec §2.4)")
def linear_risk_derivation(step) -> None:
    """Best linear predictor f_β(X) = Σ_ℓ⟨β_ℓ, X_ℓ⟩ (spec §2.4, Proposition 3)."""
    c = sympy.Symbol("c", real=True)
    u, Y = sympy.Symbol("u_ell"), sympy.Symbol("Y")
    g, h = sympy.symbols("g h", real=True)
    label = gamma * g + eps * xi
    laws = {x: gaussian(x) for x in (g, h, xi)}
    step(
        "u_ℓ = ⟨X_ℓ,v*⟩ over J0 ~ U{1..L}: with probability 1/L token ℓ is the informative one, u_ℓ = γg and "
        "Y = γg + εξ (k* ⊥ v*); otherwise u_ℓ = h, a standard normal independent of Y (g, h, ξ independent standard "
        "normals)",
        sympy.Tuple(
            Eq(E(u**2), Expectation((gamma * g) ** 2, laws[g]) / L + (L - 1) / L * Expectation(h**2, laws[h])),
            Eq(E(u * Y), Expectation(label * gamma * g, laws[g], laws[xi]) / L
               + (L - 1) / L * Expectation(label * h, laws[g], laws[h], laws[xi])),
            Eq(E(Y**2), Expectation(label**2, laws[g], laws[xi]))),
        kind="definition",
    )
    second_moment = gamma**2 / L + (L - 1) / L
    cross = gamma**2 / L
    step("The moments", sympy.Tuple(Eq(E(u**2), second_moment), Eq(E(u * Y), cross), Eq(E(Y**2), gamma**2 + eps**2)))
    step(
        "Only u_ℓ correlates with Y; by symmetry β_ℓ = c·v*, and the u_ℓ are uncorrelated (mean zero, independent "
        "given J0): ℛ = E(Y − cΣ_ℓu_ℓ)² = E Y² − 2cL E[Yu] + c²L E u²",
        Eq(R, E(Y**2) - 2 * c * L * E(u * Y) + c**2 * L * E(u**2)),
        kind="assumption",
    )
    risk_c = sympy.expand(c**2 * L * second_moment - 2 * c * L * cross + gamma**2 + eps**2)
    step("Risk of β_ℓ = c·v*", Eq(R, risk_c))
    step("Stationarity ∂ℛ/∂c = 0", Eq(sympy.Derivative(R, c), 0), kind="condition")
    (c_star,) = sympy.solve(sympy.diff(risk_c, c), c)
    step("The stationary c", Eq(c, c_star))
    minimal = sympy.simplify(risk_c.subs(c, c_star))
    step("Minimal risk", Eq(R, minimal), name="linear_risk")
    step("In the m = L − 1 uninformative tokens (the form evaluated: its denominator γ² + m is exact for L = 1 and a "
         "small γ, where γ² + L − 1 would lose γ² to round-off)", Eq(R, minimal.subs(L, NOISE_TOKENS + 1)),
         substitute={L: NOISE_TOKENS + 1}, name="linear_risk_in_noise_tokens")


# ---------------------------------------------------------------------------------------------
# Numeric entry points (generated evaluators)
# ---------------------------------------------------------------------------------------------

GAMMA_RANGE = (1e-30, 1e30)
"""Valid γ: every power of γ and λ in the closed forms then stays inside float64."""

EPS_MAX = 1e30
"""Largest valid ε (only ε² enters the closed forms)."""

COUNT_MAX = 10**15
"""Largest valid d and L: integers below 2^53 are exact in float64."""

LAMBDA_LIMIT = 1e20
"""λ·min(1, γ) beyond which ℛ and its partials equal their λ → ∞ limits to within 1e-20 of their scale."""

UNIT_TOLERANCE = 1e-8
"""How far ‖k‖ may be from 1 (and ⟨k*, v*⟩ from 0) in `population_risk`."""

OVERLAP_TOLERANCE = 1e-12
"""How far an overlap may lie outside [−1, 1] (round-off of unit vectors); it is then clipped."""

MIN_DPS, MAX_DPS = 20, 150
"""Digits `oracle_excess_risk_high_precision` accepts for its mpmath path (150 digits take ~seconds)."""



def _saturated(lam: Any, gamma: Any) -> Any:
    """λ capped at Λ = LAMBDA_LIMIT·max(1, 1/γ), where ℛ has reached its λ → ∞ limit in float64.

    λ enters only as erf(λX) with X Gaussian of spread ≥ min(1, γ) given the rest (the key of a token),
    and erf(λX) → sign X with an L¹ error O(1/(λ·spread)); every term is thus within
    O(1/(λ·min(1, γ))) ≤ 1e-20 of its limit beyond Λ, while 2λ², (λγ)⁴ ... still fit in float64 there.
    """
    cap = LAMBDA_LIMIT * np.maximum(1.0, 1.0 / np.asarray(gamma, dtype=float))
    capped = np.minimum(lam, cap)
    return float(capped) if np.ndim(capped) == 0 else capped


def _parameters(lam: Any, gamma: Any, d: Any, L: Any, eps: Any) -> tuple:
    """(λ, γ, d, L, ε) checked (numbers, or arrays of them for a grid), λ saturated."""
    lam = arguments.reals("lam", lam, low=0.0, open_low=True)
    gamma = arguments.reals("gamma", gamma, low=GAMMA_RANGE[0], high=GAMMA_RANGE[1])
    d = arguments.reals("d", d, low=1, high=COUNT_MAX, integral=True)
    L = arguments.reals("L", L, low=1, high=COUNT_MAX, integral=True)
    eps = arguments.reals("eps", eps, low=0.0, high=EPS_MAX)
    return _saturated(lam, gamma), gamma, d, L, eps


def _overlap_values(values: tuple) -> tuple:
    """(κ, ν, θ, η, ρ) checked to lie in [−1, 1] (up to round-off) and clipped there."""
    checked = []
    for name, value in zip(("kappa", "nu", "theta", "eta", "rho"), values):
        checked.append(np.clip(arguments.reals(name, value, low=-1 - OVERLAP_TOLERANCE, high=1 + OVERLAP_TOLERANCE),
                               -1.0, 1.0))
    return tuple(checked)


def _from_overlaps(function: Any, overlaps_: tuple, lam, gamma, d, L, eps, backend) -> Any:
    """The derived ``function`` (a `DerivedFunction` of the overlaps and parameters) at checked values."""
    be = arguments.backend(backend)
    o = _overlap_values(overlaps_)
    p = _parameters(lam, gamma, d, L, eps)
    arguments.broadcastable(dict(zip(("kappa", "nu", "theta", "eta", "rho", "lam", "gamma", "d", "L", "eps"), o + p)))
    return function.array_function(*OVERLAP_NAMES, *PARAMETER_NAMES, backend=be)(*o, *p)


def population_risk_from_overlaps(kappa_, nu_, theta_, eta_, rho_, *, lam, gamma, d, L, eps, backend=None):
    """ℛ(κ, ν, θ, η, ρ) including ε² (generated from `population_risk_expression`, spec §3.1).

    Numbers or arrays that broadcast together (a grid); overlaps in [−1, 1]; λ > 0, γ in GAMMA_RANGE,
    d and L integers in [1, COUNT_MAX], ε in [0, EPS_MAX]. backend: a Backend, 'numpy', 'cupy' or None (numpy).
    """
    return _from_overlaps(population_risk_derivation.evaluator("risk"), (kappa_, nu_, theta_, eta_, rho_), lam, gamma,
                          d, L, eps, backend)


def risk_gradient_from_overlaps(kappa_, nu_, theta_, eta_, rho_, *, lam, gamma, d, L, eps, backend=None):
    """(ℛ_κ, ℛ_ν, ℛ_θ, ℛ_η, ℛ_ρ): the partial derivatives of ℛ in the overlaps (sympy diff); arguments
    as in `population_risk_from_overlaps`."""
    return _from_overlaps(risk_gradient(), (kappa_, nu_, theta_, eta_, rho_), lam, gamma, d, L, eps, backend)


def risk_gradient_function(*, gamma, d, L, eps, backend=None):
    """(κ, ν, θ, η, ρ, λ) ↦ (ℛ_κ, …, ℛ_ρ) with γ, d, L, ε checked once, for descent loops.

    The returned function takes arrays of the backend (overlaps of unit vectors, clipped to [−1, 1]
    against round-off) and a number λ > 0 already checked by its caller; it validates nothing more.
    """
    be = arguments.backend(backend)
    _, gamma, d, L, eps = _parameters(1.0, gamma, d, L, eps)
    f = risk_gradient().array_function(*OVERLAP_NAMES, *PARAMETER_NAMES, backend=be)
    xp = be.xp

    def gradient(kappa_, nu_, theta_, eta_, rho_, lam):
        o = (xp.clip(x, -1.0, 1.0) for x in (kappa_, nu_, theta_, eta_, rho_))
        return f(*o, _saturated(lam, gamma), gamma, d, L, eps)

    return gradient


def _vectors(named: dict, be: Any) -> dict:
    """Finite float64 arrays of the backend, each with a last axis (vectors or stacks of them)."""
    return {name: arguments.array(name, value, be, min_ndim=1) for name, value in named.items()}


def _same_last_axis(arrays: dict, reference: str) -> int:
    size = int(arrays[reference].shape[-1])
    for name, arr in arrays.items():
        if int(arr.shape[-1]) != size:
            raise ValueError(f"{name} must have a last axis of length {size} like {reference}, "
                             f"got shape {tuple(arr.shape)}")
    arguments.broadcastable(arrays, ", ".join(arrays))
    return size


def unchecked_overlaps(k, v, k_star, v_star, xp):
    """`overlaps` of arrays its caller has checked (the descent loops)."""
    dot = lambda a, b: xp.sum(a * b, axis=-1)  # noqa: E731
    return dot(k, k_star), dot(v, v_star), dot(v, k_star), dot(k, v_star), dot(k, v)


def overlaps(k, v, k_star, v_star, backend=None):
    """(κ, ν, θ, η, ρ) = (⟨k,k*⟩, ⟨v,v*⟩, ⟨v,k*⟩, ⟨k,v*⟩, ⟨k,v⟩) over the last axis (spec §3.1).

    Arrays of shape (..., dim) that broadcast together; backend: a Backend, 'numpy', 'cupy' or None (numpy).
    """
    be = arguments.backend(backend)
    arrays = _vectors({"k": k, "v": v, "k_star": k_star, "v_star": v_star}, be)
    _same_last_axis(arrays, "k")
    return unchecked_overlaps(*arrays.values(), be.xp)


def _unit_norm(name: str, arr: Any) -> None:
    norms = np.asarray(np.linalg.norm(np.asarray(arr.get() if hasattr(arr, "get") else arr), axis=-1))
    worst = float(np.max(np.abs(norms - 1.0)))
    if worst > UNIT_TOLERANCE:
        raise ValueError(f"{name} must be a unit vector (|‖{name}‖ − 1| ≤ {UNIT_TOLERANCE:g}; the closed form "
                         f"assumes ‖{name}‖ = 1), got a norm off by {worst:.3g}")


def population_risk(k, v, k_star, v_star, lam, gamma, d, L, eps, backend=None):
    """ℛ(k, v) = E[(Y − T_λ^{k,v}(X))²] for unit k, v and orthonormal k*, v* (spec §3.1, with ε²).

    k, v of shape (..., d) (broadcasting), k*, v* of shape (d,); ``d`` must equal that length (it is
    kept in the signature for symmetry with `population_risk_from_overlaps`).
    """
    be = arguments.backend(backend)
    arrays = _vectors({"k": k, "v": v, "k_star": k_star, "v_star": v_star}, be)
    size = _same_last_axis(arrays, "k")
    for name in ("k_star", "v_star"):
        if arrays[name].ndim != 1:
            raise ValueError(f"{name} must be a vector of shape ({size},), got shape {tuple(arrays[name].shape)}")
    if size < 2:
        raise ValueError(f"k must have a last axis of length d ≥ 2, got shape {tuple(arrays['k'].shape)}")
    if arguments.integer("d", d, 1, COUNT_MAX) != size:
        raise ValueError(f"d must equal the vectors' length {size} (the last axis of k), got {d!r}")
    for name, arr in arrays.items():
        _unit_norm(name, arr)
    cross = float(arrays["k_star"] @ arrays["v_star"])
    if abs(cross) > UNIT_TOLERANCE:
        raise ValueError(f"k_star and v_star must be orthogonal (within {UNIT_TOLERANCE:g}), got ⟨k*, v*⟩ = {cross:.3g}")
    return population_risk_from_overlaps(*unchecked_overlaps(*arrays.values(), be.xp), lam=lam, gamma=gamma, d=size,
                                         L=L, eps=eps, backend=be)


def oracle_risk(lam, d, L, gamma, eps, backend=None):
    """ℛ(T*) = ε² + γ²[1 − 2erf(λ√d/√(2(1+2λ²γ²))) + ζ(λ√(d/2), λγ)] + (L−1)ζ(0, λ)  (spec §2.2).

    Numbers or arrays that broadcast together; ranges as in `population_risk_from_overlaps`.
    """
    be = arguments.backend(backend)
    p = _parameters(lam, gamma, d, L, eps)
    arguments.broadcastable(dict(zip(("lam", "gamma", "d", "L", "eps"), p)))
    return oracle_risk_derivation.evaluator("oracle_risk").array_function(*PARAMETER_NAMES, backend=be)(*p)


@lru_cache(maxsize=None)
def _oracle_excess_mpmath():
    expression = oracle_risk_derivation().result("oracle_risk").rhs.subs(eps, 0)
    return mpmath_evaluator(expression, (lam_symbol, gamma_symbol, d_symbol, L_symbol))


def _digits_cancelled(lam: float, d: int) -> int:
    """Digits the bracket 1 − 2erf(a) + ζ ≲ erfc(a)² ≈ e^{−λ²d}, a = λ√(d/2), cancels in its O(1) terms."""
    return int(lam * lam * d / math.log(10))


def oracle_excess_risk_high_precision(lam, d, L, gamma, dps=None) -> float:
    """ℛ(T*) − ε² of Theorem 1 (spec §2.2) to about 1e-13 relative, where float64's ``oracle_risk`` − ε²
    keeps only ~1e-16 absolute: its bracket 1 − 2erf(a/√(1+2b²)) + ζ(a, b), a = λ√(d/2), b = λγ,
    decays like erfc(a)² and cancels below 1e-16.

    dps=None (default): γ²·E[erfc(a + bZ)²] + (L−1)ζ(0, λ), the same bracket written without
    cancellation (`.tail_derivations.log_erfc_square_mean`), in float64 for any parameters; a value
    below the float64 range (2.2e-308) is refused with its order of magnitude.
    dps = an integer in [MIN_DPS, MAX_DPS]: the derived expression itself in mpmath at ``dps`` digits,
    refused when the cancellation needs more (MIN_DPS + λ²d/ln 10 digits).
    """
    lam = arguments.positive("lam", lam)
    d = arguments.integer("d", d, 1, COUNT_MAX)
    L = arguments.integer("L", L, 1, COUNT_MAX)
    gamma = arguments.real("gamma", gamma, low=GAMMA_RANGE[0], high=GAMMA_RANGE[1])
    if dps is not None:
        import mpmath

        dps = arguments.integer("dps", dps, MIN_DPS, MAX_DPS)
        cancelled = _digits_cancelled(lam, d)
        needed = MIN_DPS + cancelled  # 15 significant digits, 5 guard digits for the quadrature of ζ
        if needed > dps:
            raise ValueError(
                f"dps={dps} is too few digits at lam={lam:g}, d={d}: the bracket 1 − 2erf + ζ cancels to about "
                f"1e-{cancelled}, which needs dps ≥ {needed}" + (f" (beyond MAX_DPS = {MAX_DPS})" if needed > MAX_DPS else "")
                + "; use dps=None, the form without cancellation")
        with mpmath.workdps(dps):
            return float(_oracle_excess_mpmath()(mpmath.mpf(lam), mpmath.mpf(gamma), mpmath.mpf(d), mpmath.mpf(L)))
    log_value = oracle_log_excess_risk(lam, d, L, gamma)
    if log_value < math.log(np.finfo(float).tiny):
        raise ValueError(
            f"the excess risk at lam={lam:g}, d={d}, L={L}, gamma={gamma:g} is about 1e{log_value / math.log(10):.0f}, "
            f"below the float64 range (2.2e-308): its natural log is oracle_log_excess_risk(...) = {log_value:.6g}")
    return math.exp(log_value)


def oracle_log_excess_risk(lam, d, L, gamma) -> float:
    """ln(ℛ(T*) − ε²), the form without cancellation of `oracle_excess_risk_high_precision` (dps=None) in
    logs, for any parameters: where the excess itself is below the float64 range, its log is not."""
    lam = arguments.positive("lam", lam)
    d = arguments.integer("d", d, 1, COUNT_MAX)
    L = arguments.integer("L", L, 1, COUNT_MAX)
    gamma = arguments.real("gamma", gamma, low=GAMMA_RANGE[0], high=GAMMA_RANGE[1])
    lam = _saturated(lam, gamma)
    logs = [2.0 * math.log(gamma) + gaussian_log_erfc_square_mean(lam * math.sqrt(d / 2), lam * gamma)]
    if L > 1:
        logs.append(math.log(L - 1) + log_zeta_at_zero(lam))
    return float(np.logaddexp.reduce(logs))


def linear_risk(L, gamma, eps, backend=None):
    """Risk of the best linear predictor: ε² + γ² − γ⁴/(γ² + L − 1)  (spec §2.4, Proposition 3).

    Numbers or arrays that broadcast together; L an integer in [1, COUNT_MAX], γ in GAMMA_RANGE, ε in [0, EPS_MAX].
    """
    be = arguments.backend(backend)
    _, gamma, _, L, eps = _parameters(1.0, gamma, 1, L, eps)
    arguments.broadcastable({"L": L, "gamma": gamma, "eps": eps})
    f = linear_risk_derivation.evaluator("linear_risk_in_noise_tokens").array_function(
        gamma_symbol.name, NOISE_TOKENS.name, eps_symbol.name, backend=be)
    return f(gamma, L - 1, eps)
