"""docs/performance.md shows benchmark records only: every table on it is a record of today's code, every record is
on it, and no figure is typed by hand; the docs hook that puts records on the page refuses missing and stale ones."""
import json
import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "performance.md"
sys.path.insert(0, str(ROOT / "benchmarks"))  # benchmarks/ is no package: record.py is imported as its scripts do
import record  # noqa: E402

BENCHMARK = re.compile(r"<!-- attnverify:benchmark ([\w.-]+) -->")
FIELDS = {"benchmark", "command", "date", "machine", "commit", "settings", "notes", "columns", "rows", "code"}

# A hand-typed figure: a number (or a range of two) followed by a unit of time, size, ratio or share; "16 × 8" is
# a shape, not a ratio. A date typed beside it says when it was measured, so a date counts as one too.
_VALUE = r"\d+(?:,\d{3})*(?:\.\d+)?"
_UNIT = r"(?:[mµμn]?s|sec|seconds?|min|minutes?|h|hours?|days?|%|[KMGT]iB|[kKMGT]B|[x×](?!\s*\d)|/s)"
FIGURE = re.compile(rf"(?<![\w.·^/]){_VALUE}(?:\s?[–-]\s?{_VALUE})?\s?{_UNIT}(?![\w/])")
DATE = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?!\d)")
NUMBERS_ONLY = re.compile(r"[\d\s.,/–×()-]*\d[\d\s.,/–×()-]*")  # a table cell of bare figures: "1.25 / 0.038"
FENCE = re.compile(r"^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$", re.MULTILINE | re.DOTALL)
MARKER = re.compile(r"<!-- attnverify:[^>]*-->")


def shown(text: str) -> list[str]:
    return BENCHMARK.findall(text)


def record_problems(name: str, folder: Path | None = None) -> list[str]:
    """What keeps record ``name`` off the page but its age: missing, lacking a field write_record writes, a table
    that does not render, or no timed code (it could never go stale)."""
    try:
        rec = record.read_record(name, folder)
    except FileNotFoundError:
        return [f"{name}: no record benchmarks/results/{name}.json; run `{record.command_for(name)}`"]
    missing = FIELDS - set(rec)
    if missing:
        return [f"{name}: the record lacks {sorted(missing)}"]
    problems = []
    try:
        record.table(rec)
    except (KeyError, ValueError, TypeError) as error:
        problems.append(f"{name}: its table does not render ({error!r})")
    if not rec["rows"]:
        problems.append(f"{name}: no rows")
    if not rec["code"]:
        problems.append(f"{name}: no timed code, so nothing could ever make it stale")
    return problems


def staleness(name: str, folder: Path | None = None) -> str | None:
    """Which of record ``name``'s timed functions changed since it was measured, and the command that measures
    it again; None while they are as they were (or the record is missing: the test above says so)."""
    try:
        rec = record.read_record(name, folder)
    except FileNotFoundError:
        return None
    stale = record.stale_functions(rec)
    return stale and f"{name} is stale, changed since {rec['date']}: {', '.join(stale)}; run `{rec['command']}`"


def hand_typed(text: str) -> list[str]:
    """Every figure typed into ``text`` outside fenced code blocks and markers, with its line."""
    found = []
    for line in MARKER.sub("", FENCE.sub("", text)).splitlines():
        hits = FIGURE.findall(line) + DATE.findall(line)
        if line.lstrip().startswith("|"):
            hits += [c.strip() for c in line.strip().strip("|").split("|") if NUMBERS_ONLY.fullmatch(c.strip())]
        found += [f"{hit!r} in: {line.strip()[:100]}" for hit in dict.fromkeys(hits)]
    return found


def test_every_benchmark_on_the_page_is_a_complete_record():
    names = shown(PAGE.read_text())
    assert names, "docs/performance.md shows no benchmark record"
    problems = [problem for name in names for problem in record_problems(name)]
    assert not problems, "\n".join(problems)


def test_no_record_on_the_page_is_stale():
    stale = [message for name in shown(PAGE.read_text()) if (message := staleness(name))]
    assert not stale, "\n".join(stale)


def test_the_page_has_no_hand_typed_figure():
    typed = hand_typed(PAGE.read_text())
    assert not typed, "figures typed by hand on docs/performance.md (a benchmark's record belongs there):\n" + \
        "\n".join(typed)


def test_every_record_is_on_the_page():
    on_page = set(shown(PAGE.read_text()))
    orphans = sorted(p.stem for p in record.RESULTS.glob("*.json") if p.stem not in on_page)
    assert not orphans, f"records no page shows: {orphans}; add `<!-- attnverify:benchmark NAME -->` to " \
        "docs/performance.md"


def test_hand_typed_figures_are_found():
    typed = hand_typed("Its speed drifts by about ±10 % over minutes.\n"
                       "| one solve | 12–18 ms, 26–243× faster |\n"
                       "| ζ, numpy / cupy | 3.03 / 0.0082 |\n"
                       "P = 100,000: 836 MiB, of which X is 781 MiB; 1.27 GiB in 1.6 s\n"
                       "about 9 minutes, about 2 hours, 5–10 µs a launch, measured 2026-11-23\n"
                       "```\n$ make test\n4,599 passed in 263 s\n```\n")
    assert [t.split(" in: ")[0] for t in typed] == [
        "'10 %'", "'12–18 ms'", "'26–243×'", "'3.03 / 0.0082'", "'836 MiB'", "'781 MiB'", "'1.27 GiB'",
        "'1.6 s'", "'9 minutes'", "'2 hours'", "'5–10 µs'", "'2026-11-23'"]


def test_settings_and_shapes_are_not_figures():
    assert hand_typed("P = 100,000 examples, N = 1,024, T = 0.01, 16 × 8 × 10 draws, the 3 seeds, heads (2, 2),\n"
                      "ESS of x and of x², 1e-9, best of 3, seconds\n"
                      "| `bench_device.py` | ESS/s at 16, 1,024 and 8,192 chains |\n") == []


def _write(tmp_path, monkeypatch, name="demo", **changes) -> Path:
    """A record of one real timed function (record.table), written by write_record into tmp_path."""
    monkeypatch.setattr(sys, "argv", [str(ROOT / "benchmarks" / "demo.py"), "--fast"])
    path = record.write_record(name, [dict(width=10, seconds=0.5)], path=tmp_path / f"{name}.json",
                               columns=[("width", "N", "{:d}"), ("seconds", "solve (s)", "{:.2f}")],
                               timed=[("benchmarks/record.py", "table")])
    rec = json.loads(path.read_text())
    rec.update(changes)
    path.write_text(json.dumps(rec))
    return path


def test_a_record_of_todays_code_is_complete_and_fresh(tmp_path, monkeypatch):
    _write(tmp_path, monkeypatch)
    assert record_problems("demo", tmp_path) == [] and staleness("demo", tmp_path) == []


def test_a_record_whose_timed_function_changed_is_stale(tmp_path, monkeypatch):
    _write(tmp_path, monkeypatch, code={"benchmarks/record.py:table": "0" * 16})
    message = staleness("demo", tmp_path)
    assert message.startswith("demo is stale, changed since ")
    assert message.endswith(": benchmarks/record.py:table; run `python benchmarks/demo.py --fast`")
    with pytest.raises(AssertionError, match="demo is stale"):  # what test_no_record_on_the_page_is_stale asserts
        stale = [message for name in ["demo"] if (message := staleness(name, tmp_path))]
        assert not stale, "\n".join(stale)


def test_an_edit_to_a_timed_function_makes_its_record_stale_and_a_docstring_does_not(tmp_path, monkeypatch):
    module = tmp_path / "src" / "attnverify" / "timed.py"
    module.parent.mkdir(parents=True)
    module.write_text('def solve(x):\n    """Solve."""\n    return x + 1\n')
    monkeypatch.setattr(record, "ROOT", tmp_path)
    rec = dict(code=record.digests([("src/attnverify/timed.py", "solve")]))
    module.write_text('def solve(x):\n    """Solve, better said."""\n    # a comment\n    return x + 1\n')
    assert record.stale_functions(rec) == []
    module.write_text('def solve(x):\n    return x + 2\n')
    assert record.stale_functions(rec) == ["src/attnverify/timed.py:solve"]
    module.unlink()
    assert record.stale_functions(rec) == ["src/attnverify/timed.py:solve"]


def test_a_record_without_timed_code_or_a_field_is_refused(tmp_path, monkeypatch):
    _write(tmp_path, monkeypatch, code={})
    assert record_problems("demo", tmp_path) == ["demo: no timed code, so nothing could ever make it stale"]
    path = _write(tmp_path, monkeypatch, "bare")
    rec = json.loads(path.read_text())
    del rec["commit"]
    path.write_text(json.dumps(rec))
    assert record_problems("bare", tmp_path) == ["bare: the record lacks ['commit']"]


# The docs hook (needs the [docs] extra)

def _hook(name):
    pytest.importorskip("mkdocs")
    import importlib.util

    path = ROOT / "docs" / "hooks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"attnverify_docs_hook_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PAGE_OBJECT = types.SimpleNamespace(file=types.SimpleNamespace(src_uri="performance.md"))


def test_the_hook_puts_a_record_s_table_and_provenance_on_the_page(tmp_path, monkeypatch):
    hook = _hook("benchmarks")
    _write(tmp_path, monkeypatch, notes="One thread.")
    text = hook.render("demo", tmp_path)
    table, line = text.split("\n\n")
    assert table.splitlines()[0] == "| N | solve (s) |" and table.splitlines()[2] == "| 10 | 0.50 |"
    rec = record.read_record("demo", tmp_path)
    assert line.startswith(f"Measured {rec['date']} on {rec['machine']['cpu']} ({rec['machine']['cores']} cores, ")
    assert f"by `{rec['command']}`. One thread." in line


def test_the_hook_refuses_a_missing_or_stale_record_in_one_line(tmp_path, monkeypatch):
    hook = _hook("benchmarks")
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match=r"^performance.md: no benchmark record 'many_chains' .*run `python "
                                          r"benchmarks/many_chains.py`$"):
        hook.render("many_chains", tmp_path, where="performance.md: ")
    _write(tmp_path, monkeypatch, code={"benchmarks/record.py:table": "0" * 16})
    with pytest.raises(PluginError, match=r"'demo' is stale, 1 timed function changed .*record.py:table.*: "
                                          r"run `python benchmarks/demo.py --fast` again$") as error:
        hook.render("demo", tmp_path)
    assert "\n" not in str(error.value)
    with pytest.raises(PluginError, match="names no record"):
        hook.on_page_markdown("<!-- attnverify:benchmark -->", PAGE_OBJECT, None, None)


def test_the_page_builds_through_both_hooks_in_their_order():
    """benchmarks.py replaces its markers before results.py refuses any attnverify marker left over."""
    hooks = re.search(r"^hooks:.*?\n((?:  - .*\n)+)", (ROOT / "mkdocs.yml").read_text(), re.MULTILINE).group(1)
    hooks = [hook.strip(" -") for hook in hooks.splitlines()]
    assert hooks.index("docs/hooks/benchmarks.py") < hooks.index("docs/hooks/results.py")
    if any(record_problems(name) or staleness(name) for name in shown(PAGE.read_text())):
        pytest.skip("a record the page shows is missing or stale (the tests above say which)")
    results = _hook("results")
    results._RESULTS.update(sections=[], claims=[])
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match="unknown marker <!-- attnverify:benchmark"):
        results.on_page_markdown(PAGE.read_text(), PAGE_OBJECT, None, None)
    page = _hook("benchmarks").on_page_markdown(PAGE.read_text(), PAGE_OBJECT, None, None)
    assert "attnverify:" not in page and page.count("\nMeasured ") == len(shown(PAGE.read_text()))
    assert results.on_page_markdown(page, PAGE_OBJECT, None, None) == page
