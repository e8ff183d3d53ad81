"""The report in a real browser (Chromium, headless): no block equation gets a scrollbar of its own."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from attnverify import cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "partition_theory.py"
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
PROBE = ('<script>document.body.setAttribute("data-scrolling", String([...document.querySelectorAll('
         '"math[display=block]")].filter(m => m.scrollHeight > m.clientHeight && getComputedStyle(m).overflowY !== '
         '"hidden").length) + "/" + document.querySelectorAll("math[display=block]").length);</script>')


@pytest.mark.thorough
@pytest.mark.skipif(BROWSER is None, reason="no Chromium (Debian: apt-get install chromium)")
def test_no_block_equation_scrolls_vertically_in_chromium(tmp_path, monkeypatch):
    """Chromium gives an element with overflow-x: auto a vertical scrollbar too when MathML's glyphs stand a pixel
    taller than its box (seen beside 1 of the worked example's 4 equations before overflow-y: hidden)."""
    monkeypatch.delenv("ATTNVERIFY_BACKEND", raising=False)
    out = tmp_path / "report"
    assert cli.main(["report", "--with", str(EXAMPLE), "--only", "partition", "--out", str(out), "--workers", "1"]) == 0
    probe = out / "probe.html"
    probe.write_text((out / "index.html").read_text().replace("</body>", PROBE + "</body>"))
    run = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1100,1400",
                          "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    scrolling = re.search(r'data-scrolling="(\d+)/(\d+)"', run.stdout)
    assert scrolling is not None, run.stderr[-2000:]
    assert int(scrolling.group(2)) >= 4 and scrolling.group(1) == "0"
