"""The single-location report section (quick profile) writes its figures, keeps every plotted
number in the figures' data with consistent lengths, and carries the derivations and tables.

One build of the section (about 20 s on two cores) is shared by the tests of this module.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

from attnverify.theories.single_location.claims import PGD_CONFIGS
from attnverify.derivations.derivation import Derivation
from attnverify.execution.store import Store
from attnverify.report import Figure, Section, Table
from attnverify.theories.single_location import section as section_module
from claim_helpers import quick_section
from seeds import seeded

QUICK_FILES = ("single_location_risk_vs_L.png", "single_location_oracle_excess.png", "single_location_pgd.png")


SEED = seeded(0)
"""The run seed of the section build: 0, or a fresh one under ATTNVERIFY_TEST_SEED_OFFSET (tests/seeds.py)."""
STORE = Store()
"""The store of the module's section build."""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return quick_section(section_module.theory.build_section, tmp_path_factory.mktemp("single_location_report"),
                         seed=SEED, store=STORE)


def _figure(section: Section, filename: str) -> Figure:
    (figure,) = [f for f in section.figures if f.filename == filename]
    return figure


def test_section_is_complete(built):
    out_dir, section, messages = built
    assert isinstance(section, Section)
    assert section.theory == "single_location"
    assert section.title.startswith("Single-location regression")
    assert "Stein" in section.introduction and "ε²" in section.introduction
    assert "quick profile" in section.introduction  # says that SGD is thorough-only
    names = [d.name for d in section.derivations]
    assert names == ["single_location.population_risk", "single_location.oracle_risk", "single_location.linear_risk"]
    assert all(isinstance(d, Derivation) and d.steps for d in section.derivations)
    assert len(messages) >= 5 and all(isinstance(m, str) and m for m in messages)


def test_quick_profile_writes_three_nonempty_pngs(built):
    out_dir, section, _ = built
    assert [f.filename for f in section.figures] == list(QUICK_FILES)
    for name in QUICK_FILES:
        path = out_dir / name
        assert path.is_file() and path.stat().st_size > 10_000, name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (out_dir / "single_location_sgd.png").exists()  # SGD only in the thorough profile
    for figure in section.figures:
        assert figure.caption and figure.data


def test_risk_vs_length_data_and_table_agree(built):
    _, section, _ = built
    data = _figure(section, "single_location_risk_vs_L.png").data
    n = len(section_module.LENGTHS)
    keys = ("L", "lambda", "oracle_closed_form", "oracle_mc", "oracle_se", "bayes_mc", "bayes_se",
            "linear_closed_form", "linear_mc", "linear_se", "z_oracle", "z_linear")
    for key in keys:
        assert np.shape(data[key]) == (n,), key
        assert np.all(np.isfinite(data[key])), key
    assert len(data["curve_L"]) == len(data["curve_lambda"]) == len(data["curve_oracle_closed_form"]) \
        == len(data["curve_linear_closed_form"])
    # every risk is at least the noise ε² (round-off aside) and the oracle beats linear for L ≥ 2
    eps2 = section_module.EPS**2
    assert np.all(np.asarray(data["oracle_closed_form"]) >= eps2 * (1 - 1e-12))
    longer = np.asarray(data["L"]) >= 2
    assert np.all(np.asarray(data["oracle_closed_form"])[longer] < np.asarray(data["linear_closed_form"])[longer])
    # Monte Carlo within 5 standard errors of the closed forms (100,000 samples per point)
    assert np.max(np.abs(data["z_oracle"])) < 5 and np.max(np.abs(data["z_linear"])) < 5
    table = section.tables[0]
    assert isinstance(table, Table) and len(table.rows) == n
    assert all(len(row) == len(table.header) for row in table.rows)
    assert_allclose([row[3] for row in table.rows], data["oracle_mc"], rtol=0)  # same numbers as the figure


def test_oracle_excess_data(built):
    _, section, _ = built
    data = _figure(section, "single_location_oracle_excess.png").data
    d = np.asarray(data["d"])
    assert [c["rule"] for c in data["curves"]] == ["L = 1", "L = 10", "L = ⌈√d⌉"]
    for curve in data["curves"]:
        for key in ("L", "lambda", "oracle_excess", "linear_excess", "lambda_sqrt_d", "lambda_sqrt_L"):
            assert np.shape(curve[key]) == d.shape, (curve["rule"], key)
        excess = np.asarray(curve["oracle_excess"])
        assert np.all(excess > 0) and excess[-1] < excess[0]  # Corollary 2: the excess goes to 0
        # λ = c·√(log(d/L)/d), c = 2
        assert_allclose(curve["lambda"], 2 * np.sqrt(np.log(d / np.asarray(curve["L"])) / d), rtol=1e-12)


def test_pgd_panels_and_endpoint_tables(built):
    _, section, _ = built
    data = _figure(section, "single_location_pgd.png").data
    panels = data["panels"]
    assert [(p["config"], p["start"]) for p in panels] == [("small_lambda", "manifold"), ("small_lambda", "sphere")]
    steps = PGD_CONFIGS["small_lambda"][3]
    for panel in panels:
        records = len(panel["steps"])
        assert panel["steps"][0] == 0 and panel["steps"][-1] == steps and records == steps // 200 + 1
        assert len(panel["lambda"]) == len(panel["oracle_excess"]) == records
        for key, centre in (("excess_risk", "mean"), ("abs_kappa", "mean"), ("abs_nu", "mean"), ("distance", "median")):
            band = panel[key]
            assert len(band[centre]) == len(band["q05"]) == len(band["q95"]) == records, key
            assert np.all(np.asarray(band["q05"]) <= np.asarray(band["q95"]))
        assert len(panel["trajectories"]) == 3
        for trajectory in panel["trajectories"]:
            assert len(trajectory["kappa"]) == len(trajectory["nu"]) == records
        final = panel["final"]
        assert all(len(final[k]) == panel["runs"] == 10 for k in ("kappa", "nu", "theta", "eta", "rho", "risk", "reached"))
        assert np.min(panel["distance"]["q05"]) >= section_module.DISTANCE_FLOOR
    manifold = panels[0]
    # started on M, PGD stays on M (round-off) and reaches ±(k*, v*) (Theorem 5, reconstructed)
    assert np.max(manifold["distance"]["q95"]) < 1e-12
    assert np.all(manifold["final"]["reached"])
    summary, others = section.tables[1], section.tables[2]
    assert [row[:3] for row in summary.rows] == [["small_lambda", "manifold", 10], ["small_lambda", "sphere", 10]]
    missed = sum(10 - row[3] for row in summary.rows)
    assert len(others.rows) == missed and all(len(row) == len(others.header) for row in others.rows)
    for row in summary.rows:
        assert math.isclose(row[4], row[3] / row[2])


def test_optimal_lambda_minimises_the_oracle_risk():
    from attnverify.theories.single_location import experiments
    from attnverify.theories.single_location.derivations import oracle_risk

    lam = experiments.optimal_lambda(400, 10)
    best = float(oracle_risk(lam, 400, 10, experiments.GAMMA, experiments.EPS))
    for factor in (0.9, 1.1):
        assert best < float(oracle_risk(lam * factor, 400, 10, experiments.GAMMA, experiments.EPS))


def test_the_section_only_draws():
    """A section draws what experiments computed; it fits, optimises and solves nothing itself."""
    import inspect

    from attnverify.theories.attention_paths import section as paths_section
    from attnverify.theories.attention_paths.one_shot import section as one_shot_section
    from attnverify.theories.conditional_mean import section as mean_section

    for module in (section_module, paths_section, one_shot_section, mean_section):
        source = inspect.getsource(module)
        for computation in ("polyfit(", "fit_line(", "minimize(", "minimize_scalar(", "optimal_lambda(",
                            "saddle_point(", "sample_posterior(", "linalg.solve(", "spearmanr("):
            assert computation not in source, f"{module.__name__} computes ({computation})"


@pytest.mark.parametrize("kwargs, error", [({"profile": "slow"}, ValueError), ({"seed": -1}, ValueError),
                                          ({"seed": 1.5}, ValueError)])
def test_bad_arguments_are_refused(tmp_path, kwargs, error):
    arguments = {"profile": "quick", "backend": None, "seed": 0, "progress": lambda message: None, **kwargs}
    with pytest.raises(error):
        section_module.theory.build_section(tmp_path, **arguments)


def test_the_run_plans_only_experiments_the_quick_section_uses(built):
    """Every experiment the theory plans for a quick run (computed as a task ahead of the section) is one the
    section asks the store for: a planned experiment it does not use would be computed for nothing."""
    from attnverify.theories import builtin_theory

    theory = builtin_theory("single_location")
    for plan in theory.plan_experiments(profile="quick", seed=SEED, backend="numpy"):
        assert plan.key in STORE, plan.label
