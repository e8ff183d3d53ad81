"""What the commands of the ``attnverify`` command line do (`attnverify.cli` parses them and comes here only
to run one): ``list``, ``check``, ``verify`` and ``report``. ``check`` runs the built-in claims,
``verify FILE.py`` a theorist's own, both through `run_and_report`; ``report`` builds the HTML/Markdown report.
Kept apart from the parser so that ``attnverify --help`` and a usage error import none of the machinery."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

from . import theories
from .theories import builtin as builtin_theories, catalogue
from .checks.claim import Claim, select
from .checks.runner import results_document, write_json
from .progress import Progress
from .run.claims import exit_status, run_claims_as_tasks, verify_command
from .base.backend import ENVIRONMENT_VARIABLE, backend_from_environment
from .execution.settings import RunSettings
from .report.results import needs_details, result_details, results_table, text_table
from .checks.story import summary_line


class UsageError(Exception):
    """A command line that cannot be carried out as given (exit status 2)."""


class UserFileMistake(Exception):
    """A mistake in a user's file (exit status 2): its report, with attnverify's frames only under ``--debug``."""

    def __init__(self, error: catalogue.UserFileError, debug: bool):
        super().__init__(error.report(debug=debug))


# ----------------------------------------------------------------------------- running claims

def run_and_report(
    claims: list[Claim],
    settings: RunSettings,
    *,
    json_path: str | None = None,
    command: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    theories: list | None = None,
    debug: bool = False,
) -> int:
    """Run ``claims`` (each of one of ``theories``, default the built-in ones) through the one run path,
    `attnverify.run.claims.run_claims_as_tasks`, with ``settings``: one after another in this process, on their
    ``workers`` local processes, or as tasks on their Dask cluster ``scheduler``; print the results table and the
    detail of every surprise or refutation; with ``json_path`` rewrite the results after each claim. With a store
    folder, the run's experiments and its finished examples and claims are kept there, and a rerun takes them from
    there.

    ``command`` (default ``attnverify check``) is what the replay lines run. The JSON says which
    claims have not run yet (``"complete": false``) until the last one is done. An error of a claim's code is
    printed with the claim's own frames, and with attnverify's too where ``debug``. Returns the exit status.
    """
    out = out or sys.stdout
    progress = Progress(err or sys.stderr)

    def write(finished: list[dict], not_run: list[str]) -> None:
        if json_path:
            write_json(results_document(finished, not_run), json_path)

    try:
        results = run_claims_as_tasks(claims, theories or builtin_theories(), settings, say=progress,
                                      on_result=write, command=command)
    finally:
        progress.close()
    return _print_results(results, out=out, json_path=json_path, debug=debug)


def _print_results(results: list[dict], *, out: TextIO, json_path: str | None, debug: bool = False) -> int:
    print(results_table(results), file=out)
    for result in results:
        if needs_details(result):
            print("\n" + result_details(result, full_traceback=debug), file=out)
    print("\n" + summary_line(results), file=out)
    if json_path:
        print(f"results written to {json_path}", file=out)
    return exit_status(results)


def _check_environment() -> None:
    """The environment variables a run reads further down, checked before it starts: a bad one is one usage line,
    not an error in every claim that reads it."""
    from .base.cache import KEEP_VARIABLE
    from .derivations.steps.budget import step_budget

    try:
        step_budget()
    except ValueError as error:
        raise UsageError(str(error)) from None
    keep = os.environ.get(KEEP_VARIABLE)
    if keep is not None and keep not in ("0", "1"):
        raise UsageError(f"{KEEP_VARIABLE} must be 0 (derive afresh in every process) or 1 (keep derivations on "
                         f"disk, the default), got {keep!r}")


def _settings(args: argparse.Namespace, *, report: bool) -> RunSettings:
    """The run's settings from the command line, made and checked here, once: the backend chosen at the edge
    (``--backend``, else ``$ATTNVERIFY_BACKEND``, else numpy; nothing below the command line reads the environment),
    ``--workers`` or its default (`default_workers`)."""
    try:
        backend = backend_from_environment(args.backend)
    except ValueError as error:  # e.g. a bad ATTNVERIFY_BACKEND
        raise UsageError(f"{error} (from --backend or {ENVIRONMENT_VARIABLE})") from None
    _check_environment()
    try:
        return RunSettings(profile=args.profile, backend=backend, seed=args.seed, examples=args.examples,
                           store=args.store, workers=default_workers(args.workers, report=report),
                           scheduler=args.scheduler)
    except (TypeError, ValueError) as error:
        raise UsageError(str(error)) from None


def _prepare_json(path: str | None, claims: list[Claim]) -> None:
    """Fail before a long run, not after it, when the results file cannot be written; the file
    starts as an incomplete run with every claim still to run."""
    if path is None:
        return
    if Path(path).is_dir():
        raise UsageError(f"--json {path!r} is a directory; give a file name")
    try:
        write_json(results_document([], [c.name for c in claims]), path)
    except OSError as error:
        raise UsageError(f"cannot write --json {path!r}: {error.strerror or error}") from None


def _prepare_out(path: str) -> None:
    """Fail before a long run when the report folder cannot be made or written into."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {path!r} exists and is not a directory; give a folder for the report")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".attnverify-write-test"
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as error:
        raise UsageError(f"cannot write the report into --out {path!r}: {error.strerror or error}") from None


def _chosen(claims: list[Claim], only: str | None, where: str) -> list[Claim]:
    chosen = select(claims, only)
    if not chosen:
        raise UsageError(f"--only {only!r} matches none of the {len(claims)} claims {where}")
    return chosen


# ----------------------------------------------------------------------------- commands


def _shorten(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def run_list(args: argparse.Namespace) -> int:
    claims = _chosen(theories.builtin_claims(), args.only, "built in (run `attnverify list` to see them)")
    if len(claims) == 1:  # one claim: said in full
        (c,) = claims
        print(f"{c.name} (expect {c.expect})\nsource:    {c.source or '-'}\nstatement: {c.statement}")
        return 0
    rows = []
    for c in claims:
        rows.append([c.name, c.expect, _shorten(c.source or "-", 48), _shorten(c.statement, 90)])
    print(text_table(["name", "expect", "source", "statement"], rows))
    print(f"\n{len(claims)} claims")
    return 0


def run_check(args: argparse.Namespace) -> int:
    settings = _settings(args, report=False)
    claims = _chosen(theories.builtin_claims(), args.only, "built in (run `attnverify list` to see them)")
    _prepare_json(args.json, claims)
    return run_and_report(claims, settings, json_path=args.json, debug=args.debug)


def run_verify(args: argparse.Namespace) -> int:
    settings = _settings(args, report=bool(args.report))
    from .theories import from_file

    try:
        module = catalogue.load_user_module(args.file)
    except catalogue.UserFileError as error:
        raise UserFileMistake(error, args.debug) from None
    except ValueError as error:  # not a .py file
        raise UsageError(str(error)) from None
    try:  # the file's claims, and its derivation_steps claim when it records derivations
        with catalogue.user_file_errors(args.file):
            claims = catalogue.claims_in_module(module)
            if claims or hasattr(module, "THEORY") or catalogue.concise_theories(module):
                claims = from_file(args.file).claim_list()
    except catalogue.UserFileError as error:
        raise UserFileMistake(error, args.debug) from None
    if not claims:
        raise UsageError(
            f"{args.file} defines no claims: `theory = Theory(\"name\")` and `@theory.claim(x=st.floats(0, 1))` "
            "(from attnverify import Theory, st), or `@claim(\"theory.name\", parameters={...})` at the top level"
        )
    if args.latex and not args.report:
        raise UsageError("--latex writes the report's LaTeX: it goes with --report DIR (DIR/report.tex)")
    if args.report:
        given = [option for option, value in (("--only", args.only), ("--json", args.json)) if value]
        if given:  # a report runs, and writes in DIR/results.json, every claim of the file
            raise UsageError(f"{' and '.join(given)} cannot go with --report: the report runs every claim of the "
                             f"file and writes their results to {args.report}/results.json (run verify without "
                             "--report for a subset or another results file)")
        (theory,) = _user_theories([args.file], args.debug)
        return _build_and_print(args.report, settings, debug=args.debug, theories=[theory], only=None,
                                latex=args.latex)
    claims = _chosen(claims, args.only, f"defined in {args.file}")
    _prepare_json(args.json, claims)
    status = run_and_report(claims, settings, json_path=args.json, command=verify_command(args.file),
                            theories=_user_theories([args.file], args.debug), debug=args.debug)
    _say_derivation_cost(module)
    return status


def _say_derivation_cost(module) -> None:
    """What a concise theory's derivations cost this process (derived, or read from the disk), on stderr."""
    from .theories import concise

    form = concise(module)
    cost = form.derivation_cost() if form is not None else None
    if cost:
        print(cost, file=sys.stderr)


def _user_theories(files: list[str] | None, debug: bool = False) -> list:
    """The theories of the users' files (``--with FILE.py``), each checked before any work."""
    from . import theories

    found = []
    for path in files or []:
        if not (Path(path).is_file() and path.endswith(".py")):
            raise UsageError(f"FILE must be an existing .py file, got {path!r}")
        try:
            with catalogue.user_file_errors(path):
                found.append(theories.from_file(path))
        except catalogue.UserFileError as error:
            raise UserFileMistake(error, debug) from None
    names = [t.name for t in found]
    clashes = sorted({n for n in names if names.count(n) > 1} | (set(names) & set(catalogue.THEORIES)))
    if clashes:
        raise UsageError(f"theory names must be unique: {clashes} (set THEORY = \"…\" in the file)")
    return found


def run_report(args: argparse.Namespace) -> int:
    from .run import report as builder

    settings = _settings(args, report=True)
    theories = [*builder.default_theories(), *_user_theories(args.with_files, args.debug)]
    try:
        builder.chosen_theories(args.only, theories)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return _build_and_print(args.out, settings, debug=args.debug, theories=theories, only=args.only,
                            latex=args.latex)


def _build_and_print(out: str, settings: RunSettings, *, debug: bool = False, **options) -> int:
    """Build the report into ``out`` and print its claims; 2 when a user's section failed (its first line names the
    file and line), 1 when a built-in's did, else the claims' exit status."""
    from .run import report as builder

    _prepare_out(out)
    progress = Progress(sys.stderr)
    try:
        document = builder.build_report(out, settings, progress=progress, **options)
    except catalogue.UserFileError as error:  # the plan or the claims of a user's file, before any task ran
        raise UserFileMistake(error, debug) from None
    finally:
        progress.close()
    users = {t.name for t in options.get("theories") or () if catalogue.user_file(t)}
    for section in document["sections"]:
        for error in section["errors"]:
            if section["theory"] in users:  # the first line is FILE:LINE: what is wrong
                shown = error.strip() if debug else error.strip().splitlines()[0]
                print(f"attnverify: error: {shown} (the traceback is in the report)", file=sys.stderr)
            else:
                print(f"{section['theory']}: error: {error.strip().splitlines()[-1]} (traceback in the report)")
        for warning in section["warnings"]:
            print(f"{section['theory']}: warning: {warning}")
    status = _print_results(document["claims"], out=sys.stdout, json_path=None, debug=debug)
    out = Path(out)
    written = [out / "index.html", out / "report.md", out / "report.txt", out / "results.json"] + (
        [out / "report.tex"] if options.get("latex") else [])
    print(f"report written to {', '.join(str(w) for w in written[:-1])} and {written[-1]}")
    if any(section["errors"] for section in document["sections"] if section["theory"] in users):
        return 2
    return 1 if any(section["errors"] for section in document["sections"]) else status


# ----------------------------------------------------------------------------- parser


def default_workers(chosen: int | None, report: bool) -> int:
    """``--workers``, or its default: one worker process per CPU for a report (sections and claims side by side),
    this process alone for claims checked without one."""
    return chosen if chosen is not None else ((os.cpu_count() or 1) if report else 1)
