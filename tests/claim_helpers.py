"""Helpers shared by the claim tests."""

import dataclasses


def unshrunk(claim):
    """The claim without shrinking: a power test asks only whether a wrong theory is refuted, and each
    shrink trial reruns the whole Monte Carlo check."""
    return dataclasses.replace(claim, shrink_budget=0)


def run_seed(seed: int = 0) -> int:
    """The run seed a claim test passes to ``run_claim(..., seed=run_seed(s))``: ``s`` itself, or a fresh seed under
    ``ATTNVERIFY_TEST_SEED_OFFSET`` (``seeds.seeded``), so that the offset reruns the claims under fresh seeds too."""
    from seeds import seeded

    return seeded(seed)
