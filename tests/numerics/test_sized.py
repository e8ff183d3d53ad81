"""Tests of numerics/sized.py: Monte Carlo drawn until z·SE + bias fits under a stated resolution.

Stochastic tests draw their seeds through ``seeds.seeded`` (the offset ATTNVERIFY_TEST_SEED_OFFSET reruns them
under fresh seeds) and state their false-alarm probability per run of the test; each is below 1e-5 by design, not
by a chosen seed.
"""

import math
import re
import tracemalloc

import numpy as np
import pytest
from boundary_harness import assert_refused_as_endless
from seeds import rng as seeded_rng, seeded

from attnverify.checks import claim, evaluate, run_claim, st, within_error
from attnverify.checks.claim import Context
from attnverify.execution.settings import RunSettings

from attnverify.numerics.sized import GROWTH, MARGIN, SizedEstimate, draws_needed, sized_mean
from attnverify.numerics.statistics import Estimate, mean_estimate

SIGMA = 2.0


def _gaussian(rng, n):
    return 1.0 + SIGMA * rng.standard_normal(n)


def _seed(k: int) -> np.random.Generator:
    return seeded_rng(k)


PROBES = 2
"""sized_mean's first two calls of a draw (of 1 and 2 draws, on copies of rng) measure its memory: not draws."""


@pytest.mark.parametrize("k", range(4))
def test_stops_at_its_resolution_and_not_far_beyond(k):
    """With σ = 2, z = 5, bias 0.01 and resolution 0.05, the true need is n = (5σ/0.04)² = 62,500 draws.
    The stop has z·SE + bias ≤ resolution, and 0.75·n ≤ samples ≤ 1.5·n: at ≥ 1,000 Gaussian draws s²
    has relative SD ≤ √(2/1000) = 4.5 %, so either bound fails only beyond 5 SD (false alarm < 1e-6)."""
    resolution, bias = 0.05, 0.01
    need = (5 * SIGMA / (resolution - bias)) ** 2
    e = sized_mean(_gaussian, _seed(k), resolution=resolution, bias_budget=bias)
    assert isinstance(e, SizedEstimate) and isinstance(e, Estimate)
    assert e.reached and e.achieved == 5 * e.standard_error + bias <= resolution
    assert 0.75 * need <= e.samples <= 1.5 * need
    assert e.draws_needed <= e.samples and e.batches[0] == 1000 and len(e.batches) <= 4


def test_each_batch_follows_the_stated_rule():
    """After every batch but the last, the next total is min(budget, max(⌈1.25 n⌉, ⌈1.1 n*⌉)), where
    n* is the need at the spread measured so far (recomputed here from the draws themselves)."""
    seen = []

    def draw(rng, n):
        seen.append(_gaussian(rng, n))
        return seen[-1]

    e = sized_mean(draw, _seed(10), resolution=0.02, first_batch=50, budget=400_000, chunk=7_000)
    values = np.concatenate(seen[PROBES:])
    totals = np.cumsum(e.batches)
    for before, after in zip(totals[:-1], totals[1:]):
        so_far = mean_estimate(values[:before])
        need = draws_needed(int(before), so_far.standard_error, 0.02)
        assert after == min(400_000, max(math.ceil(GROWTH * before), math.ceil(MARGIN * need)))
    assert 5 * mean_estimate(values[: totals[-2]]).standard_error > 0.02 >= e.achieved


@pytest.mark.parametrize("k", range(3))
def test_budget_spent_is_not_reached_and_carries_the_draws_it_would_take(k):
    """Resolution 0.01 at σ = 2 needs (5σ/0.01)² = 10⁶ draws; a budget of 20,000 is spent. draws_needed is
    ⌈n(5·SE/0.01)²⌉ and within 5 SD of the true 10⁶ (s² from 20,000 Gaussian draws: relative SD 1 %)."""
    e = sized_mean(_gaussian, _seed(20 + k), resolution=0.01, budget=20_000)
    assert not e.reached and e.samples == e.budget == 20_000 and e.achieved > 0.01
    assert e.draws_needed == math.ceil(20_000 * (5 * e.standard_error / 0.01) ** 2) > e.budget
    assert abs(e.draws_needed / 1e6 - 1) <= 5 * math.sqrt(2 / 20_000)


def test_replays_bit_for_bit_from_the_seed_and_from_a_generator_state():
    run = lambda rng: sized_mean(_gaussian, rng, resolution=0.03, chunk=10_000)  # noqa: E731
    first, second = run(_seed(30)), run(_seed(30))
    assert first == second and first.batches == second.batches and first.as_dict() == second.as_dict()
    rng = _seed(31)
    rng.standard_normal(17)  # a generator part-way through its stream
    state = rng.bit_generator.state
    third = run(rng)
    replayed = np.random.default_rng()
    replayed.bit_generator.state = state
    assert run(replayed) == third
    assert run(seeded(1234)) == run(seeded(1234))  # an integer seed is a Generator seeded with it


def test_exact_accounting_equals_the_one_pass_estimate_of_the_same_draws():
    """Every draw is counted once: the batch sizes add up to the samples, no call exceeds ``chunk``,
    and mean, SE, magnitude equal the one-pass estimate of all draws to 1e-12."""
    calls = []

    def draw(rng, n):
        calls.append(rng.exponential(1.0, n) ** 2)
        return calls[-1]

    e = sized_mean(draw, _seed(40), relative_resolution=0.05, reference=2.0, chunk=3_000)
    values = np.concatenate(calls[PROBES:])
    one = mean_estimate(values)
    assert sum(e.batches) == e.samples == values.size and max(c.size for c in calls) <= 3_000
    assert e.resolution == 0.05 * 2.0 and e.reached
    for name in ("mean", "standard_error", "magnitude"):
        assert getattr(e, name) == pytest.approx(getattr(one, name), rel=1e-12, abs=0)


def test_several_means_of_the_same_draws_are_sized_until_every_one_fits():
    """Draws (n, 2) with SDs 1 and 3: the second needs 9× the draws at one resolution; both share the draws."""
    calls = []

    def draw(rng, n):
        calls.append(rng.standard_normal((n, 2)) * [1.0, 3.0])
        return calls[-1]

    first, second = sized_mean(draw, _seed(50), resolution=0.05, reference=[1.0, -2.0], relative_resolution=0.01)
    values = np.concatenate(calls[PROBES:])
    assert first.samples == second.samples == len(values) and first.batches == second.batches
    assert (first.resolution, second.resolution) == (0.05 + 0.01, 0.05 + 0.02)
    assert first.reached and second.reached and second.draws_needed > first.draws_needed
    for j, e in enumerate((first, second)):
        assert e.mean == pytest.approx(mean_estimate(values[:, j]).mean, rel=1e-12, abs=1e-15)
        assert e.standard_error == pytest.approx(mean_estimate(values[:, j]).standard_error, rel=1e-12)


def test_identical_draws_resolve_nothing_so_the_sizing_draws_on_to_its_budget():
    """SE 0 from identical draws says nothing of an event rarer than 1/n: not reached, drawn to the budget."""
    e = sized_mean(lambda rng, n: np.zeros(n), _seed(60), resolution=1e-12, first_batch=64, budget=20_000)
    assert e.identical and e.standard_error == 0.0 and not e.reached and e.samples == 20_000
    assert e.batches[0] == 64 and all(b > a for a, b in zip(e.batches, e.batches[1:-1]))


def test_a_rare_event_first_seen_late_is_counted_not_missed():
    """Draws that are 1 except with probability 1e-3 (value −1): the first batch of 64 is usually all 1; the sizing
    draws on until the rare draws are resolved, and the mean is then within 5 SE of 1 − 2e-3 (false alarm 6e-7)."""
    e = sized_mean(lambda rng, n: np.where(rng.random(n) < 1e-3, -1.0, 1.0), _seed(62), resolution=2e-3,
                   first_batch=64, budget=2_000_000)
    assert e.reached and not e.identical and e.tail_draws >= 25
    assert abs(e.mean - (1 - 2e-3)) <= 5 * e.standard_error
    booleans = sized_mean(lambda rng, n: rng.random(n) < 0.5, _seed(61), resolution=0.05)
    assert booleans.reached and 0.5 - 0.05 <= booleans.mean <= 0.5 + 0.05  # 5 SE + 0: false alarm 6e-7


def test_stopping_on_the_variance_leaves_the_mean_unbiased_at_z5():
    """2,000 sized runs on exponential draws (skewness 2, first batch 1,000, ~5,600 draws at the stop): the
    standardised errors t = (x̄ − μ)/SE have mean 0 within 5/√2000 plus a stated budget of 0.05 for the
    stopping bias (measured −0.024 ± 0.007 over 20,000 runs: the module docstring), and at most 17 runs
    beyond 3 SE (expected 5.4; P(count ≥ 18) < 1e-5 even at 1.5× the normal rate)."""
    runs = 2_000
    t = np.array([(e.mean - 1.0) / e.standard_error for e in
                  (sized_mean(lambda r, n: r.exponential(1.0, n), seeded_rng(70_000 + i),
                              resolution=5 / math.sqrt(5_000), budget=10**6) for i in range(runs))])
    assert abs(t.mean()) <= 5 * t.std(ddof=1) / math.sqrt(runs) + 0.05
    assert int(np.sum(np.abs(t) > 3)) <= 17


def _shape_changes():
    calls = []

    def draw(rng, n):
        calls.append(n)
        return rng.standard_normal(n) if len(calls) <= PROBES + 1 else np.ones((n, 2))
    return draw


BAD = [
    (dict(draw="not callable"), TypeError, r"draw must be a function draw\(rng, n\) returning n i.i.d. draws, got str"),
    (dict(resolution=0.1, bias_budget=0.1), ValueError, "resolution must exceed bias_budget"),
    (dict(resolution=None, relative_resolution=0.01, reference=0.0), ValueError, "add an absolute resolution"),
    (dict(resolution=None), ValueError, "state the smallest discrepancy"),
    (dict(relative_resolution=0.01), ValueError, "needs a reference"),
    (dict(resolution=-1.0), ValueError, "resolution must be"),
    (dict(resolution=math.nan), ValueError, "resolution must be"),
    (dict(relative_resolution=0.0, reference=1.0), ValueError, "relative_resolution"),
    (dict(budget=1), ValueError, "budget must be an integer ≥ 2"),
    (dict(first_batch=1), ValueError, "first_batch must be an integer ≥ 2"),
    (dict(chunk=0), ValueError, "chunk must be an integer ≥ 1"),
    (dict(z=0.0), ValueError, "z must be"),
    (dict(rng=None), TypeError, "rng must be"),
    (dict(draw=lambda rng, n: np.zeros(n - 1)), ValueError, r"must return shape \(1000,\) or \(1000, k\)"),
    (dict(draw=lambda rng, n: np.zeros((n, 2, 2))), ValueError, "must return shape"),
    (dict(draw=lambda rng, n: None), TypeError, "must return an array of 1000 real draws"),
    (dict(draw=lambda rng, n: ["a"] * n), TypeError, "real draws"),
    (dict(draw=lambda rng, n: np.where(np.arange(n) == 7, np.nan, 1.0)), ValueError, r"returned nan at index \(7,\)"),
    (dict(draw=lambda rng, n: rng.standard_normal((n, 2)), resolution=[0.1, 0.1, 0.1]), ValueError, "one per mean"),
    (dict(draw=lambda rng, n: rng.standard_normal(n), resolution=[0.1, 0.1]), ValueError, "one per mean"),
    (dict(resolution=[0.1, 0.1], bias_budget=[0.0, 0.0, 0.0]), ValueError, "of one length, got lengths \\[2, 3\\]"),
    (dict(first_batch=500, chunk=500, resolution=1e-4, draw=_shape_changes()), ValueError, r"the same in every call"),
]


@pytest.mark.parametrize("changes, error, message", BAD)
def test_arguments_are_refused_by_name(changes, error, message):
    arguments = {"draw": _gaussian, "rng": np.random.default_rng(0), "resolution": 0.1, **changes}
    draw, rng = arguments.pop("draw"), arguments.pop("rng")
    with pytest.raises(error, match=message):
        sized_mean(draw, rng, **arguments)


def test_a_bad_draw_is_named_by_the_function_that_drew_it():
    """A named function's output is refused under its own name, a lambda's as draw(rng, n)."""
    def products(rng, n):
        return np.full(n, np.nan)

    with pytest.raises(ValueError, match=r"^products\(rng, 1000\) returned nan at index \(0,\)"):
        sized_mean(products, np.random.default_rng(0), resolution=0.1)
    with pytest.raises(ValueError, match=r"^draw\(rng, 1000\) returned nan"):
        sized_mean(lambda rng, n: products(rng, n), np.random.default_rng(0), resolution=0.1)


def test_sized_estimate_checks_its_own_figures():
    good = dict(mean=1.0, standard_error=0.01, samples=300, resolution=0.1, reached=True, budget=1000,
                batches=(100, 200), draws_needed=75)
    e = SizedEstimate(**good)
    assert e.achieved == 0.05 and e.as_dict()["achieved"] == 0.05 and e.as_dict()["batches"] == [100, 200]
    with pytest.raises(ValueError, match="reached"):
        SizedEstimate(**{**good, "reached": False})
    with pytest.raises(ValueError, match="add up to samples"):
        SizedEstimate(**{**good, "batches": (100, 100)})
    with pytest.raises(ValueError, match="resolution"):
        SizedEstimate(**{**good, "resolution": 0.0})
    with pytest.raises(ValueError, match="resolution must exceed bias_budget"):
        draws_needed(10, 0.1, 0.1, bias_budget=0.1)


# ---------------------------------------------------------------------------------------------
# Through a claim: the evidence of a sized estimate (within_error takes its resolution)
# ---------------------------------------------------------------------------------------------



def _sized_gaussian_mean(budget):
    @claim("demo.sized_mean", parameters=st.fixed_dictionaries({"mu": st.floats(-3, 3)}),
           examples={"quick": 5, "thorough": 5})
    def check(p, ctx):
        """The mean of N(μ, 2²) draws is μ, resolved to 0.05 (needs (5·2/0.05)² = 40,000 draws)."""
        estimate = sized_mean(lambda rng, n: p["mu"] + SIGMA * rng.standard_normal(n), ctx.rng, resolution=0.05,
                              budget=budget)
        return within_error(p["mu"], estimate, figures=estimate.sizing())
    return check


def test_a_sized_claim_stops_at_its_resolution_and_holds():
    """False alarm: 5 examples at 5 SE, 3e-6."""
    result = run_claim(_sized_gaussian_mean(budget=10**6), seed=seeded(1))
    assert result.status == "holds"
    for example in result.examples:
        figures = example.evidence.figures
        assert figures["reached"] and figures["achieved"] <= figures["resolution"] == 0.05
        assert sum(figures["batches"]) == figures["samples"] <= 1.5 * 40_000


def test_a_sized_claim_whose_budget_is_spent_is_inconclusive_with_the_draws_it_needs():
    """4,000 draws of 40,000 needed: inconclusive, not refuted (false alarm of a refutation: 5 SE, 6e-7), with
    draws needed within 5 SD of 40,000 (s² from 4,000 Gaussian draws: relative SD √(2/4000))."""
    check = _sized_gaussian_mean(budget=4_000)
    evidence = check.check({"mu": 0.5}, Context(RunSettings(), seeded_rng(2), seeded(2)))
    assert evidence.status == "inconclusive" and not evidence.figures["reached"]
    assert abs(evidence.needed["draws"] / 40_000 - 1) <= 5 * math.sqrt(2 / 4_000)
    example = evaluate(check, {"mu": 0.5}, monte_carlo_seed=seeded(2))  # the same through the runner
    assert example.evidence.status == "inconclusive" and example.evidence.needed == evidence.needed


def test_the_built_in_risk_claim_is_sized_to_its_stated_resolution():
    """One example of single_location.closed_form_risk: 1 % of ℛ + 0.1 % of γ² + ε², reached within budget."""
    from attnverify.theories.single_location.claims import closed_form_risk

    p = {"k": [1.0, 0.5, 0.0, 0.2], "v": [0.3, 1.0, 0.1, 0.0], "lam": 0.5, "gamma": 0.7, "d": 50, "L": 5, "eps": 0.2}
    evidence = evaluate(closed_form_risk, p, monte_carlo_seed=seeded(3)).evidence
    figures = evidence.figures
    assert evidence.status == "holds" and figures["reached"]
    assert figures["resolution"] == pytest.approx(0.01 * evidence.theory + 1e-3 * (0.7**2 + 0.2**2), rel=1e-12)
    assert figures["achieved"] <= figures["resolution"] and sum(figures["batches"]) == figures["samples"]


def test_a_chunk_that_cannot_fit_is_refused_by_name_before_any_draw():
    calls = []
    with pytest.raises(ValueError, match=r"^chunk = 100000000000000 needs .* more than the .* available"):
        sized_mean(lambda rng, n: calls.append(n) or np.zeros(n), _seed(63), resolution=0.1, chunk=10**14,
                   budget=10**14, first_batch=10**14)
    assert calls == []


def test_a_call_whose_draws_the_memory_cannot_hold_is_refused_by_chunk_before_it_runs(monkeypatch):
    """Each draw holds a (1,000,) float64 row (8 KB) besides its value: measured on copies of rng (calls of 1 and 2
    draws), with 5 MB said to be available, the first call (1,000 draws, 8 MB) is refused naming chunk and the bytes a
    draw holds, before it runs; tracemalloc is left as it was. Calls of 500 draws fit, and the draws are the stream's
    own, untouched by the measuring. What a first call keeps for good (an import, a table) is not a draw's."""
    from attnverify.base import arguments

    calls = []

    def heavy(rng, n):
        calls.append(n)
        rows = rng.standard_normal((n, 1000))
        return rows[:, 0]

    monkeypatch.setattr(arguments, "available_memory", lambda: 5 * 2**20)
    with pytest.raises(ValueError, match=r"^chunk = 65536 needs 7.\d+ MiB for a call of heavy\(rng, 1,000\) "
                                         r"\(\d+ bytes a call and 8,\d\d\d a draw, measured on copies of rng\), "
                                         r"more than the 5 MiB"):
        sized_mean(heavy, _seed(65), resolution=1e-6, budget=10**7)
    assert calls == [1, 2]
    assert not tracemalloc.is_tracing()
    estimate = sized_mean(heavy, _seed(65), resolution=1e-6, budget=3000, chunk=500)
    rng = _seed(65)  # the draws of the stream itself, untouched by the measuring
    direct = np.concatenate([rng.standard_normal((500, 1000))[:, 0] for _ in range(6)])
    assert estimate.samples == 3000 and estimate.mean == pytest.approx(direct.mean(), rel=1e-12)
    kept = []

    def caching(rng, n):  # its first call keeps 40 MB for good (an import, a table): not the draws' memory
        if not kept:
            kept.append(np.ones(5 * 10**6))
        return rng.standard_normal(n)

    monkeypatch.setattr(arguments, "available_memory", lambda: 20 * 2**20)
    assert sized_mean(caching, _seed(66), resolution=1e-6, budget=10**5).samples == 10**5


def test_a_budget_no_run_spends_is_refused_before_any_draw():
    """The budget is what ends a run whose resolution is out of reach (here 10⁻¹², for draws of spread 2): a budget
    of 10¹⁸ draws ends none, so it is refused in one line before the first draw."""
    def never(rng, n):
        raise AssertionError("a draw was made before the refusal")

    assert_refused_as_endless(lambda: sized_mean(never, _seed(64), resolution=1e-12, budget=10**18),
                              "budget = 1,000,000,000,000,000,000")


def test_a_long_batch_tells_its_progress_by_draws():
    """A resolution no budget reaches (1e-5 of a unit spread): the batch that spends the budget of 2·10⁷ is told
    before it starts, with the draws it needs, and its draws done at every twentieth of it, at least 10⁷ apart, and
    at its end; short batches say nothing."""
    lines = []
    estimate = sized_mean(lambda rng, n: rng.standard_normal(n), np.random.default_rng(0), resolution=1e-5,
                          budget=2 * 10**7, chunk=2**20, progress=lines.append)
    assert not estimate.reached and estimate.samples == 2 * 10**7
    assert len(lines) == 3, lines  # the batch's start, its draws once past 10⁷ of them, and at its end
    assert lines[0].startswith("draw: drawing 19,999,000 more (20,000,000 in all, of a budget of 20,000,000; ")
    assert lines[0].endswith(" needed at the spread so far)")
    assert lines[1].startswith("draw: 10,") and lines[1].endswith(" of 20,000,000 draws done")
    assert lines[2] == "draw: 20,000,000 of 20,000,000 draws done"
    with pytest.raises(TypeError, match="^progress must be a function of one line of text, or None"):
        sized_mean(lambda rng, n: rng.standard_normal(n), np.random.default_rng(0), resolution=0.1, progress=3)


def test_a_short_batch_of_slow_draws_tells_its_draws_as_its_calls_take_time(monkeypatch):
    """A batch below 10⁷ draws whose calls take PROGRESS_SECONDS (here 0: every call) tells the draws done after each
    call, with the budget and, past the first batch, the draws needed; the draws are the same as without it."""
    from attnverify.numerics import sized

    monkeypatch.setattr(sized, "PROGRESS_SECONDS", 0.0)
    lines = []
    told = sized_mean(_gaussian, _seed(67), resolution=1e-3, budget=5_000, chunk=2_000, progress=lines.append)
    assert lines[0] == "_gaussian: 1,000 of 1,000 draws done (a budget of 5,000)" and len(lines) == 3
    for line, done in zip(lines[1:], ("3,000", "5,000")):  # (5·2/10⁻³)² = 10⁸ needed, at the first batch's spread
        assert re.fullmatch(rf"_gaussian: {done} of 5,000 draws done \(a budget of 5,000; \d{{2,3}},\d{{3}},\d{{3}} "
                            r"needed at the spread so far\)", line), line
    assert told == sized_mean(_gaussian, _seed(67), resolution=1e-3, budget=5_000, chunk=2_000)
