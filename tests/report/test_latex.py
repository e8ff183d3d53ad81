"""report --latex: the report as a LaTeX document that pdflatex compiles."""

import shutil
import subprocess
from pathlib import Path

import pytest

from attnverify import cli
from attnverify.report.latex import escape, prose

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "partition_theory.py"


@pytest.mark.parametrize("text, latex", [
    ("50% & $x_1", r"50\% \& \$x\_1"),
    ("θ ≤ π", r"\ensuremath{\theta} \ensuremath{\leq} \ensuremath{\pi}"),
    ("ℛ(T*) − ε²", r"\ensuremath{\mathcal{R}}(T*) \ensuremath{-} \ensuremath{\epsilon}²"),
    ("𝓗 heads, Λ", r"\ensuremath{\mathcal{H}} heads, \ensuremath{\Lambda}"),
    ("--only a", "-{}-only a"),
    ("⛄", r"\textit{[U+26C4]}"),  # no command for it: shown, never a pdflatex stop
])
def test_text_is_escaped_for_pdflatex(text, latex):
    assert escape(text) == latex


def test_prose_keeps_math_and_code():
    assert prose("With $L$ scores, `code_x` and **bold**.") == r"With $L$ scores, \texttt{code\_x} and \textbf{bold}."


@pytest.mark.thorough
@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex is not installed (Debian: texlive-latex-extra)")
def test_the_worked_examples_report_compiles_to_pdf(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNVERIFY_BACKEND", raising=False)
    out = tmp_path / "report"
    assert cli.main(["report", "--with", str(EXAMPLE), "--only", "partition", "--out", str(out), "--latex",
                     "--workers", "1"]) == 0
    run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "report.tex"], cwd=out,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    assert (out / "report.pdf").stat().st_size > 10_000
