"""The GPU path: what a run on the strict cupy stand-in (``tests/cupy_standin``) found, each a test that fails on the
code before its fix, and every boundary entry point that takes a backend run with ``backend="cupy"``.

Marked ``gpu``: they run where cupy works (a real GPU, or the stand-in with ``ATTNVERIFY_CUPY_STANDIN=1``:
``make test-standin``) and skip elsewhere.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import sympy

from attnverify.base import arguments
from attnverify.base.backend import cupy_works, get_backend, on_device, to_numpy
from attnverify.derivations.codegen import evaluator

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cupy_works(), reason="no working cupy (GPU or stand-in)")]


def _cupy():
    return get_backend("cupy")


def _host(value):
    if isinstance(value, tuple):
        return tuple(_host(v) for v in value)
    return np.asarray(to_numpy(value), dtype=np.float64)


@pytest.fixture
def cupy_evaluators_match_numpy(monkeypatch, request):
    """Every generated evaluator the test calls on cupy is called again on numpy, after the test, at the arguments of
    its first cupy call: the two agree to 1e-12 relative, or within 8 ulps of the size of the terms the expression
    is made of (``derivations.rounding.magnitude``: where terms cancel, 1e-12 of the value is below round-off).
    With ATTNVERIFY_EVALUATOR_LOG set, one JSON line per evaluator goes to that file (the GPU run's figures)."""
    import json
    import os

    from attnverify.derivations import codegen
    from attnverify.derivations.codegen import rounding_scale

    first_calls: dict = {}
    original = codegen.Evaluator.__call__

    def recording(self, *values):
        out = original(self, *values)
        key = (self.expressions, self.arguments, self.single)
        if self.backend_name == "cupy" and key not in first_calls:
            first_calls[key] = (tuple(_host(v) for v in values), _host(out if not self.single else (out,)))
        return out

    monkeypatch.setattr(codegen.Evaluator, "__call__", recording)
    yield first_calls
    monkeypatch.undo()
    log = os.environ.get("ATTNVERIFY_EVALUATOR_LOG")
    for (expressions, symbols, single), (values, on_cupy) in first_calls.items():
        on_numpy = codegen.evaluator(list(expressions), symbols, "numpy")(*values)
        worst = 0.0
        for expression, a, b in zip(expressions, on_cupy, on_numpy):
            error = np.abs(a - b)
            allowed = 1e-12 * np.abs(b)
            if np.any(error > allowed):
                terms = rounding_scale(expression, symbols)(*values)
                allowed = np.maximum(allowed, 8 * np.finfo(np.float64).eps * terms)
            assert np.all(error <= allowed), (f"cupy and numpy evaluators of {expression} differ by "
                                              f"{np.max(error):.3g} at {[str(s) for s in symbols]}")
            worst = max(worst, float(np.max(error / np.maximum(np.abs(b), 1e-300), initial=0.0)))
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"test": request.node.name, "expressions": len(expressions),
                                    "arguments": [str(s) for s in symbols], "points": int(np.size(on_numpy[0])),
                                    "worst_relative_difference": worst}) + "\n")


def _masked_row_sums(xp, a, b, keep, scale):
    """Elementwise work and one reduction, the last: what a fused operation may hold."""
    return xp.sum(xp.where(keep, xp.exp(a) * b + scale, 0.0), axis=1)


def test_a_fused_operation_gives_numpys_values_on_cupy():
    """`Backend.fused` on cupy (``cupy.fuse``: on a GPU compiled here, on the stand-in its operations under the
    rules of fusion) against the same function on numpy, with broadcasting, a bool mask, a Python scalar and a
    diagonal view among the arguments."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(5, 3, 3))
    keep = rng.normal(size=(5, 3)) > 0
    results = []
    for be in (get_backend("numpy"), _cupy()):
        diagonal = be.xp.diagonal(be.asarray(b), axis1=1, axis2=2)
        results.append(be.to_numpy(be.fused(_masked_row_sums)(be.asarray(a), diagonal, be.asarray(keep), 0.25)))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-14, atol=1e-15)


def test_the_stand_in_refuses_in_a_fused_operation_what_cupy_fuse_cannot_compile(cupy):
    """Indexing, methods, products and in-place operators inside a fused function raise, as cupy's tracer refuses
    them, so a fused function the stand-in runs is one cupy can compile."""
    be = _cupy()
    x = be.asarray(np.ones((2, 3)))

    def indexing(xp, x):
        return x[:, 0]

    def method(xp, x):
        return x.reshape(-1)

    def product(xp, x):
        return x @ x.T

    def summed(xp, x):
        return xp.einsum("ij->i", x)

    def in_place(xp, x):
        x += 1.0
        return x

    for body in (indexing, method, product, summed, in_place):
        with pytest.raises(TypeError, match="cannot be fused"):
            be.fused(body)(x)


def test_a_failed_cholesky_is_refused_on_cupy_as_on_numpy():
    """cupy's default linalg='ignore' returns a factor of an indefinite matrix without a word (the stand-in: a
    finite, wrong one); ridge_attention with a ridge far below round-off must refuse it by name on both."""
    from attnverify.theories.conditional_mean import ridge_attention

    rng = np.random.default_rng(0)
    keys, values, query = rng.standard_normal((8, 2)), rng.standard_normal((8, 1)), rng.standard_normal(2)
    for backend in ("numpy", "cupy"):
        with pytest.raises(ValueError, match="ridge must be at least"):
            ridge_attention(query, keys, values, ridge=1e-30, backend=backend)


def test_the_batched_factorisation_marks_the_matrices_without_a_factor_on_both_backends():
    good = np.array([[2.0, 0.5], [0.5, 1.0]])
    batch = np.stack([good, np.array([[1.0, 2.0], [2.0, 1.0]]), good, np.full((2, 2), np.inf)])
    for be in (get_backend("numpy"), _cupy()):
        factors, failed = be.cholesky_each(be.asarray(batch), be.asarray(np.eye(2)))
        assert be.to_numpy(failed).tolist() == [False, True, False, True]
        np.testing.assert_allclose(be.to_numpy(factors)[1], np.eye(2))
        np.testing.assert_allclose(be.to_numpy(factors)[0], np.linalg.cholesky(good), rtol=1e-14)
        with pytest.raises(np.linalg.LinAlgError):
            be.cholesky(be.asarray(batch[1]))


def test_a_function_the_backend_lacks_is_refused_when_its_evaluator_is_made():
    """cupyx.scipy.special has no general-order Bessel functions: before, the evaluator was made and failed with
    an AttributeError when called; now making it names the function, the missing target and the backend."""
    x = sympy.Symbol("x", positive=True)
    for bessel, target in ((sympy.besseli, "iv"), (sympy.besselj, "jv"), (sympy.besselk, "kv"), (sympy.bessely, "yv")):
        expression = bessel(sympy.Rational(1, 2), x)
        assert np.isfinite(evaluator(expression, [x])(1.5))  # numpy has it
        with pytest.raises(NotImplementedError, match=rf"{bessel.__name__}.*'cupy'.*cupyx\.scipy\.special\.{target}"):
            evaluator(expression, [x], "cupy")


def test_a_generator_of_the_other_backend_is_refused_by_name():
    with pytest.raises(TypeError, match="rng is a numpy Generator but the computation runs on cupy"):
        arguments.generator(np.random.default_rng(0), _cupy())
    with pytest.raises(TypeError, match="rng is a cupy Generator but the computation runs on numpy"):
        arguments.generator(_cupy().random(0), get_backend("numpy"))
    assert on_device(arguments.generator(3, _cupy()).standard_normal(2))


def test_a_device_array_given_to_host_code_is_refused_by_name():
    on_device = _cupy().asarray(np.ones((3, 2)))
    with pytest.raises(TypeError, match=r"X is a device \(cupy\) array.*X\.get\(\)"):
        arguments.array("X", on_device)
    x = sympy.Symbol("x")
    with pytest.raises(TypeError, match=r"argument x is a device \(cupy\) array.*backend='cupy'"):
        evaluator(x**2, [x])(on_device)


def test_host_only_entry_points_name_the_device_array_they_were_given():
    from attnverify.theories.attention_paths import predictor_statistics, solve_paths

    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((6, 3, 2)), np.sign(rng.standard_normal(6))
    with pytest.raises(TypeError, match=r"X is a device \(cupy\) array"):
        solve_paths(dict(X=_cupy().asarray(X), y=y), heads=(2,), width=10.0, temperature=0.1)
    with pytest.raises(TypeError, match=r"is a device \(cupy\) array"):
        predictor_statistics(np.eye(2), _cupy().asarray(X), y, X, temperature=0.1)


def _entry_points_taking_a_backend():
    found = []
    for theory in ("attention_paths", "conditional_mean", "single_location"):
        module = importlib.import_module(f"theories.{theory}.test_boundary")
        for entry in module.ENTRY_POINTS:
            if "backend" in entry.parameters:
                found.append(pytest.param(entry, id=entry.name))
    return found


@pytest.mark.parametrize("entry", _entry_points_taking_a_backend())
def test_every_boundary_entry_point_that_takes_a_backend_runs_on_cupy(entry, cupy_evaluators_match_numpy):
    """Its valid call with backend='cupy' runs, makes device arrays (unless it returns a function, made for the
    device and called later), and returns no NaN. A numpy Generator in the valid call becomes its integer seed:
    cupy's computation takes cupy's Generator or a seed."""
    import cupy

    valid = dict(entry.valid())
    valid["backend"] = "cupy"
    for name, value in list(valid.items()):
        if isinstance(value, np.random.Generator):
            valid[name] = int(value.integers(2**31))
    before = cupy.created() if hasattr(cupy, "created") else None
    result = entry.call(**valid)
    if before is not None and not callable(result):
        assert cupy.created() > before, f"{entry.name} made no device array on backend='cupy'"
    for value in (result if isinstance(result, tuple) else (result,)):
        if on_device(value):
            assert not np.isnan(value.get()).any()


SHARED_SAMPLING = "attention_paths.sampled_networks_"
"""The two attention-path claims on one sampling of networks (figure 2c's): checked in one run, sharing its store,
as a report runs them, so that the stand-in samples once."""


def _claim_names() -> list:
    from attnverify.theories import builtin_claims

    names = [c.name for c in builtin_claims() if not c.name.endswith(".derivation_steps")]  # sympy only
    shared = [n for n in names if n.startswith(SHARED_SAMPLING)]
    return [n for n in names if n not in shared] + [SHARED_SAMPLING] * bool(shared)


def _all_names() -> list:
    from attnverify.theories import builtin_claims

    return [c.name for c in builtin_claims()]


@pytest.mark.parametrize("name", _claim_names())
def test_every_claim_runs_with_check_backend_cupy_and_puts_arrays_on_the_device(name, tmp_path, monkeypatch,
                                                                              cupy_evaluators_match_numpy):
    """``attnverify check --backend cupy --profile quick --only NAME``: the claim runs (no error, and not an
    unexpected refutation: a claim built to hold for any seed holds, or says it needs more draws), and on the
    stand-in it made device arrays (counted by the stand-in), or asked the rule that keeps small work on the host
    (base.backend.for_size, tested on its own) with the device backend and was sent to the host: the backend
    reaches every claim. NAME may be a prefix (:data:`SHARED_SAMPLING`): its claims run in one run, each checked."""
    import json
    import sys

    import cupy

    from attnverify import cli
    from attnverify.base import backend

    declined, original = [], backend.for_size

    def for_size(asked, elements):
        chosen = original(asked, elements)
        declined.append(backend.get_backend(asked).name == "cupy" and chosen.name == "numpy")
        return chosen

    for module in [m for n, m in list(sys.modules.items()) if n.startswith("attnverify")]:
        if getattr(module, "for_size", None) is original:
            monkeypatch.setattr(module, "for_size", for_size)

    before = cupy.created() if hasattr(cupy, "created") else None
    out = tmp_path / "results.json"
    cli.main(["check", "--backend", "cupy", "--profile", "quick", "--only", name, "--json", str(out)])
    results = json.loads(out.read_text())["claims"]
    assert [r["name"] for r in results] == [n for n in _all_names() if n.startswith(name)] and results
    for result in results:
        assert result["backend"] == "cupy"
        assert result["status"] != "error", (result["name"], result.get("error"))
        assert result["status"] == result["expect"] or result["status"] == "inconclusive", (result["name"],
                                                                                            result["status"])
    if before is not None:
        assert cupy.created() > before or any(declined), f"{name} made no device array with --backend cupy"


@pytest.mark.parametrize("method", ["collapsed", "readout_gibbs"])
def test_both_posterior_samplers_match_quadrature_on_cupy(method):
    """The two samplers of the attention network (HMC with the readout integrated out, and HMC with Gibbs steps on
    the readout) on cupy, against quadrature of the tiny network: the numpy test's gates and bounds
    (``tests/theories/attention_paths/test_sampling.py``; false alarm per seed ≤ 2·10⁻³)."""
    from theories.attention_paths.test_sampling import tiny_posterior_moments
    from seeds import seeded

    from attnverify.theories.attention_paths.posterior import network_posterior
    from attnverify.theories.attention_paths.sampling import SamplerSettings, sample_posterior

    rng = np.random.default_rng(seeded(0))
    X, y, X_test, T = rng.normal(size=(3, 1, 1)), np.array([1.0, -1.0, 1.0]), rng.normal(size=(2, 1, 1)), 1.0
    posterior = network_posterior(X, y, heads=(1,), width=1, temperature=T, backend="cupy")
    samples = sample_posterior(posterior, seed=seeded(3), settings=SamplerSettings(chains=8, warmup=300, draws=1500),
                               X_test=X_test, method=method)
    U_exact, f_exact = tiny_posterior_moments(X, y, X_test, T)
    U, f = samples.order_parameter_summary(), samples.predictor_summary()
    assert U.converged and f.converged, (U.worst(), f.worst())
    assert abs(U.mean[0, 0] - U_exact) <= U.mcse_z()[0, 0] * U.mcse[0, 0]
    assert np.all(np.abs(f.mean - f_exact) <= f.mcse_z() * f.mcse)


def test_the_saddle_network_sampler_on_cupy_equals_numpy_and_its_claims_run_there():
    """attnverify.saddle.network on cupy: the collapsed potential and gradient, the readout's second moment and the
    generalisation error equal numpy's at the same weights (1e-12 relative); and the linear-network claim on the
    order parameters holds with backend cupy, as on numpy (tests/saddle/test_sampled_networks.py)."""
    import cupy

    from claim_helpers import run_seed
    from saddle.test_sampled_networks import _one_layer_theory

    from attnverify.base.backend import get_backend
    from attnverify.checks import run_claim
    from attnverify.saddle.network import CollapsedNetworkPosterior, one_hidden_layer

    rng = np.random.default_rng(0)
    X, y, X_test, y_test = rng.standard_normal((12, 3)), rng.standard_normal(12), rng.standard_normal((5, 3)), \
        rng.standard_normal(5)
    network = one_hidden_layer(4, 3, readout_variance_total=1.5)
    x = rng.standard_normal((3, 12))
    host = CollapsedNetworkPosterior(network, X, y, 0.2)
    device = CollapsedNetworkPosterior(network, X, y, 0.2, backend="cupy")
    to_numpy = get_backend("cupy").to_numpy
    pairs = [(host.potential_and_gradient(x), device.potential_and_gradient(cupy.asarray(x))),
             ((host.readout_second_moment(x),), (device.readout_second_moment(cupy.asarray(x)),)),
             ((host.generalisation_error(x, X_test, y_test),),
              (device.generalisation_error(cupy.asarray(x), cupy.asarray(X_test), cupy.asarray(y_test)),))]
    for numpy_values, cupy_values in pairs:
        for a, b in zip(numpy_values, cupy_values):
            np.testing.assert_allclose(to_numpy(b), a, rtol=1e-12, atol=1e-14)
    result = run_claim(_one_layer_theory(), profile="quick", backend="cupy", seed=run_seed(0))
    assert result.status == "holds", result


def test_a_derived_single_location_entry_point_on_cupy_equals_numpy():
    """The built-ins' entry points evaluate their derivations' named results by `DerivedFunction.array_function` on
    the backend asked for: the risk, its gradient (the result's derivative), the oracle and the linear risks."""
    from attnverify.theories.single_location import derivations as sl

    rng = np.random.default_rng(0)
    o = rng.uniform(-0.9, 0.9, size=(5, 20))
    values = dict(lam=1.3, gamma=0.7, d=40.0, L=6.0, eps=0.1)
    for name in ("population_risk_from_overlaps", "risk_gradient_from_overlaps"):
        host = np.asarray(getattr(sl, name)(*o, **values))
        device = getattr(sl, name)(*(_cupy().asarray(x) for x in o), **values, backend="cupy")
        assert on_device(device[0] if isinstance(device, tuple) else device)
        np.testing.assert_allclose(np.asarray(_host(device)), host, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(_host(sl.oracle_risk(1.3, 40, 6, 0.7, 0.1, backend="cupy")),
                               sl.oracle_risk(1.3, 40, 6, 0.7, 0.1), rtol=1e-13)
    np.testing.assert_allclose(_host(sl.linear_risk(6, 0.7, 0.1, backend="cupy")), sl.linear_risk(6, 0.7, 0.1),
                               rtol=1e-13)
