"""Validation of the convergence gate (``attnverify.numerics.diagnostics``): its false-alarm rate on chains that have
converged, and its power on chains that have not, by simulation.

Null: i.i.d. N(0, 1) draws and stationary AR(1) chains (x₀ ~ N(0, 1), x_t = ρ x_{t−1} + √(1 − ρ²) ε_t, exactly
stationary from the first draw) with ρ = 0.5, 0.9 and ρ = −0.3 (anti-correlated draws, whose ESS exceeds the
number of draws, as HMC gives for posterior means), in the shapes (chains, draws per chain, entries k) that the
tests and claims gate. A false alarm is a replicate whose k entries fail the R̂ part of the gate
(``ChainSummary.rhat_converged``); the rate must be ≤ α within its binomial error. The ESS floor (400) is reported
apart: it is a floor on the sample size, not a test, and fails where the true ESS is near or below 400.
Alternatives (power): one chain's mean shifted by δ posterior sd; one chain drifting linearly from +δ to 0 (an
unfinished warm-up); one chain with its sd scaled by 1 + δ (caught by the folded R̂).

The statistics are arviz-stats' rank-normalised split R̂ (bulk and folded) and bulk/folded/tail ESS, recomputed
here vectorised over replicates (arviz loops over elements in Python, ~0.4 ms each); :func:`check_against_arviz`
asserts they equal arviz's on every scenario's first replicates before any rate is counted.

    python benchmarks/rhat_gate.py [--scale 1] [--power-replicates 200] [--only LABEL] [--rhos ...]

Measured (seed 2027, arviz-stats 0.8.0; about 2 h on 2 shared cores):

* False alarms of the limits at α = 10⁻³ per gate: 26 of 47,500 replicates over the five shapes × ρ ∈ {0, 0.5,
  0.9, −0.3} (5.5·10⁻⁴, 95 % upper bound 7.6·10⁻⁴); the largest cell 4 of 2,000 (8×1500, ρ = −0.3; P(≥ 4) = 0.14
  at 10⁻³). At α = 0.05: 2.0–4.8 % per cell. One statistic against its own limit (no Bonferroni) at 10⁻², 10⁻³,
  10⁻⁴: 0.52–1.0 %, 0.042–0.13 %, 0–0.013 % per cell: the approximation is calibrated to the tail, and Bonferroni
  over the 2k statistics is what makes the gate conservative.
* The cap and the floor: at ρ = 0.9 with 8×400 or 4×400 draws (bulk ESS 170 or 90) the cap R̂ ≥ 1.1 is reached by
  chance in 414 of 4,000 and 500 of 500 replicates (the max of 32 or 512 R̂ at τ = 19, n = 200), and every
  replicate is below the ESS floor: such runs are too short to tell, and the gate says so; the limits themselves
  stay calibrated there (1 of 4,000 and 0 of 500 alarms; the per-statistic rates as elsewhere).
* Power at α = 10⁻³ (i.i.d. chains, 200 replicates, the last chain perturbed): a mean shifted by 0.3 sd caught in
  99.5–100 % (0.2 sd: 29 % at 8×400, 97–100 % at 6×800, 8×1000, 8×1500); a drift from +0.5 sd to 0 over the chain
  97.5–100 %; the sd scaled by 1.3: 100 % (by 1.2: 61.5–100 %). Monotone in δ: the limit comes from the
  within-chain ESS (``diagnostics.null_ess``), which disagreement between chains does not lower (with arviz's ESS in
  its place a 0.5 sd shift was caught by the R̂ part in only 33 % at 6×800: the ESS collapsed and the limit rose).
  With ρ = 0.9 (ESS 170–640) a shift of 1 sd is caught in 100 %; smaller ones mostly fall to the ESS floor.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import fft, signal, special, stats

from attnverify.numerics import diagnostics

BLOM = 3 / 8


def _z_scale(x: np.ndarray) -> np.ndarray:
    """arviz's z_scale over the last two axes (chains, draws) of each element: average ranks, Blom's offset, Φ⁻¹.
    Ranks by one argsort; rows with ties (the folded values' two central draws can tie) by scipy's average ranks."""
    shape = x.shape
    flat = x.reshape((-1, shape[-2] * shape[-1]))
    order = np.argsort(flat, axis=-1)
    ranks = np.empty_like(flat)
    np.put_along_axis(ranks, order, np.arange(1, flat.shape[-1] + 1, dtype=float)[None, :], axis=-1)
    ordered = np.take_along_axis(flat, order, axis=-1)
    tied = np.any(ordered[:, 1:] == ordered[:, :-1], axis=-1)
    if tied.any():
        ranks[tied] = stats.rankdata(flat[tied], method="average", axis=-1)
    return special.ndtri((ranks - BLOM) / (flat.shape[-1] - 2 * BLOM + 1)).reshape(shape)


def _split(x: np.ndarray) -> np.ndarray:
    half = x.shape[-1] // 2
    return np.concatenate([x[..., :half], x[..., -half:]], axis=-2)


def _fold(x: np.ndarray) -> np.ndarray:
    return np.abs(x - np.median(x, axis=(-2, -1), keepdims=True))


def _rhat(z: np.ndarray) -> np.ndarray:
    n = z.shape[-1]
    between = n * np.var(z.mean(axis=-1), axis=-1, ddof=1)
    within = np.mean(np.var(z, axis=-1, ddof=1), axis=-1)
    return np.sqrt((between / within + n - 1) / n)


def _ess(z: np.ndarray) -> np.ndarray:
    """arviz's multi-chain ESS (Vehtari et al. 2021 eq. 10 with Geyer's initial positive and monotone sequences),
    vectorised: the pair sums P_j = ρ̂_{2j} + ρ̂_{2j+1}, truncated at the first non-positive one, made monotone by a
    running minimum; τ = −1 + 2 Σ P'_j + the even term arviz adds at the truncation."""
    m, n = z.shape[-2], z.shape[-1]
    fast = 1 << int(np.ceil(np.log2(2 * n)))
    centred = z - z.mean(axis=-1, keepdims=True)
    spectrum = fft.rfft(centred, n=fast, axis=-1)
    acov = fft.irfft((spectrum * np.conj(spectrum)).real, n=fast, axis=-1)[..., :n] / n
    mean_acov = acov.mean(axis=-2)
    mean_var = mean_acov[..., 0] * n / (n - 1)
    var_plus = mean_var * (n - 1) / n + np.var(z.mean(axis=-1), axis=-1, ddof=1)
    rho = 1 - (mean_var[..., None] - mean_acov) / var_plus[..., None]
    rho[..., 0] = 1.0
    last = int(np.ceil((n - 2) / 2)) - 1  # the last pair index arviz's loop reaches (t = 2j − 1 < n − 3)
    pairs = rho[..., 0:2 * last + 2:2] + rho[..., 1:2 * last + 2:2]  # P_0 … P_last
    failed = pairs[..., 1:] <= 0
    first = np.where(failed.any(axis=-1), failed.argmax(axis=-1) + 1, last)  # J: the pair that stopped the loop
    stopped = failed.any(axis=-1)
    monotone = np.minimum.accumulate(pairs, axis=-1)
    keep = np.arange(pairs.shape[-1]) < first[..., None]
    even = np.take_along_axis(rho, (2 * first)[..., None], axis=-1)[..., 0]
    extra = np.where(stopped, np.where(even > 0, even, 0.0), even)
    tau = -1 + 2 * np.sum(np.where(keep, monotone, 0.0), axis=-1) + extra
    tau = np.where(pairs[..., 0] <= 0, 0.0, tau)  # arviz: no pair positive, τ = 0 before the floor below
    tau = np.maximum(tau, 1 / np.log10(m * n))
    return m * n / tau


def statistics(x: np.ndarray) -> dict[str, np.ndarray]:
    """R̂ bulk and folded, ESS bulk and tail (as arviz computes them), and the gate's null ESS and lags
    (``diagnostics.null_ess``, bulk and folded) of draws (..., chains, draws)."""
    split = _split(x)
    z, zf = _z_scale(split), _z_scale(_fold(split))
    tails = []
    for p in diagnostics.TAIL_PROBABILITIES:
        quantile = np.quantile(x.reshape(x.shape[:-2] + (-1,)), p, axis=-1)[..., None, None]
        tails.append(_ess(_split((x <= quantile).astype(float))))
    (null_bulk, lags_bulk), (null_folded, lags_folded) = diagnostics.null_ess(z), diagnostics.null_ess(zf)
    return {"rhat_bulk": _rhat(z), "rhat_folded": _rhat(zf), "ess_bulk": _ess(z), "ess_tail": np.minimum(*tails),
            "null_ess_bulk": null_bulk, "lags_bulk": lags_bulk, "null_ess_folded": null_folded,
            "lags_folded": lags_folded}


def check_against_arviz(x: np.ndarray, elements: int = 40) -> None:
    """The vectorised statistics equal arviz-stats' on the first ``elements`` elements of x (..., chains, draws)."""
    from arviz_stats.base import array_stats

    flat = x.reshape((-1,) + x.shape[-2:])[:elements]
    ours = statistics(flat)
    theirs = {"rhat_bulk": array_stats.rhat(flat, method="z_scale"),
              "rhat_folded": array_stats.rhat(flat, method="folded"), "ess_bulk": array_stats.ess(flat, method="bulk"),
              "ess_tail": array_stats.ess(flat, method="tail", prob=diagnostics.TAIL_PROBABILITIES)}
    for name, value in theirs.items():
        np.testing.assert_allclose(ours[name], value, rtol=1e-9, err_msg=name)


def gate(s: dict[str, np.ndarray], chains: int, draws: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """(R̂ part passes, ESS floor passes) per replicate, for statistics shaped (replicates, k): the rule of
    ``ChainSummary.rhat_converged`` and ``converged_at``."""
    return limits_pass(s, chains, draws, alpha) & below_cap(s), floor_passes(s)


def limits_pass(s: dict[str, np.ndarray], chains: int, draws: int, alpha: float) -> np.ndarray:
    """Every entry's bulk and folded R̂ within :func:`diagnostics.rhat_limit` (the statistical part of the gate)."""
    k = s["rhat_bulk"].shape[-1]
    shape = {"chains": chains, "draws": draws, "statistics": 2 * k, "alpha": alpha}
    return ((s["rhat_bulk"] <= diagnostics.rhat_limit(s["null_ess_bulk"], lags=s["lags_bulk"], **shape))
            & (s["rhat_folded"] <= diagnostics.rhat_limit(s["null_ess_folded"], lags=s["lags_folded"], **shape))
            ).all(axis=-1)


def below_cap(s: dict[str, np.ndarray]) -> np.ndarray:
    """Every R̂ below the hard cap 1.1 (not a test: converged chains reach it only at ESS far below 400)."""
    return (np.maximum(s["rhat_bulk"], s["rhat_folded"]) < diagnostics.RHAT_CAP).all(axis=-1)


def floor_passes(s: dict[str, np.ndarray]) -> np.ndarray:
    return ((s["ess_bulk"] >= diagnostics.ESS_MINIMUM) & (s["ess_tail"] >= diagnostics.ESS_MINIMUM)).all(axis=-1)


def chains_of(rng, replicates: int, k: int, chains: int, draws: int, rho: float) -> np.ndarray:
    """Stationary AR(1) draws (replicates, k, chains, draws) with unit marginal variance (ρ = 0: i.i.d.)."""
    noise = rng.standard_normal((replicates, k, chains, draws))
    if rho == 0:
        return noise
    start = rng.standard_normal((replicates, k, chains, 1))
    x, _ = signal.lfilter([np.sqrt(1 - rho**2)], [1, -rho], noise, axis=-1, zi=rho * start)
    return x


def perturbed(x: np.ndarray, kind: str, delta: float) -> np.ndarray:
    """The last chain of every entry made non-stationary or unlike the others by δ (in marginal sd)."""
    x = x.copy()
    if kind == "shift":
        x[..., -1, :] += delta
    elif kind == "drift":
        x[..., -1, :] += delta * np.linspace(1, 0, x.shape[-1])
    elif kind == "scale":
        x[..., -1, :] *= 1 + delta
    return x


SHAPES = {  # label: (chains, draws per chain, entries k, null replicates): where the gate is used
    "test_hmc (6×800, 5 means)": (6, 800, 5, 4000),
    "sampled networks quick (8×400, U 4×4)": (8, 400, 16, 4000),
    "sampled networks thorough (8×1000, U 4×4)": (8, 1000, 16, 1000),
    "one-shot U (4×400, 16×16)": (4, 400, 256, 1000),
    "test_sampling (8×1500, U + 2 outputs)": (8, 1500, 3, 2000),
}
PER_STATISTIC = (1e-2, 1e-3, 1e-4)
"""Levels at which each single statistic's exceedance of its own limit (statistics = 1) is counted, pooled over
entries and replicates: the calibration of the approximation itself, before Bonferroni."""


def null_rates(scale: float, alphas, seed: int, rhos, shapes, batch: int = 200) -> list[dict]:
    rows = []
    for label, (chains, draws, k, replicates) in shapes.items():
        replicates = max(1, int(round(replicates * scale)))
        for rho in rhos:
            rng = np.random.default_rng([seed, chains, draws, k, int(round(1000 * rho)) % 2**32])
            alarms = {a: 0 for a in alphas}
            single = {a: 0 for a in PER_STATISTIC}
            floor_fails, cap_hits, done, start, ess = 0, 0, 0, time.perf_counter(), []
            per_batch = max(1, min(batch, 400_000 // (k * chains)))
            while done < replicates:
                size = min(per_batch, replicates - done)
                x = chains_of(rng, size, k, chains, draws, rho)
                if done == 0:
                    check_against_arviz(x, elements=20)
                s = statistics(x)
                for a in alphas:
                    alarms[a] += int(np.sum(~limits_pass(s, chains, draws, a)))
                floor_fails += int(np.sum(~floor_passes(s)))
                cap_hits += int(np.sum(~below_cap(s)))
                for a in PER_STATISTIC:
                    one = {"chains": chains, "draws": draws, "statistics": 1, "alpha": a}
                    for part in ("bulk", "folded"):
                        limit = diagnostics.rhat_limit(s[f"null_ess_{part}"], lags=s[f"lags_{part}"], **one)
                        single[a] += int(np.sum(s[f"rhat_{part}"] > limit))
                ess.append(s["ess_bulk"].ravel())
                done += size
            rows.append({"shape": label, "rho": rho, "replicates": done, "alarms": alarms, "floor_fails": floor_fails,
                         "cap_hits": cap_hits, "single": single, "statistics": 2 * k * done, "median_ess_bulk": float(np.median(np.concatenate(ess))),
                         "seconds": time.perf_counter() - start})
            print(_null_line(rows[-1]), flush=True)
    return rows


def _upper(count: int, n: int, level: float = 0.95) -> float:
    """One-sided Clopper–Pearson upper bound of a binomial rate."""
    return 1.0 if count >= n else float(stats.beta.ppf(level, count + 1, n - count))


def _null_line(row: dict) -> str:
    n, m = row["replicates"], row["statistics"]
    gates = [f"α={a:g}: {c}/{n} = {c / n:.1e} (≤{_upper(c, n):.1e})" for a, c in row["alarms"].items()]
    single = [f"{a:g}: {c / m:.1e}" for a, c in row["single"].items()]
    return (f"{row['shape']:42s} ρ={row['rho']:+.1f} ESS~{row['median_ess_bulk']:5.0f} | gate " + "; ".join(gates)
            + f" | one statistic " + ", ".join(single)
            + f" | R̂≥1.1 {row['cap_hits']}/{n}, ESS<400 {row['floor_fails']}/{n} ({row['seconds']:.0f} s)")


def power(replicates: int, seed: int, shapes, deltas, kinds=("shift", "drift", "scale"), rho: float = 0.0) -> list[dict]:
    rows = []
    for label, (chains, draws, k, _) in shapes.items():
        for kind in kinds:
            for delta in deltas[kind]:
                rng = np.random.default_rng([seed, chains, draws, k, 7])
                x = perturbed(chains_of(rng, replicates, k, chains, draws, rho), kind, delta)
                within, floor = gate(statistics(x), chains, draws, diagnostics.FALSE_ALARM)
                rows.append({"shape": label, "kind": kind, "delta": delta, "rho": rho,
                             "caught_rhat": float(np.mean(~within)), "caught": float(np.mean(~(within & floor)))})
                print(f"{label:42s} ρ={rho:+.1f} {kind:5s} δ={delta:<4g} caught by R̂ {rows[-1]['caught_rhat']:6.1%}, "
                      f"by the gate {rows[-1]['caught']:6.1%}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every shape's number of null replicates")
    parser.add_argument("--power-replicates", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2027)
    parser.add_argument("--only", default="", help="shapes whose label contains this")
    parser.add_argument("--rhos", type=float, nargs="*", default=[0.0, 0.5, 0.9, -0.3], help="AR(1) ρ of the null")
    parser.add_argument("--skip-null", action="store_true")
    parser.add_argument("--skip-power", action="store_true")
    args = parser.parse_args()
    shapes = {k: v for k, v in SHAPES.items() if args.only in k}
    if not args.skip_null:
        print("null (converged chains): replicates with an R̂ beyond its limit at α (per gate, any k), with the 95% "
              "upper bound; each single statistic's exceedance of its own limit at levels", PER_STATISTIC,
              "; replicates reaching the cap 1.1 and below the ESS floor apart")
        null_rates(args.scale, (0.05, diagnostics.FALSE_ALARM), args.seed, tuple(args.rhos), shapes)
    if not args.skip_power:
        print(f"\npower at α = {diagnostics.FALSE_ALARM:g}, {args.power_replicates} replicates, the last chain perturbed "
              "by δ (in marginal sd)")
        deltas = {"shift": (0.1, 0.2, 0.3, 0.5, 1.0), "drift": (0.5, 1.0, 2.0), "scale": (0.1, 0.2, 0.3)}
        for rho in (0.0, 0.9):
            power(args.power_replicates, args.seed, {k: v for k, v in shapes.items() if v[2] <= 16}, deltas, rho=rho)


if __name__ == "__main__":
    main()
