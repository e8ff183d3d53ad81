"""One hidden layer of erf units: its NNGP kernel renormalised by one scalar, judged at \
the theory's own precision

The action of relu_saddle.py with erf units, K(Q) = Q·K₀ and K₀ the arcsine kernel of erf
(Williams 1997), at a small input dimension (N = 20, P = 20, d = 3, T = 0.05, σ² = 1). The
one-scalar renormalisation rests on a Gaussian equivalence of the hidden features; networks sampled
from the posterior (erf units, ``activation=sympy.erf``) are compared with the action's own
posterior mean of Q (quadrature), within 5 MCSE plus the quadrature's error, and refute it here:
Q = 2.917 ± 0.002 sampled (8 chains × 2,000 draws) against the prediction 2.705 (saddle 2.694).
"""

import numpy as np
import sympy

from attnverify import Theory, st
from attnverify.saddle import SaddlePointAction, positive
from attnverify.saddle.network import nngp_kernel, one_hidden_layer

theory = Theory("erf_renormalisation",
                source="Pacelli et al. 2023, arXiv 2209.04882; Williams 1997 (erf kernel)")

Q = positive("Q")
N, sigma2 = sympy.symbols("N sigma2", positive=True)
action = SaddlePointAction(order_parameters={"Q": Q}, entropy=N / 2 * (Q / sigma2 - sympy.log(Q)),
                           kernel="Q", width=N, display={"sigma2": "sigma^2"})


@theory.saddle_point(action, N=st.just(20), sigma2=st.just(1.0), temperature=st.just(0.05),
                     P=st.just(20), d=st.just(3), seed=st.just(0),
                     network=lambda N, sigma2, d: one_hidden_layer(N, d,
                                                                   readout_variance_total=sigma2,
                                                                   activation=sympy.erf),
                     expect={"sampled_networks_match_theory": "refuted"})
def teacher(rng, P, d, seed):
    """P Gaussian inputs in d dimensions, labelled by a centred ReLU teacher (drawn from
    ``seed``)."""
    draw = np.random.default_rng(seed)
    X = draw.standard_normal((P, d))
    y = 3 * np.maximum(X @ draw.standard_normal(d) / np.sqrt(d), 0.0) - 1.2
    # the erf NNGP kernel; the raw inputs
    return dict(C=nngp_kernel(X, activation="erf"), y=y, inputs=X)
