"""The same verdict on any machine: with the machine kept busy (3 processes spinning per core, started and ended
here), every derivation step of the built-ins and of ``examples/`` has the outcome it has idle, none cut short by
the time safety net, and every claim of ``examples/`` (the README's theorem among them) the status it has idle.
Each run starts from a cold cache and the same hash seed (sympy iterates over sets in hash order), so that load is
the only difference. The tier ``make test-load`` (a CI step)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.load

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SPINNERS_PER_CORE = 3


def _verdicts(cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("ATTNVERIFY_STEP_BUDGET", "ATTNVERIFY_BACKEND")}
    env.update(ATTNVERIFY_CACHE=str(cache), PYTHONHASHSEED="0", ATTNVERIFY_KEEP_DERIVATIONS="0")
    done = subprocess.run([sys.executable, str(HERE / "verdicts.py")], capture_output=True, text=True, env=env,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def idle(tmp_path_factory):
    return _verdicts(tmp_path_factory.mktemp("idle"))


@pytest.fixture(scope="module")
def loaded(idle, tmp_path_factory):
    """The same run with 3 processes spinning per core beside it (after the idle one)."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(SPINNERS_PER_CORE * (os.cpu_count() or 1))]
    try:
        return _verdicts(tmp_path_factory.mktemp("loaded"))
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()


def test_every_derivation_step_has_its_idle_outcome_under_load(idle, loaded):
    assert loaded["steps"] == idle["steps"]
    cut = {name: steps for name, steps in idle["steps"].items() if any(c for _, c in steps)}
    assert not cut, cut
    assert len(idle["steps"]) >= 15 and sum(map(len, idle["steps"].values())) >= 80


def test_every_example_claim_has_its_idle_status_under_load(idle, loaded):
    assert loaded["claims"] == idle["claims"]
    readme = {name: status for name, status in idle["claims"].items() if name.startswith("relu.")}
    assert readme == {"relu.kernel_matches_monte_carlo": "holds", "relu.kernel_with_one_over_pi": "refuted",
                      "relu.derivation_steps": "holds"}
    assert len(idle["claims"]) >= 40
