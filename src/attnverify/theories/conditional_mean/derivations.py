"""Attention as a conditional mean (Zhang, Liu, Cai, Wang, Wang, 2022), derived symbolically.

The paper's body could not be recovered: every statement here follows the research note
``docs/papers/conditional_mean.md``, which separates the abstract's claims from reconstructions.
Tokens are exchangeable given a latent z; attention with score aᵀk (a = W q) is the self-normalised
estimator Σ_ℓ w_ℓ v_ℓ / Σ_ℓ w_ℓ with w_ℓ = e^{aᵀk_ℓ}, i.e. a Nadaraya–Watson estimator of the value
given the key (note §3.1). Derived here:

* the self-normalised ratio expansion, MSE = C/L + D/L² + O(L⁻³) and bias = B/L + O(L⁻²), in terms
  of tilted moments of the weights (note §3.2, delta method carried one order further);
* Gaussian keys with linear values: the large-L limit m∞ = A(μ + Σa) + b, the desired parameter
  a = Σ⁻¹(q − μ) that makes it E[v | k = q], and C, B, D in closed form;
* a non-linear conditional mean with a fixed-bandwidth RBF kernel (note §3.2, P6): the persistent
  limit m_h(q) ≠ sin(ωq) and its C, B, D;
* the latent posteriors of note §2.3: the conjugate Gaussian model (M1), the finite-latent model
  whose posterior is a softmax attention (M2), the linear-Gaussian model whose posterior mean is
  ridge / conditional-mean-embedding attention (M3), and softmax = RBF weights for equal-norm keys.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
import sympy
from sympy import Eq, I, Rational, exp, oo, sqrt

from ...base import arguments
from ...derivations.gaussian import Expectation, gaussian
from ...derivations.steps import function

from .theory import SOURCE, theory

E = sympy.Function("𝔼")
L = sympy.Symbol("L", positive=True)

# Tilted moments of the weights (generic ratio expansion): R_t = E[w^t]/E[w]^t, and under the law
# tilted by w^t, e1_t = E_t[v − m∞], e2_t = E_t[‖v − m∞‖²].
R2, R3 = sympy.symbols("R_2 R_3", positive=True)
e1_2, e1_3 = sympy.symbols("e_12 e_13", real=True)
e2_2, e2_3 = sympy.symbols("e_22 e_23", nonnegative=True)
C_, D_, B_, B2_ = sympy.symbols("C D B B_2")

# Gaussian keys, linear values (invariants of a = W q, Σ, A, σ).
score_variance = sympy.Symbol("s^2", nonnegative=True)  # aᵀΣa
shift_norm_sq = sympy.Symbol("beta^2", nonnegative=True)  # ‖AΣa‖²
value_spread = sympy.Symbol("tau^2", nonnegative=True)  # tr(AΣAᵀ)
noise_total = sympy.Symbol("nu^2", nonnegative=True)  # d_v σ²
GAUSSIAN_INVARIANTS = (score_variance, shift_norm_sq, value_spread, noise_total)

# Fixed-bandwidth RBF attention on k ~ N(0, s²), v = sin(ωk) + noise (1-D, note §3.2 / P6).
q = sympy.Symbol("q", real=True)
key_sd = sympy.Symbol("s", positive=True)
bandwidth = sympy.Symbol("h", positive=True)
frequency = sympy.Symbol("omega", positive=True)
value_noise = sympy.Symbol("sigma_v", nonnegative=True)
BANDWIDTH_PARAMETERS = (q, key_sd, bandwidth, frequency, value_noise)

# Conjugate Gaussian mean model (M1), one coordinate.
z = sympy.Symbol("z", real=True)
prior_sd = sympy.Symbol("tau", positive=True)
token_sd = sympy.Symbol("sigma", positive=True)
token_mean = sympy.Symbol("xbar", real=True)


# ---------------------------------------------------------------------------------------------
# The self-normalised ratio expansion (generic)
# ---------------------------------------------------------------------------------------------


def _collect(expression: sympy.Expr, order: int) -> list[sympy.Expr]:
    """Coefficients of L⁻¹ … L⁻ᵒʳᵈᵉʳ in the large-L expansion of ``expression``."""
    eps = sympy.Symbol("epsilon", positive=True)
    series = sympy.expand(sympy.series(expression.subs(L, 1 / eps), eps, 0, order + 1).removeO())
    return [series.coeff(eps, j) for j in range(1, order + 1)]


@theory.derivation(name="ratio_expansion", title="Bias and mean-squared error of self-normalised attention in powers of 1/L",
                   source=f"{SOURCE}, note §3.2 (delta method), carried to second order")
def ratio_expansion_derivation(step) -> None:
    """MSE and bias of Σw_ℓv_ℓ/Σw_ℓ around m∞ = E[wv]/E[w], both to O(L⁻²)."""
    x = sympy.Symbol("x", real=True)
    mu_uu, mu_uus, mu_ss, mu_us, mu_uss = sympy.symbols("mu_uu mu_uus mu_ss mu_us mu_uss", real=True)
    u_bar, s_bar = sympy.symbols("ubar sbar", real=True)
    attn, m_inf, mse = sympy.symbols("attn m_inf MSE")
    w, v = sympy.symbols("w v", real=True)  # one token's weight and value (one coordinate), of unspecified law
    ell = sympy.Symbol("ell", integer=True, positive=True)
    w_, v_ = sympy.IndexedBase("w"), sympy.IndexedBase("v")
    mean_w = Expectation(w, w)
    step(
        "Attention over L i.i.d. tokens (weights w_ℓ, values v_ℓ), its limit m∞ = E[wv]/E[w], and the means ū, s̄ "
        "over the tokens of u = w(v − m∞)/E[w] and s = w/E[w] − 1 (both mean zero)",
        sympy.Tuple(Eq(attn, sympy.Sum(w_[ell] * v_[ell], (ell, 1, L)) / sympy.Sum(w_[ell], (ell, 1, L))),
                    Eq(m_inf, Expectation(w * v, w, v) / mean_w),
                    Eq(u_bar, sympy.Sum(w_[ell] * (v_[ell] - m_inf), (ell, 1, L)) / (L * mean_w)),
                    Eq(s_bar, sympy.Sum(w_[ell] / mean_w - 1, (ell, 1, L)) / L)),
        kind="definition",
    )
    step("Then attention − m∞ = ū/(1 + s̄)", Eq(attn - m_inf, u_bar / (1 + s_bar)))
    inverse = sympy.series((1 + x) ** -1, x, 0, 4).removeO()
    inverse_square = sympy.series((1 + x) ** -2, x, 0, 3).removeO()
    step("Expand (1 + s̄)⁻¹ and (1 + s̄)⁻² (s̄ = O_p(L^{-1/2}))",
         Eq(sympy.Tuple((1 + x) ** -1, (1 + x) ** -2),
            sympy.Tuple(inverse + sympy.Order(x**4), inverse_square + sympy.Order(x**3))))
    # moments of means of i.i.d. mean-zero terms: only index patterns with every index repeated
    # survive; terms of order L⁻³ and beyond are dropped (each line keeps the exact pair counts)
    dropped = sympy.Order(L**-3, (L, oo))  # the terms of order L⁻³ and beyond
    bias_terms = [u_bar * s_bar**j for j in range(4)]
    mse_terms = [u_bar**2 * s_bar**j for j in range(3)]
    bias_moments = [0, mu_us / L, mu_uss / L**2, 3 * L * (L - 1) * mu_us * mu_ss / L**4 + dropped]
    mse_moments = [mu_uu / L, mu_uus / L**2, L * (L - 1) * (mu_uu * mu_ss + 2 * mu_us**2) / L**4 + dropped]
    step(
        "Take expectations of the expansions (the remainders are O(L⁻³) under moment conditions on w and v); "
        "moments of means of L i.i.d. mean-zero terms, where only index patterns with every index repeated survive "
        "(μ_us = E[us], μ_uss = E[us²], … for one token)",
        sympy.Tuple(
            Eq(E(attn - m_inf), sum(inverse.coeff(x, j) * E(term) for j, term in enumerate(bias_terms)) + dropped),
            Eq(E(mse), sum(inverse_square.coeff(x, j) * E(term) for j, term in enumerate(mse_terms)) + dropped),
            *(Eq(E(term), value) for term, value in zip(bias_terms + mse_terms, bias_moments + mse_moments))),
        kind="assumption",
    )
    bias = sum(inverse.coeff(x, j) * bias_moments[j] for j in range(4)).removeO()
    mse_value = sum(inverse_square.coeff(x, j) * mse_moments[j] for j in range(3)).removeO()
    step("Insert the moments: E[ū s̄] = μ_us/L, E[ū s̄²] = μ_uss/L², E[ū s̄³] = 3L(L−1)μ_us μ_ss/L⁴ + O(L⁻³)",
         Eq(E(attn - m_inf), bias + dropped))
    step("E‖ū‖² = μ_uu/L, E[‖ū‖²s̄] = μ_uus/L², E[‖ū‖²s̄²] = L(L−1)(μ_uu μ_ss + 2‖μ_us‖²)/L⁴ + O(L⁻³)",
         Eq(E(mse), mse_value + dropped))
    b1, b2 = _collect(bias, 2)
    c, d = _collect(mse_value, 2)
    step("Collect powers of 1/L", Eq(sympy.Tuple(E(attn - m_inf), E(mse)),
                                     sympy.Tuple(b1 / L + b2 / L**2 + dropped, c / L + d / L**2 + dropped)),
         name="expansion")
    step("The constants: MSE = C/L + D/L² + O(L⁻³), E[attn − m∞] = B/L + B₂/L² + O(L⁻³)",
         Eq(sympy.Tuple(C_, D_, B_, B2_), sympy.Tuple(c, d, b1, b2)), kind="definition")
    u, s_ = sympy.symbols("u s", real=True)
    tilted = {
        mu_uu: R2 * e2_2,
        mu_uus: R3 * e2_3 - R2 * e2_2,
        mu_ss: R2 - 1,
        mu_us: R2 * e1_2,
        mu_uss: R3 * e1_3 - 2 * R2 * e1_2,
    }
    step(
        "One token's moments: u = w(v − m∞)/E[w], s = w/E[w] − 1, μ_xy… = E[xy…]; the tilted moments (E_t is the "
        "key law reweighted by w^t/E[w^t]): R_t = E[w^t]/E[w]^t, e₁,t = E_t[v − m∞], e₂,t = E_t(v − m∞)²",
        sympy.Tuple(
            Eq(u, w * (v - m_inf) / mean_w), Eq(s_, w / mean_w - 1),
            *(Eq(name, Expectation(value, w, v)) for name, value in (
                (mu_uu, u**2), (mu_uus, u**2 * s_), (mu_ss, s_**2), (mu_us, u * s_), (mu_uss, u * s_**2))),
            Eq(R2, Expectation(w**2, w) / mean_w**2), Eq(R3, Expectation(w**3, w) / mean_w**3),
            *(Eq(name, Expectation(w**t * (v - m_inf) ** power, w, v) / Expectation(w**t, w))
              for name, t, power in ((e1_2, 2, 1), (e1_3, 3, 1), (e2_2, 2, 2), (e2_3, 3, 2)))),
        kind="definition",
    )
    step(
        "In tilted moments (E[w(v − m∞)] = 0 by the definition of m∞)",
        Eq(sympy.Tuple(*tilted), sympy.Tuple(*tilted.values())),
    )
    result = sympy.Tuple(*(sympy.expand(e.subs(tilted)) for e in (c, d, b1, b2)))
    step("Result: MSE = C/L + D/L² + O(L⁻³), E[attn − m∞] = B/L + B₂/L² + O(L⁻³)",
         Eq(sympy.Tuple(C_, D_, B_, B2_), result), name="constants")


@lru_cache(maxsize=None)
def ratio_constants_in_moments() -> tuple[tuple[sympy.Symbol, ...], tuple[sympy.Expr, ...]]:
    """((μ_uu, μ_uus, μ_ss, μ_us, μ_uss), (C, D, B, B₂)): the expansion before the tilted moments
    are substituted (for checking the substitution against quadrature of the raw moments)."""
    bias, mse = (e.removeO() for e in ratio_expansion_derivation().result("expansion").rhs)
    c, d = _collect(mse, 2)
    b1, b2 = _collect(bias, 2)
    symbols = tuple(sympy.symbols("mu_uu mu_uus mu_ss mu_us mu_uss", real=True))
    return symbols, (c, d, b1, b2)


def _ratio_constants() -> tuple[sympy.Expr, ...]:
    """(C, D, B, B₂) in the tilted moments R₂, R₃, e₁,₂, e₁,₃, e₂,₂, e₂,₃ (e₁ along one direction)."""
    return tuple(ratio_expansion_derivation().result("constants").rhs)


# ---------------------------------------------------------------------------------------------
# Gaussian keys with linear values
# ---------------------------------------------------------------------------------------------


MGF_SYMBOLS = (sympy.Symbol("t", real=True), sympy.Symbol("m_y", real=True), sympy.Symbol("y", real=True),
               sympy.Symbol("s_y", positive=True))
"""(t, m, y, s) of the Gaussian MGF E[e^{ty}], y ~ N(m, s²)."""


@lru_cache(maxsize=None)
def gaussian_mgf() -> sympy.Expr:
    """E[e^{t y}] for y ~ N(m, s²), integrated by sympy (a function of t, m, s)."""
    t, m, y, s = MGF_SYMBOLS
    density = exp(-((y - m) ** 2) / (2 * s**2)) / sqrt(2 * sympy.pi * s**2)
    return sympy.simplify(sympy.integrate(exp(t * y) * density, (y, -oo, oo)))


def _ratio_constants_assumed(step) -> None:
    """The ratio expansion's result, restated as an assumption of a derivation that specialises it."""
    step("The constants of the ratio expansion in the tilted moments (derivation ratio_expansion, result "
         "`constants`)", ratio_expansion_derivation().result("constants"), kind="assumption")


@theory.derivation(name="gaussian_limit", title="Softmax attention on Gaussian keys with linear values: limit, desired parameter and error constants",
                   source=f"{SOURCE}, note §3.2 (P1–P4)")
def gaussian_limit_derivation(step) -> None:
    """m∞ = A(μ + Σa) + b, the desired parameter, and C, B, D for Gaussian keys / linear values."""
    t, m, y, s = MGF_SYMBOLS
    mgf = gaussian_mgf()
    step("Gaussian moment generating function, integrated: y ~ N(m, s²)",
         Eq(Expectation(exp(t * y), gaussian(y, m, s**2)), mgf))
    a_dot_mu = sympy.Symbol("a^T mu", real=True)
    weight_moment = mgf.subs({m: a_dot_mu, s: sqrt(score_variance)}, simultaneous=True)
    score_law = gaussian(y, a_dot_mu, score_variance)
    step("The score y = aᵀk of k ~ N(μ, Σ) is N(aᵀμ, s²) with s² = aᵀΣa, so E[w^t] = E[e^{ty}] = M(t)",
         Eq(Expectation(exp(t * y), score_law), weight_moment))
    ratio = sympy.simplify(weight_moment / weight_moment.subs(t, 1) ** t)
    step("Weight-moment ratio R_t = E[w^t]/E[w]^t",
         Eq(Expectation(exp(t * y), score_law) / Expectation(exp(y), score_law) ** t, ratio))

    # vector part: tilted law and the limit, with MatrixSymbols so that sympy differentiates log M
    d = sympy.Symbol("d", integer=True, positive=True)
    a_vec, mu_vec = sympy.MatrixSymbol("a", d, 1), sympy.MatrixSymbol("mu", d, 1)
    Sigma = sympy.MatrixSymbol("Sigma", d, d)
    log_mgf = a_vec.T * mu_vec + Rational(1, 2) * a_vec.T * Sigma * a_vec
    tilted_mean = log_mgf.diff(a_vec).subs(Sigma.T, Sigma).doit()
    d_v = sympy.Symbol("d_v", integer=True, positive=True)
    A, b = sympy.MatrixSymbol("A", d_v, d), sympy.MatrixSymbol("b", d_v, 1)
    tilted_key, m_inf = sympy.MatrixSymbol("E_1[k]", d, 1), sympy.MatrixSymbol("m_inf", d_v, 1)
    direction, shift = sympy.MatrixSymbol("X", d, 1), sympy.Symbol("epsilon", real=True)
    step(
        "Exponential tilting: the tilted key mean E[k e^{aᵀk}]/E[e^{aᵀk}] is ∇_a log E[e^{aᵀk}], and "
        "log E[e^{aᵀk}] = aᵀμ + aᵀΣa/2 for k ~ N(μ, Σ); along any direction X (Σ symmetric; tr of a 1 × 1 "
        "matrix is its entry)",
        Eq(sympy.Subs(sympy.Derivative(sympy.Trace(log_mgf.xreplace({a_vec: a_vec + shift * direction})), shift),
                      shift, 0), sympy.Trace(direction.T * tilted_mean), evaluate=False),
    )
    step(
        "So E_1[k] = μ + Σa, and the tilted covariance ∇²_a log M = Σ is unchanged: under w^t the keys are "
        "N(μ + tΣa, Σ). With v = Ak + b + ε (ε independent, mean zero), by the law of large numbers attention "
        "→ m∞ = E[wv]/E[w] = A E_1[k] + b",
        sympy.Tuple(Eq(tilted_key, tilted_mean, evaluate=False), Eq(m_inf, A * tilted_key + b)),
        kind="assumption",
    )
    limit = A * (mu_vec + Sigma * a_vec) + b
    step("The limit", Eq(m_inf, limit))
    q_vec = sympy.MatrixSymbol("q", d, 1)
    step("Desired parameter: m∞ = E[v | k = q] = Aq + b for every A iff E_1[k] = q", Eq(tilted_key, q_vec),
         kind="condition")
    step("that is, Σa = q − μ: a = Σ⁻¹(q − μ)", Eq(a_vec, Sigma.I * (q_vec - mu_vec)))
    # tilted moments of v − m∞ = A(k − μ − Σa) + ε, under the t-tilted law k ~ N(μ + tΣa, Σ)
    first = lambda tt: (tt - 1) * sqrt(shift_norm_sq)  # noqa: E731  (component along β = AΣa)
    second = lambda tt: (tt - 1) ** 2 * shift_norm_sq + value_spread + noise_total  # noqa: E731
    step(
        "Under w^t, v − m∞ = A(k − μ − Σa) + ε has mean (t − 1)β and second moment "
        "(t − 1)²‖β‖² + τ² + ν², with β = AΣa, τ² = tr(AΣAᵀ), ν² = d_v σ² (E‖X‖² = ‖E X‖² + tr Cov X for a "
        "Gaussian X; quoted)",
        Eq(sympy.Symbol("e_2t"), second(t)),
        kind="assumption",
    )
    _ratio_constants_assumed(step)
    values = {R2: ratio.subs(t, 2), R3: ratio.subs(t, 3), e1_2: first(2), e1_3: first(3),
              e2_2: second(2), e2_3: second(3)}
    c, dd, b1, b2 = (sympy.simplify(e.subs(values)) for e in _ratio_constants())
    norm = sqrt(shift_norm_sq)
    step("Bias along β = AΣa: L·E[attn − m∞] → (B/‖β‖)β, at R_t = e^{s²t(t−1)/2}, e₁,t = (t − 1)‖β‖ and "
         "e₂,t above", Eq(B_ / norm, sympy.simplify(b1 / norm)), substitute=values)
    step("Leading constant: L·E‖attn − m∞‖² → C", Eq(C_, sympy.factor(c)), substitute=values)
    step("Result: (C, D, B/‖β‖, B₂/‖β‖) in s² = aᵀΣa, ‖β‖², τ², ν²",
         Eq(sympy.Tuple(C_, D_, B_ / norm, B2_ / norm),
            sympy.Tuple(sympy.factor(c), dd, sympy.simplify(b1 / norm), sympy.simplify(b2 / norm))),
         name="constants", substitute=values)


@lru_cache(maxsize=None)
def gaussian_constant_expressions() -> tuple[sympy.Expr, ...]:
    """(C, D, B/‖β‖, B₂/‖β‖) in the invariants (s², ‖β‖², τ², ν²)."""
    return tuple(gaussian_limit_derivation().result("constants").rhs)


# ---------------------------------------------------------------------------------------------
# Fixed-bandwidth RBF attention on a non-linear conditional mean
# ---------------------------------------------------------------------------------------------


@theory.derivation(name="fixed_bandwidth_limit", title="RBF attention with a fixed bandwidth on a non-linear conditional mean: the persistent bias",
                   source=f"{SOURCE}, note §3.2 and P6 (k ~ N(0, s²), v = sin(ωk) + σ_v ξ, w = e^{{−(q−k)²/(2h²)}})")
def fixed_bandwidth_derivation(step) -> None:
    """m_h(q) = sin(ωm')e^{−ω²s'²/2} ≠ sin(ωq), and its C, B, D (note §3.2, P6)."""
    k, t = sympy.Symbol("k", real=True), sympy.Symbol("t", positive=True)
    xi = sympy.Symbol("xi", real=True)
    key_law, noise_law = gaussian(k, 0, key_sd**2), gaussian(xi)
    log_weight = -((q - k) ** 2) / (2 * bandwidth**2)
    log_tilted = -(k**2) / (2 * key_sd**2) + t * log_weight
    poly = sympy.Poly(sympy.expand(log_tilted), k)
    precision = -2 * poly.coeff_monomial(k**2)
    tilted_var = sympy.simplify(1 / precision)
    tilted_mean = sympy.simplify(poly.coeff_monomial(k) / precision)
    m_t, s_t2 = sympy.Symbol("m_t"), sympy.Symbol("s_t^2")
    step("The mean and variance of the key law reweighted by w^t",
         Eq(sympy.Tuple(m_t, s_t2), sympy.Tuple(tilted_mean, tilted_var)), kind="definition")
    constant = sympy.simplify(log_tilted + (k - tilted_mean) ** 2 / (2 * tilted_var))
    step("Complete the square in k: the reweighted key law is N(m_t, s_t²)",
         Eq(log_tilted, -((k - m_t) ** 2) / (2 * s_t2) + constant))
    density = exp(-(k**2) / (2 * key_sd**2)) / sqrt(2 * sympy.pi * key_sd**2)
    weight_moment = sympy.simplify(sympy.integrate(exp(log_tilted + k**2 / (2 * key_sd**2)) * density, (k, -oo, oo)))
    ratio = sympy.simplify(weight_moment / weight_moment.subs(t, 1) ** t)

    def mean(f, power):
        """E[w^power f] over the key (and the value noise) law."""
        f = sympy.sympify(f)
        laws = (key_law, noise_law) if f.has(xi) else (key_law,)
        return Expectation(exp(power * log_weight) * f, *laws)

    theta = sympy.Symbol("theta", positive=True)
    R_t, S_t, C_t = function("R"), function("S"), function("C")
    step(
        "The weights' moment ratio R(t) = E[w^t]/E[w]^t and the tilted means S(t, θ) = E_t[sin θk], "
        "C(t, θ) = E_t[cos θk], E_t[f] = E[w^t f]/E[w^t]",
        sympy.Tuple(Eq(R_t(t), mean(1, t) / mean(1, 1) ** t), Eq(S_t(t, theta), mean(sympy.sin(theta * k), t) / mean(1, t)),
                    Eq(C_t(t, theta), mean(sympy.cos(theta * k), t) / mean(1, t))),
        kind="definition",
    )
    step("R(t) by the Gaussian integral", Eq(R_t(t), ratio))
    # E_t[e^{iθk}] from the Gaussian MGF at the imaginary argument iθ
    mgf = gaussian_mgf()
    tt, mm, _, ss = MGF_SYMBOLS
    characteristic = mgf.subs({tt: I * theta, mm: tilted_mean, ss: sqrt(tilted_var)}, simultaneous=True)
    sine = sympy.simplify(sympy.im(sympy.expand_complex(characteristic)))
    cosine = sympy.simplify(sympy.re(sympy.expand_complex(characteristic)))
    step("E_t[sin θk] = Im E_t[e^{iθk}] and E_t[cos θk] = Re E_t[e^{iθk}] (the MGF at iθ)",
         sympy.Tuple(Eq(S_t(t, theta), sine), Eq(C_t(t, theta), cosine)))
    limit = sine.subs({theta: frequency, t: 1})
    m_h = sympy.Symbol("m_h")
    value = sympy.sin(frequency * k) + value_noise * xi
    step("Limit of attention as L → ∞ (law of large numbers): m_h(q) = E[wv]/E[w]",
         Eq(m_h, mean(value, 1) / mean(1, 1)), kind="definition")
    step("m_h(q) = E_1[sin ωk], not E[v | k = q] = sin(ωq)", Eq(m_h, limit))
    bias_to_truth = limit - sympy.sin(frequency * q)
    step("Persistent bias m_h(q) − sin(ωq); it vanishes only as h → 0",
         Eq(m_h - sympy.sin(frequency * q), bias_to_truth))

    def sin_mean(power):
        return sine.subs({theta: frequency, t: power})

    def second(power):
        sin_sq = (1 - cosine.subs({theta: 2 * frequency, t: power})) / 2
        return sin_sq - 2 * limit * sin_mean(power) + limit**2 + value_noise**2

    _ratio_constants_assumed(step)
    e_1, e_2 = function("e_1"), function("e_2")
    step("The tilted moments of the ratio expansion for this model: e₁(t) = E_t[v − m_h], e₂(t) = E_t(v − m_h)²",
         sympy.Tuple(Eq(e_1(t), mean(value - m_h, t) / mean(1, t)),
                     Eq(e_2(t), mean((value - m_h) ** 2, t) / mean(1, t))),
         kind="definition")
    step("By linearity (ξ is independent of the key: mean 0, variance 1 under any reweighting of k) and "
         "sin² x = (1 − cos 2x)/2",
         sympy.Tuple(Eq(e_1(t), S_t(t, frequency) - m_h),
                     Eq(e_2(t), (1 - C_t(t, 2 * frequency)) / 2 - 2 * m_h * S_t(t, frequency) + m_h**2
                        + value_noise**2)))
    step("At t = 2, 3 (the ratio expansion's R_t, e₁,t, e₂,t)",
         sympy.Tuple(Eq(R2, R_t(2)), Eq(R3, R_t(3)), Eq(e1_2, e_1(2)), Eq(e1_3, e_1(3)), Eq(e2_2, e_2(2)),
                     Eq(e2_3, e_2(3))),
         kind="definition")
    values = {R2: ratio.subs(t, 2), R3: ratio.subs(t, 3), e1_2: sin_mean(2) - limit, e1_3: sin_mean(3) - limit,
              e2_2: second(2), e2_3: second(3)}
    step("In closed form", Eq(sympy.Tuple(*values), sympy.Tuple(*values.values())))
    c, dd, b1, b2 = (e.subs(values) for e in _ratio_constants())
    step("Bias constant B = −R₂(E₂[sin ωk] − m_h)", Eq(B_, b1))
    step("Leading constant C = R₂(E₂[sin² ωk] − 2m_h E₂[sin ωk] + m_h² + σ_v²)", Eq(C_, c))
    step("Result: (m_h, m_h − sin ωq, C, D, B, B₂) in q, s, h, ω, σ_v",
         Eq(sympy.Tuple(m_h, m_h - sympy.sin(frequency * q), C_, D_, B_, B2_),
            sympy.Tuple(limit, bias_to_truth, c, dd, b1, b2)), name="constants")


FIXED_BANDWIDTH_NAMES = ("limit", "bias_to_truth", "constant", "second_order", "bias_constant", "second_order_bias")


@lru_cache(maxsize=None)
def fixed_bandwidth_expressions() -> dict[str, sympy.Expr]:
    """m_h, m_h − sin(ωq), C, D, B, B₂ as expressions in (q, s, h, ω, σ_v)."""
    return dict(zip(FIXED_BANDWIDTH_NAMES, fixed_bandwidth_derivation().result("constants").rhs))


# ---------------------------------------------------------------------------------------------
# Latent posteriors (note §2.3) and the softmax/RBF identity (note §3.1)
# ---------------------------------------------------------------------------------------------


def _token_sums(ell: sympy.Symbol) -> tuple[sympy.IndexedBase, tuple[Eq, ...], sympy.Symbol, sympy.Symbol]:
    """x_ℓ, and the definitions S₁ = Σ_ℓ x_ℓ, S₂ = Σ_ℓ x_ℓ², x̄ = S₁/L (with S₁, S₂)."""
    x = sympy.IndexedBase("x")
    sum_x, sum_x2 = sympy.symbols("S_1 S_2", real=True)
    return x, (Eq(sum_x, sympy.Sum(x[ell], (ell, 1, L))), Eq(sum_x2, sympy.Sum(x[ell] ** 2, (ell, 1, L))),
               Eq(token_mean, sum_x / L)), sum_x, sum_x2


@theory.derivation(name="conjugate_posterior", title="Latent posterior of the conjugate Gaussian model (M1): sufficiency of (L, x̄)",
                   source=f"{SOURCE}, note §2.3 M1 (one coordinate; coordinates are independent)")
def conjugate_posterior_derivation(step) -> None:
    """M1: z ~ N(0, τ²), x_ℓ | z ~ N(z, σ²): the posterior is N(μ_L, s_L²), a function of (L, x̄) only."""
    ell = sympy.Symbol("ell", integer=True, positive=True)
    x, sums, sum_x, sum_x2 = _token_sums(ell)
    log_p = sympy.Symbol("log p(z|X)")
    step("Bayes: log p(z | X) is the log prior N(0, τ²) plus Σ_ℓ log N(x_ℓ; z, σ²), up to a constant free of z; "
         "S₁ = Σx_ℓ = L x̄, S₂ = Σx_ℓ²",
         sympy.Tuple(*sums, Eq(log_p, -(z**2) / (2 * prior_sd**2)
                               - sympy.Sum((x[ell] - z) ** 2, (ell, 1, L)) / (2 * token_sd**2))),
         kind="definition")
    log_post = -(z**2) / (2 * prior_sd**2) - (sum_x2 - 2 * z * sum_x + L * z**2) / (2 * token_sd**2)
    step("Σ_ℓ(x_ℓ − z)² = S₂ − 2zS₁ + Lz²", Eq(log_p, log_post))
    poly = sympy.Poly(sympy.expand(log_post), z)
    precision = sympy.simplify(-2 * poly.coeff_monomial(z**2))
    mean = sympy.simplify((poly.coeff_monomial(z) / precision).subs(sum_x, L * token_mean))
    mu_L, s_L = sympy.Symbol("mu_L"), sympy.Symbol("s_L")
    step("log p is quadratic in z, so the posterior is N(μ_L, s_L²) with s_L⁻² = −∂²log p/∂z²",
         Eq(s_L, (-sympy.Derivative(log_p, (z, 2))) ** Rational(-1, 2)), kind="definition")
    step("Posterior precision (the coefficient of −z²/2)", Eq(1 / s_L**2, precision))
    step("and μ_L is its maximum: ∂log p/∂z = 0 at z = μ_L",
         Eq(sympy.Subs(sympy.Derivative(log_p, z), z, mu_L), 0), kind="condition")
    step("Posterior mean (S₂ drops out: the posterior depends on X only through L and x̄)", Eq(mu_L, mean),
         name="mu_L")
    step("Posterior standard deviation, shrinking like σ/√L", Eq(s_L, sympy.simplify(1 / sqrt(precision))),
         name="s_L")


@theory.derivation(name="finite_latent_posterior", title="Finite-latent model (M2): the latent posterior is exactly a softmax attention",
                   source=f"{SOURCE}, note §2.3 M2")
def finite_latent_derivation(step) -> None:
    """M2: z ∈ {1..M}, x_ℓ | z = m ~ N(μ_m, I): P(z = m | X) = softmax_m(log π_m + L x̄ᵀμ_m − L‖μ_m‖²/2)."""
    log_prior, mu_m = sympy.Symbol("log pi_m", real=True), sympy.Symbol("mu_m", real=True)
    ell = sympy.Symbol("ell", integer=True, positive=True)
    x, sums, sum_x, sum_x2 = _token_sums(ell)
    log_p = sympy.Symbol("log p(z=m, X)")
    step("Bayes: log π_m + Σ_ℓ log N(x_ℓ; μ_m, 1) per coordinate, up to terms free of m; S₁ = Σx_ℓ = L x̄, "
         "S₂ = Σx_ℓ²",
         sympy.Tuple(*sums, Eq(log_p, log_prior - sympy.Sum((x[ell] - mu_m) ** 2, (ell, 1, L)) / 2)),
         kind="definition")
    log_joint = log_prior - (sum_x2 - 2 * mu_m * sum_x + L * mu_m**2) / 2
    step("Σ_ℓ(x_ℓ − μ_m)² = S₂ − 2μ_m S₁ + Lμ_m²", Eq(log_p, log_joint))
    score = sympy.expand(log_joint + sum_x2 / 2).subs(sum_x, L * token_mean)
    step("Drop S₂/2 (the same for every m): the softmax score of latent m", Eq(log_p + sum_x2 / 2, score))
    rbf = log_prior - L * (token_mean - mu_m) ** 2 / 2 + L * token_mean**2 / 2
    if sympy.expand(score - rbf) != 0:
        raise ArithmeticError("the dot-product and RBF forms of the finite-latent score differ")
    step(
        "The score is dot-product attention from the query L·x̄ to the key μ_m with bias "
        "log π_m − L‖μ_m‖²/2, equivalently RBF attention from x̄ at bandwidth 1/√L (L x̄²/2 is common to all m)",
        Eq(score, rbf, evaluate=False),
    )


@theory.derivation(name="softmax_equals_rbf", title="Softmax attention equals Gaussian-RBF (Nadaraya–Watson) weights for equal-norm keys",
                   source=f"{SOURCE}, note §3.1")
def softmax_rbf_derivation(step) -> None:
    """softmax(Kq) = softmax(−‖q − k_ℓ‖²/2) when every key has the same norm c."""
    d = sympy.Symbol("d", integer=True, positive=True)
    qv, kv = sympy.MatrixSymbol("q", d, 1), sympy.MatrixSymbol("k_l", d, 1)
    step("−‖q − k_ℓ‖²/2 = qᵀk_ℓ − ‖q‖²/2 − ‖k_ℓ‖²/2, and ‖k_ℓ‖ = c for every ℓ: the last two terms are the "
         "same for every token",
         Eq(-((qv - kv).T * (qv - kv)) / 2, qv.T * kv - qv.T * qv / 2 - kv.T * kv / 2))
    scores, ell, j = sympy.IndexedBase("s"), sympy.Symbol("ell", integer=True), sympy.Symbol("j", integer=True)
    shift = sympy.Symbol("delta", real=True)
    step("A softmax is unchanged by a shift δ = −‖q‖²/2 − c²/2 common to all tokens (score s_ℓ = qᵀk_ℓ), so "
         "the weights coincide",
         Eq(exp(scores[ell]) / sympy.Sum(exp(scores[j]), (j, 1, L)),
            exp(scores[ell] + shift) / sympy.Sum(exp(scores[j] + shift), (j, 1, L))))


@theory.derivation(name="ridge_posterior", title="Linear-Gaussian model (M3): the posterior mean is ridge / conditional-mean-embedding attention",
                   source=f"{SOURCE}, note §2.3 M3 and §3.1 (CME attention with a linear kernel)")
def ridge_posterior_derivation(step) -> None:
    """M3: E[A | X] q = Vᵀ(KKᵀ + λI)⁻¹Kq (kernel form) = VᵀK(KᵀK + λI)⁻¹q (weight form), λ = σ²/τ²."""
    lam = sympy.Symbol("lambda", positive=True)
    noise = sympy.Symbol("sigma^2", positive=True)
    Lsym, d = sympy.Symbol("L", integer=True, positive=True), sympy.Symbol("d", integer=True, positive=True)
    K, V = sympy.MatrixSymbol("K", Lsym, d), sympy.MatrixSymbol("V", Lsym, 1)
    A = sympy.MatrixSymbol("A", 1, d)
    qv = sympy.MatrixSymbol("q", d, 1)
    Id, IL = sympy.Identity(d), sympy.Identity(Lsym)
    residual = V - K * A.T
    log_p = sympy.Symbol("log p(A|X)")
    step("Rows of A i.i.d. N(0, τ²I), v_ℓ = Ak_ℓ + ε with ε ~ N(0, σ²): log p(A | X) up to a constant, with "
         "λ = σ²/τ² (one output row)",
         Eq(log_p, -(lam * sympy.Trace(A * A.T) + sympy.Trace(residual.T * residual)) / (2 * noise)),
         kind="definition")
    direction, shift = sympy.MatrixSymbol("X", 1, d), sympy.Symbol("epsilon", real=True)
    step("The posterior is Gaussian, so its mean is its mode: log p(A + εX | X) is stationary at ε = 0 along "
         "every direction X", Eq(sympy.Subs(sympy.Derivative(log_p, shift), shift, 0), 0),
         kind="condition", substitute={A: A + shift * direction})
    mean = V.T * K * (K.T * K + lam * Id).I
    step("Posterior mean E[A | X] = VᵀK(KᵀK + λI)⁻¹ (Gaussian conjugacy), so E[A | X]q = VᵀK(KᵀK + λI)⁻¹q",
         Eq(A, mean))
    posterior = mean * qv
    cme = V.T * (K * K.T + lam * IL).I * K * qv
    step("Push-through identity K(KᵀK + λI)⁻¹ = (KKᵀ + λI)⁻¹K: CME attention with the linear kernel "
         "G = KKᵀ, κ_K(q) = Kq", Eq(posterior, cme))
    # the push-through identity, on a generic 3×2 instance: each entry a rational function of the k's and λ
    Kx = sympy.Matrix(3, 2, sympy.symbols("k1:7", real=True))
    lhs = Kx * (Kx.T * Kx + lam * sympy.eye(2)).inv()
    rhs = (Kx * Kx.T + lam * sympy.eye(3)).inv() * Kx
    step("The push-through identity for a generic 3 × 2 key matrix, entry by entry",
         Eq(sympy.ImmutableMatrix(lhs.applyfunc(sympy.cancel)), sympy.ImmutableMatrix(rhs.applyfunc(sympy.cancel)),
            evaluate=False))


# ---------------------------------------------------------------------------------------------
# Numeric entry points (generated evaluators)
# ---------------------------------------------------------------------------------------------


def _reals(name: str, value: Any, be: Any, *, low: float = -math.inf, open_low: bool = False) -> Any:
    """A finite real number (> or ≥ ``low``), or an array of them (lists accepted): the evaluators broadcast."""
    return arguments.reals(name, value, be, low=low, open_low=open_low, lists=True)


def _evaluate(function: str, results: tuple, symbols: tuple, be: Any, values: dict[str, Any], growth: str) -> tuple:
    """The derivation's named ``results`` (`DerivedFunction`s, each a value or a tuple of them) at checked ``values``
    (keyed by parameter name, in the order of ``symbols``), as one tuple; a ValueError naming the parameters when they
    do not broadcast or a result overflows float64."""
    arguments.broadcastable(values, f"the array arguments of {function}")
    names = [s.name for s in symbols]
    try:
        out = ()
        for result in results:
            value = result.array_function(*names, backend=be)(*values.values())
            out += value if isinstance(value, tuple) else (value,)
    except ValueError:  # the evaluator refuses a NaN result, which here can only come from an overflow
        out = None
    if out is None or not all(bool(be.xp.all(be.xp.isfinite(o))) for o in out):
        raise ValueError(f"{function} overflows float64 at {', '.join(values)} = "
                         f"{', '.join(_shown(v) for v in values.values())}: {growth}")
    return out


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else f"array of shape {tuple(np.shape(value))}"


GAUSSIAN_CONSTANT_NAMES = ("constant", "second_order", "bias_factor", "second_order_bias_factor")


def gaussian_error_constants(score_var, shift_sq, spread, noise, backend=None) -> dict:
    """C, D, B/‖β‖, B₂/‖β‖ of softmax attention on Gaussian keys with linear values.

    Arguments (numbers ≥ 0, or arrays of them) are the invariants s² = aᵀΣa, ‖β‖² = ‖AΣa‖²,
    τ² = tr(AΣAᵀ), ν² = d_v σ²; then E‖attn − m∞‖² = C/L + D/L² + O(L⁻³) and
    E[attn − m∞] = (B/L + B₂/L²)·β/‖β‖ + O(L⁻³). ``backend``: a Backend, 'numpy', 'cupy' or None.
    """
    be = arguments.backend(backend)
    values = {name: _reals(name, value, be, low=0.0) for name, value in
              (("score_var", score_var), ("shift_sq", shift_sq), ("spread", spread), ("noise", noise))}
    out = _evaluate("gaussian_error_constants", (gaussian_limit_derivation.evaluator("constants"),), GAUSSIAN_INVARIANTS,
                    be, values,
                    "the constants grow like (shift_sq + spread + noise)·exp(3·score_var), which must stay below 1e308")
    return dict(zip(GAUSSIAN_CONSTANT_NAMES, out))


def fixed_bandwidth_constants(query, key_sd, bandwidth, frequency, noise_sd, backend=None) -> dict:
    """m_h(q), m_h(q) − sin(ωq), C, D, B, B₂ of RBF attention at bandwidth h (note P6).

    Arguments are numbers or arrays (broadcast): query q real; key_sd s, bandwidth h, frequency ω > 0;
    noise_sd σ_v ≥ 0. ``backend``: a Backend, 'numpy', 'cupy' or None.
    """
    be = arguments.backend(backend)
    values = {"query": _reals("query", query, be)}
    for name, value in (("key_sd", key_sd), ("bandwidth", bandwidth), ("frequency", frequency)):
        values[name] = _reals(name, value, be, low=0.0, open_low=True)
    values["noise_sd"] = _reals("noise_sd", noise_sd, be, low=0.0)
    out = _evaluate("fixed_bandwidth_constants", (fixed_bandwidth_derivation.evaluator("constants"),),
                    BANDWIDTH_PARAMETERS, be, values,
                    "the constants grow like (key_sd/bandwidth)²·exp(query²/key_sd²), which must stay below 1e308")
    return dict(zip(FIXED_BANDWIDTH_NAMES, out))


CONJUGATE_ARGUMENTS = (L, token_mean, prior_sd, token_sd)


def conjugate_posterior(length, xbar, prior_sd, token_sd, backend=None):
    """(μ_L, s_L): posterior mean and sd of z in M1 (generated from the derivation).

    length L ≥ 0 (the number of tokens), token mean x̄ real, prior_sd τ and token_sd σ > 0; numbers
    or arrays (broadcast). ``backend``: a Backend, 'numpy', 'cupy' or None.
    """
    be = arguments.backend(backend)
    values = {"length": _reals("length", length, be, low=0.0), "xbar": _reals("xbar", xbar, be),
              "prior_sd": _reals("prior_sd", prior_sd, be, low=0.0, open_low=True),
              "token_sd": _reals("token_sd", token_sd, be, low=0.0, open_low=True)}
    results = tuple(conjugate_posterior_derivation.evaluator(name) for name in ("mu_L", "s_L"))
    return _evaluate("conjugate_posterior", results, CONJUGATE_ARGUMENTS, be, values,
                     "length·prior_sd², token_sd² and their product with xbar must stay below 1e308")
