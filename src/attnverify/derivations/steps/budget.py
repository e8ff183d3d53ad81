"""The safety net under a step's check: `step_budget` CPU seconds (``budget=``, ``$ATTNVERIFY_STEP_BUDGET``,
else `STEP_BUDGET`), enforced by a CPU-time alarm (`CLOCK`, ``ITIMER_PROF``) in a child process forked
for the check (`Child`), which is killed `GRACE` CPU seconds past a budget if it does not answer the
alarm. What decides a step is the work each attempt may do (expression sizes, quadrature degrees, digits), bounded
where the attempt is made; the budget lies far above what those bounds allow, so that a busy or slow machine gives
the same outcome. An outcome that the net cut short says so (`StepCheck.cut`) and is never kept on disk."""

from __future__ import annotations

import contextlib
import math
import os
import pickle
import select
import signal
import struct
import time
from dataclasses import dataclass, replace

from .outcome import StepCheck, unchecked
from .work import release


STEP_BUDGET = 300.0
"""CPU seconds the check of one step may use, all its comparisons and their symbolic and numeric attempts together
(integrals and expectations included), unless ``budget=`` or ``$ATTNVERIFY_STEP_BUDGET`` says otherwise; past it
the step is ``unchecked: budget of N CPU s spent (what was being tried)``, not kept, and the derivation's next step
is checked. Every step of the built-ins' derivations together uses about 17 CPU seconds."""


BUDGET_VARIABLE = "ATTNVERIFY_STEP_BUDGET"


SYMBOLIC_SHARE = 0.2
"""The part of a step's budget that one comparison's symbolic attempts (``expand``, ``simplify``, ``equals``, each
tried only on a difference within its size bound) may use; past it the comparison is decided numerically and its
outcome says the symbolic attempts were cut short (then it is not kept)."""


GRACE = 5.0
"""CPU seconds past a step's budget after which the process checking it, silent (inside C code that the alarm
cannot interrupt), is killed; the step is then unchecked and the walk goes on in a new process."""


WALL_FACTOR = 20.0
"""A child that has not finished a step within this many times its budget in wall-clock seconds (a process that
waits rather than computes, which no CPU-time alarm reaches) is killed as past its budget."""


POLL = 0.5
"""Wall seconds the parent waits for a child's message before it looks at the child's CPU time again."""


ANNOUNCE_AFTER = 2.0
"""A step still being checked after this many seconds is named to the progress display (``on_step``)."""


def step_budget(budget: float | None = None) -> float:
    """The CPU seconds a step's check may use: ``budget`` if given, else ``$ATTNVERIFY_STEP_BUDGET``, else
    `STEP_BUDGET`; a positive finite number."""
    name, value = "budget", budget
    if budget is None:
        name, value = BUDGET_VARIABLE, os.environ.get(BUDGET_VARIABLE)
        if value is None:
            return STEP_BUDGET
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if isinstance(value, bool) or not (0 < seconds < math.inf):
        raise ValueError(f"{name} must be a positive number of CPU seconds (0 < {name} < inf), got {value!r}")
    return seconds


def budget_outcome(budget: float, trying: str, killed: bool = False) -> StepCheck:
    ended = "; its process did not answer the alarm and was ended" if killed else ""
    spent = f"budget of {budget:g} CPU s spent"
    return replace(unchecked(f"{spent} ({trying or 'checking the step'}){ended}"), cut=spent)


def is_cut(outcome: StepCheck) -> bool:
    """An outcome the time safety net cut short (never kept on disk: a later run may decide it otherwise)."""
    return bool(outcome.cut)


def any_cut(kept) -> bool:
    """Whether a comparison's outcome, or any of a derivation's (a tuple), was cut short (`is_cut`)."""
    return any(is_cut(o) for o in (kept if isinstance(kept, tuple) else (kept,)))


class BudgetSpent(BaseException):
    """A limit of `_Clock` was reached (a BaseException: no ``except Exception`` of sympy or of the checker
    swallows it)."""

    def __init__(self, limit):
        super().__init__("budget spent")
        self.limit = limit


@dataclass(eq=False)
class _Limit:
    deadline: float
    seconds: float


def cpu_time() -> float:
    """CPU seconds this process has used, every thread together (what ``ITIMER_PROF`` counts)."""
    return time.process_time()


class _Clock:
    """CPU-time deadlines enforced by SIGPROF (``ITIMER_PROF``), in the main thread of the checker's own child
    process (forked for the purpose, so that no one else's timer is disturbed) or of a process without ``os.fork``.
    CPU time, not wall time: a machine busy with other work slows the check without spending its budget. The alarm
    repeats every 0.25 CPU s until the expired limit's block is left, so a handler that swallows it does not stop it.
    ``trying`` names the attempt under way (for the outcome's text); ``tell`` sends a message to the parent."""

    def __init__(self):
        self.limits: list[_Limit] = []
        self._trying = ""
        self.active = False  # in a child process forked by the checker
        self.send = None

    @property
    def trying(self) -> str:
        return self._trying

    @trying.setter
    def trying(self, what: str) -> None:
        self._trying = what
        self.tell(("trying", what))

    def usable(self) -> bool:
        return self.active or (not hasattr(os, "fork") and hasattr(signal, "ITIMER_PROF")
                               and threading_main())

    def start(self, send) -> None:
        """In a new child: the alarm's handler installed, messages to the parent through ``send``."""
        self.active, self.send, self.limits = True, send, []
        signal.signal(signal.SIGPROF, self._alarm)

    def tell(self, message) -> None:
        if self.send is not None:
            self.send(message)

    def _alarm(self, signum, frame):
        now = cpu_time()
        expired = [limit for limit in self.limits if limit.deadline <= now + 1e-3]
        if expired:
            release()  # a symbolic attempt's object counter goes with the attempt the alarm ends
            raise BudgetSpent(expired[0])  # the outermost limit that expired
        self._arm()

    def _arm(self) -> None:
        if self.limits:
            remaining = max(1e-3, min(limit.deadline for limit in self.limits) - cpu_time())
            signal.setitimer(signal.ITIMER_PROF, remaining, 0.25)
        else:
            signal.setitimer(signal.ITIMER_PROF, 0)

    def share(self, fraction: float) -> float | None:
        """``fraction`` of the innermost limit's seconds (None without a limit)."""
        return self.limits[-1].seconds * fraction if self.limits else None

    @contextlib.contextmanager
    def limit(self, seconds: float | None):
        """A block limited to ``seconds`` of CPU time (and to every enclosing limit); yields the limit (None: no
        limit)."""
        if seconds is None or not self.usable():
            yield None
            return
        outermost = not self.active and not self.limits
        if outermost:  # a process without os.fork: its own handler for the block, the one before restored after
            before = signal.signal(signal.SIGPROF, self._alarm), signal.getitimer(signal.ITIMER_PROF)
        entry = _Limit(cpu_time() + seconds, seconds)
        try:  # the limit is taken back however the block ends, an alarm during its set-up included
            self.limits.append(entry)
            self._arm()
            yield entry
        finally:
            if entry in self.limits:
                self.limits.remove(entry)
            self._arm()
            if outermost:
                signal.signal(signal.SIGPROF, before[0])
                signal.setitimer(signal.ITIMER_PROF, *before[1])


def threading_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


CLOCK = _Clock()


def can_fork() -> bool:
    """A child can be forked for a check: os.fork exists and this is not already such a child."""
    return hasattr(os, "fork") and not CLOCK.active


class Watch:
    """The parent's watch over a child's step: past ``budget`` + `GRACE` CPU seconds of the child (wall
    seconds where the system does not report its CPU time), or `WALL_FACTOR` times that in wall seconds,
    the child is past its budget."""

    def __init__(self, child: "Child", budget: float):
        self.child, self.limit = child, budget + GRACE
        self.restart()

    def restart(self) -> None:
        """A new step: its CPU and wall seconds counted from now."""
        self.wall, self.cpu = time.monotonic(), self.child.cpu_seconds()

    def over(self) -> bool:
        now = time.monotonic()
        if now - self.wall >= WALL_FACTOR * self.limit:
            return True
        used = self.child.cpu_seconds()
        if used is None or self.cpu is None:
            return now - self.wall >= self.limit
        return used - self.cpu >= self.limit


class Child:
    """A child process forked to run ``work()``; it sends pickled messages (length-prefixed) through a pipe, ends
    with ("result", value) or ("error", text), and never returns into the parent's code (``os._exit``)."""

    def __init__(self, work):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child
            code = 1
            try:
                os.close(read)
                CLOCK.start(lambda message: _send(write, message))
                _send(write, ("result", work()))
                code = 0
            except BaseException as error:  # noqa: BLE001  (reported to the parent, whatever it is)
                try:
                    _send(write, ("error", f"{type(error).__name__}: {error}"))
                except BaseException:  # noqa: BLE001  (the parent sees the pipe close)
                    pass
            finally:
                os._exit(code)
        os.close(write)
        self.pid, self.fd, self.buffer = pid, read, b""

    def receive(self, timeout: float):
        """The messages that arrive within ``timeout`` seconds ([] if none); None once the child has closed the
        pipe."""
        ready, _, _ = select.select([self.fd], [], [], max(0.0, timeout))
        if not ready:
            return []
        chunk = os.read(self.fd, 1 << 20)
        if not chunk:
            return None
        self.buffer += chunk
        messages = []
        while len(self.buffer) >= 8:
            (size,) = struct.unpack("<Q", self.buffer[:8])
            if len(self.buffer) < 8 + size:
                break
            messages.append(pickle.loads(self.buffer[8:8 + size]))
            self.buffer = self.buffer[8 + size:]
        return messages

    def cpu_seconds(self) -> float | None:
        """CPU seconds the child has used, every thread together (``/proc/PID/stat``); None where the system does
        not say."""
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as stat:
                data = stat.read()
            fields = data[data.rindex(b")") + 2:].split()  # after the command's name: state, ppid, …
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
        except (OSError, ValueError, IndexError):
            return None

    def end(self, kill: bool = False) -> None:
        if kill:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.close(self.fd)
        os.waitpid(self.pid, 0)


def _send(fd: int, message) -> None:
    data = pickle.dumps(message)
    data = struct.pack("<Q", len(data)) + data
    while data:
        data = data[os.write(fd, data):]
