"""Activations of a user's own, as the tests of `attnverify.saddle.activations` and `.nngp_quadrature` give them,
and inputs of varied norms."""

from __future__ import annotations

import numpy as np
import sympy

HARD_TANH = sympy.Lambda(sympy.Symbol("x"), sympy.Piecewise((-1, sympy.Symbol("x") < -1),
                                                             (sympy.Symbol("x"), sympy.Symbol("x") < 1), (1, True)))
"""A user's function with kinks away from 0 (the quadrature cuts its rays and sectors there)."""

USER = {"cube": lambda z: z**3, "softplus": lambda z: sympy.log(1 + sympy.exp(z)), "hard_tanh": HARD_TANH}
"""User functions of one variable: a polynomial (closed form by Gaussian moments), a smooth one and a kinked one
(by quadrature)."""


def spec(name):
    """The activation named: a user's function of `USER`, else the built-in name itself."""
    return USER.get(name, name)


def inputs(P=6, d=3, seed=0):
    """P inputs in d dimensions with norms from ~0.5 to ~5."""
    X = np.random.default_rng(seed).standard_normal((P, d))
    return X * np.array([0.3, 0.7, 1.0, 1.5, 2.0, 3.0])[:P, None]
