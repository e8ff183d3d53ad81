"""No markup meant for a machine reaches a page. No reStructuredText role: the package's docstrings cross-reference as
mkdocstrings' autorefs (``[`name`][attnverify.module.name]``, a link on the API pages) or name a thing as code
(`name`); a ``:func:`…``` left in a docstring or a page would print as text. No doctest ``<BLANKLINE>``: the docs'
harness needs it in an expected output, a reader sees an empty line (this hook writes one before the page renders).
No formula left as TeX: pymdownx.arithmatex's mark (``class="arithmatex"``) is what docs/hooks/math.py turns into
MathML. After the build the hook reads every HTML page of the site and stops the build, one line per page, where any
of these is left.
"""
import re
from pathlib import Path


ROLE = re.compile(r":(?:func|meth|class|mod|data|attr|exc|obj|ref|py:\w+):(?:<code>[^<]*</code>|`[^`]*`)"
                  r'|&lt;BLANKLINE&gt;|class="arithmatex"')
BLANKLINE = re.compile(r"^<BLANKLINE>$", re.MULTILINE)


def on_page_markdown(markdown, **kwargs):
    """A doctest's ``<BLANKLINE>`` (a line of its own, in an expected output) as the empty line it stands for."""
    return BLANKLINE.sub("", markdown)


def raw_roles(site: Path) -> list[str]:
    """``page: markup`` for each role, ``<BLANKLINE>`` or formula left as TeX on the site's HTML pages."""
    site = site.resolve()
    return [f"{page.relative_to(site)}: {role}" for page in sorted(site.rglob("*.html"))
            for role in ROLE.findall(page.read_text(encoding="utf-8"))]


def on_post_build(config, **kwargs):
    from mkdocs.exceptions import PluginError  # mkdocs is the [docs] extra: the checks above are tested without it

    left = raw_roles(Path(config["site_dir"]))
    if left:
        raise PluginError(f"{len(left)} reStructuredText role(s), <BLANKLINE>(s) or formula(s) left as TeX on the site "
                          "(write [`name`][attnverify.module.name] or `name`; $…$ for a formula): "
                          + "; ".join(left[:20]))
