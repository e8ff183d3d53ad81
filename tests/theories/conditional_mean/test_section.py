"""The conditional-mean report section (quick profile): figures written, plotted numbers kept and
consistent with the derivations, bad arguments refused. One build is shared by the module."""

from __future__ import annotations

import numpy as np
import pytest

from attnverify.execution.store import Store

from attnverify.theories.conditional_mean import derivations as theory
from attnverify.theories.conditional_mean.theory import theory as theory_object
from attnverify.report import Section
from attnverify.theories.conditional_mean import section as section_module
from claim_helpers import quick_section
from seeds import seeded

FILES = ("conditional_mean_rate.png", "conditional_mean_constant.png", "conditional_mean_bandwidth.png",
         "conditional_mean_learning.png")


SEED = seeded(0)
"""The run seed of the section build: 0, or a fresh one under ATTNVERIFY_TEST_SEED_OFFSET (tests/seeds.py)."""
STORE = Store()
"""The store of the module's section build."""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return quick_section(section_module.theory.build_section, tmp_path_factory.mktemp("conditional_mean_report"),
                         seed=SEED, store=STORE)


def test_section_is_complete(built):
    out_dir, section, messages = built
    assert isinstance(section, Section) and section.theory == "conditional_mean"
    assert [d.name for d in section.derivations] == [d.name for d in theory_object.derivation_list()]
    assert [f.filename for f in section.figures] == list(FILES)
    for name in FILES:
        assert (out_dir / name).stat().st_size > 10_000
    assert messages and all(isinstance(m, str) for m in messages)


def test_rate_data_fall_like_root_L(built):
    _, section, _ = built
    data = section.figures[0].data
    assert abs(data["fit"]["slope"] + 0.5) < 5 * data["fit"]["slope_standard_error"] + 0.02
    # W = I stalls at its wrong limit: the error at the longest L is within 10% of the offset
    assert abs(data["naive_rmse"][-1] - data["naive_offset"]) < 0.1 * data["naive_offset"]


def test_bandwidth_data_use_the_derived_limits(built):
    _, section, _ = built
    data = section.figures[2].data
    for h in section_module.BANDWIDTHS:
        expected = float(theory.fixed_bandwidth_constants(0.7, 1.0, h, 2.0, 0.3)["limit"])
        assert data[f"h={h}"]["limit"] == pytest.approx(expected, rel=1e-14)
        assert np.all(np.isfinite(data[f"h={h}"]["mean"]))


def test_learning_data(built):
    _, section, _ = built
    data = section.figures[3].data
    for objective in ("supervised", "masked"):
        assert len(data[objective]["gap"]) == len(section_module.LEARNING["lengths"])
        assert all(np.isfinite(data[objective]["gap"]))


@pytest.mark.parametrize("kwargs, error", [({"profile": "fast"}, ValueError), ({"seed": -1}, ValueError),
                                           ({"progress": "print"}, TypeError)])
def test_bad_arguments_are_refused(tmp_path, kwargs, error):
    arguments = {"profile": "quick", "backend": "numpy", "seed": 0, "progress": print, **kwargs}
    with pytest.raises(error):
        section_module.theory.build_section(tmp_path, **arguments)


def test_the_run_plans_only_experiments_the_quick_section_uses(built):
    """Every experiment the theory plans for a quick run (computed as a task ahead of the section) is one the
    section asks the store for: a planned experiment it does not use would be computed for nothing."""
    from attnverify.theories import builtin_theory

    theory = builtin_theory("conditional_mean")
    for plan in theory.plan_experiments(profile="quick", seed=SEED, backend="numpy"):
        assert plan.key in STORE, plan.label
