"""Single-location regression (Marion, Berthier, Biau, Boyer, ICLR 2025): the theory as one object, in the form a
theorist's own file has.

``theory`` is the `attnverify.Theory` the package's modules register on, as a user's file does (the form
is described in `attnverify.theories`).
"""

from __future__ import annotations

from ...theory_form import Theory

SOURCE = "Marion, Berthier, Biau, Boyer (ICLR 2025)"

INTRODUCTION = """\
**Model.** A sequence X = (X_1, …, X_L) of L tokens in ℝ^d hides one informative token at a uniformly random \
position J0: X_J0 ~ N(√(d/2)·k*, γ²I_d), the others X_ℓ ~ N(0, I_d), and the label is \
Y = ⟨X_J0, v*⟩ + ε·ξ with orthonormal k*, v*. The predictor is a simplified attention layer, \
T_λ^{k,v}(X) = Σ_ℓ erf(λ⟨X_ℓ, k⟩)·⟨X_ℓ, v⟩, with k, v on the unit sphere and an inverse temperature λ. \
Its population risk ℛ = E[(Y − T)²] depends on (k, v) only through the five overlaps \
κ = ⟨k,k*⟩, ν = ⟨v,v*⟩, θ = ⟨v,k*⟩, η = ⟨k,v*⟩, ρ = ⟨k,v⟩; the oracle is T* = T_λ^{k*,v*} \
(κ = ν = 1, θ = η = ρ = 0), and M = {θ = η = ρ = 0} is the manifold on which the training dynamics is analysed.

**Derivations below.** The risk in the overlaps is derived symbolically: the informative token is written in \
Gaussian coordinates, the Gaussians other than the key coordinate g_k are integrated out by their moments, \
and the expectation over g_k is taken by conditioning on it and Stein's lemma, from the closed forms of \
E erf(a + bZ) and ζ(a, b) = E erf(a + bZ)²; the L − 1 uninformative tokens contribute through their first two \
moments. The gradient in the overlaps is sympy's derivative of that expression, and array evaluators \
(numpy/cupy, and mpmath for extended precision) are generated from the expressions — the figures use these \
evaluators, not hand-written formulas. The oracle risk (Theorem 1) is the substitution κ = ν = 1, θ = η = ρ = 0; \
the best linear risk (Proposition 3) follows from the second moments of u_ℓ = ⟨X_ℓ, v*⟩.

**Conventions.** Every risk includes the noise ε² (the authors' code logs ℛ − ε², called excess risk here); \
γ² = 1/2 and ε = 0.1 as in the paper's experiments. Monte Carlo risks use the exact reduction of each token \
to its coordinates on span{k*, v*, k, v}, so their cost does not grow with d; population gradient descent runs \
exactly in four dimensions. Error bars are ± 2 standard errors.
"""

theory = Theory("single_location", title="Single-location regression (Marion, Berthier, Biau, Boyer, ICLR 2025)", introduction=INTRODUCTION, source=SOURCE)
