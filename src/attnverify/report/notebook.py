"""Notebook displays: the report's rendering of the tool's objects, found from the object's class.

As sympy's printers find ``_print_<Class>``, `render` looks up ``_html_<Class>`` / ``_markdown_<Class>``
here along the object's class hierarchy, so no core object imports the report. `register` hands these to
IPython's display formatters by class *name* (``for_type_by_name``: nothing is imported for it); ``import
attnverify`` calls it when it runs inside IPython, and ``%load_ext attnverify`` does it by hand.
"""

from __future__ import annotations

import html as _html
from typing import Any

#: (module, class) of every object with a display here
DISPLAYED = (
    ("attnverify.checks.runner", "ClaimResult"),
    ("attnverify.checks.evidence", "Evidence"),
    ("attnverify.checks.claim", "Claim"),
    ("attnverify.derivations.derivation", "Derivation"),
    ("attnverify.theory_form", "Theory"),
    ("attnverify.theory_form.derived", "DerivationHandle"),
)


def render(obj: Any, form: str) -> str:
    """``obj`` as ``form`` ("html" or "markdown"), by the first ``_<form>_<Class>`` along its class hierarchy."""
    if form not in ("html", "markdown"):
        raise ValueError(f"form must be 'html' or 'markdown', got {form!r}")
    for cls in type(obj).__mro__:
        function = globals().get(f"_{form}_{cls.__name__}")
        if function is not None:
            return function(obj)
    raise TypeError(f"no notebook display for {type(obj).__name__}")


def html(obj: Any) -> str:
    return render(obj, "html")


def markdown(obj: Any) -> str:
    return render(obj, "markdown")


def register(shell) -> None:
    """Give IPython ``shell`` the HTML and Markdown displays of `DISPLAYED`, by class name."""
    formatters = shell.display_formatter.formatters
    for mime, function in (("text/html", html), ("text/markdown", markdown)):
        if mime in formatters:
            for module, name in DISPLAYED:
                formatters[mime].for_type_by_name(module, name, function)


# ------------------------------------------------------------------------------------------- the renderings

def evidence_rows(evidence: dict) -> list[tuple[str, str]]:
    """The rows of one evidence (``Evidence.as_dict()``): verdict, relation, what would decide it, the two sides
    under their names, tolerance, SE, conditions, note. The report's row builder for evidence."""
    from ..checks.story import format_value, side_labels

    left, right = side_labels(evidence)
    rows = [("verdict", str(evidence.get("status"))), ("relation", str(evidence.get("relation")))]
    if evidence.get("inconclusive"):
        rows.append(("inconclusive", evidence["inconclusive"]))
    rows += [(f"needed: {name}", f"{count:,}") for name, count in (evidence.get("needed") or {}).items()]
    rows += [(name, format_value(evidence.get(key))) for name, key in (
        (left, "theory"), (right, "observed"), ("tolerance", "tolerance"), ("standard error", "standard_error"))
        if evidence.get(key) is not None]
    rows += [(f"condition: {name}", str(value)) for name, value in (evidence.get("conditions") or {}).items()]
    if evidence.get("note"):
        rows.append(("note", evidence["note"]))
    return rows


def _html_Evidence(evidence) -> str:
    cells = "".join(f"<tr><th>{_html.escape(name)}</th><td>{_html.escape(value)}</td></tr>"
                    for name, value in evidence_rows(evidence.as_dict()))
    return f"<table>{cells}</table>"


def _markdown_Evidence(evidence) -> str:
    cells = [f"| {name} | {str(value).replace('|', '&#124;')} |" for name, value in evidence_rows(evidence.as_dict())]
    return "\n".join(["| | |", "|---|---|", *cells])


def _html_ClaimResult(result) -> str:
    from .render import claim_detail_html

    return claim_detail_html(result.as_dict())


def _markdown_ClaimResult(result) -> str:
    from .markdown import claim_detail_markdown

    return claim_detail_markdown(result.as_dict())


def _html_Derivation(derivation) -> str:
    from .render import derivation_html

    return derivation_html(derivation)


def _markdown_Derivation(derivation) -> str:
    from .markdown import derivation_markdown

    return derivation_markdown(derivation)


def _html_DerivationHandle(handle) -> str:
    return _html_Derivation(handle())


def _markdown_DerivationHandle(handle) -> str:
    return _markdown_Derivation(handle())


def _claim_facts(claim) -> list[tuple[str, str]]:
    facts = [("expected", claim.expect), ("examples", ", ".join(f"{k} {v}" for k, v in claim.examples.items()))]
    if claim.source:
        facts.append(("source", claim.source))
    facts.append(("run it", f"{claim.replay_command} --only {claim.name}"))
    return facts


def _html_Claim(claim) -> str:
    rows = "".join(f"<tr><th>{_html.escape(k)}</th><td>{_html.escape(v)}</td></tr>" for k, v in _claim_facts(claim))
    return (f"<div class=\"claim\"><p><code>{_html.escape(claim.name)}</code>: {_html.escape(claim.statement)}</p>"
            f"<table>{rows}</table></div>")


def _markdown_Claim(claim) -> str:
    return (f"**`{claim.name}`**: {claim.statement}\n\n| | |\n|---|---|\n"
            + "\n".join(f"| {k} | {v.replace('|', '&#124;')} |" for k, v in _claim_facts(claim)))


def _theory_rows(theory) -> list[tuple[str, str, str]]:
    rows = [("derivation", d.name, d.title) for d in theory.derivations]
    rows += [("claim", c.name, f"{c.statement} (expected {c.expect})") for c in theory.claims]
    rows += [("figure", f"{theory.name}.{f.name}", "") for f in theory.figures]
    return rows


def _html_Theory(theory) -> str:
    rows = "".join(f"<tr><td>{kind}</td><td><code>{_html.escape(name)}</code></td><td>{_html.escape(text)}</td></tr>"
                   for kind, name, text in _theory_rows(theory))
    return (f"<div class=\"theory\"><h3>{_html.escape(theory.title)}</h3><p>theory <code>{theory.name}</code> "
            f"from {_html.escape(theory.file)}</p><table>{rows}</table></div>")


def _markdown_Theory(theory) -> str:
    lines = [f"### {theory.title}", "", f"theory `{theory.name}` from {theory.file}", "", "| | | |", "|---|---|---|"]
    lines += [f"| {kind} | `{name}` | {text.replace('|', '&#124;')} |" for kind, name, text in _theory_rows(theory)]
    return "\n".join(lines)
