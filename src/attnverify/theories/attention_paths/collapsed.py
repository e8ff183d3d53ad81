"""The attention network as a `attnverify.saddle.network.Network`: the input projection V^(0) is its linear
readout, integrated out exactly by the one collapsed posterior of `attnverify.saddle.network`.

Given the upper weights θ = (Z_{ℓ,h}, z_a) the network is linear in Z_0 ~ N(0, I) (readout variance v = 1, units
(k, i) ∈ n_0 × N0), with features Φ^μ_{(k,i)} = s Σ_π r^1_{πk} X^μ_{iπ} (``posterior``'s notation), so (spec §1.2)

    K^{μν}(θ) = (ΦΦᵀ)^{μν} = Σ_{ππ'} U_{ππ'}(θ) C^{μν}_{ππ'},   U(θ) = U_1 = s² r^1 r^1ᵀ,

and the collapsed potential Ψ(θ) = ½[yᵀ(K + TI)⁻¹y + ln det(K + TI)] + ½|θ|² is the action's energy E(U)/2 (spec
§2.1) at the *sampled* order parameter. The data reach θ only through the 𝓗 × 𝓗 matrix U, which removes the stiff
data directions of Z_0 and lets HMC take long steps. ∂Ψ/∂U = Σ_{μν} G_{μν} C^{μν} with G = ∂Ψ/∂K, then
∂Ψ/∂r^1 = 2 s² (∂Ψ/∂U) r^1 and the reverse pass through the layers. Two ways to the same K and ∂Ψ/∂U
(``representation``), both cheaper than ΦΦᵀ (M = n_0·N0 units):

* ``"kernels"``: from the path-path kernels C (𝓗² × P², made once): K = Σ U_ab C_ab and ∂Ψ/∂U as one product with
  C each. Cheap while C is small (the Markov task: 1.3 MB); memory-bound beyond.
* ``"features"``: from X̃ (P × N0𝓗): K = X̃(I ⊗ U)X̃ᵀ (or ΦΦᵀ when n_0 < 𝓗), and with L the Cholesky factor of
  K + TI, Σ_μν (K+TI)⁻¹_μν C^μν_ab = Σ_i (L⁻¹X̃_{·ia})·(L⁻¹X̃_{·ib}), αᵀC_ab α = Σ_i (X̃ᵀα)_{ia}(X̃ᵀα)_{ib}: no C
  at all.

``"auto"`` takes the kernels while C is at most 64 MiB. The posterior-mean predictor is Rao–Blackwellised:
E[f(x) | θ, D] = K_θ(x, X)α, whose average over draws of θ is the posterior mean of f(x) with Z_0 integrated out.
"""

from __future__ import annotations

from ...base import arguments
from ...base.backend import array_module, get_backend, on_device
from ...numerics.kernel_solve import KernelSolve
from ...saddle.network import CollapsedNetworkPosterior, Network
from .features import path_kernels
from .posterior import NetworkPosterior, PathLayers

REPRESENTATIONS = ("auto", "kernels", "features")
_KERNEL_BYTES = 64 * 2**20  # "auto" forms C up to this size


class PathInputs:
    """Path features X (P, N0, 𝓗) on their backend (that of the array given), the representation the kernel takes for
    them (``"auto"`` resolved by `resolved_representation`), and their path-path kernels times ``scale``,
    s²C (𝓗², P·P), made on first use."""

    def __init__(self, features, scale: float, representation: str = "auto"):
        self.backend = get_backend("cupy" if on_device(features) else "numpy")
        self.features, self.scale, self._kernels = self.backend.asarray(features), scale, None
        P, _, paths = self.features.shape
        self.representation = resolved_representation(representation, paths, P)

    @property
    def kernels(self):
        if self._kernels is None:
            paths = self.features.shape[2]
            C = path_kernels(self.features, backend=self.backend).reshape(paths * paths, -1)
            self._kernels = self.scale * C
        return self._kernels


def resolved_representation(representation: str, paths: int, examples: int) -> str:
    """``representation``, with ``"auto"`` resolved: the kernels while C (8·(𝓗P)² bytes) is at most 64 MiB."""
    representation = arguments.one_of("representation", representation, REPRESENTATIONS)
    if representation == "auto":
        return "kernels" if 8 * (paths * examples) ** 2 <= _KERNEL_BYTES else "features"
    return representation


def attention_network(layers: PathLayers, representation: str = "auto") -> Network:
    """The attention network of ``layers`` (its heads, widths and variances: a `PathLayers`, such as a
    `NetworkPosterior`) as a saddle-point `Network` whose weights are θ = (Z_{ℓ,h}, z_a) flattened
    (module docstring), on whichever backend its inputs are; ``order_parameters`` gives U_1, …, U_L and U_a by name
    (``U1``, …, ``Ua``). ``representation`` ("auto", "kernels" or "features") is resolved for each input set."""
    if not isinstance(layers, PathLayers):
        raise TypeError(f"layers must be a PathLayers (or a NetworkPosterior), got {type(layers).__name__}")
    arguments.one_of("representation", representation, REPRESENTATIONS)
    net, s = layers, layers.scale
    shapes, sizes = net.block_shapes[1:], net.block_sizes[1:]
    dimension = sum(sizes) + net.readout_width

    def split(theta):
        """(layers [(C, H, n_ℓ, n_{ℓ−1})], readout (C, n_L)) as views of θ (C, d)."""
        chains, out, start = theta.shape[0], [], 0
        for shape, size in zip(shapes, sizes):
            out.append(theta[:, start:start + size].reshape((chains,) + shape))
            start += size
        return out, theta[:, start:]

    def paths(theta):
        layers, readout = split(theta)
        return layers, net._backward_paths(layers, readout)

    def gradient(layers, rs, g_r1):
        layer_grads, g_readout = net.reverse_through_layers(layers, rs, g_r1)
        chains, xp = g_readout.shape[0], array_module(g_readout)
        return xp.concatenate([g.reshape(chains, -1) for g in layer_grads] + [g_readout], axis=1)

    def features(theta, inputs: PathInputs):  # Φ = s X̃(I ⊗ r¹): [c, μ, (i, k)] = s Σ_π X[μ, i, π] r¹[c, π, k]
        r1, xp = paths(theta)[1][0], array_module(theta)
        X = inputs.features
        return (s * xp.matmul(X[None], r1[:, None])).reshape(theta.shape[0], X.shape[0], -1)

    def features_vjp(theta, inputs: PathInputs, dPhi):
        layers, rs = paths(theta)
        X, xp = inputs.features, array_module(theta)
        P, N0, H = X.shape
        chains, n0 = theta.shape[0], rs[0].shape[2]
        g_r1 = s * xp.matmul(X.reshape(P * N0, H).T, dPhi.reshape(chains, P * N0, n0))  # (C, 𝓗, n_0)
        return gradient(layers, rs, g_r1)

    def kernel(theta, inputs: PathInputs):
        layers, rs = paths(theta)
        r1, chains, xp = rs[0], theta.shape[0], array_module(theta)
        X = inputs.features
        P = X.shape[0]
        if inputs.representation == "kernels":  # Σ_ab (r¹r¹ᵀ)_ab s²C_ab
            K = (xp.matmul(r1, xp.swapaxes(r1, 1, 2)).reshape(chains, -1) @ inputs.kernels).reshape(chains, P, P)
        elif r1.shape[2] < r1.shape[1]:  # U of rank n_0 < 𝓗: ΦΦᵀ, 2P²N0n_0 flops
            Phi = features(theta, inputs)
            K = xp.matmul(Phi, xp.swapaxes(Phi, 1, 2))
        else:  # X̃(I ⊗ U)X̃ᵀ, 2P²N0𝓗 flops: [c, μ, i, a] = Σ_b X[μ, i, b] U[c, a, b]
            U = s**2 * xp.matmul(r1, xp.swapaxes(r1, 1, 2))
            lifted = xp.matmul(X[None], xp.swapaxes(U, 1, 2)[:, None])
            K = xp.matmul(lifted.reshape(chains, P, -1), X.reshape(P, -1).T)
        return K, (layers, rs, inputs)

    def kernel_vjp(residuals, solved: KernelSolve):
        """∂Ψ/∂θ through U: ∂Ψ/∂U = Σ_μν G_μν C^μν, symmetric (G and C^μν_ab = C^νμ_ba are), so ∂Ψ/∂r¹ =
        2s²(∂Ψ/∂U)r¹, then the layers."""
        layers, rs, inputs = residuals
        r1, chains, H = rs[0], rs[0].shape[0], rs[0].shape[1]
        xp = array_module(r1)
        if inputs.representation == "kernels":  # 2G against s²C
            g_U = (solved.energy_gradient(2.0).reshape(chains, -1) @ inputs.kernels.T).reshape(chains, H, H)
        else:  # 2s² × ½(Σ_i (L⁻¹X̃)ᵀ(L⁻¹X̃) − (X̃ᵀα)ᵀ(X̃ᵀα))
            flat = inputs.features.reshape(inputs.features.shape[0], -1)
            whitened = solved.whiten(flat, shared=True).reshape(chains, -1, H)  # L⁻¹X̃, rows (μ, i)
            v = (solved.alpha @ flat).reshape(chains, -1, H)  # X̃ᵀα as (N0, 𝓗)
            g_U = xp.matmul(xp.swapaxes(whitened, 1, 2), whitened)
            g_U -= xp.matmul(xp.swapaxes(v, 1, 2), v)
            g_U *= s**2  # in place: the bits of s²(A − B)
        return gradient(layers, rs, xp.matmul(g_U, r1))

    def kernel_times(theta, test: PathInputs, inputs: PathInputs, alpha):
        """K_θ(X_t, X)α = Σ_{ππ'} U_{ππ'} X_{π'}(x_t)·(Σ_μ α_μ X^μ_π) per chain (C, Q)."""
        r1, xp = paths(theta)[1][0], array_module(theta)
        U = s**2 * xp.matmul(r1, xp.swapaxes(r1, 1, 2))
        weighted = xp.einsum("cm,mkp->cpk", alpha, inputs.features)  # (C, 𝓗, N0)
        projected = xp.matmul(U, weighted)  # (C, 𝓗, N0)
        X_test = test.features
        return projected.reshape(theta.shape[0], -1) @ xp.swapaxes(X_test, 1, 2).reshape(X_test.shape[0], -1).T

    def order_parameters(theta, second_moment):
        layers, readout = split(theta)
        values = net.order_parameters_from(layers, readout)
        return {**{f"U{level}": U for level, U in enumerate(values[:-1], start=1)}, "Ua": values[-1]}

    def kernel_memory(P: int) -> int:  # one lifted X̃(I ⊗ U) or L⁻¹X̃ (P·N0·𝓗) per chain with the features
        features_taken = resolved_representation(representation, net.paths, P) == "features"
        return 8 * P * net.input_width * net.paths if features_taken else 0

    return Network(features, features_vjp, (dimension,), 1.0, order_parameters,
                   prepare=lambda X: PathInputs(X, s**2, representation), kernel=kernel, kernel_vjp=kernel_vjp,
                   kernel_times=kernel_times, reads_readout=False, units=net.block_shapes[0][0] * net.input_width,
                   kernel_memory=kernel_memory)


def collapsed_posterior(network: NetworkPosterior, representation: str = "auto") -> CollapsedNetworkPosterior:
    """The posterior of θ = (Z_{ℓ,h}, z_a) with Z_0 integrated out: the saddle-point engine's collapsed posterior of
    `attention_network` on ``network``'s features and labels (one data set, or one per chain)."""
    if not isinstance(network, NetworkPosterior):
        raise TypeError(f"network must be a NetworkPosterior (network_posterior), got {type(network).__name__}")
    made = attention_network(network, representation)
    return CollapsedNetworkPosterior(made, network.features, network.labels, network.temperature, network.backend)
