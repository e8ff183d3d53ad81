"""Every code block of the README and the documentation site is a test (sybil).

Per page, in order, in a fresh temporary folder that holds a link ``examples/`` to the repository's examples:

- a ``python`` block runs in the page's one namespace (a block that starts with ``>>>`` is a doctest);
- a ``python title="name.py"`` block is written to ``name.py`` and run as a script (a file later commands use);
- a ``console`` block runs each ``$ command`` (a plain ``attnverify …`` in this process, through the same
  ``attnverify.cli.main``; any other with bash) and compares its standard output with the lines shown after it
  (doctest's rules: ``...`` matches anything, runs of whitespace are equal); the command must exit 0 unless the
  shown output ends with ``[exit status N]``;
- ``bash``, ``text``, ``yaml`` blocks are shown, never run, and carry no output.

Any other info string that starts with ``py`` or ``console`` is refused, so that a block meant to run can never
be silently left out by a typo in its fence.
"""
import contextlib
import doctest
import io
import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from sybil import Region, Sybil
from sybil.evaluators.python import PythonEvaluator
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

ROOT = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
EXIT_LINE = re.compile(r"^\[exit status (\d+)\]\s*$")
CHECKER = doctest.OutputChecker()
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
COMMAND_SECONDS = 240  # a documented command that takes longer belongs in a ```bash block, not run


USER_ENVIRONMENT = {"ATTNVERIFY_BACKEND": None, "COLUMNS": "200"}
"""What a page's code and commands see as a user's shell would have it: no ATTNVERIFY_BACKEND (the test session
sets a deliberately invalid one) and a terminal wide enough for the results table."""


def _page_folder(namespace):
    """A fresh working folder per page, with the repository's examples linked in, and the user's environment; the
    page runs inside it."""
    folder = Path(tempfile.mkdtemp(prefix="attnverify-docs-"))
    (folder / "examples").symlink_to(ROOT / "examples")
    namespace["__docs_folder__"] = folder
    namespace["__docs_previous_cwd__"] = os.getcwd()
    namespace["__docs_previous_environment__"] = {name: os.environ.get(name) for name in USER_ENVIRONMENT}
    _set_environment(USER_ENVIRONMENT)
    os.chdir(folder)


def _leave_page(namespace):
    os.chdir(namespace["__docs_previous_cwd__"])
    _set_environment(namespace["__docs_previous_environment__"])
    shutil.rmtree(namespace["__docs_folder__"], ignore_errors=True)


def _set_environment(values):
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _write_and_run(example):
    """A ``python title="name.py"`` block: the file a page's later commands use, run once as a script."""
    path = Path(example.namespace["__docs_folder__"]) / example.region.lexemes["title"]
    path.write_text(str(example.parsed))
    sys.path.insert(0, str(path.parent))
    try:
        runpy.run_path(str(path), run_name="__docs_file__")
    finally:
        sys.path.remove(str(path.parent))


def _commands(source):
    """``(command, expected output, expected exit status)`` for each ``$ `` line of a console block."""
    lines = str(source).splitlines()
    if not lines or not lines[0].startswith("$ "):
        raise ValueError("a console block must start with a `$ command` line")
    runs = []
    for line in lines:
        if line.startswith("$ "):
            runs.append([line[2:], []])
        elif runs[-1][0].endswith("\\") and not runs[-1][1]:
            runs[-1][0] = runs[-1][0][:-1] + " " + line.strip()
        else:
            runs[-1][1].append(line)
    out = []
    for command, shown in runs:
        status = 0
        if shown and EXIT_LINE.match(shown[-1]):
            status = int(EXIT_LINE.match(shown[-1]).group(1))
            shown = shown[:-1]
        out.append((command, "\n".join(shown).rstrip() + "\n" if shown else "", status))
    return out


def _in_process(command):
    """The arguments of a plain ``attnverify …`` command (no shell syntax), which runs in this process: the same
    code as the installed command without its start-up (seconds of imports each). None for any other command,
    and while a test-seed offset forces hypothesis's seed (which the command line never does)."""
    from hypothesis import core

    words = shlex.split(command)
    if words[0] != "attnverify" or any(c in command for c in "|&;<>$`*?()") or core.global_force_seed is not None:
        return None
    return words[1:]


def _run_command(command, folder):
    """``(exit status, stdout, stderr)`` of ``command`` in ``folder``, in the page's environment (the venv's
    commands first on PATH)."""
    arguments = _in_process(command)
    if arguments is None:
        environment = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
        done = subprocess.run(["bash", "-c", command], cwd=folder, env=environment, capture_output=True, text=True,
                              timeout=COMMAND_SECONDS)
        return done.returncode, done.stdout, done.stderr
    from attnverify import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(arguments)
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 1
    return status, out.getvalue(), err.getvalue()


def _run_console(example):
    for command, expected, status in _commands(example.parsed):
        returned, stdout, stderr = _run_command(command, example.namespace["__docs_folder__"])
        problems = []
        if returned != status:
            problems.append(f"exit status {returned}, the page shows {status}")
        if expected and not CHECKER.check_output(expected, stdout, OPTIONS):
            problems.append("its output differs from the page's:\n"
                            + CHECKER.output_difference(doctest.Example(command, expected), stdout, OPTIONS))
        if problems:
            return f"$ {command}\n" + "\n".join(problems) + f"\n--- stderr ---\n{stderr[-4000:]}"
    return None


def _refuse(example):
    raise ValueError(f"code block with info string {example.region.lexemes['arguments']!r}: use ```python, "
                     "```python title=\"name.py\", ```console (run), or ```bash/```text (shown only)")


class CodeBlocks:
    """Every fenced block whose info string starts with ``py`` or ``console``, dispatched by its info string
    (plain ``python`` blocks are left to sybil's PythonCodeBlockParser)."""

    def __init__(self):
        self.lexer = FencedCodeBlockLexer(language=r"\S+[^\n]*", mapping={"language": "arguments",
                                                                         "source": "source"})

    def __call__(self, document):
        for region in self.lexer(document):
            arguments = region.lexemes["arguments"].strip()
            if arguments == "python" or not (arguments.startswith("py") or arguments.startswith("console")):
                continue
            titled = re.fullmatch(r'python\s+title="([\w.-]+\.py)"(\s+hl_lines="[\d\s-]+")?', arguments)
            if titled:
                region.lexemes["title"] = titled.group(1)
                evaluator = _write_and_run
            elif arguments == "console":
                evaluator = _run_console
            else:
                evaluator = _refuse
            yield Region(region.start, region.end, region.lexemes["source"], evaluator, lexemes=region.lexemes)


pytest_collect_file = Sybil(
    parsers=[PythonCodeBlockParser(doctest_optionflags=OPTIONS), CodeBlocks(), SkipParser()],
    patterns=["README.md", "docs/*.md", "docs/*/*.md"],  # pathlib's match: one folder level per `*/`
    setup=_page_folder,
    teardown=_leave_page,
).pytest()
