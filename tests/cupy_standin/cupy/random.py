"""``cupy.random`` of the stand-in: ``default_rng`` gives a :class:`Generator` with cupy's methods only, drawing
a stream that differs from numpy's for the same seed (as cuRAND's does)."""

from __future__ import annotations

import numpy as _np

from . import _unwrap, _wrap

_OFFSET = 0x5EED_C0DE  # the stand-in's stream is numpy's for seed ^ _OFFSET: never numpy's own for the same seed


class Generator:
    """cupy's ``random.Generator``: these methods and no others."""

    def __init__(self, seed):
        if seed is not None and not isinstance(seed, (int, _np.integer)):
            raise TypeError(f"cupy stand-in: default_rng takes an integer seed or None, got {type(seed)}")
        self._rng = _np.random.default_rng(None if seed is None else int(seed) ^ _OFFSET)

    def _draw(self, name, *args, **kwargs):
        return _wrap(_np.asarray(getattr(self._rng, name)(*_unwrap(args), **_unwrap(kwargs))))

    def random(self, size=None, dtype=_np.float64, out=None):
        return self._draw("random", size=size, dtype=dtype)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=_np.float64):
        return self._draw("uniform", low, high, size=size)

    def integers(self, low, high=None, size=None, dtype=_np.int64, endpoint=False):
        for bound in (low, high):
            if bound is not None and not isinstance(bound, (int, _np.integer)):
                raise TypeError("cupy's Generator.integers takes integer bounds, not arrays")
        return self._draw("integers", low, high, size=size, dtype=dtype, endpoint=endpoint)

    def standard_normal(self, size=None, dtype=_np.float64, out=None):
        return self._draw("standard_normal", size=size, dtype=dtype)

    def standard_exponential(self, size=None, dtype=_np.float64, method="inv", out=None):
        return self._draw("standard_exponential", size=size, dtype=dtype)

    def exponential(self, scale=1.0, size=None):
        return self._draw("exponential", scale, size=size)

    def gamma(self, shape, scale=1.0, size=None):
        return self._draw("gamma", shape, scale, size=size)

    def standard_gamma(self, shape, size=None, dtype=_np.float64, out=None):
        return self._draw("standard_gamma", shape, size=size, dtype=dtype)

    def chisquare(self, df, size=None):
        return self._draw("chisquare", df, size=size)

    def beta(self, a, b, size=None, dtype=_np.float64):
        return self._draw("beta", a, b, size=size)

    def binomial(self, n, p, size=None):
        return self._draw("binomial", n, p, size=size)

    def poisson(self, lam=1.0, size=None):
        return self._draw("poisson", lam, size=size)

    def dirichlet(self, alpha, size=None):
        return self._draw("dirichlet", alpha, size=size)

    def geometric(self, p, size=None):
        return self._draw("geometric", p, size=size)

    def f(self, dfnum, dfden, size=None):
        return self._draw("f", dfnum, dfden, size=size)

    def power(self, a, size=None):
        return self._draw("power", a, size=size)


Generator.__module__ = "cupy.random"


def default_rng(seed=None):
    return Generator(seed)
