"""Mathematics on the site as MathML, as the tool's HTML report shows it: no script, nothing fetched, read from disk.

A page writes its formulas as LaTeX, ``$…$`` in a line and ``$$ … $$`` as a block of its own; pymdownx.arithmatex
(mkdocs.yml, ``generic: true``) marks them, and this hook turns each mark into MathML with the report's converter
(`attnverify.report.render.math_html`, latex2mathml) as the page renders, which browsers draw natively. TeX the
converter cannot read, or a command it does not know (it would print as text), stops the build with the page and the
formula; a mark left on a built page is machine markup that docs/hooks/markup.py refuses.
"""
import html
import re

MARKED = re.compile(r'<(span|div) class="arithmatex">\\[(\[](.*?)\\[)\]]</\1>', re.DOTALL)


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


def on_page_content(html_text, page, **kwargs):
    from mkdocs.exceptions import PluginError  # mkdocs is the [docs] extra: the checks above are tested without it

    try:
        return to_mathml(html_text, page.file.src_path)
    except ValueError as error:
        raise PluginError(str(error)) from None

