"""The attention-path action (:mod:`.action`, every width N) as a saddle-point theory of one's own, given the
claims every declared theory gets (:meth:`attnverify.Theory.saddle_point`): the minimum, the generated derivatives
against finite differences, the 1/N approach to the GP point, the two symmetries of relabelling the heads of a
layer (a relabelling of the paths: U_1 → Π U_1 Πᵀ, and U_2 → π U_2 πᵀ for the second layer's heads), and, with the
attention network itself (:func:`.collapsed.attention_network`: V^(0) integrated out, the heads' values sampled),
its gradient against finite differences and sampled networks against the action's own posterior mean of U_1, U_2
and U_a (the next order of the Laplace expansion, with its stated error).
"""

from __future__ import annotations

import numpy as np

from ...checks import st
from .action import attention_paths_action
from .collapsed import attention_network
from .posterior import PathLayers
from .synthetic import synthetic_problem
from .theory import SOURCE, theory

HEADS, EXAMPLES, TOKENS, INPUT_WIDTH = (2, 2), 40, 4, 5

# paths packed h1-major: path (h1, h2) is 2·h1 + h2
FIRST_LAYER_SWAP, SECOND_LAYER_SWAP = [2, 3, 0, 1], [1, 0, 3, 2]


def _relabel(paths: list[int], second_layer: bool):
    def data_map(data: dict) -> dict:
        return {**data, "X": np.asarray(data["X"])[:, :, paths]}

    def order_map(order: dict) -> dict:
        P = np.eye(4)[paths]
        out = {**order, "U1": P @ order["U1"] @ P.T}
        if second_layer:
            out["U2"] = order["U2"][::-1, ::-1]
        return out

    return data_map, order_map


def network(N, sigma1, sigma2, sigma_a):
    """The two-layer, two-head attention network of width N whose action is declared below."""
    return attention_network(PathLayers(heads=HEADS, width=N, input_width=INPUT_WIDTH,
                                        prior_var=(sigma1, sigma2, sigma_a)))


@theory.saddle_point(attention_paths_action(HEADS, equal_widths=True), name="generic",
                     source=f"{SOURCE}; §2.1 declared in sympy", network=network,
                     N=st.integers(6, 16), sigma1=st.floats(0.5, 2.0), sigma2=st.floats(0.5, 2.0),
                     sigma_a=st.floats(0.5, 2.0), temperature=st.floats(0.01, 1.0), seed=st.integers(0, 2**16),
                     symmetries={"first_layer_head_relabelling": _relabel(FIRST_LAYER_SWAP, False),
                                 "second_layer_head_relabelling": _relabel(SECOND_LAYER_SWAP, True)})
def synthetic_tokens(rng, seed):
    """40 random token sequences (4 tokens of width 5) through random heads, labelled by a teacher path; the
    network reads the same path features."""
    X, y = synthetic_problem(EXAMPLES, heads=HEADS, input_width=INPUT_WIDTH, tokens=TOKENS, seed=seed)
    return dict(X=X, y=y, inputs=X)
