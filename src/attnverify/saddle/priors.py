"""Entropy terms a theory builds its 𝓛 from: the large-deviation function of a Gaussian weight's squared norm.

A readout (or a layer's effective readout) of N i.i.d. Gaussian entries whose variance is V/N, for a scalar V, or N
i.i.d. vectors with covariance V/N for a matrix V, has the squared norm U = Σ_i a_i a_iᵀ Wishart with N degrees of
freedom and mean V. Its density is ∝ det(U)^{(N−n−1)/2} exp(−(N/2) tr(V⁻¹U)) / det(V)^{N/2}, so at the saddle
point (keeping the O(N) terms; the (n + 1)/2·ln det U left out is the O(1/N) the sampled-network budget covers)

    −ln p(U) ≈ (N/2) [tr(V⁻¹U) − ln det(V⁻¹U) − n]   (n = 1 for a scalar),

up to a constant; with the −n it is zero at U = V, its minimum (Li & Sompolinsky 2021). V may be a parameter (σ²)
or another order parameter (a deeper layer's: the chain of a deep network).
"""

from __future__ import annotations

import sympy

from .matrix_functions import inverse, is_matrix_order_parameter, log_det


def wishart_entropy(U, width, mean) -> sympy.Expr:
    r"""$(N/2)\big[\operatorname{tr}(V^{-1}U) - \ln\det(V^{-1}U) - n\big]$ for an order parameter $U$ (a
    [`positive`][attnverify.saddle.positive] scalar or a [`positive_definite`][attnverify.saddle.positive_definite]
    matrix), the width $N$ and the prior mean $V$ (a scalar expression, or a matrix of $U$'s size): the module
    docstring's saddle-point entropy of a Gaussian weight's squared norm. $\ln\det$ and $V^{-1}$ of matrix order
    parameters are the solver's Cholesky atoms ([`log_det`][attnverify.saddle.log_det],
    [`inverse`][attnverify.saddle.inverse]), so the entropy stays small for any $n$."""
    if not isinstance(mean, sympy.MatrixBase):
        if getattr(mean, "ndim", 0) or isinstance(mean, (list, tuple)):  # a numpy array or a nested list
            mean = sympy.ImmutableMatrix(mean)
        else:
            try:
                mean = sympy.sympify(mean, strict=True)
            except sympy.SympifyError:
                raise TypeError(f"mean must be a scalar expression or a sympy matrix, got {mean!r}"[:200]) from None
    width = sympy.sympify(width)
    if width.is_positive is False:
        raise ValueError(f"width must be positive (the number of the weight's entries), got {width}")
    if not isinstance(mean, sympy.MatrixBase) and mean.is_positive is False:
        raise ValueError(f"mean must be positive (a variance), got {mean}")
    entries = list(mean) if isinstance(mean, sympy.MatrixBase) else [mean]
    if any(entry.has(sympy.nan, sympy.oo, -sympy.oo, sympy.zoo) for entry in entries):
        raise ValueError(f"mean must be finite, got {mean}"[:200])
    if isinstance(mean, sympy.MatrixBase) and all(entry.is_number for entry in mean) and mean == mean.T:
        lowest = min(float(sympy.re(value)) for value in sympy.Matrix(mean).evalf().eigenvals())
        if lowest <= 0:
            raise ValueError(f"mean must be positive definite (a covariance), got {mean.tolist()} with eigenvalue "
                             f"{lowest:.3g}"[:200])
    if isinstance(U, sympy.MatrixBase):
        n = U.shape[0]
        if isinstance(mean, sympy.MatrixBase):
            if mean.shape != U.shape:
                raise ValueError(f"mean must be a scalar or a {n} × {n} matrix like U, got shape {mean.shape}")
            if mean != mean.T:
                raise ValueError(f"mean must be symmetric (a Wishart mean is a covariance), got {mean.tolist()}"[:200])
            if is_matrix_order_parameter(mean):
                V_inverse, log_det_V = inverse(mean), log_det(mean)
            elif mean.is_diagonal():
                V_inverse = sympy.diag(*[1 / mean[i, i] for i in range(n)])
                log_det_V = sum(sympy.log(mean[i, i]) for i in range(n))
            else:
                V_inverse, log_det_V = sympy.Matrix(mean).inv(), sympy.log(sympy.Matrix(mean).det())
        else:
            V_inverse, log_det_V = sympy.eye(n) / mean, n * sympy.log(mean)
        return width / 2 * ((V_inverse * U).trace() - log_det(U) + log_det_V - n)
    if isinstance(mean, sympy.MatrixBase):
        raise ValueError("a scalar order parameter takes a scalar mean")
    return width / 2 * (U / mean - sympy.log(U) + sympy.log(mean) - 1)
