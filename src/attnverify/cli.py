"""The ``attnverify`` command line: list, check, verify and report, parsed here and run by `attnverify.commands`
(imported only to run one, so that ``--help`` and a usage error stay quick), and the theories' own commands
(`THEORY_COMMANDS`: train-one-shot), which their theory parses and runs.

Exit status: 0 when every claim came out as expected; 1 when any came out against its expectation (a refutation of a
claim expected to hold, a claim expected refuted that holds) or its check failed to run; 3 when none did but some were
inconclusive where a decision was expected (draw more: the table says how many); 2 for a usage error
(unknown option value, a pattern matching no claim, a backend that cannot run here) and for a mistake in a user's
file (a claim's definition, its plan, its section), shown as one line ``FILE:LINE: what is wrong`` and the frames of
the user's code; ``--debug`` adds attnverify's own frames.
"""

from __future__ import annotations

import argparse
import os
import sys

from .base import MOST_EXAMPLES, PROFILES, __version__
from .base.backend import BACKEND_NAMES, ENVIRONMENT_VARIABLE, BackendUnavailable


def _prepare_store(path: str) -> str:
    """The ``--store`` folder, checked before a long run (an argparse type): made if missing, and written
    into once, so that a file, a read-only or an unwritable folder is a usage error naming it."""
    from .base.files import folder_problem

    problem = folder_problem(path)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{path!r} {problem}; give a folder the store can be written into")
    return path


class _Once(argparse.Action):
    """An option given at most once: a second ``--only`` would silently replace the first."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"{option_string} given twice ({getattr(namespace, self.dest)!r}, {values!r}): give one "
                         "PATTERN, a claim's name or a part that the names to run share")
        setattr(namespace, self.dest, values)


def _integer_at_least(minimum: int, what: str, maximum: int | None = None, meaning: str = ""):
    """An argparse type: an integer ≥ ``minimum``, and ≤ ``maximum`` where one is given (``meaning`` says why)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if maximum is None and value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer ≥ {minimum}, got {text!r}")
        if maximum is not None and not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be an integer in [{minimum}, {maximum:,}] ({meaning}), "
                                             f"got {text!r}"[:200])
        return value

    parse.__name__ = what  # argparse names the type in its messages
    return parse


_seed = _integer_at_least(0, "seed")


def _not_empty(text: str) -> str:
    """An argparse type for a path: not empty (an empty one would be read as not given)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must name a folder or file, got ''")
    return text


def _add_run_options(parser: argparse.ArgumentParser, only_help: str, *, only_metavar: str = "PATTERN") -> None:
    """The options of a run, the same for ``check``, ``verify`` and ``report``: which claims or theories, the
    profile, backend and seed, the examples, where the tasks run (``--workers``, ``--scheduler``), the store, and
    how a mistake is shown."""
    group = parser.add_argument_group("run options")
    group.add_argument("--only", metavar=only_metavar, help=only_help, action=_Once)
    group.add_argument("--profile", choices=PROFILES, default="quick",
                       help="quick (default; seconds to minutes) or thorough (more examples, larger samples)")
    group.add_argument("--backend", choices=BACKEND_NAMES, default=None,
                       help=f"array backend (default: ${ENVIRONMENT_VARIABLE}, else numpy); cupy needs a GPU")
    group.add_argument("--seed", type=_seed, default=0, help="seed of the whole run (default 0); replays exactly")
    from .execution.cluster import most_workers

    group.add_argument("--examples", type=_integer_at_least(1, "count", MOST_EXAMPLES, "examples per claim"),
                       default=None, metavar="N",
                       help="examples per claim, instead of each claim's own number for the profile")
    group.add_argument("--workers", type=_integer_at_least(1, "count", most_workers(), "8 processes per CPU at most"),
                       default=None, metavar="N",
                       help="worker processes running the run's tasks side by side (default: one per CPU, here "
                            f"{os.cpu_count() or 1}, for a report; 1 for checking claims alone); 1 runs everything "
                            "in this process. The results do not depend on it")
    group.add_argument("--scheduler", type=_scheduler, default=None, metavar="ADDRESS",
                       help="run on a Dask cluster: local[:N] starts N worker processes for this run, an address "
                            "(tcp://host:8786) uses a running scheduler; needs the [distributed] extra. The "
                            "results are those of a run without it")
    group.add_argument("--store", type=_prepare_store, metavar="DIR", default=None,
                       help="keep the run's experiments and finished examples and claims in DIR (default: a "
                            "temporary folder): a rerun with the same DIR, e.g. after an interruption, computes only "
                            "what is not there yet; on a cluster, a folder every worker reaches")
    group.add_argument("--debug", action="store_true",
                       help="a mistake in your file, or an error of a claim's code, is shown with your code's "
                            "frames; --debug shows attnverify's own frames too (the full traceback)")


def _scheduler(text: str) -> str:
    from .execution.cluster import parse_scheduler

    try:
        parse_scheduler(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--scheduler ")) from None
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attnverify",
        description="A symbolic-numeric verifier for the theory of attention layers.",
    )
    parser.add_argument("--version", action="version", version=f"attnverify {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    listing = commands.add_parser("list", help="list the built-in claims")
    listing.add_argument("--only", metavar="PATTERN", action=_Once,
                         help="only the claim named PATTERN, else the claims whose name contains it")
    listing.set_defaults(handler="run_list")

    check = commands.add_parser("check", help="check the built-in claims")
    _add_run_options(check, "only the claim named PATTERN, else the claims whose name contains it")
    check.add_argument("--json", metavar="FILE", type=_not_empty,
                       help="write the results as JSON (rewritten after each claim)")
    check.set_defaults(handler="run_check")

    verify = commands.add_parser("verify", help="check the claims defined in your own FILE.py")
    verify.add_argument("file", metavar="FILE.py",
                        help="a theory file: a Theory (attnverify.Theory) or claims made with @claim")
    _add_run_options(verify, "only the claim named PATTERN, else the claims whose name contains it")
    verify.add_argument("--json", metavar="FILE", type=_not_empty,
                        help="write the results as JSON (rewritten after each claim)")
    verify.add_argument("--report", metavar="DIR", default=None, type=_not_empty,
                        help="also build the file's report (its section, derivations, figures and claims) into DIR")
    verify.add_argument("--latex", action="store_true",
                        help="with --report: also write DIR/report.tex (compile it with pdflatex)")
    verify.set_defaults(handler="run_verify")

    report = commands.add_parser("report", help="build the derivation report (HTML, Markdown, JSON)")
    report.add_argument("--out", metavar="DIR", required=True, type=_not_empty,
                        help="directory to write the report into")
    _add_run_options(report, "only the theory named THEORY", only_metavar="THEORY")
    report.add_argument("--with", dest="with_files", metavar="FILE.py", action="append", default=[],
                        help="add the theory of your own FILE.py (its claims, and its build_section or docstring "
                             "and derivations()) to the report; repeatable")
    report.add_argument("--latex", action="store_true",
                        help="also write DIR/report.tex: derivations as aligned equations with their step checks, "
                             "claims as tables, figures as PDF (compile it with pdflatex)")
    report.set_defaults(handler="run_report")

    for name, (_, summary) in THEORY_COMMANDS.items():  # listed here; their options are their theory's
        commands.add_parser(name, help=summary, add_help=False)
    return parser


THEORY_COMMANDS = {
    "train-one-shot": ("attnverify.theories.attention_paths.one_shot.command",
                       "train the figure-3 attention networks by gradient descent and cache them (needs [train])"),
}
"""A theory's own commands: name → (the theory's module whose ``main(argv)`` runs it, one line of help). The module
parses the arguments after the name itself (``attnverify train-one-shot --help`` says its options)."""


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in THEORY_COMMANDS:  # the theory's own parser reads the rest
        import importlib

        module = THEORY_COMMANDS[argv[0]][0]
        return _handled(lambda: importlib.import_module(module).main(argv[1:]), (BackendUnavailable,))
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse: --help/--version (0) or a usage error (2)
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 2)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    from . import commands  # the machinery, imported only to run a command
    from .execution.cluster import SchedulerUnavailable

    return _handled(lambda: getattr(commands, args.handler)(args),
                    (commands.UsageError, commands.UserFileMistake, BackendUnavailable, SchedulerUnavailable))


def _handled(run, usage: tuple) -> int:
    """``run()``'s exit status, every command's errors said in one line: ``usage`` ones (2), a reader that left (a
    broken pipe), a file that cannot be written, Ctrl-C (130)."""
    try:
        return run()
    except usage as error:
        print(f"attnverify: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `attnverify list | head`: the reader left, nothing is wrong
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except OSError as error:  # a full disk or a folder that became read-only while writing results
        where = error.filename or "a results file"
        print(f"attnverify: error: cannot write {where}: {error.strerror or error} (what had finished is kept in "
              "the files written before)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\nattnverify: interrupted (results of finished claims are kept in --json/results.json; with --store "
              "DIR, a rerun with the same DIR goes on from the finished examples)", file=sys.stderr)
        return 130
