"""attnverify: a symbolic-numeric verifier for the theory of attention.

Layers, in the one direction the data flows (``tests/test_layers.py`` keeps it so):
``derivations`` (sympy) -> ``numerics`` (arrays) -> ``checks`` (claims) -> ``report`` / ``cli``.

A theory of one's own needs one import (the names load on first use, so ``import attnverify`` stays light)::

    from attnverify import Theory, st, within_error, close, at_most, exceeds, sized_mean, TheoryVsSimulation
"""

from .base import __version__

_PUBLIC = {
    "Theory": "attnverify.theory_form", "TheoryVsSimulation": "attnverify.theory_form",
    "st": "attnverify.checks", "claim": "attnverify.checks", "Evidence": "attnverify.checks",
    "within_error": "attnverify.checks", "close": "attnverify.checks", "at_most": "attnverify.checks",
    "exceeds": "attnverify.checks", "worst_case": "attnverify.checks", "run_claim": "attnverify.checks",
    "sized_mean": "attnverify.numerics.sized", "mean_estimate": "attnverify.numerics.statistics",
    "Estimate": "attnverify.numerics.statistics", "RunSettings": "attnverify.execution.settings",
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        import importlib

        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'attnverify' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)


def load_ipython_extension(shell) -> None:
    """``%load_ext attnverify``: claim results, evidence, derivations, claims and theories display as the report
    shows them (`attnverify.report.notebook`)."""
    from .report.notebook import register

    register(shell)


def _register_in_ipython() -> None:
    import sys

    if "IPython" not in sys.modules:
        return
    try:
        shell = sys.modules["IPython"].get_ipython()
    except Exception:
        return
    if shell is not None and getattr(shell, "display_formatter", None) is not None:
        load_ipython_extension(shell)


_register_in_ipython()
