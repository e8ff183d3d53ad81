"""The site opened from disk (docs/hooks/offline.py, run by every `make docs`): a local link that names a folder or
nothing stops the build; files, anchors, other sites and links from the site's root resolve."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _hook():
    spec = importlib.util.spec_from_file_location("attnverify_offline_hook", ROOT / "docs" / "hooks" / "offline.py")
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
