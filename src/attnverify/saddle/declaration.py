"""A saddle-point theory declared in sympy: its order parameters, its entropy 𝓛, and the order parameter the
kernel is linear in. The family (Li & Sompolinsky 2021 for deep linear networks; Pacelli et al. 2023 for one
hidden layer; Tiberi et al. 2024 for attention paths) shares one action

    S(U) = ½ ln det(K(U) + T·I) + ½ Yᵀ (K(U) + T·I)⁻¹ Y + 𝓛(U; N, σ²),   K(U) = Σ_ab U_ab C_ab,

with order parameters that are positive scalars or small symmetric positive-definite matrices, kernels C_ab
computed from the data, and an entropy 𝓛 that is a small sympy expression in the order parameters. The entropy's
gradient and Hessian over the independent entries u (a scalar, or U_ij with i ≤ j, each entry standing for both
U_ij and U_ji) are differentiated by sympy and generated once, as the entropy's
[`Term`][attnverify.saddle.term.Term]; the energy's come from the matrix formulas of
`attnverify.numerics.kernel_energy`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np
import sympy

from ..base import arguments
from ..base.arguments import name_mismatch
from ..numerics.symmetric import triangle
from .matrix_functions import is_matrix_order_parameter
from .measure import measure_terms
from .term import Term, entry_slices


def positive(name: str) -> sympy.Symbol:
    """A positive scalar order parameter (a kernel scale, a readout variance), as a sympy symbol."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    return sympy.Symbol(name, positive=True)


def positive_definite(name: str, size: int) -> sympy.ImmutableMatrix:
    r"""A symmetric positive-definite ``size`` $\times$ ``size`` order parameter, as a sympy matrix of its entries
    (one symbol ``name_ij`` per $i \le j$, standing in both $(i, j)$ and $(j, i)$)."""
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
        rows, cols = triangle(self.size)
        U[rows, cols] = entries
        U[cols, rows] = entries
        return U

    def entries(self, value) -> np.ndarray:
        """The independent entries of a value (a positive number, or a symmetric positive-definite matrix)."""
        if self.size == 0:
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise TypeError(f"{self.name} must be a positive number, got {value!r}"[:200]) from None
            if not (np.isfinite(number) and number > 0):
                raise ValueError(f"{self.name} must be a positive number, got {value!r}")
            return np.array([number])
        try:
            U = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"{self.name} must be a finite {self.size} × {self.size} matrix of numbers, got "
                            f"{value!r}"[:200]) from None
        if U.shape != (self.size, self.size) or not np.all(np.isfinite(U)):
            raise ValueError(f"{self.name} must be a finite {self.size} × {self.size} matrix, got shape {U.shape}")
        arguments.positive_definite_factor(self.name, U)
        return U[triangle(self.size)]


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
        if not is_matrix_order_parameter(value):
            raise ValueError(f"order parameter {name} must be a symmetric matrix of distinct symbols, one per entry "
                             f"i ≤ j (positive_definite(\"{name}\", {n}))")
        return OrderParameter(name, n, tuple(value[i, j] for i, j in zip(*triangle(n))))
    raise TypeError(f"order parameter {name} must be positive(\"{name}\") or positive_definite(\"{name}\", n), got "
                    f"{type(value).__name__}")


class SaddlePointAction:
    r"""The declaration: ``order_parameters`` (name → [`positive`][attnverify.saddle.declaration.positive] or
    [`positive_definite`][attnverify.saddle.declaration.positive_definite]), ``entropy`` $\mathcal{L}$ (a sympy
    expression in them and in named parameters, positive unless a symbol is declared ``real=True``;
    [`log_det`][attnverify.saddle.log_det] and
    [`inverse`][attnverify.saddle.inverse] of a matrix order parameter are evaluated by Cholesky), ``kernel`` (the name
    of the order parameter the kernel is linear in, $K(U) = \sum_{ab} U_{ab} C_{ab}$; a scalar $Q$ gives
    $K = Q \cdot C$) and ``width`` (the symbol $N$ of the large-width expansion, or one symbol per layer
    $(n_0, \dots, n_L)$: $\mathcal{L} = O(\max n)$, so the GP limit $n \to \infty$ is the entropy's minimum). The
    action is
    $S = \tfrac12 \ln\det(K + T \cdot I) + \tfrac12 Y^\top (K + T \cdot I)^{-1} Y + \mathcal{L}$; the temperature $T$
    and the data enter at the solve. ``display`` names how the report prints a parameter whose name is a Python
    identifier, in sympy's notation: ``{"sigma2": "sigma^2"}`` prints $\sigma^2$, where sympy alone reads the trailing
    digit of ``sigma2`` as a subscript ($\sigma_2$).

    ``measure``: the measure $e^{-S}$ is a density against, which the saddle point never reads but the posterior
    mean beyond it does ([`posterior_mean`][attnverify.saddle.posterior_mean]): ``"wishart"`` (the default: $dQ/Q$
    for a scalar, $\det(U)^{-(d+1)/2}\, dU$ for a $d \times d$ matrix), ``"flat"`` ($du$), or a dict naming each order
    parameter's log-density term $m(u)$, $d\mu = e^{m(u)}\, du$ (``{"Q": -sympy.log(Q)}`` is $dQ/Q$). The default is
    exact for every entropy whose $-\ln\det U$ carries the Wishart's $n/2$, as the large-deviation function of a
    Gaussian weight's squared norm does ([`wishart_entropy`][attnverify.saddle.wishart_entropy], the examples, the
    attention-path action): its exact density is
    $\det(U)^{(n-d-1)/2} e^{-(n/2)\operatorname{tr}(V^{-1}U)} = e^{-\mathcal{L}} \det(U)^{-(d+1)/2}$ (`measure`). An
    entropy from another prior states its own."""

    def __init__(self, *, order_parameters: Mapping[str, Any], entropy, kernel: str, width,
                 display: Mapping[str, str] | None = None, measure="wishart"):
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
        if self.entropy.has(sympy.I):
            raise ValueError(f"entropy must be real: the action e^{{-S}} weighs the order parameters, got "
                             f"{self.entropy} (it holds the imaginary unit I)"[:300])
        names = [op.name for op in self.order_parameters]
        if kernel not in names:
            raise ValueError(f"kernel must name an order parameter ({', '.join(names)}), got {kernel!r}")
        self.kernel = next(op for op in self.order_parameters if op.name == kernel)
        widths = tuple(width) if isinstance(width, (tuple, list)) else (width,)
        if not widths or not all(isinstance(w, sympy.Symbol) for w in widths) or len(set(widths)) != len(widths):
            raise TypeError(f"width must be the sympy symbol of the width N, or distinct symbols (n_0, …, n_L) of the "
                            f"layers' widths, got {width!r}")
        self.entropy_term = term = Term(self.entropy, self.order_parameters, what="the entropy")
        self.parameters = term.parameters
        free = term.expanded.free_symbols - set(term.auxiliaries)
        missing = [w.name for w in widths if w not in self.parameters]
        if missing:
            raise ValueError(f"width {', '.join(missing)} must appear in the entropy (𝓛 grows with N); its "
                             f"parameters: {', '.join(s.name for s in self.parameters) or 'none'}")
        self.widths, self.width = widths, widths[0]
        self._width_indices = [self.parameters.index(w) for w in widths]
        used = free | {s for op, _ in term.atoms for s in op.symbols}
        unused = [op.name for op in self.order_parameters if not set(op.symbols) & used and op is not self.kernel]
        if unused:
            raise ValueError(f"order parameter(s) {', '.join(unused)} appear neither in the entropy nor as the kernel's")
        self.parameter_names = tuple(s.name for s in self.parameters)
        display = dict(display or {})
        unknown = sorted(set(display) - set(self.parameter_names))
        if unknown or not all(isinstance(v, str) and v for v in display.values()):
            raise ValueError(f"display must map parameters of the action ({', '.join(self.parameter_names)}) to "
                             f"names in sympy's notation (e.g. 'sigma^2'), got {display!r}")
        # the assumptions as given (positive=True), not all they imply: an equal symbol with the implied ones
        # spelt out would enter sympy's caches, and the derivations that share its name would be kept with it
        self.display = {p: sympy.Symbol(display[p.name], **getattr(p, "_assumptions_orig", p.assumptions0))
                        for p in self.parameters if p.name in display}
        self.measure = measure_terms(measure, self.order_parameters)  # name → log-density m(u): dμ = e^{m} du

    @property
    def size(self) -> int:
        """The number of independent entries over all order parameters."""
        return len(self.entry_symbols)

    def scale(self, parameters: tuple) -> float:
        r"""The largest width's value among the parameter values ($\mathcal{L} = O(\max n)$; the solver works with
        $S/\max n$)."""
        return max(parameters[i] for i in self._width_indices)

    @functools.cached_property
    def real_parameters(self) -> frozenset:
        """The names of the parameters declared real and not positive (``sympy.Symbol("b", real=True)``): any finite
        number; every other parameter (the widths, variances, any symbol declared positive or left without
        assumptions) is a positive one."""
        widths = {w.name for w in self.widths}
        return frozenset(s.name for s in self.parameters
                         if s.is_real and not s.is_positive and s.name not in widths)

    def parameter_values(self, values: Mapping[str, float]) -> tuple[float, ...]:
        """The parameters' values in declaration order, checked by name: each a positive finite number, or any finite
        number for a parameter declared real (`real_parameters`)."""
        wrong = name_mismatch(list(values), self.parameter_names)
        if wrong:
            raise TypeError(f"the action's parameters are {', '.join(self.parameter_names)}" + wrong)
        out, real = [], self.real_parameters
        for name in self.parameter_names:
            if name in real:
                out.append(arguments.real(name, values[name]))
                continue
            try:
                out.append(arguments.positive(name, values[name]))
            except (TypeError, ValueError):
                raise ValueError(f"{name} must be a positive finite number (declare its symbol real=True for any "
                                 f"finite number), got {values[name]!r}") from None
        return tuple(out)

    def with_widths(self, values: Mapping[str, Any], change: Callable[[float], float]) -> dict:
        r"""``values`` with every layer's width $n$ replaced by ``change(n)``, the other parameters as they are (all
        widths scaled alike keep their ratios, and $U_\text{GP}$; all shifted alike move each layer's degrees of
        freedom)."""
        return {**values, **{w.name: change(float(values[w.name])) for w in self.widths}}

    def check_integer_widths(self, values: Mapping[str, float]) -> None:
        r"""Refuse, by name, a width that is not a whole number $\ge 1$ (a sampled network has integer layers)."""
        for w in self.widths:
            value = values.get(w.name)
            if value is None or isinstance(value, bool) or not np.isfinite(value) or value < 1 or \
                    float(value) != int(value):
                raise ValueError(f"{w.name} must be a whole number ≥ 1 for a sampled network (a layer's width), "
                                 f"got {value!r}")

    def entropy_value_and_gradient(self, entries: np.ndarray, parameters: tuple) -> tuple[float, np.ndarray]:
        r"""$\mathcal{L}$ and $\partial\mathcal{L}/\partial u$ at the entries $u$ (the entropy's generated
        [`Term`][attnverify.saddle.term.Term])."""
        return self.entropy_term.value_and_gradient(entries, parameters)

    def entropy_hessian(self, entries: np.ndarray, parameters: tuple) -> np.ndarray:
        r"""$\partial^2\mathcal{L}/\partial u\,\partial u'$ at the entries $u$ (the entropy's generated
        [`Term`][attnverify.saddle.term.Term])."""
        return self.entropy_term.hessian(entries, parameters)

    def split(self, entries: np.ndarray) -> dict[str, Any]:
        """name → value (a float or a symmetric matrix) from the flat entries."""
        return {op.name: op.value(entries[part])
                for op, part in zip(self.order_parameters, entry_slices(self.order_parameters).values())}

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
