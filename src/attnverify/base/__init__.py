"""The base every layer stands on: argument checking (``arguments``), array backends (``backend``), the cache
folder (``cache``), BLAS thread limits (``blas``) and atomic file writes (``files``). It imports nothing else of
the package."""

__version__ = "0.1.0"

PROFILES = ("quick", "thorough")
"""The profiles a run is checked at: quick (seconds to minutes) and thorough (more examples, larger samples)."""

MOST_EXAMPLES = 10**6
"""The most examples one claim may be asked for (a run's ``examples``, ``--examples``, a claim's ``examples=``): each
example is a whole check of the claim (a Monte Carlo mean of up to 10⁶ draws, a saddle-point solve), seconds each,
so 10⁶ of them take days."""
