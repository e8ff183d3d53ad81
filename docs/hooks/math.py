"""Mathematics on the site as MathML, as the tool's HTML report shows it: no script, nothing fetched, read from disk.

A page writes its formulas as LaTeX, ``$…$`` in a line and ``$$ … $$`` as a block of its own; pymdownx.arithmatex
(mkdocs.yml, ``generic: true``) marks them, and this hook turns each mark into MathML with the report's converter
(`attnverify.report.render.math_html`, latex2mathml) as the page renders, which browsers draw natively. TeX the
converter cannot read, or a command it does not know (it would print as text), stops the build with the page and the
formula; after the build no mark may be left on any page.
"""
import html
import re
from pathlib import Path

MARKED = re.compile(r'<(span|div) class="arithmatex">\\[(\[](.*?)\\[)\]]</\1>', re.DOTALL)
LEFT = re.compile(r'class="arithmatex"')


def to_mathml(page: str, where: str) -> str:
    """``page`` (HTML) with every arithmatex mark as MathML: a line's formula inline, a block's displayed."""
    from attnverify.report.render import math_html

    def convert(match: re.Match) -> str:
        block = match.group(1) == "div"
        try:
            return math_html(html.unescape(match.group(2)).strip(), block, strict=True)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None

    return MARKED.sub(convert, page)


def unconverted(site: Path) -> list[str]:
    """The site's HTML pages on which a formula is left as TeX."""
    site = site.resolve()
    return [str(page.relative_to(site)) for page in sorted(site.rglob("*.html"))
            if LEFT.search(page.read_text(encoding="utf-8"))]


def on_page_content(html_text, page, **kwargs):
    from mkdocs.exceptions import PluginError  # mkdocs is the [docs] extra: the checks above are tested without it

    try:
        return to_mathml(html_text, page.file.src_path)
    except ValueError as error:
        raise PluginError(str(error)) from None


def on_post_build(config, **kwargs):
    from mkdocs.exceptions import PluginError

    left = unconverted(Path(config["site_dir"]))
    if left:
        raise PluginError(f"formulas left as TeX on {len(left)} page(s): " + ", ".join(left[:20]))
