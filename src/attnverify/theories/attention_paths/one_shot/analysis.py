"""The paper's figure-3 experiment as functions: one-shot image classification with trained heads.

Spec ``docs/papers/attention_paths.md`` §4.2 (task, settings) and §2.5 (head scores, pruning). A
network trained by gradient descent (`.trained_model`, cached as `.trained_heads.TrainedHeads`)
fixes the attention; the theory (saddle point at width N, temperature T) is then solved on P = 600 of its
path features. Unlike the authors' ``SELECT_optimal_temperature.py``, T is chosen on a **validation** set
(held-out images of the training classes), never on the test classes. Shared by the claims, the
report and the training command, so that all three state the same numbers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
from scipy.stats import spearmanr

from ....base.arguments import Checked, checked, integer, real
from ....numerics.statistics import Estimate, mean_estimate
from . import task as one_shot
from ..theory_points import TheoryPoint, evaluate
from ..heads import head_scores
from ....numerics.kernel_predictor import predictor_statistics
from ....saddle import SolutionStore, sweep as saddle_sweep
from ..action import ActionConfig
from .trained_heads import Head, TrainedHeads, load_networks, stored_seeds

#: The paper's grids (spec §4.2): widths, temperatures, and the temperatures of its GP line.
WIDTHS = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
TEMPERATURES = (0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5)
GP_TEMPERATURES = (0.025, 0.05, 0.075, 0.1, 0.25)
HEADS = (4, 4)
#: Saddle-point tolerance of this experiment, max |∂(S/n)/∂U|: it moves the predictor by ~1e-6 relative, far
#: below the test-set standard errors (~1e-2) it is compared with, and costs a fraction of the default 1e-9.
SOLVER_TOLERANCE = 1e-6
#: Episode seeds of the four sets (fixed offsets, so that the sets never share a draw).
EPISODE_SEEDS = {"training": 1, "theory": 2, "validation": 3, "test": 4}


@dataclass(frozen=True)
class OneShotSetup(Checked):
    """Every choice of the one-shot experiment: the class split (test classes never seen in training),
    whether the training classes are multiplied by four by quarter turns (the usual Omniglot class
    augmentation; the test classes stay upright), the held-out fraction of the training classes' images
    (the validation images), and the number of episodes in each set (P = 600 for the theory, balanced
    300/300 as in the paper)."""

    test_class_fraction: float = checked(real, low=0.0, high=1.0, open_low=True, default=0.4)
    class_seed: int = checked(integer, 0, default=0)
    rotated_training_classes: bool = True
    validation_fraction: float = checked(real, low=0.0, high=1.0, open_low=True, default=0.2)
    image_seed: int = checked(integer, 0, default=0)
    training_episodes: int = checked(integer, 2, default=40_000)
    theory_episodes: int = checked(integer, 2, default=600)
    validation_episodes: int = checked(integer, 2, default=1_000)
    test_episodes: int = checked(integer, 2, default=1_000)
    label_seed: int = checked(integer, 0, default=0)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True, eq=False)
class OneShotData:
    """The four episode sets: gradient-descent training, the theory's P, validation (held-out images of
    the training classes) and test (unseen classes)."""

    training: one_shot.Episodes | None
    theory: one_shot.Episodes
    validation: one_shot.Episodes
    test: one_shot.Episodes
    train_classes: np.ndarray
    test_classes: np.ndarray


def one_shot_data(setup: OneShotSetup = OneShotSetup(), images: one_shot.LabelledImages | None = None, *,
                  training: bool = True) -> OneShotData:
    """Draw the four sets from ``images`` (default: scikit-learn's digits); ``training=False`` leaves out the
    gradient-descent training set (None; 40,000 episodes, 0.9 GiB): each set has its own seed, so the others are
    the same either way."""
    digits = images is None
    images = one_shot.load_digits() if digits else images
    together = one_shot.DIGIT_ROTATION_PAIRS if digits and setup.rotated_training_classes else ()
    train_classes, test_classes = one_shot.split_classes(images, setup.test_class_fraction, setup.class_seed,
                                                         together=together)
    kept, held = one_shot.split_images(images, train_classes, setup.validation_fraction, setup.image_seed)
    fit, validation = images.subset(kept), images.subset(held)
    if setup.rotated_training_classes:
        fit, validation = (one_shot.rotated_classes(part, train_classes) for part in (fit, validation))
        train_classes = fit.classes

    def draw(source, classes, count, name, balanced=False):
        return one_shot.draw_episodes(source, classes, count, EPISODE_SEEDS[name], label_seed=setup.label_seed,
                                      balanced=balanced)

    return OneShotData(
        training=draw(fit, train_classes, setup.training_episodes, "training") if training else None,
        theory=draw(fit, train_classes, setup.theory_episodes, "theory", balanced=True),
        validation=draw(validation, train_classes, setup.validation_episodes, "validation"),
        test=draw(images, test_classes, setup.test_episodes, "test"),
        train_classes=train_classes, test_classes=test_classes,
    )


@dataclass(frozen=True, eq=False)
class PathData:
    """Path features (spec §1.2) of the theory, validation and test sets under one trained network."""

    X: np.ndarray
    y: np.ndarray
    X_validation: np.ndarray
    y_validation: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray


def path_data(network: TrainedHeads, data: OneShotData) -> PathData:
    return PathData(network.path_features(data.theory.tokens), data.theory.y,
                    network.path_features(data.validation.tokens), data.validation.y,
                    network.path_features(data.test.tokens), data.test.y)


def first_episodes(paths: PathData, count: int) -> PathData:
    """The same sets with only the first ``count`` theory episodes (a smaller P, for quick checks)."""
    count = integer("count", count, 2)
    if count > paths.X.shape[0]:
        raise ValueError(f"count must be at most the {paths.X.shape[0]} theory episodes, got {count}")
    return PathData(paths.X[:count], paths.y[:count], paths.X_validation, paths.y_validation, paths.X_test, paths.y_test)


# ------------------------------------------------------------------------------------ theory


@dataclass(frozen=True)
class ValidatedPoint:
    """The theory at one width (inf: the GP limit) at the temperature with the best validation accuracy,
    with the validation accuracy of every temperature tried and the test statistics at the chosen one."""

    width: float
    temperature: float
    validation_accuracy: dict
    test: TheoryPoint


def _accuracy(U, X, y, X_other, y_other, temperature: float, backend=None) -> float:
    mean = predictor_statistics(U, X, y, X_other, temperature, backend=backend).mean
    return float(np.mean(np.sign(mean) == np.sign(y_other)))


def validated_point(paths: PathData, width: float, temperatures: Sequence[float] = TEMPERATURES, *,
                    heads: Sequence[int] = HEADS, tolerance: float = SOLVER_TOLERANCE,
                    store: SolutionStore | None = None,
                    progress: Callable[[str], None] | None = None, backend=None) -> ValidatedPoint:
    """Solve the theory at ``width`` for every temperature, keep the one most accurate on validation
    (the first in the grid on a tie) and evaluate it on the test set. ``width = inf``: U = I (spec §3).
    With a ``store``, stored solutions start (and are re-verified by) their solves and new ones are filed
    there as soon as they are found (`attnverify.saddle.sweep`)."""
    return validated_sweep(paths, [width], temperatures, heads=heads, tolerance=tolerance, store=store,
                           progress=progress, backend=backend)[0]


def validated_sweep(paths: PathData, widths: Sequence[float] = WIDTHS, temperatures: Sequence[float] = TEMPERATURES, *,
                    heads: Sequence[int] = HEADS, tolerance: float = SOLVER_TOLERANCE,
                    store: SolutionStore | None = None,
                    progress: Callable[[str], None] | None = None, backend=None) -> list[ValidatedPoint]:
    """`validated_point` at every width, in the order given: the finite widths × temperatures are one
    `attnverify.saddle.sweep` grid (continuation from the widest width and highest temperature)."""
    if len(temperatures) == 0:
        raise ValueError("temperatures must name at least one temperature")
    finite = [w for w in widths if not np.isinf(w)]
    config = ActionConfig.build(heads, 1.0, temperatures[0])
    sweep = saddle_sweep(config.action, dict(X=paths.X, y=paths.y), widths=finite, temperatures=temperatures,
                         tolerance=tolerance, store=store, backend=backend, **config.parameters()) if finite else None
    points = []
    for width in widths:
        solutions, scores = {}, {}
        for T in temperatures:
            if np.isinf(width):
                U, seconds = np.eye(paths.X.shape[2]), 0.0
            else:
                solution = sweep.at(width, T)
                U, seconds = solution.matrix("U1"), solution.seconds
            solutions[T] = (U, seconds)
            scores[T] = _accuracy(U, paths.X, paths.y, paths.X_validation, paths.y_validation, T, backend)
        best = max(temperatures, key=lambda T: scores[T])
        U, seconds = solutions[best]
        test = evaluate(U, paths.X, paths.y, paths.X_test, paths.y_test, best, width, seconds, backend=backend)
        if progress:
            label = "GP" if np.isinf(width) else f"N = {width:g}"
            progress(f"{label}: T = {best:g} (validation {scores[best]:.3f}), test accuracy "
                     f"{test.accuracy.mean:.3f} ({sum(t for _, t in solutions.values()):.0f} s)")
        points.append(ValidatedPoint(float(width), float(best), {float(T): s for T, s in scores.items()}, test))
    return points


# ------------------------------------------------------------------------------------ pruning


@dataclass(frozen=True)
class PruningTable:
    """The trained network's test accuracy unpruned, after pruning each head alone (with the paired drop),
    and after pruning a growing number of heads in increasing order of head score (spec §2.5, fig. 3e–f)."""

    baseline: Estimate
    scores: dict
    single: dict  # head -> accuracy Estimate after pruning it alone
    drops: dict  # head -> paired Estimate of baseline − pruned
    cumulative_heads: list  # heads in the order they were pruned
    cumulative: list  # accuracy Estimates after pruning 0, 1, … of them

    @property
    def rank_correlation(self) -> float:
        """Spearman ρ between head score and the accuracy lost by pruning the head alone."""
        heads = sorted(self.scores)
        return float(spearmanr([self.scores[h] for h in heads], [self.drops[h].mean for h in heads]).statistic)

    def as_dict(self) -> dict:
        def key(head):
            return f"{head[0]}-{head[1]}"
        return {"baseline": self.baseline.as_dict(), "scores": {key(h): s for h, s in self.scores.items()},
                "single": {key(h): e.as_dict() for h, e in self.single.items()},
                "drops": {key(h): e.as_dict() for h, e in self.drops.items()},
                "cumulative_heads": [key(h) for h in self.cumulative_heads],
                "cumulative": [e.as_dict() for e in self.cumulative], "rank_correlation": self.rank_correlation}


def pruning_order(network: TrainedHeads, scores: dict) -> list[Head]:
    """Heads in increasing order of score, skipping any whose removal would leave its layer empty."""
    alive = {layer: H for layer, H in enumerate(network.heads)}
    order = []
    for head in sorted(scores, key=lambda h: (scores[h], h)):
        if alive[head[0]] > 1:
            alive[head[0]] -= 1
            order.append(head)
    return order


def pruning_table(network: TrainedHeads, X_test, y_test, scores: dict, backend=None) -> PruningTable:
    """Prune the trained network (not the theory) head by head and cumulatively, on the test set."""
    baseline = network.correct(X_test, y_test, backend=backend)
    single, drops = {}, {}
    for head in network.all_heads():
        pruned = network.correct(X_test, y_test, [head], backend=backend)
        single[head], drops[head] = mean_estimate(pruned), mean_estimate(baseline - pruned)
    order = pruning_order(network, scores)
    cumulative = [mean_estimate(network.correct(X_test, y_test, order[:k], backend=backend))
                  for k in range(len(order) + 1)]
    return PruningTable(mean_estimate(baseline), dict(scores), single, drops, order, cumulative)


@dataclass(frozen=True)
class SeedAnalysis:
    """Everything figure 3 (c)–(f) needs from one trained network: its test accuracy, the theory at the
    score width (T chosen on validation), the head scores from that U and the pruning table."""

    seed: int
    accuracy: Estimate
    theory: ValidatedPoint
    scores: dict
    pruning: PruningTable
    gradient_descent_order_parameter: np.ndarray = field(repr=False)


def analyse_network(seed: int, network: TrainedHeads, paths: PathData, *, score_width: float = 10,
                    temperatures: Sequence[float] = TEMPERATURES, store: SolutionStore | None = None,
                    progress: Callable[[str], None] | None = None, backend=None) -> SeedAnalysis:
    """Head scores from the theory U at ``score_width`` (the paper: N = 10) and the pruning table, on ``backend``."""
    theory = validated_point(paths, score_width, temperatures, heads=network.heads, store=store, progress=progress,
                             backend=backend)
    scores = head_scores(theory.test.order_parameter, network.heads)
    table = pruning_table(network, paths.X_test, paths.y_test, scores, backend)
    return SeedAnalysis(seed, table.baseline, theory, scores, table, network.order_parameter())


def rank_correlation_estimate(analyses: Sequence[SeedAnalysis]) -> Estimate:
    """Mean Spearman ρ(head score, pruning drop) over training seeds, with its standard error; ρ ∈ [−1, 1]."""
    return mean_estimate([a.pruning.rank_correlation for a in analyses], bounds=(-1.0, 1.0))


# ------------------------------------------------------------------------------------ cached networks

#: The trained networks shipped with the package (``attnverify train-one-shot --update-package-data`` rewrites them).
CACHE = Path(__file__).resolve().parents[1] / "data" / "one_shot_digits.npz"


def cache_settings(setup: OneShotSetup, architecture: dict, training: dict) -> dict:
    """What a cached network depends on: the episodes, the architecture and the optimiser (seed excluded)."""
    return {"setup": setup.as_dict(), "architecture": architecture,
            "training": {k: v for k, v in training.items() if k != "seed"}}


def _cache_file(path: str | Path | None, setup: OneShotSetup) -> Path:
    """The file of cached networks, checked to hold networks trained on the episodes of ``setup`` (else the numbers
    would not belong to this experiment)."""
    path = Path(path) if path is not None else CACHE
    if not path.is_file():
        raise FileNotFoundError(f"no trained networks at {path}: run `attnverify train-one-shot --update-package-data` "
                                "(needs the [train] extra)")
    _, shared = stored_seeds(path)
    trained_on = shared.get("settings", {}).get("setup")
    if trained_on != setup.as_dict():
        raise ValueError(f"the networks in {path} were trained on episodes {trained_on}, not {setup.as_dict()}: "
                         "run `attnverify train-one-shot --update-package-data` again")
    return path


def cached_networks(path: str | Path | None = None, setup: OneShotSetup = OneShotSetup()) -> tuple[dict[int, TrainedHeads], dict]:
    """The cached trained networks by seed (and the file's metadata); they must have been trained on
    the episodes of ``setup``, else the numbers would not belong to this experiment."""
    return load_networks(_cache_file(path, setup))


def cached_seeds(path: str | Path | None = None, setup: OneShotSetup = OneShotSetup()) -> tuple[int, ...]:
    """The training seeds of the cached networks (the file checked as `cached_networks` checks it), without
    reading the networks."""
    return stored_seeds(_cache_file(path, setup))[0]
