"""Print, as JSON, what decides the verdicts of the built-in theories' derivations and of every file of
``examples/`` (the README's theorem is ``examples/relu_kernel.py``): ``steps``, derivation name → [[outcome, cut],
…] per step; ``claims``, every example claim's name → its status (quick profile, seed 0, numpy). Run as a script
by ``test_same_verdicts.py``, with a cold cache and a fixed hash seed, idle and under load."""

import json
import sys
from pathlib import Path

from attnverify.checks import run_claim
from attnverify.derivations.steps import check_derivation
from attnverify.theories import builtin
from attnverify.theories.catalogue import claims_in_module, concise_theories, load_user_module

ROOT = Path(__file__).resolve().parents[2]


def verdicts() -> dict:
    modules = [load_user_module(path) for path in sorted((ROOT / "examples").glob("*.py"))]
    theories = [*builtin(), *(theory for module in modules for theory in concise_theories(module))]
    steps = {}
    for theory in theories:
        for handle in theory.derivations:
            derivation = handle()
            steps[derivation.name] = [[check.outcome, check.cut] for check in check_derivation(derivation)]
    every = [claim for theory in theories if not theory.builtin for claim in theory.claim_list()]
    every += [claim for module in modules for claim in claims_in_module(module) if claim not in every]
    claims = {claim.name: run_claim(claim, profile="quick", seed=0, backend="numpy").status for claim in every}
    return {"steps": steps, "claims": claims}


if __name__ == "__main__":
    json.dump(verdicts(), sys.stdout)
