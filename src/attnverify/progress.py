"""The command line's progress display on stderr: a live display on a terminal, plain lines elsewhere."""

from __future__ import annotations

import re
import threading
from typing import TextIO

from .checks.claim import Claim
from .checks.runner import ClaimResult


class Progress:
    """Progress on stderr. On a terminal, a live display (rich): a bar per claim being checked (examples
    done of its number) and the latest status line, with each finished claim printed above it. Elsewhere
    (CI, a file), plain lines: one per claim, and the report builder's status lines without the example
    counters."""

    _COUNTER = re.compile(r": example (\d+)/(\d+)$")

    def __init__(self, stream: TextIO):
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        self.tty = bool(callable(isatty) and isatty())
        self._lock = threading.Lock()
        self._live = None
        self._bars: dict[str, int] = {}  # claim name -> its bar in the live display
        self._status = None

    def _display(self):
        if self._live is None:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Live, TextColumn, TimeElapsedColumn

            console = Console(file=self.stream, force_terminal=True, highlight=False)
            self._live = Live(TextColumn("{task.description}"), BarColumn(bar_width=24), MofNCompleteColumn(),
                              TimeElapsedColumn(), console=console, auto_refresh=False, transient=True)
            self._live.start()
            self._status = self._live.add_task("", total=None, start=False)
        return self._live

    def close(self) -> None:
        """Stop the live display, so that what follows starts on a fresh line."""
        with self._lock:
            if self._live is not None:
                self._live.stop()
                self._live = None
                self._bars.clear()

    def claim_started(self, index: int, total: int, claim: Claim, examples: int) -> None:
        with self._lock:
            if self.tty:
                live = self._display()
                self._bars[claim.name] = live.add_task(f"[{index}/{total}] {claim.name}", total=examples)
                live.refresh()
            else:
                self.stream.write(f"[{index}/{total}] {claim.name} ({examples} examples) ... ")
                self.stream.flush()

    def example(self, claim: Claim, index: int, total: int) -> None:
        with self._lock:
            if self.tty and claim.name in self._bars:
                self._live.update(self._bars[claim.name], completed=index, total=total)
                self._live.refresh()

    def claim_finished(self, result: ClaimResult) -> None:
        from .report.results import verdict

        outcome = f"{result.status}, {verdict(result.as_dict())} ({result.seconds:.1f} s)"
        with self._lock:
            if self.tty:
                live = self._display()
                bar = self._bars.pop(result.claim.name, None)
                description = live.tasks[[t.id for t in live.tasks].index(bar)].description if bar is not None \
                    else result.claim.name
                if bar is not None:
                    live.remove_task(bar)
                live.console.print(f"{description}: {outcome}", markup=False)
                live.refresh()
            else:
                self.stream.write(outcome + "\n")
                self.stream.flush()

    def __call__(self, message: str) -> None:
        """A status line from the report builder; worker processes' lines arrive from another thread."""
        with self._lock:
            if not self.tty:
                if not self._COUNTER.search(message):
                    self.stream.write(message + "\n")
                    self.stream.flush()
                return
            live = self._display()
            counter = self._COUNTER.search(message)
            name = message[:counter.start()] if counter else None
            if counter and name in self._bars:
                live.update(self._bars[name], completed=int(counter.group(1)), total=int(counter.group(2)))
            elif counter:
                self._bars[name] = live.add_task(name, completed=int(counter.group(1)), total=int(counter.group(2)))
            elif message.endswith(("OK", "UNEXPECTED", "UNDECIDED")) or any(
                    f" {word} (" in message for word in ("OK", "UNEXPECTED", "UNDECIDED")):
                claim = message.split(": ")[0].split("] ")[-1]
                bar = self._bars.pop(claim, None)
                if bar is not None:
                    live.remove_task(bar)
                live.console.print(message, markup=False)
            else:
                live.update(self._status, description=message)
            live.refresh()
