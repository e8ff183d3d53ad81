"""Experiments of attention paths that claims and the report share (spec ``shared/papers/attention_paths.md``
§4.1): the 4-path data of figure 2c and the networks sampled from its posterior at finite width.

Each is a pure function of plain parameters, asked for through the run's store
(``store.get(sampled_markov_networks, profile="quick", seed=0)``), so that figure 2c and the claims
``sampled_networks_match_theory`` / ``sampled_networks_approach_gp`` use one sampling.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..numerics.attention_paths import experiments
from ..numerics.attention_paths.experiments import SampledPoint
from ..numerics.attention_paths.markov_chain import MarkovChainTask, markov_dataset
from ..numerics.arguments import integer, one_of
from ..numerics.backend import get_backend

TEMPERATURE = 0.01
"""Bayesian temperature T of the Markov task (spec §4.1)."""

TRAIN_SIZE, TEST_SIZE = 100, 1000
"""P training sequences (50 per class) and test sequences (spec §4.1)."""

FOUR_PATH_HEADS = (2, 2)
"""Heads per layer of the 4-path network of figure 2c: [good, random] × [uniform, random]."""

SAMPLED_WIDTHS = {"quick": (10, 30), "thorough": (10, 30, 100)}
"""Widths N at which networks are sampled from the posterior."""

SAMPLER_CHAINS = 8
SAMPLER_STEPS = {"quick": (150, 400), "thorough": (400, 1000)}
"""(warm-up, kept draws) per chain; 8 chains (at 4, 2 of 20 run seeds missed the R-hat < 1.01 gate)."""


@dataclass(frozen=True)
class MarkovData:
    """Features of the 4-path network: (X, y) for training, (X_test, y_test), where they came from."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    source: str
    description: str


def integer_seed(sequence: np.random.SeedSequence) -> int:
    """A 32-bit integer seed from a SeedSequence (what ``head_seed`` accepts)."""
    return int(sequence.generate_state(1)[0])


def four_path_markov_data(*, seed: int, backend: str = "numpy") -> MarkovData:
    """The authors' 4-path features when ``experiments.authors_markov_data()`` finds them (they do not
    depend on ``seed``), else P = 100 and 1000 test sequences drawn by :func:`markov_dataset` from the first
    two children of ``SeedSequence(seed)`` (data, then heads)."""
    seed = integer("seed", seed, 0)
    loaded = experiments.authors_markov_data()
    if loaded is not None:
        X, y, Xt, yt = (np.asarray(a, dtype=float) for a in loaded)
        return MarkovData(X, y, Xt, yt, "authors", (
            f"the authors' own path features ({experiments.AUTHORS_MARKOV_FILE} in shared/data, built by the "
            "paper's code with its torch seeds: the paper's data realisation)"))
    be = get_backend(backend)
    data_seed, head_sequence = np.random.SeedSequence(seed).spawn(2)
    head_seed = integer_seed(head_sequence)
    X, y, Xt, yt = markov_dataset(MarkovChainTask(), "4paths", TRAIN_SIZE, TEST_SIZE, seed=data_seed,
                                  head_seed=head_seed, backend=be)
    return MarkovData(
        np.asarray(be.to_numpy(X), dtype=float), np.asarray(y, dtype=float),
        np.asarray(be.to_numpy(Xt), dtype=float), np.asarray(yt, dtype=float), "generated",
        f"features generated here (markov_dataset, numpy random streams, head seed {head_seed}): the authors' "
        f"file {experiments.AUTHORS_MARKOV_FILE} was not found, so this is a different data realisation "
        "than the paper's")


def sampler_settings(profile: str):
    """The sampler's settings for ``profile`` ("quick" or "thorough")."""
    from ..numerics.attention_paths.sampling import SamplerSettings

    warmup, draws = SAMPLER_STEPS[one_of("profile", profile, tuple(SAMPLER_STEPS))]
    return SamplerSettings(chains=SAMPLER_CHAINS, warmup=warmup, draws=draws)


def sampled_markov_networks(*, profile: str, seed: int) -> tuple[SampledPoint, ...]:
    """Networks sampled from the posterior of the 4-path network on :func:`four_path_markov_data` (``seed``)
    at T = 0.01 and each width of ``SAMPLED_WIDTHS[profile]`` (chain seed ``seed + N``), with the theory
    at the same widths (``experiments.sampled_point``)."""
    settings = sampler_settings(profile)
    data = four_path_markov_data(seed=seed)
    return tuple(experiments.sampled_point(data.X, data.y, data.X_test, data.y_test, heads=FOUR_PATH_HEADS,
                                           width=N, temperature=TEMPERATURE, seed=seed + N, settings=settings)
                 for N in SAMPLED_WIDTHS[profile])
