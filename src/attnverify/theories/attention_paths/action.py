"""The attention-path action declared on the saddle-point engine (`attnverify.saddle`); Tiberi et al. (NeurIPS
2024) §2.1, docs/papers/attention_paths.md, in the engine's convention S = ½E + 𝓛:

    𝓛 = ½ { n_L [U_a/σ_a² − ln U_a]
           + Σ_{ℓ=1}^{L} n_{ℓ−1} [ (1/σ_ℓ²) Tr(U_{ℓ+1}^{-1} Tr_{h_ℓ} U_ℓ) − ln det U_ℓ + H_ℓ ln det U_{ℓ+1} ] },

U_{L+1} ≡ U_a, h_ℓ the slow (head) index of U_ℓ (paths packed row-major, h_1 slowest), the kernel linear in U_1
(K = Σ_ππ' (U_1)_ππ' C_ππ'). ln det and U⁻¹ of the matrix order parameters are the engine's Cholesky atoms, so the
declaration stays small for any number of heads. `ActionConfig` checks a network's heads, widths, prior
variances and temperature once and names their values for the engine.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import sympy

from . import derivations as derived
from ...base import arguments
from ...saddle import SaddlePointAction, Solution, inverse, log_det, positive, positive_definite, solve


def _partial_trace(U: sympy.MatrixBase, heads_here: int) -> sympy.Matrix:
    """Tr_{h_ℓ} U_ℓ: the trace over the slow (head) index of U_ℓ, of size H_ℓ·D_{ℓ+1}."""
    rest = U.shape[0] // heads_here
    return sympy.Matrix(rest, rest, lambda a, b: sum(U[h * rest + a, h * rest + b] for h in range(heads_here)))


def attention_paths_action(heads: Sequence[int], *, equal_widths: bool = False,
                           equal_variances: bool = False) -> SaddlePointAction:
    """The action of the attention network with ``heads`` = (H_1, …, H_L): order parameters U1, …, UL
    (D_ℓ × D_ℓ, D_ℓ = Π_{k≥ℓ} H_k; a positive scalar where D_ℓ = 1) and Ua; parameters n0…nL (the widths; one
    N for all with ``equal_widths``), sigma1…sigmaL (σ_ℓ²; one sigma for all layers with ``equal_variances``)
    and sigma_a (σ_a²). With both, every depth declares the same parameters (N, sigma, sigma_a): one family over
    the heads."""
    heads = arguments.integers("heads", heads, 1)
    if int(np.prod(heads)) > 32:
        raise ValueError(f"heads must make at most 32 attention paths (Π H_ℓ, the size of U_1, a small matrix the "
                         f"solver works with), got {heads}: {int(np.prod(heads))} paths")
    return _declared(heads, bool(equal_widths), bool(equal_variances))


@functools.lru_cache(maxsize=None)
def _declared(heads: tuple[int, ...], equal_widths: bool, equal_variances: bool) -> SaddlePointAction:
    L = len(heads)
    if equal_widths:
        widths = [sympy.Symbol("N", positive=True)] * (L + 1)
    else:
        widths = [sympy.Symbol(f"n{level}", positive=True) for level in range(L + 1)]
    if equal_variances:
        variances = [sympy.Symbol("sigma", positive=True)] * L
    else:
        variances = [sympy.Symbol(f"sigma{level}", positive=True) for level in range(1, L + 1)]
    sigma_a = sympy.Symbol("sigma_a", positive=True)
    sizes = [int(np.prod(heads[level:])) for level in range(L)]
    names = [f"U{level}" for level in range(1, L + 1)]
    order = {name: positive(name) if D == 1 else positive_definite(name, D) for name, D in zip(names, sizes)}
    order["Ua"] = U_a = positive("Ua")
    values = [order[n] for n in names] + [U_a]

    def logdet(U):
        return log_det(U) if isinstance(U, sympy.MatrixBase) else sympy.log(U)

    def inv(U):
        return inverse(U) if isinstance(U, sympy.MatrixBase) else sympy.Matrix([[1 / U]])

    entropy = widths[L] * (U_a / sigma_a - sympy.log(U_a))
    for level in range(L):
        U, upper = values[level], values[level + 1]
        traced = _partial_trace(U if isinstance(U, sympy.MatrixBase) else sympy.Matrix([[U]]), heads[level])
        entropy += widths[level] * (sum((inv(upper) * traced).diagonal()) / variances[level] - logdet(U)
                                    + heads[level] * logdet(upper))
    width = widths[0] if equal_widths else tuple(widths)
    display = ({"sigma": "sigma^2"} if equal_variances else
               {f"sigma{level}": f"sigma_{level}^2" for level in range(1, L + 1)}) | {"sigma_a": "sigma_a^2"}
    return SaddlePointAction(order_parameters=order, entropy=entropy / 2, kernel="U1", width=width, display=display)


@dataclass(frozen=True)
class ActionConfig:
    """Architecture and priors of the action, checked once (`build`).

    heads       (H_1, …, H_L): heads per layer
    widths      (n_0, …, n_L): widths after V^(0) and after each attention layer
    variances   (σ_1², …, σ_L², σ_a²): prior variances of V^(ℓ) and of the readout a
                (σ_0² enters only through the path features X = sqrt(σ_0²/(N0𝓗)) ξ)
    temperature T > 0 of the Gibbs posterior
    """

    heads: tuple[int, ...]
    widths: tuple[float, ...]
    variances: tuple[float, ...]
    temperature: float

    @property
    def depth(self) -> int:
        return len(self.heads)

    @property
    def paths(self) -> int:
        """𝓗 = Π H_ℓ, the number of attention paths."""
        return int(np.prod(self.heads))

    def dimension(self, level: int) -> int:
        """D_ℓ = Π_{k ≥ ℓ} H_k, the size of U_ℓ (level 1..L)."""
        return int(np.prod(self.heads[level - 1:]))

    @property
    def below_wishart_rank(self) -> bool:
        """n_{ℓ−1} < D_ℓ for some layer: the leading-order theory is then a formal extrapolation (a sampled U_ℓ
        would be rank-deficient; spec §5 quirk 7)."""
        return any(self.widths[level - 1] < self.dimension(level) for level in range(1, self.depth + 1))

    @property
    def action(self) -> SaddlePointAction:
        return attention_paths_action(self.heads)

    def parameters(self) -> dict[str, float]:
        """The action's parameter values by name (n0…nL, sigma1…sigmaL, sigma_a)."""
        out = {f"n{level}": n for level, n in enumerate(self.widths)}
        out.update({f"sigma{level}": v for level, v in enumerate(self.variances[:-1], start=1)})
        out["sigma_a"] = self.variances[-1]
        return out

    def start(self, order_parameters: Sequence[np.ndarray], readout: float | None = None) -> dict[str, Any]:
        """A start for the engine from (U_1, …, U_L) (and U_a, else its GP value σ_a²), each checked by name."""
        shapes = [(self.dimension(level),) * 2 for level in range(1, self.depth + 1)]
        if isinstance(order_parameters, (str, bytes)) or not isinstance(order_parameters, (Sequence, np.ndarray)) \
                or len(order_parameters) != len(shapes):
            raise ValueError(f"start must hold L = {self.depth} order parameters (U_1, …, U_L) of shapes {shapes} "
                             f"for heads = {self.heads}, got {order_parameters!r}"[:300])
        out: dict[str, Any] = {}
        for level, (U, shape) in enumerate(zip(order_parameters, shapes), start=1):
            U = arguments.array(f"start[{level - 1}]", U, shape=shape)
            arguments.positive_definite_factor(f"start[{level - 1}]", U)
            out[f"U{level}"] = float(U[0, 0]) if shape == (1, 1) else U
        if readout is None:  # U_a where ∂S/∂U_a = 0 at this U_L (its closed form, derivation attention_paths.readout)
            L = self.depth
            trace = float(np.trace(np.atleast_2d(order_parameters[-1])))
            readout = derived.readout_order_parameter(trace, self.heads[L - 1], self.widths[L - 1], self.widths[L],
                                                      self.variances[L - 1], self.variances[L], check_arguments=False)
        out["Ua"] = float(readout)
        return out

    @classmethod
    def build(cls, heads: Sequence[int], width, temperature: float, prior_var=1.0) -> "ActionConfig":
        """Validate and normalise the public arguments (width and prior_var may be scalars)."""
        heads = arguments.integers("heads", heads, 1)
        L = len(heads)
        widths = arguments.positives("width", width, L + 1, "(n_0, …, n_L)")
        variances = arguments.positives("prior_var", prior_var, L + 1, "(σ_1², …, σ_L², σ_a²)")
        temperature = arguments.positive("temperature", temperature)
        return cls(heads, widths, variances, temperature)


def order_parameters(solution: Solution) -> tuple[np.ndarray, ...]:
    """(U_1, …, U_L) of an attention-path solution, as matrices (a scalar U_ℓ as 1 × 1)."""
    names = sorted((n for n in solution.order_parameters if n != "Ua"), key=lambda n: int(n[1:]))
    return tuple(solution.matrix(n) for n in names)


def solve_paths(data: Mapping[str, Any], *, heads: Sequence[int], width, temperature: float, prior_var=1.0,
                start: Sequence[np.ndarray] | None = None, **options) -> Solution:
    """The engine's `attnverify.saddle.solve` of the attention-path action for ``data`` (X (P, N0, 𝓗) or C
    (𝓗, 𝓗, P, P), and y), with width = N or (n_0, …, n_L) and prior_var = σ² or (σ_1², …, σ_L², σ_a²) checked by
    `ActionConfig.build`; ``start`` (U_1, …, U_L) a neighbour's order parameters; ``options`` as the engine's
    (tolerance, space, backend, raise_on_failure, …)."""
    config = ActionConfig.build(heads, width, temperature, prior_var)
    initial = None if start is None else config.start(start)
    return solve(config.action, data, temperature=config.temperature, start=initial, **options,
                 **config.parameters())
