import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # shared test helpers (e.g. derivations/paper_formula.py)

# ATTNVERIFY_CUPY_STANDIN=1 runs the suite's GPU path on the strict cupy stand-in of
# tests/cupy_standin (never installed): first on the import path here, and for the command lines and worker
# processes the tests start.
STANDIN = os.path.join(os.path.dirname(__file__), "cupy_standin")
if os.environ.get("ATTNVERIFY_CUPY_STANDIN") == "1":
    sys.path.insert(0, STANDIN)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [STANDIN, os.environ.get("PYTHONPATH", "")]))

import pytest
from hypothesis import settings

from seeds import VARIABLE, hypothesis_seed, seed_offset

# The backend is chosen at the edge (the command line) and passed down. The whole test
# session runs with an invalid ATTNVERIFY_BACKEND, so any code below the command line that still read it
# would fail with "backend must be one of ...". Command-line tests set or remove it themselves.
os.environ["ATTNVERIFY_BACKEND"] = "not-a-backend (set by tests/conftest.py: only the command line may read it)"

# ATTNVERIFY_TEST_SEED_OFFSET (tests/seeds.py) reruns the suite under fresh seeds. At offset 0
# hypothesis derandomises (each test's examples follow from the test's own code); at any other offset it draws
# afresh from a seed derived from the offset (the global seed that pytest's --hypothesis-seed sets), so the run
# still replays from the offset alone.
settings.register_profile("attnverify", deadline=None, derandomize=True, database=None, print_blob=True)
settings.register_profile("attnverify-offset", deadline=None, derandomize=False, database=None, print_blob=True)
if hypothesis_seed() is None:
    settings.load_profile("attnverify")
else:
    from hypothesis import core as _hypothesis_core

    settings.load_profile("attnverify-offset")
    if _hypothesis_core.global_force_seed is None:
        _hypothesis_core.global_force_seed = hypothesis_seed()


@pytest.fixture
def cupy():
    """The strict stand-in's cupy, whose device arrays it counts (``cupy.created()``); skips on a real cupy."""
    import cupy

    if not hasattr(cupy, "created"):
        pytest.skip("counts need the stand-in's cupy.created()")
    return cupy


@pytest.fixture
def host_synchronisations(cupy, monkeypatch):
    """``[n]``: how often a device value has reached the host since the fixture began, every way it can (get,
    float, int, bool, item), counted on the stand-in's arrays."""
    count = [0]
    for name in ("get", "__float__", "__int__", "__bool__", "item"):
        original = getattr(cupy.ndarray, name)

        def counted(self, *args, _original=original, **kwargs):
            count[0] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cupy.ndarray, name, counted)
    return count


def pytest_report_header(config):
    seed = hypothesis_seed()
    return (f"attnverify: {VARIABLE}={seed_offset()} (replay a failure with the same value; 0 = the seeds written in "
            f"the tests, hypothesis derandomised{'' if seed is None else f'; here hypothesis seed {seed}'})")

if os.environ.get("PYTEST_XDIST_WORKER"):
    # Under pytest-xdist every worker is one process per core: BLAS threads on top of that oversubscribe
    # the cores (OpenBLAS threads spin while they wait), which made the sampler tests 6–10× slower on
    # 2 cores. One BLAS thread per worker, in both OpenBLAS copies (numpy's and scipy's: threadpoolctl
    # reaches only libraries already loaded, hence the imports first).
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info, threadpool_limits

    threadpool_limits(1)
    assert all(pool["num_threads"] == 1 for pool in threadpool_info()), threadpool_info()

# The longest modules first: pytest-xdist (--dist loadscope --no-loadscope-reorder, as the Makefile runs it) hands
# modules to the two workers in the order they are collected, and the report sections and claim modules come last
# alphabetically; started last, the longest (the attention-paths section, ~90 s) left one worker idle at the end.
# Within a module the order is kept.
LONGEST_FIRST = tuple(f"tests/theories/{path}.py" for path in (
    "attention_paths/test_section", "single_location/test_claims", "conditional_mean/test_claims",
    "single_location/test_section", "attention_paths/test_derivations", "conditional_mean/test_section"))


def pytest_collection_modifyitems(config, items):
    rank = {path: k for k, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(LONGEST_FIRST)))


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector, name, obj):
    """This suite's modules hold claims and theories as fixtures (some false on purpose, run by the tests that use
    them): the attnverify pytest plugin must not collect them here. (Elsewhere, as in examples/, it does.)"""
    from attnverify.checks.claim import Claim
    from attnverify.theory_form import Theory

    if isinstance(obj, (Claim, Theory)) or (name == "derivations" and callable(obj)):
        return []
    return None
