"""The report builder writes a self-contained HTML page, Markdown and a complete results.json.

A fake theory ("fake", made in this session from a long-form module: a section and two tiny claims) stands in
for the built-in ones, so these tests depend on no theory module.
"""

from __future__ import annotations

import json
import re
import types

import pytest
import sympy

from attnverify.checks import close, st
from attnverify.checks.claim import claim
from attnverify.derivations.derivation import DerivationRecorder
from attnverify.report import Figure, Section, Table
from attnverify.run import report as builder
from attnverify.theories import of_module
from attnverify.report.figures import pyplot, save_figure

MATHML_XMLNS = "http://www.w3.org/1998/Math/MathML"


@claim("fake.square_is_product", parameters=st.fixed_dictionaries({"x": st.integers(-5, 5)}),
       examples={"quick": 3, "thorough": 4}, origin="")
def square_is_product(params, ctx):
    """x² equals x·x."""
    return close(params["x"] ** 2, params["x"] * params["x"])


@claim("fake.square_is_two", parameters=st.fixed_dictionaries({"x": st.integers(-5, 5)}),
       expect="refuted", examples={"quick": 3, "thorough": 4}, origin="")
def square_is_two(params, ctx):
    """x² = 2 for integers (false: the tool must refute it)."""
    return close(float(params["x"] ** 2), 2.0)


def fake_build_section(out_dir, settings, progress):
    progress("fake: drawing")
    kappa, x = sympy.symbols("kappa x", positive=True)
    rec = DerivationRecorder("fake.gaussian", "A Gaussian integral <with markup>", "Fake et al., eq. (1)")
    rec.step("Write the integral of $e^{-\\kappa x^2}$.",
             sympy.Integral(sympy.exp(-kappa * x**2), (x, -sympy.oo, sympy.oo)))
    rec.step("Evaluate it.", sympy.Eq(sympy.Symbol("I"), sympy.sqrt(sympy.pi / kappa)))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([1, 2, 3], [1.0, 0.5, 0.25])
    figure = save_figure(fig, out_dir, "fake_decay.png", "A decay.", {"x": [1, 2, 3], "y": [1.0, 0.5, 0.25]})
    return Section(
        theory="fake",
        title="A fake theory",
        introduction="Some **Markdown** with `code` and a <tag>.",
        derivations=[rec.finish()],
        figures=[figure],
        tables=[Table("Numbers", ["n", "value"], [[1, 0.5], [2, 0.25]])],
    )


@pytest.fixture
def fake_theory(monkeypatch):
    """A theory made in this session (no file) from a long-form module: its section and its two claims."""
    module = types.ModuleType("attnverify_test_fake")
    module.build_section = fake_build_section
    module.square_is_product, module.square_is_two = square_is_product, square_is_two
    theory = of_module(module, "fake")
    monkeypatch.setattr(builder, "THEORIES", (theory,))
    return theory


def test_report_is_self_contained_and_complete(tmp_path, fake_theory):
    messages = []
    document = builder.build_report(tmp_path / "out", profile="quick", seed=3, progress=messages.append)
    out = tmp_path / "out"

    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<math" in page and 'display="block"' in page
    urls = re.findall(r"https?://[^\s\"'<>]*", page)
    assert set(urls) == {MATHML_XMLNS}, "the page must load nothing from the network"
    assert '<img src="fake_decay.png"' in page
    assert "&lt;with markup&gt;" in page and "a &lt;tag&gt;" in page
    assert "<strong>Markdown</strong>" in page
    assert "fake.square_is_two" in page and "attnverify check --only fake.square_is_two" in page

    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert markdown.count("$$") >= 4  # two steps, each $$ … $$
    assert "![A decay.](fake_decay.png)" in markdown
    assert "### A Gaussian integral &lt;with markup>" in markdown
    assert "| n | value |" in markdown

    text = (out / "report.txt").read_text(encoding="utf-8")  # the claims' stories as the terminal tells them
    assert "--- fake.square_is_two: refuted (expected refuted) -> OK" in text and "Figure 1 (fake_decay.png)" in text

    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results == json.loads(json.dumps(document))
    assert results["complete"] is True and results["ok"] is True
    assert results["metadata"]["profile"] == "quick" and results["metadata"]["seed"] == 3
    assert set(results["metadata"]["versions"]) >= {"attnverify", "sympy", "numpy", "scipy"}
    (section,) = results["sections"]
    assert section["figures"] == [{"filename": "fake_decay.png", "caption": "A decay.",
                                   "data": {"x": [1, 2, 3], "y": [1.0, 0.5, 0.25]}}]
    assert section["tables"][0]["rows"] == [[1, 0.5], [2, 0.25]]
    assert [s["latex"] for s in section["derivations"][0]["steps"]][1] == sympy.latex(
        sympy.Eq(sympy.Symbol("I"), sympy.sqrt(sympy.pi / sympy.Symbol("kappa", positive=True))))
    statuses = {c["name"]: (c["status"], c["ok"]) for c in results["claims"]}
    assert statuses == {"fake.square_is_product": ("holds", True), "fake.square_is_two": ("refuted", True)}
    assert "fake: drawing" in messages and any("example 1/3" in m for m in messages)


def test_results_are_written_after_each_claim(tmp_path, fake_theory, monkeypatch):
    seen = []
    real = builder._write_results

    def spy(out_dir, outcomes, metadata, *, not_run):
        document = real(out_dir, outcomes, metadata, not_run=not_run)
        written = json.loads((out_dir / "results.json").read_text())
        seen.append((written["complete"], len(written["claims"]), written["not_run"]))
        return document

    monkeypatch.setattr(builder, "_write_results", spy)
    builder.build_report(tmp_path, seed=0)
    pages = "index.html, report.md and report.txt"
    assert seen == [(False, 0, ["fake.square_is_product", "fake.square_is_two", pages]),
                    (False, 1, ["fake.square_is_two", pages]), (False, 2, [pages]), (True, 2, [])]


def test_a_broken_section_is_reported_not_fatal(tmp_path, fake_theory):
    def broken(out_dir, settings, progress):
        raise RuntimeError("the saddle point did not converge")

    fake_theory.section(broken)
    document = builder.build_report(tmp_path)
    assert document["ok"] is False
    assert "did not converge" in document["sections"][0]["errors"][0]
    assert len(document["claims"]) == 2  # the claims still ran
    assert "did not converge" in (tmp_path / "index.html").read_text()


def test_missing_figure_file_is_a_warning(tmp_path, fake_theory):
    def no_file(out_dir, settings, progress):
        return Section("fake", "Fake", "", figures=[Figure("absent.png", "never drawn", {})])

    fake_theory.section(no_file)
    document = builder.build_report(tmp_path)
    assert "absent.png" in document["sections"][0]["warnings"][0]


def test_arguments_are_validated_before_any_work(tmp_path, fake_theory):
    with pytest.raises(ValueError, match="profile"):
        builder.build_report(tmp_path / "a", profile="slow")
    with pytest.raises(ValueError, match="matches no theory"):
        builder.build_report(tmp_path / "b", only="nonexistent")
    with pytest.raises(ValueError, match="backend"):
        builder.build_report(tmp_path / "c", backend="tpu")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_jsonable_makes_strict_json():
    import numpy as np

    value = {"a": np.arange(3), "b": np.float64(0.5), "c": float("nan"), "d": (1, np.int64(2)),
             "e": sympy.Rational(1, 4), "f": Figure("x.png", "c", {})}
    assert json.loads(json.dumps(builder.jsonable(value), allow_nan=False)) == {
        "a": [0, 1, 2], "b": 0.5, "c": None, "d": [1, 2], "e": 0.25,
        "f": {"filename": "x.png", "caption": "c", "data": {}, "claims": []},
    }


@pytest.mark.thorough
def test_two_workers_build_the_serial_report(tmp_path):
    """The conditional-mean report on 2 worker processes equals the serial one: same claims, same verdicts,
    same drawn examples; numbers equal up to round-off (BLAS runs one thread per worker)."""
    import numpy as np

    serial = builder.build_report(tmp_path / "serial", only="conditional_mean", examples=2, workers=1)
    parallel = builder.build_report(tmp_path / "parallel", only="conditional_mean", examples=2, workers=2)
    assert [c["name"] for c in serial["claims"]] == [c["name"] for c in parallel["claims"]]
    for a, b in zip(serial["claims"], parallel["claims"]):
        assert (a["status"], [e["parameters"] for e in a["examples"]]) == \
            (b["status"], [e["parameters"] for e in b["examples"]])
    (a,), (b,) = serial["sections"], parallel["sections"]
    for fa, fb in zip(a["figures"], b["figures"]):
        for key, value in fa["data"].items():
            if isinstance(value, list) and value and all(isinstance(v, (int, float)) for v in value):
                np.testing.assert_allclose(fb["data"][key], value, rtol=1e-12, atol=1e-15, err_msg=key)
