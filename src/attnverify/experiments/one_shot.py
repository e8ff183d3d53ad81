"""Experiments of the one-shot image task (attention paths, figure 3) that claims and the report share:
the cached gradient-descent networks with their episodes and path features, and each network's analysis
(theory at N = 10 with T chosen on validation, head scores, pruning). Spec ``shared/papers/attention_paths.md``
§4.2 and §2.5; the networks are trained by ``attnverify train-one-shot`` and shipped with the package.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..numerics.attention_paths import one_shot_experiment as experiment
from ..numerics.attention_paths.solution_store import SolutionStore
from ..numerics.arguments import one_of
from .store import Store

#: The theory's P and temperature grid per profile: the paper's P = 600 in both; the paper's ten
#: temperatures in the thorough tier, three in the quick tier so that it fits CI. The three are the ones
#: that validation accuracy picks from the full grid for the five first cached networks (0.25, 0.5 or 1.0
#: at N = 10); at P = 200 the claim's outcome differed (ρ = 0.18 ± 0.22), so the quick tier keeps the
#: paper's P. The thorough tier keeps its solutions in :func:`experiment.solution_store` (an interrupted run
#: resumes); the quick tier in a folder of the run's store. Networks: the quick tier uses the first five
#: training seeds, the thorough tier every cached seed.
THEORY_SIZES = {"quick": {"P": 600, "temperatures": (0.25, 0.5, 1.0), "stored": False, "seeds": 5},
                "thorough": {"P": 600, "temperatures": experiment.TEMPERATURES, "stored": True, "seeds": None}}


def solution_store(profile: str, store: Store) -> SolutionStore:
    """Where the profile's saddle-point solutions are kept: the user's cache (thorough) or the run (quick)."""
    if THEORY_SIZES[one_of("profile", profile, tuple(THEORY_SIZES))]["stored"]:
        return experiment.solution_store()
    return SolutionStore(store.folder("one_shot_solutions"))


@dataclass(frozen=True)
class OneShotInputs:
    """The profile's cached networks by training seed, the cache's shared metadata, the episodes, and each
    network's path features."""

    networks: dict
    shared: dict
    data: object
    paths: dict


def one_shot_inputs(*, profile: str) -> OneShotInputs:
    """The cached networks of the profile's training seeds (``THEORY_SIZES``) with their path features."""
    networks, shared = experiment.cached_networks()
    data = experiment.one_shot_data()
    chosen = sorted(networks)[:THEORY_SIZES[one_of("profile", profile, tuple(THEORY_SIZES))]["seeds"]]
    return OneShotInputs({s: networks[s] for s in chosen}, shared, data,
                         {s: experiment.path_data(networks[s], data) for s in chosen})


def one_shot_analyses(*, profile: str, store: Store) -> tuple:
    """:func:`experiment.analyse_network` of every network of :func:`one_shot_inputs`, at the profile's sizes."""
    sizes = THEORY_SIZES[one_of("profile", profile, tuple(THEORY_SIZES))]
    inputs = store.get(one_shot_inputs, profile=profile)
    return tuple(experiment.analyse_network(seed, network, experiment.first_episodes(inputs.paths[seed], sizes["P"]),
                                            temperatures=sizes["temperatures"], store=solution_store(profile, store))
                 for seed, network in sorted(inputs.networks.items()))
