"""Where attnverify keeps what outlives one run: ``$ATTNVERIFY_CACHE``, else ``$XDG_CACHE_HOME/attnverify``,
else ``~/.cache/attnverify``."""

from __future__ import annotations

import os
from pathlib import Path

ENVIRONMENT_VARIABLE = "ATTNVERIFY_CACHE"

KEEP_VARIABLE = "ATTNVERIFY_KEEP_DERIVATIONS"
"""Set to 0 to derive and check derivations afresh in every process: neither the kept derivations
(`attnverify.derivations.kept`) nor the kept checks of their steps (`attnverify.derivations.steps`)
are read or written."""


def keeping_derivations() -> bool:
    """Whether derivations and the checks of their steps are kept on disk (``$ATTNVERIFY_KEEP_DERIVATIONS`` ≠ 0)."""
    return os.environ.get(KEEP_VARIABLE, "1") != "0"


def cache_directory(*parts: str) -> Path:
    """The project's cache folder (or a sub-folder of it); not created here."""
    root = os.environ.get(ENVIRONMENT_VARIABLE) or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attnverify"
    return Path(root).joinpath(*parts)
