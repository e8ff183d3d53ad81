"""The Bayesian posterior of a deep multi-head attention network with fixed attention and linear values.

Tiberi et al. (NeurIPS 2024); spec ``attention_paths.md`` §1 (forward pass) and §1.1 (effective weights):

    f(x) = Σ_π V^eff_π · ξ^π(x),   p(Θ | D) ∝ exp(−Σ_μ (f(x^μ) − y^μ)² / (2T)) × Gaussian priors.

Attention is fixed, so the path features X^μ_π = sqrt(σ_0²/(N0𝓗)) ξ^π(x^μ) are precomputed and the network
is multilinear in its weights. In prior-whitened coordinates (every block has a N(0, I) prior:
V^(0) = σ_0 Z_0, V^(ℓ)_h = σ_ℓ Z_{ℓ,h}, a = σ_a z_a; σ_0 sits in X)

    r^{L+1} = z_a,   r^ℓ_{(h_ℓ … h_L)} = Z_{ℓ,h_ℓ}ᵀ r^{ℓ+1}_{(h_{ℓ+1} … h_L)} ∈ R^{n_{ℓ−1}},
    β_π = s · Z_0ᵀ r^1_π ∈ R^{N0},   s = sqrt(σ_a² Π_{ℓ≥1} σ_ℓ² / (n_0 n_1 ⋯ n_L)),
    f(x^μ) = Σ_π β_π · X^μ_π = ⟨β, Φ^μ⟩,   Φ^μ = (X^μ_π)_π flattened path-major to 𝓗·N0.

The likelihood sees the data only through Φ and y: with the thin QR factorisation Φ = QR (when P > N0𝓗)
Σ_μ (f_μ − y_μ)² = |Rβ − Qᵀy|² + (|y|² − |Qᵀy|²), so the cost of a step does not grow with P. Its
square-root form is used instead of the Gram matrix ΦᵀΦ, whose condition number is the square.

The sampled order parameters (spec §1.2, ``evaluate_sampled_order_parameter``) are
U_ℓ = r̃^ℓ r̃^ℓᵀ / n_{ℓ−1} with r̃^ℓ = (n_L ⋯ n_ℓ)^{-1/2} aᵀ V^(L) ⋯ V^(ℓ), i.e. in whitened coordinates
U_ℓ = σ_a² Π_{k≥ℓ} σ_k² / (n_{ℓ−1} n_ℓ ⋯ n_L) · r^ℓ r^ℓᵀ, and U_a = σ_a² |z_a|² / n_L. U = U_1 is the
path-path overlap of effective weights whose posterior mean the theory predicts.

All array code goes through ``backend.xp`` (numpy or cupy, unchanged); chains are the leading axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ...base import arguments
from ...base.backend import Backend, array_module
from .action import ActionConfig

MAX_WEIGHTS = 10**8
"""The most sampled weights per chain, n_0·N0 + Σ_ℓ H_ℓ n_ℓ n_{ℓ−1} + n_L: every chain holds them, their
gradient and a leapfrog copy in float64, so 10^8 weights already take 2.4 GB per chain."""


def _weight_count(widths: Sequence[int], heads: Sequence[int], input_width: int) -> int:
    """n_0·N0 + Σ_ℓ H_ℓ n_ℓ n_{ℓ−1} + n_L: Z_0, the value weights of every head, and the readout."""
    return widths[0] * input_width + sum(h * widths[l + 1] * widths[l] for l, h in enumerate(heads)) + widths[-1]


def _largest_equal_width(heads: Sequence[int], input_width: int) -> int:
    """The largest N with every n_ℓ = N within `MAX_WEIGHTS`."""
    low, high = 0, MAX_WEIGHTS
    while low < high:
        middle = (low + high + 1) // 2
        if _weight_count([middle] * (len(heads) + 1), heads, input_width) <= MAX_WEIGHTS:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class Weights:
    """A batch of network weights in whitened coordinates.

    hidden   (C, d): Z_0 and every Z_{ℓ,h}, flattened per chain (the HMC block)
    readout  (C, n_L): z_a (drawn by Gibbs from its Gaussian conditional)
    """

    hidden: Any
    readout: Any


class PathLayers:
    """The network's layers without data: heads, widths n_0…n_L (whole numbers), prior variances and the input width
    N0, with the whitened blocks' shapes and the scale s (module docstring); the backward paths r^ℓ, their reverse
    pass and the sampled order parameters U_ℓ, U_a. Every array operation takes the array module of its arguments
    (numpy or cupy), so one set of layers serves either backend."""

    def __init__(self, *, heads: Sequence[int], width, input_width: int, prior_var=1.0, temperature: float = 1.0):
        self.config = ActionConfig.build(heads, width, temperature, prior_var)
        widths = self.config.widths
        if any(float(n) != int(n) or n < 1 for n in widths):
            raise ValueError(f"width must be whole numbers ≥ 1 to sample a network, got {widths}")
        self.widths = tuple(int(n) for n in widths)
        self.input_width = arguments.integer("input_width", input_width, 1)
        count = _weight_count(self.widths, self.config.heads, self.input_width)
        if count > MAX_WEIGHTS:
            raise ValueError(
                f"width (n_0, …, n_L) = ({', '.join(f'{n:.3g}' for n in widths)}) gives {count:.3g} weights per "
                f"chain (n_0·N0 + Σ_ℓ H_ℓ n_ℓ n_ℓ₋₁ + n_L with N0 = {self.input_width}); at most "
                f"{MAX_WEIGHTS:.0e} can be sampled (each chain holds them, their gradient and a leapfrog copy in "
                f"float64): width must be ≤ {_largest_equal_width(self.config.heads, self.input_width)} when every "
                "layer has the same width")
        self.paths = self.config.paths
        *layer_variances, readout_variance = self.config.variances
        self.scale = math.sqrt(readout_variance * math.prod(layer_variances) / math.prod(self.widths))
        n = self.widths
        self.block_shapes = [(n[0], self.input_width)] + [
            (h, n[l + 1], n[l]) for l, h in enumerate(self.config.heads)]
        self.block_sizes = [math.prod(shape) for shape in self.block_shapes]
        self.dimension = sum(self.block_sizes)

    @property
    def readout_width(self) -> int:
        return self.widths[-1]

    def _backward_paths(self, layers, readout) -> list[Any]:
        """[r^1, …, r^{L+1}], r^ℓ of shape (C, D_ℓ, n_{ℓ−1}) (paths packed h_ℓ slowest), r^{L+1} = z_a.

        r^ℓ[c, h] = r^{ℓ+1}[c] Z_{ℓ,h}[c] as batched matrix products (rows are the vectors r).
        """
        xp = array_module(readout)
        r = readout[:, None, :]
        out = [r]
        for Z in reversed(layers):
            c, h, _, n_in = Z.shape
            r = xp.matmul(r[:, None], Z).reshape(c, h * r.shape[1], n_in)
            out.append(r)
        return out[::-1]

    def reverse_through_layers(self, layers, rs, g_r):
        """Reverse pass from ∂/∂r^1 (C, 𝓗, n_0) to ([∂/∂Z_ℓ for ℓ = 1..L], ∂/∂z_a), using
        r^ℓ[c, h] = r^{ℓ+1}[c] Z_{ℓ,h}[c]."""
        xp = array_module(g_r)
        grads = []
        for level, Z in enumerate(layers, start=1):
            c, h, n_out, n_in = Z.shape
            g_r = g_r.reshape(c, h, -1, n_in)
            grads.append(xp.matmul(xp.swapaxes(rs[level], 1, 2)[:, None], g_r))
            g_r = xp.sum(xp.matmul(g_r, xp.swapaxes(Z, 2, 3)), axis=1)
        return grads, g_r[:, 0, :]

    def order_parameters_from(self, layers, readout) -> list[Any]:
        """[U_1, …, U_L, U_a] from the layers Z_{ℓ,h} and readout z_a alone (Z_0 does not enter)."""
        xp = array_module(readout)
        rs = self._backward_paths(layers, readout)
        *layer_variances, readout_variance = self.config.variances
        out = []
        for level, r in enumerate(rs[:-1], start=1):
            factor = readout_variance * math.prod(layer_variances[level - 1:]) / math.prod(self.widths[level - 1:])
            out.append(factor * xp.matmul(r, xp.swapaxes(r, 1, 2)))
        out.append(readout_variance * xp.sum(readout ** 2, axis=1) / self.widths[-1])
        return out


class NetworkPosterior(PathLayers):
    """p(Z_0, Z_{ℓ,h}, z_a | X, y) for a batch of chains; see the module docstring for the parametrisation.

    y is (P,) for one data set shared by all chains, or (C, P) for one data set per chain (used by
    simulation-based calibration, where every chain fits its own simulated labels).
    """

    def __init__(self, X, y, *, heads: Sequence[int], width, temperature: float, prior_var=1.0,
                 backend: str | Backend | None = None):
        config = ActionConfig.build(heads, width, temperature, prior_var)  # the architecture's arguments first
        self.backend = be = arguments.backend(backend)
        X = arguments.array("X", be.to_numpy(X) if hasattr(X, "dtype") else X, ndim=3)
        if X.shape[2] != config.paths:
            raise ValueError(f"X must be shaped (P, N0, paths = {config.paths}) for heads "
                             f"{config.heads}, got {X.shape}")
        y = arguments.array("y", be.to_numpy(y) if hasattr(y, "dtype") else y, min_ndim=1)
        if y.shape[-1:] != (X.shape[0],) or y.ndim > 2:
            raise ValueError(f"y must be shaped (P,) = ({X.shape[0]},), or (chains, P) for one data set per "
                             f"chain, got {y.shape}")
        super().__init__(heads=heads, width=width, input_width=X.shape[1], prior_var=prior_var,
                         temperature=temperature)
        self.features, self.labels = X, y
        self.examples = X.shape[0]
        design = np.swapaxes(X, 1, 2).reshape(self.examples, -1)  # Φ, path-major columns (π, k)
        if self.examples > design.shape[1]:
            q, r = np.linalg.qr(design, mode="reduced")
            target = y @ q
            offset = np.maximum(np.sum(y * y, axis=-1) - np.sum(target * target, axis=-1), 0.0)
            design = r
        else:
            target = y
            offset = np.zeros(y.shape[:-1])
        self.design = be.asarray(design)
        self.target = be.asarray(np.atleast_2d(target))  # (1 or C, r): one data set, or one per chain
        self.residual_offset = be.asarray(np.atleast_1d(offset))

    # ------------------------------------------------------------------ layout

    @property
    def temperature(self) -> float:
        return self.config.temperature

    def blocks(self, hidden) -> list[Any]:
        """Views (C, *shape) of Z_0, Z_1, …, Z_L inside the flat hidden weights (C, d)."""
        if hidden.ndim != 2 or hidden.shape[1] != self.dimension:
            raise ValueError(f"hidden weights must be shaped (chains, {self.dimension}), got {tuple(hidden.shape)}")
        out, start = [], 0
        for shape, size in zip(self.block_shapes, self.block_sizes):
            out.append(hidden[:, start:start + size].reshape((hidden.shape[0],) + shape))
            start += size
        return out

    def prior_draw(self, chains: int, rng) -> Weights:
        """Independent draws from the prior (standard normal in whitened coordinates)."""
        chains = arguments.integer("chains", chains, 1)
        return Weights(rng.standard_normal((chains, self.dimension)),
                       rng.standard_normal((chains, self.readout_width)))

    # ------------------------------------------------------------------ forward pass

    def effective_weights(self, weights: Weights):
        """β (C, 𝓗, N0), path-major: f(x) = Σ_π β_π · X_π(x)."""
        z0, *layers = self.blocks(weights.hidden)
        r1 = self._backward_paths(layers, weights.readout)[0]
        return self.scale * self.backend.xp.matmul(r1, z0)

    def outputs(self, weights: Weights, X):
        """f(x^μ) for every chain (C, P) on features X (P, N0, 𝓗)."""
        xp = self.backend.xp
        X = self.backend.asarray(X)
        beta = self.effective_weights(weights)
        flat = xp.swapaxes(X, 1, 2).reshape(X.shape[0], -1)
        return beta.reshape(beta.shape[0], -1) @ flat.T

    # ------------------------------------------------------------------ potential

    def potential_and_gradient(self, weights: Weights, *, readout_gradient: bool = False):
        """Φ = |Rβ − c|²/(2T) + (|Z|² + |z_a|² + residual offset/T)/2 and ∇Φ with respect to the hidden block.

        Closed-form reverse pass of the multilinear network (no autodiff). With ``readout_gradient`` also
        returns ∇_{z_a}Φ, used by tests only (z_a is drawn by Gibbs).
        """
        xp = self.backend.xp
        T = self.temperature
        z0, *layers = self.blocks(weights.hidden)
        rs = self._backward_paths(layers, weights.readout)
        beta = self.scale * xp.matmul(rs[0], z0)
        chains = beta.shape[0]
        residual = beta.reshape(chains, -1) @ self.design.T - self.target
        potential = (xp.sum(residual * residual, axis=1) + self.residual_offset) / (2 * T) + 0.5 * (
            xp.sum(weights.hidden * weights.hidden, axis=1) + xp.sum(weights.readout * weights.readout, axis=1))
        g_beta = (residual @ (self.design * (self.scale / T))).reshape(beta.shape)
        g_z0 = xp.matmul(xp.swapaxes(rs[0], 1, 2), g_beta)
        layer_grads, g_readout = self.reverse_through_layers(layers, rs, xp.matmul(g_beta, xp.swapaxes(z0, 1, 2)))
        gradient = xp.concatenate([g.reshape(chains, -1) for g in [g_z0] + layer_grads], axis=1)
        gradient += weights.hidden
        if readout_gradient:
            return potential, gradient, g_readout + weights.readout
        return potential, gradient

    # ------------------------------------------------------------------ Gibbs step for the readout

    def readout_design(self, hidden):
        """F (C, r, n_L) with Rβ = F z_a: the network is linear in the readout.

        ∂β_π/∂z_a = s (Z_{L,h_L} ⋯ Z_{1,h_1} Z_0)ᵀ, the products built layer by layer (h_1 slowest).
        """
        xp = self.backend.xp
        z0, *layers = self.blocks(hidden)
        chains = hidden.shape[0]
        product = z0[:, None]  # (C, D, n, N0), D paths so far
        for Z in layers:
            product = xp.matmul(Z[:, None], product[:, :, None]).reshape(
                chains, -1, Z.shape[2], self.input_width)
        # product (C, 𝓗, n_L, N0) -> (C, n_L, 𝓗·N0), path-major like the design's columns
        jacobian = xp.swapaxes(product, 1, 2).reshape(chains, self.readout_width, -1)
        return self.scale * xp.swapaxes(xp.matmul(jacobian, self.design.T), 1, 2)

    def draw_readout(self, hidden, rng):
        """z_a ~ p(z_a | Z, D) = N(Λ⁻¹h, Λ⁻¹), Λ = I + FᵀF/T, h = Fᵀc/T (exact Gibbs step).

        With Λ = LLᵀ (Cholesky), z_a = L⁻ᵀ(L⁻¹h + ε), ε ~ N(0, I).
        """
        xp = self.backend.xp
        T = self.temperature
        F = self.readout_design(hidden)
        n = F.shape[2]
        precision = xp.eye(n) + xp.matmul(xp.swapaxes(F, 1, 2), F) / T
        target = xp.broadcast_to(self.target, F.shape[:2])
        h = xp.matmul(target[:, None, :], F)[:, 0, :] / T
        L = self.backend.cholesky(precision)  # I + FᵀF/T: positive definite for any finite F
        whitened = self.backend.solve_lower(L, h) + rng.standard_normal(h.shape)
        return self.backend.solve_lower(L, whitened, transpose=True)

    # ------------------------------------------------------------------ order parameters

    def order_parameters(self, weights: Weights) -> list[Any]:
        """[U_1, …, U_L, U_a] per chain: U_ℓ (C, D_ℓ, D_ℓ), U_a (C,) (module docstring)."""
        _, *layers = self.blocks(weights.hidden)
        return self.order_parameters_from(layers, weights.readout)


def network_posterior(X, y, *, heads: Sequence[int], width, temperature: float, prior_var=1.0,
                      backend: str | Backend | None = None) -> NetworkPosterior:
    """The posterior of the network with path features X (P, N0, 𝓗) and labels y (P,)."""
    return NetworkPosterior(X, y, heads=heads, width=width, temperature=temperature, prior_var=prior_var,
                            backend=backend)
