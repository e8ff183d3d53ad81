"""The base every layer stands on: argument checking (``arguments``), array backends (``backend``), the cache
folder (``cache``), BLAS thread limits (``blas``) and atomic file writes (``files``). It imports nothing else of
the package."""

__version__ = "0.1.0"

PROFILES = ("quick", "thorough")
"""The profiles a run is checked at: quick (seconds to minutes) and thorough (more examples, larger samples)."""
