"""pytest plugin (entry point ``pytest11``): claims become test items, run by the tool's own runner.

Collected: every [`Claim`][attnverify.checks.claim.Claim] and every concise `attnverify.Theory` (its claims
and its ``derivation_steps``) at the top level of a module pytest collects: a test module, or any ``.py`` file named
on the command line (``pytest examples/relu_kernel.py``, which pytest collects whatever its name); a long-form
file's ``derivations()`` gives its ``derivation_steps`` item. One item per claim: it passes when the
claim comes out as expected (an expected refutation passes), and fails with the claim's story (counterexample or
what would decide it, the replay command) otherwise. Options: ``--attnverify-profile``, ``--attnverify-seed``,
``--attnverify-examples``; works under pytest-xdist (each worker collects the same items). The plugin only reads
options and hands off to the one run path, `attnverify.run.claims.run_claims_as_tasks` (in the item's
process: pytest-xdist spreads the items).
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser) -> None:
    group = parser.getgroup("attnverify", "attnverify claims as tests")
    group.addoption("--attnverify-profile", choices=("quick", "thorough"), default="quick",
                    help="profile the claims run under (default quick)")
    group.addoption("--attnverify-seed", type=int, default=0, help="run seed of the claims (default 0); replays exactly")
    group.addoption("--attnverify-examples", type=int, default=None,
                    help="examples per claim, overriding each claim's number for the profile")


def pytest_configure(config) -> None:
    from .execution.settings import RunSettings

    try:  # the session's settings, checked once: every claim item runs with them
        config.attnverify_settings = RunSettings(profile=config.getoption("--attnverify-profile"),
                                                 seed=config.getoption("--attnverify-seed"),
                                                 examples=config.getoption("--attnverify-examples"))
    except (TypeError, ValueError) as error:
        raise pytest.UsageError(f"--attnverify-{error}") from None
    from .checks.runner import use_cache_for_hypothesis

    use_cache_for_hypothesis()  # every test of the session: hypothesis writes nothing where pytest runs


class ClaimFailed(Exception):
    """A claim that did not come out as expected; its message is the claim's story."""


class ClaimItem(pytest.Item):
    """One claim, run by the tool's runner under the session's profile, seed and examples."""

    def __init__(self, *, claim, **kwargs) -> None:
        super().__init__(**kwargs)
        self.claim = claim
        self.user_properties.append(("expect", claim.expect))

    def runtest(self) -> None:
        from .report.results import result_details
        from .run.claims import run_claims_as_tasks

        (result,) = run_claims_as_tasks([self.claim], [], self.config.attnverify_settings)
        self.user_properties.append(("status", result["status"]))
        if not result["ok"]:
            raise ClaimFailed(result_details(result))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ClaimFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"claim {self.claim.name} (expect {self.claim.expect})"


def _items(parent, claims) -> list[ClaimItem]:
    return [ClaimItem.from_parent(parent, name=c.name, claim=c) for c in claims]


def pytest_pycollect_makeitem(collector, name, obj):
    from .theories.catalogue import concise_theories
    from .checks.claim import Claim
    from .theory_form import Theory

    module = getattr(collector, "obj", None)
    if isinstance(obj, Theory):
        return _items(collector, obj.claim_list())
    if name == "derivations" and callable(obj) and module is not None:
        return _long_form_steps(collector, module, obj)
    if isinstance(obj, Claim):
        if module is not None and any(obj in t.claims for t in concise_theories(module)):
            return []  # collected with its theory
        return _items(collector, [obj])
    return None


def _long_form_steps(collector, module, derivations):
    """A long-form file's ``derivations()``: the item of its ``<theory>.derivation_steps`` claim, the theory named
    by the rules ``verify`` applies (`attnverify.theories.theory_name`); nothing for a module with no claims
    and no ``THEORY``, or with a ``Theory`` (whose own item covers its derivations)."""
    from .theories.catalogue import claims_in_module, concise_theories
    from .checks.derivation_steps import derivation_steps_claim
    from .theories import theory_name

    if concise_theories(module) or not (claims_in_module(module) or hasattr(module, "THEORY")):
        return None
    name = theory_name(module, collector.path)
    claim = derivation_steps_claim(name, lambda: list(derivations()), origin=str(collector.path))
    return _items(collector, [claim])
