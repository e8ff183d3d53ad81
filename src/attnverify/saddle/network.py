"""Networks sampled from the posterior, to compare with a saddle-point theory: a finite network with a linear
readout, f(x) = Σ_i a_i φ_i(x; Z), whose readout is integrated out exactly.

With a ~ N(0, v·I_M) (v the readout variance) and the Gibbs likelihood y ~ N(f, T·I), the readout integrates out:
y | Z ~ N(0, K_Z + T·I) with K_Z = v Φ Φᵀ (Φ = φ(X; Z), P × M), so the hidden weights Z (whitened, prior N(0, I))
have the collapsed potential

    Ψ(Z) = ½ yᵀ(K_Z + T·I)⁻¹y + ½ ln det(K_Z + T·I) + ½ |Z|²,
    ∂Ψ/∂K = G = ½[(K_Z + T·I)⁻¹ − ααᵀ],  α = (K_Z + T·I)⁻¹y,  ∂Ψ/∂Φ = 2v G Φ,

chained to Z by the network's vector–Jacobian product (or, for a network that forms K_Z more cheaply than through
Φ, by its own kernel and kernel VJP), and sampled by HMC ([`attnverify.numerics.hmc`][attnverify.numerics.hmc]). Given Z
the readout is Gaussian: precision Λ = I/v + ΦᵀΦ/T, mean m = Λ⁻¹Φᵀy/T = vΦᵀα; an order parameter quadratic in a is
estimated from E[aaᵀ | Z, y] = mmᵀ + Λ⁻¹ exactly (Rao–Blackwell), draw by draw; the posterior-mean prediction at test
inputs is Φ_t m = K_Z(X_t, X)α, and the generalisation error E[(f(x_t) − y_t)² | Z, y] = (Φ_t m − y_t)² + (Φ_t Λ⁻¹
Φ_tᵀ)_tt, averaged over the test inputs (the theory's ε_g, [`attnverify.saddle.predict`][attnverify.saddle.predict]).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..base import arguments
from ..base.arguments import Checked, checked
from ..numerics.diagnostics import summarize
from ..numerics.kernel_solve import KernelSolve, solve_each
from . import activations, nngp_quadrature
from .sampling import run_sampler


@dataclass(frozen=True)
class Network(Checked):
    r"""A finite network with a linear readout, ``Network(features, features_vjp, weight_shape, readout_variance,
    order_parameters)``: the hidden weights of one chain are $Z$ of shape ``weight_shape``, whitened (prior
    $\mathcal{N}(0, 1)$ entries: scale them inside ``features``), the readout $a \sim \mathcal{N}(0, v \cdot I)$ on the
    $M$ features is integrated out.
    ``features(Z, X)`` (C chains: $Z$ (C, *weight_shape) → $\Phi$ (C, P, M))
    and ``features_vjp(Z, X, dΦ)`` → $dZ$, on the backend's arrays; ``readout_variance`` $v$; ``order_parameters(Z,
    second_moment)`` → name → per-chain values (C,) or (C, n, n), with $\mathbb{E}[aa^\top \mid Z, y]$ (C, M, M) for
    $aa^\top$ (None when ``reads_readout`` is False: order parameters of the hidden weights alone, and no $M \times M$
    moment is formed).

    Optional, for a network whose kernel is cheaper than $\Phi\Phi^\top$ ($M \gg P$): ``prepare(X)`` → what every
    function here receives as $X$ (made once per input set; default $X$ itself); ``kernel(Z, X)`` →
    ($K_Z = v\Phi\Phi^\top$ (C, P, P), residuals) and ``kernel_vjp(residuals, solved)`` →
    $\partial\Psi_\text{energy}/\partial Z$ from the `KernelSolve` ``solved``; ``kernel_times(Z, X_test, X, α)`` →
    $K_Z(X_\text{test}, X)\alpha$ (C, Q), the posterior-mean prediction. Each must equal its default through $\Phi$
    (the tests hold the built-in ones to it).

    For the memory refusal before sampling: ``units`` $M$, the features' count ($\Phi$'s last axis; default
    ``weight_shape[0]``), and, with a kernel of its own, ``kernel_memory(P)`` → the bytes one chain's kernel and
    kernel VJP hold beyond the $P \times P$ matrices (default 0)."""

    features: Callable = checked(arguments.function)
    features_vjp: Callable = checked(arguments.function)
    weight_shape: tuple
    readout_variance: float
    order_parameters: Callable = checked(arguments.function)
    prepare: Callable | None = checked(arguments.function, default=None, optional=True)
    kernel: Callable | None = checked(arguments.function, default=None, optional=True)
    kernel_vjp: Callable | None = checked(arguments.function, default=None, optional=True)
    kernel_times: Callable | None = checked(arguments.function, default=None, optional=True)
    reads_readout: bool = True
    units: int | None = checked(arguments.integer, 1, default=None, optional=True)
    kernel_memory: Callable | None = checked(arguments.function, default=None, optional=True)

    def _check_fields(self) -> None:
        if (self.kernel is None) != (self.kernel_vjp is None):
            raise ValueError("a Network's kernel and kernel_vjp come together: give both or neither")
        if self.units is None:
            object.__setattr__(self, "units", arguments.integer("units", int(self.weight_shape[0]), 1))


def _potential(xp, quadratic, squared_norm, half_logdet, failed):
    """Ψ = ½(yᵀ(K + T·I)⁻¹y + |x|²) + ½ ln det(K + T·I) per chain, +∞ where K + T·I has no factor."""
    return xp.where(failed, xp.inf, (quadratic + squared_norm) * 0.5 + half_logdet)


def one_hidden_layer(width: int, input_dimension: int, *, readout_variance_total: float = 1.0,
                     activation: Any = "relu") -> Network:
    r"""Units $\varphi_i(x) = \varphi(w_i \cdot x)$ with $w_i = z_i/\sqrt{d}$ ($z_i \sim \mathcal{N}(0, I_d)$),
    $N =$ ``width`` of them, readout $a_i \sim \mathcal{N}(0, \sigma^2/N)$ with $\sigma^2 =$ ``readout_variance_total``:
    the one-hidden-layer network whose kernel at large $N$ is $\sigma^2 \cdot K_0$,
    $K_0(x, x') = \mathbb{E}_w[\varphi(w \cdot x)\, \varphi(w \cdot x')]$ for $w \sim \mathcal{N}(0, I/d)$
    ([`nngp_kernel`][attnverify.saddle.network.nngp_kernel]: the arc-cosine kernel for ReLU, the arcsine kernel for
    erf, $x \cdot x'/d$ for linear units). ``activation``: "relu" (default),
    "linear", "erf", "tanh", or a sympy function of one variable (a ``sympy.Lambda``, a callable such as ``sympy.erf``
    or ``lambda z: z**3``: [`attnverify.saddle.activations.activation`][attnverify.saddle.activations.activation]); the
    features $\varphi(XZ^\top/\sqrt{d})$ and their vector–Jacobian product
    $(d\Phi \odot \varphi'(XZ^\top/\sqrt{d}))^\top X/\sqrt{d}$ are generated from it. Its order parameter
    $Q = \sum_i a_i^2$ (the readout's squared norm, prior mean $\sigma^2$) renormalises that kernel,
    $K \approx Q \cdot K_0$ (Pacelli et al. 2023; exact at the saddle point for the linear network, Li & Sompolinsky
    2021)."""
    width = arguments.integer("width", width, 1)
    d = arguments.integer("input_dimension", input_dimension, 1)
    sigma2 = arguments.positive("readout_variance_total", readout_variance_total)
    unit = activations.activation(activation)
    slope = unit.constant_slope  # a number for linear units: the VJP needs no preactivations
    scale = 1.0 / np.sqrt(d)

    def preactivations(Z, X):  # X Zᵀ/√d (C, P, N), scaled in place (the bits of scale·(X Zᵀ))
        u = X[None] @ Z.transpose(0, 2, 1)
        u *= scale
        return u

    def features(Z, X):  # Z (C, N, d), X (P, d) → φ(X Zᵀ/√d) (C, P, N); linear units: the preactivations themselves
        return unit.values(preactivations(Z, X))

    def features_vjp(Z, X, dF):  # (dF ⊙ φ'(X Zᵀ/√d))ᵀ X/√d (C, N, d); a slope of 1 multiplies nothing
        if slope is None:
            chained = dF * unit.slopes(preactivations(Z, X))
        else:
            chained = dF if slope == 1.0 else slope * dF
        dZ = chained.transpose(0, 2, 1) @ X[None]
        dZ *= scale
        return dZ

    def order_parameters(Z, second_moment):  # Q = Σ_i a_i²: the trace of E[aaᵀ | Z, y]
        return {"Q": second_moment.trace(axis1=1, axis2=2)}

    return Network(features, features_vjp, (width, d), sigma2 / width, order_parameters)


def nngp_kernel(X, Y=None, *, activation: Any = "relu", progress: Callable[[str], None] | None = None):
    r"""$K_0(x_i, y_j) = \mathbb{E}_w[\varphi(w \cdot x_i)\, \varphi(w \cdot y_j)]$ for $w \sim \mathcal{N}(0, I/d)$:
    the kernel of [`one_hidden_layer`][attnverify.saddle.network.one_hidden_layer]'s units per unit of readout variance
    (`attnverify.saddle.nngp_quadrature.nngp_kernel`, closed forms where they exist; ``progress``, a function of one
    line of text, is told the quadrature's pairs done where there is none; without one, a quadrature of thousands of
    inputs tells the run's display)."""
    return nngp_quadrature.nngp_kernel(X, Y, activation=activation, progress=progress)


class CollapsedNetworkPosterior:
    """Ψ(Z) and ∇Ψ for a batch of chains (module docstring), and the readout's conditional posterior. Labels y are
    (P,), or (C, P) for one data set per chain. Every operation is batched over the chains (leading axis)."""

    def __init__(self, network: Network, X, y, temperature: float, backend=None):
        if not isinstance(network, Network):
            raise TypeError(f"network must be an attnverify.saddle.network.Network, got {type(network).__name__}")
        self.network = network
        self.backend = be = arguments.backend(backend)
        X = arguments.array("X", be.to_numpy(X) if hasattr(X, "dtype") else X, min_ndim=2)
        self.P = X.shape[0]
        y = arguments.array("y", be.to_numpy(y) if hasattr(y, "dtype") else y, min_ndim=1)
        if y.shape[-1:] != (self.P,) or y.ndim > 2:
            raise ValueError(f"y must be shaped (P,) = ({self.P},), or (chains, P) for one data set per chain, "
                             f"got {y.shape}")
        with np.errstate(over="ignore"):
            for name, values in (("X", X), ("y", y)):
                if not np.isfinite(np.sum(values * values)):
                    raise ValueError(f"{name} is too large: the sum of its squares overflows float64 (rescale it)")
        self.X, self.y = be.asarray(X), be.asarray(y)
        self.labels = self.y if y.ndim == 2 else self.y[None, :]  # (1 or C, P)
        self.temperature = arguments.positive("temperature", temperature)
        self.size = int(np.prod(network.weight_shape))
        arguments.fits_in_memory("X", 8 * self.P * self.P, f"the P × P identity of its P = {self.P} rows",
                                 backend=be)
        self.identity = be.xp.eye(self.P)
        self.shift = self.temperature * self.identity
        self.inputs = self.prepared(self.X)
        try:  # one chain of zero weights: inputs the network cannot read are named here, not in the sampler
            network.features(be.xp.zeros((1, *network.weight_shape)), self.inputs)
        except (ValueError, TypeError, IndexError) as error:
            text = str(error).splitlines()[0] if str(error) else type(error).__name__
            width = network.weight_shape[-1]
            cause = (f"X has {X.shape[-1]} columns where they read {width}" if X.shape[-1] != width else
                     f"its features raised {type(error).__name__}: {text}")
            raise ValueError(f"X of shape {tuple(X.shape)} does not fit the network (hidden weights "
                             f"{tuple(network.weight_shape)}: X's columns must be its input width); {cause}"[:300]
                             ) from None

    def chain_bytes(self, tests: int = 0) -> tuple[int, int]:
        """One chain's working memory in bytes, (weights, data), ``tests`` the test inputs: the weights with their
        momentum, gradient and leapfrog copies (6 × size float64) and, where the readout's moment is formed
        (``reads_readout``, or a test error), four M × M matrices (Λ, its factor, its inverse, E[aaᵀ]); five P × P
        matrices (K, its factor, its inverse, G, ααᵀ), the features Φ and their gradient on the training and test
        inputs ((2P + 2Q) × M) where Φ is formed (no kernel of the network's own, or the readout's moment), and the
        network's own kernel work (``kernel_memory``)."""
        net, P, M = self.network, self.P, self.network.units
        readout = net.reads_readout or tests > 0
        weights = 8 * (6 * self.size + (4 * M * M if readout else 0))
        data = 8 * 5 * P * P
        if net.kernel is None or readout:
            data += 8 * (2 * P + 2 * tests) * M
        if net.kernel_memory is not None:
            data += int(net.kernel_memory(P))
        return weights, data

    def prepared(self, X):
        """What the network's functions read for the inputs X (its ``prepare``, or X itself)."""
        return X if self.network.prepare is None else self.network.prepare(X)

    def _weights(self, x):
        return x.reshape((x.shape[0],) + tuple(self.network.weight_shape))

    def _kernel(self, Z):
        """(K_Z (C, P, P), residuals for the VJP): the network's own kernel, or vΦΦᵀ with residuals Φ."""
        if self.network.kernel is not None:
            return self.network.kernel(Z, self.inputs)
        Phi = self.network.features(Z, self.inputs)
        return self.network.readout_variance * Phi @ Phi.transpose(0, 2, 1), Phi

    def solve(self, K) -> KernelSolve:
        """Factorise K + T·I per chain (`attnverify.numerics.kernel_solve.solve_each`). On a diverging trajectory
        K + T·I stops being positive definite in floating point; such a chain gets the identity's factor (so that
        every solve stays finite) and is marked ``failed``."""
        return solve_each(self.backend, K + self.shift, self.labels, self.identity)

    def potential_and_gradient(self, x):
        """Ψ (C,) and ∇Ψ (C, size) at the whitened hidden weights x (C, size); Ψ = +∞ where K + T·I has no factor."""
        xp = self.backend.xp
        Z = self._weights(x)
        K, residuals = self._kernel(Z)
        solved = self.solve(K)
        potential = self.backend.fused(_potential)(solved.quadratic, xp.einsum("cd,cd->c", x, x),
                                                   solved.half_logdet, solved.failed)
        if self.network.kernel_vjp is not None:
            gradient = self.network.kernel_vjp(residuals, solved)
        else:
            dPhi = solved.energy_gradient(2.0 * self.network.readout_variance) @ residuals
            gradient = self.network.features_vjp(Z, self.inputs, dPhi)
        return potential, gradient.reshape(x.shape[0], -1) + x

    def predictive_mean(self, x, X_test):
        """E[f(x_t) | Z, y] = Φ_t m = K_Z(X_test, X)α per chain (C, Q) (module docstring)."""
        Z = self._weights(x)
        solved = self.solve(self._kernel(Z)[0])
        test = self.prepared(self.backend.asarray(X_test))
        if self.network.kernel_times is not None:
            return self.network.kernel_times(Z, test, self.inputs, solved.alpha)
        Phi = self.network.features(Z, self.inputs)
        weights = self.network.readout_variance * (Phi.transpose(0, 2, 1) @ solved.alpha[:, :, None])  # vΦᵀα
        return (self.network.features(Z, test) @ weights)[:, :, 0]

    def _readout(self, x):
        """The readout's conditional posterior per chain: Φ, the mean m and the Cholesky factor L of Λ = I/v + ΦᵀΦ/T."""
        be, xp = self.backend, self.backend.xp
        Phi = self.network.features(self._weights(x), self.inputs)
        identity = xp.eye(Phi.shape[2])
        precision = Phi.transpose(0, 2, 1) @ Phi  # ΦᵀΦ/T + I/v, in place (the same bits)
        precision /= self.temperature
        precision += identity / self.network.readout_variance
        factor, _ = be.cholesky_each(precision, identity)
        b = (Phi.transpose(0, 2, 1) @ self.labels[:, :, None])[:, :, 0]
        b /= self.temperature
        return Phi, be.solve_lower(factor, be.solve_lower(factor, b), transpose=True), factor

    def readout_second_moment(self, x):
        """E[aaᵀ | Z, y] = mmᵀ + Λ⁻¹ per chain, Λ = I/v + ΦᵀΦ/T (M × M), by Cholesky."""
        return self.readout_statistics(x)[0]

    def generalisation_error(self, x, X_test, y_test):
        """mean_t E[(f(x_t) − y_t)² | Z, y] per chain: (Φ_t m − y_t)² + |L⁻¹Φ_tᵀ|²_t (module docstring)."""
        return self.readout_statistics(x, X_test, y_test)[1]

    def readout_statistics(self, x, X_test=None, y_test=None):
        """The readout's second moment and, given test inputs and labels, the generalisation error (else None),
        from one factorisation of Λ per chain."""
        be, xp = self.backend, self.backend.xp
        _, mean, factor = self._readout(x)
        lower_inverse = be.solve_lower(factor, xp.eye(mean.shape[1]), shared=True)
        second_moment = lower_inverse.transpose(0, 2, 1) @ lower_inverse
        second_moment += mean[:, :, None] * mean[:, None, :]  # mmᵀ + Λ⁻¹, in place (the same bits)
        if X_test is None:
            return second_moment, None
        Phi_test = self.network.features(self._weights(x), self.prepared(X_test))  # (C, Q, M)
        prediction = (Phi_test @ mean[:, :, None])[:, :, 0]
        spread = be.solve_lower(factor, Phi_test.transpose(0, 2, 1))  # (C, M, Q)
        return second_moment, xp.mean((prediction - y_test) ** 2 + xp.sum(spread**2, axis=1), axis=1)

    def order_parameters(self, x, X_test=None, y_test=None) -> dict:
        """The network's order parameters per chain at x (C, size), name → values; with test inputs and labels also
        `GENERALISATION_ERROR`. The readout's M × M moment is formed only where the network reads it or the
        test error needs it."""
        second_moment = error = None
        if self.network.reads_readout or X_test is not None:
            second_moment, error = self.readout_statistics(x, X_test, y_test)
        values = dict(self.network.order_parameters(self._weights(x),
                                                    second_moment if self.network.reads_readout else None))
        if GENERALISATION_ERROR in values:
            raise ValueError(f"the network's order parameters may not be named {GENERALISATION_ERROR!r} (reserved)")
        if error is not None:
            values[GENERALISATION_ERROR] = error
        return values


@dataclass(frozen=True)
class SampledOrderParameters:
    """Per order parameter: the posterior mean over chains and draws, its Monte Carlo standard error, and the chain
    diagnostics (`ChainSummary`); ``draws``: per name, the draws (C, draws, …),
    to summarise a function of them
    ([`attnverify.numerics.diagnostics.summarize`][attnverify.numerics.diagnostics.summarize])."""

    summaries: dict
    acceptance: float
    divergences: int
    draws: dict

    def mean(self, name: str):
        return self.summaries[name].mean


GENERALISATION_ERROR = "generalisation_error"
"""The name under which `sample_order_parameters` reports the test error (with ``test=``)."""


def sample_order_parameters(network: Network, X, y, *, temperature: float, chains: int = 8, warmup: int = 500,
                            draws: int = 1000, seed: int = 0, backend=None, test=None) -> SampledOrderParameters:
    """Sample the collapsed posterior of the hidden weights and estimate the network's order parameters; with
    ``test=(X_test, y_test)`` also the generalisation error on them (module docstring), as ``generalisation_error``."""
    posterior = CollapsedNetworkPosterior(network, X, y, temperature, backend)
    be = posterior.backend
    X_test = y_test = None
    if test is not None:
        if not (isinstance(test, (tuple, list)) and len(test) == 2):
            raise ValueError(f"test must be the pair (X_test, y_test), got {type(test).__name__} of "
                             f"{len(test) if hasattr(test, '__len__') else 'no'} items")
        X_test = be.asarray(arguments.array("X_test", test[0], ndim=2))
        if X_test.shape[1] != posterior.X.shape[1]:
            raise ValueError(f"X_test must have the training inputs' {posterior.X.shape[1]} columns, got "
                             f"{X_test.shape[1]}")
        y_test = be.asarray(arguments.array("y_test", test[1], shape=(X_test.shape[0],)))
    chains = arguments.integer("chains", chains, 2)
    warmup, draws = arguments.integer("warmup", warmup, 1), arguments.integer("draws", draws, 4)
    rng = be.random(arguments.integer("seed", seed, 0))
    P, M, tests = posterior.P, network.units, 0 if X_test is None else int(X_test.shape[0])
    run = run_sampler(posterior.potential_and_gradient, lambda chains: rng.standard_normal((chains, posterior.size)),
                      lambda x: posterior.order_parameters(x, X_test, y_test), chains=chains, warmup=warmup,
                      draws=draws, rng=rng, backend=be, chain_bytes=posterior.chain_bytes(tests),
                      what=f"weights ({posterior.size} each), features (P = {P} inputs, M = {M} units) and P × P "
                           "kernels")
    draws = {name: np.moveaxis(values, (-2, -1), (0, 1)) for name, values in run.draws.items()}  # (C, draws, …)
    summaries = {name: summarize(values, superchains=run.superchains) for name, values in run.draws.items()}
    return SampledOrderParameters(summaries, float(np.mean(run.acceptance)), int(np.sum(run.divergences)), draws)
