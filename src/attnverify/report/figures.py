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
    """Save a matplotlib ``figure`` as ``out_dir/filename`` (PNG) and beside it as PDF (for ``report --latex``),
    close it, and describe it.

    ``data`` must hold every number plotted, so the figure can be redrawn from results.json.
    """
    if not filename.endswith(".png") or "/" in filename or "\\" in filename:
        raise ValueError(f"filename must be a plain name ending in .png, got {filename!r}")
    path = Path(out_dir) / filename
    figure.savefig(path, dpi=110, bbox_inches="tight")
    figure.savefig(path.with_suffix(".pdf"), bbox_inches="tight")
    pyplot().close(figure)
    return Figure(filename=filename, caption=caption, data=data)


def curve_data(label: str, x, theory, theory_x, estimates) -> tuple[list, list, list, list, list]:
    """A theory-vs-simulation figure's numbers as float lists (x, theory, theory_x, means, standard errors), every
    one finite and the lengths matching, else a ValueError naming the figure, the quantity and the entry."""
    import numpy as np

    from ..numerics.statistics import Estimate

    def floats(name: str, values) -> list[float]:
        try:
            return [float(v) for v in np.asarray(values, dtype=float).ravel()]
        except (TypeError, ValueError):
            raise TypeError(f"figure {label}: {name} must be real numbers, got {values!r:.80}") from None

    x, theory = floats("x", x), floats("theory", theory)
    theory_x = x if theory_x is None else floats("theory_x", theory_x)
    if isinstance(estimates, (str, bytes, dict)) or not hasattr(estimates, "__len__"):
        raise TypeError(f"figure {label}: estimates must be a list of Estimate objects (e.g. from mean_estimate), "
                        f"got {type(estimates).__name__}")
    for k, e in enumerate(estimates):
        if not isinstance(e, Estimate):
            raise TypeError(f"figure {label}: estimates must be Estimate objects (e.g. from mean_estimate), got "
                            f"{type(e).__name__} at index {k}")
    means = floats("estimates' means", [e.mean for e in estimates])
    errors = floats("estimates' standard errors", [e.standard_error for e in estimates])
    for name, values in (("x", x), ("theory_x", theory_x), ("theory", theory), ("estimates' means", means),
                         ("estimates' standard errors", errors)):
        bad = [k for k, v in enumerate(values) if not np.isfinite(v)]
        if bad:
            raise ValueError(f"figure {label}: {name} must be finite numbers; entry {bad[0]} is {values[bad[0]]} "
                             f"({len(bad)} of {len(values)} not finite: a gap in a plot hides a broken computation)")
    if len(theory) != len(theory_x):
        raise ValueError(f"figure {label}: theory has {len(theory)} values for {len(theory_x)} points")
    if len(estimates) != len(x):
        raise ValueError(f"figure {label}: estimates has {len(estimates)} entries for {len(x)} points")
    return x, theory, theory_x, means, errors


def extra_curves(label: str, curves) -> list[dict]:
    """More theory curves, each ``(name, x, values)``, as ``{"label", "x", "values"}`` float lists, every one finite
    and the lengths matching, else a ValueError naming the figure and the curve."""
    import numpy as np

    out = []
    for entry in curves:
        if not (isinstance(entry, tuple) and len(entry) == 3 and isinstance(entry[0], str)):
            raise TypeError(f"figure {label}: curves must be (label, x, values) tuples, got {entry!r:.80}")
        name, x, values = entry[0], np.asarray(entry[1], dtype=float).ravel(), np.asarray(entry[2], float).ravel()
        if x.shape != values.shape or not (np.all(np.isfinite(x)) and np.all(np.isfinite(values))):
            raise ValueError(f"figure {label}: curve {name!r} needs as many finite values as x, got {values.size} "
                             f"for {x.size}")
        out.append({"label": name, "x": x.tolist(), "values": values.tolist()})
    return out


SCALES = ("linear", "log")


def axis_scales(label: str, xscale: str, yscale: str, data: tuple, more: list[dict]) -> None:
    """Refuse a scale other than `SCALES`, and a value a log axis cannot show (≤ 0: the x values, the theory, the
    estimates' means and the extra curves), naming the figure; ``data`` and ``more`` as `curve_data` and
    `extra_curves` return them."""
    for name, scale in (("xscale", xscale), ("yscale", yscale)):
        if scale not in SCALES:
            raise ValueError(f"figure {label}: {name} must be one of {', '.join(SCALES)}, got {scale!r}")
    x, theory, theory_x, means, _ = data
    for axis, scale, values in (("x", xscale, [*x, *theory_x, *(v for c in more for v in c["x"])]),
                                ("y", yscale, [*theory, *means, *(v for c in more for v in c["values"])])):
        if scale == "log" and min(values, default=1.0) <= 0:
            raise ValueError(f"figure {label}: a log {axis} axis needs positive values, got {min(values):.3g}")


def theory_vs_simulation(out_dir: str | Path, filename: str, *, x, theory, estimates, caption: str,
                         xlabel: str = "x", ylabel: str = "value", title: str = "", z: float = 2.0,
                         theory_x=None, theory_label: str = "theory", curves=(), xscale: str = "linear",
                         yscale: str = "linear") -> Figure:
    r"""The common figure of a claim: a theory curve against Monte Carlo points with $\pm z \cdot \mathrm{SE}$ error
    bars.

    ``estimates`` are [`Estimate`][attnverify.numerics.statistics.Estimate] (mean, standard error) at ``x``;
    ``theory`` is the curve's values at ``theory_x`` (default ``x``); ``xscale``/``yscale`` "linear" or "log"
    (`axis_scales`). Every number plotted goes into the figure's data (results.json), and the caption says what the
    error bars are.
    """
    data = curve_data(filename, x, theory, theory_x, estimates)
    more = extra_curves(filename, curves)
    axis_scales(filename, xscale, yscale, data, more)
    x, theory, theory_x, means, errors = data
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    ax.plot(theory_x, theory, "-", color="C0", label=theory_label)
    for k, curve in enumerate(more):
        ax.plot(curve["x"], curve["values"], "s--", color=f"C{k + 1}", ms=5, label=curve["label"])
    ax.errorbar(x, means, yerr=[z * e for e in errors], fmt="o", color="k", ms=4, capsize=3,
                label=f"Monte Carlo (± {z:g} SE)")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_xscale(xscale)
    ax.set_yscale(yscale)
    if title:
        ax.set_title(title)
    ax.legend()
    ax.grid(True, alpha=0.3)
    return save_figure(fig, out_dir, filename, f"{caption} Error bars: ± {z:g} standard errors.",
                       {"x": x, "theory_x": theory_x, "theory": theory, "mean": means, "standard_error": errors,
                        "error_bar_z": z, **({"theory_label": theory_label, "curves": more} if more else {}),
                        **({"xscale": xscale, "yscale": yscale} if (xscale, yscale) != ("linear", "linear") else {})})
