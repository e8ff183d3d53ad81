"""The performance page's figures come from benchmark records, never typed by hand.

A benchmark writes its figures with how, where and on what code they were measured (benchmarks/record.py) to
benchmarks/results/NAME.json; this hook puts a record where a page asks:

    <!-- attnverify:benchmark NAME -->    the record's table, then its date, machine, commit and command

A marker naming a record that does not exist, or one whose timed code changed since it was measured (a stale
figure), stops the build with one line that says which record and the command that measures it again. It runs
before results.py, which refuses any marker left over.
"""
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import record  # noqa: E402  (benchmarks/ is a folder of scripts, not a package)

MARKER = re.compile(r"<!-- attnverify:benchmark(?: ([\w.-]+))? -->")


def measured(rec: dict) -> str:
    """One line: when, on what machine, at which commit and by which command the record's figures were measured."""
    machine = rec["machine"]
    line = (f"Measured {rec['date']} on {machine['cpu']} ({machine['cores']} cores, {machine['blas']}), "
            f"code {rec['commit'] or 'of an unknown commit'}, by `{rec['command']}`.")
    return f"{line} {rec['notes']}" if rec.get("notes") else line


def render(name: str, folder: Path | None = None, where: str = "") -> str:
    """Record ``name``'s table and its line of provenance; PluginError where it is missing or stale."""
    try:
        rec = record.read_record(name, folder)
    except FileNotFoundError:
        raise PluginError(f"{where}no benchmark record {name!r} (benchmarks/results/{name}.json): "
                          f"run `{record.command_for(name)}`") from None
    stale = record.stale_functions(rec)
    if stale:
        raise PluginError(f"{where}benchmark record {name!r} is stale, {len(stale)} timed function"
                          f"{'s' * (len(stale) != 1)} changed since {rec['date']} ({', '.join(stale[:3])}"
                          f"{', …' * (len(stale) > 3)}): run `{rec['command']}` again")
    return f"{record.table(rec)}\n\n{measured(rec)}"


def on_page_markdown(markdown, page, config, files):
    where = f"{page.file.src_uri}: "

    def replace(match):
        if match.group(1) is None:
            raise PluginError(f"{where}{match.group(0)} names no record")
        return render(match.group(1), where=where)

    return MARKER.sub(replace, markdown)
