"""Effective samples per second of the attention-network posterior: our sampler vs numpyro's NUTS.

    python benchmarks/bench_posterior_sampler.py [--widths 10 100] [--backend cupy --chains 1024]
    python benchmarks/bench_posterior_sampler.py --mass [--one-shot]   # identity vs diagonal mass matrix
    python benchmarks/bench_posterior_sampler.py --gradient            # the collapsed potential's cost

The posterior is the 4-path hidden-Markov-chain network of the paper's figure 2c (L = 2, H = 2, T = 0.01,
P = 100, the authors' features shipped with the package, else generated ones), at equal widths N. Both samplers
target the same density: NUTS (numpyro, the sampler the paper used; default target acceptance 0.8, tree depth 10,
float64) on (V^(0), V^(ℓ)_h, a) with N(0, 1) priors and Normal(f, √T) likelihood on the precomputed path
features; ours is prior-whitened HMC with V^(0) integrated out exactly (``collapsed``, the default), and
prior-whitened HMC on the hidden weights + exact Gibbs on the readout (``readout_gibbs``); see
``theories.attention_paths.sampling``. ESS is the smallest bulk ESS over the 10 distinct entries of
U = ⟨w_π·w_π'⟩/n_0, computed by the same arviz-stats code for both; the time is the whole run (warm-up
included) on the same machine. numpyro is an optional dependency (``pip install -e '.[benchmark]'``).
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

from attnverify.theories.attention_paths.theory_points import authors_markov_data
from attnverify.theories.attention_paths.markov_chain import MarkovChainTask, markov_dataset
from attnverify.theories.attention_paths.posterior import network_posterior
from attnverify.theories.attention_paths.sampling import SamplerSettings, sample_posterior
from attnverify.numerics.diagnostics import ess_bulk

HEADS = (2, 2)
TEMPERATURE = 0.01


def markov_features():
    data = authors_markov_data()
    if data is not None:
        return data[0], data[1], "authors' features"
    X, y, _, _ = markov_dataset(MarkovChainTask(), "4paths", 100, 10, seed=0)
    return X, y, "generated features (seed 0)"


def distinct_entries(U: np.ndarray) -> np.ndarray:
    """(𝓗, 𝓗, chains, draws) -> (entries on and above the diagonal, chains, draws)."""
    i, j = np.triu_indices(U.shape[0])
    return U[i, j]


def ours(X, y, width: int, chains: int, warmup: int, draws: int, backend: str, method: str, seed: int = 1,
         mass_matrix: str = "identity", heads=HEADS, temperature: float = TEMPERATURE) -> dict:
    post = network_posterior(X, y, heads=heads, width=width, temperature=temperature, backend=backend)
    settings = SamplerSettings(chains=chains, warmup=warmup, draws=draws, mass_matrix=mass_matrix)
    samples = sample_posterior(post, seed=seed, settings=settings, method=method)
    ess = ess_bulk(distinct_entries(samples.order_parameter))
    d = samples.diagnostics()
    return {"ess": float(ess.min()), "seconds": samples.seconds, "iterations": (warmup + draws) * chains,
            "dimension": sum(post.block_sizes[1:]) + post.readout_width,  # the collapsed state (V^(0) integrated out)
            "leapfrog": samples.leapfrog_steps, "acceptance": d["mean_acceptance"],
            "divergences": d["divergences"], "rhat": d["order_parameter"]["max_rhat"],
            "U": samples.order_parameter.mean(axis=(2, 3))}


def numpyro_nuts(X, y, width: int, warmup: int, draws: int, chains: int, seed: int = 1,
                 chain_method: str = "sequential") -> dict:
    """numpyro's NUTS on the uncollapsed weights; ``chain_method="vectorized"`` runs the chains as one batch
    (the way to fill a GPU), ``"sequential"`` one after another. ``seconds`` is the whole run, ``sampling_seconds``
    that less the fixed cost of a run (jax's tracing and compilation), measured by a 4 + 4-iteration run."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import MCMC, NUTS

    P, N0, paths = X.shape
    xi = jnp.asarray(X * math.sqrt(N0 * paths))  # ξ^π(x) (σ_0 = 1)
    H1, H2 = HEADS
    n = width

    y_obs = jnp.asarray(y)

    def model():  # the data are closed over: numpyro's vectorized chains then reuse the compiled sampler
        V0 = numpyro.sample("V0", dist.Normal(0, 1).expand([n, N0]).to_event(2))
        V1 = numpyro.sample("V1", dist.Normal(0, 1).expand([H1, n, n]).to_event(3))
        V2 = numpyro.sample("V2", dist.Normal(0, 1).expand([H2, n, n]).to_event(3))
        a = numpyro.sample("a", dist.Normal(0, 1).expand([n]).to_event(1))
        # V^eff_π = n^{-1/2} aᵀ (H2 n)^{-1/2} V2_{h2} (H1 n)^{-1/2} V1_{h1} N0^{-1/2} V0, π = h1·H2 + h2
        top = jnp.einsum("j,hjk->hk", a, V2) / math.sqrt(n * H2 * n)
        mid = jnp.einsum("hk,gki->ghi", top, V1) / math.sqrt(H1 * n)
        veff = jnp.einsum("ghi,ik->ghk", mid, V0).reshape(H1 * H2, N0) / math.sqrt(N0)
        f = jnp.einsum("pk,mkp->m", veff, xi)
        numpyro.sample("y", dist.Normal(f, math.sqrt(TEMPERATURE)), obs=y_obs)

    def timed_run(num_warmup, num_samples):
        mcmc = MCMC(NUTS(model), num_warmup=num_warmup, num_samples=num_samples, num_chains=chains,
                    chain_method=chain_method, progress_bar=False)
        start = time.perf_counter()
        mcmc.run(jax.random.PRNGKey(seed), extra_fields=("num_steps", "diverging"))
        jax.block_until_ready(mcmc.get_samples())  # jax returns before its work is done
        return mcmc, time.perf_counter() - start

    # numpyro traces and compiles its warm-up and sampling loops on every run: a 4 + 4-iteration run measures
    # that fixed cost, which the ESS/s of the sampling alone leaves out
    _, overhead = timed_run(4, 4)
    mcmc, seconds = timed_run(warmup, draws)
    s = mcmc.get_samples(group_by_chain=True)
    a, V1, V2 = (np.asarray(s[k]) for k in ("a", "V1", "V2"))
    # w_π = (n n)^{-1/2} aᵀ V2_{h2} V1_{h1}; U = w·w'/n_0  (spec §1.2)
    w = np.einsum("cdj,cdhjk,cdgki->cdghi", a, V2, V1).reshape(chains, draws, H1 * H2, n) / n  # h1 slowest
    U = np.einsum("cdpi,cdqi->pqcd", w, w) / n
    extra = mcmc.get_extra_fields(group_by_chain=True)
    return {"ess": float(ess_bulk(distinct_entries(U)).min()),
            "seconds": seconds, "sampling_seconds": max(seconds - overhead, 1e-9), "iterations": (warmup + draws) * chains,
            "leapfrog": float(np.mean(np.asarray(extra["num_steps"]))),
            "divergences": int(np.sum(np.asarray(extra["diverging"]))), "U": U.mean(axis=(2, 3))}


def one_shot_features(P: int = 600):
    """The first P theory episodes' path features of the first cached one-shot network (figure 3)."""
    from attnverify.theories.attention_paths.one_shot import analysis as experiment

    networks, _ = experiment.cached_networks()
    seed = sorted(networks)[0]
    paths = experiment.first_episodes(experiment.path_data(networks[seed], experiment.one_shot_data()), P)
    return paths.X, paths.y, f"one-shot network seed {seed}, P = {P}"


def mass_comparison(args) -> None:
    """Effective samples per second with the identity mass (prior-whitened) and the adapted diagonal mass,
    same posterior, chains, warm-up, draws and seed (collapsed HMC)."""
    problems = [("Markov, 4 paths", *markov_features()[:2], HEADS, width, TEMPERATURE) for width in args.widths]
    if args.one_shot:
        X, y, _ = one_shot_features()
        problems.append(("one-shot, 16 paths, P = 600", X, y, (4, 4), 10, 0.25))
    print(f"{'posterior':<28} {'N':>5} {'dim':>5} {'mass':<9} {'leapfrog':>9} {'time s':>8} {'min ESS':>8} "
          f"{'ESS/s':>8} {'ratio':>7}")
    for name, X, y, heads, width, temperature in problems:
        rates = {}
        for mass in ("identity", "diagonal"):
            r = ours(X, y, width, args.chains, args.warmup, args.draws, args.backend, "collapsed",
                     mass_matrix=mass, heads=heads, temperature=temperature)
            rates[mass] = r["ess"] / r["seconds"]
            ratio = f"{rates[mass] / rates['identity']:6.1f}x"
            print(f"{name:<28} {width:>5} {r['dimension']:>5} {mass:<9} {r['leapfrog']:>9.0f} {r['seconds']:>8.1f} "
                  f"{r['ess']:>8.0f} {rates[mass]:>8.2f} {ratio:>7}  divergences {r['divergences']}, "
                  f"R-hat {r['rhat']:.3f}", flush=True)


def gradient_throughput(args) -> None:
    """Chain-gradients per second of the collapsed potential Ψ(θ) (one HMC leapfrog step is one gradient per
    chain) with C from the path kernels and from the features, BLAS threads as the library sets them and one
    thread. Both give the same Ψ and ∇Ψ to 1e-11, so the chains, their trajectories and their ESS per gradient are
    the same: ESS/s moves by exactly this ratio."""
    from attnverify.base import blas
    from attnverify.theories.attention_paths.collapsed import collapsed_posterior

    problems = [("Markov, 4 paths, P = 100", *markov_features()[:2], HEADS, 10, TEMPERATURE)]
    X, y, _ = one_shot_features()
    problems.append(("one-shot, 16 paths, P = 600", X, y, (4, 4), 10, 0.25))
    print(f"{'posterior':<28} {'dim':>5} {'representation':<15} {'threads':>8} {'ms/gradient':>12} "
          f"{'per chain':>10} {'ratio':>7}   ({args.chains} chains, best of 5)")
    for name, X, y, heads, width, temperature in problems:
        post = network_posterior(X, y, heads=heads, width=width, temperature=temperature)
        baseline = None
        for representation in ("kernels", "features"):
            collapsed = collapsed_posterior(post, representation)
            theta = np.random.default_rng(0).standard_normal((args.chains, collapsed.size))
            for threads in (None, 1):
                with blas.threads(threads):
                    collapsed.potential_and_gradient(theta)
                    times = []
                    for _ in range(5):
                        start = time.perf_counter()
                        collapsed.potential_and_gradient(theta)
                        times.append(time.perf_counter() - start)
                seconds = min(times)
                baseline = baseline or seconds
                label = "default" if threads is None else str(threads)
                print(f"{name:<28} {collapsed.size:>5} {representation:<15} {label:>8} {1e3 * seconds:>12.1f} "
                      f"{1e3 * seconds / args.chains:>10.1f} {baseline / seconds:>6.1f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mass", action="store_true", help="identity vs adapted diagonal mass matrix")
    parser.add_argument("--one-shot", action="store_true", help="with --mass: also the one-shot posterior")
    parser.add_argument("--gradient", action="store_true", help="the collapsed potential's cost per representation")
    parser.add_argument("--widths", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--backend", default="numpy")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--nuts-warmup", type=int, default=100)
    parser.add_argument("--nuts-draws", type=int, default=100)
    parser.add_argument("--nuts-chains", type=int, default=2)
    parser.add_argument("--nuts-method", choices=("sequential", "vectorized"), default="sequential")
    parser.add_argument("--skip-numpyro", action="store_true")
    parser.add_argument("--no-gibbs", action="store_true", help="only the collapsed sampler of ours")
    args = parser.parse_args()
    if args.gradient:
        gradient_throughput(args)
        return
    if args.mass:
        mass_comparison(args)
        return
    X, y, source = markov_features()
    print(f"4-path Markov network, P = {len(y)}, T = {TEMPERATURE}, {source}; "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    header = f"{'N':>5} {'sampler':<36} {'iter':>7} {'leapfrog':>9} {'time s':>8} {'min ESS':>8} {'ESS/s':>8} {'ratio':>7}"
    print(header)
    for width in args.widths:
        mine = ours(X, y, width, args.chains, args.warmup, args.draws, args.backend, "collapsed")
        rows = [(f"collapsed HMC ({args.backend}, {args.chains} ch)", mine)]
        if not args.no_gibbs:
            gibbs = ours(X, y, width, args.chains, args.warmup, args.draws, args.backend, "readout_gibbs")
            rows.append((f"HMC+readout Gibbs ({args.backend}, {args.chains} ch)", gibbs))
        nuts_rate = None
        if not args.skip_numpyro:
            nuts = numpyro_nuts(X, y, width, args.nuts_warmup, args.nuts_draws, args.nuts_chains,
                                chain_method=args.nuts_method)
            nuts_rate = nuts["ess"] / nuts["sampling_seconds"]  # the ratio leaves numpyro's compilation out
            rows.append((f"numpyro NUTS ({args.nuts_chains} ch, {args.nuts_method})", nuts))
        for name, r in rows:
            rate = r["ess"] / r["seconds"]
            ratio = f"{rate / nuts_rate:6.1f}x" if nuts_rate and r is not rows[-1][1] else ""
            sampling = (f", {r['ess'] / r['sampling_seconds']:.2f} ESS/s in {r['sampling_seconds']:.1f} s without "
                        f"the run's compilation" if "sampling_seconds" in r else "")
            print(f"{width:>5} {name:<36} {r['iterations']:>7} {r['leapfrog']:>9.0f} {r['seconds']:>8.1f} "
                  f"{r['ess']:>8.0f} {rate:>8.2f} {ratio:>7}  divergences {r['divergences']}{sampling}; diagonal of U "
                  f"{np.array2string(np.diag(r['U']), precision=3)}", flush=True)


if __name__ == "__main__":
    main()
