"""The command line's progress display on stderr: a live display on a terminal, plain lines elsewhere. It reads the
run's events by their type (`attnverify.execution.tasks`): a claim started or finished, an example checked,
or a status line of an experiment or a section."""

from __future__ import annotations

import threading
from typing import TextIO

from .execution.tasks import ClaimFinished, ClaimStarted, ExampleChecked


class Progress:
    """Progress on stderr. On a terminal, a live display (rich): a bar per claim being checked (examples
    done of its number) and the latest status line, with each finished claim printed above it. Elsewhere
    (CI, a file), plain lines: a claim's start and its outcome on one line when nothing came between them, and
    the status lines, without the example counters."""

    def __init__(self, stream: TextIO):
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        self.tty = bool(callable(isatty) and isatty())
        self._lock = threading.Lock()
        self._live = None
        self._bars: dict[str, int] = {}  # claim name -> its bar in the live display
        self._status = None
        self._open: str | None = None  # the claim whose start line awaits its outcome (plain lines)

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
            if self._open is not None:
                self.stream.write("\n")
                self._open = None

    def __call__(self, event: str) -> None:
        """One event of the run (worker processes' events arrive from another thread)."""
        with self._lock:
            if self.tty:
                self._show(event)
            else:
                self._write(event)

    def _write(self, event: str) -> None:
        if isinstance(event, ExampleChecked):
            return
        if isinstance(event, ClaimStarted):
            self._close_line()
            count = f"{event.examples} example{'s' * (event.examples != 1)}"
            self.stream.write(f"[{event.position}/{event.total}] {event.claim} ({count}) ... ")
            self._open = event.claim
        elif isinstance(event, ClaimFinished) and self._open == event.claim:
            self.stream.write(event.outcome + "\n")
            self._open = None
        else:
            self._close_line()
            self.stream.write(event + "\n")
        self.stream.flush()

    def _close_line(self) -> None:
        if self._open is not None:
            self.stream.write("\n")
            self._open = None

    def _show(self, event: str) -> None:
        live = self._display()
        if isinstance(event, ExampleChecked):
            if event.claim in self._bars:
                live.update(self._bars[event.claim], completed=event.index, total=event.total)
            else:
                self._bars[event.claim] = live.add_task(event.claim, completed=event.index, total=event.total)
        elif isinstance(event, ClaimStarted):
            label = f"[{event.position}/{event.total}] {event.claim}"
            if event.claim in self._bars:
                live.update(self._bars[event.claim], description=label, total=event.examples)
            else:
                self._bars[event.claim] = live.add_task(label, total=event.examples)
        elif isinstance(event, ClaimFinished):
            bar = self._bars.pop(event.claim, None)
            if bar is not None:
                live.remove_task(bar)
            live.console.print(str(event), markup=False)
        else:
            live.update(self._status, description=str(event))
        live.refresh()
