"""One hidden layer of linear units: the kernel renormalised by one scalar

A network f(x) = Σᵢ aᵢ wᵢ·x / √N with N hidden linear units, Gaussian priors and a
Gaussian likelihood at temperature T has, at large N and P, a posterior that sees the input
kernel K₀ = XXᵀ/d scaled by one order parameter Q (Li & Sompolinsky 2021):
S(Q) = ½ ln det(QK₀ + T·I) + ½ Yᵀ(QK₀ + T·I)⁻¹Y + (N/2)(Q/σ² − ln Q).
"""
import numpy as np
import sympy
from attnverify import Theory, st
from attnverify.saddle import SaddlePointAction, positive
from attnverify.saddle.network import one_hidden_layer

theory = Theory("linear_network", source="Li & Sompolinsky 2021, Phys. Rev. X 11, 031059")

Q = positive("Q")
N, sigma2 = sympy.symbols("N sigma2", positive=True)
action = SaddlePointAction(order_parameters={"Q": Q}, entropy=N / 2 * (Q / sigma2 - sympy.log(Q)),
                           kernel="Q", width=N, display={"sigma2": "sigma^2"})


def teacher(rng, P, d, seed, scale):
    """P Gaussian inputs in d dimensions, labelled by a linear teacher of size ``scale`` (drawn
    from ``seed``)."""
    draw = np.random.default_rng(seed)
    X = draw.standard_normal((P, d))
    y = scale * X @ draw.standard_normal(d) / np.sqrt(d)
    # the input kernel; the raw inputs, for sampled networks
    return dict(C=X @ X.T / d, y=y, inputs=X)


def network(N, sigma2, d):
    return one_hidden_layer(N, d, activation="linear", readout_variance_total=sigma2)


# the solver's claims, on drawn widths, temperatures and data
theory.saddle_point(action, N=st.integers(20, 80), sigma2=st.floats(0.5, 2),
                    temperature=st.floats(0.05, 0.5), P=st.integers(10, 30), d=st.integers(2, 10),
                    seed=st.integers(0, 2**16), scale=st.floats(0.5, 3))(teacher)

# sampled networks at one setting where the labels move Q well away from its GP value σ²
SETTING = dict(N=20, sigma2=1.0, temperature=0.05, P=20, d=3, seed=0, scale=3.0)
AT = {name: st.just(value) for name, value in SETTING.items()}
theory.saddle_point(action, name="networks", network=network, figure={**SETTING, "N": (10, 20, 40)},
                    **AT)(teacher)

# the same theory with the entropy's ½ dropped: sampled networks must refute it
without_half = SaddlePointAction(order_parameters={"Q": Q}, entropy=N * (Q / sigma2 - sympy.log(Q)),
                                 kernel="Q", width=N, display={"sigma2": "sigma^2"})
theory.saddle_point(without_half, name="without_half", network=network,
                    expect={"sampled_networks_match_theory": "refuted"}, **AT)(teacher)
