"""Print, as JSON, the outcome of every derivation step of the built-in theories and of every file of ``examples/``
(the README's theorem among them): derivation name → [[outcome, cut], …] per step. Run as a script by
``test_same_verdicts.py``, with a cold cache and a fixed hash seed, idle and under load."""

import json
import sys
from pathlib import Path

from attnverify.derivations.steps import check_derivation
from attnverify.theories import builtin
from attnverify.theories.catalogue import concise_theories, load_user_module

ROOT = Path(__file__).resolve().parents[2]


def outcomes() -> dict:
    theories = list(builtin())
    for path in sorted((ROOT / "examples").glob("*.py")):
        theories += concise_theories(load_user_module(path))
    found = {}
    for theory in theories:
        for handle in theory.derivations:
            derivation = handle()
            found[derivation.name] = [[check.outcome, check.cut] for check in check_derivation(derivation)]
    return found


if __name__ == "__main__":
    json.dump(outcomes(), sys.stdout)
