"""Activations as sympy functions (attnverify.saddle.activations): the generated features and vector–Jacobian product
against the activation and finite differences, the NNGP kernel of each built-in against Monte Carlo over the weights,
its closed forms as checked derivations, erf against neural-tangents, the cupy path on the strict stand-in, and bad
activations refused in one line (the quadrature: test_nngp_quadrature.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.special
import sympy
from activation_cases import inputs, spec
from seeds import seeded

from attnverify.base.backend import cupy_works
from attnverify.saddle.activations import activation, kernel_derivation
from attnverify.saddle.claims import against_differences
from attnverify.saddle.network import CollapsedNetworkPosterior, nngp_kernel, one_hidden_layer, sample_order_parameters

REFERENCE = Path(__file__).parent / "data" / "neural_tangents_nngp.npz"

REFERENCE_VALUES = {"relu": lambda u: np.maximum(u, 0.0), "linear": lambda u: u, "erf": scipy.special.erf,
                    "tanh": np.tanh, "cube": lambda u: u**3, "softplus": lambda u: np.log1p(np.exp(u)),
                    "hard_tanh": lambda u: np.clip(u, -1.0, 1.0)}
"""Each activation written by hand in numpy, to hold the generated code to."""


@pytest.mark.parametrize("name", sorted(REFERENCE_VALUES))
def test_generated_features_are_the_activation_and_their_vjp_equals_finite_differences(name):
    """Φ = φ(XZᵀ/√d) against φ written in numpy (to 1e-13: softplus is generated as log(eˣ + 1), not log1p), and
    the generated VJP (dΦ ⊙ φ'(XZᵀ/√d))ᵀX/√d against central differences of ⟨dΦ, Φ(Z)⟩ within 10× the
    differences' own error at steps h, h/2, h/4 plus round-off (the project's rule for generated gradients)."""
    X = inputs()
    network = one_hidden_layer(5, 3, activation=spec(name))
    rng = np.random.default_rng(1)
    Z, dF = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 6, 5))
    expected = REFERENCE_VALUES[name](X[None] @ Z.transpose(0, 2, 1) / np.sqrt(3))
    np.testing.assert_allclose(network.features(Z, X), expected, rtol=1e-13, atol=1e-15)
    for c in range(2):
        def inner(t, c=c):
            return float(np.sum(dF[c] * network.features(t.reshape(1, 5, 3), X)[0]))
        analytic = network.features_vjp(Z[c:c + 1], X, dF[c:c + 1]).ravel()
        assert against_differences(analytic, inner, Z[c].ravel(), max(abs(inner(Z[c].ravel())), 1.0)) <= 1.0


@pytest.mark.parametrize("name", ["relu", "erf", "tanh", "hard_tanh"])
def test_the_collapsed_gradient_of_a_generated_network_equals_finite_differences(name):
    X = inputs(P=6)
    y = np.tanh(X @ np.array([1.0, -0.5, 0.3]))
    posterior = CollapsedNetworkPosterior(one_hidden_layer(5, 3, activation=spec(name)), X, y, 0.1)
    x = np.random.default_rng(1).standard_normal((1, posterior.size))
    potential, gradient = posterior.potential_and_gradient(x)
    ratio = against_differences(gradient[0], lambda t: posterior.potential_and_gradient(t[None])[0][0], x[0],
                                 max(abs(float(potential[0])), 1.0))
    assert ratio <= 1.0


def test_relu_and_linear_units_keep_their_features_and_vjp_bit_for_bit():
    """The generated code reproduces the hand-written units it replaced: ReLU's features as u·(u > 0) (equal values;
    the sign of a zero may differ) and its VJP (dΦ ⊙ (u > 0))ᵀX/√d bit for bit; linear units are the preactivations
    themselves, and their VJP multiplies by no slope."""
    X, d = inputs(), 3
    rng = np.random.default_rng(2)
    Z, dF = rng.standard_normal((3, 5, d)), rng.standard_normal((3, 6, 5))
    u = X[None] @ Z.transpose(0, 2, 1)
    u *= 1.0 / np.sqrt(d)
    relu, linear = one_hidden_layer(5, d), one_hidden_layer(5, d, activation="linear")
    assert np.array_equal(relu.features(Z, X), u * (u > 0))
    by_hand = (dF * (u > 0)).transpose(0, 2, 1) @ X[None]
    by_hand *= 1.0 / np.sqrt(d)
    assert relu.features_vjp(Z, X, dF).tobytes() == by_hand.tobytes()
    assert linear.features(Z, X).tobytes() == u.tobytes()
    by_hand = dF.transpose(0, 2, 1) @ X[None]
    by_hand *= 1.0 / np.sqrt(d)
    assert linear.features_vjp(Z, X, dF).tobytes() == by_hand.tobytes()


@pytest.mark.parametrize("name", ["relu", "linear", "erf", "tanh"])
def test_each_built_in_kernel_is_the_mean_over_the_weights(name):
    """K(x, y) = E_w[φ(w·x) φ(w·y)], w ~ N(0, I/d), at the 21 pairs of 6 inputs in d = 3 (norms ~0.5 to ~5), against
    the mean over 2·10⁵ drawn weights within 5 of its standard errors (z = 5: a false alarm of 6e-7 per pair)."""
    X = inputs()
    K = nngp_kernel(X, activation=name)
    w = np.random.default_rng(seeded(11)).standard_normal((3, 200_000)) / np.sqrt(3)
    units = REFERENCE_VALUES[name](X @ w)
    rows, cols = np.triu_indices(len(X))
    products = units[rows] * units[cols]
    mean, error = products.mean(axis=1), products.std(axis=1) / np.sqrt(products.shape[1])
    assert np.all(np.abs(mean - K[rows, cols]) <= 5 * error), np.max(np.abs(mean - K[rows, cols]) / error)


@pytest.mark.parametrize("name", ["relu", "linear", "erf", "cube"])
def test_each_closed_form_is_a_checked_step_from_the_gaussian_expectation(name):
    """The derivation states K as the Expectation over z₁, z₂ (a definition) and every later step is checked by the
    project's checker (symbolically, or at random points in 30 digits against the engine's quadrature)."""
    derivation = kernel_derivation(activation(spec(name)))
    outcomes = [check.outcome for check in derivation.checks()]
    assert outcomes[0] == "definition" and len(outcomes) >= 2
    assert all(outcome in ("symbolic", "numeric") for outcome in outcomes[1:]), outcomes


@pytest.mark.parametrize("spec", ["erf", sympy.erf, sympy.Lambda(sympy.Symbol("t"), sympy.erf(sympy.Symbol("t")))])
def test_the_erf_kernel_equals_neural_tangents(spec):
    """neural-tangents' stax.Erf NNGP at 425 pairs, norms 1e-3 to 1e3 and angles 0 to π (tests/saddle/data): within
    1e-13 (measured 1.7e-14), however the erf is given (it is the built-in's arcsine kernel)."""
    reference = np.load(REFERENCE)
    X, Y = reference["X"], reference["Y"]
    K = np.array([nngp_kernel(X[i:i + 1], Y[i:i + 1], activation=spec)[0, 0] for i in range(len(X))])
    assert np.max(np.abs(K - reference["erf"])) <= 1e-13


def test_the_relu_kernel_equals_neural_tangents_relative_to_its_scale():
    """stax.Relu's NNGP at the same pairs: within 1e-14 of √(K(x, x) K(y, y)) (measured 3.7e-15)."""
    reference = np.load(REFERENCE)
    X, Y = reference["X"], reference["Y"]
    K = np.array([nngp_kernel(X[i:i + 1], Y[i:i + 1])[0, 0] for i in range(len(X))])
    scale = np.linalg.norm(X, axis=1) * np.linalg.norm(Y, axis=1) / (2 * X.shape[1])  # √(K(x, x) K(y, y))
    assert np.max(np.abs(K - reference["relu"]) / scale) <= 1e-14


def test_a_user_function_equal_to_a_built_in_is_that_built_in():
    z = sympy.Symbol("q", real=True)
    assert activation(sympy.erf) is activation("erf")
    assert activation(lambda t: sympy.Max(t, 0)) is activation("relu")
    assert activation(lambda t: t) is activation("linear") and activation(z) is activation("linear")
    assert activation(sympy.tanh(z)) is activation("tanh")
    assert activation(lambda t: t**3).closed_form is not None  # a polynomial: Gaussian moments
    assert activation(lambda t: sympy.log(1 + sympy.exp(t))).closed_form is None  # quadrature


U_NONNEGATIVE = sympy.Symbol("u", nonnegative=True)
BAD = [(3, "int"), (None, "NoneType"), ("softplus", "the string 'softplus'"),
       (lambda x, y: x * y, "2 required arguments"),
       (sympy.Lambda(sympy.symbols("x y"), sympy.Symbol("x") * sympy.Symbol("y")), "2 variables"),
       (sympy.Symbol("x") * sympy.Symbol("y"), "2 symbols"),
       (lambda z: np.tanh(z), "use sympy's"),
       (lambda z: sympy.Symbol("s") * z, "holds s besides its variable"),
       (lambda z: 2, "the constant 2"),
       (sympy.sqrt, "real and finite at real points"),
       (sympy.sign, "jumps"),
       (sympy.Heaviside, "which jumps at z = 0"),
       (lambda z: sympy.Piecewise((z - 1, z < 2), (z, True)), "which jumps at z = 2"),
       (sympy.Abs(sympy.Symbol("z", positive=True)), "sympy takes to be of one sign"),
       (sympy.Lambda(U_NONNEGATIVE, sympy.tanh(U_NONNEGATIVE)), "of one sign"),
       # Max(z, 0) of a positive z is z: sympy makes the Lambda the identity, its variable's sign gone with it
       (sympy.Lambda(sympy.Symbol("z", positive=True), sympy.Max(sympy.Symbol("z", positive=True), 0)),
        "which sympy reduced to the identity: for linear units give activation=\"linear\""),
       (lambda z: sympy.exp(z**2), "grows like exp(2·z²)"),
       (lambda z: sympy.Max(-1, sympy.Min(1, z)) + sympy.Heaviside(z - 2), "which jumps at z = 2"),
       (lambda z: sympy.Piecewise((z, z**2 < 1), (1, True)), "not affine in z"),
       (lambda z: 1 / z, "not integrable at z = 0")]
"""Activations that cannot be: what each refusal must say."""


@pytest.mark.parametrize("spec, says", BAD, ids=[says for _, says in BAD])
def test_a_bad_activation_is_refused_in_one_line_naming_what_is_valid(spec, says):
    with pytest.raises((TypeError, ValueError)) as refused:
        one_hidden_layer(4, 3, activation=spec)
    message = str(refused.value)
    assert "\n" not in message and message.startswith("activation must be 'relu', 'linear', 'erf', 'tanh' or a sympy "
                                                      "function of one variable")
    assert says in message, message


def test_an_erf_network_samples_from_its_posterior():
    """A small erf network through the sampler (4 chains, 200 + 100 draws): Q finite, near its prior σ² scale."""
    X = inputs(P=6)
    y = scipy.special.erf(X @ np.array([0.5, -0.5, 0.2]))
    sampled = sample_order_parameters(one_hidden_layer(4, 3, activation=sympy.erf, readout_variance_total=1.5), X, y,
                                      temperature=0.1, chains=4, warmup=200, draws=100, seed=seeded(5))
    Q = float(sampled.mean("Q"))
    assert np.isfinite(Q) and 0.1 < Q < 15


GENERATED = ["relu", "linear", "erf", "tanh", "hard_tanh"]


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_works(), reason="no working cupy (GPU or stand-in)")
@pytest.mark.parametrize("name", GENERATED)
def test_the_generated_units_run_on_the_device_as_on_the_host(name):
    """Features and VJP from cupy arrays equal numpy's (to 1e-14: cuBLAS and CUDA's special functions round
    differently; the stand-in agrees bit for bit), and stay device arrays."""
    import cupy

    X = inputs()
    network = one_hidden_layer(5, 3, activation=spec(name))
    rng = np.random.default_rng(3)
    Z, dF = rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 6, 5))
    on_device = [network.features(cupy.asarray(Z), cupy.asarray(X)),
                 network.features_vjp(cupy.asarray(Z), cupy.asarray(X), cupy.asarray(dF))]
    assert all(type(array).__module__.split(".")[0] == "cupy" for array in on_device)
    for device, host in zip(on_device, [network.features(Z, X), network.features_vjp(Z, X, dF)]):
        np.testing.assert_allclose(cupy.asnumpy(device), host, rtol=1e-14, atol=1e-14)


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_works(), reason="no working cupy (GPU or stand-in)")
@pytest.mark.parametrize("name", GENERATED)
def test_the_generated_units_never_read_the_device(cupy, host_synchronisations, name):
    """On the strict stand-in: the features and the VJP bring nothing to the host (the raw generated code, without
    the checked evaluator's finiteness tests, runs inside the leapfrog)."""
    network = one_hidden_layer(5, 3, activation=spec(name))
    Z, X, dF = cupy.ones((2, 5, 3)), cupy.ones((6, 3)), cupy.ones((2, 6, 5))
    network.features_vjp(Z, X, dF)
    network.features(Z, X)
    assert host_synchronisations[0] == 0


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_works(), reason="no working cupy (GPU or stand-in)")
def test_an_erf_network_samples_on_the_device():
    X = inputs(P=6)
    y = scipy.special.erf(X @ np.array([0.5, -0.5, 0.2]))
    sampled = sample_order_parameters(one_hidden_layer(4, 3, activation=sympy.erf), X, y, temperature=0.1,
                                      chains=64, warmup=100, draws=50, seed=seeded(5), backend="cupy")
    assert np.isfinite(float(sampled.mean("Q")))
