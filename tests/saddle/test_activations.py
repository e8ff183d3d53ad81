"""Activations as sympy functions (attnverify.saddle.activations): the generated features and vector–Jacobian product
against the activation and finite differences, the NNGP kernel of each built-in against Monte Carlo over the weights,
its closed forms against the quadrature and the checked derivation, erf against neural-tangents, the cupy path on the
strict stand-in, and bad activations refused in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.special
import sympy
from seeds import seeded

from attnverify.base.backend import cupy_works
from attnverify.saddle import activations
from attnverify.saddle.activations import activation, closed_form_kernel, kernel_derivation, kernel_quadrature
from attnverify.saddle.claims import against_differences
from attnverify.saddle.network import CollapsedNetworkPosterior, nngp_kernel, one_hidden_layer, sample_order_parameters

REFERENCE = Path(__file__).parent / "data" / "neural_tangents_nngp.npz"

HARD_TANH = sympy.Lambda(sympy.Symbol("x"), sympy.Piecewise((-1, sympy.Symbol("x") < -1),
                                                             (sympy.Symbol("x"), sympy.Symbol("x") < 1), (1, True)))
"""A user's function with kinks away from 0 (the quadrature cuts its rays and sectors there)."""

USER = {"cube": lambda z: z**3, "softplus": lambda z: sympy.log(1 + sympy.exp(z)), "hard_tanh": HARD_TANH}
"""User functions of one variable: a polynomial (closed form by Gaussian moments), a smooth one and a kinked one
(by quadrature)."""

REFERENCE_VALUES = {"relu": lambda u: np.maximum(u, 0.0), "linear": lambda u: u, "erf": scipy.special.erf,
                    "tanh": np.tanh, "cube": lambda u: u**3, "softplus": lambda u: np.log1p(np.exp(u)),
                    "hard_tanh": lambda u: np.clip(u, -1.0, 1.0)}
"""Each activation written by hand in numpy, to hold the generated code to."""


def _spec(name):
    return USER.get(name, name)


def _inputs(P=6, d=3, seed=0):
    X = np.random.default_rng(seed).standard_normal((P, d))
    return X * np.array([0.3, 0.7, 1.0, 1.5, 2.0, 3.0])[:P, None]  # norms from ~0.5 to ~5


@pytest.mark.parametrize("name", sorted(REFERENCE_VALUES))
def test_generated_features_are_the_activation_and_their_vjp_equals_finite_differences(name):
    """Φ = φ(XZᵀ/√d) against φ written in numpy (to 1e-13: softplus is generated as log(eˣ + 1), not log1p), and
    the generated VJP (dΦ ⊙ φ'(XZᵀ/√d))ᵀX/√d against central differences of ⟨dΦ, Φ(Z)⟩ within 10× the
    differences' own error at steps h, h/2, h/4 plus round-off (the project's rule for generated gradients)."""
    X = _inputs()
    network = one_hidden_layer(5, 3, activation=_spec(name))
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
    X = _inputs(P=6)
    y = np.tanh(X @ np.array([1.0, -0.5, 0.3]))
    posterior = CollapsedNetworkPosterior(one_hidden_layer(5, 3, activation=_spec(name)), X, y, 0.1)
    x = np.random.default_rng(1).standard_normal((1, posterior.size))
    potential, gradient = posterior.potential_and_gradient(x)
    ratio = against_differences(gradient[0], lambda t: posterior.potential_and_gradient(t[None])[0][0], x[0],
                                 max(abs(float(potential[0])), 1.0))
    assert ratio <= 1.0


def test_relu_and_linear_units_keep_their_features_and_vjp_bit_for_bit():
    """The generated code reproduces the hand-written units it replaced: ReLU's features as u·(u > 0) (equal values;
    the sign of a zero may differ) and its VJP (dΦ ⊙ (u > 0))ᵀX/√d bit for bit; linear units are the preactivations
    themselves, and their VJP multiplies by no slope."""
    X, d = _inputs(), 3
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
    X = _inputs()
    K = nngp_kernel(X, activation=name)
    w = np.random.default_rng(seeded(11)).standard_normal((3, 200_000)) / np.sqrt(3)
    units = REFERENCE_VALUES[name](X @ w)
    rows, cols = np.triu_indices(len(X))
    products = units[rows] * units[cols]
    mean, error = products.mean(axis=1), products.std(axis=1) / np.sqrt(products.shape[1])
    assert np.all(np.abs(mean - K[rows, cols]) <= 5 * error), np.max(np.abs(mean - K[rows, cols]) / error)


GRID = dict(a=np.array([0.0, 1e-3, 0.2, 1.0, 3.0, 25.0]), b=np.array([0.5, 1.0, 4.0]),
            r=np.array([-1.0, -0.8, -0.3, 0.0, 1e-6, 0.5, 0.99, 1.0]))
"""Variances |x|²/d, |y|²/d and correlations cos θ, the ends included (x = 0, x ∥ ±y)."""


@pytest.mark.parametrize("name", ["relu", "linear", "erf", pytest.param("cube", marks=pytest.mark.thorough)])
def test_closed_forms_equal_the_quadrature_over_sectors(name):
    """The closed form (arc-cosine, x·y/d, arcsine, Gaussian moments of z³) against the float64 quadrature of
    E[φ(u)φ(v)] over sectors, on the grid: within the quadrature's own error estimate plus 4 ulps of the scale, and
    that estimate within 1e-12 of E|φ(u)φ(v)| (measured: agreement ≤ 4e-15 of it)."""
    a, b, r = np.meshgrid(GRID["a"], GRID["b"], GRID["r"], indexing="ij")
    a, b, r = a.ravel(), b.ravel(), r.ravel()
    values, errors, sizes = kernel_quadrature(_spec(name), a, b, r)
    closed = closed_form_kernel(_spec(name), a, b, r)
    scale = 4 * np.finfo(float).eps * sizes
    assert np.all(np.abs(values - closed) <= errors + scale), np.max(np.abs(values - closed) - errors)
    assert np.all(errors <= 1e-12 * sizes)


@pytest.mark.parametrize("name", ["relu", "linear", "erf", "cube"])
def test_each_closed_form_is_a_checked_step_from_the_gaussian_expectation(name):
    """The derivation states K as the Expectation over z₁, z₂ (a definition) and every later step is checked by the
    project's checker (symbolically, or at random points in 30 digits against the engine's quadrature)."""
    derivation = kernel_derivation(activation(_spec(name)))
    outcomes = [check.outcome for check in derivation.checks()]
    assert outcomes[0] == "definition" and len(outcomes) >= 2
    assert all(outcome in ("symbolic", "numeric") for outcome in outcomes[1:]), outcomes


@pytest.mark.thorough
def test_the_quadrature_of_tanh_equals_the_expectation_engine():
    """No closed form for tanh: the float64 quadrature against the project's Expectation (nested tanh-sinh in mpmath,
    about 25 s at one point), within the quadrature's error estimate (measured 8e-16 apart)."""
    unit = activation("tanh")
    expectation = kernel_derivation(unit).steps[0].expression.rhs
    a, b, r = 2.99, 1.9, 0.776
    value, error, _ = kernel_quadrature(unit, a, b, r)
    point = {activations.A: sympy.Float(a, 30), activations.B: sympy.Float(b, 30),
             activations.THETA: sympy.acos(sympy.Float(r, 30))}
    exact, exact_error = expectation.estimate_at(point, 53)
    assert abs(float(exact) - value[0]) <= error[0] + float(exact_error)


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
    assert activation(sympy.Lambda(z, z)) is activation("linear")
    assert activation(sympy.tanh(z)) is activation("tanh")
    assert activation(lambda t: t**3).closed_form is not None  # a polynomial: Gaussian moments
    assert activation(lambda t: sympy.log(1 + sympy.exp(t))).closed_form is None  # quadrature


def test_kernels_by_quadrature_are_symmetric_and_agree_between_their_two_calls():
    """K(X) by its upper triangle, mirrored, against K(X, X) pair by pair, where (x, y) and (y, x) are integrated
    with u and v's roles swapped: the same to 1e-13 (round-off)."""
    X = _inputs(P=4)
    K = nngp_kernel(X, activation=HARD_TANH)
    assert np.array_equal(K, K.T)
    np.testing.assert_allclose(K, nngp_kernel(X, X.copy(), activation=HARD_TANH), rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("spec, symmetric", [("tanh", True), ("erf", True), (lambda z: z**3, True),
                                             (lambda z: sympy.tanh(z) + z / 4, True), (lambda z: sympy.Abs(z), True),
                                             (lambda z: sympy.cosh(z / 3), True), ("relu", False),
                                             (USER["softplus"], False), (lambda z: sympy.tanh(z + 1), False)])
def test_half_the_circle_serves_an_odd_or_even_activation_as_the_whole(spec, symmetric):
    """φ odd or even: φ(−u)φ(−v) = φ(u)φ(v), so the integrand has period π in ψ and half the circle, twice weighted, is
    the whole integral. Both on the same grid (|z|'s kink at 0 on a sector's edge): within the whole circle's error
    estimate plus 8 ulps of E|φφ| (measured: ≤ 0.18 of the estimate, 2.7e-15 of E|φφ|). Neither odd nor even: the
    whole circle."""
    unit = activation(spec)
    assert activations._flip_symmetric(unit) is symmetric
    if not symmetric:
        return
    a, b, r = (v.ravel() for v in np.meshgrid(GRID["a"], GRID["b"], GRID["r"], indexing="ij"))
    phi, points = (lambda u: activations._unit_code(unit.expression, False)(u)[0]), activations.kinks(unit)
    with np.errstate(all="ignore"):
        whole, size, _ = activations._sector_sums(phi, points, a, b, r, activations.RULE, False)
        half = activations._sector_sums(phi, points, a, b, r, activations.RULE, True)[0]
    _, errors, _ = kernel_quadrature(unit, a, b, r)
    assert np.all(np.abs(half - whole) <= errors + 8 * np.finfo(float).eps * size)


def test_nested_max_and_min_are_one_piecewise_with_its_kinks():
    """Hard tanh written Max(−1, Min(1, z)): its kinks at ±1 are found (the rays are cut there) and its kernel is the
    Piecewise form's, bit for bit; the clipped ReLU Min(Max(z, 0), 1) has its kink at 1 (0 is every sector's edge)."""
    nested = activation(lambda z: sympy.Max(-1, sympy.Min(1, z)))
    assert activations.kinks(nested) == (-1.0, 1.0)
    assert activations.kinks(activation(lambda z: sympy.Min(sympy.Max(z, 0), 1))) == (1.0,)
    X = 2 * _inputs(P=4)
    assert np.array_equal(nngp_kernel(X, activation=nested), nngp_kernel(X, activation=HARD_TANH))


def test_the_quadrature_tells_its_progress_in_pairs():
    """Told at every twentieth of the chunks, the last line naming every pair; a progress that is no function is
    refused by name before any work."""
    lines = []
    nngp_kernel(_inputs(P=4), activation="tanh", progress=lines.append)
    assert lines and lines[-1].endswith("10 of 10 pairs")
    with pytest.raises(TypeError, match="^progress must be a function"):
        nngp_kernel(_inputs(P=4), activation="tanh", progress="yes")


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


@pytest.mark.parametrize("activation, scale", [("relu", 1e200), ("tanh", 1e200), (lambda z: z**3, 1e150),
                                               (lambda z: z**3 + sympy.tanh(z), 1e150)])
def test_inputs_whose_kernel_overflows_are_refused_by_name(activation, scale):
    """|x|²/d or the kernel itself beyond float64 (z³'s E[u³v³] ~ |x|⁶ at |x| ~ 10¹⁵⁰, by its closed form or by the
    quadrature): one line naming X, not a matrix of ±inf or a message about an internal argument."""
    X = scale * np.ones((3, 2))
    with pytest.raises(ValueError, match=r"^X is too large"):
        nngp_kernel(X, activation=activation)


@pytest.mark.parametrize("a, b, r, says", [([1.0], [1.0], [2.0], "r must be finite and in [-1, 1], got 2.0"),
                                           ([-1.0], [1.0], [0.5], "a must be finite and in [0, inf), got -1.0"),
                                           ([1.0], [np.nan], [0.5], "b must be finite and in [0, inf), got nan"),
                                           ([1.0, 2.0], [1.0, 2.0, 3.0], [0.5], "must be numbers or arrays of one")])
def test_the_kernel_quadrature_refuses_points_outside_its_domain(a, b, r, says):
    with pytest.raises(ValueError) as refused:
        kernel_quadrature("tanh", a, b, r)
    assert says in str(refused.value)


def test_a_kernel_the_quadrature_cannot_resolve_is_refused_by_name():
    """|z² − 1| bends at ±1 where no affine switch says so (the rays are not cut there), and exp(z² sin² z) grows
    past every Gaussian where sympy finds no limit: the quadrature's error estimate refuses both, by name."""
    X = np.array([[1.0, 0.5], [0.3, -2.0]])
    for spec in (lambda z: sympy.Abs(z**2 - 1), lambda z: sympy.exp(z**2 * sympy.sin(z)**2)):
        with pytest.raises(ValueError, match=r"^activation .*: the quadrature of its kernel at x_0, y_1 .* 1e-10"):
            nngp_kernel(X, activation=spec)


def test_an_erf_network_samples_from_its_posterior():
    """A small erf network through the sampler (4 chains, 200 + 100 draws): Q finite, near its prior σ² scale."""
    X = _inputs(P=6)
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

    X = _inputs()
    network = one_hidden_layer(5, 3, activation=_spec(name))
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
    network = one_hidden_layer(5, 3, activation=_spec(name))
    Z, X, dF = cupy.ones((2, 5, 3)), cupy.ones((6, 3)), cupy.ones((2, 6, 5))
    network.features_vjp(Z, X, dF)
    network.features(Z, X)
    assert host_synchronisations[0] == 0


@pytest.mark.gpu
@pytest.mark.skipif(not cupy_works(), reason="no working cupy (GPU or stand-in)")
def test_an_erf_network_samples_on_the_device():
    X = _inputs(P=6)
    y = scipy.special.erf(X @ np.array([0.5, -0.5, 0.2]))
    sampled = sample_order_parameters(one_hidden_layer(4, 3, activation=sympy.erf), X, y, temperature=0.1,
                                      chains=64, warmup=100, draws=50, seed=seeded(5), backend="cupy")
    assert np.isfinite(float(sampled.mean("Q")))
