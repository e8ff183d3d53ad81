"""One hidden layer of ReLUs: its NNGP kernel renormalised by one scalar

At finite width N the posterior of a one-hidden-layer network with a linear readout sees the NNGP (arc-cosine)
kernel K₀ scaled by one order parameter Q (Pacelli et al. 2023, arXiv 2209.04882): the kernel renormalisation
K(Q) = Q·K₀, with the action S(Q) = ½ ln det(QK₀ + T·I) + ½ Yᵀ(QK₀ + T·I)⁻¹Y + (N/2)(Q/σ² − ln Q).
"""

import numpy as np
import sympy

from attnverify import Theory, st
from attnverify.saddle import SaddlePointAction, positive

theory = Theory("relu_renormalisation", source="Pacelli et al. 2023, arXiv 2209.04882")

Q = positive("Q")
N, sigma2 = sympy.symbols("N sigma2", positive=True)
action = SaddlePointAction(order_parameters={"Q": Q}, entropy=N / 2 * (Q / sigma2 - sympy.log(Q)),
                           kernel="Q", width=N)


def arc_cosine(X, Y):
    """E_w[relu(w·x) relu(w·y)] for w ~ N(0, I/d): the arc-cosine kernel of order 1 (Cho & Saul 2009)."""
    norms = np.outer(np.linalg.norm(X, axis=1), np.linalg.norm(Y, axis=1))
    cos = np.clip(X @ Y.T / norms, -1.0, 1.0)
    angle = np.arccos(cos)
    return norms * (np.sin(angle) + (np.pi - angle) * cos) / (2 * np.pi * X.shape[1])


@theory.saddle_point(action, N=st.floats(5, 500), sigma2=st.floats(0.5, 2), temperature=st.floats(0.01, 1),
                     P=st.integers(10, 60), d=st.integers(2, 20))
def teacher(rng, P, d):
    """P Gaussian inputs in d dimensions, labelled by a centred ReLU teacher."""
    X = rng.standard_normal((P, d))
    y = np.maximum(X @ rng.standard_normal(d) / np.sqrt(d), 0.0) - 0.4
    return dict(C=arc_cosine(X, X), y=y)
