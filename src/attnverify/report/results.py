"""Claim results as text: key figures, the results table and the detail of a surprise.

Everything here reads the plain dictionaries of ``ClaimResult.as_dict()``, so the command line,
the HTML/Markdown report and a results.json written earlier all show a result the same way.
"""

from __future__ import annotations

import math
import shlex
import time
import traceback
from typing import Any, Callable

from ..checks.claim import Claim
from ..checks.evidence import side_names
from ..checks.runner import ClaimResult, Example, drawn_text, run_claim
from ..experiments.store import Store
from ..base.backend import Backend

#: Columns of the results table, in order.
COLUMNS = ("name", "expected", "status", "verdict", "examples", "seconds", "key figures")


def run_claim_or_error(
    claim: Claim,
    *,
    profile: str,
    backend: Backend,
    seed: int,
    progress: Callable[[Claim, int, int], None] | None = None,
    examples: int | None = None,
    store: Store | None = None,
    **ahead,
) -> ClaimResult:
    """``run_claim``, except that a crash outside the check (e.g. in the parameter strategy)
    becomes a result with status ``"error"`` and its traceback, so one claim never ends a run. ``ahead``:
    ``evaluated`` and ``on_evaluated`` of :func:`run_claim`."""
    start = time.perf_counter()
    try:
        return run_claim(claim, profile=profile, backend=backend, seed=seed, progress=progress, examples=examples,
                         store=store, **ahead)
    except Exception as error:
        detail = "".join(traceback.format_exception_only(type(error), error)).strip()
        failure = Example(parameters={}, seed=seed, error=f"{detail}\n{traceback.format_exc()}")
        return ClaimResult(
            claim=claim,
            status="error",
            examples=[],
            counterexample=None,
            error=failure,
            profile=profile,
            backend=backend.name,
            seed=seed,
            seconds=time.perf_counter() - start,
            notes=["the run itself failed before or while drawing examples"],
        )


def format_value(value: Any) -> str:
    """A number in 6 significant digits; anything else as ``str``."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.6g}" if math.isfinite(value) else str(value)
    if isinstance(value, int):
        return str(value)
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        try:
            return format_value(value.item())
        except (TypeError, ValueError):
            pass
    return str(value)


def format_parameters(parameters: dict) -> str:
    """``name=value, …`` with numbers in 6 significant digits."""
    return ", ".join(f"{k}={format_value(v)}" for k, v in parameters.items())


def tightness(evidence: dict | None) -> float:
    """How near an example came to failing, as a fraction of its tolerance (1 at the edge): |θ − o|/τ for an
    equality, (θ − o)/τ for a bound θ ≤ o + τ, (τ − (o − θ))/τ and its mirror for above/below; −inf for custom
    evidence (no sides to compare)."""
    evidence = evidence or {}
    theory, observed, tolerance = evidence.get("theory"), evidence.get("observed"), evidence.get("tolerance")
    if theory is None or observed is None or tolerance is None:
        return float("-inf")
    gap = {"at_most": theory - observed, "above": tolerance - (observed - theory),
           "below": tolerance - (theory - observed)}.get(evidence.get("relation") or "equal", abs(theory - observed))
    return gap / tolerance if tolerance > 0 else (float("inf") if gap > 0 else 0.0)


def shown_example(result: dict) -> dict | None:
    """The example a summary shows: the counterexample, else the example whose check failed to run, else the
    first inconclusive example, else the worst of those that held (the nearest its tolerance, :func:`tightness`;
    the last one where none has sides to compare)."""
    for key in ("counterexample", "error"):
        if isinstance(result.get(key), dict):
            return result[key]
    examples = result.get("examples") or []
    undecided = [e for e in examples if example_status(e) == "inconclusive"]
    if undecided:
        return undecided[0]
    if not examples:
        return None
    scores = [tightness(e.get("evidence")) for e in examples]
    best = max(range(len(examples)), key=lambda k: (scores[k], k))  # ties (and all −inf): the last
    return examples[best]


def example_status(example: dict) -> str:
    """``"error"``, ``"holds"``, ``"refuted"`` or ``"inconclusive"`` of an example's dict (a results.json
    written before there were three verdicts has no ``status``: holds or refuted)."""
    if example.get("error"):
        return "error"
    evidence = example.get("evidence") or {}
    return evidence.get("status") or ("holds" if evidence.get("holds") else "refuted")


def drawn_line(result: dict) -> str:
    """What the examples covered, per numeric parameter against its declared range ("" for a result without it)."""
    return drawn_text(result.get("drawn") or {})


def needed_text(needed: dict | None) -> str:
    """What would decide an inconclusive result: ``16 seeds``, ``1,200,000 draws``."""
    return ", ".join(f"{count:,} {name}" for name, count in (needed or {}).items())


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text and text.strip() else ""


def key_figures(result: dict) -> str:
    """The shown example's two sides in the words of their relation, with the standard error where the
    evidence has one and the tolerance named as what it is (5 SE + a bias budget for a Monte Carlo claim),
    or the first line of its error:

    - equal: ``theory T vs observed O (SE s), allowed gap τ``;
    - at_most: ``T ≤ O + τ (SE s)`` (a bound: the left side is not a "theory" nor the right an "observation");
    - above / below: ``observed − theory > τ: O − T > τ (SE s)`` and its mirror (the relation the claim
      needs, written with its numbers: false where the claim is refuted).
    """
    example = shown_example(result)
    if example is None:
        return ""
    if example.get("error"):
        return "error: " + first_line(example["error"])
    evidence = example.get("evidence") or {}
    text = _sides_text(evidence)
    if evidence.get("inconclusive"):
        needed = needed_text(evidence.get("needed"))
        text += f"; inconclusive: {evidence['inconclusive']}" + (f" (would take {needed})" if needed else "")
    return text


def _sides_text(evidence: dict) -> str:
    theory, observed, tolerance = evidence.get("theory"), evidence.get("observed"), evidence.get("tolerance")
    if theory is None and observed is None:
        return first_line(evidence.get("note", ""))
    v = format_value
    se = evidence.get("standard_error")
    se_text = f" (SE {v(se)})" if se is not None else ""
    relation = evidence.get("relation") or "equal"
    left, right = side_labels(evidence)
    if relation == "equal" and (left, right) != ("theory", "observed"):
        return f"{left} {v(theory)} vs {right} {v(observed)}{se_text}" + (
            f", allowed gap {v(tolerance)}" if tolerance is not None else "")
    if relation == "at_most":
        return f"{v(theory)} ≤ {v(observed)}" + (f" + {v(tolerance)}" if tolerance else "") + se_text
    if relation == "above":  # the relation the claim needs, with its numbers (false when refuted)
        return f"observed − theory > τ: {v(observed)} − {v(theory)} > {v(tolerance)}{se_text}"
    if relation == "below":
        return f"theory − observed > τ: {v(theory)} − {v(observed)} > {v(tolerance)}{se_text}"
    text = f"theory {v(theory)} vs observed {v(observed)}{se_text}"
    if tolerance is not None:
        text += f", allowed gap {v(tolerance)}"
    return text


def side_labels(evidence: dict | None) -> tuple[str, str]:
    """Names of an evidence dict's two sides (:func:`attnverify.checks.evidence.side_names` of its relation and
    labels; a results.json written before labels existed gives none)."""
    evidence = evidence or {}
    return side_names(evidence.get("relation"), evidence.get("labels"))


def verdict(result: dict) -> str:
    """``OK`` (as expected), ``UNDECIDED`` (inconclusive where a decision was expected: draw more) or
    ``UNEXPECTED`` (a verdict against the expectation, or an error)."""
    if result["ok"]:
        return "OK"
    return "UNDECIDED" if result["status"] == "inconclusive" else "UNEXPECTED"


def exit_status(results: list[dict]) -> int:
    """The command line's exit status for a run's results: 0 when every claim came out as expected, 1 when
    any came out against its expectation or failed to run, 3 when none did but some were inconclusive
    where a decision was expected (2 is a usage error)."""
    verdicts = {verdict(r) for r in results}
    return 1 if "UNEXPECTED" in verdicts else (3 if "UNDECIDED" in verdicts else 0)


def summary_line(results: list[dict]) -> str:
    """``N claims: a as expected, b unexpected (names), c undecided (names)``."""
    unexpected = [r["name"] for r in results if verdict(r) == "UNEXPECTED"]
    undecided = [r["name"] for r in results if verdict(r) == "UNDECIDED"]
    text = (f"{len(results)} claims: {len(results) - len(unexpected) - len(undecided)} as expected, "
            f"{len(unexpected)} unexpected" + (f" ({', '.join(unexpected)})" if unexpected else ""))
    if undecided:
        text += f", {len(undecided)} undecided (inconclusive: {', '.join(undecided)})"
    return text


def table_row(result: dict) -> list[str]:
    """One row of the results table, as the strings of :data:`COLUMNS`."""
    return [
        result["name"],
        result["expect"],
        result["status"],
        verdict(result),
        str(len(result.get("examples") or [])),
        f"{result['seconds']:.2f}",
        key_figures(result),
    ]


def text_table(header: list[str], rows: list[list[str]]) -> str:
    """A plain-text table with padded columns (the last column is left unpadded)."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list) -> str:
        padded = [str(c).ljust(w) for c, w in zip(cells[:-1], widths[:-1])]
        return "  ".join([*padded, str(cells[-1])]).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def results_table(results: list[dict]) -> str:
    """The results table of a run, as plain text."""
    return text_table(list(COLUMNS), [table_row(r) for r in results])


def needs_details(result: dict) -> bool:
    """A result is spelled out when it is not as expected, or when it is a refutation or inconclusive."""
    return not result["ok"] or result["status"] in ("refuted", "inconclusive")


def result_details(result: dict) -> str:
    """The full story of one result: parameters, the two sides, tolerance, note, error, replay."""
    lines = [
        f"--- {result['name']}: {result['status']} (expected {result['expect']}) -> {verdict(result)}",
        f"statement:  {result['statement']}",
    ]
    if result.get("source"):
        lines.append(f"source:     {result['source']}")
    example = shown_example(result)
    if result.get("counterexample"):
        lines.append(f"counterexample (after {result.get('shrink_trials', 0)} shrink trials):")
    elif result.get("error"):
        lines.append("error in the claim's code (not a counterexample; not shrunk), on the example:")
    elif result["status"] == "inconclusive":
        needed = needed_text(result.get("needed"))
        lines.append("inconclusive: no example contradicts the claim, and not every one decides it"
                     + (f"; deciding would take {needed}" if needed else "") + "; the first undecided example:")
    elif example is not None:
        lines.append(f"held on all {len(result.get('examples') or [])} examples; the nearest to its tolerance:")
    else:
        lines.append("no example was run")
    if example is not None:
        lines.append(f"  parameters: {format_parameters(example['parameters'])}")
        lines.append(f"  seed:       {example['seed']}")
        evidence = example.get("evidence")
        if evidence:
            left, right = side_labels(evidence)
            lines.append(f"  {left + ':':<11} {format_value(evidence.get('theory'))}")
            lines.append(f"  {right + ':':<11} {format_value(evidence.get('observed'))}")
            tolerance = f"  tolerance:  {format_value(evidence.get('tolerance'))}"
            if evidence.get("standard_error") is not None:
                tolerance += f" (standard error {format_value(evidence['standard_error'])})"
            lines.append(tolerance)
            if evidence.get("note"):
                lines.append(f"  note:       {evidence['note']}")
            if evidence.get("inconclusive"):
                lines.append(f"  undecided:  {evidence['inconclusive']}")
        if example.get("error"):
            lines.append("  error:")
            lines += ["    " + line for line in example["error"].rstrip().splitlines()]
    if drawn_line(result):
        lines.append(f"drawn:      {drawn_line(result)}")
    for note in result.get("notes") or []:
        lines.append(f"note: {note}")
    lines.append(f"replay:     {result['replay']}")
    if example is not None:
        lines.append(
            "  this example alone: attnverify.checks.runner.evaluate(claim, "
            f"{example['parameters']!r}, {example['seed']}, profile={result['profile']!r}, "
            f"backend={result['backend']!r})"
        )
    return "\n".join(lines)


def verify_command(path: str) -> str:
    """``attnverify verify FILE`` with the file name quoted for a shell."""
    return f"attnverify verify {shlex.quote(str(path))}"


# ----------------------------------------------------------------------------- rows shared by HTML and Markdown


def example_rows(result: dict) -> tuple[list[list], list[str]]:
    rows, classes = [], []
    examples = list(result.get("examples") or [])
    counter = result.get("counterexample")
    shown = [(str(k), e) for k, e in enumerate(examples, 1)]
    if counter is not None:
        shown.append(("counterexample", counter))
    for label, e in shown:
        evidence = e.get("evidence") or {}
        outcome = example_status(e)
        if outcome == "error":
            outcome = "error: " + first_line(e["error"])
        elif outcome == "inconclusive" and evidence.get("needed"):
            outcome += f" (would take {needed_text(evidence['needed'])})"
        rows.append([
            label,
            format_parameters(e.get("parameters") or {}),
            e.get("seed"),
            evidence.get("theory"),
            evidence.get("observed"),
            evidence.get("tolerance"),
            outcome,
            e.get("seconds"),
        ])
        classes.append("counterexample" if label == "counterexample" else "")
    return rows, classes


def sides(result: dict) -> tuple[str, str]:
    """Column names of the two sides, from the claim's evidence (its labels, or value/bound for at_most)."""
    examples = [*(result.get("examples") or []), result.get("counterexample") or {}]
    names = {side_labels(e["evidence"]) for e in examples if e.get("evidence")}
    return names.pop() if len(names) == 1 else ("theory", "observed")


def metadata_rows(metadata: dict) -> list[list]:
    rows = []
    for key in ("date", "profile", "backend", "seed", "only"):
        if metadata.get(key) is not None:
            rows.append([key, metadata[key]])
    for package, version in (metadata.get("versions") or {}).items():
        rows.append([package, version])
    return rows


def section_title(outcome) -> str:
    return outcome.section.title if outcome.section is not None else outcome.theory


def derivation_dict(derivation) -> dict:
    """A derivation as results.json keeps it: name, title, source, a count of its steps' check outcomes, and each
    step's sentence, LaTeX, text, exported name, kind and check (:class:`~attnverify.derivations.steps.StepCheck`)."""
    from ..derivations.steps import counts
    from .equations import equation_latex

    checks = derivation.checks()
    return {
        "name": derivation.name,
        "title": derivation.title,
        "source": derivation.source,
        "checks": counts(checks),
        "steps": [
            {"description": s.description, "latex": equation_latex(s.expression), "text": str(s.expression),
             "name": s.name, "kind": s.kind, "check": check.as_dict()}
            for s, check in zip(derivation.steps, checks)
        ],
    }
