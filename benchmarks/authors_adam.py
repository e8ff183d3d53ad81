"""The authors' saddle-point optimiser as they ran it, as a benchmark baseline (not part of the package).

Tiberi et al.'s code (``LIB_convergent_summation_heads.py``; docs/papers/attention_paths.md §2.1 and §4)
minimises S/max(n) with Adam, lr 0.1, directly on the entries of the order parameters U_1, …, U_L,
started at the GP point, in float64 with torch autograd, with U_a in closed form from Tr U_L, and stops
when max |∂(S/n)/∂U| < 1e-5 (at most 50,000 steps). This module re-implements that loop in torch from the
spec's formulas (no code of theirs is copied); each U_ℓ enters the action symmetrised, (U + Uᵀ)/2.
"""

from __future__ import annotations

import math
import time

import numpy as np


def authors_adam(C: np.ndarray, y: np.ndarray, *, heads, width: float, temperature: float,
                 tolerance: float = 1e-5, learning_rate: float = 0.1, max_steps: int = 50_000):
    """(steps, seconds, final max |∂(S/n)/∂U|, U_1) of Adam on the entries of U from the GP point.

    C: path-path kernels (𝓗, 𝓗, P, P); equal widths n_0 = … = n_L = ``width``; all prior variances 1.
    """
    import torch

    torch.set_default_dtype(torch.float64)
    heads = tuple(int(h) for h in heads)
    L = len(heads)
    dims = [math.prod(heads[level:]) for level in range(L)]
    Ct = torch.as_tensor(C)
    yt = torch.as_tensor(y)
    P = yt.shape[0]
    n = float(width)
    eye = torch.eye(P)
    Us = [torch.eye(d, requires_grad=True) for d in dims]  # the GP point (all σ² = 1)
    optimiser = torch.optim.Adam(Us, lr=learning_rate)

    def action():
        sym = [(U + U.T) / 2 for U in Us]
        K = torch.einsum("ab,abpq->pq", sym[0], Ct) + temperature * eye
        chol = torch.linalg.cholesky(K)
        energy = 2 * torch.log(torch.diagonal(chol)).sum() + yt @ torch.cholesky_solve(yt[:, None], chol)[:, 0]
        trace_last = torch.trace(sym[-1])
        H_L = heads[-1]
        b = H_L - 1.0  # b = σ_a²(H_L n_{L−1}/n_L − 1) with equal widths and unit variances
        U_a = (-b + torch.sqrt(b * b + 4 * trace_last)) / 2
        entropy = n * (U_a - torch.log(U_a))
        chain = sym + [U_a.reshape(1, 1)]
        for level in range(L):
            U, nxt, H = chain[level], chain[level + 1], heads[level]
            rest = U.shape[0] // H
            traced = torch.einsum("hahb->ab", U.reshape(H, rest, H, rest))
            entropy = entropy + n * (torch.trace(torch.linalg.solve(nxt, traced)) - torch.logdet(U)
                                     + H * torch.logdet(nxt))
        return (energy + entropy) / n

    start = time.perf_counter()
    residual = math.inf
    for step in range(1, max_steps + 1):
        optimiser.zero_grad()
        S = action()
        S.backward()
        residual = max(float(U.grad.abs().max()) for U in Us)
        if residual < tolerance:
            break
        optimiser.step()
    seconds = time.perf_counter() - start
    return step, seconds, residual, ((Us[0] + Us[0].T) / 2).detach().numpy()
