"""Experiments of the one-shot image task (attention paths, figure 3) that claims and the report share:
the cached gradient-descent networks with their episodes and path features, the theory against the width
with T chosen on validation (3b, 3d), the networks sampled from the posterior at N = 10 (3b–c, thorough
profile), and each network's analysis (theory at N = 10, head scores, pruning: 3e–f and the claims).
Spec ``docs/papers/attention_paths.md`` §4.2 and §2.5; the networks are trained by
``attnverify train-one-shot`` and shipped with the package.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
from scipy.stats import spearmanr

from .. import kernel_task_alignment
from . import analysis as experiment
from .. import sampling
from ..heads import head_scores
from ..posterior import network_posterior
from ....saddle.store import SolutionStore, fingerprint
from ....base.arguments import integer
from ....numerics.diagnostics import ChainSummary
from ....numerics.statistics import Estimate
from ....execution import tasks
from ....execution.settings import RunSettings
from ....execution.store import Planned, Store, planned

#: The theory's P and temperature grid per profile: the paper's P = 600 in both; the paper's ten
#: temperatures in the thorough tier, three in the quick tier so that it fits CI. The three are the ones
#: that validation accuracy picks from the full grid for the five first cached networks (0.25, 0.5 or 1.0
#: at N = 10); at P = 200 the claim's outcome differed (ρ = 0.18 ± 0.22), so the quick tier keeps the
#: paper's P. Networks: the quick tier uses the first five training seeds, the thorough tier every cached seed.
#: Networks sampled from the posterior (figure 3b–c): the thorough tier only (the collapsed sampler in 𝓗·N0 = 1024
#: dimensions takes too long for CI).
THEORY_SIZES = {"quick": {"P": 600, "temperatures": (0.25, 0.5, 1.0), "seeds": 5, "sampled": False},
                "thorough": {"P": 600, "temperatures": experiment.TEMPERATURES, "seeds": None, "sampled": True}}


def solution_store(store: Store) -> SolutionStore:
    """Where the saddle-point solutions and sampled-network summaries are kept: a folder of the run's store, so that
    a rerun with the same store (``--store DIR``) resumes an interrupted thorough run."""
    return SolutionStore(store.folder("one_shot_solutions"))


@dataclass(frozen=True)
class OneShotNetwork:
    """A cached gradient-descent network (training seed ``seed``) and its path features on the theory, validation
    and test episodes."""

    seed: int
    network: object
    paths: experiment.PathData


def one_shot_network(*, training_seed: int) -> OneShotNetwork:
    """The cached network of ``training_seed`` with its path features (the episodes drawn here, without the
    training set it was trained on: ≈ 15 MB per network in the run's store, not the 0.9 GiB of that set)."""
    networks, _ = experiment.cached_networks()
    training_seed = integer("training_seed", training_seed, 0)
    if training_seed not in networks:
        raise ValueError(f"training_seed must be one of the cached networks {sorted(networks)}, got {training_seed}")
    tasks.progress(f"attention_paths: path features of the one-shot network of seed {training_seed}")
    network = networks[training_seed]
    return OneShotNetwork(training_seed, network, experiment.path_data(network, experiment.one_shot_data(training=False)))


def _theory_episodes(inputs: OneShotNetwork, P: int) -> experiment.PathData:
    """The first ``P`` theory episodes of the network ``inputs``."""
    return experiment.first_episodes(inputs.paths, integer("P", P, 2))


def training_seeds(settings: RunSettings) -> tuple[int, ...]:
    """The training seeds of the profile's networks (the first ``THEORY_SIZES[profile]["seeds"]`` cached ones, all
    for None), without loading their features."""
    return experiment.cached_seeds()[:settings.choose(**THEORY_SIZES)["seeds"]]


def one_shot_networks(settings: RunSettings) -> tuple[OneShotNetwork, ...]:
    """`one_shot_network` of each of the profile's training seeds, from the settings' store."""
    return tuple(settings.store.get(one_shot_network, training_seed=s) for s in training_seeds(settings))


def one_shot_analysis(*, training_seed: int, P: int, temperatures: tuple[float, ...], backend: str = "numpy",
                      store: Store) -> experiment.SeedAnalysis:
    """`experiment.analyse_network` of the cached network of ``training_seed`` on its first ``P`` theory episodes,
    T chosen on validation among ``temperatures``, on ``backend``."""
    inputs = store.get(one_shot_network, training_seed=training_seed)
    tasks.progress(f"attention_paths: one-shot network of seed {training_seed}, head scores and pruning")
    return experiment.analyse_network(training_seed, inputs.network, _theory_episodes(inputs, P),
                                      temperatures=temperatures, store=solution_store(store), backend=backend)


def one_shot_analyses(*, training_seeds: tuple[int, ...], P: int, temperatures: tuple[float, ...],
                      backend: str = "numpy", store: Store) -> tuple:
    """`one_shot_analysis` of the network of each of ``training_seeds``, in that order."""
    return tuple(store.get(one_shot_analysis, training_seed=s, P=P, temperatures=temperatures, backend=backend)
                 for s in training_seeds)


FIGURE_WIDTHS = {"quick": (10, 1000), "thorough": experiment.WIDTHS}
"""Widths of figure 3b: two of the paper's in the quick profile (it runs in CI), all ten in the thorough one."""

SAMPLED_WIDTH = 10
"""N of the sampled networks and of figures 3c–3d (the paper's)."""

COMPONENTS = 50
"""Principal components of figure 3d (the paper shows the first 50)."""


@dataclass(frozen=True)
class OneShotWidthSweep:
    """Figure 3b–d for the first cached network: the validated theory at each width of ``FIGURE_WIDTHS``, the
    validated GP limit, the number of test episodes, the gradient-descent network's test accuracy, and the
    kernel–task alignment at N = SAMPLED_WIDTH (theory U) and U = I (eigenvalues, overlaps)."""

    seed: int
    P: int
    test_size: int
    points: tuple
    gp: object
    gradient_descent_accuracy: float
    alignment: tuple
    gp_alignment: tuple

    @property
    def small(self):
        """The validated point at N = SAMPLED_WIDTH."""
        return next(p for p in self.points if p.width == SAMPLED_WIDTH)


def one_shot_width_sweep(*, training_seed: int, P: int, widths: tuple[int, ...], temperatures: tuple[float, ...],
                         store: Store) -> OneShotWidthSweep:
    """`OneShotWidthSweep` of the network of ``training_seed`` (the first of a profile's): its first ``P`` theory
    episodes, one `experiment.validated_sweep` over ``widths`` (which hold SAMPLED_WIDTH) × ``temperatures``."""
    if SAMPLED_WIDTH not in widths:
        raise ValueError(f"widths must hold the sampled networks' width {SAMPLED_WIDTH}, got {widths!r}")
    inputs = store.get(one_shot_network, training_seed=training_seed)
    paths = _theory_episodes(inputs, P)
    tasks.progress(f"attention_paths: figure 3b, theory at N = {widths} (P = {P}, T chosen on validation)")
    sweep = experiment.validated_sweep(paths, widths, temperatures, store=solution_store(store),
                                       progress=lambda m: tasks.progress(f"attention_paths: figure 3b, {m}"))
    gp = experiment.validated_point(paths, np.inf, experiment.GP_TEMPERATURES)
    gd = float(inputs.network.correct(paths.X_test, paths.y_test).mean())
    small = next(p for p in sweep if p.width == SAMPLED_WIDTH)
    alignment = kernel_task_alignment(small.test.order_parameter, paths.X, paths.y, COMPONENTS)
    gp_alignment = kernel_task_alignment(np.eye(paths.X.shape[2]), paths.X, paths.y, COMPONENTS)
    return OneShotWidthSweep(training_seed, P, int(paths.y_test.size), tuple(sweep), gp, gd, alignment, gp_alignment)


SAMPLER = sampling.SamplerSettings(chains=4, warmup=200, draws=400)
"""The sampled networks of the thorough profile (the quick one draws none): about half an hour on one CPU core at
P = 600 (≈ 0.12 s per gradient for 4 chains, ~14 leapfrog steps)."""

CHAIN_GROUPS = 2
"""The thorough profile's chains run as this many independent groups (2 chains each), one task each, so that two
workers sample at once; a serial run samples the same groups one after the other (`sampled_chain_group`)."""


@dataclass(frozen=True)
class SampledNetworks:
    """Networks sampled from the posterior at N = SAMPLED_WIDTH and the validated T: U (mean, MCSE, R-hat, ESS),
    test accuracy of the posterior-mean predictor and the sampler's diagnostics."""

    order_parameter: ChainSummary
    accuracy: Estimate
    diagnostics: dict


def _sampled_name(paths: experiment.PathData, temperature: float, seed: int, settings: sampling.SamplerSettings,
                  groups: int) -> str:
    """The name of the sampled networks in the solution store: the inputs' fingerprints, T, settings and seed."""
    return (f"sampled_{fingerprint(paths.X, paths.y)}_test{fingerprint(paths.X_test, paths.y_test)}_N{SAMPLED_WIDTH}"
            f"_T{temperature:g}_{settings.chains}x{settings.warmup}+{settings.draws}"
            f"{f'_{groups}groups' if groups > 1 else ''}_seed{seed}")


def sampled_chain_group(paths: experiment.PathData, temperature: float, seed: int, group: int, *,
                        settings: sampling.SamplerSettings = SAMPLER,
                        groups: int = CHAIN_GROUPS) -> sampling.PosteriorSamples:
    """Chain group ``group`` of ``groups`` of `sampled_networks`: ``settings.chains / groups`` chains from
    the posterior of the 16-path network at N = SAMPLED_WIDTH on ``paths`` (collapsed HMC), seeded by
    `sampling.chain_group_seed` of (``seed``, ``group``)."""
    groups = integer("groups", groups, 1)
    group = integer("group", group, 0, groups - 1)
    if settings.chains % groups or settings.chains // groups < 2:
        raise ValueError(f"groups must divide settings.chains = {settings.chains} into groups of at least 2 chains "
                         f"(R-hat needs 2), got groups = {groups}")
    label = f"group {group + 1} of {groups}, " if groups > 1 else ""
    tasks.progress(f"attention_paths: figure 3b-c, sampling networks at N = {SAMPLED_WIDTH}, T = {temperature:g}"
                       f" ({label}{settings.chains // groups} chains)")
    posterior = network_posterior(paths.X, paths.y, heads=experiment.HEADS, width=SAMPLED_WIDTH,
                                  temperature=temperature)
    return sampling.sample_posterior(posterior, seed=sampling.chain_group_seed(seed, group) if groups > 1 else seed,
                                     settings=replace(settings, chains=settings.chains // groups), X_test=paths.X_test,
                                     progress=lambda m: tasks.progress(f"attention_paths: figure 3c, {label}{m}"))


def sampled_networks(paths: experiment.PathData, temperature: float, seed: int, kept: SolutionStore, *,
                     settings: sampling.SamplerSettings = SAMPLER, groups: int = CHAIN_GROUPS,
                     chain_group: Callable[[int], sampling.PosteriorSamples] | None = None) -> SampledNetworks:
    """Networks sampled from the posterior of the 16-path network at N = SAMPLED_WIDTH on ``paths``: the chains of
    the ``groups`` `sampled_chain_group` (from ``chain_group(g)`` when given, e.g. the run's tasks), pooled
    (`sampling.pooled`); filed in ``kept`` under the inputs' fingerprints, the temperature, the settings and
    the seed, so that a rerun with the same inputs reuses them instead of sampling again."""
    name = _sampled_name(paths, temperature, seed, settings, groups)
    record = kept.load(name)
    if record is not None:
        arrays, metadata = record
        return SampledNetworks(ChainSummary(**arrays), Estimate(**metadata["accuracy"]), metadata["diagnostics"])
    chain_group = chain_group or (lambda g: sampled_chain_group(paths, temperature, seed, g, settings=settings,
                                                                groups=groups))
    samples = sampling.pooled([chain_group(g) for g in range(groups)])
    result = SampledNetworks(samples.order_parameter_summary(), samples.accuracy(paths.y_test), samples.diagnostics())
    kept.save(name, dict(vars(result.order_parameter)), {"accuracy": result.accuracy.as_dict(),
                                                         "diagnostics": result.diagnostics})
    return result


def _sampling_inputs(sweep: dict, store: Store) -> tuple[experiment.PathData, float]:
    """The swept network's theory episodes and the temperature validated at N = SAMPLED_WIDTH (figure 3b), for
    ``sweep``, the parameters of `one_shot_width_sweep`."""
    inputs = store.get(one_shot_network, training_seed=sweep["training_seed"])
    temperature = store.get(one_shot_width_sweep, **sweep).small.temperature
    return _theory_episodes(inputs, sweep["P"]), temperature


def one_shot_chain_group(*, seed: int, group: int, training_seed: int, P: int, widths: tuple[int, ...],
                         temperatures: tuple[float, ...], store: Store) -> sampling.PosteriorSamples | None:
    """`sampled_chain_group` ``group`` of `one_shot_sampled_networks` (a task of its own), at the network and
    temperature of the `one_shot_width_sweep` of (``training_seed``, ``P``, ``widths``, ``temperatures``); None when
    the pooled networks are already in the solution store (nothing to sample)."""
    seed, group = integer("seed", seed, 0), integer("group", group, 0, CHAIN_GROUPS - 1)
    paths, temperature = _sampling_inputs(dict(training_seed=training_seed, P=P, widths=widths,
                                               temperatures=temperatures), store)
    if solution_store(store).load(_sampled_name(paths, temperature, seed, SAMPLER, CHAIN_GROUPS)) is not None:
        return None
    return sampled_chain_group(paths, temperature, seed, group, settings=SAMPLER, groups=CHAIN_GROUPS)


def one_shot_sampled_networks(*, seed: int, training_seed: int, P: int, widths: tuple[int, ...],
                              temperatures: tuple[float, ...], store: Store) -> SampledNetworks:
    """`sampled_networks` for figure 3b–c, on the theory episodes of the `one_shot_width_sweep` of (``training_seed``,
    ``P``, ``widths``, ``temperatures``) at the temperature it validated at N = SAMPLED_WIDTH, its chain groups from
    `one_shot_chain_group`."""
    seed = integer("seed", seed, 0)
    sweep = dict(training_seed=training_seed, P=P, widths=widths, temperatures=temperatures)
    paths, temperature = _sampling_inputs(sweep, store)
    return sampled_networks(paths, temperature, seed, solution_store(store), settings=SAMPLER,
                            groups=CHAIN_GROUPS,
                            chain_group=lambda g: store.get(one_shot_chain_group, seed=seed, group=g, **sweep))


def one_shot_sampled_comparison(*, seed: int, training_seed: int, P: int, widths: tuple[int, ...],
                                temperatures: tuple[float, ...], store: Store) -> dict:
    """Figure 3c's comparison of the sampled U with the theory's at N = SAMPLED_WIDTH: the largest entry gap, the
    relative Frobenius distance, and the Spearman rank agreement of the head scores of the two."""
    sweep = dict(training_seed=training_seed, P=P, widths=widths, temperatures=temperatures)
    sampled = store.get(one_shot_sampled_networks, seed=seed, **sweep)
    U_sampled = sampled.order_parameter.mean
    U_theory = store.get(one_shot_width_sweep, **sweep).small.test.order_parameter
    theory_scores = head_scores(U_theory, experiment.HEADS)
    sampled_scores = head_scores(U_sampled, experiment.HEADS)
    return {"gap": np.abs(U_sampled - U_theory),
            "relative": float(np.linalg.norm(U_sampled - U_theory) / np.linalg.norm(U_theory)),
            "score_agreement": float(spearmanr([theory_scores[h] for h in sorted(theory_scores)],
                                               [sampled_scores[h] for h in sorted(theory_scores)]).statistic)}


# The experiments of a run, by its settings: what the plan computes ahead and the section and claims read
# ---------------------------------------------------------------------------------------------------------


def _theory_sizes(settings: RunSettings) -> dict:
    sizes = settings.choose(**THEORY_SIZES)
    return dict(P=sizes["P"], temperatures=tuple(sizes["temperatures"]))


def one_shot_network_of(training_seed: int) -> Planned:
    """The path features of the cached network of ``training_seed``."""
    return planned(one_shot_network, training_seed=training_seed)


def _sweep(settings: RunSettings) -> dict:
    return dict(training_seed=training_seeds(settings)[0], widths=settings.choose(**FIGURE_WIDTHS),
                **_theory_sizes(settings))


def one_shot_width_sweep_of(settings: RunSettings) -> Planned:
    """`one_shot_width_sweep` of the profile's first network, widths and sizes (``FIGURE_WIDTHS``,
    ``THEORY_SIZES``), after that network."""
    sweep = _sweep(settings)
    return planned(one_shot_width_sweep, **sweep, after=(one_shot_network_of(sweep["training_seed"]),))


def one_shot_analysis_of(settings: RunSettings, training_seed: int) -> Planned:
    """`one_shot_analysis` of the network of ``training_seed`` at the profile's sizes, on the run's backend, after
    that network."""
    return planned(one_shot_analysis, training_seed=training_seed, **_theory_sizes(settings), backend=settings.backend,
                   after=(one_shot_network_of(training_seed),))


def one_shot_analyses_of(settings: RunSettings) -> Planned:
    """`one_shot_analyses` of the profile's networks, on the run's backend."""
    return planned(one_shot_analyses, training_seeds=training_seeds(settings), **_theory_sizes(settings),
                   backend=settings.backend)


def one_shot_chain_groups_of(settings: RunSettings) -> tuple[Planned, ...]:
    """The `one_shot_chain_group` tasks of the run (none where the profile samples no networks), after the sweep."""
    if not settings.choose(**THEORY_SIZES)["sampled"]:
        return ()
    sweep = one_shot_width_sweep_of(settings)
    return tuple(planned(one_shot_chain_group, seed=settings.seed, group=g, **dict(sweep.parameters),
                         after=(*sweep.after, sweep)) for g in range(CHAIN_GROUPS))


def one_shot_sampled_networks_of(settings: RunSettings) -> Planned | None:
    """`one_shot_sampled_networks` at the run's seed after its chain groups; None where the profile samples no
    networks (``THEORY_SIZES``: the quick one)."""
    groups = one_shot_chain_groups_of(settings)
    if not groups:
        return None
    return planned(one_shot_sampled_networks, seed=settings.seed, **_sweep(settings),
                   after=(*groups[0].after, *groups))


def one_shot_sampled_comparison_of(settings: RunSettings) -> Planned | None:
    """`one_shot_sampled_comparison` at the run's seed; None where the profile samples no networks."""
    if one_shot_sampled_networks_of(settings) is None:
        return None
    return planned(one_shot_sampled_comparison, seed=settings.seed, **_sweep(settings))
