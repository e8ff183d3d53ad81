"""5. H = 1: back-propagating kernel renormalisation (Li & Sompolinsky 2021).

Part of `attnverify.theories.attention_paths.derivations` (see its docstring for the spec and sources).
"""

from __future__ import annotations

import numpy as np
import sympy
from sympy import Eq, Symbol, log

from ....base import arguments
from ....theory_form.derived import DerivedFamily
from ..theory import theory

from ._common import SOURCE, T, U_a, sigma_a2, variance_symbol, variance_symbols, width_symbol, width_symbols
from .action import symbolic_action
from .gp_limit import prior_variances


kernel_scale = Symbol("U_1", positive=True)  # the coefficient of K_0 in K (U_a when L = 0)
energy_slope = Symbol("s", real=True)  # s = U_1 ∂E/∂U_1
eigenvalue, label_projection_sq = Symbol("lambda", positive=True), Symbol("y^2", nonnegative=True)


def ratio_symbols(depth: int) -> tuple[Symbol, ...]:
    """(u_1, …, u_L, u_a): u_ℓ = U_ℓ/(σ_ℓ² U_{ℓ+1}), u_a = U_a/σ_a²."""
    return tuple(Symbol(f"u_{level}", positive=True) for level in range(1, depth + 1)) + (Symbol("u_a", positive=True),)


def ratio_substitution(depth: int) -> dict[int, sympy.Expr]:
    """{ℓ: U_ℓ in the ratio variables} for ℓ = 1..L+1 (L+1 is U_a), H = 1:
    U_a = σ_a² u_a and U_ℓ = σ_ℓ² u_ℓ U_{ℓ+1}, so U_ℓ = σ_a² u_a Π_{k=ℓ}^{L} σ_k² u_k."""
    u = ratio_symbols(depth)
    out = {depth + 1: sigma_a2 * u[-1]}
    for level in range(depth, 0, -1):
        out[level] = variance_symbol(level) * u[level - 1] * out[level + 1]
    return out


def h1_entropy_in_ratio_variables(depth: int) -> tuple[sympy.Expr, sympy.Expr]:
    """(Σ_ℓ n_{ℓ−1}(u_ℓ − ln u_ℓ) + n_L(u_a − ln u_a), n_L ln σ_a² + Σ_ℓ n_{ℓ−1} ln σ_ℓ²): for H = 1,
    𝓛 = first − second (the second holds no order parameter)."""
    u, widths = ratio_symbols(depth), width_symbols(depth)
    target = widths[depth] * (u[-1] - log(u[-1])) + sum(widths[k - 1] * (u[k - 1] - log(u[k - 1])) for k in range(1, depth + 1))
    constant = widths[depth] * log(sigma_a2) + sum(widths[k - 1] * log(variance_symbol(k)) for k in range(1, depth + 1))
    return target, constant


def h1_entropy_is_bpkr(depth: int) -> bool:
    """sympy: with H_ℓ = 1 the entropy of §2.1, in u_a = U_a/σ_a², u_ℓ = U_ℓ/(σ_ℓ² U_{ℓ+1}), equals
    Σ n(u − ln u) − Σ n ln σ² exactly (Li & Sompolinsky's BPKR entropy)."""
    sym = symbolic_action((1,) * depth, 1)
    ratios = ratio_substitution(depth)
    point = {sym.readout: ratios[depth + 1]}
    point.update({sym.entries[level - 1][0][2]: ratios[level] for level in range(1, depth + 1)})
    in_ratios = sympy.expand(sympy.expand_log(sym.entropy.xreplace(point), force=True))
    target, constant = h1_entropy_in_ratio_variables(depth)
    return sympy.expand(in_ratios - (target - constant)) == 0


def bpkr_fixed_point_residual(depth: int) -> sympy.Expr:
    """U_1 − σ_a² Π_ℓ σ_ℓ² (1 − s/n_L) Π_{ℓ=1}^{L} (1 − s/n_{ℓ−1}), s = U_1 ∂E/∂U_1 (H = 1).

    Zero at the saddle point; ``depth`` L ≥ 0 (L = 0: the readout-only network, U_1 ≡ U_a).
    Arguments in the order of `bpkr_arguments`.
    """
    if int(depth) != depth or depth < 0:
        raise ValueError(f"depth must be an int ≥ 0, got {depth!r}")
    L = int(depth)
    product = sigma_a2 * (1 - energy_slope / width_symbol(L))
    for level in range(1, L + 1):
        product *= variance_symbol(level) * (1 - energy_slope / width_symbol(level - 1))
    return kernel_scale - product


def bpkr_arguments(depth: int) -> tuple[Symbol, ...]:
    """(U_1, s, n_0, …, n_L, σ_1², …, σ_L², σ_a²)."""
    return (kernel_scale, energy_slope) + width_symbols(depth) + variance_symbols(depth)


def bpkr_fixed_point_evaluator(depth: int, backend=None):
    """Generated evaluator of `bpkr_fixed_point_residual` over `bpkr_arguments` (`BPKR_RESIDUAL`)."""
    return BPKR_RESIDUAL.at(depth).array_function(backend=backend)


def bpkr_mode_slope() -> sympy.Expr:
    """One eigenmode's share of s = U ∂E/∂U for K = U K_0 (λ an eigenvalue of K_0, y² = (φᵀY)²):

    s = Σ_i [U λ_i/(U λ_i + T) − y_i² U λ_i/(U λ_i + T)²]   (E = Σ_i ln(Uλ_i + T) + y_i²/(Uλ_i + T)).
    """
    z = kernel_scale * eigenvalue
    energy = log(z + T) + label_projection_sq / (z + T)
    return sympy.factor(kernel_scale * sympy.diff(energy, kernel_scale))


def bpkr_energy_slope(kernel_scale_value, eigenvalues, label_projections, temperature, backend=None):
    """s = U ∂E/∂U for K = U K_0: Σ_i [Uλ_i/(Uλ_i + T) − y_i² Uλ_i/(Uλ_i + T)²] (last axis = modes).

    ``eigenvalues`` λ_i > 0 of K_0, ``label_projections`` y_i = φ_iᵀY, ``temperature`` T ≥ 0;
    ``kernel_scale_value`` U broadcasts against the leading axes. From `bpkr_mode_slope`.
    """
    temperature = arguments.nonnegative("temperature", temperature)
    mode = MODE_SLOPE.at().array_function(backend=backend)
    xp = mode.xp
    U = xp.asarray(kernel_scale_value, dtype=xp.float64)
    lam = xp.asarray(eigenvalues, dtype=xp.float64)
    y2 = xp.asarray(label_projections, dtype=xp.float64) ** 2
    if lam.shape[-1:] != y2.shape[-1:]:
        raise ValueError(f"eigenvalues and label_projections must have the same number of modes, got {lam.shape} and {y2.shape}")
    return xp.sum(mode(U[..., None], lam, y2, temperature), axis=-1)


BPKR_RESIDUAL = DerivedFamily("attention_paths.single_head", "fixed_point_residual",
                              lambda depth: (bpkr_fixed_point_residual(depth), bpkr_arguments(depth)))
"""`bpkr_fixed_point_residual` at each depth, a function of `bpkr_arguments`."""

MODE_SLOPE = DerivedFamily("attention_paths.single_head", "mode_slope",
                           lambda: (bpkr_mode_slope(), (kernel_scale, eigenvalue, label_projection_sq, T)))
"""`bpkr_mode_slope`, a function of (U, λ, y², T)."""


def bpkr_residual(kernel_scale_value, eigenvalues, label_projections, temperature, widths, prior_var=1.0, backend=None):
    """R(U_1) = U_1 − σ_a²Πσ_ℓ²(1 − s/n_L)Π_{ℓ=1}^{L}(1 − s/n_{ℓ−1}), s from `bpkr_energy_slope`.

    ``widths`` (n_0, …, n_L) fixes the depth L ≥ 0 (L = 0: readout only, U_1 ≡ U_a);
    ``prior_var`` is a scalar or (σ_1², …, σ_L², σ_a²). A root U_1 > 0 with every 1 − s/n > 0 is
    the H = 1 saddle point, with u_ℓ = 1 − s/n_{ℓ−1} and U_a = σ_a²(1 − s/n_L).
    """
    widths_ = arguments.array("widths", widths, ndim=1) if np.ndim(widths) else arguments.array("widths", [widths])
    if np.any(widths_ <= 0):
        raise ValueError(f"widths must be a sequence (n_0, …, n_L) of positive numbers, got {widths!r}")
    depth = widths_.size - 1
    variances = prior_variances(prior_var, depth)
    s = bpkr_energy_slope(kernel_scale_value, eigenvalues, label_projections, temperature, backend)
    residual = bpkr_fixed_point_evaluator(depth, backend)
    return residual(kernel_scale_value, s, *widths_.tolist(), *variances)


@theory.derivation(name="h1_reduction", title="One head per layer: back-propagating kernel renormalisation",
                   source=f"{SOURCE}; note §2.2 sanity check; Li & Sompolinsky, PRX 11, 031059 (2021)")
def h1_reduction_derivation(step) -> None:
    """H = 1: the entropy in ratio variables, the kernel, the BPKR fixed point, the T = 0 quadratic."""
    depth = 2
    sym = symbolic_action((1,) * depth, 1)
    entropy = sym.entropy
    step("The entropy for H_1 = H_2 = 1 (scalar order parameters U_1, U_2, U_a; symbolic_action, checked against "
         "the general action in attention_paths.action)", Eq(Symbol("𝓛"), entropy), kind="assumption")
    ratios = ratio_substitution(depth)
    u = ratio_symbols(depth)
    point = {sym.readout: ratios[depth + 1]}
    point.update({sym.entries[level - 1][0][2]: ratios[level] for level in range(1, depth + 1)})
    names = [kernel_scale] + [Symbol(f"U_{level}") for level in range(2, depth + 1)] + [U_a]
    K0, K = Symbol("K_0"), Symbol("K")
    step(
        "Ratio variables u_a = U_a/σ_a², u_ℓ = U_ℓ/(σ_ℓ² U_{ℓ+1}); with one path the kernel is K = U_1 C_{11} ≡ U_1 K_0",
        sympy.Tuple(*(Eq(name, ratios[level]) for level, name in enumerate(names, start=1)), Eq(K, kernel_scale * K0)),
        kind="definition",
    )
    if not h1_entropy_is_bpkr(depth):
        raise AssertionError("the H = 1 entropy is not Σ n(u − ln u) in the ratio variables")
    target, constant = h1_entropy_in_ratio_variables(depth)
    step(
        "Substitute and expand the logs: Σ n(u − ln u) up to a constant that holds no order parameter",
        Eq(Symbol("𝓛"), target - constant),
        substitute=point,
    )
    step("The kernel: K = U_1 K_0, with U_1 = σ_a² Π_ℓ σ_ℓ² · u_a Π_ℓ u_ℓ", Eq(K, ratios[1] * K0))
    E = sympy.Function("E")
    S = Symbol("S")
    step("The action S = E(U_1) + 𝓛, the energy E a function of U_1 alone (K = U_1 K_0)",
         Eq(S, E(kernel_scale) + Symbol("𝓛")), kind="definition")
    slope = kernel_scale * sympy.Derivative(E(kernel_scale), kernel_scale)
    stationarity = [width * (v - 1) + energy_slope for width, v in zip(width_symbols(depth), u)]
    stationarity = stationarity[:-1] + [width_symbols(depth)[-1] * (u[-1] - 1) + energy_slope]
    step(
        "u ∂S/∂u for each ratio variable: U_1 ∝ every u, so u ∂E(U_1)/∂u = U_1 E'(U_1) ≡ s for all of them",
        sympy.Tuple(*(Eq(v * sympy.Derivative(S, v), st) for v, st in zip(u, stationarity))),
        substitute={energy_slope: slope},
    )
    step(
        "u ∂S/∂u = 0 for each ratio variable (a bijection of the positive reals, so the same stationary points)",
        sympy.Tuple(*(Eq(st, 0) for st in stationarity)), kind="condition",
    )
    solved = [sympy.solve(st, v)[0] for st, v in zip(stationarity, u)]
    step("Each ratio is fixed by s alone: u_ℓ = 1 − s/n_{ℓ−1}, u_a = 1 − s/n_L",
         sympy.Tuple(*(Eq(v, x) for v, x in zip(u, solved))))
    residual = bpkr_fixed_point_residual(depth)
    if sympy.expand(residual - (kernel_scale - ratios[1].xreplace(dict(zip(u, solved))))) != 0:
        raise AssertionError("bpkr_fixed_point_residual is not U_1 − σ-products · Π u(s)")
    step(
        "Hence U_1 solves one scalar equation (s = U_1 E'(U_1) depends on U_1 only); the same for any depth L",
        Eq(residual, 0),
    )
    lam_i, y_i, i, P_ = Symbol("lambda_i"), Symbol("y_i"), Symbol("i"), Symbol("P", positive=True)
    U = Symbol("U", positive=True)  # E as a function; s is U E'(U) at U = U_1
    spectral = sympy.Sum(log(U * lam_i + T) + y_i**2 / (U * lam_i + T), (i, 1, P_))
    mode = bpkr_mode_slope().subs({eigenvalue: lam_i, label_projection_sq: y_i**2, kernel_scale: U})
    step("With the spectrum (λ_i, φ_i) of K_0 and y_i = φ_iᵀY, E(U) = Σ_i [ln(Uλ_i + T) + y_i²/(Uλ_i + T)], so "
         "s = U E'(U) at U = U_1 is a sum over modes",
         Eq(energy_slope, sympy.Sum(mode, (i, 1, P_))),
         substitute={energy_slope: U * sympy.Derivative(spectral, U)})
    for description, expression, options in t0_quadratic_steps():
        step(description, expression, **options)


q_symbol, N_symbol, alpha_symbol = Symbol("q", positive=True), Symbol("N", positive=True), Symbol("alpha", positive=True)


def t0_quadratic_steps() -> list[tuple[str, sympy.Basic, dict]]:
    """The T = 0, all-widths-N equations of H = 1, q = YᵀK_0^{-1}Y (§2.2 'sanity check'), as (description,
    expression, options of `.DerivationRecorder.step`).

    One order parameter (the readout-only network, L = 0): U² − σ²(1 − α)U − σ² q/N = 0 (the note's
    quadratic with u ≡ U, σ² ≡ σ_a²). L attention layers: w^{L+2} − (1 − α) w^{L+1} − q/(NΣ) = 0 with
    every ratio u = w and U_1 = Σ w^{L+1}, Σ = σ_a² Π σ_ℓ²: a cubic already at L = 1.
    """
    q, N, alpha = q_symbol, N_symbol, alpha_symbol
    P_, sig2, U = Symbol("P", positive=True), Symbol("sigma^2", positive=True), Symbol("U", positive=True)
    steps: list[tuple[str, sympy.Basic, dict]] = []
    det_K0 = Symbol("det K_0", positive=True)
    K0, Y = sympy.MatrixSymbol("K_0", P_, P_), sympy.MatrixSymbol("Y", P_, 1)
    steps.append((
        "T = 0: E(U) = ln det(U K_0) + Yᵀ(U K_0)^{-1}Y = P ln U + ln det K_0 + q/U, with q = YᵀK_0^{-1}Y",
        Eq(log(sympy.Determinant(U * K0)) + sympy.Trace(Y.T * sympy.Inverse(U * K0) * Y),
           P_ * log(U) + log(det_K0) + q / U),
        {"substitute": {det_K0: sympy.Determinant(K0), q: sympy.Trace(Y.T * sympy.Inverse(K0) * Y)}},
    ))
    S0 = P_ * log(U) + log(det_K0) + q / U + N * (U / sig2 - log(U))
    S_0 = Symbol("S_0")
    steps.append((
        "A single order parameter U (L = 0: readout only, entropy N(U/σ² − ln U), σ² = σ_a²)",
        Eq(S_0, S0), {"kind": "definition"},
    ))
    quadratic = sympy.collect(sympy.expand(sympy.diff(S0, U) * U**2 * sig2 / N).subs(P_, alpha * N), U)
    steps.append((
        "∂S_0/∂U = 0, times U²σ²/N > 0, with P = αN: the note's quadratic = 0, where u ≡ U (not U/σ²)",
        Eq(U**2 * sig2 / N * sympy.Derivative(S_0, U), quadratic), {"substitute": {P_: alpha * N}},
    ))
    from_bpkr = sympy.expand(bpkr_fixed_point_residual(0).subs(energy_slope, P_ - q / kernel_scale).subs(
        {kernel_scale: U, width_symbol(0): N, sigma_a2: sig2}).subs(P_, alpha * N) * U)
    if sympy.expand(from_bpkr - quadratic) != 0:
        raise AssertionError("the L = 0 BPKR residual is not the single-layer quadratic")
    L, w, Sig = Symbol("L", nonnegative=True, integer=True), Symbol("w", positive=True), Symbol("Sigma", positive=True)
    # every ratio equals w = 1 − s/N, U_1 = Σ w^{L+1}, s = P − q/U_1
    derived = sympy.expand((w - 1 + (P_ - q / (Sig * w ** (L + 1))) / N).subs(P_, alpha * N) * w ** (L + 1))
    general = w ** (L + 2) - (1 - alpha) * w ** (L + 1) - q / (N * Sig)
    if sympy.expand(sympy.powsimp(derived - general)) != 0:
        raise AssertionError("the T = 0 equal-width equation is not w^{L+2} − (1−α)w^{L+1} − q/(NΣ)")

    def condition(depth):  # w^{L+1} times the stationarity w − 1 + s/N of every ratio, s = P − q/U_1 = αN − q/(Σw^{L+1})
        return w ** (depth + 1) * (w - 1 + (alpha * N - q / (Sig * w ** (depth + 1))) / N)

    steps.append((
        "L attention layers, all widths N: every ratio is w = 1 − s/N, U_1 = Σ w^{L+1} (Σ = σ_a²Π_ℓσ_ℓ²), "
        "s = P − q/U_1 with P = αN; the stationarity w − 1 + s/N = 0, times w^{L+1}, is",
        Eq(condition(L), general), {},
    ))
    steps.append((
        "So the note's 'single layer' quadratic is L = 0 (one order parameter, U = σ_a² w); the one-attention-layer "
        "network (U_1, U_a) gives a cubic in w = sqrt(U_1/(σ_1²σ_a²)); each = 0",
        sympy.Tuple(Eq(general.subs(L, 0), condition(0)), Eq(general.subs(L, 1), condition(1))), {},
    ))
    return steps
