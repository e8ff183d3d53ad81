"""The command line: list, check, verify and report, with their exit statuses (0, 1, 2).

The built-in claims are replaced by tiny fake ones, so these tests depend on no theory module.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import attnverify
from attnverify import cli, commands
from attnverify import theories
from attnverify.checks import close, st
from attnverify.checks.claim import claim
from attnverify.base.backend import cupy_works
from attnverify.report import Section
from attnverify.run import report as builder
from attnverify.theories import of_module

SMALL = {"quick": 3, "thorough": 4}
INTEGERS = st.fixed_dictionaries({"x": st.integers(-5, 5)})


@claim("fake.square_is_product", parameters=INTEGERS, examples=SMALL, source="Fake (2024), eq. 1", origin="")
def square_is_product(params, ctx):
    """x² equals x·x."""
    return close(params["x"] ** 2, params["x"] * params["x"])


@claim("fake.square_is_two", parameters=INTEGERS, expect="refuted", examples=SMALL, origin="")
def square_is_two(params, ctx):
    """x² = 2 for integers (false: the tool must refute it)."""
    return close(float(params["x"] ** 2), 2.0)


@claim("wrong.square_is_x", parameters=INTEGERS, examples=SMALL, origin="")
def square_is_x(params, ctx):
    """x² = x (false, but expected to hold: an unexpected refutation)."""
    return close(float(params["x"] ** 2), float(params["x"]), note="squares are not the identity")


@claim("broken.bad_strategy", parameters=st.integers(0, 3).map(lambda v: 1 // 0), examples=SMALL, origin="")
def bad_strategy(params, ctx):
    """Never reached: drawing the parameters fails."""
    return close(1.0, 1.0)


ALL = [square_is_product, square_is_two, square_is_x, bad_strategy]


@pytest.fixture(autouse=True)
def fake_claims(monkeypatch):
    monkeypatch.setattr(theories, "builtin_claims", lambda: list(ALL))
    monkeypatch.delenv("ATTNVERIFY_BACKEND", raising=False)


def test_list_shows_name_expectation_source_and_statement(capsys):
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    for c in ALL:
        assert c.name in out
    assert "Fake (2024), eq. 1" in out and "refuted" in out and "4 claims" in out


def test_list_of_one_claim_says_its_statement_in_full(capsys):
    name = ALL[0].name
    assert cli.main(["list", "--only", name]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{name} (expect {ALL[0].expect})") and f"statement: {ALL[0].statement}" in out


def test_list_with_a_pattern_matching_nothing_is_a_usage_error(capsys):
    assert cli.main(["list", "--only", "nothing_like_this"]) == 2
    assert "matches none" in capsys.readouterr().err


def test_check_passes_when_every_claim_comes_out_as_expected(capsys):
    assert cli.main(["check", "--only", "fake"]) == 0
    captured = capsys.readouterr()
    assert "fake.square_is_product" in captured.out and "UNEXPECTED" not in captured.out
    # the expected refutation is still spelled out, with its replay line
    assert "--- fake.square_is_two: refuted (expected refuted) -> OK" in captured.out
    assert "replay:     attnverify check --only fake.square_is_two --profile quick --backend numpy --seed 0" \
        in captured.out
    # stderr is not a terminal here: one line per claim
    assert "[1/2] fake.square_is_product (3 examples) ... holds, OK" in captured.err


def test_check_fails_on_an_unexpected_refutation_and_shows_the_counterexample(capsys):
    assert cli.main(["check", "--only", "wrong", "--seed", "7"]) == 1
    out = capsys.readouterr().out
    assert "UNEXPECTED" in out and "counterexample" in out
    assert "parameters: x=" in out and "tolerance:" in out and "squares are not the identity" in out
    assert "--seed 7" in out and "this example alone: attnverify.checks.runner.evaluate" in out
    assert out.split("this example alone: ")[1].splitlines()[0].endswith(", seed=7)")  # the run's seed, as ctx had it


def test_a_crash_while_drawing_parameters_is_an_error_result(capsys):
    assert cli.main(["check", "--only", "broken"]) == 1
    out = capsys.readouterr().out
    assert "error" in out and "ZeroDivisionError" in out


def test_usage_errors_exit_2(capsys):
    assert cli.main(["check", "--only", "no_such_claim"]) == 2
    assert "matches none of the 4 claims" in capsys.readouterr().err
    assert cli.main(["check", "--profile", "slow"]) == 2
    assert cli.main(["check", "--backend", "tpu"]) == 2
    assert cli.main([]) == 2
    assert cli.main(["--help"]) == 0


@pytest.mark.parametrize("option, value, says", [
    ("--workers", "99999999999999999999999", "--workers: must be an integer in [1, "),
    ("--workers", "1000000000", "8 processes per CPU at most"),
    ("--scheduler", "local:100000", "--scheduler: local:N needs a number of workers N in [1, "),
    ("--examples", "1000000000000", "--examples: must be an integer in [1, 1,000,000]"),
    ("--json", "", "--json: must name a folder or file, got ''")])
def test_sizes_beyond_what_a_machine_runs_and_empty_paths_are_usage_errors(capsys, option, value, says):
    """A count of processes or examples no run could finish (or OverflowError from multiprocessing), and an empty
    path (read as not given), are refused before anything starts."""
    assert cli.main(["check", "--only", "gp_limit", option, value]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err, err


@pytest.mark.parametrize("variable, value, says", [
    ("ATTNVERIFY_STEP_BUDGET", "abc", "ATTNVERIFY_STEP_BUDGET must be a positive number of CPU seconds"),
    ("ATTNVERIFY_STEP_BUDGET", "-5", "got '-5'"),
    ("ATTNVERIFY_KEEP_DERIVATIONS", "maybe", "ATTNVERIFY_KEEP_DERIVATIONS must be 0 (derive afresh")])
def test_bad_settings_from_the_environment_are_usage_errors(capsys, monkeypatch, variable, value, says):
    """Read further down (by each step's check, by the caches), a bad value is one usage line before the run, not an
    error in every claim that reads it."""
    monkeypatch.setenv(variable, value)
    assert cli.main(["check", "--only", "gp_limit"]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err, err


def test_bad_backend_from_the_environment_is_a_usage_error(capsys, monkeypatch):
    monkeypatch.setenv("ATTNVERIFY_BACKEND", "tpu")
    assert cli.main(["check", "--only", "fake"]) == 2
    assert "ATTNVERIFY_BACKEND" in capsys.readouterr().err


def test_cupy_without_a_gpu_is_a_clear_one_line_error(capsys):
    status = cli.main(["check", "--only", "fake.square_is_product", "--backend", "cupy"])
    if cupy_works():
        pytest.skip("cupy works on this machine")
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith("attnverify: error: backend 'cupy' was requested but")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_json_is_written_after_each_claim(tmp_path, capsys, monkeypatch):
    path = tmp_path / "results.json"
    written = []
    real = commands.write_json

    def spy(document, target):
        real(document, target)
        document = json.loads(Path(target).read_text())
        written.append((len(document["claims"]), document["complete"], document["not_run"]))

    monkeypatch.setattr(commands, "write_json", spy)
    assert cli.main(["check", "--only", "fake", "--json", str(path)]) == 0
    # an incomplete file up front naming every claim, then after each claim
    assert written == [(0, False, ["fake.square_is_product", "fake.square_is_two"]),
                       (1, False, ["fake.square_is_two"]), (2, True, [])]
    claims = json.loads(path.read_text())["claims"]
    assert [c["name"] for c in claims] == ["fake.square_is_product", "fake.square_is_two"]
    assert all(c["ok"] for c in claims)


def test_json_into_a_missing_directory_is_a_usage_error(tmp_path, capsys):
    assert cli.main(["check", "--only", "fake", "--json", str(tmp_path / "no" / "dir.json")]) == 2
    assert "cannot write --json" in capsys.readouterr().err


USER_FILE = '''
from attnverify.checks import claim, close, st

@claim("mine.double", parameters=st.fixed_dictionaries({"x": st.integers(0, 9)}),
       examples={"quick": 3, "thorough": 3})
def double(params, ctx):
    """2x = x + x."""
    return close(2.0 * params["x"], params["x"] + params["x"])

@claim("mine.cube", parameters=st.fixed_dictionaries({"x": st.integers(2, 9)}),
       examples={"quick": 3, "thorough": 3})
def cube(params, ctx):
    """x³ = 3x (false)."""
    return close(float(params["x"] ** 3), 3.0 * params["x"])
'''


def test_verify_runs_the_claims_of_a_user_file(tmp_path, capsys):
    path = tmp_path / "my_claims.py"
    path.write_text(USER_FILE)
    assert cli.main(["verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert "mine.double" in out and "mine.cube" in out
    assert "--- mine.cube: refuted (expected holds) -> UNEXPECTED" in out
    assert "counterexample" in out and "parameters: x=2" in out  # shrunk to the smallest x
    assert f"replay:     attnverify verify {path} --only mine.cube" in out
    # the example alone, in a fresh session: the claim from its file, evaluated at the counterexample
    call = next(line for line in out.splitlines() if "this example alone:" in line).split("this example alone: ")[1]
    import attnverify.checks.runner  # noqa: F401  (what the line names)
    import attnverify.theories  # noqa: F401
    assert eval(call, {"attnverify": attnverify}).evidence.status == "refuted"
    assert cli.main(["verify", str(path), "--only", "mine.double"]) == 0
    # a report runs every claim and writes its own results.json: a subset or another file is refused, not ignored
    for option in (["--only", "mine.double"], ["--json", str(tmp_path / "r.json")]):
        assert cli.main(["verify", str(path), "--report", str(tmp_path / "rep"), *option]) == 2
        assert f"{option[0]} cannot go with --report" in capsys.readouterr().err


def test_verify_a_theory_with_derivations_and_no_claims_checks_its_steps(tmp_path, capsys):
    """A first file often holds only a derivation: its steps are the theory's one claim, derivation_steps."""
    path = tmp_path / "steps_only.py"
    path.write_text("from sympy import Eq, symbols\nfrom attnverify import Theory\n"
                    "theory = Theory('stepsonly')\nx, y = symbols('x y', positive=True)\n"
                    "@theory.derivation\ndef square(step):\n    \"\"\"A square\"\"\"\n"
                    "    step('Definition', Eq(y, (x + 1)**2), kind='definition')\n"
                    "    step('Expanded', Eq(y, x**2 + 2*x + 1))\n")
    assert cli.main(["verify", str(path)]) == 0
    assert "stepsonly.derivation_steps" in capsys.readouterr().out
    bare = tmp_path / "bare.py"
    bare.write_text("from attnverify import Theory\ntheory = Theory('bare')\n")
    assert cli.main(["verify", str(bare)]) == 2
    assert "defines no claims" in capsys.readouterr().err


def test_verify_usage_errors(tmp_path, capsys):
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    assert cli.main(["verify", str(empty)]) == 2
    assert "defines no claims" in capsys.readouterr().err
    assert cli.main(["verify", str(tmp_path / "absent.py")]) == 2
    assert "existing .py file" in capsys.readouterr().err
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('oops in user code')\n")
    assert cli.main(["verify", str(broken)]) == 2
    assert "oops in user code" in capsys.readouterr().err


@pytest.fixture
def fake_section(monkeypatch):
    module = types.ModuleType("attnverify_test_fake")
    module.build_section = lambda out_dir, settings, progress: Section("fake", "A fake theory", "Nothing to derive.")
    module.square_is_product, module.square_is_two = square_is_product, square_is_two
    monkeypatch.setattr(builder, "THEORIES", (of_module(module, "fake"),))


def test_report_command_writes_the_report(tmp_path, capsys, fake_section):
    out = tmp_path / "report"
    assert cli.main(["report", "--out", str(out), "--workers", "1"]) == 0  # the fake lives in this process only
    assert {"index.html", "report.md", "report.txt", "results.json"} <= {p.name for p in out.iterdir()}
    assert "report written to" in capsys.readouterr().out
    assert cli.main(["report", "--out", str(out), "--only", "nonexistent"]) == 2
    assert "matches no theory" in capsys.readouterr().err


def test_python_dash_m_runs_the_same_command_line():
    src = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "attnverify", "check", "--help"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and "--profile" in done.stdout


def test_progress_on_a_terminal_is_a_live_display():
    """On a terminal: a rich live display with a bar per claim (examples done of its number) and each finished
    claim printed as a line; elsewhere plain lines (the other CLI tests read those)."""
    import io

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    from attnverify.execution.tasks import ClaimFinished, ClaimStarted, ExampleChecked

    stream = Terminal()
    progress = commands.Progress(stream)
    progress(ClaimStarted(1, 1, square_is_product.name, 3))
    progress(ExampleChecked(square_is_product.name, 2, 3))
    assert "[1/1] fake.square_is_product" in stream.getvalue() and "2/3" in stream.getvalue()
    progress(ExampleChecked("other.claim", 4, 5))  # from a worker, before its start event arrived
    assert "4/5" in stream.getvalue()
    progress("a status line: example 1/2 of nothing")  # a plain line is a status line, never parsed
    progress(ClaimFinished(1, 2, "other.claim", "holds", "OK", 0.3, False))
    progress.close()
    assert "[1/2] other.claim: holds, OK (0.3 s)" in stream.getvalue()


def test_progress_in_a_log_reads_events_by_type_not_by_their_text():
    """Plain lines: a claim's start and outcome on one line when nothing came between them; example counters are
    not printed; a status line that looks like a counter is printed as it is (nothing parses the text)."""
    import io

    from attnverify.execution.tasks import ClaimFinished, ClaimStarted, ExampleChecked

    stream = io.StringIO()
    progress = commands.Progress(stream)
    progress(ClaimStarted(1, 2, "x.a", 3))
    progress(ExampleChecked("x.a", 1, 3))
    progress(ClaimFinished(1, 2, "x.a", "holds", "OK", 0.25, False))
    progress(ClaimStarted(2, 2, "x.b", 4))
    progress("x.b: example 9/9 (a status line)")
    progress(ClaimFinished(2, 2, "x.b", "refuted", "UNEXPECTED", 1.0, False))
    progress.close()
    assert stream.getvalue().splitlines() == [
        "[1/2] x.a (3 examples) ... holds, OK (0.2 s)", "[2/2] x.b (4 examples) ... ",
        "x.b: example 9/9 (a status line)", "[2/2] x.b: refuted, UNEXPECTED (1.0 s)"]


def test_the_readme_example_refutes_the_heuristic_and_confirms_the_safe_bound(capsys):
    """The README's `attnverify verify examples/new_bound.py` run, as a user would type it (with 6 examples
    per claim instead of the default 21, to keep the quick tier quick: the heuristic fails on the first)."""
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "new_bound.py"
    code = cli.main(["verify", str(example), "--examples", "6"])
    out = capsys.readouterr().out
    assert code == 1
    assert "mybounds.erfc_squared" in out and "refuted" in out and "counterexample" in out
    assert [line for line in out.splitlines() if line.startswith("mybounds.two_erfc")][0].split()[2] == "holds"


def test_verify_json_replays_with_the_verify_command(tmp_path, capsys):
    path, out = tmp_path / "my_claims.py", tmp_path / "out.json"
    path.write_text(USER_FILE)
    assert cli.main(["verify", str(path), "--json", str(out)]) == 1
    replays = {c["name"]: c["replay"] for c in json.loads(out.read_text())["claims"]}
    assert replays["mine.cube"].startswith(f"attnverify verify {path} --only mine.cube ")
    # the recorded replay runs and reproduces the refutation
    assert cli.main(replays["mine.cube"].split()[1:]) == 1


@pytest.mark.parametrize("where", ["file", "proc"])
def test_report_into_an_unusable_folder_is_a_usage_error(tmp_path, capsys, fake_section, where):
    target = tmp_path / "a_file.txt" if where == "file" else Path("/proc/attnverify_report")
    if where == "file":
        target.write_text("not a folder")
    assert cli.main(["report", "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "Traceback" not in err


def test_an_interrupted_run_says_which_claims_did_not_run(tmp_path, capsys, monkeypatch):
    path = tmp_path / "results.json"
    from attnverify.run import claims as run_claims

    real = run_claims.run_claim_or_error

    def interrupt_second(claim, settings, **kwargs):
        if claim.name == "fake.square_is_two":
            raise KeyboardInterrupt
        return real(claim, settings, **kwargs)

    monkeypatch.setattr(run_claims, "run_claim_or_error", interrupt_second)
    assert cli.main(["check", "--only", "fake", "--json", str(path)]) == 130
    document = json.loads(path.read_text())
    assert document["complete"] is False and document["not_run"] == ["fake.square_is_two"]
    assert [c["name"] for c in document["claims"]] == ["fake.square_is_product"]


def test_negative_seed_is_a_usage_error(capsys):
    assert cli.main(["check", "--only", "fake", "--seed", "-1"]) == 2
    assert "--seed" in capsys.readouterr().err


def test_hypothesis_keeps_its_files_in_the_cache_not_the_working_directory(tmp_path, monkeypatch, capsys):
    from hypothesis import configuration

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTNVERIFY_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HYPOTHESIS_STORAGE_DIRECTORY", raising=False)
    try:
        assert cli.main(["check", "--only", "fake"]) == 0
        assert not (tmp_path / ".hypothesis").exists()
        assert configuration.storage_directory("x", intent_to_write=False).path == tmp_path / "cache" / "hypothesis" / "x"
    finally:
        configuration.set_hypothesis_home_dir(None)


def test_verify_imports_the_files_siblings(tmp_path, capsys, monkeypatch):
    """A user's claims file imports a helper module next to it, as `python FILE.py` would allow."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "my_helpers_for_verify.py").write_text("def twice(x):\n    return 2.0 * x\n")
    path = tmp_path / "claims_with_helper.py"
    path.write_text(
        "from attnverify.checks import claim, close, st\n"
        "from my_helpers_for_verify import twice\n\n"
        "@claim('mine.twice', parameters=st.fixed_dictionaries({'x': st.integers(0, 9)}))\n"
        "def twice_is_a_sum(params, ctx):\n"
        "    \"\"\"twice(x) = x + x.\"\"\"\n"
        "    return close(twice(params['x']), params['x'] + params['x'])\n")
    assert cli.main(["verify", str(path)]) == 0
    assert "mine.twice" in capsys.readouterr().out


def test_examples_sets_the_number_of_examples_of_every_claim(tmp_path, capsys):
    path, out = tmp_path / "my_claims.py", tmp_path / "out.json"
    path.write_text(USER_FILE)
    assert cli.main(["verify", str(path), "--only", "mine.double", "--examples", "7", "--json", str(out)]) == 0
    (result,) = json.loads(out.read_text())["claims"]
    assert len(result["examples"]) == 7 and result["replay"].endswith("--examples 7")
    assert cli.main(["verify", str(path), "--only", "mine.double", "--examples", "0"]) == 2
    assert "--examples" in capsys.readouterr().err


def test_the_worked_example_goes_through_the_report_like_a_builtin_theory(tmp_path, capsys):
    """The README's `attnverify report --with examples/partition_theory.py --only partition`: the user's theory
    gets its derivation (with its steps and named results), its claims (one refuted as expected) and its
    theory-vs-simulation figure in the same HTML/Markdown/JSON report as the built-in theories."""
    example = Path(__file__).resolve().parents[1] / "examples" / "partition_theory.py"
    out = tmp_path / "mine"
    code = cli.main(["report", "--with", str(example), "--only", "partition", "--out", str(out), "--workers", "1",
                     "--latex"])
    assert code == 0, capsys.readouterr()
    tex = (out / "report.tex").read_text()
    assert "\\begin{align*}" in tex and "Steps checked: 4 steps" in tex and "\\begin{longtable}" in tex
    assert "\\includegraphics[width=0.7\\linewidth]{partition_mean_matches_derivation.pdf}" in tex
    assert (out / "partition_mean_matches_derivation.pdf").is_file()
    document = json.loads((out / "results.json").read_text())
    (section,) = document["sections"]
    assert section["theory"] == "partition" and section["title"].startswith("Example: the softmax partition")
    (derivation,) = section["derivations"]
    assert len(derivation["steps"]) == 4 and derivation["steps"][-1]["name"] == "partition_mean"
    assert "e^{\\frac{\\sigma^{2}}{2}}" in derivation["steps"][-1]["latex"]
    statuses = {c["name"]: (c["status"], c["ok"]) for c in document["claims"]}
    assert statuses == {"partition.mean_matches_derivation": ("holds", True),
                        "partition.log_partition_is_log_of_mean": ("refuted", True),
                        "partition.jensen_gap_is_nonnegative": ("holds", True),
                        "partition.derivation_steps": ("holds", True)}
    assert derivation["checks"]["failed"] == 0 and all("check" in step for step in derivation["steps"])
    refuted = next(c for c in document["claims"] if c["status"] == "refuted")
    assert refuted["replay"].startswith(f"attnverify verify {example} --only partition.log_partition_is_log_of_mean")
    (figure,) = section["figures"]
    assert (out / figure["filename"]).is_file() and len(figure["data"]["mean"]) == 8
    page = (out / "index.html").read_text()
    assert figure["filename"] in page and "partition.jensen_gap_is_nonnegative" in page and "<math" in page


def test_verify_with_report_builds_the_files_report(tmp_path, capsys):
    path, out = tmp_path / "my_claims.py", tmp_path / "report"
    path.write_text(USER_FILE)
    assert cli.main(["verify", str(path), "--report", str(out), "--workers", "1"]) == 1  # mine.cube is refuted
    document = json.loads((out / "results.json").read_text())
    assert [s["theory"] for s in document["sections"]] == ["mine"]
    assert {c["name"] for c in document["claims"]} >= {"mine.cube"}


def test_a_theory_file_that_clashes_or_mixes_names_is_a_usage_error(tmp_path, capsys):
    clash = tmp_path / "clash.py"
    clash.write_text('THEORY = "single_location"\n')
    assert cli.main(["report", "--with", str(clash), "--out", str(tmp_path / "r")]) == 2
    assert "theory names must be unique" in capsys.readouterr().err
    mixed = tmp_path / "mixed.py"
    mixed.write_text(USER_FILE + '\nTHEORY = "other"\n')
    assert cli.main(["report", "--with", str(mixed), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"attnverify: error: {mixed}:") and "named under theory 'mine', but THEORY is 'other'" in err


def test_check_hands_its_claims_to_the_one_run_path(monkeypatch, capsys):
    """``check`` (and ``verify``) has no loop of its own: its claims go to run_claims_as_tasks, serially in
    this process, as a report's go (through the same tasks)."""
    seen = []
    real = commands.run_claims_as_tasks

    def spy(claims, theories, settings, **options):
        seen.append(([c.name for c in claims], settings.scheduler, settings.workers))
        return real(claims, theories, settings, **options)

    monkeypatch.setattr(commands, "run_claims_as_tasks", spy)
    assert cli.main(["check", "--only", "fake"]) == 0
    assert seen == [(["fake.square_is_product", "fake.square_is_two"], None, 1)]


def test_check_verify_and_report_take_the_same_run_options():
    parser = cli.build_parser()
    subparsers = parser._subparsers._group_actions[0].choices
    options = {name: sorted(tuple(a.option_strings) for g in subparsers[name]._action_groups
                            if g.title == "run options" for a in g._group_actions)
               for name in ("check", "verify", "report")}
    assert options["check"] == options["verify"] == options["report"]
    assert ("--workers",) in options["check"] and ("--scheduler",) in options["check"]
    run = ["--profile", "thorough", "--backend", "numpy", "--seed", "3", "--examples", "2", "--workers", "2",
           "--scheduler", "local:2", "--debug"]
    for argv in (["check", *run], ["verify", "mine.py", *run], ["report", "--out", "report", *run]):
        args = parser.parse_args(argv)
        assert (args.profile, args.backend, args.seed, args.examples, args.workers, args.scheduler, args.debug) == (
            "thorough", "numpy", 3, 2, 2, "local:2", True)
    assert commands.default_workers(None, report=False) == 1
    assert commands.default_workers(None, report=True) == (os.cpu_count() or 1)
    assert commands.default_workers(3, report=False) == 3


def test_an_option_given_twice_is_refused_rather_than_silently_replaced(capsys):
    assert cli.main(["list", "--only", "single_location", "--only", "attention_paths"]) == 2
    assert "--only given twice ('single_location', 'attention_paths')" in capsys.readouterr().err
    assert cli.main(["list"]) == 0


def test_help_and_a_usage_error_import_none_of_the_machinery():
    """``attnverify --help`` (0.08 s on the 2-core VM, against 0.66 s with every command's machinery imported) and
    a usage error parse without importing sympy, scipy, hypothesis or the theories: only running a command does."""
    probe = ("import sys\nfrom attnverify import cli\nfor argv in (['--help'], ['check', '--seed', '-1']):\n"
             "    cli.main(argv)\nheavy = ('sympy', 'scipy', 'hypothesis', 'attnverify.theories', 'attnverify.commands')\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout[-500:]


def test_a_theorys_own_command_is_listed_and_parsed_by_its_theory(capsys):
    """train-one-shot is listed by ``--help`` (which imports no theory: above) and run by its theory's module, which
    says its options and refuses a bad seed by name, before looking for the [train] extra."""
    assert cli.main(["train-one-shot", "--help"]) == 0
    assert "--update-package-data" in capsys.readouterr().out
    assert cli.main(["train-one-shot", "--seeds", "2", "-1"]) == 2
    assert "--seeds must be integers ≥ 0, got [2, -1]" in capsys.readouterr().err
    assert cli.main(["train-one-shot", "--out"]) == 2 and "expected one argument" in capsys.readouterr().err


def test_a_theorys_command_gets_the_command_lines_error_handling(monkeypatch, capsys):
    """Ctrl-C in a theory's command exits 130 with the one line every command gives, and an unwritable file is one
    line too (not a traceback)."""
    for raised, status, said in ((KeyboardInterrupt(), 130, "interrupted"),
                                 (PermissionError(13, "Permission denied", "/x.npz"), 1, "cannot write /x.npz")):
        module = types.ModuleType("attnverify_test_theory_command")
        module.main = lambda argv, raised=raised: (_ for _ in ()).throw(raised)
        monkeypatch.setitem(sys.modules, module.__name__, module)
        monkeypatch.setitem(cli.THEORY_COMMANDS, "fake-command", (module.__name__, "a fake"))
        assert cli.main(["fake-command", "--seeds", "1"]) == status
        assert said in capsys.readouterr().err
