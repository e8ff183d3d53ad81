"""What a claim's check warned: recorded while it runs (`warned`), not printed on the run's console, and
told in the claim's notes (`warning_notes`). The run's filters still decide which warnings are raised and
which are errors (``-W error``)."""

from __future__ import annotations

import os
import threading
import warnings
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")


def warned(check: Callable[[], T]) -> tuple[T, tuple[str, ...]]:
    """(``check()``, each warning it raised as one line (`warning_text`), once). Python's record of warnings
    is one for the whole process, so they are recorded in the main thread only (where a run checks its claims, in
    every worker process); a check run in another thread (a threaded Dask worker) leaves its warnings to the
    process, and () is returned."""
    if threading.current_thread() is not threading.main_thread():
        return check(), ()
    with warnings.catch_warnings(record=True) as caught:
        value = check()
    return value, tuple(dict.fromkeys(warning_text(w) for w in caught))


def warning_text(caught: warnings.WarningMessage) -> str:
    """A warning as one line: its category (with the package that defines it), where it was raised, its message."""
    category = caught.category
    package = category.__module__.split(".")[0]
    message = " ".join(str(caught.message).split())
    return (f"{'' if package == 'builtins' else package + ' '}{category.__name__} at "
            f"{os.path.basename(caught.filename)}:{caught.lineno}: {message}")


def warning_notes(per_example: Iterable[tuple[str, ...]]) -> list[str]:
    """Each distinct warning of the examples (each example's warnings as `warned` gives them), once, with the
    number of examples that raised it."""
    per_example = list(per_example)
    counts: dict[str, int] = {}
    for texts in per_example:
        for text in texts:
            counts[text] = counts.get(text, 0) + 1
    return [f"{text} (in {count} of {len(per_example)} examples)" for text, count in counts.items()]
