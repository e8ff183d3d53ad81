"""6. The report's derivations of attention paths, with their steps.

Part of `attnverify.theories.attention_paths.derivations` (see its docstring for the spec and sources).
"""

from __future__ import annotations

import sympy
from sympy import Determinant, Eq, Identity, Inverse, KroneckerProduct, MatrixSymbol, Symbol, Trace, log

from ..theory import theory

from ._common import SOURCE, T, U_a, partial_trace, sigma_a2, variance_symbol, width_symbol
from .action import symbolic_action
from .saddle_equations import formula_derivatives, random_rational_point
from .gp_limit import entropy_hessian_at_gp, gp_order_parameter_scale, gp_point


@theory.derivation(name="action", title="The action S = E + 𝓛 of the attention-path order parameters",
                   source=f"{SOURCE}; note §1.2, §2.1, §2.6 (compute_loss_action, compute_entropy_action)")
def action_derivation(step) -> None:
    P_, D, Dn, H = (Symbol(n, positive=True, integer=True) for n in ("P", "D_ell", "D_ell+1", "H_ell"))
    paths = Symbol("𝓗", positive=True, integer=True)
    mu, nu, pi, pi2 = sympy.symbols("mu nu pi pi'", integer=True)
    Kb, Ub, Cb = sympy.IndexedBase("K"), sympy.IndexedBase("U"), sympy.IndexedBase("C")
    step(
        "Renormalised kernel from the order parameter U ≡ U_1 and the path-path kernels (§1.2)",
        Eq(Kb[mu, nu], sympy.Sum(Ub[pi, pi2] * Cb[pi, pi2, mu, nu], (pi, 1, paths), (pi2, 1, paths))),
        kind="definition",
    )
    K = MatrixSymbol("K", P_, P_)
    Y = MatrixSymbol("Y", P_, 1)
    G = K + T * Identity(P_)
    step(
        "Energy: twice the Gaussian negative log-likelihood of Y once f is integrated (the trace is of a 1×1 matrix)",
        Eq(Symbol("E"), log(Determinant(G)) + Trace(Y.T * Inverse(G) * Y)),
        kind="definition",
    )
    Ul, Un = MatrixSymbol("U_ell", D, D), MatrixSymbol("U_ell+1", Dn, Dn)
    nprev, sl = Symbol("n_ell-1", positive=True), Symbol("sigma_ell^2", positive=True)
    wishart = nprev * (Trace(Inverse(sl * KroneckerProduct(Identity(H), Un)) * Ul) - log(Determinant(Ul))
                       + H * log(Determinant(Un)))
    step(
        "Entropy, layer ℓ (§2.6): given U_{ℓ+1}, U_ℓ is Wishart(n_{ℓ−1}, σ_ℓ² I_{H_ℓ} ⊗ U_{ℓ+1}); −2 ln p to leading "
        "order, ln det(σ_ℓ² I ⊗ U_{ℓ+1}) = D_ℓ ln σ_ℓ² + H_ℓ ln det U_{ℓ+1} without its constant",
        Eq(Symbol("𝓛_ell"), wishart),
        kind="definition",
    )
    B = MatrixSymbol(r"\mathrm{Tr}_{h_\ell} U_\ell", Dn, Dn)
    step(
        "I_{H_ℓ} ⊗ B is block-diagonal in the slow index h_ℓ, so the trace only sees the diagonal blocks",
        Eq(Trace(KroneckerProduct(Identity(H), Inverse(Un)) * Ul), Trace(Inverse(Un) * B)),
        kind="definition",  # of the partial trace Tr_h: Tr((I ⊗ B)U) = Tr(B Tr_h U) for every B
    )
    U1, U2 = MatrixSymbol("U_1", Symbol("D_1"), Symbol("D_1")), MatrixSymbol("U_2", Symbol("D_2"), Symbol("D_2"))
    B1 = MatrixSymbol(r"\mathrm{Tr}_{h_1} U_1", Symbol("D_2"), Symbol("D_2"))
    n0, n1, n2, s1, s2 = width_symbol(0), width_symbol(1), width_symbol(2), variance_symbol(1), variance_symbol(2)
    H1, H2 = Symbol("H_1", positive=True), Symbol("H_2", positive=True)
    S2 = (log(Determinant(G)) + Trace(Y.T * Inverse(G) * Y)
          + n2 * (U_a / sigma_a2 - log(U_a))
          + n1 * (Trace(U2) / (s2 * U_a) - log(Determinant(U2)) + H2 * log(U_a))
          + n0 * (Trace(Inverse(U2) * B1) / s1 - log(Determinant(U1)) + H1 * log(Determinant(U2))))
    step("The whole action for L = 2 (the experiments' depth), U_3 ≡ U_a", Eq(Symbol("S"), S2),
         kind="definition")
    sym = symbolic_action((2, 1), 2)
    U1x, U2x = sym.order_parameters
    explicit = {K: sym.kernel, Y: sym.labels, U1: U1x, U2: U2x, B1: partial_trace(U1x, 2), H1: 2, H2: 1, P_: 2,
                Symbol("D_1"): 2, Symbol("D_2"): 1}
    step("In explicit symbols, e.g. L = 2, H = (2, 1), P = 2 (as built by symbolic_action): U_1, U_2 symmetric "
         "matrices of symbols, K = Σ_{ππ'} (U_1)_{ππ'} C_{ππ'}", Eq(Symbol("S"), sym.action), substitute=explicit)


def _directional(expression: sympy.Expr, matrix: MatrixSymbol, direction: MatrixSymbol) -> sympy.Expr:
    """d/dε expression(matrix + ε·direction) at ε = 0."""
    epsilon = Symbol("epsilon", real=True)
    return sympy.Subs(sympy.Derivative(expression.xreplace({matrix: matrix + epsilon * direction}), epsilon),
                      epsilon, 0)


def _layer_gradient() -> tuple[MatrixSymbol, sympy.Expr, dict]:
    """G_ℓ for 2 ≤ ℓ ≤ L (note §2.2) and its symbols: U_ℓ (D_ℓ × D_ℓ), U_{ℓ+1} (D_{ℓ+1} × D_{ℓ+1}), the partial
    trace B = Tr_{h_{ℓ−1}} U_{ℓ−1}, the widths, variances and heads."""
    D2, D3 = (Symbol(n, positive=True, integer=True) for n in ("D_ell", "D_ell+1"))
    names = {
        "Ul": MatrixSymbol("U_ell", D2, D2), "Un": MatrixSymbol("U_ell+1", D3, D3),
        "B": MatrixSymbol(r"\mathrm{Tr}_{h_{\ell-1}} U_{\ell-1}", D2, D2),
        "nl1": Symbol("n_ell-1", positive=True), "nl2": Symbol("n_ell-2", positive=True),
        "sl": Symbol("sigma_ell^2", positive=True), "slm": Symbol("sigma_ell-1^2", positive=True),
        "Hl": Symbol("H_ell", positive=True), "Hlm": Symbol("H_ell-1", positive=True),
    }
    n = names
    formula = (n["nl1"] * (KroneckerProduct(Identity(n["Hl"]), Inverse(n["Un"])) / n["sl"] - Inverse(n["Ul"]))
               + n["nl2"] * (n["Hlm"] * Inverse(n["Ul"]) - Inverse(n["Ul"]) * n["B"] * Inverse(n["Ul"]) / n["slm"]))
    return MatrixSymbol("G_ell", D2, D2), formula, names


@theory.derivation(name="saddle_point", title="Saddle-point equations: matrix formulas equal sympy's derivatives",
                   source=f"{SOURCE}; note §2.2")
def saddle_point_derivation(step) -> None:
    D1, D3, P_ = (Symbol(n, positive=True, integer=True) for n in ("D_1", "D_ell+1", "P"))
    H = Symbol("H_1", positive=True)
    X, dX, B = MatrixSymbol("X", D1, D1), MatrixSymbol("dX", D1, D1), MatrixSymbol("B", D1, D1)
    step(
        "Differentials used, along a direction dX: d ln det X = Tr(X^{-1} dX), d X^{-1} = −X^{-1} dX X^{-1}, "
        "d Tr(X B) = Tr(B dX)",
        sympy.Tuple(Eq(_directional(log(Determinant(X)), X, dX), Trace(Inverse(X) * dX), evaluate=False),
                    Eq(_directional(Inverse(X), X, dX), -Inverse(X) * dX * Inverse(X), evaluate=False),
                    Eq(_directional(Trace(X * B), X, dX), Trace(B * dX), evaluate=False)),
    )
    K, Y = MatrixSymbol("K", P_, P_), MatrixSymbol("Y", P_, 1)
    A, Cpp = MatrixSymbol("A", P_, P_), MatrixSymbol("C_pipi'", P_, P_)
    Cqp = MatrixSymbol("C_pi'pi", P_, P_)
    r = MatrixSymbol("r", P_, 1)
    M_entry = Symbol("M_pipi'")
    energy = log(Determinant(K + T * Identity(P_))) + Trace(Y.T * Inverse(K + T * Identity(P_)) * Y)
    step(
        "The energy's gradient M: for a symmetric U the entry U_ππ' = U_π'π moves K by C_ππ' + C_π'π, and M_ππ' is "
        "half the derivative of E along it; A = (K + T I)^{-1}, r = A Y",
        sympy.Tuple(Eq(A, Inverse(K + T * Identity(P_))), Eq(r, A * Y),
                    Eq(M_entry, _directional(energy, K, Cpp + Cqp) / 2)),
        kind="definition",
    )
    step(
        "Energy: dE = Tr(A dK) − rᵀ dK r; symmetrised over (π, π')",
        Eq(M_entry, (Trace(A * Cpp) - Trace(r.T * Cpp * r) + Trace(A * Cqp) - Trace(r.T * Cqp * r)) / 2),
    )
    U1, U2 = MatrixSymbol("U_1", D1, D1), MatrixSymbol("U_2", D3, D3)
    M = MatrixSymbol("M", D1, D1)
    n0, s1 = width_symbol(0), variance_symbol(1)
    G1 = n0 / s1 * KroneckerProduct(Identity(H), Inverse(U2)) - n0 * Inverse(U1) + M
    layer1 = n0 * (Trace(KroneckerProduct(Identity(H), Inverse(U2)) * U1) / s1 - log(Determinant(U1)))
    step(
        "G_ℓ = ∂S/∂U_ℓ (dS = Σ_ℓ Tr(G_ℓ dU_ℓ)), layer 1: the terms of S holding U_1 are the energy (its gradient M) "
        "and n_0[Tr((I_{H_1} ⊗ U_2^{-1})U_1)/σ_1² − ln det U_1]; along a direction X, "
        "G_1 = (n_0/σ_1²)(I ⊗ U_2^{-1}) − n_0 U_1^{-1} + M",
        Eq(_directional(layer1, U1, X) + Trace(M * X), Trace(G1 * X), evaluate=False),
    )
    G_ell, formula, n = _layer_gradient()
    Xl = MatrixSymbol("X", n["Ul"].shape[0], n["Ul"].shape[0])
    layer_terms = (n["nl1"] * (Trace(KroneckerProduct(Identity(n["Hl"]), Inverse(n["Un"])) * n["Ul"]) / n["sl"]
                               - log(Determinant(n["Ul"])))
                   + n["nl2"] * (Trace(Inverse(n["Ul"]) * n["B"]) / n["slm"] + n["Hlm"] * log(Determinant(n["Ul"]))))
    step(
        "Layer 2 ≤ ℓ ≤ L: U_ℓ sits in the ℓ-th term as the variable and in the (ℓ−1)-th as the covariance, there as "
        "n_{ℓ−2}[Tr(U_ℓ^{-1} Tr_{h_{ℓ−1}}U_{ℓ−1})/σ_{ℓ−1}² + H_{ℓ−1} ln det U_ℓ]; along a direction X, G_ℓ is",
        Eq(_directional(layer_terms, n["Ul"], Xl), Trace(formula * Xl), evaluate=False),
    )
    nL, nL1, sL, HL = width_symbol(Symbol("L")), Symbol("n_L-1", positive=True), Symbol("sigma_L^2", positive=True), Symbol("H_L", positive=True)
    trace_L = Symbol("Tr U_L", positive=True)
    readout_terms = nL * (U_a / sigma_a2 - log(U_a)) + nL1 * (HL * log(U_a) + trace_L / (sL * U_a))
    step(
        "Readout: the terms of S holding U_a are n_L(U_a/σ_a² − ln U_a) and n_{L−1}(H_L ln U_a + Tr U_L/(σ_L² U_a))",
        Eq(sympy.Derivative(readout_terms, U_a), nL * (1 / sigma_a2 - 1 / U_a) + nL1 * (HL / U_a - trace_L / (sL * U_a**2))),
    )
    G = MatrixSymbol("G", 2, 2)
    unit = {(i, j): sympy.ImmutableMatrix(2, 2, lambda a, b: int((a, b) == (i, j))) for i in range(2) for j in range(2)}
    step(
        "For a symmetric U with independent entries u_ij (i ≤ j), dU = E_ij + E_ji: ∂S/∂u_ii = G_ii and "
        "∂S/∂u_ij = Tr(G(E_ij + E_ji)) = G_ij + G_ji = 2G_ij (shown for 2 × 2)",
        Eq(sympy.Tuple(Trace(G * unit[0, 0]), Trace(G * (unit[0, 1] + unit[1, 0])), Trace(G * unit[1, 1])),
           sympy.Tuple(G[0, 0], G[0, 1] + G[1, 0], G[1, 1])),
    )
    heads, P = (2, 1), 2
    sym = symbolic_action(heads, P)
    entropy, action = Symbol("𝓛"), Symbol("S")
    step(
        f"𝓛 and S = E + 𝓛 for heads {heads}, P = {P} in explicit symbols (symbolic_action; checked against the "
        "general action in attention_paths.action)",
        sympy.Tuple(Eq(entropy, sym.entropy), Eq(action, sym.action)), kind="assumption",
    )
    formulas = formula_derivatives(sym, include_energy=False)
    step(
        f"sympy's ∂𝓛/∂v against the formulas above (entropy part, G_ij + G_ji off the diagonal), for v in "
        f"{[str(v) for v in sym.variables]}",
        Eq(sympy.Tuple(*(sympy.Derivative(entropy, v) for v in sym.variables)), sympy.Tuple(*formulas)),
    )
    point = random_rational_point(sym, seed=(0, 0))
    at_point = formula_derivatives(sym, point)
    step(
        f"With the energy: exact rational identity test (Schwartz–Zippel) at a random positive-definite point, "
        f"{len(at_point)} equations; the test suite runs (1,), (2,), (3,), (1,1), (2,1), (1,2), (2,2)",
        Eq(sympy.Tuple(*(sympy.Derivative(action, v) for v in sym.variables)), sympy.Tuple(*at_point)),
        substitute=point,
    )


@theory.derivation(name="gp_limit", title="GP limit: the entropy's minimiser",
                   source=f"{SOURCE}; note §3 (set_order_parameters_gp)")
def gp_derivation(step) -> None:
    L = Symbol("L", positive=True, integer=True)
    k, ell = Symbol("k", integer=True), Symbol("ell", integer=True)
    step(
        "At α → 0 the energy is negligible: minimise 𝓛 alone. Candidate (§3)",
        sympy.Tuple(Eq(U_a, sigma_a2),
                    Eq(Symbol("U_ell"), sigma_a2 * sympy.Product(Symbol("sigma_k^2"), (k, ell, L)) * Symbol("I_{D_ell}"))),
        kind="assumption",  # the ansatz; the steps below show it is the minimiser
    )
    G_ell, formula, n = _layer_gradient()
    step("The gradient of layer 2 ≤ ℓ ≤ L (derivation attention_paths.saddle_point)", Eq(G_ell, formula),
         kind="assumption")
    Hl = n["Hl"]
    step(
        "Then U_ℓ = σ_ℓ² I ⊗ U_{ℓ+1}: each Wishart sits at its mean, so in G_ℓ the n_{ℓ−1} bracket vanishes, "
        "and Tr_{h_{ℓ−1}} U_{ℓ−1} = H_{ℓ−1} σ_{ℓ−1}² U_ℓ cancels the n_{ℓ−2} bracket",
        Eq(G_ell, sympy.ZeroMatrix(*G_ell.shape)),
        substitute={n["Ul"]: n["sl"] * KroneckerProduct(Identity(Hl), n["Un"]),
                    n["B"]: n["Hlm"] * n["slm"] * n["sl"] * KroneckerProduct(Identity(Hl), n["Un"]),
                    n["Ul"].shape[0]: Hl * n["Un"].shape[0]},
    )
    heads = (2, 1)
    sym = symbolic_action(heads, 1)
    hessian_sym = symbolic_action((1,), 1)
    entropy, entropy_1 = Symbol("𝓛"), Symbol("𝓛_{(1)}")
    step(
        f"𝓛 for heads {heads} and (1,) in explicit symbols, symbolic widths and variances (symbolic_action; checked "
        "against the general action in attention_paths.action)",
        sympy.Tuple(Eq(entropy, sym.entropy), Eq(entropy_1, hessian_sym.entropy)), kind="assumption",
    )
    point = gp_point(sym)
    step(
        f"sympy, heads {heads}, symbolic widths and variances: every ∂𝓛/∂v at the GP point",
        Eq(sympy.Tuple(*(sympy.Derivative(entropy, v) for v in sym.variables)),
           sympy.Tuple(*([0] * len(sym.variables)))),
        substitute=point,
    )
    hessian = entropy_hessian_at_gp((1,))
    variables = hessian_sym.variables
    step("Hessian of 𝓛 at the GP point, heads (1,) (variables U_1, U_a)",
         Eq(sympy.ImmutableMatrix(len(variables), len(variables),
                                  lambda i, j: sympy.Derivative(entropy_1, variables[i], variables[j])), hessian,
            evaluate=False),
         substitute=gp_point(hessian_sym))
    minors = [sympy.factor(hessian[:m, :m].det()) for m in range(1, hessian.shape[0] + 1)]
    step(
        "Leading principal minors: products of positive symbols, so positive definite (Sylvester); larger heads are "
        "checked exactly at rational widths in the tests",
        Eq(sympy.Tuple(*(Determinant(sympy.ImmutableMatrix(hessian[:m, :m])) for m in range(1, hessian.shape[0] + 1))),
           sympy.Tuple(*minors)),
    )
    pi, pi2 = Symbol("pi", integer=True), Symbol("pi'", integer=True)
    paths = Symbol("𝓗", positive=True, integer=True)
    Ub, Cb = sympy.IndexedBase("U"), sympy.IndexedBase("C")
    scale = gp_order_parameter_scale(1, 2)
    step(
        "GP kernel K = Σ_{ππ'} U_ππ' C_ππ' at U_1 = σ_1²σ_2²σ_a² I: cross-path kernels drop out, same-path kernels "
        "weigh equally",
        Eq(sympy.Sum(Ub[pi, pi2] * Cb[pi, pi2], (pi, 1, paths), (pi2, 1, paths)),
           scale * sympy.Sum(Cb[pi, pi], (pi, 1, paths))),
        substitute={Ub[pi, pi2]: scale * sympy.KroneckerDelta(pi, pi2)},
    )

