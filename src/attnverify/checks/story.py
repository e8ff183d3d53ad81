"""A claim's story: what every format says about one claim result, made once by `claim_story`, and told by one walk.

`StoryPrinter.story` visits a story's parts in one order (heading, statement, source, examples, what was drawn,
counterexample, error, what would decide it, notes, replay) and a format overrides only the leaves: this class tells
it as plain text (the terminal, ``print(result)``), the report's printers (`attnverify.report.printer`) as HTML,
Markdown and LaTeX. Everything here reads the plain dictionaries of ``ClaimResult.as_dict()``, so a result from this
run and one from a results.json written earlier tell the same story.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .evidence import side_names
from .drawn import drawn_text

#: The sentence every format gives an inconclusive result (before what deciding it would take).
UNDECIDED = "no example contradicts the claim, and not every one decides it"


def verdict(result: dict) -> str:
    """The verdict of a claim result's dict (``ClaimResult.as_dict()``): ``OK`` (as expected), ``UNDECIDED``
    (inconclusive where a decision was expected: draw more) or ``UNEXPECTED`` (a verdict against the expectation,
    or an error)."""
    if result["ok"]:
        return "OK"
    return "UNDECIDED" if result["status"] == "inconclusive" else "UNEXPECTED"


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


def first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text and text.strip() else ""


def needed_text(needed: dict | None) -> str:
    """What would decide an inconclusive result: ``16 seeds``, ``1,200,000 draws``."""
    return ", ".join(f"{count:,} {name}" for name, count in (needed or {}).items())


def side_labels(evidence: dict | None) -> tuple[str, str]:
    """Names of an evidence dict's two sides (`attnverify.checks.evidence.side_names` of its relation and
    labels; a results.json written before labels existed gives none)."""
    evidence = evidence or {}
    return side_names(evidence.get("relation"), evidence.get("labels"))


def sides(result: dict) -> tuple[str, str]:
    """Column names of the two sides, from the claim's evidence (its labels, or value/bound for at_most)."""
    examples = [*(result.get("examples") or []), result.get("counterexample") or {}]
    names = {side_labels(e["evidence"]) for e in examples if e.get("evidence")}
    return names.pop() if len(names) == 1 else ("theory", "observed")


def example_status(example: dict) -> str:
    """``"error"``, ``"holds"``, ``"refuted"`` or ``"inconclusive"`` of an example's dict (a results.json
    written before there were three verdicts has no ``status``: holds or refuted)."""
    if example.get("error"):
        return "error"
    evidence = example.get("evidence") or {}
    return evidence.get("status") or ("holds" if evidence.get("holds") else "refuted")


def tightness(evidence: dict | None) -> float:
    """How near an example came to failing, as a fraction of its tolerance (1 at the edge): |θ − o|/τ for an
    equality, (θ − o)/τ for a bound θ ≤ o + τ, (τ − (o − θ))/τ and its mirror for above/below; for custom
    evidence (no sides to compare) the ``worst`` figure it states, as the saddle-point claims state max gap/allowed,
    else −inf."""
    evidence = evidence or {}
    theory, observed, tolerance = evidence.get("theory"), evidence.get("observed"), evidence.get("tolerance")
    if theory is None or observed is None or tolerance is None:
        worst = (evidence.get("figures") or {}).get("worst")
        return float(worst) if isinstance(worst, (int, float)) and math.isfinite(worst) else float("-inf")
    gap = {"at_most": theory - observed, "above": tolerance - (observed - theory),
           "below": tolerance - (theory - observed)}.get(evidence.get("relation") or "equal", abs(theory - observed))
    return gap / tolerance if tolerance > 0 else (float("inf") if gap > 0 else 0.0)


def shown_example(result: dict) -> dict | None:
    """The example a summary shows: the counterexample, else the example whose check failed to run, else the
    first inconclusive example, else the worst of those that held (the nearest its tolerance, `tightness`;
    the last one where none says how near it came)."""
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


def key_figures(result: dict) -> str:
    """The shown example's two sides in the words of their relation, with the standard error where the
    evidence has one and the tolerance named as what it is (5 SE + a bias budget for a Monte Carlo claim),
    or the first line of its error:

    - equal: ``theory T vs observed O (SE s), allowed gap τ`` (``(bias budget b)`` after it where a stated budget is
      part of τ);
    - at_most: ``T ≤ O + τ (SE s)`` (a bound: the left side is not a "theory" nor the right an "observation"),
      ``T > O + τ`` where it is violated, each side named where the check labels it
      (``|slope + 1| 0.02 ≤ tolerance 0.05``);
    - above / below: ``observed − bound > τ: O − B > τ (SE s)`` and its mirror (the relation the claim
      needs, written with its numbers: false where the claim is refuted);
    - any other relation: its sides by their labels (``no drop 0 vs least drop … 9.86 (SE 0.07), allowed gap 0.36``);

    then each condition the verdict needs that does not hold (``; fails: <condition>``)."""
    example = shown_example(result)
    if example is None:
        return ""
    if example.get("error"):
        return "error: " + first_line(example["error"])
    evidence = example.get("evidence") or {}
    text = _sides_text(evidence)
    failed = [name for name, value in (evidence.get("conditions") or {}).items() if not value]
    if failed and (evidence.get("theory") is not None or evidence.get("observed") is not None):
        text += "; fails: " + ", ".join(failed)
    if evidence.get("inconclusive"):
        needed = needed_text(evidence.get("needed"))
        text += f"; inconclusive: {evidence['inconclusive']}" + (
            f" (this example would take {needed} at the spread measured so far)" if needed else "")
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
    bias = (evidence.get("figures") or {}).get("bias_budget")  # a stated budget inside the gap allowed: said
    allowed = "" if tolerance is None else f", allowed gap {v(tolerance)}" + (
        f" (bias budget {v(bias)})" if isinstance(bias, (int, float)) and bias > 0 else "")
    if relation == "equal" and (left, right) != ("theory", "observed"):
        return f"{left} {v(theory)} vs {right} {v(observed)}{se_text}{allowed}"
    if relation == "at_most":
        named = (left, right) != ("value", "bound")
        sign = "≤" if theory <= observed + (tolerance or 0.0) else ">"  # the relation the numbers are in
        return (f"{left + ' ' if named else ''}{v(theory)} {sign} {right + ' ' if named else ''}{v(observed)}"
                + (f" + {v(tolerance)}" if tolerance else "") + se_text)
    if relation == "above":  # the relation the claim needs, with its numbers (false when refuted)
        return f"{right} − {left} > τ: {v(observed)} − {v(theory)} > {v(tolerance)}{se_text}"
    if relation == "below":
        return f"{left} − {right} > τ: {v(theory)} − {v(observed)} > {v(tolerance)}{se_text}"
    return f"{left} {v(theory)} vs {right} {v(observed)}{se_text}{allowed}"


def _example_rows(result: dict) -> tuple[list[list], list[str]]:
    """Every example (then the counterexample) as a row: label, parameters, seed, the two sides, tolerance ("–"
    where the evidence has none, as a claim over derivation steps), outcome, seconds; and each row's CSS class
    (``counterexample`` or none)."""
    rows, classes = [], []
    shown = [(str(k), e) for k, e in enumerate(result.get("examples") or [], 1)]
    if result.get("counterexample") is not None:
        shown.append(("counterexample", result["counterexample"]))
    for label, e in shown:
        evidence = e.get("evidence") or {}
        outcome = example_status(e)
        if outcome == "error":
            outcome = "error: " + first_line(e["error"])
        elif outcome == "inconclusive" and evidence.get("needed"):
            outcome += f" (would take {needed_text(evidence['needed'])})"
        sides = ("–" if evidence.get(k) is None else evidence[k] for k in ("theory", "observed", "tolerance"))
        rows.append([label, format_parameters(e.get("parameters") or {}), e.get("seed"), *sides, outcome,
                     e.get("seconds")])
        classes.append("counterexample" if label == "counterexample" else "")
    return rows, classes


@dataclass(frozen=True)
class Shown:
    """The one example a summary spells out (`shown_example`) and why it is the one: ``kind`` is
    ``counterexample``, ``error`` (the claim's code failed on it), ``inconclusive`` (the first undecided) or
    ``held`` (the nearest its tolerance of those that held)."""

    kind: str
    parameters: dict
    seed: Any
    evidence: dict | None
    error: str | None


@dataclass(frozen=True)
class ClaimStory:
    """What is said about one claim result, in every format: its verdict (`verdict`),
    statement and source, the key figures, the examples as a table (``example_header``, ``example_rows``, each row's
    CSS class in ``row_classes``), what was drawn, the counterexample's note, standard error and shrink trials, the
    error of the claim's code with the example it met, what would decide an undecided claim, the notes and the
    replay command."""

    name: str
    statement: str
    source: str | None
    expect: str
    status: str
    verdict: str
    seconds: float
    key_figures: str
    example_count: int
    example_header: tuple[str, ...]
    example_rows: list[list]
    row_classes: list[str]
    drawn: str
    shown: Shown | None
    counterexample_note: str | None  # these three only when there is a counterexample
    counterexample_standard_error: float | None
    shrink_trials: int | None
    failure: dict | None  # {"parameters": …, "seed": …, "error": traceback} of the example the code failed on
    needed: str  # what would decide an inconclusive claim ("" when nothing is said)
    notes: tuple[str, ...]
    replay: str
    profile: str | None
    backend: str | None
    claim_call: str = "claim"  # Python that gives the claim in a fresh session (results written before it: "claim")
    run_seed: int = 0  # the run's seed (ctx.run_seed of every example)

    @property
    def inconclusive(self) -> bool:
        return self.status == "inconclusive"


def claim_story(result: dict) -> ClaimStory:
    """The story of ``result`` (``ClaimResult.as_dict()``)."""
    example = shown_example(result)
    shown = None
    if example is not None:
        kind = ("counterexample" if result.get("counterexample") else "error" if result.get("error")
                else "inconclusive" if result["status"] == "inconclusive" else "held")
        shown = Shown(kind, example.get("parameters") or {}, example.get("seed"), example.get("evidence"),
                      example.get("error"))
    counter = result.get("counterexample")
    evidence = (counter or {}).get("evidence") or {}
    failed = result.get("error")
    rows, classes = _example_rows(result)
    return ClaimStory(
        name=result["name"], statement=result["statement"], source=result.get("source"), expect=result["expect"],
        status=result["status"], verdict=verdict(result), seconds=result["seconds"], key_figures=key_figures(result),
        example_count=len(result.get("examples") or []),
        example_header=("example", "parameters", "seed", *sides(result), "tolerance", "outcome", "seconds"),
        example_rows=rows, row_classes=classes, drawn=drawn_text(result.get("drawn") or {}), shown=shown,
        counterexample_note=evidence.get("note") if counter is not None else None,
        counterexample_standard_error=evidence.get("standard_error") if counter is not None else None,
        shrink_trials=int(result.get("shrink_trials", 0)) if counter is not None else None,
        failure=failed if isinstance(failed, dict) and failed.get("error") else None,
        needed=needed_text(result.get("needed")), notes=tuple(result.get("notes") or ()) + _missed_flaw(result),
        replay=result["replay"], profile=result.get("profile"), backend=result.get("backend"),
        claim_call=result.get("claim_call") or "claim",
        run_seed=result.get("seed") or 0)


def _missed_flaw(result: dict) -> tuple[str, ...]:
    """For a claim expected refuted that held: the part of the parameter space on which a flaw is found with
    probability 99% by its n distinct examples (q = 1 − 0.01^{1/n}, `attnverify.checks.claim.examples_needed`
    turned around), so that a holds says what it could have missed."""
    n = len(result.get("examples") or [])
    if result.get("expect") != "refuted" or result["status"] != "holds" or n == 0:
        return ()
    share = 1.0 - 0.01 ** (1.0 / n)
    return (f"{n} example{'s' * (n != 1)} find{'s' * (n == 1)} a flaw showing on {share:.0%} of the drawn parameters "
            "or more with "
            "probability 99%; one on less is missed more often: more examples (--examples) or the thorough profile "
            "may find it",)


def summary_line(results: list[dict]) -> str:
    """``N claims: a as expected, b unexpected (names), c undecided (names)``."""
    verdicts = [verdict(r) for r in results]
    unexpected = [r["name"] for r, v in zip(results, verdicts) if v == "UNEXPECTED"]
    undecided = [r["name"] for r, v in zip(results, verdicts) if v == "UNDECIDED"]
    text = (f"{len(results)} claims: {len(results) - len(unexpected) - len(undecided)} as expected, "
            f"{len(unexpected)} unexpected" + (f" ({', '.join(unexpected)})" if unexpected else ""))
    if undecided:
        text += f", {len(undecided)} undecided (inconclusive: {', '.join(undecided)})"
    return text


TRACEBACK_HEADING = "full traceback:"
"""The line an error's report (`attnverify.checks.runner.frames_first`) puts before its whole traceback, after the
claim's own frames: where the command line without ``--debug`` cuts it."""


class StoryPrinter:
    """One walk over a claim's story (sympy's ``Printer`` as the model): `story` decides what is told and in which
    order; a format overrides the leaves below it. This class tells the story as plain text, the terminal's form:
    the example a summary shows (`shown_example`) spelled out with its parameters, seed, sides and tolerance; an
    error with its full traceback, or (``full_traceback`` False, the command line without ``--debug``) with the
    frames of the claim's own code only."""

    full_traceback = True

    def story(self, story: ClaimStory) -> str:
        parts = [self.story_heading(story), self.statement(story.statement)]
        if story.source:
            parts.append(self.source(story.source))
        parts.append(self.examples(story))
        if story.drawn:
            parts.append(self.drawn(story.drawn))
        if story.shrink_trials is not None:
            parts.append(self.counterexample(story))
        if story.failure is not None:
            parts.append(self.failure(story))
        if story.inconclusive:
            parts.append(self.undecided(story))
        parts += [self.note(note) for note in story.notes]
        parts.append(self.replay(story))
        return self.story_block(story, [part for part in parts if part])

    # ------------------------------------------------------------------ the leaves, as plain text

    def story_block(self, story: ClaimStory, parts: list[str]) -> str:
        return "\n".join(parts)

    def story_heading(self, story: ClaimStory) -> str:
        return f"--- {story.name}: {story.status} (expected {story.expect}) -> {story.verdict}"

    def statement(self, text: str) -> str:
        return f"statement:  {text}"

    def source(self, text: str) -> str:
        return f"source:     {text}"

    def examples(self, story: ClaimStory) -> str:
        """The shown example: why it is the one shown, its parameters, seed, sides, tolerance, note and error (the
        terminal tells the counterexample, the error and the undecided example here, not in their own leaves)."""
        shown = story.shown
        kind = shown.kind if shown is not None else None
        if story.shrink_trials is not None:
            lines = [f"counterexample (after {story.shrink_trials} shrink trials):"]
        elif kind == "error":
            lines = ["error in the claim's code (not a counterexample; not shrunk), on the example:"]
        elif story.inconclusive:
            lines = [f"inconclusive: {UNDECIDED}" + (f"; deciding them all would take {story.needed}" if story.needed
                                                     else "") + "; the first undecided example:"]
        elif shown is not None:
            lines = ["held on its one example:" if story.example_count == 1 else
                     f"held on all {story.example_count} examples; the nearest to its tolerance:"]
        else:
            return "no example was run"
        if shown is None:
            return lines[0]
        lines += [f"  parameters: {format_parameters(shown.parameters)}", f"  seed:       {shown.seed}"]
        evidence = shown.evidence
        if evidence:
            left, right = side_labels(evidence)  # evidence without sides (a custom summary) says it in its note
            sides = [(label, evidence.get(key)) for label, key in ((left, "theory"), (right, "observed"))]
            shown_sides = [format_value(value) for _, value in sides]
            if shown_sides[0] == shown_sides[1] and sides[0][1] != sides[1][1]:  # apart beyond 6 digits: all of them
                shown_sides = [repr(value) for _, value in sides]
            for (label, value), text in zip(sides, shown_sides):
                if value is not None:
                    lines.append(f"  {label + ':':<11} {text}")
            if evidence.get("tolerance") is not None:
                tolerance = f"  tolerance:  {format_value(evidence['tolerance'])}"
                if evidence.get("standard_error") is not None:
                    tolerance += f" (standard error {format_value(evidence['standard_error'])})"
                lines.append(tolerance)
            for condition, value in (evidence.get("conditions") or {}).items():
                lines.append(f"  condition:  {condition}: {value}")
            if evidence.get("note"):
                lines.append(f"  note:       {evidence['note']}")
            if evidence.get("inconclusive"):
                lines.append(f"  undecided:  {evidence['inconclusive']}")
        if shown.error:
            lines.append("  error:")
            text = shown.error.rstrip()
            heading = f"\n{TRACEBACK_HEADING}\n"
            if not self.full_traceback and heading in text:  # the message and the claim's own frames
                text = text.split(heading)[0] + "\n(the full traceback, attnverify's frames too: --debug)"
            lines += ["    " + line for line in text.splitlines()]
        return "\n".join(lines)

    def drawn(self, text: str) -> str:
        return f"drawn:      {text}"

    def counterexample(self, story: ClaimStory) -> str:
        return ""  # told with the shown example (`examples`)

    def failure(self, story: ClaimStory) -> str:
        return ""  # told with the shown example

    def undecided(self, story: ClaimStory) -> str:
        return ""  # told with the shown example

    def note(self, text: str) -> str:
        return f"note: {text}"

    def replay(self, story: ClaimStory) -> str:
        text = f"replay:     {story.replay}"
        shown = story.shown
        if shown is not None:
            text += (f"\n  this example alone: attnverify.checks.runner.evaluate({story.claim_call}, "
                     f"{shown.parameters!r}, {shown.seed}, profile={story.profile!r}, backend={story.backend!r}"
                     + (f", seed={story.run_seed}" if story.run_seed else "") + ")")
        return text


def story_text(story: ClaimStory, *, full_traceback: bool = True) -> str:
    """A claim's story as plain text (`StoryPrinter`): what ``check`` and ``verify`` print and ``print(result)``;
    ``full_traceback`` False leaves an error's traceback at the claim's own frames."""
    printer = StoryPrinter()
    printer.full_traceback = full_traceback
    return printer.story(story)
