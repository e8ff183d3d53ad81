"""A mistake in a user's file is one line, ``FILE:LINE: what is wrong``, exit status 2, with no frame of attnverify's
own unless ``--debug`` asks for it: in the concise form (``Theory``, ``@theory.claim``, ``theory.monte_carlo``) and the
long form (``@claim``, ``plan_experiments``), for ``verify``, ``verify --report`` and ``report --with``."""

from __future__ import annotations

import re

import pytest

from attnverify import cli

CONCISE = '''"""Scratch"""
import numpy as np
from attnverify import Theory, close, st

theory = Theory("scratch")

'''
LONG = '''"""Scratch"""
from attnverify import close, st
from attnverify.checks.claim import claim

'''
CHECK = '''def ok(x):
    """x equals x."""
    return close(x, x)
'''
LONG_CHECK = '''def ok(p, ctx):
    """x equals x."""
    return close(p["x"], p["x"])
'''

#: name: (the file, its line the error names, what the first line says)
MISTAKES = {
    "claim name not theory.name (long form)": (
        LONG + '@claim("Scratch-Theory.ok", parameters={"x": st.floats(0, 1)})\n' + LONG_CHECK, 5,
        "claim name(s) are not theory.name"),
    "claim named under another theory (long form)": (
        LONG + 'THEORY = "scratch"\n\n@claim("other.ok", parameters={"x": st.floats(0, 1)})\n' + LONG_CHECK, 7,
        "claim 'other.ok' is named under theory 'other', but THEORY is 'scratch'"),
    "claim name not an identifier (concise form)": (
        CONCISE + '@theory.claim(x=st.floats(0, 1), name="not-a-name")\n' + CHECK, 7,
        "claim name must be theory.name"),
    "a constant where a strategy belongs": (
        CONCISE + "@theory.claim(x=3)\n" + CHECK, 7, "x=3 is not a strategy (st.just(3) for a constant)"),
    "a constant where a strategy belongs (monte_carlo)": (
        CONCISE + "def draws(rng, n, x):\n    return rng.standard_normal(n) + x\n\n"
        "theory.monte_carlo(draws, expected=lambda x: x, relative=0.1, x=0.5)\n", 10,
        "x=0.5 is not a strategy (st.just(0.5) for a constant)"),
    "an option misspelt (monte_carlo)": (
        CONCISE + "def draws(rng, n, x):\n    return rng.standard_normal(n) + x\n\n"
        "theory.monte_carlo(draws, expected=lambda x: x, relativ=0.1, x=st.floats(0, 1))\n", 10,
        "monte_carlo has no option relativ=: did you mean relative=?"),
    "an option misspelt (saddle_point)": (
        CONCISE + "import sympy\nfrom attnverify.saddle import SaddlePointAction, positive, wishart_entropy\n"
        "from attnverify.saddle.network import one_hidden_layer\n"
        "Q, N, s = positive('Q'), *sympy.symbols('N s', positive=True)\n"
        "action = SaddlePointAction(order_parameters={'Q': Q}, entropy=wishart_entropy(Q, N, s), kernel='Q', width=N)\n"
        "theory.saddle_point(action, netwrok=lambda N, s: one_hidden_layer(N, 1, readout_variance_total=s),\n"
        "                    N=st.just(10), s=st.just(1.0), temperature=st.just(0.1))(\n"
        "    lambda: dict(C=[[1.0]], y=[1.0]))\n", 12,
        "saddle_point has no option netwrok=: did you mean network=?"),
    "a function where a strategy belongs": (
        CONCISE + "def f(x):\n    return x\n\n@theory.claim(x=f)\n" + CHECK, 10,
        "x= got the function f, not a strategy"),
    "shrink_budget=-1": (
        CONCISE + "@theory.claim(x=st.floats(0, 1), shrink_budget=-1)\n" + CHECK, 7,
        "claim 'scratch.ok': shrink_budget (checks spent shrinking a failure) must be an integer ≥ 0"),
    'expect="maybe"': (
        CONCISE + '@theory.claim(x=st.floats(0, 1), expect="maybe")\n' + CHECK, 7,
        "claim 'scratch.ok': expect must be one of ('holds', 'refuted', 'inconclusive'), got 'maybe'"),
    'expect="maybe" (long form)': (
        LONG + '@claim("scratch.ok", parameters={"x": st.floats(0, 1)}, expect="maybe")\n' + LONG_CHECK, 5,
        "claim 'scratch.ok': expect must be one of"),
    'examples="x" (long form)': (
        LONG + '@claim("scratch.ok", parameters={"x": st.floats(0, 1)}, examples="x")\n' + LONG_CHECK, 5,
        "claim 'scratch.ok': examples must be a dict of profile → count"),
    'examples="x"': (
        CONCISE + '@theory.claim(x=st.floats(0, 1), examples="x")\n' + CHECK, 7,
        "claim 'scratch.ok': examples must be a dict of profile → count"),
    'examples={"quik": 2}': (
        CONCISE + '@theory.claim(x=st.floats(0, 1), examples={"quik": 2, "thorough": 5})\n' + CHECK, 7,
        "claim 'scratch.ok': examples names 'quik', which is not a profile: give a count for each of 'quick', "
        "'thorough'"),
    "examples beyond a run": (
        CONCISE + '@theory.claim(x=st.floats(0, 1), examples={"quick": 2, "thorough": 10**9})\n' + CHECK, 7,
        "claim 'scratch.ok': examples['thorough'] must be an int in [1, 1,000,000], got 1000000000"),
    "examples=5 (saddle_point)": (
        CONCISE + "import sympy\nfrom attnverify.saddle import SaddlePointAction, positive, wishart_entropy\n"
        "Q, N, s = positive('Q'), *sympy.symbols('N s', positive=True)\n"
        "action = SaddlePointAction(order_parameters={'Q': Q}, entropy=wishart_entropy(Q, N, s), kernel='Q', width=N)\n"
        "theory.saddle_point(action, N=st.just(10), s=st.just(1.0), temperature=st.just(0.1), examples=5)(\n"
        "    lambda: dict(C=[[1.0]], y=[1.0]))\n", 11,
        "claim 'scratch.saddle_point': examples must be a dict of profile → count"),
    "a syntax error": (CONCISE + 'theory.claim(x=st.floats(0, 1)\n', 7, "SyntaxError: '(' was never closed"),
    "an import error": (CONCISE + "import no_such_module_of_the_user\n", 7,
                        "ModuleNotFoundError: No module named 'no_such_module_of_the_user'"),
    "an error of the user's own code": (CONCISE + "WIDTH = {}['width']\n", 7, "KeyError: 'width'"),
    "an unknown name in a derivation's step": (
        CONCISE + "import sympy\nm, a = sympy.symbols('m a')\n\n@theory.derivation\ndef d(step):\n"
        '    """A derivation"""\n    step("Its value", sympy.Eq(m, 2 * alpha))\n', 13,
        "NameError: name 'alpha' is not defined"),
    "a misspelt kind of a derivation's step": (
        CONCISE + "import sympy\nm, a = sympy.symbols('m a')\n\n@theory.derivation\ndef d(step):\n"
        '    """A derivation"""\n    step("Its value", sympy.Eq(m, 2 * a), kind="defintion")\n', 13,
        "kind must be one of ('derived', 'definition', 'assumption', 'condition'), got 'defintion'"),
    "a misspelt keyword of a derivation's step": (
        CONCISE + "import sympy\nm, a = sympy.symbols('m a')\n\n@theory.derivation\ndef d(step):\n"
        '    """A derivation"""\n    step("Its value", sympy.Eq(m, 2 * a), kin="definition")\n', 13,
        "step takes name=, kind= and substitute=, not kin=: did you mean kind=?"),
    "a claim defined twice": (
        CONCISE + "@theory.claim(x=st.floats(0, 1))\n" + CHECK + "\n@theory.claim(x=st.floats(0, 1))\n" + CHECK, 12,
        "already has a claim named scratch.ok"),
}


@pytest.fixture(autouse=True)
def numpy_backend(monkeypatch):
    monkeypatch.delenv("ATTNVERIFY_BACKEND", raising=False)


def _write(tmp_path, text: str):
    path = tmp_path / "mine.py"
    path.write_text(text, encoding="utf-8")
    return path


def _first_line(err: str) -> str:
    return err.strip().splitlines()[0]


@pytest.mark.parametrize("command", ["verify", "verify --report", "report --with"])
@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_a_mistake_in_a_definition_is_one_line_at_its_file_and_line(tmp_path, capsys, mistake, command):
    text, line, problem = MISTAKES[mistake]
    path = _write(tmp_path, text)
    argv = {"verify": ["verify", str(path)],
            "verify --report": ["verify", str(path), "--report", str(tmp_path / "out"), "--workers", "1"],
            "report --with": ["report", "--with", str(path), "--only", "scratch", "--out", str(tmp_path / "out")]}
    assert cli.main(argv[command]) == 2
    err = capsys.readouterr().err
    first = _first_line(err)
    assert first.startswith(f"attnverify: error: {path}:{line}: ") and problem in first, err
    assert "attnverify/" not in err and "Traceback" not in err and "full traceback" not in err, err


def test_debug_adds_the_tools_frames(tmp_path, capsys):
    path = _write(tmp_path, MISTAKES["shrink_budget=-1"][0])
    assert cli.main(["verify", str(path), "--debug"]) == 2
    err = capsys.readouterr().err
    assert _first_line(err).startswith(f"attnverify: error: {path}:7: claim 'scratch.ok': shrink_budget")
    assert re.search(r"attnverify/base/arguments\.py\", line \d+, in integer", err)  # the rule that refused


def test_the_users_frames_end_in_the_users_code(tmp_path, capsys):
    path = _write(tmp_path, CONCISE + "def helper():\n    return {}['width']\n\nWIDTH = helper()\n")
    assert cli.main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert _first_line(err) == f"attnverify: error: {path}:8: KeyError: 'width'"
    frames = re.findall(r'File "([^"]+)", line (\d+)', err)
    assert frames == [(str(path), "10"), (str(path), "8")]  # innermost last: the helper's line


PLAN_42 = LONG + '@claim("scratch.ok", parameters={"x": st.floats(0, 1)}, examples={"quick": 1, "thorough": 1})\n' \
    + LONG_CHECK + "\n\ndef plan_experiments(settings):\n    return [42]\n"
PLAN_42_CONCISE = CONCISE + "@theory.claim(x=st.floats(0, 1), examples={'quick': 1, 'thorough': 1})\n" + CHECK \
    + "\n\n@theory.experiments\ndef plan(settings):\n    return [42]\n"
PLAN_RAISES = CONCISE + "@theory.claim(x=st.floats(0, 1), examples={'quick': 1, 'thorough': 1})\n" + CHECK \
    + "\n\n@theory.experiments\ndef plan(settings):\n    return [1 / 0]\n"
SECTION_RAISES = CONCISE + "@theory.claim(x=st.floats(0, 1), examples={'quick': 1, 'thorough': 1})\n" + CHECK \
    + "\n\n@theory.section\ndef section(out_dir, settings, progress):\n" \
      "    raise RuntimeError('my section is broken')\n"
SECTION_RETURNS_NONE = CONCISE + "@theory.claim(x=st.floats(0, 1), examples={'quick': 1, 'thorough': 1})\n" + CHECK \
    + "\n\n@theory.section\ndef section(out_dir, settings, progress):\n    return None\n"


@pytest.mark.parametrize("command", ["verify --report", "report --with"])
@pytest.mark.parametrize("text, line, problem", [
    (PLAN_42, 11, "plan_experiments of scratch must return planned experiments"),
    (PLAN_42_CONCISE, 13, "plan_experiments of scratch must return planned experiments"),
    (PLAN_RAISES, 15, "ZeroDivisionError: division by zero"),
], ids=["long form", "concise form", "raises"])
def test_a_plan_that_is_refused_is_one_line_at_the_users_plan(tmp_path, capsys, command, text, line, problem):
    path = _write(tmp_path, text)
    argv = {"verify --report": ["verify", str(path), "--report", str(tmp_path / "out"), "--workers", "1"],
            "report --with": ["report", "--with", str(path), "--only", "scratch", "--out", str(tmp_path / "out"),
                              "--workers", "1"]}
    assert cli.main(argv[command]) == 2
    err = capsys.readouterr().err
    assert _first_line(err).startswith(f"attnverify: error: {path}:{line}: ") and problem in _first_line(err), err
    assert "attnverify/" not in err and "Traceback" not in err, err


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("text, line, problem", [
    (SECTION_RAISES, 15, "RuntimeError: my section is broken"),
    (SECTION_RETURNS_NONE, 13, "build_section of scratch returned NoneType, not Section"),
], ids=["raises", "returns None"])
def test_a_section_that_fails_is_one_line_at_the_users_section(tmp_path, capsys, text, line, problem, workers):
    path = _write(tmp_path, text)
    assert cli.main(["verify", str(path), "--report", str(tmp_path / "out"), "--workers", workers]) == 2
    err = capsys.readouterr().err
    (shown,) = [line_ for line_ in err.splitlines() if line_.startswith("attnverify: error:")]
    assert shown.startswith(f"attnverify: error: {path}:{line}: ") and problem in shown, err
    assert "attnverify/" not in err and "Traceback" not in err, err
    assert "Traceback" in (tmp_path / "out" / "results.json").read_text()  # the whole story is in the report
