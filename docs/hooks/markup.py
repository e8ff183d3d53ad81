"""No reStructuredText role reaches a page: the package's docstrings cross-reference as mkdocstrings' autorefs
(``[`name`][attnverify.module.name]``, a link on the API pages) or name a thing as code (`name`); a ``:func:`…```
left in a docstring or a page would print as text. After the build this hook reads every HTML page of the site and
stops the build, one line per page, where one is left.
"""
import re
from pathlib import Path


ROLE = re.compile(r":(?:func|meth|class|mod|data|attr|exc|obj|ref|py:\w+):(?:<code>[^<]*</code>|`[^`]*`)")


def raw_roles(site: Path) -> list[str]:
    """``page: role`` for each role printed as text on the site's HTML pages."""
    site = site.resolve()
    return [f"{page.relative_to(site)}: {role}" for page in sorted(site.rglob("*.html"))
            for role in ROLE.findall(page.read_text(encoding="utf-8"))]


def on_post_build(config, **kwargs):
    from mkdocs.exceptions import PluginError  # mkdocs is the [docs] extra: the checks above are tested without it

    left = raw_roles(Path(config["site_dir"]))
    if left:
        raise PluginError(f"{len(left)} reStructuredText role(s) printed as text on the site (write "
                          "[`name`][attnverify.module.name] or `name`): " + "; ".join(left[:20]))
