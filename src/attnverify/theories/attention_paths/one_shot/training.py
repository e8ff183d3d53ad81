"""Train the figure-3 networks and cache them (``attnverify train-one-shot``; needs the ``[train]`` extra).

One network per training seed on the same episodes (`.one_shot_experiment.one_shot_data`), each
exported as `.trained_heads.TrainedHeads` with its loss and validation history and its test
accuracy. The file is rewritten after every seed and seeds already in it (with the same settings) are
kept, so an interrupted run loses at most the seed in progress.
"""

from __future__ import annotations

import platform
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Sequence

from . import trained_model
from .analysis import OneShotSetup, cache_settings, one_shot_data
from .trained_heads import TrainedHeads, load_networks, save_networks


def train_and_cache(path: str | Path, seeds: Sequence[int], *, setup: OneShotSetup = OneShotSetup(),
                    architecture: trained_model.ArchitectureConfig = trained_model.ArchitectureConfig(),
                    training: trained_model.TrainingConfig = trained_model.TrainingConfig(),
                    progress: Callable[[str], None] | None = print, progress_bar: bool = True) -> dict[int, TrainedHeads]:
    """Train a network for each seed in ``seeds`` not yet in ``path`` and save all of them there."""
    import torch

    path = Path(path)
    settings = cache_settings(setup, asdict(architecture), asdict(training))
    networks: dict[int, TrainedHeads] = {}
    if path.is_file():
        stored, shared = load_networks(path)
        if shared.get("settings") == settings:
            networks = stored
        elif progress:
            progress(f"{path}: settings differ from this run's; its networks are replaced")
    data = one_shot_data(setup)
    validation = (data.validation.tokens, data.validation.y)
    for seed in seeds:
        if seed in networks:
            if progress:
                progress(f"seed {seed}: already in {path}")
            continue
        config = trained_model.TrainingConfig(**{**asdict(training), "seed": int(seed)})
        result = trained_model.train_network(data.training.tokens, data.training.y, architecture, config,
                                             validation=validation, progress=None if progress_bar else progress,
                                             progress_bar=progress_bar)
        test = trained_model.accuracy(result.network, data.test.tokens, data.test.y)
        networks[int(seed)] = trained_model.export_heads(
            result.network, seed=int(seed), losses=result.losses, validation_accuracy=result.validation_accuracy,
            test_accuracy=test, seconds=result.seconds)
        save_networks(path, networks, settings=settings, torch=torch.__version__, python=platform.python_version())
        if progress:
            progress(f"seed {seed}: test accuracy {test:.3f} (validation {result.validation_accuracy[-1]:.3f}, "
                     f"{result.seconds:.0f} s); saved to {path}")
    return networks
