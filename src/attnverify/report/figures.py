"""Matplotlib for report figures: the non-interactive Agg backend, PNGs saved beside the report."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from .section import Figure


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend (no display needed, same output everywhere)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(figure, out_dir: str | Path, filename: str, caption: str, data: dict) -> Figure:
    """Save a matplotlib ``figure`` as ``out_dir/filename`` (PNG), close it, and describe it.

    ``data`` must hold every number plotted, so the figure can be redrawn from results.json.
    """
    if not filename.endswith(".png") or "/" in filename or "\\" in filename:
        raise ValueError(f"filename must be a plain name ending in .png, got {filename!r}")
    path = Path(out_dir) / filename
    figure.savefig(path, dpi=110, bbox_inches="tight")
    pyplot().close(figure)
    return Figure(filename=filename, caption=caption, data=data)
