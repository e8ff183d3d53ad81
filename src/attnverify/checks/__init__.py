"""Claims about attention theories, checked on hypothesis-drawn examples with honest error bars.

A theorist's own file uses the same pieces as the built-in claims::

    from attnverify.checks import claim, st, within_error, close, at_most
"""

from . import strategies as st
from .claim import DEFAULT_EXAMPLES, Claim, Context, claim, examples_needed
from .cases import worst_case
from .comparisons import at_most, close, exceeds, within_error
from .evidence import Evidence
from .roundoff import roundoff_floor
from .runner import ClaimResult, evaluate, run_claim

__all__ = [
    "DEFAULT_EXAMPLES", "Claim", "ClaimResult", "Context", "Evidence", "at_most", "claim", "close", "evaluate",
    "examples_needed", "exceeds", "roundoff_floor",
    "run_claim", "st", "within_error", "worst_case",
]
