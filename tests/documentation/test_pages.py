"""The README and the site: their copies of the examples never drift, the README stays short, the notebook runs,
and the harness that runs every page's code blocks (the repository's conftest.py) fails where it should."""
import importlib.util
import re
import shutil
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
TITLED = re.compile(r'^```python title="([\w.-]+\.py)"[^\n]*\n(.*?)^```$', re.MULTILINE | re.DOTALL)


def _harness():
    spec = importlib.util.spec_from_file_location("attnverify_docs_harness", ROOT / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_page_shows_an_example_file_as_it_is():
    """The last version of a file a page writes, where examples/ has a file of that name, is that file."""
    compared = 0
    for page in PAGES:
        last = {}
        for name, source in TITLED.findall(page.read_text()):
            last[name] = source
        for name, source in last.items():
            example = ROOT / "examples" / name
            if example.exists():
                assert source == example.read_text(), f"{page.relative_to(ROOT)} shows {name} unlike examples/{name}"
                compared += 1
    assert compared >= 3  # the README's theorem and the two tutorial theories


def test_every_example_is_on_the_examples_page_as_it_is():
    """docs/examples.md includes each file of examples/ (pymdownx.snippets: the file itself, never a copy), and every
    one but new_bound.py (whose unexpected refutation is its point) has its claims from the site's run, which the
    Makefile's DOCS_EXAMPLES adds to the report."""
    page = (ROOT / "docs" / "examples.md").read_text()
    files = sorted(path.name for path in (ROOT / "examples").glob("*.py"))
    included = re.findall(r'^--8<-- "examples/([\w.-]+\.py)"$', page, re.MULTILINE)
    assert sorted(included) == files
    listed = re.search(r"^DOCS_EXAMPLES := (.*?)\n\n", (ROOT / "Makefile").read_text(), re.MULTILINE | re.DOTALL)
    in_report = sorted(re.findall(r"examples/([\w.-]+\.py)", listed.group(1)))
    assert in_report == [name for name in files if name != "new_bound.py"]
    assert len(re.findall(r"^<!-- attnverify:claims \w+ -->$", page, re.MULTILINE)) == len(in_report)


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines: the rest belongs in docs/"


def test_readme_counts_the_claims_the_tool_has():
    """The README's table of what is checked: per built-in theory, its claims by expected verdict."""
    from attnverify.theories import builtin_claims

    table = re.findall(r"^\| .*? \| \[`(\w+)`\]\(docs/theories/\1\.md\) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$",
                       (ROOT / "README.md").read_text(), re.MULTILINE)
    shown = {name: tuple(map(int, counts)) for name, *counts in table}
    counted = {}
    for claim in builtin_claims():
        theory = claim.name.split(".", 1)[0]
        total, holds, refuted, inconclusive = counted.get(theory, (0, 0, 0, 0))
        counted[theory] = (total + 1, holds + (claim.expect == "holds"), refuted + (claim.expect == "refuted"),
                           inconclusive + (claim.expect == "inconclusive"))
    assert shown == counted


def test_console_blocks_compare_output_and_exit_status(tmp_path):
    harness = _harness()
    namespace = {"__docs_folder__": tmp_path}

    def example(source):
        return types.SimpleNamespace(parsed=source, namespace=namespace)

    assert harness._run_console(example("$ echo 'a   b'\na b\n")) is None
    assert harness._run_console(example("$ echo 0.123 s\n... s\n")) is None
    assert "differs" in harness._run_console(example("$ echo a\nb\n"))
    assert "exit status 3, the page shows 0" in harness._run_console(example("$ exit 3\n"))
    assert harness._run_console(example("$ exit 3\n[exit status 3]\n")) is None
    with pytest.raises(ValueError, match="must start with"):
        harness._commands("echo a\n")


def test_a_misspelt_fence_is_refused_not_skipped(tmp_path):
    harness = _harness()
    page = tmp_path / "page.md"
    page.write_text("```pyhton\nx = 1\n```\n\n```python title=\"a b.py\"\nx = 1\n```\n\n```bash\nls\n```\n")
    from sybil import Document

    regions = list(harness.CodeBlocks()(Document(page.read_text(), str(page))))
    assert len(regions) == 2 and all(r.evaluator is harness._refuse for r in regions)


@pytest.mark.thorough
def test_the_notebook_tutorial_runs_and_shows_verdicts_and_figure(tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="the notebook extra: pip install -e '.[notebook]'")
    nbclient = pytest.importorskip("nbclient", reason="the notebook extra: pip install -e '.[notebook]'")
    folder = tmp_path / "docs" / "tutorial"
    folder.mkdir(parents=True)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    shutil.copy(ROOT / "docs" / "tutorial" / "first_theorem.ipynb", folder)
    notebook = nbformat.read(folder / "first_theorem.ipynb", as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(folder)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = "\n".join(o.get("data", {}).get("text/html", "") for o in outputs)
    assert "tilted.numerator_matches_monte_carlo" in html and "tilted.numerator_with_the_whole_square" in html
    plain = [o.get("data", {}).get("text/plain", "") for o in outputs]
    assert any("numerator_matches_monte_carlo: holds (expected holds)" in p for p in plain)
    assert any("numerator_with_the_whole_square: refuted (expected refuted)" in p for p in plain)
    assert any("image/png" in o.get("data", {}) for o in outputs)


def test_the_derivation_steps_page_states_the_checkers_numbers_as_the_code_has_them():
    """`NAME` = value on docs/derivation_steps.md for each number of the numeric check, equal to the constant."""
    from attnverify.derivations.steps import numeric, points

    page = (ROOT / "docs/derivation_steps.md").read_text(encoding="utf-8")
    for name, value in (("POINTS", points.POINTS), ("QUADRATURE_POINTS", points.QUADRATURE_POINTS),
                        ("WORKING_DIGITS", numeric.WORKING_DIGITS), ("AGREEMENT_DIGITS", numeric.AGREEMENT_DIGITS)):
        stated = re.findall(rf"`{name}` = (\d+)", page)
        assert stated and all(int(v) == value for v in stated), (name, value, stated)
