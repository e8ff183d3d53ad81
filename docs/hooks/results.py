"""The site's verdicts and figures come from a run of the tool, never from files copied by hand.

`make docs` first runs ``attnverify report --out build/report`` (``$ATTNVERIFY_DOCS_REPORT`` names another
folder), with the store that ``make report`` also keeps for the same code; this hook reads that report's
results.json and figures and puts them where a page asks:

    <!-- attnverify:run -->               which run: its command, date, profile, backend, seed and versions, and how
                                          many of its claims it read back from its store instead of checking them
    <!-- attnverify:summary -->           one row per built-in theory: claims, and how many came out as expected
    <!-- attnverify:claims THEORY -->     every claim of THEORY: statement, expected, status, verdict, key figures
    <!-- attnverify:figures THEORY -->    every figure of THEORY's section with its caption

A marker naming a theory the run does not have, a misspelt marker, a report that did not finish or that is
missing, stops the build with one line that says which.
"""
import json
import os
import re
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

MARKER = re.compile(r"<!-- attnverify:(run|summary|claims|figures)(?: (\w+))? -->")
FIGURES = "figures"


def _report_folder() -> Path:
    return Path(os.environ.get("ATTNVERIFY_DOCS_REPORT", "build/report")).resolve()


def _load() -> dict:
    path = _report_folder() / "results.json"
    if not path.is_file():
        raise PluginError(f"no report at {path}: `make docs` runs `attnverify report --out build/report` first "
                          "(or set ATTNVERIFY_DOCS_REPORT to a report folder)")
    results = json.loads(path.read_text())
    if not results.get("complete"):
        raise PluginError(f"{path} is from a run that did not finish (not run: {results.get('not_run')}): "
                          "run the report again")
    return results


_RESULTS: dict = {}


def on_config(config):
    _RESULTS.clear()
    _RESULTS.update(_load())
    return config


def on_files(files, config):
    """Every figure of the run, as a file of the site under figures/."""
    for section in _RESULTS["sections"]:
        for figure in section.get("figures", []):
            source = _report_folder() / figure["filename"]
            if not source.is_file():
                raise PluginError(f"the report's figure {source} is missing: run the report again")
            files.append(File.generated(config, f"{FIGURES}/{figure['filename']}", abs_src_path=str(source)))
    return files


_VERBATIM = re.compile(r"(`[^`]*`|\$[^$]*\$)")
"""Code spans and inline maths: what Markdown's emphasis must not reach, and what must not be escaped."""


def _cell(text) -> str:
    """The tool's text on one line of a Markdown table or list: pipes escaped, and asterisks outside code and maths
    (k*, v*, T*: the papers' optima) kept as asterisks instead of turning the text between two of them italic."""
    parts = _VERBATIM.split(" ".join(str(text).split()).replace("|", "\\|"))
    return "".join(part if k % 2 else part.replace("*", "\\*") for k, part in enumerate(parts))


def _theories() -> dict:
    names = [section["theory"] for section in _RESULTS["sections"]]
    names += [claim["name"].split(".", 1)[0] for claim in _RESULTS["claims"]]
    return {name: None for name in names}


def _claims(theory: str) -> str:
    """The verdict table, then every claim's statement as the tool states it (folded: the page's prose explains)."""
    from attnverify.checks.story import claim_story

    stories = [claim_story(r) for r in _RESULTS["claims"] if r["name"].split(".", 1)[0] == theory]
    rows = ["| claim | expected | status | verdict | key figures |", "|---|---|---|---|---|"]
    rows += [f"| `{s.name.split('.', 1)[1]}` | {s.expect} | {s.status} | **{s.verdict}** | {_cell(s.key_figures)} |"
             for s in stories]
    statements = [f"    - `{s.name.split('.', 1)[1]}`: {_cell(s.statement)}" for s in stories]
    folded = '??? note "The claims\' statements, as the tool states them"'
    return "\n".join(rows) + f"\n\n{folded}\n\n" + "\n".join(statements)


def _figures(theory: str, page) -> str:
    section = next(s for s in _RESULTS["sections"] if s["theory"] == theory)
    depth = "../" * page.file.src_uri.count("/")
    blocks = [f"![{_cell(f['caption'])}]({depth}{FIGURES}/{f['filename']})\n\n*{_cell(f['caption'])}*"
              for f in section.get("figures", [])]
    return "\n\n".join(blocks) or "*(this theory's section draws no figure)*"


def _summary(page) -> str:
    """The built-in theories' rows, then what the run's other claims are (the tutorial's examples), so that the
    table's sum and the run's count agree; what the columns count."""
    from attnverify.theories import builtin

    rows = ["| theory | claims | as expected | expected refuted | expected inconclusive |", "|---|---|---|---|---|"]
    builtins = [t.name for t in builtin()]
    others = [c for c in _RESULTS["claims"] if c["name"].split(".", 1)[0] not in builtins]
    for theory in builtins:
        claims = [c for c in _RESULTS["claims"] if c["name"].split(".", 1)[0] == theory]
        link = "../" * page.file.src_uri.count("/") + f"theories/{theory}.md"
        rows.append(f"| [`{theory}`]({link}) | {len(claims)} | {sum(c['ok'] for c in claims)} | "
                    f"{sum(c['expect'] == 'refuted' for c in claims)} | "
                    f"{sum(c['expect'] == 'inconclusive' for c in claims)} |")
    notes = ("\n\n*Expected refuted*: false variants written on purpose (a dropped factor, a wrong constant), which the "
             "tool must refute; *as expected*: the verdict the claim states (holds, refuted or inconclusive) was reached.")
    if others:
        theories = sorted({c["name"].split(".", 1)[0] for c in others})
        notes += (f" The run below also checks the {len(others)} claims of the tutorial's examples "
                  f"({', '.join(f'`{t}`' for t in theories)}), {sum(c['ok'] for c in others)} as expected.")
    return "\n".join(rows) + notes


def _kept() -> str:
    """What the run read back from its store (results.json's ``kept_claims``); nothing when it checked every claim."""
    meta, kept = _RESULTS["metadata"], _RESULTS["metadata"].get("kept_claims") or []
    if not kept:
        return ""
    return (f" {len(kept)} of its {len(_RESULTS['claims'])} claims were not checked again but read back from its "
            f"store `{meta.get('store')}`, where an earlier run had checked them with the same claim file, profile, "
            "backend and seed (`make report` and `make docs` share one store per fingerprint of the code, "
            "`build/store/KEY`); their seconds are that run's.")


def _run() -> str:
    meta = _RESULTS["metadata"]
    versions = ", ".join(f"{k} {v}" for k, v in meta.get("versions", {}).items())
    return (f"From the report `make docs` runs (`{meta['generator']} --out build/report`, with the tutorial's "
            f"examples), {meta['date']}: profile "
            f"{meta['profile']}, backend {meta['backend']}, seed {meta['seed']}; {_RESULTS['summary']}.{_kept()} "
            f"Versions: {versions}.")


def on_page_markdown(markdown, page, config, files):
    theories = _theories()

    def replace(match):
        kind, theory = match.group(1), match.group(2)
        if kind in ("claims", "figures") and theory not in theories:
            raise PluginError(f"{page.file.src_uri}: marker names theory {theory!r}, the run has "
                              f"{', '.join(theories)}")
        if kind == "run":
            return _run()
        if kind == "summary":
            return _summary(page)
        return _claims(theory) if kind == "claims" else _figures(theory, page)

    markdown = MARKER.sub(replace, markdown)
    left = re.search(r"<!-- attnverify:[^>]*-->", markdown)
    if left:  # a misspelt marker would otherwise vanish from the page as an HTML comment
        raise PluginError(f"{page.file.src_uri}: unknown marker {left.group(0)}; the markers are "
                          "run, summary, claims THEORY and figures THEORY")
    return markdown
