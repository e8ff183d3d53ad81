"""The site as read (docs/hooks/offline.py and markup.py, run by every `make docs`): a local link that names a folder
or nothing stops the build, as does a reStructuredText role printed as text; files, anchors, other sites and links from
the site's root resolve, and no docstring or page writes a role."""
import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _hook(name: str = "offline"):
    spec = importlib.util.spec_from_file_location(f"attnverify_{name}_hook", ROOT / "docs" / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_links_to_folders_or_nothing_are_the_ones_reported(tmp_path):
    (tmp_path / "how-to" / "verdicts").mkdir(parents=True)
    (tmp_path / "how-to" / "verdicts" / "index.html").write_text("")
    (tmp_path / "assets").mkdir()
    (tmp_path / "assets" / "main.css").write_text("")
    (tmp_path / "how-to" / "store.html").write_text('<a href="../index.html#top">home</a>')
    (tmp_path / "index.html").write_text(
        '<a class="md-nav__link" href="how-to/verdicts/">a folder</a> <a href="how-to/store.html">a page</a> '
        '<link href="/assets/main.css"> <a href="#here">an anchor</a> <a href="https://example.org/x/">elsewhere</a> '
        '<img src="figures/missing.png"> <a href="how-to/store.html?q=1#part">a page with a query</a>')
    assert _hook().unresolved(tmp_path) == ["index.html: how-to/verdicts/", "index.html: figures/missing.png"]


def test_the_site_is_configured_for_files_not_folders():
    """mkdocs.yml builds pages as files (how-to/verdicts.html) and runs the check after every build."""
    config = (ROOT / "mkdocs.yml").read_text()
    assert "\nuse_directory_urls: false" in config and "  - docs/hooks/offline.py\n" in config
    assert "  - docs/hooks/markup.py\n" in config
    assert "\n  - offline  #" in config and "    - assets/javascripts/iframe-worker-shim.js\n" in config


def test_a_role_printed_as_text_is_reported(tmp_path):
    (tmp_path / "api.html").write_text('<p>see :func:<code>solve</code> and <a href="x.html#a"><code>sweep</code></a>,'
                                       ' :class:`Theory` in text</p>')
    assert _hook("markup").raw_roles(tmp_path) == ["api.html: :func:<code>solve</code>", "api.html: :class:`Theory`"]
    (tmp_path / "step.html").write_text("<pre><code>a\n&lt;BLANKLINE&gt;\nb</code></pre>")
    assert _hook("markup").raw_roles(tmp_path)[-1] == "step.html: &lt;BLANKLINE&gt;"


def test_a_doctest_blank_line_renders_as_an_empty_line():
    """The harness's <BLANKLINE> (a line of its own) becomes an empty line before the page renders; inside a line it
    stays (it is then the text it is)."""
    page = "```console\n$ attnverify verify x.py\nrow\n<BLANKLINE>\n1 claims\n```\nsay <BLANKLINE> here\n"
    assert _hook("markup").on_page_markdown(page) == ("```console\n$ attnverify verify x.py\nrow\n\n1 claims\n```\n"
                                                     "say <BLANKLINE> here\n")


def test_no_docstring_or_page_writes_a_role():
    """Docstrings cross-reference as autorefs ([`name`][attnverify.module.name]) or name a thing as code."""
    role = re.compile(r":(?:func|meth|class|mod|data|attr|exc|obj):`")
    files = [*(ROOT / "src" / "attnverify").rglob("*.py"), *(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    found = [f"{path.relative_to(ROOT)}:{number}" for path in files
             for number, line in enumerate(path.read_text().splitlines(), 1) if role.search(line)]
    assert not found, found


def test_formulas_become_mathml_and_unreadable_tex_names_its_page(tmp_path):
    """docs/hooks/math.py: arithmatex's marks (a line's \\(…\\), a block's \\[…\\], HTML-escaped) become MathML by the
    report's converter; TeX it cannot read stops the build naming the page; a page left with a mark is reported (by
    docs/hooks/markup.py, with the other machine markup)."""
    import pytest

    math = _hook("math")
    page = ('<p>Risk <span class="arithmatex">\\(x &lt; y_\\ell\\)</span>.</p>\n'
            '<div class="arithmatex">\\[\n\\tfrac12 \\ln\\det(K + T\\,I)\n\\]</div>')
    converted = math.to_mathml(page, "theories/x.md")
    assert converted.count("<math") == 2 and "arithmatex" not in converted and "\\" not in converted
    assert 'display="inline"' in converted and 'display="block"' in converted
    assert "<mo>&#x0003C;</mo>" in converted  # the relation, unescaped from the page and written by reference
    with pytest.raises(ValueError, match=r"theories/x\.md: .*\\\\foo"):
        math.to_mathml('<span class="arithmatex">\\(\\foo x\\)</span>', "theories/x.md")
    (tmp_path / "a.html").write_text(converted)
    (tmp_path / "b.html").write_text(page)
    assert _hook("markup").raw_roles(tmp_path) == ['b.html: class="arithmatex"'] * 2
    config = (ROOT / "mkdocs.yml").read_text()
    assert "  - docs/hooks/math.py\n" in config and "  - pymdownx.arithmatex:" in config


PSEUDO_MATH = re.compile("[½⁻¹ᵀ√⟨⟩∂∇≈≤≥∈ℝ𝔼∼Σ∑²³ⁿ₀₁₂]")
"""Characters that stand only in formulas: on a page they belong in $…$ (rendered), not in the prose as text."""


def _prose(markdown: str) -> str:
    """A page's prose: without code blocks, code spans, HTML comments and its $…$ and $$…$$ formulas."""
    for pattern, flags in ((r"```.*?```", re.S), (r"<!--.*?-->", re.S), (r"\$\$.*?\$\$", re.S), (r"\$[^$\n]*?\$", 0),
                           (r"`[^`\n]*`", 0)):
        markdown = re.sub(pattern, "", markdown, flags=flags)
    return markdown


def test_the_pages_write_their_formulas_as_latex():
    """Every page of the site (the papers' notes aside: copies of the team's notes, kept as they were written) writes
    its mathematics as LaTeX, which the build renders; a symbol such as ½, ᵀ, Σ or 𝔼 left in the prose would print
    as pseudo-mathematics beside the rendered formulas. The theory pages and the saddle-point tutorial have formulas
    (at least 10 each)."""
    pages = [page for page in (ROOT / "docs").rglob("*.md") if "papers" not in page.parts]
    found = [f"{page.relative_to(ROOT)}:{number}: {line.strip()[:80]}" for page in pages
             for number, line in enumerate(_prose(page.read_text()).splitlines(), 1) if PSEUDO_MATH.search(line)]
    assert not found, found
    for name in ("theories/single_location.md", "theories/attention_paths.md", "theories/conditional_mean.md",
                 "tutorial/saddle-point.md"):
        assert len(re.findall(r"\$[^$\n]+\$", (ROOT / "docs" / name).read_text())) >= 10, name


FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*(?:\{\s*\.?)?([\w-]*)")


def _written_code(markdown: str):
    """(line number, line) of the code a person wrote in a page's fenced blocks: a doctest's statements (not the output
    it is compared with), a console block's ``$`` commands (not the tool's printed output), nothing of a ``text`` block
    (the docs' harness shows it only: printed output quoted), every line of any other block."""
    block, language, fence = [], None, None
    for number, line in enumerate(markdown.splitlines(), 1):
        opening = FENCE.match(line)
        if fence is None:
            if opening:
                block, fence, language = [], opening.group(1), opening.group(2)
            continue
        if line.strip() == fence:
            if language == "text":
                pass
            elif language == "console":
                yield from ((n, text) for n, text in block if text.lstrip().startswith("$ "))
            elif any(text.lstrip().startswith(">>>") for _, text in block):
                yield from ((n, text) for n, text in block if text.lstrip().startswith((">>>", "...")))
            else:
                yield from block
            fence = None
            continue
        block.append((number, line))


def test_the_code_on_the_site_is_at_most_100_columns():
    """What the site shows as code fits its code column (100 columns at 1,280 px, tests/documentation/
    test_rendered_site.py measures it): the code written on every page and README (the papers' notes aside) and every
    file of examples/, which pages include; a doctest's expected output and the tool's printed output are compared
    with what the tool prints, and wrap on the page where wider."""
    pages = [ROOT / "README.md", *(page for page in (ROOT / "docs").rglob("*.md") if "papers" not in page.parts)]
    long = [f"{page.relative_to(ROOT)}:{number} ({len(line)})" for page in pages
            for number, line in _written_code(page.read_text()) if len(line) > 100]
    long += [f"{path.relative_to(ROOT)}:{number} ({len(line)})" for path in sorted((ROOT / "examples").glob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1) if len(line) > 100]
    assert not long, long


def test_written_code_leaves_out_what_the_tool_prints():
    page = ("```python\n>>> f(1)   # a comment\n2.0\n...\n```\n\n```console\n$ attnverify verify x.py\nrow  holds\n```\n\n"
            "```bash\nmake test\n```\n\n```text\nreplay: attnverify verify x.py\n```\n")
    assert [text for _, text in _written_code(page)] == [">>> f(1)   # a comment", "...", "$ attnverify verify x.py",
                                                         "make test"]
