"""Claims about attention theories, checked on hypothesis-drawn examples with honest error bars.

A theorist's own file uses the same pieces as the built-in claims::

    from attnverify.checks import claim, st, within_error, close, at_most
"""

from hypothesis import strategies as st

from .claim import Claim, Context, claim
from .evidence import Evidence, at_most, close, within_error
from .runner import ClaimResult, evaluate, run_claim, run_claims

__all__ = [
    "Claim", "ClaimResult", "Context", "Evidence", "at_most", "claim", "close", "evaluate",
    "run_claim", "run_claims", "st", "within_error",
]
