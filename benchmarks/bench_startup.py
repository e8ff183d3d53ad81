"""Start-up: what a theorist waits for before the tool does anything, each command in a fresh process.

    python benchmarks/bench_startup.py [--repeats 5]

The commands, on a copy of the README's example (examples/relu_kernel.py) in a scratch folder, after one untimed
run of each (the kept derivations read from the disk, as on any run after the first): ``python -c "import
attnverify"``, ``attnverify --help``, ``attnverify verify relu_kernel.py`` (the time to its first claim's line, and
to its end) and ``pytest relu_kernel.py`` (the plugin collects the theory file). The commands take turns
``--repeats`` times and the least of each is kept (the noise of a shared machine only ever adds time): the wall
time, and the CPU time of the process and its children where the command ran to its end. Beside them: which
heavy modules the bare import loads (sympy, matplotlib, scipy), which should wait until a theory needs them.

Writes benchmarks/results/startup.json (benchmarks/record.py); docs/performance.md shows it.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from record import ROOT, code_that_runs, record_options, write_record  # noqa: E402

EXAMPLE = ROOT / "examples" / "relu_kernel.py"
BIN = Path(sys.executable).parent
HEAVY = ("sympy", "matplotlib", "scipy")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(command: list[str], folder: Path, first_line: str | None = None) -> dict:
    """Run ``command`` in ``folder``: its wall seconds to the end, to the first output line starting with
    ``first_line`` (if given), and its CPU seconds (the process and its children); a failed command stops the
    benchmark with its output."""
    cpu = _children_cpu()
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    first, lines = None, []
    for line in iter(process.stdout.readline, b""):
        lines.append(line)
        if first is None and first_line is not None and line.startswith(first_line.encode()):
            first = time.perf_counter() - start
    code = process.wait()
    wall = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"{' '.join(command)} exited with {code}:\n" + b"".join(lines).decode(errors="replace"))
    if first_line is not None and first is None:
        raise SystemExit(f"{' '.join(command)} printed no line starting with {first_line!r}")
    return dict(wall=wall, cpu=_children_cpu() - cpu, first=first)


def heavy_modules_of_import() -> list[str]:
    """The heavy modules ``import attnverify`` loads (in a fresh process)."""
    probe = f"import sys, attnverify; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    record_options(parser, "startup", repeats=5, what="command")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="attnverify-startup-"))
    try:
        shutil.copy(EXAMPLE, folder / EXAMPLE.name)
        cases = [
            ("python -c 'import attnverify'", [sys.executable, "-c", "import attnverify"], None, None),
            ("attnverify --help", [str(BIN / "attnverify"), "--help"], None, 0.5),
            ("attnverify verify relu_kernel.py", [str(BIN / "attnverify"), "verify", EXAMPLE.name], "[1/", 2.0),
            ("pytest relu_kernel.py", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                       EXAMPLE.name], None, 3.0),
        ]
        for _, command, first_line, _ in cases:  # untimed: the kept derivations written, the disk's caches warm
            run(command, folder, first_line)
        times = {label: [] for label, *_ in cases}
        for _ in range(args.repeats):
            for label, command, first_line, _ in cases:
                times[label].append(run(command, folder, first_line))
        rows = []
        print(f"{'command':<36} {'to first claim s':>16} {'wall s':>7} {'CPU s':>6} {'goal s':>6}")
        for label, _, first_line, goal in cases:
            runs = times[label]
            row = dict(command=label, wall=min(r["wall"] for r in runs), cpu=min(r["cpu"] for r in runs),
                       first_claim=min(r["first"] for r in runs) if first_line else None, goal=goal)
            rows.append(row)
            first = f"{row['first_claim']:.2f}" if first_line else "–"
            print(f"{label:<36} {first:>16} {row['wall']:>7.2f} {row['cpu']:>6.2f} "
                  f"{goal if goal is not None else '–':>6}", flush=True)
        heavy = heavy_modules_of_import()
        print(f"heavy modules loaded by import attnverify: {', '.join(heavy) or 'none'}")

        def verify_in_process():
            from attnverify import cli

            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                cli.main(["verify", str(folder / EXAMPLE.name)])

        timed = code_that_runs(verify_in_process)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    write_record("startup", rows, timed=timed, path=args.json,
                 columns=[("command", "command", "{}"), ("first_claim", "to the first claim, s", "{:.2f}"),
                          ("wall", "to the end, s", "{:.2f}"), ("cpu", "CPU s (with children)", "{:.2f}"),
                          ("goal", "goal, s", "{}")],
                 settings=dict(repeats=args.repeats, example=str(EXAMPLE.relative_to(ROOT)),
                               heavy_modules_of_import=heavy),
                 notes="heavy modules loaded by `import attnverify`: " + (", ".join(heavy) or "none"))


if __name__ == "__main__":
    main()
