"""Attention as a conditional mean (Zhang, Liu, Cai, Wang, Wang, 2022): the theory as one object, in the form a
theorist's own file has.

``theory`` is the `attnverify.Theory` the package's modules register on, as a user's file does (the form
is described in `attnverify.theories`).
"""

from __future__ import annotations

from ...theory_form import Theory

SOURCE = "Zhang, Liu, Cai, Wang, Wang (2022), arXiv 2212.14852; reconstruction in docs/papers/conditional_mean.md"

INTRODUCTION = """\
**Model.** Tokens are exchangeable given a latent z (the abstract's premise: positional encodings make \
them so), so any permutation-invariant summary of the sequence — a latent posterior, an attention output \
— is a function of the empirical token measure. Attention with score aᵀk_ℓ (a = Wq) is the self-normalised \
estimator Σ_ℓ e^{aᵀk_ℓ}v_ℓ / Σ_ℓ e^{aᵀk_ℓ} of E[v e^{aᵀk}]/E[e^{aᵀk}] (a Nadaraya–Watson estimator). \
The paper's body could not be recovered; its statements are followed through the reconstruction in \
`docs/papers/conditional_mean.md`, and every constant shown here is derived below, not taken from the paper.

**Derivations below.** (i) The self-normalised ratio is expanded in 1/L to second order: \
E‖attn − m∞‖² = C/L + D/L² and E[attn − m∞] = B/L + B₂/L², in moments of the weights under tilted key laws. \
(ii) For Gaussian keys with linear values the tilted law is N(μ + tΣa, Σ), so m∞ = A(μ + Σa) + b, the desired \
parameter a = Σ⁻¹(q − μ) makes the limit E[v | k = q], and C, D, B, B₂ are closed forms in aᵀΣa, ‖AΣa‖², \
tr(AΣAᵀ), σ². (iii) With a fixed RBF bandwidth h on a sine conditional mean the limit is m_h(q) ≠ sin(ωq). \
(iv) The latent posteriors of three models: conjugate Gaussian (a function of (L, x̄)), finite latent (exactly \
a softmax attention), linear-Gaussian (ridge / conditional-mean-embedding attention). The claims check each \
closed form against quadrature or exact conditioning, and the Monte Carlo claims use z = 5 standard errors \
plus the last derived term of the expansion as the bias budget.
"""

theory = Theory("conditional_mean", title="Attention as a conditional mean (Zhang, Liu, Cai, Wang, Wang, 2022)", introduction=INTRODUCTION, source=SOURCE)
