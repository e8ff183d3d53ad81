"""MCMC convergence diagnostics and Monte Carlo standard errors, from arviz-stats, with a convergence gate whose
false-alarm probability is stated.

Rank-normalised split R-hat and bulk/tail effective sample sizes are those of Vehtari, Gelman, Simpson,
Carpenter & Bürkner (2021, Bayesian Analysis 16, "Rank-normalization, folding, and localization"),
computed by ``arviz_stats.base.array_stats``. Draws are arrays (..., chains, draws); the MCSE of a
posterior mean is sd / sqrt(bulk ESS) (their eq. for the mean, arviz's ``mcse(method='mean')``).

The gate (`ChainSummary.converged`). Vehtari et al. recommend R̂ < 1.01 for *one* quantity. Gating the
maximum over k entries with that per-entry figure makes the false alarm grow with k and shrink with the effective
sample size: 6 chains × 800 HMC draws of a 5-dimensional Gaussian failed it for 5 of 40 seeds. Here each
entry's bulk and folded R̂ is compared with the value it exceeds under the null "the chains have converged" only
with probability α/(2k) (`rhat_limit`, from the entry's within-chain autocorrelation, `null_ess`), so
the whole gate raises a false alarm with probability at most α = `FALSE_ALARM` (Bonferroni), and every entry
must also have R̂ < `RHAT_CAP` and bulk and tail ESS ≥ `ESS_MINIMUM`. Validated by simulation in
``benchmarks/rhat_gate.py`` (false-alarm rates and power, quoted in `rhat_limit`).

Many short chains (≥ `MANY_CHAINS`, started in superchains that share an initial point) are judged instead by
nested R̂ (Margossian et al. 2024, [`nested_rhat`][attnverify.numerics.diagnostics.nested_rhat]) against a limit with
the same stated false-alarm probability ([`nested_rhat_limit`][attnverify.numerics.diagnostics.nested_rhat_limit]), and
their MCSE comes from the superchain means ([`summarize`][attnverify.numerics.diagnostics.summarize]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from arviz_stats.base import array_stats
from scipy import fft, special, stats

from ..base import arguments
from ..base.backend import to_numpy

TAIL_PROBABILITIES = (0.05, 0.95)
"""Quantiles of the tail ESS (Vehtari et al. 2021 §4.3)."""

ESS_MINIMUM = 400
"""Vehtari et al.'s recommendation: bulk and tail ESS > 100 per chain, 400 in all (below it R̂ and the MCSE
themselves are unreliable)."""

FALSE_ALARM = 1e-3
"""α: the probability that `ChainSummary.converged` calls chains that have converged unconverged, whatever
the number of entries gated (the R-hat part; the ESS floor adds a false alarm only where the true ESS is near
400, which a sampler's settings must avoid)."""

RHAT_CAP = 1.1
"""R̂ at or above this is never converged, whatever the effective sample size (Gelman & Rubin's 1992 figure): a
hard ceiling over the statistical limit, which the limit passes only where the ESS is below about 6·M·q (M split
chains, q of `rhat_limit`: 230–290 for the shapes the tests and claims gate), where the ESS floor fails the gate
anyway."""

RHAT_REFERENCE = 1.01
"""Vehtari et al.'s per-quantity figure, the gate of summaries stored before the threshold existed (they lack the
bulk/folded split and the chain shape `rhat_limit` needs)."""


def _draws(values, name: str) -> np.ndarray:
    x = np.ascontiguousarray(arguments.array(name, to_numpy(values) if hasattr(values, "dtype") else values))
    if x.ndim < 2 or x.shape[-2] < 2 or x.shape[-1] < 4:
        raise ValueError(f"{name} must be shaped (..., chains ≥ 2, draws ≥ 4), got {x.shape}")
    return x


def _constant(x: np.ndarray) -> np.ndarray:
    """Elements whose draws are all equal (no variance: R-hat and ESS are 0/0 in their formulas)."""
    return np.all(x == x[..., :1, :1], axis=(-2, -1))


def _rhat(x: np.ndarray, method: str = "rank") -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.asarray(array_stats.rhat(x, method=method), dtype=float)
    return np.where(_constant(x), 1.0, r)


def _ess(x: np.ndarray, method: str) -> np.ndarray:
    options = {"prob": TAIL_PROBABILITIES} if method == "tail" else {}
    with np.errstate(invalid="ignore", divide="ignore"):
        ess = np.asarray(array_stats.ess(x, method=method, **options), dtype=float)
    return np.where(_constant(x), float(x.shape[-2] * x.shape[-1]), ess)


def rhat(values) -> np.ndarray:
    """Rank-normalised split R-hat of draws (..., chains, draws), the max of bulk and folded
    (1 for an element constant across all draws)."""
    return _rhat(_draws(values, "values"))


def ess_bulk(values) -> np.ndarray:
    """Bulk effective sample size of draws (..., chains, draws) (all draws for a constant element)."""
    return _ess(_draws(values, "values"), "bulk")


def ess_tail(values) -> np.ndarray:
    """Tail effective sample size at the 5% and 95% quantiles (all draws for a constant element)."""
    return _ess(_draws(values, "values"), "tail")


def rank_normalise(x: np.ndarray) -> np.ndarray:
    """Vehtari et al.'s rank normalisation over the last two axes (chains, draws) of each element, as arviz-stats'
    ``z_scale``: average ranks r of all draws pooled, z = Φ⁻¹((r − 3/8)/(S − 3/4 + 1)) (Blom's offset)."""
    shape = x.shape
    flat = x.reshape(shape[:-2] + (shape[-2] * shape[-1],))
    ranks = stats.rankdata(flat, method="average", axis=-1)
    return special.ndtri((ranks - 3 / 8) / (flat.shape[-1] - 2 * 3 / 8 + 1)).reshape(shape)


def split_chains(x: np.ndarray) -> np.ndarray:
    """Each chain's first and last ⌊draws/2⌋ draws as two chains (..., 2·chains, ⌊draws/2⌋), as arviz splits."""
    half = x.shape[-1] // 2
    return np.concatenate([x[..., :half], x[..., x.shape[-1] - half:]], axis=-2)


def fold(x: np.ndarray) -> np.ndarray:
    """|x − median| over all chains and draws of each element (the folded draws of the folded R̂)."""
    return np.abs(x - np.median(x, axis=(-2, -1), keepdims=True))


def _geyer(rho: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Geyer's (1992, Statistical Science 7, §3.3) initial monotone sequence estimator over the last axis of
    autocorrelations ρ_0 = 1, ρ_1, …: the pair sums Γ_j = ρ_2j + ρ_2j+1 up to the first that is not positive, made
    non-increasing, τ = −1 + 2 Σ Γ_j (at least 1/log10(size), arviz's floor for anti-correlated draws). Returns τ and
    the last lag used, K = 2J − 1 for J pairs."""
    lags = rho.shape[-1]
    pairs = rho[..., 0:lags - lags % 2:2] + rho[..., 1:lags - lags % 2:2]
    stop = pairs <= 0
    stop[..., 0] = False
    count = np.where(stop.any(axis=-1), stop.argmax(axis=-1), pairs.shape[-1])  # J
    kept = np.arange(pairs.shape[-1]) < count[..., None]
    monotone = np.minimum.accumulate(np.where(kept, pairs, np.inf), axis=-1)
    tau = -1 + 2 * np.sum(np.where(kept, monotone, 0.0), axis=-1)
    return np.maximum(tau, 1 / np.log10(size)), 2 * count - 1


def null_ess(z: np.ndarray, iterations: int = 4) -> tuple[np.ndarray, np.ndarray]:
    r"""The effective sample size that chains z (..., M, n) would have if they had converged, from their within-chain
    autocorrelation alone, and the number of lags K it sums (for `rhat_limit`'s degrees of freedom).

    arviz's ESS (Vehtari et al. eq. 10) divides by var⁺, which holds the observed between-chain variance: chains that
    disagree get a small ESS, and a limit computed from it would rise with the disagreement it should catch. Here
    the autocovariances a_t are each chain's about its own mean (averaged over chains), with their mean-removal bias
    corrected under the null: E a_t ≈ σ²(ρ_t − τ/n) (Priestley 1981, §5.3.2), so ρ_t ≈ (a_t/a_0)(1 − τ/n) + τ/n,
    solved with τ = Geyer(ρ) by fixed-point iteration (a contraction: the map's slope is ≈ 2K/n). ESS = Mn/τ.
    """
    m, n = z.shape[-2], z.shape[-1]
    centred = z - z.mean(axis=-1, keepdims=True)
    length = fft.next_fast_len(2 * n, real=True)
    spectrum = fft.rfft(centred, n=length, axis=-1)
    acov = fft.irfft((spectrum * np.conj(spectrum)).real, n=length, axis=-1)[..., :n].mean(axis=-2) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        r = acov / acov[..., :1]
    tau = np.zeros(r.shape[:-1])
    for _ in range(iterations):
        rho = r * (1 - tau[..., None] / n) + tau[..., None] / n
        rho[..., 0] = 1.0
        tau, window = _geyer(rho, m * n)
    return m * n / tau, window


def rhat_limit(ess, *, chains: int, draws: int, statistics: int, alpha: float = FALSE_ALARM,
               lags=None) -> np.ndarray:
    r"""The value a rank-normalised split R̂ (bulk or folded) exceeds with probability at most α/``statistics`` when
    the chains have converged, given the ESS those split chains would have then (`null_ess`, bulk or folded)
    and the lags K that ESS sums. Gating ``statistics`` such R̂ with these limits raises a false alarm with
    probability ≤ α (Bonferroni; `ChainSummary` gates 2k statistics, the bulk and folded R̂ of k entries).

    Derivation. Split R̂ (Vehtari et al. 2021, eqs. 3–4) works on M = 2·chains half-chains of n = ⌊draws/2⌋
    rank-normalised values z with chain means m_j and variances s_j²: W = mean s_j², B/n = var(m_j) (ddof 1),
    R̂² = (n−1)/n + (B/n)/W. Rank normalisation pools all chains, so the values z are a fixed set (Blom scores):
    their sum of squares about their mean 0 is fixed, M(n−1)W + n(M−1)B/n = c·Mn with c = mean z² ≈ 1. Under the
    null (every chain stationary in the target, chains independent) the chain means are approximately normal with
    variance c·τ/n, τ = Mn/ESS the integrated autocorrelation time, so B/n = c·(τ/n)·X with
    X ~ χ²_{M−1}/(M−1). Putting W from the sum of squares into R̂², c cancels:

        R̂² = (n−1)/n · (Mn + τX)/(Mn − (M−1)τX) = (n−1)/n · (S + X)/(S − (M−1)X),   S = ESS,

    increasing in X; the limit is its value at X = q, the upper α/``statistics`` quantile of X (+∞ where
    S ≤ (M−1)q: too few effective draws to tell). With τ estimated, X is a ratio of the between-chain variance to
    an estimate of it with ν degrees of freedom: F(M−1, ν), ν = Mn/(2K + 1) (the variance of a spectral estimate at
    frequency 0 summing K lags with a flat window, 2(2K+1)/(Mn) relative: Priestley 1981, eq. 6.2.124); without
    ``lags``, ν = ∞ (χ²). For S ≫ M the limit is R̂² ≈ 1 + (τq − 1)/n, the sketch "1 + (χ²/(M−1) − 1)/(ESS per
    split chain)".

    Assumptions, and which way each errs: (i) chain means normal (the CLT over ESS/M effective draws per half-chain;
    rank normalisation makes the marginal Gaussian); (ii) the two halves of a chain independent (they touch at one
    end: a correlation ≈ ρ/((1−ρ)²τn) for AR(1), positive for positive autocorrelation, which shrinks the
    between-chain spread: conservative); (iii) τ from the within-chain autocorrelation, mean-removal bias corrected
    (`null_ess`), its estimation error in ν; the residual bias −2Σ t ρ_t/n is −2 % of τ for AR(1) ρ = 0.9 at
    n = 400; (iv) Bonferroni over correlated statistics: conservative; (v) var(m_j) a little below cτ/n for positive
    autocorrelation at finite n: conservative.

    Validation (``benchmarks/rhat_gate.py``: arviz's own R̂ on i.i.d. and AR(1) chains, which are exactly
    stationary, in the shapes the tests and claims gate): see that script's docstring for the measured false-alarm
    rates and the power against chains whose means are shifted, drifting or scaled.
    """
    chains = arguments.integer("chains", chains, 2)
    draws = arguments.integer("draws", draws, 4)
    statistics = arguments.integer("statistics", statistics, 1)
    alpha = arguments.real("alpha", alpha, low=0, high=1, open_low=True, open_high=True)
    M, n = 2 * chains, draws // 2
    S = np.asarray(ess, dtype=float)
    if lags is None:
        q = np.full(S.shape, stats.chi2.isf(alpha / statistics, M - 1) / (M - 1))
    else:
        q = stats.f.isf(alpha / statistics, M - 1, M * n / (2 * np.asarray(lags, dtype=float) + 1))
    room = S - (M - 1) * q
    with np.errstate(invalid="ignore", divide="ignore"):
        squared = np.where(room > 0, (n - 1) / n * (S + q) / room, np.inf)
    return np.where(np.isnan(S), np.nan, np.sqrt(squared))


MANY_CHAINS = 64
"""Chains from which the samplers start them in superchains and the gate judges them by nested R̂
([`nested_rhat`][attnverify.numerics.diagnostics.nested_rhat]): with fewer, each chain is long enough for the split-R̂
gate above."""


def superchains_for(chains: int) -> int | None:
    """K, the superchains the samplers start ``chains`` chains in: None below `MANY_CHAINS` (each chain starts on
    its own and the split-R̂ gate judges them), else the largest divisor K ≤ √chains (1,024 chains: 32 × 32), so that
    M = chains/K ≥ K; None if that K is below 8. K − 1 is the degrees of freedom of the MCSE and of the nested R̂
    limit's numerator; M ≥ K keeps the within-superchain spread that the limit divides by as well measured."""
    chains = arguments.integer("chains", chains, 1)
    if chains < MANY_CHAINS:
        return None
    K = max(k for k in range(1, math.isqrt(chains) + 1) if chains % k == 0)
    return K if K >= 8 else None


def superchain_size(chains: int, superchains: int) -> int:
    """M, the chains of each of ``superchains`` superchains (K ≥ 2 contiguous blocks: chain c is in block c // M)."""
    superchains = arguments.integer("superchains", superchains, 2)
    if chains % superchains:
        raise ValueError(f"superchains must divide the {chains} chains into equal blocks, got {superchains}")
    return chains // superchains


def _nested_draws(values, superchains: int) -> tuple[np.ndarray, int]:
    x = np.ascontiguousarray(arguments.array("values", to_numpy(values) if hasattr(values, "dtype") else values))
    if x.ndim < 2:
        raise ValueError(f"values must be shaped (..., chains, draws), got {x.shape}")
    M = superchain_size(x.shape[-2], superchains)
    if M == 1 and x.shape[-1] == 1:
        raise ValueError("one draw of one chain per superchain has no within-superchain variance: nested R̂ needs "
                         f"M ≥ 2 chains per superchain or N ≥ 2 draws, got values of shape {x.shape}")
    return x, M


def _nested_parts(x: np.ndarray, superchains: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(B̂ν, Ŵν, mean_k B̃_k) of draws x (..., K·M, N)
    ([`nested_rhat`][attnverify.numerics.diagnostics.nested_rhat])."""
    K = superchains
    M, N = x.shape[-2] // K, x.shape[-1]
    chain_means = x.mean(axis=-1).reshape(x.shape[:-2] + (K, M))
    between = chain_means.mean(axis=-1).var(axis=-1, ddof=1)
    spread = chain_means.var(axis=-1, ddof=1) if M > 1 else np.zeros(chain_means.shape[:-1])
    within = (x.var(axis=-1, ddof=1).reshape(chain_means.shape).mean(axis=-1) if N > 1
              else np.zeros(chain_means.shape[:-1]))
    return between, (spread + within).mean(axis=-1), spread.mean(axis=-1)


def nested_rhat(values, superchains: int) -> np.ndarray:
    r"""Nested $\hat{R}$ of draws (..., chains, draws) whose chains form ``superchains`` $= K$ contiguous superchains
    of $M$ chains each (chain $c$ in superchain $c \mathbin{//} M$; the chains of a superchain are meant to share their
    initial point), element-wise over the leading axes (1 for an element constant across all draws).

    Margossian, Hoffman, Sountsov, Riou-Durand, Vehtari & Gelman (2024, Bayesian Analysis, "Nested $\hat{R}$",
    Definition 2.2), for draws $\theta^{nmk}$ of $N$ draws, $M$ chains, $K$ superchains, chain means
    $\bar\theta^{\cdot mk}$, superchain means $\bar\theta^{\cdot\cdot k}$:

    $$
    \hat{B}_\nu = \operatorname{var}_k(\bar\theta^{\cdot\cdot k}) \;(\text{ddof } 1), \qquad
    \hat{W}_\nu = \operatorname{mean}_k (\tilde{B}_k + \tilde{W}_k), \qquad
    \hat{R}_\nu = \sqrt{1 + \hat{B}_\nu/\hat{W}_\nu},
    $$

    $\tilde{B}_k = \operatorname{var}_m(\bar\theta^{\cdot mk})$ (ddof 1; 0 when $M = 1$),
    $\tilde{W}_k = \operatorname{mean}_m \operatorname{var}_n(\theta^{nmk})$ (ddof 1; 0 when $N = 1$). With $M = 1$
    it is the classical (unsplit) $\hat{R}$ of Gelman & Rubin with $1/N$ added: $\hat{R}_\nu^2 = \hat{R}^2 + 1/N$
    (their footnote 1), since $\hat{R}^2 = \big((N - 1)/N \cdot W + \operatorname{var}(\text{chain means})\big)/W$. The
    raw draws, as the paper defines it;
    [`summarize`][attnverify.numerics.diagnostics.summarize] applies it to the rank-normalised and folded draws, and
    [`nested_rhat_limit`][attnverify.numerics.diagnostics.nested_rhat_limit] is the threshold it is judged by.
    """
    x, _ = _nested_draws(values, superchains)
    between, within, _ = _nested_parts(x, superchains)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.sqrt(1 + between / within)
    return np.where(_constant(x), 1.0, r)


def nested_quantile(superchains: int, size: int, *, statistics: int = 1, alpha: float = FALSE_ALARM) -> float:
    """q: the upper α/``statistics`` quantile of F(K − 1, K(M − 1)), the limit of
    [`nested_rhat_limit`][attnverify.numerics.diagnostics.nested_rhat_limit]'s F."""
    alpha = arguments.real("alpha", alpha, low=0, high=1, open_low=True, open_high=True)
    statistics = arguments.integer("statistics", statistics, 1)
    return float(stats.f.isf(alpha / statistics, superchains - 1, superchains * (size - 1)))


def nested_rhat_limit(values, superchains: int, *, statistics: int = 1, alpha: float = FALSE_ALARM) -> np.ndarray:
    r"""Per element, the value the nested $\hat{R}$ of these draws
    ([`nested_rhat`][attnverify.numerics.diagnostics.nested_rhat]) exceeds with probability at most
    $\alpha$/``statistics`` when the superchains have forgotten their initial points ($M \ge 2$ chains per superchain).

    The threshold $\hat{R}_\nu < 1 + \delta$. The paper judges $\hat{R}_\nu$ against $1 + \delta$ with $\delta$ chosen
    from the number of superchains $K$, because $\hat{B}_\nu$ estimates the variance of $K$ superchain means and so
    fluctuates like $\chi^2_{K-1}/(K - 1)$ even when the chains have converged. Here $\delta$ is the exact quantile of
    that fluctuation. The paper splits the variance of a superchain mean into the nonstationary part (what the chains
    still remember of their shared start; 0 once they have forgotten it) and the persistent part $v/M$, $v$ the
    variance of one chain's mean about its superchain's. The null is "no nonstationary variance": the chain means are
    then $\bar\theta^{\cdot mk} = \mu + e_{mk}$, $e$ independent with variance $v$ (chains that forgot their start are
    independent), so $M \cdot \hat{B}_\nu \sim v\,\chi^2_{K-1}/(K - 1)$ and the within-superchain spread
    $\bar{B} = \operatorname{mean}_k \tilde{B}_k \sim v\,\chi^2_{K(M-1)}/(K(M - 1))$, independent of it; their ratio
    $F = M \cdot \hat{B}_\nu/\bar{B}$ is $F(K - 1, K(M - 1))$ whatever $v$, $N$ and the autocorrelation within chains
    (chain means normal: the CLT over a chain's draws, exact after rank normalisation when $N = 1$). Since
    $\hat{R}_\nu^2 - 1 = F \cdot \bar{B}/(M \cdot \hat{W}_\nu)$,

    $$
    \hat{R}_\nu \le 1 + \delta, \qquad (1 + \delta)^2 = 1 + q \cdot \bar{B}/(M \cdot \hat{W}_\nu), \qquad
    q \text{ the upper } \alpha/\text{statistics} \text{ quantile of } F(K - 1, K(M - 1)),
    $$

    fails converged chains with probability $\alpha/\text{statistics}$; $\delta \approx q \cdot v/(2M \cdot \sigma^2)$
    ($\sigma^2$ the target's variance; $v/\sigma^2 \approx \tau/N$ for chains of $N \gg \tau$ draws, $\tau$ their
    autocorrelation time, and $\approx 1$ for $N = 1$) shrinks with $M$ and with the draws. The paper's fixed $\delta$
    also asks the persistent variance to be small (enough effective draws per superchain); the gate here asks that
    separately, by the ESS floor and the MCSE. Superchains that still remember their starts make $\hat{B}_\nu$ exceed
    $\bar{B}/M$: flagged once the nonstationary variance is a few times $\bar{B}/(M \cdot \sqrt{K})$. Validated by
    simulation in ``tests/numerics/test_diagnostics.py`` (the false-alarm rate on exact i.i.d. draws, and power).
    """
    x, M = _nested_draws(values, superchains)
    if M < 2:
        raise ValueError(f"the nested R̂ limit needs M ≥ 2 chains per superchain, got {x.shape[-2]} chains in "
                         f"{superchains} superchains")
    _, within, spread = _nested_parts(x, superchains)
    q = nested_quantile(superchains, M, statistics=statistics, alpha=alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        limit = np.sqrt(1 + q * spread / (M * within))
    return np.where(_constant(x), 1.0, limit)


def _spread(r: np.ndarray, S: np.ndarray, M: int, n: int) -> np.ndarray:
    """X read back from an observed R̂ and null ESS S (the inverse of `rhat_limit`'s formula): about 1 for
    converged chains, larger where the chain means disagree beyond their autocorrelation."""
    ratio = np.asarray(r, dtype=float) ** 2 * n / (n - 1)
    return np.maximum(S * (ratio - 1) / (1 + ratio * (M - 1)), 0.0)


def _known(value) -> int | None:
    """A shape figure of a summary (stored summaries hold it as a float array); None where it is unknown."""
    if value is None:
        return None
    number = float(np.asarray(value, dtype=float))
    return int(number) if math.isfinite(number) else None


@dataclass(frozen=True)
class ChainSummary:
    """Posterior mean with its MCSE and the convergence diagnostics, element-wise over the leading axes.

    ``rhat`` is the rank-normalised split R̂, the larger of ``rhat_bulk`` and ``rhat_folded``; ``null_ess_bulk`` and
    ``null_ess_folded`` are the ESS the bulk and folded split chains would have if they had converged
    (`null_ess`), over ``lags_bulk`` and ``lags_folded`` lags; ``chains`` and ``draws`` (per chain) the shape
    of the draws. Those nine are None in summaries stored before they existed; such a summary is gated by the
    per-entry `RHAT_REFERENCE` instead of `rhat_limit`.

    With ``superchains`` (K superchains of the chains, [`summarize`][attnverify.numerics.diagnostics.summarize]) the R̂
    part of the gate is nested R̂ instead: ``rhat_nested_bulk`` and ``rhat_nested_folded``
    ([`nested_rhat`][attnverify.numerics.diagnostics.nested_rhat] of the rank-normalised and folded draws), each with
    its ``nested_scale_*`` = B̄/(M·Ŵν), the R̂ν² − 1 of one unit of F
    ([`nested_rhat_limit`][attnverify.numerics.diagnostics.nested_rhat_limit]); ``rhat`` is then the larger nested R̂
    and ``mcse`` the superchain means' standard error ([`summarize`][attnverify.numerics.diagnostics.summarize]).
    """

    mean: np.ndarray
    standard_deviation: np.ndarray
    mcse: np.ndarray
    rhat: np.ndarray
    ess_bulk: np.ndarray
    ess_tail: np.ndarray
    rhat_bulk: np.ndarray | None = None
    rhat_folded: np.ndarray | None = None
    null_ess_bulk: np.ndarray | None = None
    null_ess_folded: np.ndarray | None = None
    lags_bulk: np.ndarray | None = None
    lags_folded: np.ndarray | None = None
    chains: int | None = None
    draws: int | None = None
    superchains: int | None = None
    rhat_nested_bulk: np.ndarray | None = None
    rhat_nested_folded: np.ndarray | None = None
    nested_scale_bulk: np.ndarray | None = None
    nested_scale_folded: np.ndarray | None = None

    @property
    def entries(self) -> int:
        """k: the number of quantities summarised (the gate is over all of them)."""
        return int(np.size(self.rhat))

    def _thresholded(self) -> bool:
        arrays = (self.rhat_bulk, self.rhat_folded, self.null_ess_bulk, self.null_ess_folded, self.lags_bulk,
                  self.lags_folded)
        return all(a is not None for a in arrays) and None not in (_known(self.chains), _known(self.draws))

    def _nested(self) -> bool:
        """Whether the R̂ gate is nested R̂ over superchains (a stored classical summary holds NaN there)."""
        return _known(self.superchains) is not None and _known(self.chains) is not None

    def _nested_components(self):
        """(R̂ν, B̄/(M·Ŵν)) of the bulk and of the folded statistic."""
        return ((np.asarray(self.rhat_nested_bulk), np.asarray(self.nested_scale_bulk)),
                (np.asarray(self.rhat_nested_folded), np.asarray(self.nested_scale_folded)))

    def _nested_quantile(self, alpha: float) -> float:
        K = _known(self.superchains)
        return nested_quantile(K, _known(self.chains) // K, statistics=2 * self.entries, alpha=alpha)

    def _components(self):
        """(R̂, null ESS, lags) of the bulk and of the folded statistic."""
        return ((np.asarray(self.rhat_bulk), np.asarray(self.null_ess_bulk), np.asarray(self.lags_bulk)),
                (np.asarray(self.rhat_folded), np.asarray(self.null_ess_folded), np.asarray(self.lags_folded)))

    def rhat_limits(self, alpha: float = FALSE_ALARM) -> tuple[np.ndarray, np.ndarray]:
        """(bulk, folded) R̂ limits per entry: `rhat_limit` at α/(2k), each with its own null ESS and lags (with
        superchains: the nested R̂ limits of [`nested_rhat_limit`][attnverify.numerics.diagnostics.nested_rhat_limit] at
        α/(2k))."""
        if self._nested():
            q = self._nested_quantile(alpha)
            (_, bulk), (_, folded) = self._nested_components()
            return np.sqrt(1 + q * bulk), np.sqrt(1 + q * folded)
        if not self._thresholded():
            legacy = np.full(np.shape(self.rhat), RHAT_REFERENCE)
            return legacy, legacy
        shape = {"chains": _known(self.chains), "draws": _known(self.draws), "statistics": 2 * self.entries,
                 "alpha": alpha}
        (_, s_bulk, k_bulk), (_, s_folded, k_folded) = self._components()
        return rhat_limit(s_bulk, lags=k_bulk, **shape), rhat_limit(s_folded, lags=k_folded, **shape)

    def _ratios(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """(bulk, folded) between-chain spread X over its limit q, per entry (see `rhat_ratio`); with
        superchains, F = (R̂ν² − 1)/scale over its limit."""
        if self._nested():
            q = self._nested_quantile(alpha)
            with np.errstate(invalid="ignore", divide="ignore"):
                ratios = [np.where(r > 1, (r**2 - 1) / scale, 0.0) / q for r, scale in self._nested_components()]
            return ratios[0], ratios[1]
        M, n, k = 2 * _known(self.chains), _known(self.draws) // 2, self.entries
        out = []
        for r, S, lags in self._components():
            q = stats.f.isf(alpha / (2 * k), M - 1, M * n / (2 * lags.astype(float) + 1))
            out.append(_spread(r, S, M, n) / q)
        return out[0], out[1]

    def rhat_ratio(self, alpha: float = FALSE_ALARM) -> np.ndarray:
        """Per entry, the between-chain spread X read back from R̂ over its limit q (the larger of bulk and folded;
        `rhat_limit`): ≤ 1 passes the R̂ gate; it reads "the chain means disagree this many times the most
        that converged chains would" (with superchains: the F of
        [`nested_rhat_limit`][attnverify.numerics.diagnostics.nested_rhat_limit] over its limit). A stored summary
        without the split: (R̂ − 1)/(1.01 − 1)."""
        if not (self._nested() or self._thresholded()):
            return (np.asarray(self.rhat) - 1) / (RHAT_REFERENCE - 1)
        return np.maximum(*self._ratios(alpha))

    def rhat_converged(self, alpha: float = FALSE_ALARM) -> bool:
        """The R̂ part of the gate alone: every entry within its limits (false alarm ≤ α) and below
        `RHAT_CAP` (with superchains: the nested R̂ within its limits and below the cap; the split R̂ of chains
        this short is not a test). For many quantities whose ESS need not reach 400 each (a predictor's test points)."""
        if not (self._nested() or self._thresholded()):
            return bool(np.all(np.asarray(self.rhat) < RHAT_REFERENCE))
        bulk, folded = ((self.rhat_nested_bulk, self.rhat_nested_folded) if self._nested()
                        else (self.rhat_bulk, self.rhat_folded))
        bulk_limit, folded_limit = self.rhat_limits(alpha)
        return bool(np.all(np.asarray(bulk) <= bulk_limit) and np.all(np.asarray(folded) <= folded_limit)
                    and np.all(np.asarray(self.rhat) < RHAT_CAP))

    def converged_at(self, alpha: float) -> bool:
        """R̂ within the limits for the max over all entries at false-alarm probability α, R̂ < 1.1, and bulk and
        tail ESS ≥ 400 for every entry."""
        return bool(self.rhat_converged(alpha) and np.all(np.asarray(self.ess_bulk) >= ESS_MINIMUM)
                    and np.all(np.asarray(self.ess_tail) >= ESS_MINIMUM))

    @property
    def converged(self) -> bool:
        """The gate at α = `FALSE_ALARM` (`converged_at`): converged chains fail its R̂ part with
        probability ≤ 10⁻³ whatever the number of entries."""
        return self.converged_at(FALSE_ALARM)

    def mcse_z(self, alpha: float = FALSE_ALARM, minimum: float = 5.0) -> np.ndarray:
        """Per entry, the multiple z of the MCSE within which all k posterior means lie together with probability
        ≥ 1 − α: the upper α/(2k) quantile of Student's t (Bonferroni over the k entries; t because the MCSE is itself
        estimated, with ν = Mn/(2K + 1) degrees of freedom, K the entry's ``lags_bulk``, as in `rhat_limit`),
        and at least ``minimum`` (the project's 5 MCSE). With superchains ν = K − 1, the degrees of freedom of the
        superchain means' variance that the MCSE is. A summary stored without lags: the normal quantile."""
        alpha = arguments.real("alpha", alpha, low=0, high=1, open_low=True, open_high=True)
        if self._nested():
            return np.maximum(minimum, np.full(np.shape(self.mean),
                                               stats.t.isf(alpha / (2 * self.entries), _known(self.superchains) - 1)))
        if self.lags_bulk is None or _known(self.chains) is None or _known(self.draws) is None:
            return np.maximum(minimum, np.full(np.shape(self.mean), stats.norm.isf(alpha / (2 * self.entries))))
        dof = 2 * _known(self.chains) * (_known(self.draws) // 2) / (2 * np.asarray(self.lags_bulk, dtype=float) + 1)
        return np.maximum(minimum, stats.t.isf(alpha / (2 * self.entries), dof))

    def draws_needed(self, alpha: float = FALSE_ALARM) -> int:
        """Draws per chain (in all, kept draws; the warm-up is the caller's) at which this gate would be expected to
        pass: ``draws`` itself when it passes already.

        Two shortfalls, each scaled as ESS grows in proportion to the draws: (1) the ESS floor: draws × 400/min ESS;
        (2) an R̂ beyond its limit: the chain means disagree X times more than their within-chain autocorrelation
        allows (X read back from R̂ by the formula of `rhat_limit`; about 1 under convergence), so the chains
        mix as if their ESS were ESS/X; reaching 400 at that rate takes draws × 400·X/ESS, and at least twice the
        draws (a mixing time comparable to the chain length is why the chains still disagree). An estimate for the
        next run's size, not a promise: the next run is gated afresh. With superchains, a nested R̂ beyond its limit
        asks for twice the draws (the chains still remember their starts; a longer warm-up serves as well).
        """
        draws = _known(self.draws)
        if draws is None:
            raise ValueError("this summary was stored without its chain shape (chains, draws): draws_needed cannot be "
                             "estimated; summarise the draws again")
        if self.converged_at(alpha):
            return draws
        factor = 1.0
        ess_low = float(np.nanmin(np.minimum(self.ess_bulk, self.ess_tail)))
        if not ess_low >= ESS_MINIMUM:
            factor = ESS_MINIMUM / max(ess_low, 1.0)
        if not self.rhat_converged(alpha):
            factor = max(factor, 2.0)
            if self._thresholded() and not self._nested():
                M, n = 2 * _known(self.chains), draws // 2
                implied = min(float(np.nanmin(S / np.maximum(_spread(r, S, M, n), 1.0)))
                              for r, S, _ in self._components())
                factor = max(factor, ESS_MINIMUM / max(implied, 1.0))
        return int(math.ceil(draws * factor))

    def worst(self, alpha: float = FALSE_ALARM) -> dict:
        """The least converged element's figures (for tables and notes): the largest R̂, the smallest ESS, and, at
        the entry whose R̂ is nearest to (or furthest past) its limit, that limit and `rhat_ratio`."""
        ratio = self.rhat_ratio(alpha)
        at = np.unravel_index(int(np.nanargmax(ratio)) if np.any(np.isfinite(ratio)) else 0, np.shape(ratio))
        bulk_limit, folded_limit = self.rhat_limits(alpha)
        folded_worse = ((self._thresholded() or self._nested())
                        and self._ratios(alpha)[1][at] > self._ratios(alpha)[0][at])
        return {"max_rhat": float(np.max(self.rhat)), "min_ess_bulk": float(np.min(self.ess_bulk)),
                "min_ess_tail": float(np.min(self.ess_tail)),
                "rhat_limit": float((folded_limit if folded_worse else bulk_limit)[at]),
                "rhat_ratio": float(ratio[at])}


def summarize(values, superchains: int | None = None) -> ChainSummary:
    r"""Mean, sd, $\mathrm{MCSE} = \mathrm{sd}/\sqrt{\mathrm{ESS}_\text{bulk}}$, R-hat (bulk, folded and their max),
    bulk and tail ESS, the null ESS and lags of the $\hat{R}$ gate (`null_ess`) and the chain shape of draws (...,
    chains, draws).

    With ``superchains`` $= K$ (chain $c$ in superchain $c \mathbin{//} M$, $M \ge 2$ chains each sharing their start;
    the samplers' layout for `MANY_CHAINS` or more), the $\hat{R}$ gate is nested $\hat{R}$ of the rank-normalised and
    of the folded draws ([`nested_rhat`][attnverify.numerics.diagnostics.nested_rhat],
    [`nested_rhat_limit`][attnverify.numerics.diagnostics.nested_rhat_limit]), and the MCSE is
    $\sqrt{\hat{B}_\nu/K}$, the standard error of the mean of $K$ superchain means. That is what is honest for many
    short chains: the superchains are independent replicates (own start, own random numbers), so
    $\operatorname{var}(\text{grand mean}) = \operatorname{var}(\text{superchain mean})/K$ holds whatever the
    autocorrelation within chains and whatever the chains of a superchain still share of their start;
    $\mathrm{sd}/\sqrt{\mathrm{ESS}}$ instead needs each chain's autocorrelation from its own few draws, and it was
    25 % (AR(1), $\rho = 0.9$) to 32 % ($\rho = 0.97$) below the true standard error for 1,024 chains of 10 draws, and
    5× below it when chains shared starts that 10 draws had not forgotten. The $t$ quantile of `ChainSummary.mcse_z`
    takes its $K - 1$ degrees of freedom.

    An element constant across all draws (zero variance) gets MCSE 0, R-hat 1 and
    $\mathrm{ESS} = \text{number of draws}$.
    """
    x = _draws(values, "values")
    nested = None
    if superchains is not None:
        if superchain_size(x.shape[-2], superchains) < 2:
            raise ValueError(f"superchains must leave M ≥ 2 chains in each, got {superchains} of {x.shape[-2]} chains")
        nested = [_nested_parts(rank_normalise(z), superchains) for z in (x, fold(x))]
    mean = x.mean(axis=(-2, -1))
    sd = x.std(axis=(-2, -1), ddof=1)
    constant = _constant(x)
    bulk, tail = _ess(x, "bulk"), _ess(x, "tail")
    r_bulk, r_folded = _rhat(x, "z_scale"), _rhat(x, "folded")
    split = split_chains(x)
    total = float(split.shape[-2] * split.shape[-1])
    gate = []
    for z in (rank_normalise(split), rank_normalise(fold(split))):
        ess, lags = null_ess(z)
        gate += [np.where(constant, total, ess), np.where(constant, 1, lags)]
    if nested is None:
        mcse = np.where(constant, 0.0, sd / np.sqrt(np.maximum(bulk, 1.0)))
        return ChainSummary(mean, sd, mcse, np.maximum(r_bulk, r_folded), bulk, tail, r_bulk, r_folded, gate[0],
                            gate[2], gate[1], gate[3], int(x.shape[-2]), int(x.shape[-1]))
    M = x.shape[-2] // superchains
    superchain_means = x.mean(axis=-1).reshape(x.shape[:-2] + (superchains, M)).mean(axis=-1)
    mcse = np.where(constant, 0.0, np.sqrt(superchain_means.var(axis=-1, ddof=1) / superchains))
    with np.errstate(invalid="ignore", divide="ignore"):
        r_nested = [np.where(constant, 1.0, np.sqrt(1 + between / within)) for between, within, _ in nested]
        scale = [np.where(constant, 1.0, spread / (M * within)) for _, within, spread in nested]
    return ChainSummary(mean, sd, mcse, np.maximum(*r_nested), bulk, tail, r_bulk, r_folded, gate[0], gate[2],
                        gate[1], gate[3], int(x.shape[-2]), int(x.shape[-1]), int(superchains), r_nested[0],
                        r_nested[1], scale[0], scale[1])
