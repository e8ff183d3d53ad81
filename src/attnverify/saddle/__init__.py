"""Saddle-point theories of one's own: declare the order parameters and the entropy in sympy, and the tool derives
the saddle-point equations and the Hessian, solves for the minimum (one point, or a grid of widths and temperatures
by continuation, kept in a store) and checks it.

    from attnverify.saddle import SaddlePointAction, positive, solve
    Q = positive("Q")
    N, sigma2 = sympy.symbols("N sigma2", positive=True)
    action = SaddlePointAction(order_parameters={"Q": Q}, entropy=N / 2 * (Q / sigma2 - sympy.log(Q)),
                               kernel="Q", width=N)
    solution = solve(action, dict(C=nngp_kernel, y=y), temperature=0.01, N=100, sigma2=1.0)
"""

from .declaration import OrderParameter, SaddlePointAction, positive, positive_definite
from .matrix_functions import inverse, log_det
from .solve import SaddlePointError, Solution, data_energy, gp_point, solve
from .predict import kernel_alignment, predict
from .beyond import Prediction, posterior_mean
from .priors import wishart_entropy
from .store import SolutionStore
from .sweep import Sweep, sweep

__all__ = ["OrderParameter", "Prediction", "SaddlePointAction", "SaddlePointError", "Solution", "SolutionStore",
           "Sweep", "data_energy", "gp_point", "inverse", "kernel_alignment", "log_det", "positive",
           "positive_definite", "posterior_mean", "predict", "solve", "sweep", "wishart_entropy"]
