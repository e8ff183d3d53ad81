"""A saddle-point theory declared in sympy: its order parameters, its entropy 𝓛, and the order parameter the
kernel is linear in. The family (Li & Sompolinsky 2021 for deep linear networks; Pacelli et al. 2023 for one
hidden layer; Tiberi et al. 2024 for attention paths) shares one action

    S(U) = ½ ln det(K(U) + T·I) + ½ Yᵀ (K(U) + T·I)⁻¹ Y + 𝓛(U; N, σ²),   K(U) = Σ_ab U_ab C_ab,

with order parameters that are positive scalars or small symmetric positive-definite matrices, kernels C_ab
computed from the data, and an entropy 𝓛 that is a small sympy expression in the order parameters. The entropy's
gradient and Hessian over the independent entries u (a scalar, or U_ij with i ≤ j, each entry standing for both
U_ij and U_ji) are differentiated by sympy and generated as array evaluators
(:func:`~attnverify.derivations.codegen.evaluator`); the energy's come from the matrix formulas of
:mod:`attnverify.numerics.kernel_energy`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import sympy

from ..base.arguments import name_mismatch
from ..derivations.codegen import evaluator


def positive(name: str) -> sympy.Symbol:
    """A positive scalar order parameter (a kernel scale, a readout variance), as a sympy symbol."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    return sympy.Symbol(name, positive=True)


def positive_definite(name: str, size: int) -> sympy.ImmutableMatrix:
    """A symmetric positive-definite ``size`` × ``size`` order parameter, as a sympy matrix of its entries
    (one symbol ``name_ij`` per i ≤ j, standing in both (i, j) and (j, i))."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 1 <= size <= 32:
        raise ValueError(f"size must be an integer in [1, 32] (order parameters are small matrices), got {size!r}")
    size = int(size)
    sep = "," if size > 9 else ""
    entry = {(i, j): sympy.Symbol(f"{name}_{i}{sep}{j}", real=True) for i in range(size) for j in range(i, size)}
    return sympy.ImmutableMatrix(size, size, lambda i, j: entry[(min(i, j), max(i, j))])


@dataclass(frozen=True)
class OrderParameter:
    """One order parameter: ``name``, ``size`` (0 for a positive scalar, n for an n × n positive-definite matrix)
    and its independent entries (``symbols``: the scalar, or U_ij for i ≤ j in numpy's triu order)."""

    name: str
    size: int
    symbols: tuple

    @property
    def count(self) -> int:
        return len(self.symbols)

    def value(self, entries: np.ndarray) -> Any:
        """The scalar (a float) or the symmetric matrix whose independent entries are ``entries``."""
        if self.size == 0:
            return float(entries[0])
        U = np.zeros((self.size, self.size))
        rows, cols = np.triu_indices(self.size)
        U[rows, cols] = entries
        U[cols, rows] = entries
        return U

    def entries(self, value) -> np.ndarray:
        """The independent entries of a value (a positive number, or a symmetric positive-definite matrix)."""
        if self.size == 0:
            number = float(value)
            if not (np.isfinite(number) and number > 0):
                raise ValueError(f"{self.name} must be a positive number, got {value!r}")
            return np.array([number])
        U = np.asarray(value, dtype=float)
        if U.shape != (self.size, self.size) or not np.all(np.isfinite(U)):
            raise ValueError(f"{self.name} must be a finite {self.size} × {self.size} matrix, got shape {U.shape}")
        if not np.allclose(U, U.T, rtol=0, atol=1e-12 * max(1.0, float(np.max(np.abs(U))))):
            raise ValueError(f"{self.name} must be symmetric")
        try:
            np.linalg.cholesky(U)
        except np.linalg.LinAlgError:
            raise ValueError(f"{self.name} must be positive definite; smallest eigenvalue "
                             f"{np.linalg.eigvalsh(U)[0]:.3g}") from None
        return U[np.triu_indices(self.size)]


def _order_parameter(name: str, value) -> OrderParameter:
    if isinstance(value, sympy.Symbol):
        if not value.is_positive:
            raise ValueError(f"order parameter {name} must be declared positive (positive(\"{name}\")), got the "
                             f"symbol {value} without that assumption")
        return OrderParameter(name, 0, (value,))
    if isinstance(value, sympy.MatrixBase):
        n = value.shape[0]
        if value.shape != (n, n) or n == 0:
            raise ValueError(f"order parameter {name} must be a square matrix, got shape {value.shape}")
        rows, cols = np.triu_indices(n)
        symbols = tuple(value[i, j] for i, j in zip(rows, cols))
        if not all(isinstance(s, sympy.Symbol) for s in symbols) or len(set(symbols)) != len(symbols) or \
                any(value[i, j] != value[j, i] for i, j in zip(rows, cols)):
            raise ValueError(f"order parameter {name} must be a symmetric matrix of distinct symbols, one per entry "
                             f"i ≤ j (positive_definite(\"{name}\", {n}))")
        return OrderParameter(name, n, symbols)
    raise TypeError(f"order parameter {name} must be positive(\"{name}\") or positive_definite(\"{name}\", n), got "
                    f"{type(value).__name__}")


class SaddlePointAction:
    """The declaration: ``order_parameters`` (name → :func:`positive` or :func:`positive_definite`), ``entropy``
    𝓛 (a sympy expression in them and in named parameters), ``kernel`` (the name of the order parameter the
    kernel is linear in, K(U) = Σ_ab U_ab C_ab; a scalar Q gives K = Q·C) and ``width`` (the symbol N of the
    large-width expansion: 𝓛 = O(N), so the GP limit N → ∞ is the entropy's minimum). The action is
    S = ½ ln det(K + T·I) + ½ Yᵀ(K + T·I)⁻¹Y + 𝓛; the temperature T and the data enter at the solve."""

    def __init__(self, *, order_parameters: Mapping[str, Any], entropy, kernel: str, width: sympy.Symbol):
        if not isinstance(order_parameters, Mapping) or not order_parameters:
            raise TypeError("order_parameters must be a non-empty dict of name → positive(...) or "
                            "positive_definite(...)")
        self.order_parameters = tuple(_order_parameter(str(n), v) for n, v in order_parameters.items())
        self.entry_symbols = tuple(s for op in self.order_parameters for s in op.symbols)
        if len(set(self.entry_symbols)) != len(self.entry_symbols):
            raise ValueError("two order parameters share a symbol: give each its own name")
        try:
            self.entropy = sympy.sympify(entropy)
        except (sympy.SympifyError, TypeError):
            raise TypeError(f"entropy must be a sympy expression, got {entropy!r}") from None
        if not isinstance(self.entropy, sympy.Expr) or self.entropy.is_Matrix:
            raise TypeError(f"entropy must be a scalar sympy expression, got {type(self.entropy).__name__}")
        names = [op.name for op in self.order_parameters]
        if kernel not in names:
            raise ValueError(f"kernel must name an order parameter ({', '.join(names)}), got {kernel!r}")
        self.kernel = next(op for op in self.order_parameters if op.name == kernel)
        if not isinstance(width, sympy.Symbol):
            raise TypeError(f"width must be the sympy symbol of the width N, got {width!r}")
        free = self.entropy.free_symbols
        self.parameters = tuple(sorted(free - set(self.entry_symbols), key=lambda s: s.name))
        if width not in self.parameters:
            raise ValueError(f"width {width} must appear in the entropy (𝓛 grows with N); its parameters: "
                             f"{', '.join(s.name for s in self.parameters) or 'none'}")
        self.width = width
        unused = [op.name for op in self.order_parameters if not set(op.symbols) & free and op is not self.kernel]
        if unused:
            raise ValueError(f"order parameter(s) {', '.join(unused)} appear neither in the entropy nor as the kernel's")
        self.parameter_names = tuple(s.name for s in self.parameters)

    @property
    def size(self) -> int:
        """The number of independent entries over all order parameters."""
        return len(self.entry_symbols)

    def parameter_values(self, values: Mapping[str, float]) -> tuple[float, ...]:
        """The parameters' values in declaration order, each a positive finite number, checked by name."""
        wrong = name_mismatch(list(values), self.parameter_names)
        if wrong:
            raise TypeError(f"the action's parameters are {', '.join(self.parameter_names)}" + wrong)
        out = []
        for name in self.parameter_names:
            value = values[name]
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or \
                    not (np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")
            out.append(float(value))
        return tuple(out)

    @functools.cached_property
    def _value_and_gradient(self):
        L, u = self.entropy, self.entry_symbols
        return evaluator([L] + [sympy.diff(L, s) for s in u], list(u) + list(self.parameters), rounding=False)

    @functools.cached_property
    def _hessian(self):
        u = self.entry_symbols
        rows, cols = np.triu_indices(len(u))
        gradient = [sympy.diff(self.entropy, s) for s in u]
        return evaluator([sympy.diff(gradient[i], u[j]) for i, j in zip(rows, cols)],
                         list(u) + list(self.parameters), rounding=False)

    def entropy_value_and_gradient(self, entries: np.ndarray, parameters: tuple) -> tuple[float, np.ndarray]:
        """𝓛 and ∂𝓛/∂u at the entries u (generated from sympy)."""
        out = self._value_and_gradient(*entries, *parameters)
        return float(out[0]), np.array([float(g) for g in out[1:]])

    def entropy_hessian(self, entries: np.ndarray, parameters: tuple) -> np.ndarray:
        """∂²𝓛/∂u∂u' at the entries u (generated from sympy)."""
        n = self.size
        H = np.zeros((n, n))
        rows, cols = np.triu_indices(n)
        H[rows, cols] = [float(h) for h in self._hessian(*entries, *parameters)]
        H[cols, rows] = H[rows, cols]
        return H

    def split(self, entries: np.ndarray) -> dict[str, Any]:
        """name → value (a float or a symmetric matrix) from the flat entries."""
        out, start = {}, 0
        for op in self.order_parameters:
            out[op.name] = op.value(entries[start:start + op.count])
            start += op.count
        return out

    def join(self, values: Mapping[str, Any]) -> np.ndarray:
        """The flat entries from name → value, each checked (positive, or symmetric positive definite)."""
        missing = [op.name for op in self.order_parameters if op.name not in values]
        if missing:
            raise ValueError(f"values for every order parameter are needed; missing {', '.join(missing)}")
        return np.concatenate([op.entries(values[op.name]) for op in self.order_parameters])

    def __repr__(self) -> str:
        shapes = ", ".join(op.name if op.size == 0 else f"{op.name} ({op.size}×{op.size})"
                           for op in self.order_parameters)
        return f"<SaddlePointAction over {shapes}; kernel linear in {self.kernel.name}; 𝓛 = {self.entropy}>"
