"""The pytest plugin: claims as test items, in a fresh pytest process as a user runs it (this suite's own modules
hold claims as fixtures, which ``tests/conftest.py`` keeps the plugin from collecting)."""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

FAILING = textwrap.dedent('''
    """Mine"""
    from attnverify import Theory, close, st

    theory = Theory("mine")

    @theory.claim(x=st.integers(-5, 5))
    def square_is_x(x):
        """x² = x (false, stated as true)."""
        return close(float(x * x), float(x))

    @theory.claim(x=st.integers(-5, 5), expect="refuted")
    def square_is_two(x):
        """x² = 2 (false, expected refuted)."""
        return close(float(x * x), 2.0)
''')


def pytest_in(folder: Path, *arguments: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "ATTNVERIFY_BACKEND"))}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *arguments], cwd=folder,
                          capture_output=True, text=True, env=environment, timeout=300)


def test_the_examples_run_as_one_test_per_claim(tmp_path):
    run = pytest_in(tmp_path, "-v", str(EXAMPLES / "relu_kernel.py"), str(EXAMPLES / "partition_theory.py"))
    assert run.returncode == 0, run.stdout + run.stderr
    passed = re.findall(r"::(\S+) PASSED", run.stdout)
    assert passed == ["relu.kernel_matches_monte_carlo", "relu.kernel_with_one_over_pi", "relu.derivation_steps",
                      "partition.mean_matches_derivation", "partition.log_partition_is_log_of_mean",
                      "partition.jensen_gap_is_nonnegative", "partition.derivation_steps"]


def test_a_failure_reads_as_the_counterexample_and_its_replay_and_an_expected_refutation_passes(tmp_path):
    path = tmp_path / "test_mine.py"  # a test module: its Theory is collected beside its tests
    path.write_text(FAILING + "\n\ndef test_plain():\n    assert True\n")
    run = pytest_in(tmp_path, "-v", "--attnverify-seed", "3", "--attnverify-examples", "5")
    assert run.returncode == 1
    assert "mine.square_is_two PASSED" in run.stdout and "test_plain PASSED" in run.stdout
    assert "mine.square_is_x FAILED" in run.stdout
    assert "--- mine.square_is_x: refuted (expected holds) -> UNEXPECTED" in run.stdout
    assert "counterexample" in run.stdout and "parameters: x=" in run.stdout
    assert f"replay:     attnverify verify {path} --only mine.square_is_x --profile quick --backend numpy --seed 3 " \
           "--examples 5" in run.stdout


@pytest.mark.parametrize("option, value, message", [
    ("--attnverify-examples", "0", "--attnverify-examples must be an integer in [1, "),
    ("--attnverify-profile", "slow", "invalid choice")])
def test_bad_options_are_usage_errors(tmp_path, option, value, message):
    run = pytest_in(tmp_path, option, value, str(EXAMPLES / "relu_kernel.py"))
    assert run.returncode == 4 and message in run.stderr


def test_the_plugin_runs_under_xdist(tmp_path):
    pytest.importorskip("xdist")
    run = pytest_in(tmp_path, "-n", "2", str(EXAMPLES / "partition_theory.py"), str(EXAMPLES / "relu_kernel.py"))
    assert run.returncode == 0 and "7 passed" in run.stdout, run.stdout + run.stderr
