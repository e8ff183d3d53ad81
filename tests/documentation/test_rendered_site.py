"""The built site as a browser draws it from disk: the home page, tutorial step 1, an API page and a theory page,
opened with ``file://`` in headless Chromium. Each page is drawn (a screenshot that is not blank), its formulas are
MathML elements the browser lays out (``MathMLElement``, with a size), none is left as TeX, none is left as Unicode
pseudo-mathematics in the docs' own prose (the API reference's docstrings included), its figures load, and a line of
100 characters fits its code blocks at 1,280 px; the search, typed into on the home page, finds pages.

Runs after ``make docs`` (``make docs-browser``, a CI step, which sets ``ATTNVERIFY_REQUIRE_BROWSER=1``) on the site
in ``build/site``, or on the one ``$ATTNVERIFY_SITE`` names; skipped otherwise (a site left in build/site may be of
older code), and where no site is built or no Chromium is installed, unless ``ATTNVERIFY_REQUIRE_BROWSER=1``, which
turns either into a failure.
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("ATTNVERIFY_SITE", ROOT / "build" / "site"))
BROWSER = next((shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome")
                if shutil.which(name)), None)
REQUIRED = os.environ.get("ATTNVERIFY_REQUIRE_BROWSER") == "1"

PAGES = {  # page: (least formulas, least figures, whether all its prose is the docs' own)
    "index.html": (0, 0, True),
    "tutorial/first-theorem.html": (10, 1, False),
    "reference/saddle.html": (50, 0, True),
    "theories/attention_paths.html": (50, 3, False),
}
"""A page whose prose is not all the docs' own shows the run's claims and figure captions as the tool prints them."""

PROBE = """<script>
window.addEventListener("load", () => {
  const maths = [...document.querySelectorAll("article math")];
  const figures = [...document.querySelectorAll("article img")];
  const text = document.querySelector("article").innerText;
  const prose = document.querySelector("article").cloneNode(true);
  prose.querySelectorAll("math, code, pre, figure, table").forEach(node => node.remove());
  const code = document.querySelector("article pre > code");
  let hundred = null;  // whether a line of 100 characters fits a code block's text width
  if (code) {
    const line = document.createElement("span");
    line.textContent = "0".repeat(100);
    code.appendChild(line);
    const style = getComputedStyle(code);
    hundred = line.getBoundingClientRect().width
      <= code.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    line.remove();
  }
  document.body.setAttribute("data-probe", JSON.stringify({
    formulas: maths.length,
    mathml: maths.filter(m => typeof MathMLElement !== "undefined" && m instanceof MathMLElement).length,
    drawn: maths.filter(m => { const box = m.getBoundingClientRect(); return box.width > 0 && box.height > 0; }).length,
    figures: figures.length,
    loaded: figures.filter(i => i.complete && i.naturalWidth > 0).length,
    tex: /\\\\[()\\[\\]]|\\$\\$/.test(text),
    hundred,
    pseudo: (prose.innerText.match(/[½⁻¹ᵀ√⟨⟩∂∇≈≤≥∈ℝ𝔼∼Σ∑²³]|[_^]\\{/gu) || []).length,
  }));
});
</script>"""

SEARCH_PROBE = """<script>
window.addEventListener("load", () => setTimeout(() => {
  const input = document.querySelector(".md-search__input");
  input.focus();
  input.value = "saddle";
  input.dispatchEvent(new Event("input", {bubbles: true}));
  setTimeout(() => document.body.setAttribute("data-probe", JSON.stringify({
    results: document.querySelectorAll(".md-search-result__item").length,
    meta: (document.querySelector(".md-search-result__meta") || {}).textContent || "",
  })), 3000);
}, 2000));
</script>"""
"""Types "saddle" into the search box two seconds after load and reads the results three seconds later (virtual time:
the shim runs the search worker in an iframe of the page's own thread)."""

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--window-size=1280,1600", "--virtual-time-budget=5000"]


def _unavailable() -> str | None:
    if not REQUIRED and "ATTNVERIFY_SITE" not in os.environ:  # a site left from an older build is not this code's
        return "the built site is checked by make docs-browser, after make docs"
    if BROWSER is None:
        return "no headless Chromium (Debian: apt-get install chromium)"
    if not (SITE / "index.html").is_file():
        return f"no built site in {SITE} (make docs)"
    return None


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A copy of the built site, each page under test beside itself with the probe added (the site is not touched)."""
    why = _unavailable()
    if why:
        if REQUIRED:
            pytest.fail(f"ATTNVERIFY_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)
    copy = tmp_path_factory.mktemp("site") / "site"
    shutil.copytree(SITE, copy)
    for page in PAGES:
        original = (copy / page).read_text(encoding="utf-8")
        (copy / page).with_suffix(".probe.html").write_text(original.replace("</body>", PROBE + "</body>"),
                                                           encoding="utf-8")
    original = (copy / "index.html").read_text(encoding="utf-8")
    (copy / "index.search.html").write_text(original.replace("</body>", SEARCH_PROBE + "</body>"), encoding="utf-8")
    return copy


def _browser(*arguments: str, profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run([BROWSER, *FLAGS, f"--user-data-dir={profile}", *arguments], capture_output=True,
                          text=True, timeout=120)


def _probe(url: str, profile: Path) -> dict:
    dom = _browser("--dump-dom", url, profile=profile).stdout
    found = re.search(r'data-probe="([^"]*)"', dom)
    assert found, f"{url}: the probe did not run (no data-probe in the DOM)"
    return json.loads(html.unescape(found.group(1)))


def test_the_search_finds_pages_from_disk(site, tmp_path):
    """mkdocs-material's search from file://: its index inlined as a script (the offline plugin) and its worker run
    in an iframe (npm's iframe-worker shim, docs/hooks/offline.py); without the shim it stays at "Initializing"."""
    probe = _probe((site / "index.search.html").as_uri(), tmp_path / "profile")
    assert probe["results"] >= 1 and "matching" in probe["meta"], probe


@pytest.mark.parametrize("page", PAGES)
def test_a_page_is_drawn_with_its_formulas_and_figures(site, page, tmp_path):
    least_formulas, least_figures, own_prose = PAGES[page]
    url = (site / page).with_suffix(".probe.html").as_uri()
    probe = _probe(url, tmp_path / "profile")
    assert probe["formulas"] >= least_formulas, probe
    assert probe["mathml"] == probe["drawn"] == probe["formulas"], probe  # every formula laid out as MathML
    assert not probe["tex"], probe
    assert probe["figures"] >= least_figures and probe["loaded"] == probe["figures"], probe
    assert probe["hundred"] in (None, True), probe  # 100 columns of code fit beside both sidebars at 1,280 px
    assert probe["pseudo"] == 0 or not own_prose, probe  # ½, ᵀ, Σ, 𝔼, e^{…}: mathematics left out of $…$

    shot = tmp_path / "page.png"
    _browser(f"--screenshot={shot}", url, profile=tmp_path / "profile")
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (1600, 1280) and pixels[..., :3].std() > 0.05, f"{page}: a blank screenshot"
