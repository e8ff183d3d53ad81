"""Single-location regression (Marion, Berthier, Biau, Boyer, ICLR 2025), derived symbolically.

Model (spec §1): J0 ~ U{1..L}; X_{J0} ~ N(√(d/2)k*, γ²I_d), X_ℓ ~ N(0, I_d) for ℓ ≠ J0;
Y = ⟨X_{J0}, v*⟩ + εξ. Predictor (spec §2.1): T(X) = Σ_ℓ erf(λ⟨X_ℓ,k⟩)⟨X_ℓ,v⟩ with k, v on the
unit sphere. The population risk ℛ = E[(Y − T)²] depends on (k, v) only through the overlaps
κ = ⟨k,k*⟩, ν = ⟨v,v*⟩, θ = ⟨v,k*⟩, η = ⟨k,v*⟩, ρ = ⟨k,v⟩ (spec §3.1). Here it is derived by
the Gaussian expectation engine of :mod:`.gaussian` (conditioning on the key coordinate and
Stein's lemma), differentiated by sympy, and turned into array evaluators by :mod:`.codegen`.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import sympy
from sympy import Eq, Function, erf, sqrt

from .codegen import evaluator, mpmath_evaluator
from .derivation import Derivation, DerivationRecorder
from .gaussian import gaussian_expectation, gaussian_moments_expectation

SOURCE = "Marion, Berthier, Biau, Boyer (ICLR 2025)"

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

# Gaussian coordinates: g_k, w_1, w_2, ξ standard normal and independent.
g_k, w_1, w_2, xi = sympy.symbols("g_k w_1 w_2 xi", real=True)
E = Function("𝔼")  # expectation, printed as such in LaTeX and MathML
R = sympy.Symbol("ℛ")


def _signal_token_error(rec: DerivationRecorder) -> sympy.Expr:
    """E[(erf(λ⟨X_{J0},k⟩)⟨X_{J0},v⟩ − Y)²] for the informative token."""
    m = sqrt(d / 2)
    key = m * kappa + gamma * g_k
    # (g_k, g_v, g_{v*}) standard with Cov = ρ, η, ν: write g_v, g_{v*} through g_k and w_1, w_2.
    a = (nu - rho * eta) / sqrt(1 - rho**2)
    g_v = rho * g_k + sqrt(1 - rho**2) * w_1
    g_vstar = eta * g_k + a * w_1 + sqrt(1 - eta**2 - a**2) * w_2
    value = m * theta + gamma * g_v
    label = gamma * g_vstar + eps * xi
    error = (erf(lam * key) * value - label) ** 2
    rec.step(
        "Informative token in coordinates: ⟨X_J0,k⟩ = √(d/2)κ + γg_k, ⟨X_J0,v⟩ = √(d/2)θ + γg_v, "
        "Y = γg_v* + εξ, with g_v = ρg_k + √(1−ρ²)w₁ and g_v* = ηg_k + a w₁ + b w₂ "
        "(a = (ν−ρη)/√(1−ρ²), b² = 1 − η² − a²) so that the covariances are ρ, η, ν",
        Eq(E((sympy.Symbol("S") - sympy.Symbol("Y")) ** 2), E(error)),
    )
    conditional = sympy.simplify(gaussian_moments_expectation(error, [w_1, w_2, xi]))
    rec.step("Average over w₁, w₂, ξ (Gaussian moments), conditionally on g_k", Eq(E(error), E(conditional)))
    signal = gaussian_expectation(conditional, g_k)
    rec.step("Average over g_k by Stein's lemma from E erf(α+βZ) and ζ(α,β) = E erf(α+βZ)²", Eq(E(error), signal))
    return signal


def _noise_token_moments(rec: DerivationRecorder) -> tuple[sympy.Expr, sympy.Expr]:
    """E[N] and E[N²] for N = erf(λ⟨X_ℓ,k⟩)⟨X_ℓ,v⟩ on an uninformative token."""
    g_v = rho * g_k + sqrt(1 - rho**2) * w_1
    noise = erf(lam * g_k) * g_v
    first = gaussian_expectation(gaussian_moments_expectation(noise, [w_1]), g_k)
    second = gaussian_expectation(gaussian_moments_expectation(noise**2, [w_1]), g_k)
    N = sympy.Symbol("N")
    rec.step("Uninformative token: ⟨X_ℓ,k⟩ = g_k, ⟨X_ℓ,v⟩ = ρg_k + √(1−ρ²)w₁; first moment", Eq(E(N), first))
    rec.step("Uninformative token, second moment", Eq(E(N**2), sympy.simplify(second)))
    return first, second


@lru_cache(maxsize=None)
def population_risk_derivation() -> Derivation:
    """ℛ(κ, ν, θ, η, ρ) = E[(Y − T_λ^{k,v}(X))²]: the closed form of spec §3.1, derived step by step."""
    rec = DerivationRecorder(
        "single_location.population_risk",
        "Population risk of the erf-attention predictor in the five overlaps",
        f"{SOURCE}, §3.1 (closed form of the authors' dynamics.R)",
    )
    S, Y, N = sympy.symbols("S Y N")
    rec.step(
        "Risk of T(X) = Σ_ℓ erf(λ⟨X_ℓ,k⟩)⟨X_ℓ,v⟩ = S + Σ_{ℓ≠J0} N_ℓ (S: informative token)",
        Eq(R, E((Y - S - sympy.Sum(sympy.Symbol("N_ell"), (sympy.Symbol("ell"), 1, L - 1))) ** 2)),
    )
    decomposition = E((S - Y) ** 2) + 2 * (L - 1) * E(N) * E(S - Y) + (L - 1) * E(N**2) + (L - 1) * (L - 2) * E(N) ** 2
    rec.step("Given J0 the tokens are independent and the L−1 uninformative ones exchangeable", Eq(R, decomposition))
    signal_error = _signal_token_error(rec)
    signal_mean = gaussian_expectation(
        erf(lam * (sqrt(d / 2) * kappa + gamma * g_k)) * (sqrt(d / 2) * theta + gamma * rho * g_k), g_k
    )
    rec.step("Mean of the informative token's error (E Y = 0)", Eq(E(S - Y), signal_mean))
    noise_mean, noise_square = _noise_token_moments(rec)
    risk = signal_error + 2 * (L - 1) * noise_mean * signal_mean + (L - 1) * noise_square + (L - 1) * (L - 2) * noise_mean**2
    risk = sympy.expand(risk)
    rec.step("Assemble the four terms", Eq(R, risk))
    risk = sympy.collect(risk, [L, eps], evaluate=True)
    rec.step("Collect in L and ε", Eq(R, risk))
    return rec.finish()


@lru_cache(maxsize=None)
def population_risk_expression() -> sympy.Expr:
    """ℛ(κ, ν, θ, η, ρ; λ, γ, d, L, ε), including the noise ε² (spec §3.1 plus ε²)."""
    return population_risk_derivation().result.rhs


@lru_cache(maxsize=None)
def risk_gradient_expressions() -> tuple[sympy.Expr, ...]:
    """(∂ℛ/∂κ, ∂ℛ/∂ν, ∂ℛ/∂θ, ∂ℛ/∂η, ∂ℛ/∂ρ) by sympy differentiation."""
    risk = population_risk_expression()
    return tuple(sympy.diff(risk, x) for x in OVERLAPS)


@lru_cache(maxsize=None)
def manifold_is_invariant() -> bool:
    """True when sympy proves ∂ℛ/∂θ = ∂ℛ/∂η = ∂ℛ/∂ρ = 0 on M = {θ = η = ρ = 0} (spec §3.3, fact 1).

    Then ∇_kℛ ∥ k* and ∇_vℛ ∥ v* on M, so every projected gradient step maps M into M.
    """
    on_manifold = {theta: 0, eta: 0, rho: 0}
    return all(sympy.simplify(partial.subs(on_manifold)) == 0 for partial in risk_gradient_expressions()[2:])


@lru_cache(maxsize=None)
def oracle_risk_derivation() -> Derivation:
    """ℛ(T*) at (k, v) = (k*, v*): κ = ν = 1, θ = η = ρ = 0 (spec §2.2, ≈ Theorem 1)."""
    rec = DerivationRecorder(
        "single_location.oracle_risk",
        "Risk of the oracle predictor T* = T_λ^{k*,v*}",
        f"{SOURCE}, Theorem 1 (spec §2.2)",
    )
    risk = population_risk_expression()
    rec.step("The population risk in the overlaps", Eq(R, risk))
    oracle = risk.subs({kappa: 1, nu: 1, theta: 0, eta: 0, rho: 0})
    rec.step("Substitute κ = ν = 1, θ = η = ρ = 0", Eq(R, oracle))
    rec.step("Simplify", Eq(R, sympy.collect(sympy.simplify(oracle), [L, gamma**2])))
    return rec.finish()


@lru_cache(maxsize=None)
def linear_risk_derivation() -> Derivation:
    """Best linear predictor f_β(X) = Σ_ℓ⟨β_ℓ, X_ℓ⟩ (spec §2.4, Proposition 3)."""
    rec = DerivationRecorder(
        "single_location.linear_risk",
        "Risk of the best linear predictor",
        f"{SOURCE}, Proposition 3 (spec §2.4)",
    )
    c = sympy.Symbol("c", real=True)
    u = sympy.Symbol("u_ell")
    # u_ℓ = ⟨X_ℓ, v*⟩ is γg with probability 1/L (informative) and N(0,1) otherwise.
    second_moment = gamma**2 / L + (L - 1) / L
    cross = gamma**2 / L
    rec.step(
        "Only u_ℓ = ⟨X_ℓ,v*⟩ correlates with Y; by symmetry β_ℓ = c·v*. Moments over J0 ~ U{1..L}",
        sympy.Tuple(Eq(E(u**2), second_moment), Eq(E(u * sympy.Symbol("Y")), cross)),
    )
    risk_c = sympy.expand(c**2 * L * second_moment - 2 * c * L * cross + gamma**2 + eps**2)
    rec.step("Risk of β_ℓ = c·v* (tokens uncorrelated)", Eq(R, risk_c))
    (c_star,) = sympy.solve(sympy.diff(risk_c, c), c)
    rec.step("Stationarity ∂ℛ/∂c = 0", Eq(c, c_star))
    rec.step("Minimal risk", Eq(R, sympy.simplify(risk_c.subs(c, c_star))))
    return rec.finish()


def derivations() -> list[Derivation]:
    """Every derivation of this theory, for the report."""
    return [population_risk_derivation(), oracle_risk_derivation(), linear_risk_derivation()]


# ---------------------------------------------------------------------------------------------
# Numeric entry points (generated evaluators)
# ---------------------------------------------------------------------------------------------


def _check_parameters(lam_: Any, gamma_: Any, d_: Any, L_: Any, eps_: Any) -> None:
    import numpy as np

    def positive(name: str, value: Any, low: float = 0.0, inclusive: bool = False) -> None:
        v = np.asarray(value, dtype=float)
        bad = ~np.isfinite(v) | ((v < low) if inclusive else (v <= low))
        if np.any(bad):
            rng = f"≥ {low:g}" if inclusive else f"> {low:g}"
            raise ValueError(f"{name} must be finite and {rng}, got {value!r}")

    positive("lam", lam_)
    positive("gamma", gamma_)
    positive("d", d_, 1.0, inclusive=True)
    positive("L", L_, 1.0, inclusive=True)
    positive("eps", eps_, 0.0, inclusive=True)


def _check_overlaps(values: tuple) -> None:
    import numpy as np

    for name, value in zip(("kappa", "nu", "theta", "eta", "rho"), values):
        v = np.asarray(value, dtype=float)
        if np.any(~np.isfinite(v)) or np.any(np.abs(v) > 1 + 1e-12):
            raise ValueError(f"{name} is an overlap of unit vectors and must lie in [-1, 1], got {value!r}")


def population_risk_from_overlaps(kappa_, nu_, theta_, eta_, rho_, *, lam, gamma, d, L, eps, backend=None):
    """ℛ(κ, ν, θ, η, ρ) including ε² (generated from :func:`population_risk_expression`)."""
    _check_parameters(lam, gamma, d, L, eps)
    _check_overlaps((kappa_, nu_, theta_, eta_, rho_))
    f = evaluator(population_risk_expression(), OVERLAPS + PARAMETERS, backend)
    return f(kappa_, nu_, theta_, eta_, rho_, lam, gamma, d, L, eps)


def risk_gradient_from_overlaps(kappa_, nu_, theta_, eta_, rho_, *, lam, gamma, d, L, eps, backend=None):
    """(ℛ_κ, ℛ_ν, ℛ_θ, ℛ_η, ℛ_ρ): the partial derivatives of ℛ in the overlaps (sympy diff)."""
    _check_parameters(lam, gamma, d, L, eps)
    _check_overlaps((kappa_, nu_, theta_, eta_, rho_))
    f = evaluator(risk_gradient_expressions(), OVERLAPS + PARAMETERS, backend)
    return f(kappa_, nu_, theta_, eta_, rho_, lam, gamma, d, L, eps)


def overlaps(k, v, k_star, v_star, xp=None):
    """(κ, ν, θ, η, ρ) = (⟨k,k*⟩, ⟨v,v*⟩, ⟨v,k*⟩, ⟨k,v*⟩, ⟨k,v⟩) over the last axis."""
    import numpy as np

    xp = np if xp is None else xp
    dot = lambda a, b: xp.sum(a * b, axis=-1)  # noqa: E731
    return dot(k, k_star), dot(v, v_star), dot(v, k_star), dot(k, v_star), dot(k, v)


def _check_unit_vectors(**vectors) -> None:
    import numpy as np

    for name, value in vectors.items():
        arr = np.asarray(value.get() if hasattr(value, "get") else value, dtype=float)
        if arr.ndim < 1 or arr.shape[-1] < 4:
            raise ValueError(f"{name} must have a last axis of length d ≥ 4, got shape {arr.shape}")
        norms = np.linalg.norm(arr, axis=-1)
        if np.any(np.abs(norms - 1) > 1e-8):
            raise ValueError(f"{name} must be a unit vector (the closed form assumes ‖{name}‖ = 1), got norm {norms}")


def population_risk(k, v, k_star, v_star, lam, gamma, d, L, eps, backend=None):
    """ℛ(k, v) = E[(Y − T_λ^{k,v}(X))²] for unit k, v and orthonormal k*, v* (spec §3.1, with ε²)."""
    _check_unit_vectors(k=k, v=v, k_star=k_star, v_star=v_star)
    import numpy as np

    cross = float(np.asarray(k_star, dtype=float) @ np.asarray(v_star, dtype=float))
    if abs(cross) > 1e-8:
        raise ValueError(f"k_star and v_star must be orthogonal, got ⟨k*, v*⟩ = {cross:.3g}")
    xp = getattr(backend, "xp", np)
    return population_risk_from_overlaps(*overlaps(xp.asarray(k), xp.asarray(v), xp.asarray(k_star), xp.asarray(v_star), xp),
                                         lam=lam, gamma=gamma, d=d, L=L, eps=eps, backend=backend)


def oracle_risk(lam, d, L, gamma, eps, backend=None):
    """ℛ(T*) = ε² + γ²[1 − 2erf(λ√d/√(2(1+2λ²γ²))) + ζ(λ√(d/2), λγ)] + (L−1)ζ(0, λ)  (spec §2.2)."""
    _check_parameters(lam, gamma, d, L, eps)
    f = evaluator(oracle_risk_derivation().result.rhs, PARAMETERS, backend)
    return f(lam, gamma, d, L, eps)


@lru_cache(maxsize=None)
def _oracle_excess_mpmath():
    expression = oracle_risk_derivation().result.rhs.subs(eps, 0)
    return mpmath_evaluator(expression, (lam_symbol, gamma_symbol, d_symbol, L_symbol))


def oracle_excess_risk_high_precision(lam, d, L, gamma, dps=None) -> float:
    """ℛ(T*) − ε² evaluated with ``dps`` digits (mpmath; by default enough for 15 significant
    digits of erfc(λ√(d/2))², i.e. 25 + 2a²/ln 10 with a = λ√(d/2)).

    In float64 the bracket 1 − 2erf(a) + ζ of Theorem 1 cancels below 1e-16, while it decays like
    erfc(λ√(d/2))²; the asymptotic claims need it resolved, hence the extended precision.
    """
    import mpmath

    _check_parameters(lam, gamma, d, L, 0.0)
    f = _oracle_excess_mpmath()
    if dps is None:
        dps = 25 + int(2 * lam**2 * d / 2 / math.log(10)) + 1
    with mpmath.workdps(dps):
        return float(f(mpmath.mpf(lam), mpmath.mpf(gamma), mpmath.mpf(d), mpmath.mpf(L)))


def linear_risk(L, gamma, eps, backend=None):
    """Risk of the best linear predictor: ε² + γ² − γ⁴/(γ² + L − 1)  (spec §2.4, Proposition 3)."""
    _check_parameters(1.0, gamma, 4, L, eps)
    f = evaluator(linear_risk_derivation().result.rhs, (gamma_symbol, L_symbol, eps_symbol), backend)
    return f(gamma, L, eps)
