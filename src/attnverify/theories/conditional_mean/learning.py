"""Empirical-risk minimisation of the attention parameter W (Zhang et al. 2022, §4: generalisation).

Each sequence draws its own value map A, so only the conditional-mean structure can be learnt:
f_W(q; K, V) = Σ_ℓ softmax_ℓ(qᵀWk_ℓ) v_ℓ → E[v | k = q, A] = Aq as L → ∞ when W = W* = Σ⁻¹.
Two objectives: ``supervised`` (one labelled query per sequence) and ``masked`` (the last M tokens
are predicted in turn from the L unmasked ones). Shapes: queries (N, M, d) (M = 1 when supervised),
keys (N, L, d), values (N, L, d_v), targets (N, M, d_v), float64 on the chosen backend; the optimiser on the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from scipy.linalg import cho_solve
from scipy.optimize import minimize

from ...base.arguments import array, at_most_work, backend as backend_argument, generator, integer, nonnegative, one_of
from ...base.arguments import Checked, checked, function, positive, positive_definite_factor
from ...base.backend import Backend, array_module, for_size, to_numpy
from ...numerics.statistics import Estimate, mean_estimate
from ._stable import backend_of, finite_result
from .attention import softmax_weights
from .models import refuse_what_cannot_fit

OBJECTIVES = ("supervised", "masked")


@dataclass(frozen=True, eq=False)
class LatentLinearTask(Checked):
    """Per sequence: A ∈ R^{d_v×d} with entries i.i.d. N(0, τ²); k_ℓ ~ N(0, Σ); v_ℓ = Ak_ℓ + σξ_ℓ."""

    key_covariance: Any = checked(array, ndim=2, read_only=True)
    prior_sd: float = checked(positive)
    noise_sd: float = checked(nonnegative)
    d_v: int = checked(integer, 1, default=1)

    def _check_fields(self) -> None:
        # square and symmetric, or refused by name
        object.__setattr__(self, "_factor", positive_definite_factor("key_covariance", self.key_covariance))

    @property
    def d(self) -> int:
        return self.key_covariance.shape[0]

    def desired_parameter(self) -> np.ndarray:
        """W* = Σ⁻¹: the tilted key mean ΣWq equals q, so f_{W*} → Aq (Cholesky solve)."""
        return cho_solve(self._factor, np.eye(self.d))

    def sample(self, sequences: int, tokens: int, rng: Any, backend: Backend | str | None = None) -> tuple[Any, Any, Any]:
        """(A (N, d_v, d), keys (N, T, d), values (N, T, d_v)) for N independent sequences of T tokens, on the
        backend; ``rng`` a Generator of the backend or an integer seed."""
        be = backend_argument(backend)
        N, T = integer("sequences", sequences, 1), integer("tokens", tokens, 1)
        # per token: the draw and the keys (d each), the noise, the einsum and the values (d_v each);
        # per sequence: A and its unscaled draw (2·d_v·d)
        refuse_what_cannot_fit(T, N, 2 * self.d + 3 * self.d_v, 2 * self.d_v * self.d, backend=be,
                                names=("tokens", "sequences"))
        rng = generator(rng, be)
        A = self.prior_sd * rng.standard_normal((N, self.d_v, self.d))
        keys = rng.standard_normal((N, T, self.d)) @ be.asarray(np.tril(self._factor[0]).T)
        values = be.xp.einsum("nci,nti->ntc", A, keys) + self.noise_sd * rng.standard_normal((N, T, self.d_v))
        return A, keys, values


@dataclass(frozen=True, eq=False)
class Dataset:
    """N sequences: ``queries`` (N, M, d) with ``targets`` (N, M, d_v), context ``keys``/``values`` (N, L, ·)."""

    objective: str
    queries: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    targets: np.ndarray

    @property
    def sequences(self) -> int:
        return self.keys.shape[0]

    @property
    def length(self) -> int:
        return self.keys.shape[1]


def _task(task: Any) -> LatentLinearTask:
    if not isinstance(task, LatentLinearTask):
        raise TypeError(f"task must be a LatentLinearTask, got {type(task).__name__}")
    return task


def draw_dataset(task: LatentLinearTask, objective: str, sequences: int, length: int, rng: Any,
                 masked: int = 8, backend: Backend | str | None = None) -> Dataset:
    """N sequences of L context tokens plus M query tokens (M = 1 labelled query when supervised).

    The query tokens follow the context: supervised, y = Aq + σ_yη with σ_y = σ is exactly a
    further token; masked, the last M tokens are hidden and predicted one at a time.
    """
    objective, task = one_of("objective", objective, OBJECTIVES), _task(task)
    N, L = integer("sequences", sequences, 1), integer("length", length, 1)
    masked = integer("masked", masked, 1)  # checked even where unused (supervised): a bad value is never ignored
    M = 1 if objective == "supervised" else masked
    be = backend_argument(backend)
    # what task.sample draws for L + M tokens (above), named by this function's arguments
    refuse_what_cannot_fit(L + M, N, 2 * task.d + 3 * task.d_v, 2 * task.d_v * task.d, backend=be,
                            names=("length", "sequences"))
    _, keys, values = task.sample(N, L + M, generator(rng, be), backend=be)
    return Dataset(objective, keys[:, L:], keys[:, :L], values[:, :L], values[:, L:])


def attention_prediction(W: Any, queries: Any, keys: Any, values: Any) -> Any:
    """f_W(q; K, V) = Σ_ℓ softmax_ℓ(qᵀWk_ℓ) v_ℓ for queries (N, M, d), keys (N, L, d), values (N, L, d_v), on the
    backend of the keys."""
    be = backend_of(keys)
    K = array("keys", keys, be, ndim=3)
    q = array("queries", queries, be, shape=(K.shape[0], None, K.shape[2]))
    V = array("values", values, be, shape=(K.shape[0], K.shape[1], None))
    return _predict(be.asarray(_parameter(W, K.shape[-1])), q, K, V, check=True)[1]


def _parameter(W: Any, d: int, name: str = "W") -> np.ndarray:
    return array(name, W, shape=(d, d))


def _predict(W: Any, q: Any, K: Any, V: Any, check: bool = False) -> tuple[Any, Any]:
    """Weights and predictions for checked arrays (W on their backend); ``check`` refuses logits that overflow
    (public callers; the optimiser's per-iteration calls skip it)."""
    xp = array_module(K)
    logits = xp.einsum("nmi,ij,nlj->nml", q, W, K)
    if check:
        finite_result(xp, logits, "the logits qᵀWk_ℓ", "W, queries and keys")
    weights = softmax_weights(logits)
    return weights, xp.einsum("nml,nlc->nmc", weights, V)


def _data(data: Any) -> Dataset:
    if not isinstance(data, Dataset):
        raise TypeError(f"data must be a Dataset from draw_dataset, got {type(data).__name__}")
    return data


def empirical_risk_and_gradient(W: Any, data: Dataset) -> tuple[float, np.ndarray]:
    """R(W) = (1/NM) Σ_{i,j} ‖y_ij − f_W(q_ij)‖² and ∂R/∂W in closed form.

    ∂f/∂W = Σ_ℓ p_ℓ (v_ℓ − f) qk_ℓᵀ (softmax derivative), so with r = y − f,
    ∂R/∂W = −(2/NM) Σ_{i,j} Σ_ℓ p_ℓ ⟨r, v_ℓ − f⟩ q k_ℓᵀ.
    """
    data = _data(data)
    return _risk_and_gradient(_parameter(W, data.keys.shape[-1]), data, check=True)


def _risk_and_gradient(W: np.ndarray, data: Dataset, check: bool = False) -> tuple[float, np.ndarray]:
    """R(W) and ∂R/∂W on the host for a host W (the optimiser's side), computed on the data's backend."""
    q, K, V = data.queries, data.keys, data.values
    be = backend_of(K)
    xp = be.xp
    p, f = _predict(be.asarray(W), q, K, V, check)
    r = data.targets - f
    count = r.shape[0] * r.shape[1]
    # ⟨r, v_ℓ − f⟩ for every query and context token
    tilt = p * (xp.einsum("nlc,nmc->nml", V, r) - xp.einsum("nmc,nmc->nm", f, r)[..., None])
    gradient = be.to_numpy(-2.0 / count * xp.einsum("nmi,nmj->ij", q, xp.einsum("nml,nlj->nmj", tilt, K)))
    risk = float(xp.sum(r * r) / count)
    if check:
        finite_result(np, np.append(gradient, risk), "the risk or its gradient", "W and data")
    return risk, gradient


@dataclass(frozen=True)
class AttentionFit:
    """The empirical-risk minimiser Ŵ, its training risk R(Ŵ) and the optimiser's iteration count."""

    W: np.ndarray
    train_risk: float
    iterations: int
    converged: bool


def _where_small(data: Dataset) -> Dataset:
    """``data`` on the backend where `for_size` puts one evaluation of the risk and
    its gradient, whose largest arrays are the attention weights (N, M, L) and the keys (N, L, d): moved to the
    host once when they are small (each optimiser iteration would otherwise launch a dozen kernels and read
    back twice), else as it is."""
    be = backend_of(data.keys)
    (N, L, d), M, d_v = data.keys.shape, data.queries.shape[1], data.values.shape[-1]
    if for_size(be, N * L * max(M, d, d_v)) is be:
        return data
    return Dataset(data.objective, *(to_numpy(x) for x in (data.queries, data.keys, data.values, data.targets)))


def fit_attention_parameter(data: Dataset, start: Any = None, tol: float = 1e-10) -> AttentionFit:
    """Ŵ = argmin_W R(W) by L-BFGS-B with the exact gradient, from W = 0 (uniform attention) by default. The
    optimiser runs on the host; each evaluation runs where `_where_small` puts the data."""
    data = _where_small(_data(data))
    d = data.keys.shape[-1]
    W0 = np.zeros((d, d)) if start is None else _parameter(start, d, "start")
    tol = positive("tol", tol)

    def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
        risk, gradient = _risk_and_gradient(w.reshape(d, d), data)
        return risk, gradient.ravel()

    result = minimize(fun, W0.ravel(), method="L-BFGS-B", jac=True, tol=tol, options={"maxiter": 10_000})
    iterations = int(result.nit)
    if not result.success:
        # L-BFGS-B's line search can end "ABNORMAL" next to the minimum, where the risk's changes are below
        # its round-off. Such a point counts when the Newton step along the gradient (|∇R| over the curvature
        # in that direction) is below _NEWTON_DISTANCE of W's scale: a minimum to that accuracy.
        distance = _newton_distance(fun, result.x)
        if not distance <= _NEWTON_DISTANCE * max(1.0, float(np.max(np.abs(result.x)))):
            raise RuntimeError(f"fit_attention_parameter did not converge: {result.message} (Newton distance to "
                               f"a minimum {distance:.2e})")
    return AttentionFit(result.x.reshape(d, d), float(result.fun), iterations, True)


_NEWTON_DISTANCE = 1e-6
"""An optimiser stop that is not "success" still counts when the estimated distance to the minimum is below
this fraction of max(1, max |W|): far below the Monte Carlo error of any generalisation gap measured with Ŵ."""


def _newton_distance(fun, x: np.ndarray) -> float:
    """|g| / (uᵀ H u) along u = g/|g|, the curvature from central differences of the exact gradient; infinite
    where the curvature is not positive (not a minimum)."""
    g = fun(x)[1]
    norm = float(np.linalg.norm(g))
    if norm == 0.0:
        return 0.0
    u = g / norm
    step = 1e-4 * max(1.0, float(np.linalg.norm(x)))
    curvature = float((fun(x + step * u)[1] - fun(x - step * u)[1]) @ u) / (2 * step)
    return norm / curvature if curvature > 0 else float("inf")


def _sequence_losses(W: np.ndarray, data: Dataset) -> Any:
    be = backend_of(data.keys)
    f = _predict(be.asarray(W), data.queries, data.keys, data.values, check=True)[1]
    return finite_result(be.xp, be.xp.sum((data.targets - f) ** 2, axis=-1).mean(axis=-1), "the risk", "W and task")


def population_risk(W: Any, task: LatentLinearTask, objective: str, length: int, sequences: int, rng: Any,
                    masked: int = 8, backend: Backend | str | None = None) -> Estimate:
    """E R(W) at fixed W on a fresh draw: the mean over sequences of (1/M) Σ_j ‖v_j − f_W(k_j)‖²,
    with its standard error (per-sequence losses are i.i.d.)."""
    W = _parameter(W, _task(task).d)
    integer("sequences", sequences, 2)
    data = draw_dataset(task, objective, sequences, length, rng, masked, backend=backend)
    return mean_estimate(_sequence_losses(W, data))


MOST_FITS = 10**7
"""The most replicates one generalisation gap may ask for, each an L-BFGS-B fit of W: 0.5 ms a replicate measured on
one core at the smallest task (d = L = N = 1), 30 ms at the experiments' sizes (d = 2, L = 16, N = 64), so 10⁷ take
an hour and a half at the least and over three days at those sizes."""


@dataclass(frozen=True)
class GeneralizationGap:
    """Per replicate r: test risk E R(Ŵ_r), training risk R̂(Ŵ_r), their difference and ‖Ŵ_r − Σ⁻¹‖_F."""

    objective: str
    length: int
    gaps: np.ndarray
    train_risks: np.ndarray
    test_risks: np.ndarray
    distances: np.ndarray
    gap: Estimate


def generalization_gap(task: LatentLinearTask, objective: str, length: int, train_sequences: int,
                       test_sequences: int, replicates: int, seed: int, masked: int = 8,
                       progress: Callable[[str], None] | None = None,
                       backend: Backend | str | None = None) -> GeneralizationGap:
    """gap = E[R(Ŵ) − R̂(Ŵ)] over independent training sets (Zhang et al. 2022, generalisation bound),
    estimated by the mean over ``replicates`` with its standard error; replicate r uses the r-th
    child of SeedSequence(seed) for both its training and its test set. The data and the risks live on the
    backend; the optimiser (L-BFGS-B over the d × d parameter) runs on the host. More than `MOST_FITS` replicates
    are refused before the first."""
    be = backend_argument(backend)
    task, objective = _task(task), one_of("objective", objective, OBJECTIVES)
    L = integer("length", length, 1)
    N = integer("train_sequences", train_sequences, 1)
    n_test = integer("test_sequences", test_sequences, 2)
    R = integer("replicates", replicates, 2)
    at_most_work("replicates", R, MOST_FITS, "replicates (an L-BFGS-B fit of W each)")
    seed = integer("seed", seed, 0)
    integer("masked", masked, 1)
    function("progress", progress, "a function of one line of text", optional=True)
    target = task.desired_parameter()
    rows, parent = [], np.random.SeedSequence(seed)
    for r in range(R):
        child = parent.spawn(1)[0]  # the r-th child, as spawn(R)[r] makes it, made only when its replicate starts
        rng = np.random.default_rng(child) if be.name == "numpy" else be.random(int(child.generate_state(1)[0]))
        fit = fit_attention_parameter(draw_dataset(task, objective, N, L, rng, masked, backend=be))
        test = population_risk(fit.W, task, objective, L, n_test, rng, masked, backend=be).mean
        rows.append((test - fit.train_risk, fit.train_risk, test, np.linalg.norm(fit.W - target)))
        if progress is not None:
            progress(f"{objective} L={L} replicate {r + 1}/{R}: gap {rows[-1][0]:.4g}, "
                     f"‖Ŵ−Σ⁻¹‖ {rows[-1][3]:.3g}, {fit.iterations} iterations")
    gaps, train, test, distances = (np.array(column) for column in zip(*rows))
    return GeneralizationGap(objective, L, gaps, train, test, distances, mean_estimate(gaps))
