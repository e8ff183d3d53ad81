"""Claim results for the terminal: the results table and a claim's story as text (the printer of
`ClaimStory` that ``check`` and ``verify`` use), and the rows every report format shares."""

from __future__ import annotations

from ..checks.runner import verdict
from .story import ClaimStory, UNDECIDED, claim_story, format_parameters, format_value, key_figures, side_labels

#: Columns of the results table, in order.
COLUMNS = ("name", "expected", "status", "verdict", "examples", "seconds", "key figures")


def table_row(result: dict) -> list[str]:
    """One row of the results table, as the strings of `COLUMNS`."""
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
    """The full story of one result as text: parameters, the two sides, tolerance, note, error, replay."""
    return story_text(claim_story(result))


def story_text(story: ClaimStory) -> str:
    """A claim's story for the terminal: the shown example's parameters, seed, sides, tolerance, note and error,
    what was drawn, the notes, the replay command and the call that checks the shown example alone."""
    lines = [f"--- {story.name}: {story.status} (expected {story.expect}) -> {story.verdict}",
             f"statement:  {story.statement}"]
    if story.source:
        lines.append(f"source:     {story.source}")
    shown = story.shown
    kind = shown.kind if shown is not None else None
    if story.shrink_trials is not None:
        lines.append(f"counterexample (after {story.shrink_trials} shrink trials):")
    elif kind == "error":
        lines.append("error in the claim's code (not a counterexample; not shrunk), on the example:")
    elif story.inconclusive:
        lines.append(f"inconclusive: {UNDECIDED}"
                     + (f"; deciding them all would take {story.needed}" if story.needed else "")
                     + "; the first undecided example:")
    elif shown is not None:
        lines.append(f"held on all {story.example_count} examples; the nearest to its tolerance:")
    else:
        lines.append("no example was run")
    if shown is not None:
        lines.append(f"  parameters: {format_parameters(shown.parameters)}")
        lines.append(f"  seed:       {shown.seed}")
        evidence = shown.evidence
        if evidence:
            left, right = side_labels(evidence)  # evidence without sides (a custom summary) says it in its note
            for label, key in ((left, "theory"), (right, "observed")):
                if evidence.get(key) is not None:
                    lines.append(f"  {label + ':':<11} {format_value(evidence[key])}")
            if evidence.get("tolerance") is not None:
                tolerance = f"  tolerance:  {format_value(evidence['tolerance'])}"
                if evidence.get("standard_error") is not None:
                    tolerance += f" (standard error {format_value(evidence['standard_error'])})"
                lines.append(tolerance)
            if evidence.get("note"):
                lines.append(f"  note:       {evidence['note']}")
            if evidence.get("inconclusive"):
                lines.append(f"  undecided:  {evidence['inconclusive']}")
        if shown.error:
            lines.append("  error:")
            lines += ["    " + line for line in shown.error.rstrip().splitlines()]
    if story.drawn:
        lines.append(f"drawn:      {story.drawn}")
    lines += [f"note: {note}" for note in story.notes]
    lines.append(f"replay:     {story.replay}")
    if shown is not None:
        lines.append(
            f"  this example alone: attnverify.checks.runner.evaluate({story.claim_call}, "
            f"{shown.parameters!r}, {shown.seed}, profile={story.profile!r}, backend={story.backend!r})"
        )
    return "\n".join(lines)


def metadata_rows(metadata: dict) -> list[list]:
    """The run's settings and package versions, as the report's "Run" table shows them."""
    rows = []
    for key in ("date", "profile", "backend", "seed", "only", "store"):
        if metadata.get(key) is not None:
            rows.append([key, metadata[key]])
    if metadata.get("kept_claims"):
        rows.append(["claims read back from the store", len(metadata["kept_claims"])])
    for package, version in (metadata.get("versions") or {}).items():
        rows.append([package, version])
    return rows


def section_title(outcome) -> str:
    """A section's heading: its title, or the theory's name where the section could not be built."""
    return outcome.section.title if outcome.section is not None else outcome.theory


def derivation_dict(derivation) -> dict:
    """A derivation as results.json keeps it: name, title, source, a count of its steps' check outcomes, and each
    step's sentence, LaTeX, text, exported name, kind and check (`StepCheck`)."""
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
