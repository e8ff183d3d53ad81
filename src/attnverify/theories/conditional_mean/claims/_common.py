"""Settings, data and helpers shared by the conditional-mean claims.

Part of `attnverify.theories.conditional_mean.claims` (see its docstring for the spec and sources).
"""

from __future__ import annotations

import numpy as np

from .. import derivations as derived
from ... import conditional_mean as sim
from ....checks import st


SOURCE = derived.SOURCE

unit_interval = st.floats(-1.0, 1.0)
seeds = st.integers(0, 2**32 - 1)


# ---------------------------------------------------------------------------------------------
# Drawing models from hypothesis parameters
# ---------------------------------------------------------------------------------------------


def gaussian_model_parameters(max_score_sd: float = 0.75) -> dict:
    """The strategies of a Gaussian key/value model (d ≤ 3, d_v ≤ 2) and a query direction with s = √(aᵀΣa)
    bounded, by parameter name (``@theory.claim(**gaussian_model_parameters())``)."""
    return dict(d=st.integers(1, 3), d_v=st.integers(1, 2), model_seed=seeds, noise_sd=st.floats(0.1, 1.0),
                score_sd=st.floats(0.05, max_score_sd))


def gaussian_model(d: int, d_v: int, model_seed: int, noise_sd: float) -> tuple[sim.GaussianKeyValueModel, np.ndarray]:
    """The model and a unit direction u drawn from ``model_seed`` (the model's own randomness)."""
    rng = np.random.default_rng(model_seed)
    raw = rng.standard_normal((d, d))
    covariance = raw @ raw.T / d + 0.3 * np.eye(d)
    model = sim.GaussianKeyValueModel(
        key_mean=rng.uniform(-1, 1, d),
        key_covariance=covariance,
        value_map=rng.uniform(-1.5, 1.5, (d_v, d)),
        value_offset=rng.uniform(-1, 1, d_v),
        noise_sd=noise_sd,
    )
    u = rng.standard_normal(d)
    return model, u / np.linalg.norm(u)


def score_with_spread(model: sim.GaussianKeyValueModel, direction: np.ndarray, score_sd: float) -> np.ndarray:
    """A score vector a with aᵀΣa = score_sd² (a = s·L⁻ᵀu for Σ = LLᵀ)."""
    chol = np.linalg.cholesky(model.key_covariance)
    return score_sd * np.linalg.solve(chol.T, direction)


def gaussian_constants(model: sim.GaussianKeyValueModel, score: np.ndarray) -> dict:
    """C, D and the bias B, B₂ along the unit vector of β = AΣa (B = B₂ = 0 when β = 0)."""
    constants = {k: float(v) for k, v in derived.gaussian_error_constants(*model.invariants(score)).items()}
    beta = model.shift_direction(score)
    norm = float(np.linalg.norm(beta))
    direction = beta / norm if norm > 0 else np.eye(model.d_v)[0]
    constants.update(bias=norm * constants["bias_factor"], second_order_bias=norm * constants["second_order_bias_factor"],
                     direction=direction)
    return constants


def attention_errors(sample, logits, target, length: int, backend):
    """``draw(rng, n)`` for `sized_mean`: the errors Σ_ℓ softmax(logits(K))_ℓ v_ℓ
    − target of n sequences of ``length`` tokens drawn by ``sample(L, n, rng)``, shape (n, d_v)."""
    target = backend.asarray(target)

    def draw(rng, n):
        keys, values = sample(length, n, rng)
        return sim.weighted_mean(logits(keys), values) - target

    return draw


def chunk(length: int) -> int:
    """Sequences per call of a draw, so that one call holds about as many numbers as attention_error's chunks."""
    return max(1, sim.monte_carlo.CHUNK_NUMBERS // (4 * length))

# ---------------------------------------------------------------------------------------------
