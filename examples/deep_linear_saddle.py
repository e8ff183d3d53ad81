"""Two hidden layers of linear units: the kernel renormalised by the first layer's readout norm

f(x) = aᵀ W₂ W₁ x/√(dN), W₁ (N × d), W₂ (N × N) with N(0, 1) entries scaled,
a ~ N(0, σ²/N). Given the upper layers the first layer sees the readout b = W₂ᵀa/√N:
Q₁ = |b|², and Q₂ = |a|² (Li & Sompolinsky 2021):
S = ½ ln det(Q₁K₀ + T) + ½ Yᵀ(Q₁K₀ + T)⁻¹Y +
(N/2)(Q₁/Q₂ − ln(Q₁/Q₂) − 1) + (N/2)(Q₂/σ² − ln(Q₂/σ²) − 1).
"""

import numpy as np
import sympy

from attnverify import Theory, st
from attnverify.saddle import SaddlePointAction, positive, wishart_entropy
from attnverify.saddle.network import Network

theory = Theory("deep_linear", source="Li & Sompolinsky 2021")

Q1, Q2 = positive("Q1"), positive("Q2")
N, sigma2 = sympy.symbols("N sigma2", positive=True)
# Q1 | Q2 ~ (Q2/N)·χ²_N, Q2 ~ (σ²/N)·χ²_N
action = SaddlePointAction(order_parameters={"Q1": Q1, "Q2": Q2},
                           entropy=wishart_entropy(Q1, N, Q2) + wishart_entropy(Q2, N, sigma2),
                           kernel="Q1", width=N, display={"sigma2": "sigma^2"})


def two_layers(N, sigma2, d):
    """Weights Z = (W₁ | W₂) as one (N, d + N) array; the readout a on the second layer's
    N units."""
    def features(Z, X):  # Φ = X W₁ᵀ W₂ᵀ/√(dN): (C, P, N)
        W1, W2 = Z[:, :, :d], Z[:, :, d:]
        return (X[None] @ W1.transpose(0, 2, 1)) @ W2.transpose(0, 2, 1) / np.sqrt(d * N)

    def features_vjp(Z, X, dF):
        W1, W2 = Z[:, :, :d], Z[:, :, d:]
        H = X[None] @ W1.transpose(0, 2, 1)  # (C, P, N)
        dW2 = dF.transpose(0, 2, 1) @ H / np.sqrt(d * N)
        dH = dF @ W2 / np.sqrt(d * N)
        dW1 = dH.transpose(0, 2, 1) @ X[None]
        return np.concatenate([dW1, dW2], axis=2)

    # Q₂ = tr E[aaᵀ], Q₁ = tr(W₂ᵀ E[aaᵀ] W₂)/N
    def order_parameters(Z, second_moment):
        W2 = Z[:, :, d:]
        return {"Q2": second_moment.trace(axis1=1, axis2=2),
                "Q1": (W2.transpose(0, 2, 1) @ second_moment @ W2).trace(axis1=1, axis2=2) / N}

    return Network(features, features_vjp, (N, d + N), sigma2 / N, order_parameters)


@theory.saddle_point(action, N=st.integers(20, 40), sigma2=st.floats(0.5, 2),
                     temperature=st.floats(0.05, 0.5), P=st.integers(10, 30), d=st.integers(2, 5),
                     network=two_layers)
def teacher(rng, P, d):
    """P Gaussian inputs in d dimensions, a noisy linear teacher."""
    X = rng.standard_normal((P, d))
    y = 2 * (X @ rng.standard_normal(d) / np.sqrt(d)) + 0.3 * rng.standard_normal(P)
    return dict(C=X @ X.T / d, y=y, inputs=X)
