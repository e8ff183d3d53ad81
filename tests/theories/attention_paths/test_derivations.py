"""The attention-path action: sympy's derivatives are the §2.2 formulas, the GP point is the
entropy's minimum, U_a has the note's closed form, and H = 1 is Li & Sompolinsky's BPKR."""

import mpmath
import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.optimize import brentq

from attnverify.theories.attention_paths import derivations as ap

HEADS = [(1,), (2,), (3,), (1, 1), (2, 1), (1, 2), (2, 2)]


# --- 1, 2: the action and its saddle-point equations --------------------------------------------


@pytest.mark.parametrize("heads", HEADS)
@pytest.mark.parametrize("P", [1, 2])
def test_sympy_derivatives_equal_the_matrix_formulas_exactly(heads, P):
    points = 1 if (heads, P) == ((2, 2), 2) else 2  # (2, 2) with P = 2 costs ~1 s a point
    result = ap.saddle_point_equations_agree(heads, P, points=points, seed=11)
    assert result, result.nonzero
    assert result.equations == len(ap.symbolic_action(heads, P).variables)


@pytest.mark.parametrize("heads, P", [((2,), None), ((1, 1), None), ((2, 1), None), ((1,), 2), ((2,), 1), ((1, 1), 2)])
def test_saddle_point_equations_proved_symbolically(heads, P):
    assert ap.saddle_point_equations_proved(heads, P)


def test_the_identity_test_catches_a_wrong_packing_and_a_missing_factor_two(monkeypatch):
    # the slow-index convention: I_H ⊗ B (h_1 slow) is not B ⊗ I_H
    monkeypatch.setattr(ap.saddle_equations, "kron_identity",  # where the matrix formulas use it
                        lambda h, m: sympy.ImmutableMatrix(sympy.kronecker_product(m, sympy.eye(h))))
    assert not ap.saddle_point_equations_agree((2, 2), 1, points=1)
    monkeypatch.undo()
    monkeypatch.setattr(ap.saddle_equations, "entry_derivatives", lambda G, entries: [G[i, j] for i, j, _ in entries])
    assert not ap.saddle_point_equations_agree((2,), 1, points=1)


def test_action_pieces_for_one_head_one_example():
    sym = ap.symbolic_action((1,), 1)
    (u,) = sym.order_parameters[0]
    c, y = sym.path_kernels[0][0][0, 0], sym.labels[0]
    n0, n1 = sym.widths
    s1, sa = sym.variances
    expected = (sympy.log(u * c + ap.T) + y**2 / (u * c + ap.T)
                + n1 * (ap.U_a / sa - sympy.log(ap.U_a)) + n0 * (u / (s1 * ap.U_a) - sympy.log(u) + sympy.log(ap.U_a)))
    assert sympy.simplify(sym.action - expected) == 0


def test_partial_trace_sums_over_the_slow_index():
    U = sympy.Matrix(4, 4, lambda i, j: sympy.Symbol(f"a{i}{j}"))
    reduced = ap.partial_trace(U, 2)  # flat index h·2 + i
    assert reduced == sympy.Matrix([[U[0, 0] + U[2, 2], U[0, 1] + U[2, 3]], [U[1, 0] + U[3, 2], U[1, 1] + U[3, 3]]])


def test_symbolic_matrices_are_symmetric_and_the_kernel_too():
    sym = ap.symbolic_action((1, 2), 2)
    assert all(U == U.T for U in sym.order_parameters)
    assert sym.kernel == sym.kernel.T
    assert [U.shape for U in sym.order_parameters] == [(2, 2), (2, 2)]


@pytest.mark.parametrize("bad", [(), (0,), (1.5,), "ab", None])
def test_bad_heads_are_refused(bad):
    with pytest.raises((ValueError, TypeError), match="heads"):
        ap.symbolic_action(bad, 1)


# --- 3: the GP limit ---------------------------------------------------------------------------


@pytest.mark.parametrize("heads", HEADS)
def test_gp_point_is_stationary_for_the_entropy(heads):
    assert ap.gp_is_stationary(heads)


@pytest.mark.parametrize("heads", HEADS)
def test_gp_hessian_is_positive_definite_for_all_positive_widths_and_variances(heads):
    # symbolic widths and variances: every LDLᵀ pivot is a rational function sympy proves positive
    assert ap.gp_hessian_is_positive_definite(heads)


@pytest.mark.parametrize("heads", [(3,), (2, 2)])
@pytest.mark.parametrize("seed", [0, 1])
def test_gp_hessian_is_positive_definite_at_rational_widths(heads, seed):
    rng = np.random.default_rng(seed)
    L = len(heads)
    widths = [sympy.Rational(int(rng.integers(1, 200)), int(rng.integers(1, 9))) for _ in range(L + 1)]
    variances = [sympy.Rational(int(rng.integers(1, 50)), int(rng.integers(1, 9))) for _ in range(L + 1)]
    H = ap.entropy_hessian_at_gp(heads, widths, variances)
    assert all(x.is_Rational for x in H)
    assert ap.is_positive_definite(H)
    assert np.linalg.eigvalsh(np.array(H, dtype=float)).min() > 0


def test_positive_definite_test_refuses_an_indefinite_matrix():
    assert not ap.is_positive_definite(sympy.Matrix([[1, 2], [2, 1]]))
    assert not ap.is_positive_definite(sympy.Matrix([[1, 2], [0, 1]]))


def test_gp_order_parameters_are_the_scaled_identities():
    U1, U2, Ua = ap.gp_order_parameters((2, 3), [2.0, 3.0, 5.0])
    assert_allclose(U1, 30.0 * np.eye(6), rtol=0)
    assert_allclose(U2, 15.0 * np.eye(3), rtol=0)
    assert float(Ua) == 5.0
    *Us, Ua = ap.gp_order_parameters((4,), 1.0)
    assert_allclose(Us[0], np.eye(4), rtol=0) and float(Ua) == 1.0
    assert ap.gp_order_parameter_scale(2, 3) == ap.sigma_a2 * ap.variance_symbol(2) * ap.variance_symbol(3)


@pytest.mark.parametrize("prior_var", [[1.0, 1.0], -1.0, [1.0, 0.0, 1.0], float("nan")])
def test_bad_prior_variances_are_refused(prior_var):
    with pytest.raises(ValueError, match="prior_var"):
        ap.gp_order_parameters((2, 2), prior_var)


# --- 4: U_a in closed form ---------------------------------------------------------------------

positive = st.floats(1e-3, 1e3)


def note_formula(t, H, n_prev, n_last, s_last, s_a):
    """The note's U_a = (−b + sqrt(b² + 4g))/2, in 50-digit arithmetic (float64 would cancel for g ≪ b²)."""
    with mpmath.workdps(50):
        t, H, n_prev, n_last, s_last, s_a = map(mpmath.mpf, (t, H, n_prev, n_last, s_last, s_a))
        b = s_a * (H * n_prev / n_last - 1)
        g = t * s_a * n_prev / (n_last * s_last)
        return float((-b + mpmath.sqrt(b**2 + 4 * g)) / 2)


@settings(max_examples=200, deadline=None)
@given(t=positive, H=st.integers(1, 16), n_prev=st.floats(1.0, 1e4), n_last=st.floats(1.0, 1e4), s_last=positive, s_a=positive)
def test_readout_order_parameter_is_the_note_formula(t, H, n_prev, n_last, s_last, s_a):
    value = float(ap.readout_order_parameter(t, H, n_prev, n_last, s_last, s_a))
    # the generated form is cancellation-free on both branches: a few ulps of a sqrt and divisions
    assert value == pytest.approx(note_formula(t, H, n_prev, n_last, s_last, s_a), rel=1e-12)
    assert value > 0


def test_readout_order_parameter_solves_the_stationarity_equation():
    t, H, n1, n2, s2, sa = 2.7, 3, 40.0, 25.0, 0.8, 1.3
    Ua = float(ap.readout_order_parameter(t, H, n1, n2, s2, sa))
    residual = n2 * (1 / sa - 1 / Ua) + n1 * (H / Ua - t / (s2 * Ua**2))
    assert abs(residual) < 1e-12 * (n1 + n2) / Ua


def test_readout_order_parameter_at_equal_widths_and_unit_variances():
    # note §2.1: U_a = [−(H−1) + sqrt((H−1)² + 4 Tr U_L)]/2
    for H, t in [(1, 1.0), (2, 3.0), (4, 0.01)]:
        expected = (-(H - 1) + np.sqrt((H - 1) ** 2 + 4 * t)) / 2
        assert float(ap.readout_order_parameter(t, H, 10, 10, 1, 1)) == pytest.approx(expected, rel=1e-13)


def test_readout_order_parameter_broadcasts():
    out = ap.readout_order_parameter(np.array([1.0, 2.0, 3.0]), 2, 10, 10, 1.0, 1.0)
    assert out.shape == (3,) and np.all(np.diff(out) > 0)


@pytest.mark.parametrize("name, index, value", [("trace_U_L", 0, 0.0), ("heads_last", 1, 0.5), ("width_prev", 2, -1.0),
                                                ("var_readout", 5, float("inf"))])
def test_readout_order_parameter_refuses_bad_arguments(name, index, value):
    args = [1.0, 2, 10.0, 10.0, 1.0, 1.0]
    args[index] = value
    with pytest.raises(ValueError, match=name):
        ap.readout_order_parameter(*args)


# --- evaluators against sympy evalf ------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(values=st.tuples(positive, st.integers(1, 8), st.floats(1.0, 500), st.floats(1.0, 500), positive, positive))
def test_readout_evaluator_matches_sympy_evalf(values):
    expr = ap.readout_expression()
    exact = expr.xreplace(dict(zip(ap.READOUT_ARGUMENTS, map(sympy.Float, values, [30] * 6)))).evalf(30)
    assert float(ap.readout_order_parameter(*values)) == pytest.approx(float(exact), rel=1e-12)


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_bpkr_evaluators_match_sympy_evalf(depth):
    rng = np.random.default_rng(depth)
    for _ in range(5):
        widths = rng.uniform(5, 100, depth + 1)
        variances = rng.uniform(0.2, 3, depth + 1)
        lam, y = rng.uniform(0.1, 2, 4), rng.normal(size=4)
        U, T = rng.uniform(0.1, 5), rng.uniform(0.01, 1)
        mode = ap.bpkr_mode_slope()
        s = sum(float(mode.xreplace({ap.kernel_scale: U, ap.eigenvalue: l, ap.label_projection_sq: yy**2, ap.T: T}).evalf(30))
                for l, yy in zip(lam, y))
        args = dict(zip(ap.bpkr_arguments(depth), [U, s, *widths, *variances]))
        exact = float(ap.bpkr_fixed_point_residual(depth).xreplace(args).evalf(30))
        value = float(ap.bpkr_residual(U, lam, y, T, widths, variances))
        assert value == pytest.approx(exact, rel=1e-12, abs=1e-12 * U)


def test_gp_evaluator_matches_sympy():
    variances = [0.7, 1.9, 2.3]
    *Us, Ua = ap.gp_order_parameters((2, 1), variances)
    subs = dict(zip(ap.variance_symbols(2), variances))
    for level, U in enumerate(Us + [Ua], start=1):
        expected = float(ap.gp_order_parameter_scale(level, 2).xreplace(subs))
        assert_allclose(np.diag(np.atleast_2d(U)), expected, rtol=1e-15)


# --- 5: H = 1 is back-propagating kernel renormalisation ---------------------------------------


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_h1_entropy_is_a_sum_of_bpkr_terms_in_the_ratio_variables(depth):
    assert ap.h1_entropy_is_bpkr(depth)


def test_h1_kernel_is_the_product_of_the_ratios():
    ratios = ap.ratio_substitution(2)
    u1, u2, ua = ap.ratio_symbols(2)
    assert ratios[1] == ap.sigma_a2 * ap.variance_symbol(1) * ap.variance_symbol(2) * u1 * u2 * ua


def test_bpkr_scalar_equation_gives_the_saddle_point_of_the_full_action():
    # H = 1, L = 1, P = 2: solve the scalar equation, rebuild U_a, and check ∂S = 0 in the action
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2, 3))
    K0, Y = X @ X.T / 3, np.array([1.0, -1.0])
    T, widths, variances = 0.05, (7.0, 9.0), (1.3, 0.6)
    lam, phi = np.linalg.eigh(K0)
    proj = phi.T @ Y
    U1 = brentq(lambda U: float(ap.bpkr_residual(U, lam, proj, T, widths, variances)), 1e-8, 1e4, xtol=1e-14, rtol=1e-15)
    s = float(ap.bpkr_energy_slope(U1, lam, proj, T))
    Ua = variances[1] * (1 - s / widths[1])
    assert Ua > 0 and 1 - s / widths[0] > 0
    # U_a also equals the closed form evaluated at Tr U_L = U_1 (L = 1)
    assert Ua == pytest.approx(float(ap.readout_order_parameter(U1, 1, widths[0], widths[1], variances[0], variances[1])), rel=1e-9)
    sym = ap.symbolic_action((1,), 2)
    C = sym.path_kernels[0][0]
    values = {sym.order_parameters[0][0, 0]: U1, sym.readout: Ua, sym.temperature: T,
              **dict(zip(sym.widths, widths)), **dict(zip(sym.variances, variances)),
              **{sym.labels[m]: Y[m] for m in range(2)}, **{C[m, n]: K0[m, n] for m in range(2) for n in range(2)}}
    for d in ap.action_derivatives(sym):
        assert abs(float(d.xreplace(values))) < 1e-8 * max(widths) / min(U1, Ua)


def test_single_layer_zero_temperature_quadratic():
    # L = 0 (one order parameter U): U² − σ²(1−α)U − σ² q/N = 0 is the BPKR residual's root at T = 0
    rng = np.random.default_rng(2)
    P, N, sigma2 = 4, 10.0, 1.7
    X = rng.normal(size=(P, 6))
    K0, Y = X @ X.T / 6, np.sign(rng.normal(size=P))
    q = Y @ np.linalg.solve(K0, Y)
    alpha = P / N
    U = (sigma2 * (1 - alpha) + np.sqrt(sigma2**2 * (1 - alpha) ** 2 + 4 * sigma2 * q / N)) / 2
    lam, phi = np.linalg.eigh(K0)
    assert float(ap.bpkr_residual(U, lam, phi.T @ Y, 0.0, [N], sigma2)) == pytest.approx(0.0, abs=1e-12 * U)
    # and the one-attention-layer network instead gives the cubic w³ − (1−α)w² − q/(Nσ_1²σ_a²) = 0
    s1, sa = 0.9, 1.4
    w = brentq(lambda w: w**3 - (1 - alpha) * w**2 - q / (N * s1 * sa), 1e-6, 100)
    assert float(ap.bpkr_residual(s1 * sa * w**2, lam, phi.T @ Y, 0.0, [N, N], [s1, sa])) == pytest.approx(0.0, abs=1e-11)


def test_h1_derivation_states_the_quadratic_and_the_cubic():
    last = ap.h1_reduction_derivation().steps[-1].expression
    w, q, N, Sig, alpha = sympy.Symbol("w", positive=True), ap.q_symbol, ap.N_symbol, sympy.Symbol("Sigma", positive=True), ap.alpha_symbol
    quadratic, cubic = (e.lhs for e in last)
    assert sympy.expand(quadratic - (w**2 - (1 - alpha) * w - q / (N * Sig))) == 0
    assert sympy.expand(cubic - (w**3 - (1 - alpha) * w**2 - q / (N * Sig))) == 0


# --- 6: the report's derivations --------------------------------------------------------------


def test_every_derivation_builds_and_records_its_steps():
    from attnverify.theories.attention_paths.theory import theory

    import attnverify.theories.attention_paths.generic_claims  # noqa: F401  (as the theory's section imports it)

    derivations = theory.derivation_list()  # registered in the report's order, whatever imported them first
    assert [d.name for d in derivations] == [
        "attention_paths.action", "attention_paths.saddle_point", "attention_paths.gp_limit",
        "attention_paths.readout_order_parameter", "attention_paths.h1_reduction",
        "attention_paths.generic_saddle_point_equations",  # the engine's own, for the action declared on it
    ]
    for derivation in derivations[:-1]:
        assert len(derivation.steps) >= 4
        assert all(step.description for step in derivation.steps)
        assert derivation.source.startswith(ap.SOURCE)
        for step in derivation.steps:
            sympy.latex(step.expression)
    assert len(derivations[-1].steps) >= 2 and all(step.kind == "definition" for step in derivations[-1].steps)


@pytest.mark.parametrize("heads, P", [((1,), 1), ((2,), 2), ((1, 2), 2), ((2, 2), 2)])
def test_generated_action_matches_a_direct_numpy_evaluation(heads, P):
    rng = np.random.default_rng(len(heads) * 10 + P)
    dims, L = ap.dimensions(heads), len(heads)
    X = rng.normal(size=(P, 3, dims[0]))
    C = np.einsum("pia,qib->abpq", X, X) / 3
    Y = rng.normal(size=P)
    Us = [(lambda A: A @ A.T + d * np.eye(d))(rng.normal(size=(d, d))) for d in dims[:-1]]
    Ua, T = 1.7, 0.3
    widths, variances = rng.uniform(5, 50, L + 1), rng.uniform(0.5, 2, L + 1)
    K = np.einsum("ab,abpq->pq", Us[0], C) + T * np.eye(P)
    direct = np.linalg.slogdet(K)[1] + Y @ np.linalg.solve(K, Y) + widths[L] * (Ua / variances[L] - np.log(Ua))
    chain = Us + [np.array([[Ua]])]
    for level in range(1, L + 1):
        H, U, nxt = heads[level - 1], chain[level - 1], chain[level]
        d = nxt.shape[0]
        reduced = np.einsum("hihj->ij", U.reshape(H, d, H, d))
        direct += widths[level - 1] * (np.trace(np.linalg.solve(nxt, reduced)) / variances[level - 1]
                                       - np.linalg.slogdet(U)[1] + H * np.linalg.slogdet(nxt)[1])
    value = ap.evaluate_action(heads, Us, Ua, C, Y, widths=widths, variances=variances, temperature=T)
    assert float(value) == pytest.approx(direct, rel=1e-12)


def test_numeric_functions_take_a_backend_by_name_and_refuse_bad_arguments_by_name():
    """backend='numpy' (a string) is the numpy backend inside the generated code; heads=(2.7,) is refused, not truncated; an action is evaluated only where it is defined."""
    *Us, Ua = ap.gp_order_parameters((2,), 1.0, backend="numpy")
    assert_allclose(Us[0], np.eye(2)) and float(Ua) == 1.0
    assert float(ap.readout_order_parameter(1.0, 2, 10, 10, 1.0, 1.0, backend="numpy")) == pytest.approx(
        float(ap.readout_order_parameter(1.0, 2, 10, 10, 1.0, 1.0)), rel=0)
    with pytest.raises(ValueError, match=r"heads\[0\] must be an integer ≥ 1, got 2.7"):
        ap.gp_order_parameters((2.7,))
    with pytest.raises(TypeError, match="heads_last"):
        ap.readout_order_parameter(1.0, True, 10, 10, 1.0, 1.0)
    args = dict(heads=(1,), order_parameters=[np.array([[1.5]])], readout=0.7, path_kernels=np.full((1, 1, 1, 1), 0.4),
                labels=np.array([1.0]), widths=(3.0, 4.0), variances=(1.0, 0.5), temperature=0.5)
    assert np.isfinite(float(ap.evaluate_action(**args, backend="numpy")))
    with pytest.raises(ValueError, match=r"order_parameters\[0\] must be positive definite"):
        ap.evaluate_action(**(args | {"order_parameters": [np.array([[-1.5]])]}))
    with pytest.raises(ValueError, match="path_kernels must be positive semi-definite"):
        ap.evaluate_action(**(args | {"path_kernels": np.full((1, 1, 1, 1), -0.4)}))
    with pytest.raises(ValueError, match="labels must contain only finite numbers"):
        ap.evaluate_action(**(args | {"labels": np.array([np.nan])}))


def _rational_spd(rng, size: int) -> sympy.Matrix:
    A = sympy.Matrix(size, size, lambda i, j: sympy.Rational(int(rng.integers(-9, 10)), int(rng.integers(1, 7))))
    return A * A.T + sympy.Rational(int(rng.integers(1, 9)), 4) * sympy.eye(size)


@pytest.mark.parametrize("heads, P", [((1,), 2), ((2,), 2), ((1, 2), 1), ((2, 1), 2), ((2, 2), 1)])
def test_exact_hessian_equals_sympys_second_derivatives(heads, P):
    """The engine's second derivatives ∂²S/∂u∂u' of the declared attention-path action (every entry of U_1 … U_L
    and U_a, energy and entropy; ln det and U⁻¹ as Cholesky atoms) against sympy's second derivatives of the
    derivation's symbolic action, exact rationals on the sympy side, at a point where C is the Gram matrix of
    rational path features (so K + T I is positive definite). The engine's S is half the derivation's and divided
    by the largest width. The numeric side is float64 throughout; 1e-10 relative leaves room for its round-off."""
    from attnverify.saddle import data_energy
    from attnverify.saddle.action import NumericAction
    from attnverify.theories.attention_paths import ActionConfig

    rng = np.random.default_rng(sum(heads) * 7 + P)
    sym = ap.symbolic_action(heads, P)
    dims, L, N0 = ap.dimensions(heads), len(heads), 2
    R = lambda: sympy.Rational(int(rng.integers(1, 40)), int(rng.integers(1, 9)))  # noqa: E731
    point = {}
    Us = [_rational_spd(rng, d) for d in dims[:-1]]
    for U, entries in zip(Us, sym.entries):
        point.update({s: U[i, j] for i, j, s in entries})
    point[sym.readout] = R()
    point.update({s: R() for s in sym.parameters})
    features = [[[sympy.Rational(int(rng.integers(-9, 10)), 5) for _ in range(dims[0])] for _ in range(N0)]
                for _ in range(P)]
    C = [[sympy.Matrix(P, P, lambda m, n: sum(features[m][i][a] * features[n][i][b] for i in range(N0)))
          for b in range(dims[0])] for a in range(dims[0])]
    for a in range(dims[0]):
        for b in range(dims[0]):
            point.update({sym.path_kernels[a][b][m, n]: C[a][b][m, n] for m in range(P) for n in range(P)})
    labels = [sympy.Rational(int(rng.integers(-5, 6)), 3) for _ in range(P)]
    point.update({sym.labels[m]: labels[m] for m in range(P)})
    exact = ap.action_hessian_at(sym, point)
    assert all(entry.is_Rational for entry in exact), [e for e in exact if not e.is_Rational][:2]

    config = ActionConfig.build(heads, [float(point[w]) for w in sym.widths], float(point[sym.temperature]),
                                [float(point[v]) for v in sym.variances])
    X = np.array(features, dtype=float)
    declaration = config.action
    energy = data_energy(dict(X=X, y=np.array(labels, dtype=float)), config.temperature, space="kernel")
    action = NumericAction(declaration, energy, declaration.parameter_values(config.parameters()))
    values = {f"U{level}": (float(U[0, 0]) if U.shape == (1, 1) else np.array(U, dtype=float))
              for level, U in enumerate(Us, start=1)}
    values["Ua"] = float(point[sym.readout])
    numeric = 2 * action.scale * action.entries_hessian(action.parametrisation.theta(declaration.join(values)))
    assert_allclose(numeric, np.array(exact, dtype=float), rtol=1e-10, atol=1e-10 * float(max(abs(e) for e in exact)))
