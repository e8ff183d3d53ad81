"""1. The action with explicit symbolic matrices (spec §2.1) and its generated evaluator.

Part of `attnverify.theories.attention_paths.derivations` (see its docstring for the spec and sources).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

import sympy
from sympy import ImmutableMatrix, Symbol, log

from ....base import arguments
from ....theory_form.derived import DerivedFamily

from ._common import T, U_a, checked_heads, dimensions, partial_trace, variance_symbols, width_symbols


@dataclass(frozen=True)
class SymbolicAction:
    """The action S = E + 𝓛 for one configuration, in explicit symbols.

    order_parameters  (U_1, …, U_L): symmetric matrices of independent symbols u{ℓ}_{ij}, i ≤ j
    readout           U_a (a positive symbol)
    widths            (n_0, …, n_L);  variances (σ_1², …, σ_L², σ_a²);  temperature T
    path_kernels      C[π][π'] (P × P), C_{ππ} symmetric and C_{π'π} = C_{ππ'}ᵀ, so K is symmetric
    labels            Y (P × 1)
    energy, entropy, action   E(U_1), 𝓛, S = E + 𝓛
    """

    heads: tuple[int, ...]
    P: int
    order_parameters: tuple[ImmutableMatrix, ...]
    readout: Symbol
    widths: tuple[Symbol, ...]
    variances: tuple[Symbol, ...]
    temperature: Symbol
    path_kernels: tuple[tuple[ImmutableMatrix, ...], ...]
    labels: ImmutableMatrix
    energy: sympy.Expr
    entropy: sympy.Expr
    action: sympy.Expr
    entries: tuple[tuple[tuple[int, int, Symbol], ...], ...] = field(repr=False)

    @property
    def depth(self) -> int:
        return len(self.heads)

    @property
    def kernel(self) -> ImmutableMatrix:
        """K = Σ_{ππ'} (U_1)_{ππ'} C_{ππ'}."""
        return kernel_in_paths(self.order_parameters[0], self.path_kernels)

    @property
    def variables(self) -> tuple[Symbol, ...]:
        """The independent order-parameter symbols: entries of U_1, …, U_L (i ≤ j), then U_a."""
        return tuple(s for level in self.entries for (_, _, s) in level) + (self.readout,)

    @property
    def data_symbols(self) -> tuple[Symbol, ...]:
        """The symbols of C and Y."""
        out: list[Symbol] = []
        for a, row in enumerate(self.path_kernels):
            for b, block in enumerate(row[a:], start=a):
                out += [block[m, n] for m in range(self.P) for n in range(m if a == b else 0, self.P)]
        return tuple(out) + tuple(self.labels)

    @property
    def parameters(self) -> tuple[Symbol, ...]:
        """(n_0, …, n_L, σ_1², …, σ_L², σ_a², T)."""
        return self.widths + self.variances + (self.temperature,)


def _symmetric_symbols(prefix: str, size: int) -> tuple[ImmutableMatrix, tuple[tuple[int, int, Symbol], ...]]:
    def name(i: int, j: int) -> str:
        return f"{prefix}_{i + 1}{j + 1}" if size < 10 else f"{prefix}_{i + 1}_{j + 1}"

    entries = tuple(
        (i, j, Symbol(name(i, j), positive=True) if i == j else Symbol(name(i, j), real=True))
        for i in range(size)
        for j in range(i, size)
    )
    lookup = {(i, j): s for i, j, s in entries}
    matrix = ImmutableMatrix(size, size, lambda i, j: lookup[(min(i, j), max(i, j))])
    return matrix, entries


def kernel_in_paths(U1: sympy.MatrixBase, C: Sequence[Sequence[sympy.MatrixBase]]) -> ImmutableMatrix:
    """K = Σ_{π,π′} U_1[π, π′] C^{ππ′}: the renormalized kernel from the path-path kernels (§2.1)."""
    total = sympy.zeros(*C[0][0].shape)
    for a in range(U1.shape[0]):
        for b in range(U1.shape[0]):
            total += U1[a, b] * C[a][b]
    return ImmutableMatrix(total)


def _energy(U1, C, Y, temperature) -> sympy.Expr:
    """E = ln det(K + T I) + Yᵀ (K + T I)^{-1} Y  (§2.1)."""
    G = kernel_in_paths(U1, C) + temperature * sympy.eye(Y.shape[0])
    return log(G.det(method="berkowitz")) + (Y.T * G.LUsolve(Y))[0, 0]


def _entropy(heads, order_parameters, readout, widths, variances) -> sympy.Expr:
    """𝓛 of §2.1, with U_{L+1} ≡ U_a and Tr_{h_ℓ} over the slow index."""
    L = len(heads)
    chain = list(order_parameters) + [ImmutableMatrix([[readout]])]
    total = widths[L] * (readout / variances[L] - log(readout))
    for level in range(1, L + 1):
        U, nxt = chain[level - 1], chain[level]
        reduced = partial_trace(U, heads[level - 1])
        total += widths[level - 1] * (
            nxt.LUsolve(reduced).trace() / variances[level - 1]
            - log(U.det(method="berkowitz"))
            + heads[level - 1] * log(nxt.det(method="berkowitz"))
        )
    return total


@lru_cache(maxsize=None)
def _symbolic_action(heads: tuple[int, ...], P: int) -> SymbolicAction:
    L = len(heads)
    dims = dimensions(heads)
    mats, entries = [], []
    for level in range(1, L + 1):
        m, e = _symmetric_symbols(f"u{level}", dims[level - 1])
        mats.append(m)
        entries.append(e)
    paths = dims[0]
    blocks: dict[tuple[int, int], ImmutableMatrix] = {}
    for a in range(paths):
        for b in range(a, paths):
            def c(m, n, a=a, b=b):
                if a == b:
                    m, n = min(m, n), max(m, n)
                return Symbol(f"C{a + 1}{b + 1}_{m + 1}{n + 1}", real=True)

            blocks[(a, b)] = ImmutableMatrix(P, P, c)
            blocks[(b, a)] = blocks[(a, b)].T
    C = tuple(tuple(blocks[(a, b)] for b in range(paths)) for a in range(paths))
    Y = ImmutableMatrix(P, 1, lambda m, _: Symbol(f"y_{m + 1}", real=True))
    widths, variances = width_symbols(L), variance_symbols(L)
    energy = _energy(mats[0], C, Y, T)
    entropy = _entropy(heads, mats, U_a, widths, variances)
    return SymbolicAction(
        heads, P, tuple(mats), U_a, widths, variances, T, C, Y, energy, entropy, energy + entropy, tuple(entries)
    )


def symbolic_action(heads: Sequence[int], P: int) -> SymbolicAction:
    """S = E(U_1) + 𝓛 in explicit symbols for ``heads`` = (H_1, …, H_L) and P examples (§2.1).

    Only small configurations are feasible (sympy det and LU inverse of symbolic matrices):
    heads such as (1,), (2,), (3,), (1,1), (2,1), (1,2), (2,2) and P ≤ 2. Cached.
    """
    heads = checked_heads(heads)
    if int(P) != P or P < 1:
        raise ValueError(f"P must be an int ≥ 1, got {P!r}")
    return _symbolic_action(heads, int(P))


def action_evaluator(heads: Sequence[int], P: int, backend=None):
    """Generated evaluator of S over ``variables + data_symbols + parameters`` of
    `symbolic_action` (small configurations only, as there)."""
    symbolic_action(heads, P)  # heads and P checked as there (cached)
    return ACTION.at(checked_heads(heads), int(P)).array_function(backend=backend)


def _action_and_symbols(heads: tuple, P: int) -> tuple:
    sym = symbolic_action(heads, P)
    return sym.action, sym.variables + sym.data_symbols + sym.parameters


ACTION = DerivedFamily("attention_paths.action", "S", _action_and_symbols)
"""The explicit symbolic action S of `symbolic_action` for (heads, P), a function of its variables, data symbols and
parameters."""


def evaluate_action(heads, order_parameters, readout, path_kernels, labels, *, widths, variances, temperature,
                    backend=None):
    """S = E + 𝓛 (§2.1) evaluated by the code generated from the explicit symbolic action.

    order_parameters  (U_1, …, U_L), symmetric (only the upper triangle is read)
    readout           U_a > 0
    path_kernels      C[π, π', μ, ν], shape (𝓗, 𝓗, P, P), with C[π', π] = C[π, π']ᵀ
    labels            Y, shape (P,);  widths (n_0, …, n_L);  variances (σ_1², …, σ_L², σ_a²);  T
    For checking a numerical implementation on small problems (P ≤ 2, few paths). Every argument is
    checked by name: U_ℓ positive definite, C positive semi-definite (as path-path kernels are).
    """
    import numpy as np

    heads = checked_heads(heads)
    L = len(heads)
    dims = dimensions(heads)
    labels = arguments.array("labels", labels, ndim=1)
    P = labels.size
    C = arguments.array("path_kernels", path_kernels, shape=(dims[0], dims[0], P, P))
    if isinstance(order_parameters, (str, bytes)) or not isinstance(order_parameters, Sequence) \
            or len(order_parameters) != L:
        raise ValueError(f"order_parameters must hold L = {L} matrices (U_1, …, U_L), got {order_parameters!r}"[:300])
    Us = []
    for level, (U, d) in enumerate(zip(order_parameters, dims)):
        U = np.triu(arguments.array(f"order_parameters[{level}]", U, shape=(d, d)))
        U = U + np.triu(U, 1).T  # the upper triangle is what the action reads
        arguments.positive_definite_factor(f"order_parameters[{level}]", U)  # else −ln det U is undefined
        Us.append(U)
    # K(U) + T I is positive definite for every such U exactly when C is positive semi-definite as the
    # (𝓗P × 𝓗P) Gram matrix C[(π,μ),(π',ν)] of path features
    arguments.positive_semidefinite("path_kernels", C.transpose(0, 2, 1, 3).reshape(dims[0] * P, dims[0] * P))
    readout = arguments.positive("readout", readout)
    widths = arguments.positives("widths", widths, L + 1, "(n_0, …, n_L)")
    variances = arguments.positives("variances", variances, L + 1, "(σ_1², …, σ_L², σ_a²)")
    temperature = arguments.positive("temperature", temperature)
    sym = symbolic_action(heads, P)
    values = [U[i, j] for U, entries in zip(Us, sym.entries) for i, j, _ in entries] + [float(readout)]
    for a in range(dims[0]):
        for b in range(a, dims[0]):
            values += [C[a, b, m, n] for m in range(P) for n in range(m if a == b else 0, P)]
    values += list(labels) + list(widths) + list(variances) + [temperature]
    return action_evaluator(heads, P, backend)(*values)
