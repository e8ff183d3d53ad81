"""Where attnverify keeps what outlives one run: ``$ATTNVERIFY_CACHE``, else ``$XDG_CACHE_HOME/attnverify``,
else ``~/.cache/attnverify``."""

from __future__ import annotations

import os
from pathlib import Path

ENVIRONMENT_VARIABLE = "ATTNVERIFY_CACHE"


def cache_directory(*parts: str) -> Path:
    """The project's cache folder (or a sub-folder of it); not created here."""
    root = os.environ.get(ENVIRONMENT_VARIABLE) or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attnverify"
    return Path(root).joinpath(*parts)
