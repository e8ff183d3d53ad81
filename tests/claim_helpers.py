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


def assert_comes_out_as_expected(claim, profile: str = "quick", **options) -> None:
    """Run ``claim`` as the CLI does, at the run seed of offset 0; fail with its status and counterexample unless it
    comes out as its theory expects (an expected refutation passes)."""
    from attnverify.checks import run_claim

    result = run_claim(claim, profile=profile, seed=run_seed(0), **options)
    assert result.ok, (result.status, result.counterexample.as_dict() if result.counterexample else None)


def quick_section(build_section, out_dir, *, seed: int, store):
    """``(out_dir, section, progress messages)`` of ``build_section`` (a theory's) in the quick profile on numpy, at
    the run seed ``seed``, its experiments in ``store`` (which the module's claim tests share)."""
    messages: list[str] = []
    section = build_section(out_dir, profile="quick", backend="numpy", seed=seed, store=store,
                            progress=messages.append)
    return out_dir, section, messages
