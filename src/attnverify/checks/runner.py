"""The claim runner: hypothesis draws the parameters, the check measures, failures shrink.

Every example gets its own Monte Carlo seed, mixed from the run's seed and a number hypothesis draws
alongside the parameters (`example_seed`), so an example replays exactly from
``(parameters, seed)`` and a whole run replays from the run's seed. The mixing matters: hypothesis
starts every run with its simplest example (drawn number 0), so without it the first example — the only
one of a claim with one example — would have the same Monte Carlo seed whatever the run's seed.
A refuting example is shrunk by hypothesis for at most ``claim.shrink_budget`` further checks
(Monte Carlo checks are expensive); the smallest refuting example found is the counterexample.

A claim whose strategy has bounded numbers (``st.floats(a, b)``, ``st.integers(a, b)`` of
`.strategies`) is also checked at their ends: after hypothesis' draws, the example with every one at its
low end, then at its high end (hypothesis' simplest draw for the other parameters; `end_examples`); an end
that is hypothesis' simplest draw is checked first instead, where hypothesis' own search starts. They
count among the claim's examples (the draws are that many fewer, and never repeat an end), each a search of
its own: a refuting end shrinks its other parameters, its bounded ones staying at the end.

A claim comes out as one of four statuses: ``"refuted"`` (an example contradicts it: shrunk to a
counterexample), ``"error"`` (its check raised, exited or returned something other than evidence: an
error of the claim's code, never shrunk and never a counterexample), ``"inconclusive"`` (no example
contradicts it, but some could not decide: they say what would, in ``needed``), else ``"holds"``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import time
import traceback
from dataclasses import asdict, dataclass, field, is_dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import hypothesis.configuration
from hypothesis import HealthCheck, Phase, given, reject, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from ..execution.settings import RunSettings
from ..base.files import write_atomically
from ..base.backend import to_numpy
from ..base.cache import cache_directory
from .claim import Claim, Context, in_package
from .drawn import drawn_ranges, unbounded_draws
from .evidence import Evidence
from .story import TRACEBACK_HEADING, first_line, format_parameters
from .strategies import declared_ranges, drawing_ends
from .warned import warned, warning_notes

#: Upper end (exclusive) of the per-example Monte Carlo seeds.
SEED_RANGE = 2**32

#: The drawn numbers of the end examples' Monte Carlo seeds, outside hypothesis' draws in [0, SEED_RANGE).
END_NUMBERS = {"low": SEED_RANGE, "high": SEED_RANGE + 1}


def example_seed(run_seed: int, drawn: int) -> int:
    """The Monte Carlo seed of an example: numpy's SeedSequence of (run seed, hypothesis' drawn number),
    in [0, SEED_RANGE). Different run seeds give independent streams even for the same drawn number."""
    return int(np.random.SeedSequence([run_seed, drawn]).generate_state(1, np.uint32)[0])


@dataclass
class Example:
    """One evaluated example: its parameters, its Monte Carlo seed, and what it showed."""

    parameters: dict
    seed: int
    evidence: Evidence | None = None
    error: str | None = None
    seconds: float = 0.0
    warnings: tuple[str, ...] = ()  # what its check warned (`.warned.warning_text`), each once

    @property
    def holds(self) -> bool:
        return self.error is None and self.evidence is not None and self.evidence.holds

    @property
    def status(self) -> str:
        """``"error"``, or the evidence's verdict: ``"holds"``, ``"refuted"``, ``"inconclusive"``."""
        return "error" if self.error is not None or self.evidence is None else self.evidence.status

    def as_dict(self) -> dict:
        return {
            "parameters": jsonable(self.parameters),
            "seed": self.seed,
            "evidence": None if self.evidence is None else jsonable(self.evidence.as_dict()),
            "error": self.error,
            "seconds": round(self.seconds, 4),
            **({"warnings": list(self.warnings)} if self.warnings else {}),
        }


@dataclass
class ClaimResult:
    """The outcome of running one claim under one profile."""

    claim: Claim
    status: str  # "holds" | "refuted" | "inconclusive" | "error"
    examples: list[Example]
    counterexample: Example | None
    profile: str
    backend: str
    seed: int
    seconds: float
    shrink_trials: int = 0
    notes: list[str] = field(default_factory=list)
    command: str = "attnverify check"  # what replays it: ``attnverify verify FILE.py`` for a user's file
    requested_examples: int | None = None  # ``--examples N`` of the run, when it overrode the claim's number
    error: Example | None = None  # the example whose check failed to run (status "error"), never shrunk

    @property
    def needed(self) -> dict[str, int]:
        """What would decide an inconclusive claim: the most of each count its inconclusive examples need."""
        needed: dict[str, int] = {}
        for example in self.examples:
            if example.status == "inconclusive":
                for name, count in example.evidence.needed.items():
                    needed[name] = max(needed.get(name, 0), count)
        return needed

    @property
    def drawn(self) -> dict[str, dict]:
        """What the examples covered, the shrunk counterexample among them: per numeric parameter, the least and
        greatest value checked against its declared range (`drawn_ranges`)."""
        shrunk = [] if self.counterexample is None else [self.counterexample]
        return drawn_ranges([*self.examples, *shrunk], declared_ranges(self.claim.parameters))

    def __repr__(self) -> str:
        return (f"<ClaimResult {self.claim.name}: {self.status} (expected {self.claim.expect}), "
                f"{len(self.examples)} examples, {self.seconds:.1f} s>")

    def __str__(self) -> str:
        """The claim's story as plain text (`attnverify.checks.story.story_text`): the verdict, the example a
        summary shows (a counterexample, an error, an undecided one or the nearest to its tolerance) with its sides,
        what was drawn and the replay command, as the terminal and the report tell it."""
        from .story import claim_story, story_text

        return story_text(claim_story(self.as_dict()))

    @property
    def ok(self) -> bool:
        """True when the claim came out as expected (held, or was refuted as intended)."""
        return self.status == self.claim.expect

    @property
    def replay_command(self) -> str:
        """What reruns this result: ``attnverify verify FILE`` for a claim from a user's file (wherever it was run:
        CLI, notebook, pytest), else the run's command; then the claim, profile, backend, seed and examples."""
        command = self.claim.replay_command if self.claim.origin else self.command
        return (
            f"{command} --only {self.claim.name} --profile {self.profile} "
            f"--backend {self.backend} --seed {self.seed}"
            + (f" --examples {self.requested_examples}" if self.requested_examples is not None else "")
        )

    @property
    def claim_call(self) -> str:
        """Python that gives this claim in a fresh session: from the user's file, else the built-in theory."""
        if self.claim.origin:
            return f"attnverify.theories.from_file({str(self.claim.origin)!r}).claim_named({self.claim.name!r})"
        return (f"attnverify.theories.builtin_theory({self.claim.theory!r}).claim_named({self.claim.name!r})")

    def as_dict(self) -> dict:
        return {
            "name": self.claim.name,
            "statement": self.claim.statement,
            "source": self.claim.source,
            "expect": self.claim.expect,
            "status": self.status,
            "ok": self.ok,
            "profile": self.profile,
            "backend": self.backend,
            "seed": self.seed,
            "seconds": round(self.seconds, 3),
            "shrink_trials": self.shrink_trials,
            "examples": [e.as_dict() for e in self.examples],
            "drawn": jsonable(self.drawn),
            "counterexample": None if self.counterexample is None else self.counterexample.as_dict(),
            "error": None if self.error is None else self.error.as_dict(),
            "needed": self.needed,
            "replay": self.replay_command,
            "claim_call": self.claim_call,
            "notes": self.notes,
        }


class _ExampleFailed(Exception):
    """Raised inside hypothesis so that it shrinks towards a smaller failing example."""


def jsonable(value: Any) -> Any:
    """``value`` with numpy/cupy arrays and scalars, dataclasses and paths made JSON-ready; NaN and
    infinities become None (strict JSON has no such numbers)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if is_dataclass(value) and not isinstance(value, type):
        return jsonable(asdict(value))
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "tolist"):  # numpy or cupy arrays and scalars
        return jsonable(to_numpy(value).tolist())
    if isinstance(value, Path):
        return str(value)
    try:
        number = float(value)  # sympy numbers, fractions
    except (TypeError, ValueError):
        return str(value)
    return number if math.isfinite(number) else None


def evaluate(claim: Claim, parameters: dict, monte_carlo_seed: int, settings: RunSettings | None = None,
             **options: Any) -> Example:
    """Run the check of ``claim`` on one example (``parameters`` and ``monte_carlo_seed``) in the run of ``settings``
    (or of the settings named as keywords, ``seed=`` the run's: `RunSettings.given`), whose experiments their store
    holds. A check that raises, calls ``sys.exit`` or
    returns something other than [`Evidence`][attnverify.checks.Evidence] gives an example with an ``error`` (the
    claim's own frames first, then the whole traceback), never a crash of the run; Ctrl-C still stops the run. What the
    check warns is kept in the example, not printed (`warned`): the claim's result notes it."""
    settings = RunSettings.given(settings, **options)
    example, texts = warned(lambda: _evaluate(claim, parameters, monte_carlo_seed, settings))
    return replace(example, warnings=texts) if texts else example


def _evaluate(claim: Claim, parameters: dict, seed: int, settings: RunSettings) -> Example:
    ctx = Context(settings, np.random.default_rng(seed), seed)
    start = time.perf_counter()
    try:
        evidence = claim.check(dict(parameters), ctx)
        if not isinstance(evidence, Evidence):
            raise TypeError(f"check of {claim.name} returned {type(evidence).__name__}, not Evidence (make it with "
                            "within_error, close, at_most, exceeds or Evidence(...))")
        verdict = evidence.verdict()  # Evidence checks this when made; a tampered one is caught here
        if evidence.inconclusive:  # not holding, and not contradicted by an equality's or a bound's figures
            if evidence.holds or (verdict is False and evidence.relation in ("equal", "at_most")):
                raise ValueError(f"check of {claim.name} says inconclusive, its figures say otherwise: "
                                 f"{evidence.explain()}")
        elif verdict is not None and verdict != evidence.holds:
            raise ValueError(f"check of {claim.name} says holds={evidence.holds}, its figures say {verdict}: "
                             f"{evidence.explain()}")
        return Example(dict(parameters), seed, evidence=evidence, seconds=time.perf_counter() - start)
    except (Exception, SystemExit) as error:  # an error of the claim's code, reported, never hidden
        return Example(dict(parameters), seed, error=error_report(error, claim),
                       seconds=time.perf_counter() - start)


def is_library_frame(filename: str) -> bool:
    """Whether a traceback frame is in a library (site-packages or the standard library), not the claim's code."""
    path = os.path.abspath(filename)
    return ("site-packages" in path or "dist-packages" in path or path.startswith(os.path.dirname(os.__file__))
            or filename.startswith("<"))


def frames_first(error: BaseException, *, detail: str | None = None, own_code: str = "the claim's code",
                 skip: int = 0, package_is_own: bool = True) -> str:
    """``detail`` (default: the error's one-line text), then the frames of the user's own code (innermost last;
    not libraries, and not attnverify itself unless ``package_is_own``), then the full traceback."""
    detail = detail or "".join(traceback.format_exception_only(type(error), error)).strip()
    frames = traceback.extract_tb(error.__traceback__)[skip:]
    own = [f for f in frames if not is_library_frame(f.filename) and (package_is_own or not in_package(f.filename))]
    parts = [detail]
    if own:
        parts.append(f"in {own_code} (innermost last):\n" + "".join(traceback.format_list(own)).rstrip())
    parts.append(f"{TRACEBACK_HEADING}\n"
                 + "".join(traceback.format_exception(type(error), error, error.__traceback__)).rstrip())
    return "\n".join(parts)


def error_report(error: BaseException, claim: Claim) -> str:
    """The text of an error in a claim's check: the error, the frames of the claim's own code first (a user's
    claim: its files; a built-in: the package's derivations and numerics it calls too), then the full traceback."""
    detail = (f"SystemExit: the check of {claim.name} called sys.exit({error.code!r})"
              if isinstance(error, SystemExit) else None)
    return frames_first(error, detail=detail, skip=1, package_is_own=not claim.origin)  # 1: evaluate's call


def example_key(parameters: dict, seed: int) -> str:
    """The identity of an example: its parameters and its Monte Carlo seed (all that its check depends on)."""
    return repr((sorted(parameters.items()), int(seed)))


def parameters_key(parameters: dict) -> str:
    """The identity of a parameter point (an example without its Monte Carlo seed)."""
    return repr(sorted(parameters.items()))


def _hypothesis_search(claim: Claim, total: int, seed: int, body: Callable[[dict, int], None], *,
                       end: str | None = None, skip: set[str] | None = None) -> Callable[[], None]:
    """hypothesis' search over ``claim.parameters`` (``total`` examples, run seed ``seed``): ``body(parameters,
    monte_carlo_seed)`` for each draw. ``end`` ("low"/"high"): the search of that end example (its bounded numbers
    at that end, its Monte Carlo seed from `END_NUMBERS`). Draws whose `parameters_key` is in ``skip``
    (the ends a run checks, and every parameter point checked so far; emptied when a failure shrinks) are not
    examples: hypothesis draws another, so that ``total`` examples are ``total`` distinct points of the parameter
    space (hypothesis repeats simple values, and a repeated point adds nothing to the coverage `examples_needed`
    counts on), or as many as the space holds. From the first failure on nothing is set aside: the shrinking may
    come back to a point at another Monte Carlo seed, and hypothesis replays the minimal failure at the end. The
    one place the settings are made, so that `drawn_examples` and [`run_claim`][attnverify.checks.runner.run_claim]
    draw the same sequence."""
    number = st.integers(0, SEED_RANGE - 1) if end is None else st.just(END_NUMBERS[end])
    skipped, failed = [0], [False]
    declared = list(declared_ranges(claim.parameters))  # hypothesis draws a dict's entries in varying order
    names = set(declared)

    @settings(
        max_examples=total,
        database=None,
        deadline=None,
        derandomize=False,
        print_blob=False,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
    )
    @hypothesis_seed(seed)
    @given(drawn=st.tuples(claim.parameters, number))
    def search(drawn: tuple[dict, int]) -> None:
        parameters, drawn_number = drawn
        if declared and parameters.keys() == names:  # every example's entries in the declared order
            parameters = {name: parameters[name] for name in declared}
        key = parameters_key(parameters)
        if skip and not failed[0] and key in skip:
            skipped[0] += 1
            reject()
        try:
            body(parameters, example_seed(seed, drawn_number))
        except BaseException:
            failed[0] = True  # the example failed (or the search is interrupted): shrinking sets nothing aside
            raise
        if skip is not None and not failed[0]:
            skip.add(key)

    def run() -> None:
        with drawing_ends(end) if end is not None else contextlib.nullcontext():
            try:
                search()
            except Unsatisfiable:
                if not skipped[0]:
                    raise
                # every draw was an end the run checks apart, or a point checked: the space holds no further one

    return run


def end_examples(claim: Claim, seed: int = 0) -> list[tuple[str, dict]]:
    """The ends a run of ``claim`` checks besides hypothesis' draws, as (end, parameters): ``"low"`` (every bounded
    ``st.floats``/``st.integers`` of `.strategies` at its low end, the other parameters at hypothesis'
    simplest draw), then ``"high"`` unless it is the same example; none when the strategy has no bounded number, and
    not an end its strategy refuses (a ``filter`` or ``assume`` that excludes it)."""
    ends: list[tuple[str, dict]] = []
    for end in ("low", "high"):
        drawn: list[dict] = []
        with drawing_ends(end) as bounded:
            try:
                _hypothesis_search(claim, 1, seed, lambda parameters, _: drawn.append(dict(parameters)), end=end)()
            except Unsatisfiable:
                continue
        if bounded and drawn and all(parameters_key(drawn[0]) != parameters_key(p) for _, p in ends):
            ends.append((end, drawn[0]))
    return ends


def _searches(claim: Claim, total: int, seed: int) -> list[tuple[str | None, int, set[str]]]:
    """A run's searches, in order, as (end, examples, skip): hypothesis' draws, then each end example; together
    ``total`` examples (the ends keep their place when ``total`` is smaller than their number). An end that is
    hypothesis' simplest draw (the low end of ranges whose simplest value is their low end, as ``floats(0.01, 2)``)
    comes first instead, where hypothesis' own search starts: a claim false there is refuted at its first check,
    with nothing to shrink, where meeting the refutation first at a later draw costs up to ``shrink_budget``
    further checks to shrink back. The other ends come last, so that a flaw from some value on is first met by a
    draw and shrinks to where it starts."""
    ends = end_examples(claim, seed)[:total]
    skip = {parameters_key(parameters) for _, parameters in ends}
    simplest: list[str] = []
    try:
        _hypothesis_search(claim, 1, seed, lambda parameters, _: simplest.append(parameters_key(parameters)))()
    except Unsatisfiable:
        pass
    first = [(end, 1, set()) for end, parameters in ends if parameters_key(parameters) in simplest]
    last = [(end, 1, set()) for end, parameters in ends if parameters_key(parameters) not in simplest]
    return first + [(None, total - len(ends), skip)] + last


def _checked_run(claim: Claim, settings: RunSettings) -> int:
    """The number of examples of ``claim`` in the run of ``settings``."""
    if not isinstance(claim, Claim):
        raise TypeError(f"claim must be a Claim (made with @claim), got {type(claim).__name__}")
    use_cache_for_hypothesis()
    draw_independently_of_loaded_modules()
    return claim.examples[settings.profile] if settings.examples is None else settings.examples


def drawn_examples(claim: Claim, settings: RunSettings | None = None, **options: Any) -> list[tuple[dict, int]]:
    """The examples [`run_claim`][attnverify.checks.runner.run_claim] checks in the run of ``settings`` (or of the
    settings named as keywords), in its order: (parameters, Monte Carlo seed). hypothesis draws the same sequence
    whatever the checks show until one fails (a run stops there and shrinks), so these can be checked ahead, in
    parallel, and handed to [`run_claim`][attnverify.checks.runner.run_claim] as ``evaluated``: its result is the
    same."""
    settings = RunSettings.given(settings, **options)
    total, seed = _checked_run(claim, settings), settings.seed
    drawn: list[tuple[dict, int]] = []
    for end, count, skip in _searches(claim, total, seed):
        if count:
            _hypothesis_search(claim, count, seed, lambda parameters, monte_carlo_seed: drawn.append(
                (dict(parameters), monte_carlo_seed)), end=end, skip=skip)()
    return drawn


def run_claim(
    claim: Claim,
    settings: RunSettings | None = None,
    *,
    progress: Callable[[Claim, int, int], None] | None = None,
    evaluated: Mapping[str, Example] | None = None,
    on_evaluated: Callable[[Example], None] | None = None,
    **options: Any,
) -> ClaimResult:
    """Check ``claim`` on hypothesis-drawn examples in the run of ``settings`` (default `RunSettings()`, changed by
    the settings named as keywords: ``run_claim(claim, profile="thorough", seed=3)``); shrink the first failure to a
    minimal one. The settings' ``examples`` overrides the claim's number for the profile
    (``claim.examples[profile]``); a run replays from its seed and that number. Their ``store`` holds the run's
    experiment results (shared by the claims of a run). ``evaluated`` holds examples already checked (by
    `example_key`: checked ahead as tasks, or saved by an interrupted run), which are taken instead of checked again;
    their seconds count in the result's. ``on_evaluated`` sees each example this call checks itself (to save it)."""
    settings = RunSettings.given(settings, **options)
    total, seed = _checked_run(claim, settings), settings.seed
    evaluated = dict(evaluated or {})
    checked: list[Example] = []
    failing: dict[str, Example] = {}
    state = {"failed": False, "shrink_trials": 0, "last": None, "reused_seconds": 0.0, "error": None,
             "shrink_errors": 0, "shrink_error": None}
    start = time.perf_counter()
    searches = _searches(claim, total, seed)

    def body(parameters: dict, monte_carlo_seed: int) -> None:
        if state["error"] is not None:
            return  # the claim's code is broken: nothing further is checked (hypothesis just finishes)
        key = example_key(parameters, monte_carlo_seed)
        if key not in failing:  # else hypothesis is replaying the minimal failure at the end
            if state["failed"]:
                if state["shrink_trials"] >= claim.shrink_budget:
                    return  # budget spent: untried shrinks count as passing, the best failure stays
                state["shrink_trials"] += 1
            example = evaluated.get(key)
            if example is None:
                example = evaluate(claim, parameters, monte_carlo_seed, settings)
                evaluated[key] = example
                if on_evaluated is not None:
                    on_evaluated(example)
            else:
                state["reused_seconds"] += example.seconds
            if not state["failed"]:
                checked.append(example)
                if progress is not None:
                    progress(claim, len(checked), total)
            if example.status == "error":
                if state["failed"]:
                    state["shrink_errors"] += 1  # a shrink candidate the check cannot run is no smaller failure
                    state["shrink_error"] = state["shrink_error"] or example
                else:
                    state["error"] = example  # an error of the claim's code: not a counterexample, not shrunk
                return
            if example.status != "refuted":
                return  # holds, or inconclusive: no evidence against the claim
            state["failed"] = True
            for _, _, skip in searches:
                skip.clear()  # shrinking may reach an end's parameters
            failing[key] = example
        state["last"] = key
        raise _ExampleFailed(key)  # one raise site: hypothesis sees one failure to shrink

    for end, count, skip in searches:
        if not count or state["failed"] or state["error"] is not None:
            continue  # a failure or an error ends the run's checks
        try:
            _hypothesis_search(claim, count, seed, body, end=end, skip=skip)()
        except _ExampleFailed:
            pass
        except BaseExceptionGroup as group:  # several distinct failures: keep the last replayed
            if not all(isinstance(e, _ExampleFailed) for e in group.exceptions):
                raise
    counterexample = failing.get(state["last"]) if state["last"] else None
    notes = []
    if counterexample is not None:
        status = "refuted"
        if state["shrink_errors"]:
            first = state["shrink_error"]
            notes.append(f"{state['shrink_errors']} shrink candidates could not be checked (their check raised; the "
                         f"first, at {format_parameters(first.parameters)}: {first_line(first.error)}); they were not "
                         "counted as failures")
    elif state["error"] is not None:
        status = "error"
        notes.append("the claim's check failed to run (an error of its code, not a counterexample)")
        notes.extend(unbounded_draws(state["error"], declared_ranges(claim.parameters)))
    elif any(e.status == "inconclusive" for e in checked):
        status = "inconclusive"
    elif checked and all(e.evidence is not None and e.evidence.vacuous for e in checked):
        status = "inconclusive"  # every example would have held for a false claim as well
        checked = [_undecided(e) for e in checked]
        notes.append("every example held only where it could not tell the claim from a false one")
    else:
        status = "holds"
    if status in ("holds", "inconclusive") and len(checked) < total:
        notes.append(f"{len(checked)} of the {total} examples asked for: the parameters take only {len(checked)} "
                     "distinct values, each checked once")
    shrunk = [counterexample] if counterexample is not None and all(e is not counterexample for e in checked) else []
    notes.extend(warning_notes(e.warnings for e in (*checked, *shrunk)))
    return ClaimResult(
        claim=claim,
        status=status,
        examples=checked,
        counterexample=counterexample,
        profile=settings.profile,
        backend=settings.backend,
        seed=seed,
        seconds=time.perf_counter() - start + state["reused_seconds"],
        shrink_trials=state["shrink_trials"],
        notes=notes,
        requested_examples=settings.examples,
        error=state["error"],
    )


def _undecided(example: Example) -> Example:
    """A vacuous example (its evidence holds, but would for a false claim too) as the inconclusive one it is."""
    evidence = example.evidence
    return replace(example, evidence=replace(evidence, holds=False, vacuous="", inconclusive=evidence.vacuous))


def _no_local_constants():
    from hypothesis.internal.conjecture.providers import Constants

    return Constants()


def draw_independently_of_loaded_modules() -> None:
    """Make hypothesis' draws depend on the seed alone. hypothesis (≥ 6.131) sometimes draws a literal
    constant found in the source of the "local" modules loaded so far (those outside site-packages: this
    package in an editable install, a user's claims file, test files), so the same claim and seed drew
    different parameters in a report (many modules loaded) and in its replay ``attnverify check --only``.
    The pool of local constants is kept empty; hypothesis' own pool of edge values stays."""
    from hypothesis.internal.conjecture import providers

    if getattr(providers, "_get_local_constants", None) is not _no_local_constants:
        if not hasattr(providers, "_get_local_constants"):
            raise RuntimeError("this hypothesis version has no _get_local_constants: check that draws still do "
                               "not depend on the loaded modules (tests/checks/test_runner.py) and update "
                               "draw_independently_of_loaded_modules")
        providers._get_local_constants = _no_local_constants
        providers.CONSTANTS_CACHE.cache.clear()


def use_cache_for_hypothesis() -> None:
    """Keep hypothesis' own files (its storage directory) under the project's cache folder, not in a
    ``.hypothesis/`` folder of whatever directory the user runs from; ``$HYPOTHESIS_STORAGE_DIRECTORY``
    still wins. Runs use no example database: a failure replays from ``(parameters, seed)``."""
    if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        hypothesis.configuration.set_hypothesis_home_dir(cache_directory("hypothesis"))


def results_document(results: list[ClaimResult | dict], not_run: Iterable[str] = ()) -> dict:
    """The JSON document of a run: the finished claims (results, or their ``as_dict()``, e.g. from a task),
    and whether the run is complete (the names of the claims it has not run yet, e.g. when interrupted)."""
    not_run = list(not_run)
    return {"complete": not not_run, "not_run": not_run,
            "claims": [r if isinstance(r, dict) else r.as_dict() for r in results]}


def write_json(document: dict, path: str | Path) -> None:
    """Write ``document`` as strict JSON, atomically."""
    write_atomically(path, json.dumps(jsonable(document), indent=2, allow_nan=False))
