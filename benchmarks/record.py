"""A benchmark's figures as a JSON record that says how, where and on what code they were measured.

``write_record`` keeps, beside the figures (``rows``, one dict per case, and the ``columns`` the site shows), the
date, the machine (CPU model, cores, platform, numpy and its BLAS), the command line, the git commit and the code
the benchmark timed: every function of the package that ran during the timed work (``code_that_runs``), each with
a digest of its syntax tree (comments, docstrings and layout left out). ``stale_functions`` recomputes those
digests from today's source: a figure is stale when any function it timed changed or is gone. docs/performance.md
shows records only (``<!-- attnverify:benchmark NAME -->``), so no figure on it lacks a record, and
tests/documentation/test_performance_page.py fails when a record is stale.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import hashlib
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "attnverify"
RESULTS = Path(__file__).resolve().parent / "results"


def record_options(parser, name: str, *, repeats: int, what: str) -> None:
    """The options every benchmark that keeps a record takes: ``--repeats`` (turns each ``what`` takes, a whole
    number ≥ 1; ``repeats`` by default) and ``--json`` (where the record goes; benchmarks/results/NAME.json by
    default)."""
    def turns(text: str) -> int:
        value = int(text) if text.strip().lstrip("-").isdigit() else 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"must be a whole number ≥ 1, got {text!r}")
        return value

    parser.add_argument("--repeats", type=turns, default=repeats, help=f"turns each {what} takes (default {repeats})")
    parser.add_argument("--json", type=Path, default=None, help=f"the record (default benchmarks/results/{name}.json)")


def code_that_runs(work: Callable[[], Any]) -> list[tuple[str, str]]:
    """(file relative to the repository, qualified name) of every package function that ``work()`` runs, found by
    running it once under a profile hook (never the timed run), on its thread and on the threads it starts (a
    thread pool's workers). Module bodies are left out (import time), and with them the lambdas defined there."""
    seen: set[tuple[str, str]] = set()
    package = str(PACKAGE)

    def hook(frame, event, arg):
        if event == "call":
            code = frame.f_code
            if code.co_filename.startswith(package) and code.co_name != "<module>":
                seen.add((code.co_filename, code.co_qualname))

    previous, previous_threads = sys.getprofile(), threading.getprofile()
    threading.setprofile(hook)
    sys.setprofile(hook)
    try:
        work()
    finally:
        sys.setprofile(previous)
        threading.setprofile(previous_threads)
    named = {(str(Path(file).relative_to(ROOT)), _named(name)) for file, name in seen}
    return sorted((file, name) for file, name in named if name)


def _named(qualname: str) -> str:
    """The enclosing named function of a lambda, comprehension or local function: ``f.<locals>.g`` → ``f.g``."""
    parts = [p for p in qualname.split(".") if p != "<locals>"]
    while parts and parts[-1].startswith("<"):
        parts.pop()
    return ".".join(parts)


def _definitions(tree: ast.AST, prefix: str = "") -> Iterable[tuple[str, ast.AST]]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = f"{prefix}{node.name}"
            yield name, node
            yield from _definitions(node, f"{name}.")


def _without_docstrings(node: ast.AST) -> ast.AST:
    for child in ast.walk(node):
        body = getattr(child, "body", None)
        if (isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant)
                and isinstance(body[0].value.value, str)):
            child.body = body[1:] or [ast.Pass()]
    return node


def digests(functions: Sequence[tuple[str, str]]) -> dict[str, str | None]:
    """``file:qualname`` → sha256 of the function's syntax tree today (None where the file or function is gone)."""
    trees: dict[str, dict[str, ast.AST] | None] = {}
    out = {}
    for file, name in functions:
        if file not in trees:
            path = ROOT / file
            trees[file] = dict(_definitions(ast.parse(path.read_text()))) if path.is_file() else None
        node = (trees[file] or {}).get(name)
        out[f"{file}:{name}"] = (None if node is None else
                                 hashlib.sha256(ast.dump(_without_docstrings(node)).encode()).hexdigest()[:16])
    return out


def _machine() -> dict:
    import numpy as np

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        blas = [f"{c['internal_api']} {c['version']}" for c in __import__("threadpoolctl").threadpool_info()
                if c.get("user_api") == "blas"]
    except Exception:  # threadpoolctl missing or a BLAS it cannot read: the record says unknown
        blas = []
    return dict(cpu=cpu, cores=os.cpu_count(), platform=platform.platform(), python=platform.python_version(),
                numpy=np.__version__, blas=", ".join(blas) or "unknown")


def _commit() -> str | None:
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src"], cwd=ROOT, capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+changes in src" if dirty else "")


def write_record(name: str, rows: list[dict], *, columns: Sequence[tuple[str, str, str]],
                 timed: Sequence[tuple[str, str]], settings: dict | None = None, notes: str = "",
                 path: Path | None = None) -> Path:
    """Write benchmarks/results/NAME.json (or ``path``): ``rows`` of figures, ``columns`` (key, heading, format)
    the site shows, ``timed`` the functions from :func:`code_that_runs`, and how the figures were obtained."""
    path = path or RESULTS / f"{name}.json"
    script = Path(sys.argv[0]).resolve()
    script = script.relative_to(ROOT) if script.is_relative_to(ROOT) else script  # a script outside the repository
    record = dict(
        benchmark=name,
        command=" ".join(["python", shlex.quote(str(script))] + [shlex.quote(a) for a in sys.argv[1:]]),
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        machine=_machine(),
        commit=_commit(),
        settings=settings or {},
        notes=notes,
        columns=[list(c) for c in columns],
        rows=rows,
        code=digests(timed),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1, default=float) + "\n")
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return path


def read_record(name: str, folder: Path | None = None) -> dict:
    path = (folder or RESULTS) / f"{name}.json"
    if not path.is_file():
        raise FileNotFoundError(f"no benchmark record {path}")
    return json.loads(path.read_text())


def command_for(name: str) -> str:
    """The command that writes record ``name``: the first script under benchmarks/ that names it in quotes."""
    for script in sorted(RESULTS.parent.glob("*.py")):
        if re.search(rf"""["']{re.escape(name)}["']""", script.read_text()):
            return f"python benchmarks/{script.name}"
    return f"the benchmark that writes benchmarks/results/{name}.json"


def stale_functions(record: dict) -> list[str]:
    """The functions a record timed that changed since (or are gone): empty when its figures are of today's code."""
    functions = [tuple(key.rsplit(":", 1)) for key in record["code"]]
    today = digests(functions)
    return [key for key, digest in record["code"].items() if today[key] != digest]


def table(record: dict) -> str:
    """The record's rows as a markdown table, in its columns' order and formats."""
    columns = record["columns"]
    lines = ["| " + " | ".join(heading for _, heading, _ in columns) + " |", "|" + "---|" * len(columns)]
    for row in record["rows"]:
        cells = []
        for key, _, form in columns:
            value = row.get(key)
            cells.append("–" if value is None else form.format(value))
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)
