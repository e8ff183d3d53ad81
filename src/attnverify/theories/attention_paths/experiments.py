"""Experiments of attention paths on the hidden Markov chain task (spec ``docs/papers/attention_paths.md``
§4.1) that claims and the report share: the data of figures 2c and 2e, the theory against the width N with
its GP lines, the kernel–task alignment (2d) and the networks sampled from the posterior at finite width.

Each is a pure function of its sizes, seed and backend, asked for through the run's store by the value the
theory's plan makes (``store.result(sampled_markov_networks_of(settings))``), so that figure 2c and the claims
``sampled_networks_match_theory`` / ``sampled_networks_approach_gp`` use one sampling. Every random seed
comes from ``seed`` through ``numpy.random.SeedSequence(seed).spawn(4)``: children 0–1 draw the 4-path data
and heads, 2–3 the 2-path data and heads.
"""

from __future__ import annotations

from .theory import theory
from dataclasses import dataclass

import numpy as np

from . import theory_points as experiments, kernel_task_alignment
from .theory_points import SampledPoint, TheoryPoint
from .markov_chain import MarkovChainTask, markov_dataset
from ...base.arguments import integer, integers, one_of
from ...base.backend import get_backend
from ...execution import tasks
from ...execution.tasks import integer_seed
from ...execution.store import Planned, Store, planned
from ...execution.settings import RunSettings
from ...saddle.sampling import sampler_size

TEMPERATURE = 0.01
"""Bayesian temperature T of the Markov task (spec §4.1)."""

TRAIN_SIZE, TEST_SIZE = 100, 1000
"""P training sequences (50 per class) and test sequences (spec §4.1)."""

FOUR_PATH_HEADS = (2, 2)
"""Heads per layer of the 4-path network of figure 2c: [good, random] × [uniform, random]."""

TWO_PATH_HEADS = (2, 1)
"""Heads per layer of the 2-path network of Fig. 2e: [good, uniform] × [uniform]."""

GOOD, DENOISING = 0, 2
"""Flat indices of the good path (good, uniform) and the denoising path (random, uniform) of the 4-path network."""

SUBNETWORKS = {"4paths": {"all_paths": (0, 1, 2, 3), "good": (GOOD,), "good_denoising": (GOOD, DENOISING)},
               "2paths": {"all_paths": (0, 1), "good": (0,)}}
"""The GP reference lines of each network: the paths of each subnetwork (figures 2c and 2e)."""

WIDTHS = {"quick": (10, 30, 50, 100, 300, 500, 1000),
          "thorough": (10, 30, 50, 100, 300, 500, 1000, 5000, 10000)}
"""Widths N (= n_0 = n_1 = n_2) of the sweeps: the paper's grid, and two larger ones in the thorough profile."""

OUT_OF_PLANE_NOISE = 5.0
"""σ⊥ of Fig. 2e (the caption's "σ_τ = 5"); Fig. 2c uses the task default σ⊥ = 1."""

ALIGNMENT_WIDTH = 10
"""N of the kernel–task alignment figure (2d); its U is the 2c sweep's U at this width."""

SAMPLED_WIDTHS = {"quick": (10, 30), "thorough": (10, 30, 100)}
"""Widths N at which networks are sampled from the posterior."""

SAMPLER_CHAINS = 8
SAMPLER_STEPS = {"quick": (150, 400), "thorough": (400, 1000)}
"""(warm-up, kept draws) per chain of the host's 8 chains (at 4, 2 of 20 run seeds missed the R-hat < 1.01 gate); a
device backend runs many short chains instead (`sampler_settings`)."""


@dataclass(frozen=True)
class MarkovData:
    """Features of the 4-path network: (X, y) for training, (X_test, y_test), where they came from."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    source: str
    description: str


def four_path_markov_data(*, seed: int, backend: str = "numpy") -> MarkovData:
    """The authors' 4-path features when ``experiments.authors_markov_data()`` finds them (they do not
    depend on ``seed``), else P = 100 and 1000 test sequences drawn by `markov_dataset` from the first
    two children of ``SeedSequence(seed)`` (data, then heads)."""
    seed = integer("seed", seed, 0)
    loaded = experiments.authors_markov_data()
    if loaded is not None:
        X, y, Xt, yt = (np.asarray(a, dtype=float) for a in loaded)
        return MarkovData(X, y, Xt, yt, "authors", (
            f"the authors' own path features ({experiments.AUTHORS_MARKOV_FILE}, package data, built by the "
            "paper's code with its torch seeds: the paper's data realisation)"))
    be = get_backend(backend)
    data_seed, head_sequence = np.random.SeedSequence(seed).spawn(2)  # = the first two of spawn(4)
    head_seed = integer_seed(head_sequence)
    X, y, Xt, yt = markov_dataset(MarkovChainTask(), "4paths", TRAIN_SIZE, TEST_SIZE, seed=data_seed,
                                  head_seed=head_seed, backend=be)
    return MarkovData(
        np.asarray(be.to_numpy(X), dtype=float), np.asarray(y, dtype=float),
        np.asarray(be.to_numpy(Xt), dtype=float), np.asarray(yt, dtype=float), "generated",
        f"features generated here (markov_dataset, numpy random streams, head seed {head_seed}): the authors' "
        f"file {experiments.AUTHORS_MARKOV_FILE} was not found, so this is a different data realisation "
        "than the paper's")


def sampler_settings(warmup: int, draws: int, backend: str = "numpy"):
    """The sampler's settings for (``warmup``, ``draws``) per chain of the host's `SAMPLER_CHAINS` (a profile's
    `SAMPLER_STEPS`) on ``backend``: as given on numpy, many short chains on a device
    (`attnverify.saddle.sampling.sampler_size`)."""
    from .sampling import SamplerSettings

    return SamplerSettings(**sampler_size(backend, chains=SAMPLER_CHAINS, warmup=warmup, draws=draws))


def two_path_markov_data(*, seed: int, backend: str = "numpy") -> MarkovData:
    """The data of figure 2e: P = 100 and 1000 test sequences with out-of-plane noise σ⊥ = 5, features of the
    2-path network, drawn by `markov_dataset` from children 2 (data) and 3 (heads) of
    ``SeedSequence(seed).spawn(4)``."""
    seed = integer("seed", seed, 0)
    be = get_backend(backend)
    _, _, data_seed, head_sequence = np.random.SeedSequence(seed).spawn(4)
    head_seed = integer_seed(head_sequence)
    X, y, Xt, yt = markov_dataset(MarkovChainTask(out_of_plane_noise=OUT_OF_PLANE_NOISE), "2paths", TRAIN_SIZE,
                                  TEST_SIZE, seed=data_seed, head_seed=head_seed, backend=be)
    return MarkovData(
        np.asarray(be.to_numpy(X), dtype=float), np.asarray(y, dtype=float),
        np.asarray(be.to_numpy(Xt), dtype=float), np.asarray(yt, dtype=float), "generated",
        f"features generated here (markov_dataset, σ⊥ = {OUT_OF_PLANE_NOISE:g}, head seed {head_seed})")


NETWORKS = {"4paths": (four_path_markov_data, FOUR_PATH_HEADS), "2paths": (two_path_markov_data, TWO_PATH_HEADS)}
"""Each network of figure 2: the experiment giving its data, and its heads per layer."""


@dataclass(frozen=True)
class MarkovWidthSweep:
    """The theory of one network against the width N (figures 2c, 2e) and its GP lines (subnetwork → point)."""

    network: str
    points: tuple[TheoryPoint, ...]
    gp: dict


def gp_lines(X, y, X_test, y_test, subnetworks: dict, backend: str = "numpy") -> dict[str, TheoryPoint]:
    """GP limit (U = I) of each subnetwork, its features rescaled as for a network of those paths only."""
    lines = {}
    for name, paths in subnetworks.items():
        if len(paths) == X.shape[2]:
            lines[name] = experiments.gp_point(X, y, X_test, y_test, TEMPERATURE, backend=backend)
        else:
            lines[name] = experiments.gp_point(experiments.subnetwork_features(X, paths), y,
                                               experiments.subnetwork_features(X_test, paths), y_test, TEMPERATURE,
                                               backend=backend)
    return lines


def markov_width_sweep(*, network: str, widths: tuple[int, ...], seed: int, backend: str = "numpy",
                       store: Store) -> MarkovWidthSweep:
    """The saddle point at every width of ``widths`` (a profile's ``WIDTHS``; continuation from the widest) and the
    GP lines of ``SUBNETWORKS[network]``, on the data of ``network`` ("4paths": figure 2c, "2paths": figure 2e)."""
    make_data, heads = NETWORKS[one_of("network", network, tuple(NETWORKS))]
    widths = integers("widths", widths, 1)
    data = store.get(make_data, seed=seed, backend=backend)
    figure = {"4paths": "figure 2c", "2paths": "figure 2e"}[network]
    tasks.progress(f"attention_paths: {figure}, GP lines and the theory at N = {widths}")
    gp = gp_lines(data.X, data.y, data.X_test, data.y_test, SUBNETWORKS[network], backend)
    points = experiments.width_sweep(data.X, data.y, data.X_test, data.y_test, heads=heads, widths=widths,
                                     temperature=TEMPERATURE,
                                     progress=lambda m: tasks.progress(f"attention_paths: {figure}, {m}"),
                                     backend=backend)
    return MarkovWidthSweep(network, tuple(points), gp)


@dataclass(frozen=True)
class Alignment:
    """Figure 2d: eigenvalues of K (descending) and overlaps |φ_kᵀY|/√P at U(N) and in the GP limit (U = I)."""

    width: int
    order_parameter: np.ndarray
    theory_eigenvalues: np.ndarray
    theory_overlaps: np.ndarray
    gp_eigenvalues: np.ndarray
    gp_overlaps: np.ndarray


def markov_alignment(*, widths: tuple[int, ...], seed: int, backend: str = "numpy", store: Store) -> Alignment:
    """Kernel–task alignment of the 4-path network at N = ALIGNMENT_WIDTH (U from figure 2c's sweep over ``widths``,
    which hold it) and at U = I."""
    if ALIGNMENT_WIDTH not in widths:
        raise ValueError(f"widths must hold the alignment's width {ALIGNMENT_WIDTH}, got {widths!r}")
    data = store.get(four_path_markov_data, seed=seed, backend=backend)
    sweep = store.get(markov_width_sweep, network="4paths", widths=widths, seed=seed, backend=backend)
    U = next(p.order_parameter for p in sweep.points if p.width == ALIGNMENT_WIDTH)
    theory_values, theory_overlaps = kernel_task_alignment(U, data.X, data.y)
    gp_values, gp_overlaps = kernel_task_alignment(np.eye(data.X.shape[2]), data.X, data.y)
    return Alignment(ALIGNMENT_WIDTH, np.asarray(U, dtype=float), theory_values, theory_overlaps, gp_values,
                     gp_overlaps)


def sampled_markov_network(*, width: int, warmup: int, draws: int, seed: int, backend: str = "numpy") -> SampledPoint:
    """Networks sampled from the posterior of the 4-path network on `four_path_markov_data` (``seed``)
    at T = 0.01 and width N = ``width`` (chain seed ``seed + N``), with the theory at the same width
    (``experiments.sampled_point``), on ``backend``, at `sampler_settings` of (``warmup``, ``draws``) for that
    backend (many short chains on a device)."""
    settings = sampler_settings(warmup, draws, backend)
    data = four_path_markov_data(seed=seed, backend=backend)
    tasks.progress(f"attention_paths: sampling networks at N = {width}")
    return experiments.sampled_point(data.X, data.y, data.X_test, data.y_test, heads=FOUR_PATH_HEADS,
                                     width=width, temperature=TEMPERATURE, seed=seed + width, settings=settings,
                                     backend=backend)


def sampled_markov_networks(*, widths: tuple[int, ...], warmup: int, draws: int, seed: int, backend: str = "numpy",
                            store: Store) -> tuple[SampledPoint, ...]:
    """`sampled_markov_network` at each width of ``widths`` (a profile's ``SAMPLED_WIDTHS``)."""
    return tuple(store.get(sampled_markov_network, width=N, warmup=warmup, draws=draws, seed=seed, backend=backend)
                 for N in integers("widths", widths, 1))


def markov_data_of(settings: RunSettings, network: str) -> Planned:
    """The data of ``network`` ("4paths", "2paths") at the run's seed, on its backend."""
    make_data, _ = NETWORKS[one_of("network", network, tuple(NETWORKS))]
    return planned(make_data, seed=settings.seed, backend=settings.backend)


def markov_width_sweep_of(settings: RunSettings, network: str) -> Planned:
    """`markov_width_sweep` of ``network`` over the profile's ``WIDTHS``, after its data."""
    return planned(markov_width_sweep, network=network, widths=settings.choose(**WIDTHS), seed=settings.seed,
                   backend=settings.backend, after=(markov_data_of(settings, network),))


def markov_alignment_of(settings: RunSettings) -> Planned:
    """`markov_alignment` on the sweep of figure 2c, after it."""
    return planned(markov_alignment, widths=settings.choose(**WIDTHS), seed=settings.seed, backend=settings.backend,
                   after=(markov_data_of(settings, "4paths"), markov_width_sweep_of(settings, "4paths")))


def _sampled_sizes(settings: RunSettings) -> dict:
    warmup, draws = settings.choose(**SAMPLER_STEPS)
    return dict(warmup=warmup, draws=draws, seed=settings.seed, backend=settings.backend)


def sampled_markov_networks_of(settings: RunSettings) -> Planned:
    """`sampled_markov_networks` at the profile's ``SAMPLED_WIDTHS`` and ``SAMPLER_STEPS``, after each width's
    `sampled_markov_network` (widest first)."""
    each = tuple(planned(sampled_markov_network, width=N, **_sampled_sizes(settings))
                 for N in sorted(settings.choose(**SAMPLED_WIDTHS), reverse=True))
    return planned(sampled_markov_networks, widths=settings.choose(**SAMPLED_WIDTHS), **_sampled_sizes(settings),
                   after=each)


@theory.experiments
def plan_experiments(settings: RunSettings) -> list[Planned]:
    """Every experiment of the attention-paths section and claims, longest chains first (the run computes them
    as tasks ahead of the section: `attnverify.theories`)."""
    from .one_shot import experiments as one_shot

    networks = {s: one_shot.one_shot_network_of(s) for s in one_shot.training_seeds(settings)}
    first = networks[min(networks)]
    plan = [first, one_shot.one_shot_width_sweep_of(settings)]
    sampled = one_shot.one_shot_sampled_networks_of(settings)
    if sampled is not None:  # the sampled one-shot networks: the run's longest tasks, a chain group each
        plan += [*one_shot.one_shot_chain_groups_of(settings), sampled]
    plan += list(sampled_markov_networks_of(settings).after)
    for s, network in networks.items():  # each network's path features, then its analysis
        plan += [network] * (network is not first) + [one_shot.one_shot_analysis_of(settings, s)]
    sweep_c, sweep_e = markov_width_sweep_of(settings, "4paths"), markov_width_sweep_of(settings, "2paths")
    return plan + [*sweep_c.after, *sweep_e.after, sweep_c, sweep_e, markov_alignment_of(settings)]
