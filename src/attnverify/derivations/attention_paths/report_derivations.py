"""6. The report's derivations of attention paths, with their steps.

Part of :mod:`attnverify.derivations.attention_paths` (see its docstring for the spec and sources).
"""

from __future__ import annotations

import sympy
from sympy import Determinant, Eq, Identity, Inverse, KroneckerProduct, MatrixSymbol, Symbol, Trace, log

from ..derivation import Derivation, DerivationRecorder
from ..kept import kept_derivation

from ._common import SOURCE, T, U_a, sigma_a2, variance_symbol, width_symbol
from .action import symbolic_action
from .saddle_equations import action_derivatives, saddle_point_equations_agree, saddle_point_equations_proved
from .gp_limit import entropy_hessian_at_gp, gp_order_parameter_scale, gp_point
from .readout import readout_derivation
from .single_head import h1_reduction_derivation


@kept_derivation
def action_derivation() -> Derivation:
    rec = DerivationRecorder(
        "attention_paths.action",
        "The action S = E + 𝓛 of the attention-path order parameters",
        f"{SOURCE}; note §1.2, §2.1, §2.6 (compute_loss_action, compute_entropy_action)",
    )
    P_, D, Dn, H = (Symbol(n, positive=True, integer=True) for n in ("P", "D_ell", "D_ell+1", "H_ell"))
    paths = Symbol("𝓗", positive=True, integer=True)
    mu, nu, pi, pi2 = sympy.symbols("mu nu pi pi'", integer=True)
    Kb, Ub, Cb = sympy.IndexedBase("K"), sympy.IndexedBase("U"), sympy.IndexedBase("C")
    rec.step(
        "Renormalised kernel from the order parameter U ≡ U_1 and the path-path kernels (§1.2)",
        Eq(Kb[mu, nu], sympy.Sum(Ub[pi, pi2] * Cb[pi, pi2, mu, nu], (pi, 1, paths), (pi2, 1, paths))),
        kind="definition",
    )
    K = MatrixSymbol("K", P_, P_)
    Y = MatrixSymbol("Y", P_, 1)
    G = K + T * Identity(P_)
    rec.step(
        "Energy: twice the Gaussian negative log-likelihood of Y once f is integrated (the trace is of a 1×1 matrix)",
        Eq(Symbol("E"), log(Determinant(G)) + Trace(Y.T * Inverse(G) * Y)),
        kind="definition",
    )
    Ul, Un = MatrixSymbol("U_ell", D, D), MatrixSymbol("U_ell+1", Dn, Dn)
    nprev, sl = Symbol("n_ell-1", positive=True), Symbol("sigma_ell^2", positive=True)
    wishart = nprev * (Trace(Inverse(sl * KroneckerProduct(Identity(H), Un)) * Ul) - log(Determinant(Ul))
                       + H * log(Determinant(Un)))
    rec.step(
        "Entropy, layer ℓ (§2.6): given U_{ℓ+1}, U_ℓ is Wishart(n_{ℓ−1}, σ_ℓ² I_{H_ℓ} ⊗ U_{ℓ+1}); −2 ln p to leading "
        "order, ln det(σ_ℓ² I ⊗ U_{ℓ+1}) = D_ℓ ln σ_ℓ² + H_ℓ ln det U_{ℓ+1} without its constant",
        Eq(Symbol("𝓛_ell"), wishart),
        kind="definition",
    )
    B = MatrixSymbol(r"\mathrm{Tr}_{h_\ell} U_\ell", Dn, Dn)
    rec.step(
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
    rec.step("The whole action for L = 2 (the experiments' depth), U_3 ≡ U_a", Eq(Symbol("S"), S2),
             kind="definition")
    sym = symbolic_action((2,), 1)
    rec.step("In explicit symbols, e.g. L = 1, H_1 = 2, P = 1 (as built by symbolic_action)", Eq(Symbol("S"), sym.action))
    return rec.finish()


@kept_derivation
def saddle_point_derivation() -> Derivation:
    rec = DerivationRecorder(
        "attention_paths.saddle_point",
        "Saddle-point equations: matrix formulas equal sympy's derivatives",
        f"{SOURCE}; note §2.2",
    )
    D1, D2, D3, P_ = (Symbol(n, positive=True, integer=True) for n in ("D_1", "D_ell", "D_ell+1", "P"))
    H = Symbol("H_1", positive=True)
    X = MatrixSymbol("X", D1, D1)
    dX = MatrixSymbol("dX", D1, D1)
    rec.step(
        "Differentials used: d ln det X = Tr(X^{-1} dX), d X^{-1} = −X^{-1} dX X^{-1}, d Tr(X B) = Tr(B dX)",
        sympy.Tuple(Eq(Symbol("d ln det X"), Trace(Inverse(X) * dX)),
                    Eq(MatrixSymbol("d(X^{-1})", D1, D1), -Inverse(X) * dX * Inverse(X))),
        kind="assumption",  # matrix calculus, quoted
    )
    A, Cpp = MatrixSymbol("A", P_, P_), MatrixSymbol("C_pipi'", P_, P_)
    Cqp = MatrixSymbol("C_pi'pi", P_, P_)
    r = MatrixSymbol("r", P_, 1)
    rec.step(
        "Energy: dE = Tr(A dK) − rᵀ dK r with A = (K + T I)^{-1}, r = A Y; symmetrised over (π, π')",
        Eq(Symbol("M_pipi'"), (Trace(A * Cpp) - Trace(r.T * Cpp * r) + Trace(A * Cqp) - Trace(r.T * Cqp * r)) / 2),
    )
    U1, U2 = MatrixSymbol("U_1", D1, D1), MatrixSymbol("U_2", D3, D3)
    M = MatrixSymbol("M", D1, D1)
    n0, s1 = width_symbol(0), variance_symbol(1)
    rec.step(
        "G_ℓ = ∂S/∂U_ℓ (dS = Σ_ℓ Tr(G_ℓ dU_ℓ)), layer 1",
        Eq(MatrixSymbol("G_1", D1, D1), n0 / s1 * KroneckerProduct(Identity(H), Inverse(U2)) - n0 * Inverse(U1) + M),
    )
    Ul, Un = MatrixSymbol("U_ell", D2, D2), MatrixSymbol("U_ell+1", D3, D3)
    Bp = MatrixSymbol(r"\mathrm{Tr}_{h_{\ell-1}} U_{\ell-1}", D2, D2)
    nl1, nl2 = Symbol("n_ell-1", positive=True), Symbol("n_ell-2", positive=True)
    sl, slm = Symbol("sigma_ell^2", positive=True), Symbol("sigma_ell-1^2", positive=True)
    Hl, Hlm = Symbol("H_ell", positive=True), Symbol("H_ell-1", positive=True)
    rec.step(
        "Layer 2 ≤ ℓ ≤ L (U_ℓ sits in the ℓ-th term as the variable and in the (ℓ−1)-th as the covariance)",
        Eq(MatrixSymbol("G_ell", D2, D2),
           nl1 * (KroneckerProduct(Identity(Hl), Inverse(Un)) / sl - Inverse(Ul))
           + nl2 * (Hlm * Inverse(Ul) - Inverse(Ul) * Bp * Inverse(Ul) / slm)),
    )
    nL, nL1, sL, HL = width_symbol(Symbol("L")), Symbol("n_L-1", positive=True), Symbol("sigma_L^2", positive=True), Symbol("H_L", positive=True)
    UL = MatrixSymbol("U_L", Symbol("D_L"), Symbol("D_L"))
    rec.step(
        "Readout",
        Eq(Symbol("G_a"), nL * (1 / sigma_a2 - 1 / U_a) + nL1 * (HL / U_a - Trace(UL) / (sL * U_a**2))),
    )
    rec.step(
        "For a symmetric U with independent entries u_ij (i ≤ j): ∂S/∂u_ii = G_ii and ∂S/∂u_ij = G_ij + G_ji = 2G_ij",
        Eq(Symbol("∂S/∂u_ij"), Symbol("G_ij") + Symbol("G_ji")),
    )
    proof = saddle_point_equations_proved((2,))
    sym = symbolic_action((2,), 1)
    rec.step(
        f"sympy, heads (2,), entropy part: cancel(diff(𝓛, v) − formula) for v in {[str(v) for v in sym.variables]} "
        f"({'all zero' if proof else 'NOT all zero'})",
        sympy.Tuple(*([0] * proof.equations if proof else [r for _, r in proof.nonzero])),
    )
    check = saddle_point_equations_agree((2, 1), 2, points=1)
    rec.step(
        f"Exact rational identity test (Schwartz–Zippel), heads (2, 1), P = 2: {check.equations} equations, "
        f"difference {'exactly 0' if check else 'NONZERO'} at a random positive-definite point; the test suite runs "
        "(1,), (2,), (3,), (1,1), (2,1), (1,2), (2,2)",
        Eq(Symbol("max |diff − formula|"), 0 if check else Symbol("nonzero")),
    )
    return rec.finish()


@kept_derivation
def gp_derivation() -> Derivation:
    rec = DerivationRecorder(
        "attention_paths.gp_limit",
        "GP limit: the entropy's minimiser",
        f"{SOURCE}; note §3 (set_order_parameters_gp)",
    )
    L = Symbol("L", positive=True, integer=True)
    k, ell = Symbol("k", integer=True), Symbol("ell", integer=True)
    rec.step(
        "At α → 0 the energy is negligible: minimise 𝓛 alone. Candidate (§3)",
        sympy.Tuple(Eq(U_a, sigma_a2),
                    Eq(Symbol("U_ell"), sigma_a2 * sympy.Product(Symbol("sigma_k^2"), (k, ell, L)) * Symbol("I_{D_ell}"))),
        kind="assumption",  # the ansatz; the steps below show it is the minimiser
    )
    rec.step(
        "Then U_ℓ = σ_ℓ² I ⊗ U_{ℓ+1}: each Wishart sits at its mean, so in G_ℓ the n_{ℓ−1} bracket vanishes, "
        "and Tr_{h_{ℓ−1}} U_{ℓ−1} = H_{ℓ−1} σ_{ℓ−1}² U_ℓ cancels the n_{ℓ−2} bracket",
        Eq(Symbol("G_ell"), 0),
    )
    heads = (2, 1)
    sym = symbolic_action(heads, 1)
    point = gp_point(sym)
    grads = [sympy.cancel(d.xreplace(point)) for d in action_derivatives(sym, include_energy=False)]
    rec.step(
        f"sympy, heads {heads}, symbolic widths and variances: every ∂𝓛/∂v at the GP point",
        sympy.Tuple(*grads),
    )
    hessian = entropy_hessian_at_gp((1,))
    rec.step("Hessian of 𝓛 at the GP point, heads (1,) (variables U_1, U_a)", hessian)
    minors = [sympy.factor(hessian[:m, :m].det()) for m in range(1, hessian.shape[0] + 1)]
    rec.step(
        "Leading principal minors: products of positive symbols, so positive definite (Sylvester); larger heads are "
        "checked exactly at rational widths in the tests",
        sympy.Tuple(*minors),
    )
    rec.step(
        "GP kernel: cross-path kernels drop out, same-path kernels weigh equally",
        Eq(Symbol("K_GP"), gp_order_parameter_scale(1, 2) * sympy.Sum(sympy.IndexedBase("C")[Symbol("pi"), Symbol("pi")],
                                                                    (Symbol("pi"), 1, Symbol("𝓗")))),
    )
    return rec.finish()


def derivations() -> list[Derivation]:
    """Every derivation of this theory, for the report."""
    return [action_derivation(), saddle_point_derivation(), gp_derivation(), readout_derivation(),
            h1_reduction_derivation()]
