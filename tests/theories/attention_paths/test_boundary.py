"""The public boundary of the attention-paths theory, the one-shot images and the posterior sampler.

Every entry point refuses bad input by name and returns no NaN for valid input (see ``harness``).
Valid calls are tiny (P ≤ 8, one or two heads), so each takes milliseconds.

Parameters that take "a number or a sequence of L+1 numbers" (``width``, ``prior_var``) or a sequence
of integers (``heads``) skip the ``wrong_type`` category: it draws ``[1.0, 2.0]``, which is a valid value
for them. Their wrong types are listed as extras instead.
"""

import tempfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from boundary_harness import assert_refused_for_memory, EntryPoint, Parameter as P, boundary_tests

from attnverify.theories.attention_paths import derivations as theory
from attnverify.numerics import diagnostics, hmc
from attnverify.theories.attention_paths import features, heads as heads_module, markov_chain
from attnverify.theories.attention_paths.one_shot import task as one_shot
from attnverify.theories.attention_paths.collapsed import collapsed_posterior
from attnverify.numerics.kernel_energy import energy_for
from attnverify.theories.attention_paths.action import ActionConfig, solve_paths
from attnverify.theories.attention_paths.posterior import network_posterior
from attnverify.numerics.kernel_predictor import predictor_statistics
from attnverify.theories.attention_paths.sampling import PosteriorSamples, SamplerSettings, sample_posterior
from attnverify.theories.attention_paths.single_head import scalar_renormalization
from attnverify.theories.attention_paths.synthetic import synthetic_problem
from seeds import seeded

# --------------------------------------------------------------------------- tiny valid inputs


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seeded(seed))


def _features(P: int = 6, N0: int = 2, paths: int = 2, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = _rng(seed)
    X = rng.normal(size=(P, N0, paths)) / np.sqrt(N0 * paths)
    y = np.where(np.arange(P) % 2 == 0, 1.0, -1.0)
    return X, y


def _kernels(P: int = 6) -> tuple[np.ndarray, np.ndarray]:
    X, y = _features(P)
    return np.einsum("pia,qib->abpq", X, X), y


def _posterior(**overrides):
    X, y = _features(4, 2, 2)
    return network_posterior(X, y, **({"heads": (2,), "width": 2, "temperature": 0.5} | overrides))


def _samples() -> PosteriorSamples:
    rng = _rng(3)
    return PosteriorSamples(
        order_parameters=[rng.normal(size=(2, 2, 2, 8)), rng.normal(size=(2, 8))],
        test_outputs=rng.normal(size=(3, 2, 8)), acceptance=np.full((2, 8), 0.8),
        divergences=np.zeros((2, 8), bool), step_size=np.array([0.3, 0.4]), leapfrog_steps=4, seed=seeded(0),
        settings=SamplerSettings(chains=2, warmup=10, draws=8), seconds=0.0, gradient_evaluations=1)


def _images() -> one_shot.LabelledImages:
    rng = _rng(4)
    return one_shot.LabelledImages(rng.uniform(0, 16, size=(12, 8, 8)), np.repeat(np.arange(4), 3))


def _gaussian(x):
    return 0.5 * np.sum(x * x, axis=1), x


def _write_image_folders() -> tuple[str, str]:
    """A folder of 4 classes × 2 tiny PNGs, and a copy with one text file named ``.png``."""
    root = Path(_FOLDERS.name)
    good, bad = root / "good", root / "bad"
    rng = _rng(5)
    for folder in (good, bad):
        for c in range(4):
            (folder / f"class{c}").mkdir(parents=True)
            for i in range(2):
                Image.fromarray(rng.integers(0, 255, size=(6, 6), dtype=np.uint8)).save(folder / f"class{c}" / f"{i}.png")
    (bad / "class0" / "notes.png").write_text("not an image")
    return str(good), str(bad)


_FOLDERS = tempfile.TemporaryDirectory()  # removed when the test session's interpreter exits
GOOD_FOLDER, BAD_FOLDER = _write_image_folders()

# Wrong types for parameters whose valid values include sequences (so [1.0, 2.0] would be valid).
NOT_A_NUMBER = (("string", "1.0"), ("none", None), ("dict", {"value": 1.0}), ("object", object()))
NOT_HEADS = (("string", "ab"), ("none", None), ("non_integer_head", (2.7,)), ("zero_head", (0,)),
             ("no_heads", ()), ("bool_head", (True,)), ("nan_head", (float("nan"),)))
HEADS = P("count", skip=("wrong_type",), extra=NOT_HEADS)
WIDTHS = P("positive", skip=("wrong_type",), extra=NOT_A_NUMBER + (("wrong_length", [1.0, 2.0, 3.0, 4.0]),))
OBJECT = P("settings")  # an object parameter: numbers, strings, lists and dicts are refused by name
NOT_NONE_ARRAY = (("string", "abc"), ("dict", {"a": 1}), ("complex", np.ones((3, 2, 2), complex)))

# --------------------------------------------------------------------------- entry points

ENTRY_POINTS = [
    # features.py
    EntryPoint("features.attention_matrix", features.attention_matrix,
               lambda: dict(x=_rng().normal(size=(2, 3, 4)), weights=_rng(1).normal(size=(3, 3)), backend="numpy"),
               {"x": P("array"), "weights": P("array", shape_partner=True, extra=(("overflowing", np.full((3, 3), 1e308)),)),
                "backend": P("backend")}),
    EntryPoint("features.attention_matrices", features.attention_matrices,
               lambda: dict(x=_rng().normal(size=(2, 3, 4)), weights=[_rng(1).normal(size=(3, 3)), np.eye(3)],
                            backend="numpy"),
               {"x": P("array"), "backend": P("backend"),
                "weights": P("choice", extra=(("empty", []), ("string", "abc"), ("mismatched_shape", [np.eye(2)]),
                                              ("not_finite", [np.full((3, 3), np.nan)]),
                                              ("overflowing", [np.eye(3), np.full((3, 3), 1e308)])))}),
    EntryPoint("features.fixed_head_path_features", features.fixed_head_path_features,
               lambda: dict(x=_rng().normal(size=(2, 3, 4)), weights=[[np.eye(3), _rng(1).normal(size=(3, 3))], [np.eye(3)]],
                            readout="average_pooling", prior_var0=1.0, backend="numpy"),
               {"x": P("array"), "readout": P("choice", choices=features.READOUTS), "prior_var0": P("positive"),
                "backend": P("backend"),
                "weights": P("choice", extra=(("empty", []), ("empty_layer", [[np.eye(3)], []]), ("flat", [np.eye(3)]),
                                              ("mismatched_shape", [[np.eye(2)]]), ("not_finite", [[np.full((3, 3), np.inf)]])))}),
    EntryPoint("features.attention_matrix_qk", features.attention_matrix_qk,
               lambda: dict(x=_rng().normal(size=(2, 3, 4)), query=_rng(1).normal(size=(2, 3)),
                            key=_rng(2).normal(size=(2, 3))),
               {"x": P("array"), "query": P("array", shape_partner=True), "key": P("array", shape_partner=True)}),
    EntryPoint("features.readout_vector", features.readout_vector,
               lambda: dict(omega=np.full((2, 4, 4), 0.25), readout="average_pooling", backend="numpy"),
               {"omega": P("array"), "readout": P("choice", choices=features.READOUTS), "backend": P("backend")}),
    EntryPoint("features.path_features", features.path_features,
               lambda: dict(x=_rng().normal(size=(2, 3, 4)), layers=[[np.full((2, 4, 4), 0.25)] * 2],
                            readout="last_token", prior_var0=1.0, batch_size=1, backend="numpy"),
               {"x": P("array"), "layers": OBJECT, "readout": P("choice", choices=features.READOUTS),
                "prior_var0": P("positive"),
                # None is valid (the default chunking), so wrong_type is replaced by extras
                "batch_size": P("count", skip=("wrong_type",), extra=(("string", "8"), ("list", [1]))),
                "backend": P("backend")}),
    EntryPoint("features.path_kernels", features.path_kernels,
               lambda: dict(X=_features(3)[0], X_other=_features(2, seed=seeded(1))[0], backend="numpy"),
               # X_other=None is valid (it defaults to X)
               {"X": P("array"), "X_other": P("array", shape_partner=True, skip=("array_wrong_type",), extra=NOT_NONE_ARRAY),
                "backend": P("backend")}),
    EntryPoint("features.renormalized_kernel", features.renormalized_kernel,
               lambda: dict(U=np.eye(2), X=_features(3)[0], backend="numpy"),
               {"U": P("array", shape_partner=True), "X": P("array"), "backend": P("backend")}),
    EntryPoint("features.gp_kernel", features.gp_kernel,
               lambda: dict(X=_features(3)[0], scale=1.5, backend="numpy"),
               {"X": P("array"), "scale": P("positive"), "backend": P("backend")}),
    # saddle point, energy, predictor, heads, H = 1
    EntryPoint("action.solve_paths (kernels)", solve_paths,
               lambda: dict(data=dict(C=_kernels()[0], y=_kernels()[1]), heads=(2,), width=5, temperature=0.5,
                            prior_var=1.0, tolerance=1e-8),
               {"heads": HEADS, "width": WIDTHS, "temperature": P("positive"), "prior_var": WIDTHS,
                "tolerance": P("positive")}),
    EntryPoint("action.solve_paths (features)", solve_paths,
               lambda: dict(data=dict(X=_features()[0], y=_features()[1]), heads=(2,), width=5, temperature=0.5,
                            prior_var=1.0, space="kernel", tolerance=1e-8),
               {"heads": HEADS, "width": WIDTHS, "temperature": P("positive"), "prior_var": WIDTHS,
                "space": P("choice", choices=("auto", "kernel", "feature")), "tolerance": P("positive")}),
    EntryPoint("action.ActionConfig.build", ActionConfig.build,
               lambda: dict(heads=(2, 1), width=(3, 4, 5), temperature=0.5, prior_var=(1.0, 2.0, 0.5)),
               {"heads": HEADS, "width": WIDTHS, "temperature": P("positive"), "prior_var": WIDTHS}),
    EntryPoint("energy.energy_for", energy_for,
               lambda: dict(X=_features()[0], y=_features()[1], temperature=0.5, space="auto"),
               {"X": P("array"), "y": P("array", shape_partner=True), "temperature": P("positive"),
                "space": P("choice", choices=("auto", "kernel", "feature"))}),
    EntryPoint("predictor.predictor_statistics", predictor_statistics,
               lambda: dict(U=np.eye(2), X_train=_features()[0], y_train=_features()[1],
                            X_test=_features(3, seed=seeded(1))[0], temperature=0.5, space="kernel"),
               {"U": P("array", shape_partner=True, extra=(("indefinite", -np.eye(2)),)), "X_train": P("array"),
                "y_train": P("array", shape_partner=True), "X_test": P("array", shape_partner=True),
                "temperature": P("positive"), "space": P("choice", choices=("auto", "kernel", "feature"))}),
    EntryPoint("heads.head_scores", heads_module.head_scores,
               lambda: dict(U=np.array([[2.0, 0.5], [0.5, 1.0]]), heads=(2,)),
               {"U": P("array", shape_partner=True, extra=(("zero", np.zeros((2, 2))),)), "heads": HEADS}),
    EntryPoint("heads.prune_heads", heads_module.prune_heads,
               lambda: dict(U=np.array([[2.0, 0.5], [0.5, 1.0]]), heads=(2,), pruned=[(0, 1)]),
               {"U": P("array", shape_partner=True), "heads": HEADS,
                "pruned": P("choice", extra=(("outside", [(0, 5)]), ("not_a_pair", [(0,)]), ("non_integer", [(0, 0.5)])))}),
    EntryPoint("heads.kernel_task_alignment", heads_module.kernel_task_alignment,
               lambda: dict(U=np.eye(2), X=_features()[0], y=_features()[1], components=2),
               {"U": P("array", shape_partner=True), "X": P("array"), "y": P("array", shape_partner=True),
                # None is valid (every component)
                "components": P("count", skip=("wrong_type",), extra=(("string", "2"), ("list", [2])))}),
    EntryPoint("single_head.scalar_renormalization", scalar_renormalization,
               lambda: dict(K0=_kernels()[0][0, 0], y=_kernels()[1], depth=2, width=5, temperature=0.5, prior_var=1.0),
               {"K0": P("array", extra=(("indefinite", -np.eye(6)),)), "y": P("array", shape_partner=True),
                "depth": P("count"), "width": WIDTHS, "temperature": P("positive"), "prior_var": WIDTHS}),
    EntryPoint("synthetic.synthetic_problem", synthetic_problem,
               lambda: dict(P=4, heads=(2,), input_width=3, tokens=3, score_scale=1.0, label_noise=0.3,
                            readout="last_token", seed=seeded(0), chunk=2, workers=2),
               {"P": P("count"), "heads": HEADS, "input_width": P("count"), "tokens": P("count"),
                "score_scale": P("nonnegative"), "label_noise": P("nonnegative"),
                "readout": P("choice", choices=features.READOUTS), "seed": P("natural"), "chunk": P("count"),
                # None is valid (the CPU count)
                "workers": P("count", skip=("wrong_type",), extra=(("string", "2"), ("list", [2])))}),
    # the Markov-chain task
    EntryPoint("markov_chain.MarkovChainTask", markov_chain.MarkovChainTask,
               lambda: dict(tokens=3, features=4, p_a=0.7, p_b=0.3, noise_along_difference=1.0, noise_along_sum=1.0,
                            out_of_plane_noise=1.0, beta=2.0, perturbation=1.0),
               {"tokens": P("count"), "features": P("count", extra=(("odd", 5),)),
                "p_a": P("nonnegative", extra=(("above_one", 1.5),)), "p_b": P("nonnegative", extra=(("above_one", 1.5),)),
                "noise_along_difference": P("nonnegative"), "noise_along_sum": P("nonnegative"),
                "out_of_plane_noise": P("nonnegative"), "beta": P("nonnegative"), "perturbation": P("nonnegative")}),
    EntryPoint("markov_chain.sample_sequences", markov_chain.sample_sequences,
               lambda: dict(task=markov_chain.MarkovChainTask(tokens=3, features=4), P=4, seed=seeded(1)),
               {"task": OBJECT, "P": P("count", extra=(("odd", 5),)), "seed": P("rng")}),
    EntryPoint("markov_chain.markov_dataset", markov_chain.markov_dataset,
               lambda: dict(task=markov_chain.MarkovChainTask(tokens=3, features=4), network="4paths", P_train=4,
                            P_test=2, seed=seeded(1), head_seed=0, prior_var0=1.0, backend="numpy"),
               {"task": OBJECT, "network": P("choice", choices=tuple(markov_chain.NETWORKS)),
                "P_train": P("count", extra=(("odd", 5),)), "P_test": P("count"), "seed": P("natural"),
                "head_seed": P("natural"), "prior_var0": P("positive"), "backend": P("backend")}),
    # the posterior sampler
    EntryPoint("posterior.network_posterior", network_posterior,
               lambda: dict(X=_features(4)[0], y=_features(4)[1], heads=(2,), width=2, temperature=0.5, prior_var=1.0,
                            backend="numpy"),
               # y of shape (chains, P) is valid (one data set per chain), so wrong_ndim is replaced by 3 axes
               {"X": P("array"), "y": P("array", shape_partner=True, skip=("wrong_ndim",),
                                        extra=(("three_axes", np.ones((1, 1, 4))),)),
                "heads": HEADS,
                "width": P("count", skip=("wrong_type",), extra=NOT_A_NUMBER + (("too_large", 1e9),)),
                "temperature": P("positive"), "prior_var": WIDTHS, "backend": P("backend")}),
    EntryPoint("collapsed.collapsed_posterior", collapsed_posterior,
               lambda: dict(network=_posterior(), representation="features"),
               {"network": OBJECT, "representation": P("choice", choices=("auto", "kernels", "features"))}),
    EntryPoint("sampling.SamplerSettings", SamplerSettings,
               lambda: dict(chains=2, warmup=10, draws=4, trajectory_length=1.0, target_acceptance=0.8, max_leapfrog=4,
                            step_jitter=0.1),
               {"chains": P("count", extra=(("one", 1),)), "warmup": P("count", extra=(("too_few", 3),)),
                "draws": P("count", extra=(("too_few", 3),)), "trajectory_length": P("positive", extra=(("too_long", 1e3),)),
                "target_acceptance": P("positive", extra=(("above_one", 1.5),)), "max_leapfrog": P("count"),
                "step_jitter": P("nonnegative", extra=(("one", 1.0),))}),
    EntryPoint("sampling.sample_posterior", sample_posterior,
               lambda: dict(posterior=_posterior(), seed=seeded(2),
                            settings=dict(chains=2, warmup=10, draws=4, max_leapfrog=4),
                            X_test=_features(3, seed=seeded(1))[0], method="collapsed"),
               {"posterior": OBJECT, "seed": P("natural"), "settings": P("settings"),
                # X_test=None is valid (no test outputs)
                "X_test": P("array", shape_partner=True, skip=("array_wrong_type",), extra=NOT_NONE_ARRAY),
                "method": P("choice", choices=("collapsed", "readout_gibbs"))}),
    EntryPoint("sampling.PosteriorSamples.accuracy", lambda samples, **kw: samples.accuracy(**kw),
               lambda: dict(samples=_samples(), y_test=np.array([1.0, -1.0, 1.0]), replicates=50, seed=seeded(0)),
               {"y_test": P("array", shape_partner=True), "replicates": P("count", extra=(("one", 1),)),
                "seed": P("natural")}),
    # HMC and diagnostics
    EntryPoint("hmc.sample", hmc.sample,
               lambda: dict(potential_and_gradient=_gaussian, x0=np.zeros((2, 3)), seed=seeded(0), warmup=5, draws=4,
                            backend="numpy", max_steps=4),
               {"potential_and_gradient": P("choice", extra=(("not_callable", np.ones(3)),)), "x0": P("array"),
                "seed": P("natural"), "warmup": P("count"), "draws": P("count"), "backend": P("backend"),
                "max_steps": P("count")}),
    EntryPoint("hmc.HMCKernel", hmc.HMCKernel,
               lambda: dict(step=np.array([0.5, 0.4]), backend="numpy", trajectory_length=1.0, target_acceptance=0.8,
                            max_steps=8, jitter=0.1),
               {"step": P("array", extra=(("zero_step", np.zeros(2)),)), "backend": P("backend"),
                "trajectory_length": P("positive"), "target_acceptance": P("positive", extra=(("one", 1.0),)),
                "max_steps": P("count"), "jitter": P("nonnegative", extra=(("one", 1.0),))}),
] + [
    # (..., chains, draws): extra leading axes are valid, so wrong_ndim is replaced by too-small shapes
    EntryPoint(f"diagnostics.{f.__name__}", f, lambda: dict(values=_rng(6).normal(size=(2, 8))),
               {"values": P("array", skip=("wrong_ndim",),
                            extra=(("one_axis", np.ones(8)), ("one_chain", np.ones((1, 8))), ("three_draws", np.ones((2, 3)))))})
    for f in (diagnostics.rhat, diagnostics.ess_bulk, diagnostics.ess_tail, diagnostics.summarize)
] + [
    # one-shot images
    EntryPoint("one_shot.load_image_folder", one_shot.load_image_folder, lambda: dict(path=GOOD_FOLDER),
               {"path": P("choice", extra=(("text_file_named_png", BAD_FOLDER),))}),
    EntryPoint("one_shot.image_patches", one_shot.image_patches,
               lambda: dict(images=_rng(7).uniform(size=(2, 8, 8))), {"images": P("array")}),
    EntryPoint("one_shot.sinusoidal_positions", one_shot.sinusoidal_positions, lambda: dict(count=4, dim=8),
               {"count": P("count"), "dim": P("count", extra=(("odd", 7),))}),
    EntryPoint("one_shot.split_classes", one_shot.split_classes,
               lambda: dict(data=_images(), test_fraction=0.5, seed=seeded(0)),
               {"data": OBJECT, "test_fraction": P("positive", extra=(("above_one", 1.5),)), "seed": P("natural")}),
    EntryPoint("one_shot.draw_episodes", one_shot.draw_episodes,
               lambda: dict(data=_images(), classes=[0, 1, 2], count=2, seed=seeded(0), label_seed=1, balanced=True),
               {"data": OBJECT, "count": P("count"), "seed": P("natural"), "label_seed": P("natural"),
                "balanced": P("choice", choices=(True, False)),
                "classes": P("choice", extra=(("one_class", [0]), ("absent", [0, 9])))}),
    # derivations: the numeric functions
    EntryPoint("derivations.gp_order_parameters", theory.gp_order_parameters,
               lambda: dict(heads=(2, 1), prior_var=(1.0, 2.0, 0.5), backend="numpy"),
               {"heads": HEADS, "prior_var": WIDTHS, "backend": P("backend")}),
    EntryPoint("derivations.readout_order_parameter", theory.readout_order_parameter,
               lambda: dict(trace_U_L=1.5, heads_last=2, width_prev=10.0, width_last=8.0, var_last=1.0, var_readout=0.5,
                            backend="numpy"),
               # arrays broadcast, so [1.0, 2.0] is valid: wrong types come as extras
               {name: P("positive", skip=("wrong_type",), extra=NOT_A_NUMBER)
                for name in ("trace_U_L", "heads_last", "width_prev", "width_last", "var_last", "var_readout")}
               | {"backend": P("backend")}),
    EntryPoint("derivations.evaluate_action", theory.evaluate_action,
               lambda: dict(heads=(1,), order_parameters=[np.array([[1.5]])], readout=0.7, path_kernels=np.full((1, 1, 1, 1), 0.4),
                            labels=np.array([1.0]), widths=(3.0, 4.0), variances=(1.0, 0.5), temperature=0.5, backend="numpy"),
               {"heads": HEADS, "order_parameters": P("settings", extra=(("not_positive_definite", [np.array([[-1.0]])]),
                                                                          ("nan", [np.array([[np.nan]])]))),
                "readout": P("positive"), "path_kernels": P("array", shape_partner=True,
                                                            extra=(("negative", np.full((1, 1, 1, 1), -0.4)),)),
                "labels": P("array"), "widths": WIDTHS, "variances": WIDTHS, "temperature": P("positive"),
                "backend": P("backend")}),
]


test_refuses_bad_input, test_valid_input_gives_no_nan = boundary_tests(ENTRY_POINTS)


# --------------------------------------------------------------------------- sizes that cannot fit

_OMEGA = np.full((2, 2, 2), 0.5)  # the attention matrices of 2 sequences of 2 tokens
_FOUR_HEADS = ["good", "random", "uniform", "blank"]


@pytest.mark.parametrize("call, named", [
    (lambda: features.path_kernels(np.zeros((10**6, 1, 4))), "P = 1000000"),
    (lambda: features.gp_kernel(np.zeros((2 * 10**6, 1, 1))), "P = 2000000"),
    (lambda: features.renormalized_kernel(np.eye(1), np.zeros((2 * 10**6, 1, 1))), "P = 2000000"),
    (lambda: features.path_features(np.ones((2, 3, 2)), [[_OMEGA] * 10] * 13), "layers"),
    (lambda: features.fixed_head_path_features(np.ones((10**3, 3, 2)), [[np.eye(3)] * 10] * 13), "layers"),
    (lambda: features.fixed_head_path_features(np.ones((10**4, 3, 300)), [[np.eye(3)] * 10**4]), "B = 10000"),
    (lambda: markov_chain.markov_dataset(markov_chain.MarkovChainTask(tokens=10**6, features=10), "4paths", 2, 2),
     "tokens = 1000000"),
    (lambda: markov_chain.markov_dataset(markov_chain.MarkovChainTask(features=10**8), "4paths", 2, 2),
     "features = 100000000"),
    (lambda: markov_chain.markov_dataset(markov_chain.MarkovChainTask(tokens=5, features=10), [_FOUR_HEADS] * 20, 4, 4),
     "network"),
    (lambda: markov_chain.markov_dataset(markov_chain.MarkovChainTask(), "4paths", 2, 10**12),
     "P_test = 1000000000000"),
    (lambda: markov_chain.good_head(markov_chain.MarkovChainTask(tokens=10**6, features=10)), "tokens = 1000000"),
    (lambda: one_shot.draw_episodes(_images(), [0, 1, 2], 10**12, seed=0), "count = 1000000000000"),
    (lambda: scalar_renormalization(np.eye(5), np.ones(5), depth=10**12, width=10, temperature=0.1),
     "depth = 1000000000000"),
], ids=["path_kernels P", "gp_kernel P", "renormalized_kernel P", "path_features layers",
        "fixed_head_path_features layers", "fixed_head_path_features B", "markov tokens",
        "markov features", "markov network", "markov P_test", "good_head tokens", "draw_episodes count",
        "scalar_renormalization depth"])
def test_a_size_that_cannot_fit_is_refused_by_name_before_allocating(call, named):
    assert_refused_for_memory(call, named)
