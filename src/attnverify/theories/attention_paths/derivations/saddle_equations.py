"""2. Saddle-point equations: sympy's derivatives of the action against the matrix formulas of §2.2.

Part of `attnverify.theories.attention_paths.derivations` (see its docstring for the spec and sources).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence
import time

import sympy
from sympy import ImmutableMatrix, Rational

from ._common import checked_heads, kron_identity, partial_trace
from .action import SymbolicAction, kernel_in_paths, symbolic_action


def _inverse(matrix: sympy.MatrixBase) -> ImmutableMatrix:
    return ImmutableMatrix(matrix.inv(method="LU"))


def energy_gradient_matrix(U1, C, Y, temperature) -> ImmutableMatrix:
    """M_{ππ'} = ½[Tr(A C_{ππ'}) − rᵀ C_{ππ'} r + (π↔π')], A = (K + T I)^{-1}, r = A Y  (§2.2)."""
    G = kernel_in_paths(U1, C) + temperature * sympy.eye(Y.shape[0])
    A = _inverse(G)
    r = A * Y
    paths = U1.shape[0]

    def one(a, b):
        return (A * C[a][b]).trace() - (r.T * C[a][b] * r)[0, 0]

    return ImmutableMatrix(paths, paths, lambda a, b: (one(a, b) + one(b, a)) / 2)


@dataclass(frozen=True)
class MatrixGradient:
    """∂S/∂U_ℓ as symmetric matrices G_ℓ (dS = Σ_ℓ Tr(G_ℓ dU_ℓ) + G_a dU_a), and ∂S/∂U_a."""

    order_parameters: tuple[ImmutableMatrix, ...]
    readout: sympy.Expr


def _general_gradient(heads, Us, Ua, widths, variances, C=None, Y=None, temperature=None) -> MatrixGradient:
    """The matrix formulas of §2.2 on whatever entries are given (symbols or exact numbers).

    ∂S/∂U_1 = (n_0/σ_1²)(I_{H_1} ⊗ U_2^{-1}) − n_0 U_1^{-1} + M
    ∂S/∂U_ℓ = n_{ℓ−1}[(1/σ_ℓ²) I_{H_ℓ} ⊗ U_{ℓ+1}^{-1} − U_ℓ^{-1}]
              + n_{ℓ−2}[H_{ℓ−1} U_ℓ^{-1} − (1/σ_{ℓ−1}²) U_ℓ^{-1} (Tr_{h_{ℓ−1}} U_{ℓ−1}) U_ℓ^{-1}]   (2 ≤ ℓ ≤ L)
    ∂S/∂U_a = n_L[1/σ_a² − 1/U_a] + n_{L−1}[H_L/U_a − Tr U_L/(σ_L² U_a²)]
    (U_{L+1} ≡ U_a; M is dropped when C is None: the entropy's gradient alone.)
    """
    L = len(heads)
    chain = list(Us) + [ImmutableMatrix([[Ua]])]
    inverses = [_inverse(U) for U in chain]
    grads = []
    for level in range(1, L + 1):
        n_prev = widths[level - 1]
        G = n_prev * (kron_identity(heads[level - 1], inverses[level]) / variances[level - 1] - inverses[level - 1])
        if level >= 2:
            Uinv = inverses[level - 1]
            reduced = partial_trace(chain[level - 2], heads[level - 2])
            G += widths[level - 2] * (heads[level - 2] * Uinv - Uinv * reduced * Uinv / variances[level - 2])
        elif C is not None:
            G += energy_gradient_matrix(Us[0], C, Y, temperature)
        grads.append(ImmutableMatrix(G))
    readout = widths[L] * (1 / variances[L] - 1 / Ua) + widths[L - 1] * (
        heads[L - 1] / Ua - Us[L - 1].trace() / (variances[L - 1] * Ua**2)
    )
    return MatrixGradient(tuple(grads), readout)


def general_action_gradient(
    sym: SymbolicAction, values: dict | None = None, include_energy: bool = True
) -> MatrixGradient:
    """The §2.2 matrix gradients of S (or of 𝓛 alone) for the configuration of ``sym``.

    With ``values`` (symbol → number) the inputs are substituted BEFORE any inverse is formed, so
    exact rationals give exact rationals fast; without, the result is symbolic (small sizes only).
    """
    def sub(x):
        return x.xreplace(values) if values else x

    Us = [ImmutableMatrix(sub(U)) for U in sym.order_parameters]
    C = Y = None
    if include_energy:
        C = [[ImmutableMatrix(sub(b)) for b in row] for row in sym.path_kernels]
        Y = ImmutableMatrix(sub(sym.labels))
    return _general_gradient(
        sym.heads, Us, sub(sym.readout), [sub(n) for n in sym.widths], [sub(v) for v in sym.variances],
        C, Y, sub(sym.temperature),
    )


def entry_derivatives(gradient: sympy.MatrixBase, entries) -> list[sympy.Expr]:
    """∂S/∂u_ij of a symmetric matrix from its matrix gradient G: G_ii, and G_ij + G_ji for i ≠ j."""
    return [gradient[i, j] if i == j else gradient[i, j] + gradient[j, i] for i, j, _ in entries]


def formula_derivatives(sym: SymbolicAction, values: dict | None = None, include_energy: bool = True) -> list:
    """The §2.2 formulas as derivatives w.r.t. ``sym.variables`` (same order)."""
    g = general_action_gradient(sym, values, include_energy)
    out: list = []
    for G, entries in zip(g.order_parameters, sym.entries):
        out += entry_derivatives(G, entries)
    return out + [g.readout]


@lru_cache(maxsize=None)
def variable_derivatives(heads: tuple[int, ...], P: int, include_energy: bool) -> tuple[sympy.Expr, ...]:
    """∂S/∂v (or ∂𝓛/∂v without the energy) for every variable v of `symbolic_action` (sympy diff), cached."""
    sym = symbolic_action(heads, P)
    target = sym.action if include_energy else sym.entropy
    return tuple(sympy.diff(target, v) for v in sym.variables)


def action_derivatives(sym: SymbolicAction, include_energy: bool = True) -> tuple[sympy.Expr, ...]:
    """∂S/∂v (or ∂𝓛/∂v) by ``sympy.diff`` for every v in ``sym.variables``. Cached."""
    return variable_derivatives(sym.heads, sym.P, include_energy)


def action_hessian_at(sym: SymbolicAction, point: dict) -> ImmutableMatrix:
    """∂²S/∂v∂v' for v, v' in ``sym.variables``, exactly at ``point`` (a value for every symbol).

    The data and parameters are substituted first, so that sympy differentiates a function of the
    order parameters alone (small configurations, as `symbolic_action`); with rational values
    the result is exact rational.
    """
    variables = sym.variables
    fixed = {s: v for s, v in point.items() if s not in set(variables)}
    action = sym.action.xreplace(fixed)
    at = {v: point[v] for v in variables}
    first = [sympy.diff(action, v) for v in variables]
    entries = {}
    for i, d in enumerate(first):
        for j in range(i, len(variables)):
            entries[i, j] = entries[j, i] = sympy.diff(d, variables[j]).xreplace(at)
    return ImmutableMatrix(len(variables), len(variables), lambda i, j: entries[i, j])


def _random_rational(rng, low: int = 1, high: int = 1000) -> Rational:
    return Rational(int(rng.integers(low, high)), int(rng.integers(1, 97)))


def _random_spd(rng, size: int) -> ImmutableMatrix:
    A = ImmutableMatrix(size, size, lambda i, j: Rational(int(rng.integers(-40, 41)), int(rng.integers(1, 13))))
    return ImmutableMatrix(A * A.T + _random_rational(rng, 1, 50) * sympy.eye(size))


def random_rational_point(sym: SymbolicAction, seed: int | Any = 0) -> dict:
    """A random exact point: positive-definite rational U_ℓ, U_a > 0, positive widths, variances
    and T, rational C (C_{ππ} symmetric) and Y, with K + T I invertible."""
    import numpy as np

    rng = np.random.default_rng(seed)
    while True:
        point: dict = {}
        for U, entries in zip(sym.order_parameters, sym.entries):
            value = _random_spd(rng, U.shape[0])
            point.update({s: value[i, j] for i, j, s in entries})
        point[sym.readout] = _random_rational(rng)
        for s in sym.parameters:
            point[s] = _random_rational(rng)
        for s in sym.data_symbols:
            point[s] = Rational(int(rng.integers(-500, 501)), int(rng.integers(1, 97)))
        G = sym.kernel.xreplace(point) + point[sym.temperature] * sympy.eye(sym.P)
        if G.det() != 0:
            return point


@dataclass(frozen=True)
class IdentityTest:
    """Outcome of an exact identity test; truthy when the identity held at every point."""

    holds: bool
    heads: tuple[int, ...]
    P: int | None
    points: int
    equations: int
    nonzero: tuple[tuple[str, sympy.Expr], ...]
    seconds: float

    def __bool__(self) -> bool:
        return self.holds


def saddle_point_equations_agree(heads: Sequence[int], P: int, points: int = 3, seed: int = 0) -> IdentityTest:
    """sympy's ∂S/∂v and the §2.2 matrix formulas agree EXACTLY at ``points`` random rational points.

    Both sides are rational functions of all the symbols (every log is differentiated away), and
    the point is a polynomial image (U_ℓ = AAᵀ + cI, onto an open set of positive-definite matrices)
    of independent random rationals p/q (|p| ≤ 10³, q < 97). A nonzero difference stays a nonzero
    rational function of those draws, so it vanishes at one point only with probability ≤ its
    degree times the largest probability of any single draw (Schwartz–Zippel style), ~10⁻³·degree
    per point at worst; exact arithmetic leaves no tolerance to argue about.
    """
    heads = checked_heads(heads)
    if points < 1:
        raise ValueError(f"points must be ≥ 1, got {points!r}")
    t0 = time.perf_counter()
    sym = symbolic_action(heads, P)
    derivatives = action_derivatives(sym)
    nonzero = []
    for k in range(points):
        point = random_rational_point(sym, seed=(seed, k))
        formulas = formula_derivatives(sym, point)
        for v, d, f in zip(sym.variables, derivatives, formulas):
            difference = d.xreplace(point) - f
            if not (difference.is_Rational and difference == 0):
                nonzero.append((f"{v} at point {k}", difference))
    return IdentityTest(not nonzero, heads, P, points, len(derivatives), tuple(nonzero), time.perf_counter() - t0)


def saddle_point_equations_proved(heads: Sequence[int], P: int | None = None) -> IdentityTest:
    """Fully symbolic: ``cancel(∂/∂v − formula) == 0`` for every variable v.

    ``P=None`` proves the entropy part (𝓛 against the formulas without M), otherwise the whole
    action with P examples. cancel brings a rational function to lowest terms, so 0 is a proof.
    Fast (< 1 s) for the smallest cases: entropy of (1,), (2,), (3,), (1,1), (2,1), (1,2); action with
    (1,), (1,1) and P ≤ 2, or (2,) and P = 1. (Entropy of (2,2) takes ~35 s, action of (2,) with
    P = 2 ~95 s; the exact rational test covers those.)
    """
    heads = checked_heads(heads)
    t0 = time.perf_counter()
    include_energy = P is not None
    sym = symbolic_action(heads, P if include_energy else 1)
    derivatives = action_derivatives(sym, include_energy)
    formulas = formula_derivatives(sym, include_energy=include_energy)
    nonzero = [
        (str(v), r)
        for v, d, f in zip(sym.variables, derivatives, formulas)
        if (r := sympy.cancel(sympy.together(d - f))) != 0
    ]
    return IdentityTest(not nonzero, heads, P, 0, len(derivatives), tuple(nonzero), time.perf_counter() - t0)
