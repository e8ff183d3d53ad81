"""The suite-wide seed offset: ``ATTNVERIFY_TEST_SEED_OFFSET`` (an integer ≥ 0, default 0) reruns every stochastic
test under fresh seeds.

A stochastic test passes every seed it uses through :func:`seeded` (or draws from :func:`rng`); with the offset 0
that is the seed written in the test, so the default run is the one the tests were written for, and any other offset
maps each written seed to a fresh one, independent across seeds and offsets (``numpy.random.SeedSequence`` of
(offset, seed)). ``tests/conftest.py`` derives hypothesis' seed from the offset as well, and prints the offset in
pytest's header, so a failure replays with the same variable.

    ATTNVERIFY_TEST_SEED_OFFSET=3 pytest -q -m "not thorough"
"""

from __future__ import annotations

import os

import numpy as np

VARIABLE = "ATTNVERIFY_TEST_SEED_OFFSET"


def seed_offset() -> int:
    """The offset from the environment (0 when unset or empty); anything but an integer ≥ 0 is refused by name."""
    text = os.environ.get(VARIABLE, "").strip()
    if not text:
        return 0
    try:
        offset = int(text)
    except ValueError:
        offset = -1
    if offset < 0:
        raise ValueError(f"{VARIABLE} must be an integer ≥ 0, got {text!r}")
    return offset


def seeded(seed: int) -> int:
    """The seed a test should use for its written ``seed``: ``seed`` itself at offset 0, else a fresh 31-bit seed
    drawn from (offset, seed)."""
    offset = seed_offset()
    if offset == 0:
        return int(seed)
    return int(np.random.SeedSequence([offset, int(seed)]).generate_state(1)[0] >> 1)


def rng(seed: int) -> np.random.Generator:
    """``numpy.random.default_rng(seeded(seed))``."""
    return np.random.default_rng(seeded(seed))


def hypothesis_seed() -> int | None:
    """hypothesis' global seed under a non-zero offset (None at offset 0, where the suite derandomises)."""
    offset = seed_offset()
    return None if offset == 0 else seeded(2**30 + offset)
