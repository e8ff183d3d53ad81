"""The claim every theory with derivations gets: ``<theory>.derivation_steps``, every recorded step holds.

Its one example checks each step of each derivation (`attnverify.derivations.steps`): a step that fails at
a point refutes the claim, so a wrong step fails the theory's verification through the same runner, table, exit
status, results.json and report as every claim. Proved, agreeing, marked and unchecked steps are counted in the
evidence; each step's outcome is in its figures. A step still being checked after a few seconds is named on the
run's progress display, with its budget (`attnverify.derivations.steps.step_budget`).
"""

from __future__ import annotations

from typing import Callable

from hypothesis import strategies as st

from ..derivations.steps import check_derivation, counts, counts_text
from ..execution.tasks import progress
from .claim import Claim
from .evidence import Evidence

STATEMENT = ("Every recorded derivation step holds: proved symbolically, or equal at random admissible points to 20 "
             "or more of 30 digits; steps marked as definitions or assumptions and conditions (equations that "
             "later steps solve, checked there) are counted and shown, not passed; a step the checker cannot "
             "decide (with why) leaves the claim inconclusive.")


def claim_name(theory: str) -> str:
    return f"{theory}.derivation_steps"


def derivation_steps_claim(theory: str, derivations: Callable[[], list], origin: str = "") -> Claim:
    """The claim ``<theory>.derivation_steps`` over ``derivations()`` (called when the claim is checked); ``origin``:
    the user's file the theory is in ("" for a built-in), which its replay runs."""

    def check(parameters: dict, ctx) -> Evidence:
        return steps_evidence(derivations())

    return Claim(name=claim_name(theory), statement=STATEMENT, parameters=st.fixed_dictionaries({}), check=check,
                 source="attnverify.derivations.steps (each derivation's recorded steps)",
                 examples={"quick": 1, "thorough": 1}, shrink_budget=0, origin=origin)


def steps_evidence(derivations: list) -> Evidence:
    """Evidence that every step of ``derivations`` holds: one condition per checked step, refuted by a failure,
    inconclusive where a step is unchecked (it may say anything); every outcome in the figures (``steps``:
    "<derivation>: step k" → outcome and its label; ``counts``)."""
    conditions, outcomes, failures, undecided, every = {}, {}, [], [], []
    for derivation in derivations:
        for number, check in enumerate(check_derivation(derivation, on_step=_announcer(derivation.name)), 1):
            label = f"{derivation.name}: step {number}"
            every.append(check)
            outcomes[label] = check.as_dict()
            if check.checked:
                conditions[label] = not check.failed
            if check.failed:
                failures.append(f"{label} {check.label()}")
            elif check.outcome == "unchecked":
                undecided.append(f"{label} {check.label()}")
    numbers = counts(every)
    summary = counts_text(numbers) + f" in {len(derivations)} derivation{'s' * (len(derivations) != 1)}"
    note = "\n".join([*failures, summary]) if failures else summary
    why = "" if failures or not undecided else (
        f"{len(undecided)} step{'s' * (len(undecided) != 1)} the checker cannot decide, so the derivation is not "
        f"verified: {undecided[0]}" + (f" (and {len(undecided) - 1} more)" if len(undecided) > 1 else ""))
    return Evidence(holds=not failures and not why, relation="custom", conditions=conditions, note=note,
                    figures={"counts": numbers, "steps": outcomes}, inconclusive=why)


def _announcer(name: str):
    """The progress line of a step of derivation ``name`` still being checked."""

    def announce(number: int, total: int, description: str, budget: float) -> None:
        progress(f"{name}: checking step {number}/{total} ({description}; safety net {budget:g} CPU s per step)")

    return announce
