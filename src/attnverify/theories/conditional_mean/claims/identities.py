"""Claims 1–3: exact identities (note P5), exchangeability, and closed forms against quadrature.

Part of `attnverify.theories.conditional_mean.claims` (see its docstring for the spec and sources).
"""

from __future__ import annotations

from numpy.polynomial.hermite_e import hermegauss
from scipy import stats
from scipy.integrate import quad
from scipy.special import logsumexp
import math
import numpy as np

from .. import derivations as derived
from ..theory import theory
from ....theory_form.derived import DerivedFamily
from ... import conditional_mean as sim
from ....checks import st
from ....checks.claim import Context
from ....checks.comparisons import at_most
from ....checks.evidence import Evidence

from ._common import (SOURCE, gaussian_constants, gaussian_model, gaussian_model_parameters, score_with_spread, seeds,
                      unit_interval)


# 1. Exact identities (note P5)
# ---------------------------------------------------------------------------------------------


@theory.claim(
    source=f"{SOURCE}; note §2.3 M2, P5(c)",
    examples={"quick": 10, "thorough": 100},
    latents=st.integers(2, 6), d=st.integers(1, 4), L=st.integers(1, 200), model_seed=seeds, spread=st.floats(0.1, 3.0),
)
def finite_latent_posterior_is_attention(ctx: Context, latents, d, L, model_seed, spread) -> Evidence:
    """In the finite-latent model (z ∈ {1..M}, x_ℓ | z = m ~ N(μ_m, I)) the latent posterior from
    Bayes' rule token by token equals softmax attention from the query L·x̄ onto the keys μ_m with
    bias log π_m − L‖μ_m‖²/2, to float64 round-off."""
    rng = np.random.default_rng(model_seed)
    prior = rng.dirichlet(np.ones(latents))
    prior = np.maximum(prior, 1e-3)
    model = sim.FiniteLatentModel(prior / prior.sum(), spread * rng.standard_normal((latents, d)))
    _, tokens = model.sample(L, 1, ctx.rng)
    # Bayes' rule read literally, independent of the library's expanded form: log π_m + Σ_ℓ log N(x_ℓ; μ_m, I)
    log_joint = np.log(model.prior) + np.array([stats.norm.logpdf(tokens[0] - mu).sum() for mu in model.means])
    literal = np.exp(log_joint - logsumexp(log_joint))
    bayes = model.posterior_by_bayes(tokens[0])
    xbar = tokens[0].mean(axis=0)
    bias = np.log(model.prior) - L * (model.means**2).sum(axis=1) / 2
    be = ctx.backend  # attention on the run's backend; Bayes' rule on the host
    attention = be.to_numpy(sim.softmax_attention(be.asarray(L * xbar), be.asarray(model.means),
                                                  be.asarray(np.eye(latents)), bias=be.asarray(bias)))
    gap = float(max(np.max(np.abs(literal - attention)), np.max(np.abs(bayes - attention))))
    return at_most(gap, 1e-10, note="max |Bayes − attention| over latents ≤ 1e-10, Bayes both from the Gaussian "
                   "densities read literally and from posterior_by_bayes (probabilities; float64 logits up to ~1e4)",
                   figures={"bayes": literal.tolist(), "posterior_by_bayes": bayes.tolist(), "attention": attention.tolist()})


@theory.claim(
    source=f"{SOURCE}; note §2.3 M3, P5(a)",
    examples={"quick": 10, "thorough": 100},
    d=st.integers(1, 4), d_v=st.integers(1, 3), L=st.integers(1, 60), prior_sd=st.floats(0.2, 3.0),
    noise_sd=st.floats(0.05, 2.0), query=st.lists(unit_interval, min_size=4, max_size=4),
)
def ridge_attention_is_posterior_mean(ctx: Context, d, d_v, L, prior_sd, noise_sd, query) -> Evidence:
    """In the linear-Gaussian model (rows of A ~ N(0, τ²I), v = Ak + σξ), CME attention with the
    linear kernel, Vᵀ(KKᵀ + λI)⁻¹Kq with λ = σ²/τ², equals the Bayesian posterior mean E[A | K, V]q
    computed from the posterior precision, to float64 round-off."""
    model = sim.LinearGaussianLatentModel(prior_sd, noise_sd, d, d_v)
    _, keys, values = model.sample(L, ctx.rng)
    query = np.asarray(query[:d])
    cme = sim.ridge_attention(query, keys, values, model.ridge, backend=ctx.backend)
    posterior = model.posterior_mean(keys, values) @ query
    cme = ctx.backend.to_numpy(cme)
    scale = max(1.0, float(np.linalg.norm(posterior)))
    return at_most(float(np.linalg.norm(cme - posterior)) / scale, 1e-10,
                   note="‖CME − posterior mean‖/max(1, ‖posterior mean‖) ≤ 1e-10",
                   figures={"cme": cme.tolist(), "posterior_mean": posterior.tolist(), "ridge": model.ridge})


@theory.claim(
    source=f"{SOURCE}; note §3.1, P5(b)",
    examples={"quick": 10, "thorough": 100},
    d=st.integers(1, 6), L=st.integers(1, 300), norm=st.floats(0.01, 5.0), bandwidth=st.floats(0.2, 5.0),
    query_scale=st.floats(0.0, 5.0),
)
def softmax_is_rbf_for_equal_norm_keys(ctx: Context, d, L, norm, bandwidth, query_scale) -> Evidence:
    """When every key has the same norm, softmax weights of the scores qᵀk_ℓ/h² equal the
    Gaussian-RBF (Nadaraya–Watson) weights exp(−‖q − k_ℓ‖²/(2h²)), normalised."""
    keys = ctx.rng.standard_normal((L, d))
    keys *= norm / np.linalg.norm(keys, axis=1, keepdims=True)
    query = query_scale * ctx.rng.standard_normal(d)
    values = np.eye(L)  # attention on the identity returns the weights themselves
    be = ctx.backend
    keys, values = be.asarray(keys), be.asarray(values)
    softmax = be.to_numpy(sim.softmax_attention(be.asarray(query / bandwidth**2), keys, values))
    rbf = be.to_numpy(sim.rbf_attention(be.asarray(query), keys, values, bandwidth))
    gap = float(np.max(np.abs(softmax - rbf)))
    return at_most(gap, 1e-12, note="max |softmax − RBF| over weights ≤ 1e-12")


@theory.claim(
    source=f"{SOURCE}; note §2.3 M1, P8",
    examples={"quick": 10, "thorough": 100},
    d=st.integers(1, 3), L=st.integers(0, 300), prior_sd=st.floats(0.1, 5.0), token_sd=st.floats(0.1, 5.0),
)
def conjugate_posterior_closed_form(ctx: Context, d, L, prior_sd, token_sd) -> Evidence:
    """In the conjugate Gaussian model the sympy-derived posterior (μ_L = Lτ²x̄/(Lτ² + σ²),
    s_L = στ/√(Lτ² + σ²)), a function of (L, x̄) only, equals Gaussian conditioning of the joint
    law of (z, x_1..x_L) solved by Cholesky."""
    model = sim.ConjugateGaussianModel(prior_sd, token_sd, d)
    _, tokens = model.sample(L, 1, ctx.rng)
    xbar = tokens[0].mean(axis=0) if L else np.zeros(d)
    mean, sd = derived.conjugate_posterior(L, xbar, prior_sd, token_sd, backend=ctx.backend)
    mean_c, sd_c = model.posterior_by_conditioning(tokens[0])
    mean, sd = ctx.backend.to_numpy(mean), ctx.backend.to_numpy(sd)
    gap = max(float(np.max(np.abs(mean - mean_c))) / max(1.0, float(np.max(np.abs(mean_c)))),
              float(np.max(np.abs(sd - sd_c) / sd_c)))
    return at_most(gap, 1e-10, note="relative gap of mean and sd ≤ 1e-10",
                   figures={"closed_form": [mean.tolist(), sd.tolist()], "conditioning": [mean_c.tolist(), sd_c.tolist()]})


# ---------------------------------------------------------------------------------------------
# 2. Exchangeability
# ---------------------------------------------------------------------------------------------


@theory.claim(
    source=f"{SOURCE}; abstract (exchangeable tokens), note §2.1, P5(d)",
    parameters=st.integers(1, 40).flatmap(
        lambda L: st.fixed_dictionaries(
            {"L": st.just(L), "permutation": st.permutations(list(range(L))), "d": st.integers(1, 3),
             "model_seed": seeds, "bandwidth": st.floats(0.3, 3.0)}
        )
    ),
    examples={"quick": 10, "thorough": 100},
)
def attention_is_exchangeable(ctx: Context, L, permutation, d, model_seed, bandwidth) -> Evidence:
    """Permuting the tokens leaves unchanged (to round-off) softmax, RBF and ridge (CME) attention,
    the conjugate-Gaussian posterior and the finite-latent posterior: each is a function of the
    empirical token measure."""
    rng = np.random.default_rng(model_seed)
    perm = np.asarray(permutation)
    keys, values, query = rng.standard_normal((L, d)), rng.standard_normal((L, 2)), rng.standard_normal(d)
    be = ctx.backend  # the attentions on the run's backend (tokens permuted on the host); the posteriors on the host
    on = be.asarray
    pairs = {
        "softmax": lambda K, V: be.to_numpy(sim.softmax_attention(on(query), on(K), on(V))),
        "rbf": lambda K, V: be.to_numpy(sim.rbf_attention(on(query), on(K), on(V), bandwidth)),
        "ridge": lambda K, V: be.to_numpy(sim.ridge_attention(query, K, V, 0.7, backend=be)),
    }
    conjugate = sim.ConjugateGaussianModel(1.3, 0.8, d)
    latent = sim.FiniteLatentModel(np.array([0.2, 0.5, 0.3]), rng.standard_normal((3, d)))
    gaps = {name: float(np.max(np.abs(f(keys, values) - f(keys[perm], values[perm])))) for name, f in pairs.items()}
    gaps["conjugate_posterior"] = float(np.max(np.abs(np.subtract(conjugate.posterior_by_conditioning(keys),
                                                                   conjugate.posterior_by_conditioning(keys[perm])))))
    gaps["finite_latent_posterior"] = float(np.max(np.abs(latent.posterior_by_bayes(keys) - latent.posterior_by_bayes(keys[perm]))))
    worst = max(gaps, key=gaps.get)
    return at_most(gaps[worst], 1e-12, note=f"largest change under the permutation: {worst}", figures={"gaps": gaps})


# ---------------------------------------------------------------------------------------------
# 3. Closed forms against quadrature
# ---------------------------------------------------------------------------------------------


def _ratio_moments(weight: np.ndarray, error: np.ndarray, error_sq: np.ndarray, prob: np.ndarray) -> dict[str, float]:
    """μ_uu, μ_uus, μ_ss, μ_us, μ_uss from quadrature nodes: weights w, v − m∞ along one direction,
    ‖v − m∞‖² (noise included), and node probabilities."""
    mean_w = float(prob @ weight)
    w = weight / mean_w
    return {
        "mu_uu": float(prob @ (w**2 * error_sq)),
        "mu_uus": float(prob @ (w**2 * error_sq * (w - 1))),
        "mu_ss": float(prob @ (w - 1) ** 2),
        "mu_us": float(prob @ (w * error * (w - 1))),
        "mu_uss": float(prob @ (w * error * (w - 1) ** 2)),
    }


RATIO_CONSTANTS = DerivedFamily("conditional_mean.ratio_expansion", "constants_in_moments",
                                lambda: derived.ratio_constants_in_moments()[::-1])
"""C, D, B, B₂ of the ratio's expansion as functions of the weight moments (μ_uu, μ_uus, μ_ss, μ_us, μ_uss)."""


def _constants_from_moments(moments: dict[str, float], backend) -> dict[str, float]:
    """C, D, B, B₂ from the weight moments through the generated evaluator of the expansion."""
    member = RATIO_CONSTANTS.at()
    values = member.array_function(backend=backend)(*[moments[name] for name in member.names])
    return dict(zip(("constant", "second_order", "bias", "second_order_bias"), (float(v) for v in values)))


@theory.claim(
    source=f"{SOURCE}; note §3.2 (P1, P2)",
    examples={"quick": 6, "thorough": 40},
    **{**gaussian_model_parameters(max_score_sd=1.0), "d": st.integers(1, 2)},
)
def gaussian_constants_match_quadrature(ctx: Context, d, d_v, model_seed, noise_sd, score_sd) -> Evidence:
    """For Gaussian keys and linear values, the derived limit m∞ = A(μ + Σa) + b and the constants
    C, D, B, B₂ (through the tilted law N(μ + tΣa, Σ) and R_t = e^{t(t−1)s²/2}) equal the same
    quantities computed from their definitions as weight moments by Gauss–Hermite quadrature."""
    model, u = gaussian_model(d, d_v, model_seed, noise_sd)
    a = score_with_spread(model, u, score_sd)
    nodes, node_weights = hermegauss(80)
    grids = np.meshgrid(*([nodes] * model.d), indexing="ij")
    z = np.stack([g.ravel() for g in grids], axis=1)
    prob = np.prod(np.meshgrid(*([node_weights / math.sqrt(2 * math.pi)] * model.d), indexing="ij"), axis=0).ravel()
    keys = model.key_mean + z @ np.linalg.cholesky(model.key_covariance).T
    weight = np.exp(keys @ a - (keys @ a).max())
    values = keys @ model.value_map.T + model.value_offset
    limit = (prob * weight) @ values / (prob @ weight)
    closed = gaussian_constants(model, a)
    direction = closed["direction"]
    error = values - limit
    moments = _ratio_moments(weight, error @ direction, (error**2).sum(axis=1) + model.d_v * model.noise_sd**2, prob)
    quadrature = _constants_from_moments(moments, ctx.backend)
    rows = [("limit", float(np.max(np.abs(model.attention_limit(a) - limit))) , 1.0)]
    rows += [(name, abs(closed[name] - quadrature[name]), max(1.0, abs(quadrature[name])))
             for name in ("constant", "second_order", "bias", "second_order_bias")]
    worst = max(rows, key=lambda r: r[1] / r[2])
    return at_most(worst[1] / worst[2], 1e-10, note=f"largest relative gap: {worst[0]}",
                   figures={"closed_form": {k: v for k, v in closed.items() if k != "direction"}, "quadrature": quadrature})


@theory.claim(
    source=f"{SOURCE}; note §3.2 (P6)",
    examples={"quick": 6, "thorough": 40},
    query=st.floats(-1.5, 1.5), key_sd=st.floats(0.5, 2.0), bandwidth=st.floats(0.2, 2.0),
    frequency=st.floats(0.3, 3.0), noise_sd=st.floats(0.0, 0.5),
)
def fixed_bandwidth_constants_match_quadrature(ctx: Context, query, key_sd, bandwidth, frequency, noise_sd) -> Evidence:
    """For k ~ N(0, s²), v = sin(ωk) + σ_vξ and RBF weights at bandwidth h, the derived limit
    m_h(q) and constants C, D, B, B₂ equal their defining weight moments by adaptive quadrature."""
    s, h, w, q, sv = key_sd, bandwidth, frequency, query, noise_sd
    density = lambda k: math.exp(-k * k / (2 * s * s)) / math.sqrt(2 * math.pi * s * s)  # noqa: E731
    weight = lambda k: math.exp(-(q - k) ** 2 / (2 * h * h))  # noqa: E731

    errors = []

    def integral(f):
        # a tolerance float64 reaches on these smooth integrands: one tighter meets round-off first (scipy's
        # IntegrationWarning), and its error estimate may then be an underestimate
        value, error = quad(lambda k: f(k) * density(k), -np.inf, np.inf, epsabs=1e-14, epsrel=1e-12, limit=400)
        errors.append(error / max(abs(value), 1.0))
        return value

    mean_w = integral(weight)
    limit = integral(lambda k: weight(k) * math.sin(w * k)) / mean_w
    wn = lambda k: weight(k) / mean_w  # noqa: E731
    err = lambda k: math.sin(w * k) - limit  # noqa: E731
    moments = {
        "mu_uu": integral(lambda k: wn(k) ** 2 * (err(k) ** 2 + sv * sv)),
        "mu_uus": integral(lambda k: wn(k) ** 2 * (err(k) ** 2 + sv * sv) * (wn(k) - 1)),
        "mu_ss": integral(lambda k: (wn(k) - 1) ** 2),
        "mu_us": integral(lambda k: wn(k) * err(k) * (wn(k) - 1)),
        "mu_uss": integral(lambda k: wn(k) * err(k) * (wn(k) - 1) ** 2),
    }
    quadrature = _constants_from_moments(moments, ctx.backend)
    quadrature["limit"] = limit
    closed = {k: float(v) for k, v in derived.fixed_bandwidth_constants(q, s, h, w, sv, backend=ctx.backend).items()}
    closed["bias"], closed["second_order_bias"] = closed.pop("bias_constant"), closed.pop("second_order_bias")
    rows = [(name, abs(closed[name] - quadrature[name]), max(1.0, abs(quadrature[name])))
            for name in ("limit", "constant", "second_order", "bias", "second_order_bias")]
    worst = max(rows, key=lambda r: r[1] / r[2])
    # adaptive quadrature of smooth Gaussian integrands: relative accuracy ~1e-12, so 1e-9 allowed
    return at_most(worst[1] / worst[2], 1e-9, note=f"largest relative gap: {worst[0]}",
                   figures={"closed_form": closed, "quadrature": quadrature, "quadrature_error": max(errors)})


# ---------------------------------------------------------------------------------------------
