"""The site opened from disk: every local link of every built page resolves to a file.

With ``use_directory_urls: false`` (mkdocs.yml) a page is ``how-to/verdicts.html``, not a folder ``how-to/verdicts/``
that a browser shows as a listing when the site is opened with ``file://``. After the build this hook puts the search's
worker shim in the site (`SEARCH_SHIM`), then reads every HTML page of the site and checks each local ``href`` and
``src`` (the navigation's included): it must name a file of the site, never a folder; one line per page and link that
does not stops the build.
"""
import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit


LINK = re.compile(r'\b(?:href|src)="([^"]*)"')


def unresolved(site: Path) -> list[str]:
    """``page: link`` for every local link of the site's HTML pages that names no file (a folder, or nothing)."""
    site = site.resolve()
    found = []
    for page in sorted(site.rglob("*.html")):
        for link in LINK.findall(page.read_text(encoding="utf-8")):
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or not parts.path:  # another site, or an anchor on this page
                continue
            target = (site / unquote(parts.path).lstrip("/")) if parts.path.startswith("/") else \
                (page.parent / unquote(parts.path))
            if not target.resolve().is_file():
                found.append(f"{page.relative_to(site)}: {link}")
    return found


SEARCH_SHIM = "assets/javascripts/iframe-worker-shim.js"
"""Where the site keeps npm's iframe-worker shim (mkdocs.yml's ``extra.polyfills``): with it, mkdocs-material's search
runs its worker in an iframe, which a page opened from disk may start, and reads the index that the offline plugin
inlines as a script."""


def on_post_build(config, **kwargs):
    from mkdocs.exceptions import PluginError  # mkdocs is the [docs] extra: the checks above are tested without it

    shim = Path(os.environ.get("ATTNVERIFY_SEARCH_SHIM", "build/iframe-worker/shim/index.js"))
    if not shim.is_file():
        raise PluginError(f"no iframe-worker shim at {shim}, which the search needs from disk: make docs fetches it "
                          "(npm pack iframe-worker@1.0.4); $ATTNVERIFY_SEARCH_SHIM names another copy")
    target = Path(config["site_dir"]) / SEARCH_SHIM
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shim, target)
    missing = unresolved(Path(config["site_dir"]))
    if missing:
        raise PluginError(f"{len(missing)} local link(s) of the built site name no file (opened from disk they land "
                          "on a folder or nowhere): " + "; ".join(missing[:20]))
