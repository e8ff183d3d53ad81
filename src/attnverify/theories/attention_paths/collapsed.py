"""The posterior with the input projection V^(0) integrated out exactly: the finite-width energy at sampled U.

Given the upper weights θ = (Z_{ℓ,h}, z_a), the network is linear in Z_0 ~ N(0, I), so f is a Gaussian
process over the training inputs with covariance (spec §1.2)

    E[f(x^μ) f(x^ν) | θ] = Σ_{ππ'} U_{ππ'}(θ) C^{μν}_{ππ'} = K^{μν}(U(θ)),   U(θ) = U_1 = s² r^1 r^1ᵀ,

and integrating Z_0 leaves y | θ ~ N(0, K(U(θ)) + T I). The collapsed potential of θ is therefore

    Φ(θ) = ½ [ yᵀ(K + TI)⁻¹y + ln det(K + TI) ] + ½ |θ|² ,

the action's energy term E(U) / 2 (spec §2.1) at the *sampled* order parameter, with the exact Gaussian
prior of θ in place of the large-N entropy 𝓛. The data reach θ only through the 𝓗×𝓗 matrix U, which
removes the stiff data directions of Z_0 and lets HMC take long steps. Gradient:
∂Φ/∂U = ½ Σ_{μν} [(K+TI)⁻¹ − ααᵀ]_{μν} C^{μν}, α = (K+TI)⁻¹y, then ∂Φ/∂r^1 = 2 s² (∂Φ/∂U) r^1 and the
same reverse pass through the layers as the uncollapsed network.

The posterior-mean predictor is Rao–Blackwellised: E[f(x) | θ, D] = k_U(x)ᵀ α (GP regression given U), so
its average over draws of θ is the posterior mean of f(x) with the Z_0 noise removed exactly.
Kernel space (P × P per chain): meant for P up to a few thousand. Two ways to the same K and ∂Φ/∂U:

* ``"kernels"``: from the path-path kernels C (𝓗² × P², made once): K = Σ U_ab C_ab and ∂Φ/∂U as one
  product with C each. Cheap while C is small (the Markov task: 1.3 MB); memory-bound beyond (one-shot,
  P = 600, 𝓗 = 16: 737 MB read twice per gradient).
* ``"features"``: from the features X̃ (P × N0𝓗): K = X̃ (I ⊗ U) X̃ᵀ, and with the Cholesky factor L of
  K + TI, Σ_μν A_μν C^μν_ab = Σ_i (L⁻¹X_{·ia})·(L⁻¹X_{·ib}) and αᵀC_ab α = Σ_i (X̃ᵀα)_{ia}(X̃ᵀα)_{ib}: about
  3 P²·N0𝓗 flops per chain, compute-bound, and no C at all.
``"auto"`` takes the kernels while C is at most 64 MiB.
"""

from __future__ import annotations

from typing import Any


from ...base import arguments
from ...base.backend import Backend
from .features import path_kernels
from .posterior import NetworkPosterior

REPRESENTATIONS = ("auto", "kernels", "features")
_KERNEL_BYTES = 64 * 2**20  # "auto" forms C up to this size


class CollapsedPosterior:
    """p(Z_{ℓ,h}, z_a | X, y) with Z_0 integrated out; the HMC state is (C, d) = layers then readout."""

    def __init__(self, network: NetworkPosterior, representation: str = "auto"):
        if not isinstance(network, NetworkPosterior):
            raise TypeError(f"network must be a NetworkPosterior (network_posterior), got {type(network).__name__}")
        representation = arguments.one_of("representation", representation, REPRESENTATIONS)
        self.network = network
        be: Backend = network.backend
        self.backend = be
        xp = be.xp
        X = be.asarray(network.features)
        paths = network.paths
        self.examples = X.shape[0]
        if representation == "auto":
            representation = "kernels" if 8 * (paths * self.examples) ** 2 <= _KERNEL_BYTES else "features"
        self.representation = representation
        if representation == "kernels":
            self.kernels = path_kernels(X, backend=be).reshape(paths * paths, -1)  # (𝓗², P·P)
        else:
            self.features = X  # (P, N0, 𝓗)
        labels = be.asarray(network.labels)
        self.labels = labels if labels.ndim == 2 else labels[None, :]
        self.layer_shapes = network.block_shapes[1:]
        self.layer_sizes = network.block_sizes[1:]
        self.dimension = sum(self.layer_sizes) + network.readout_width
        self.identity = xp.eye(self.examples)

    @property
    def temperature(self) -> float:
        return self.network.temperature

    def split(self, theta) -> tuple[list[Any], Any]:
        """(layers [(C, H, n_ℓ, n_{ℓ−1})], readout (C, n_L)) as views of θ (C, d)."""
        if theta.ndim != 2 or theta.shape[1] != self.dimension:
            raise ValueError(f"theta must be shaped (chains, {self.dimension}), got {tuple(theta.shape)}")
        chains, out, start = theta.shape[0], [], 0
        for shape, size in zip(self.layer_shapes, self.layer_sizes):
            out.append(theta[:, start:start + size].reshape((chains,) + shape))
            start += size
        return out, theta[:, start:]

    def prior_draw(self, chains: int, rng) -> Any:
        return rng.standard_normal((chains, self.dimension))

    def order_parameters(self, theta) -> list[Any]:
        """[U_1, …, U_L, U_a] per chain (they involve the upper weights only)."""
        return self.network.order_parameters_from(*self.split(theta))

    def _kernel(self, U, r1):
        """K(U) per chain (C, P, P), U = s² r¹r¹ᵀ, by either representation. From the features it is
        ΦΦᵀ with Φ = s X̃(I ⊗ r¹) (P × N0·n_0) where n_0 < 𝓗 (U of rank n_0: 2P²N0n_0 flops), else
        X̃(I ⊗ U)X̃ᵀ (2P²N0𝓗)."""
        xp = self.backend.xp
        chains = U.shape[0]
        if self.representation == "kernels":
            return (U.reshape(chains, -1) @ self.kernels).reshape(chains, self.examples, self.examples)
        X = self.features
        if r1.shape[2] < r1.shape[1]:
            Phi = (self.network.scale * xp.matmul(X[None], r1[:, None])).reshape(chains, self.examples, -1)
            return xp.stack([phi @ phi.T for phi in Phi])  # each a symmetric rank-k update
        lifted = xp.matmul(X[None], xp.swapaxes(U, 1, 2)[:, None])  # X̃(I ⊗ U): [c, μ, i, a] = Σ_b X[μ,i,b] U[a,b]
        return xp.matmul(lifted.reshape(chains, self.examples, -1), X.reshape(self.examples, -1).T)

    def _factor(self, matrices):
        """Cholesky factors of ``matrices`` (K(U) + TI per chain), and which chains have none: on a diverging
        trajectory U overflows and K + TI stops being positive definite in floating point. Those chains get
        the identity's factor (so that the solves below stay finite) and Φ = +∞, so HMC rejects them."""
        return self.backend.cholesky_each(matrices, self.identity)

    def _kernel_solve(self, U, r1):
        """Cholesky of K(U) + TI per chain; returns (factor, α, ln det, yᵀ(K+TI)⁻¹y, chains without a factor)."""
        xp = self.backend.xp
        chains = U.shape[0]
        factor, failed = self._factor(self._kernel(U, r1) + self.temperature * self.identity)
        labels = xp.broadcast_to(self.labels, (chains, self.examples))
        half = self.backend.solve_lower(factor, labels)
        alpha = self.backend.solve_lower(factor, half, transpose=True)
        log_det = 2.0 * xp.sum(xp.log(xp.diagonal(factor, axis1=1, axis2=2)), axis=1)
        return factor, alpha, log_det, xp.sum(half**2, axis=1), failed

    def _energy_gradient(self, factor, alpha):
        """½ Σ_μν [(K+TI)⁻¹ − ααᵀ]_μν C^μν per chain (C, 𝓗, 𝓗), symmetric."""
        xp = self.backend.xp
        chains, paths = factor.shape[0], self.network.paths
        if self.representation == "kernels":
            lower_inverse = self.backend.solve_lower(factor, self.identity, shared=True)
            inverse = xp.matmul(xp.swapaxes(lower_inverse, 1, 2), lower_inverse)
            middle = inverse - alpha[:, :, None] * alpha[:, None, :]
            g_U = 0.5 * (middle.reshape(chains, -1) @ self.kernels.T).reshape(chains, paths, paths)
        else:
            flat = self.features.reshape(self.examples, -1)
            Z = self.backend.solve_lower(factor, flat, shared=True)  # L⁻¹X̃
            Z = Z.reshape(chains, -1, paths)  # rows (μ, i)
            v = (alpha @ flat).reshape(chains, -1, paths)  # X̃ᵀα as (N0, 𝓗)
            g_U = 0.5 * (xp.matmul(xp.swapaxes(Z, 1, 2), Z) - xp.matmul(xp.swapaxes(v, 1, 2), v))
        return 0.5 * (g_U + xp.swapaxes(g_U, 1, 2))

    def potential_and_gradient(self, theta):
        """Φ(θ) and ∇Φ (module docstring); K + TI is factorised by Cholesky, (K+TI)⁻¹ by triangular solves."""
        xp = self.backend.xp
        net = self.network
        layers, readout = self.split(theta)
        rs = net._backward_paths(layers, readout)
        r1 = rs[0]
        U = net.scale**2 * xp.matmul(r1, xp.swapaxes(r1, 1, 2))
        factor, alpha, log_det, quadratic, failed = self._kernel_solve(U, r1)
        potential = 0.5 * (quadratic + log_det) + 0.5 * xp.sum(theta * theta, axis=1)
        potential = xp.where(failed, xp.inf, potential)  # no factor: outside the posterior's support numerically
        chains = theta.shape[0]
        g_U = self._energy_gradient(factor, alpha)
        g_r = 2.0 * net.scale**2 * xp.matmul(g_U, r1)
        layer_grads, g_readout = net.reverse_through_layers(layers, rs, g_r)
        gradient = xp.concatenate([g.reshape(chains, -1) for g in layer_grads] + [g_readout], axis=1)
        return potential, gradient + theta

    def predictive_mean(self, theta, X_test) -> Any:
        """E[f(x) | θ, D] = k_U(x)ᵀ(K(U)+TI)⁻¹y on test features (P_test, N0, 𝓗), per chain (C, P_test)."""
        xp = self.backend.xp
        net = self.network
        layers, readout = self.split(theta)
        r1 = net._backward_paths(layers, readout)[0]
        U = net.scale**2 * xp.matmul(r1, xp.swapaxes(r1, 1, 2))
        _, alpha, _, _, _ = self._kernel_solve(U, r1)
        X = self.backend.asarray(net.features)
        # k_U(x)ᵀα = Σ_{ππ'} U_{ππ'} (Σ_μ α_μ X^μ_π) · X_{π'}(x)
        weighted = xp.einsum("cm,mkp->cpk", alpha, X)  # (C, 𝓗, N0)
        projected = xp.matmul(U, weighted)  # (C, 𝓗, N0): Σ_π U_{π'π} (...)_π
        X_test = self.backend.asarray(X_test)
        flat = xp.swapaxes(X_test, 1, 2).reshape(X_test.shape[0], -1)
        return projected.reshape(theta.shape[0], -1) @ flat.T
