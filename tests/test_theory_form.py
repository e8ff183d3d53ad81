"""The concise theory form (attnverify.Theory): what a user writes, checked where they write it."""

import json
import math
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from boundary_harness import assert_refused_as_endless
from attnverify import Theory, TheoryVsSimulation, cli, st, within_error
from attnverify.checks import claim, run_claim
from attnverify.theories.catalogue import load_user_module
from attnverify.numerics.statistics import Estimate
from attnverify.theories import from_file

TINY = textwrap.dedent('''
    """Tiny: a Gaussian moment

    E[exp(tZ)] = exp(t²/2), derived and checked.
    """
    import os

    import numpy as np
    from sympy import Eq, Integral, exp, oo, pi, sqrt, symbols
    from attnverify import Theory, st

    theory = Theory("tiny")
    t, z, m = symbols("t z m", real=True)

    @theory.derivation
    def moment(step):
        """The Gaussian moment generating function"""
        with open(os.environ["TINY_COUNT"], "a") as f:
            f.write("derived\\n")
        integral = Integral(exp(t * z) * exp(-z**2 / 2) / sqrt(2 * pi), (z, -oo, oo))
        step("Definition", Eq(m, integral), kind="definition")
        step("Integrate", Eq(m, exp(t**2 / 2)), name="m")

    def draws(rng, n, t):
        """E[exp(tZ)] = exp(t²/2)."""
        return np.exp(t * rng.standard_normal(n))

    theory.monte_carlo(draws, expected=lambda t: moment.evaluator("m")(t=t), relative=0.02,
                       figure=dict(t=np.linspace(0, 1, 4)), t=st.floats(0, 1))
    theory.monte_carlo(draws, expected=lambda t: 1 + moment.evaluator("m")(t=t), relative=0.02, expect="refuted",
                       name="off_by_one", statement="(False.) One more.", t=st.floats(0, 1))
''')


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    path = tmp_path / "tiny.py"
    path.write_text(TINY)
    monkeypatch.setenv("TINY_COUNT", str(tmp_path / "count.txt"))
    monkeypatch.setenv("ATTNVERIFY_KEEP_DERIVATIONS", "0")  # derive in this process: the count is the process's
    monkeypatch.delenv("ATTNVERIFY_BACKEND", raising=False)
    return path


def test_a_user_file_is_loaded_and_derived_once_per_process_in_a_report(tiny, tmp_path, capsys):
    out = tmp_path / "report"
    assert cli.main(["report", "--with", str(tiny), "--only", "tiny", "--out", str(out), "--workers", "1"]) == 0
    assert (tmp_path / "count.txt").read_text().count("derived") == 1
    document = json.loads((out / "results.json").read_text())
    statuses = {c["name"]: c["status"] for c in document["claims"]}
    assert statuses == {"tiny.draws": "holds", "tiny.off_by_one": "refuted", "tiny.derivation_steps": "holds"}
    (section,) = document["sections"]
    assert section["title"] == "Tiny: a Gaussian moment" and "derived and checked" in section["introduction"]
    (figure,) = section["figures"]
    assert len(figure["data"]["mean"]) == 4 and (out / figure["filename"]).is_file()
    assert "points: Monte Carlo, drawn until" in figure["caption"]  # no other parameter: nothing held fixed to name
    assert load_user_module(tiny) is load_user_module(tiny)  # the same module object: not executed again


def test_an_edited_file_is_loaded_again(tiny):
    first = load_user_module(tiny)
    tiny.write_text(TINY.replace('Theory("tiny")', 'Theory("tiny", title="Edited")'))
    second = load_user_module(tiny)
    assert second is not first and second.theory.title == "Edited"


def test_a_user_claim_replays_with_verify_however_it_was_run(tiny):
    theory = from_file(tiny)
    result = run_claim(theory.claim_named("tiny.off_by_one"), profile="quick", seed=3, examples=2)
    assert result.status == "refuted"
    assert result.replay_command.startswith(f"attnverify verify {tiny} --only tiny.off_by_one --profile quick")
    assert str(tiny) in repr(theory.claim_named("tiny.off_by_one"))


def test_keyword_strategies_must_match_the_check_arguments_at_definition():
    theory = Theory("mine")
    with pytest.raises(TypeError, match=r"argument\(s\) y have no strategy.*strateg\(y/ies\) z name no argument"):
        @theory.claim(x=st.floats(0, 1), z=st.floats(0, 1))
        def wrong(x, y):
            """."""
    with pytest.raises(TypeError, match=r"x=0.5 is not a strategy \(st.just\(0.5\) for a constant\)"):
        theory.claim(x=0.5)
    with pytest.raises(ValueError, match="needs a statement"):
        @theory.claim(x=st.floats(0, 1))
        def silent(x):
            pass


def test_the_check_receives_named_arguments_and_the_context_or_its_rng():
    theory = Theory("mine")

    @theory.claim(L=st.integers(2, 4), examples={"quick": 3, "thorough": 3})
    def uses_rng(L, rng):
        """A draw from the context's generator is finite."""
        return within_error(0.0, Estimate(float(rng.standard_normal() * 1e-3 * L), 1.0, 2))

    assert run_claim(uses_rng, profile="quick", seed=0).status == "holds"
    assert uses_rng.name == "mine.uses_rng" and uses_rng.origin == str(Path(__file__).resolve())


def test_a_plain_dict_of_strategies_and_the_papers_capitals_are_accepted_a_scalar_strategy_is_not():
    made = claim("mine.U_independent_of_T", parameters={"T": st.floats(0.1, 1.0)}, statement="s")(lambda p, c: None)
    assert made.name == "mine.U_independent_of_T"
    with pytest.raises(TypeError, match=r"parameters=st.floats\(...\) draws one value with no name"):
        claim("mine.scalar", parameters=st.floats(0, 1), statement="s")
    with pytest.raises(TypeError, match=r"every parameter needs a hypothesis strategy; x=1"):
        claim("mine.plain", parameters={"x": 1}, statement="s")
    with pytest.raises(ValueError, match="theory.name"):
        claim("Mine.upper_theory", parameters={}, statement="s")


def test_a_monte_carlo_claim_names_its_mistakes_at_definition():
    theory = Theory("mine")
    with pytest.raises(ValueError, match="needs the smallest error it must resolve"):
        theory.monte_carlo(lambda rng, n, x: rng.standard_normal(n), expected=lambda x: 0.0, x=st.floats(0, 1))
    with pytest.raises(TypeError, match=r"must take \(rng, n, x\)"):
        theory.monte_carlo(lambda n, x: None, expected=lambda x: 0.0, resolution=0.1, statement="s", x=st.floats(0, 1))
    with pytest.raises(TypeError, match="budget is an option of monte_carlo, not a parameter"):
        theory.monte_carlo(lambda rng, n, x: None, expected=lambda x: 0.0, resolution=0.1, statement="s",
                           x=st.floats(0, 1), budget=st.integers(1, 3))
    with pytest.raises(ValueError, match="exactly one parameter must be an array"):
        theory.monte_carlo(lambda rng, n, x: None, expected=lambda x: 0.0, resolution=0.1, statement="s",
                           figure=dict(x=0.5), x=st.floats(0, 1))


def test_a_monte_carlo_claim_names_a_wrong_draw_shape_and_an_infinite_expected_value_in_one_line():
    theory = Theory("mine")

    def plain(rng, n, x):
        return rng.standard_normal(n)

    with pytest.raises(TypeError, match=r"claim 'mine.plain': every parameter needs a hypothesis strategy; x=1"):
        theory.monte_carlo(plain, expected=lambda x: 0.0, resolution=0.1, x=1)
    with pytest.raises(ValueError, match=r"bounds = \(-inf, inf\) states no range"):
        theory.monte_carlo(lambda rng, n, x: None, expected=lambda x: 0.0, resolution=0.1, x=st.floats(0, 1),
                           bounds=(-math.inf, math.inf))

    def columns(rng, n, x):
        return rng.standard_normal((n, 2))

    def one_short(rng, n, x):
        return rng.standard_normal(n - 1)

    def log_partition(x):
        return math.exp(1e3 * x) if x < 0.7 else math.inf

    for draws, expected, message in (
            (columns, lambda x: 0.0, r"monte_carlo columns must return its draws of one quantity, shape \(n,\) = "
                                     r"\(\d+,\), to compare their mean with expected; got shape \(\d+, 2\)"),
            (one_short, lambda x: 0.0, r"monte_carlo one_short must return .* got shape \(\d+,\)"),
            (lambda rng, n, x: rng.standard_normal(n), log_partition,
             r"expected log_partition\(x=0.7\d*\) = inf: the expected value must be a finite number"),
            (lambda rng, n, x: rng.standard_normal(n), lambda x: "0",
             r"expected\(x=0.7\d*\) returned '0' \(str\): the expected value must be a number"),
            (lambda rng, n, x: rng.standard_normal(n), lambda x: 1j,
             r"expected\(x=0.7\d*\) returned 1j \(complex\)")):
        made = theory.monte_carlo(draws, expected=expected, resolution=0.1, name=f"shape_{len(theory.claims)}",
                                  statement="E[draws] = expected", x=st.floats(0.7, 0.8))
        result = run_claim(made, profile="quick", examples=1)
        assert result.status == "error" and re.search(message, result.examples[0].error), result.examples[0].error


def test_a_stated_bias_budget_rides_on_the_resolution_and_widens_only_the_comparison():
    """E[x̄_L²] = μ² + 1/L for L unit-variance normals: the leading term μ² alone is off by exactly 1/L, which a
    bias budget of 1/L states and one of 1/(4L) does not."""
    theory = Theory("asymptotic")

    def mean_squared(rng, n, mu, L):
        return (mu + rng.standard_normal(n) / math.sqrt(L)) ** 2

    strategies = dict(mu=st.floats(0.5, 1.0), L=st.integers(4, 8))
    stated = theory.monte_carlo(mean_squared, expected=lambda mu, L: mu**2, resolution=0.02, bias=lambda L, **p: 1 / L,
                                name="stated", statement="E[x̄²] = μ² + O(1/L)", **strategies)
    short = theory.monte_carlo(mean_squared, expected=lambda mu, L: mu**2, resolution=0.02,
                               bias=lambda L, **p: 0.25 / L, name="short", statement="E[x̄²] = μ² + O(1/L)",
                               **strategies)
    held, refuted = run_claim(stated, profile="quick", examples=3), run_claim(short, profile="quick", examples=3)
    assert held.status == "holds" and refuted.status == "refuted"
    for example in held.examples:  # 5 SE resolves the resolution itself, the bias on top
        sizing, L = example.evidence.figures, example.parameters["L"]
        assert math.isclose(sizing["bias_budget"], 1 / L, rel_tol=1e-12) and sizing["achieved"] <= 0.02 + 1 / L
        assert 5 * example.evidence.standard_error <= 0.02 * (1 + 1e-12)
    negative = theory.monte_carlo(mean_squared, expected=lambda mu, L: mu**2, resolution=0.02, bias=lambda L, **p: -1.0,
                                  name="negative", statement="s", **strategies)
    result = run_claim(negative, profile="quick", examples=1)
    assert result.status == "error" and "the bias budget bias(mu=" in result.examples[0].error and \
        "must be a finite number in [0, inf), got -1.0" in result.examples[0].error
    with pytest.raises(ValueError, match="bias must be a non-negative finite number or a function of the parameters"):
        theory.monte_carlo(mean_squared, expected=lambda mu, L: mu**2, resolution=0.02, bias=-0.1, name="x",
                           statement="s", **strategies)
    no_bias = theory.monte_carlo(mean_squared, expected=lambda mu, L: mu**2 + 1 / L, resolution=0.02, bias=0,
                                 name="unbiased", statement="E[x̄²] = μ² + 1/L, no bias stated", **strategies)
    assert run_claim(no_bias, examples=2).status == "holds"


def test_a_relative_claim_whose_terms_cancel_on_every_example_is_inconclusive_not_held():
    """E[erfc(b + aZ)] against 1 − erf(b/√(1 + 2a²)) for b ∈ [6.5, 8], where float64 gives 0: a relative resolution
    measured against the terms (size 2) cannot tell the value from 0 or from twice itself, so the true form and
    the doubled one are both inconclusive; written without the cancellation (erfc), the doubled one is refuted.
    Where the terms cancel on some examples only (the arc-cosine kernel at θ = π) the claim still holds."""
    import sympy
    from scipy.special import erfc

    theory = Theory("cancelling")
    a, b = sympy.symbols("a b", positive=True)
    t = sympy.Symbol("t")

    @theory.derivation
    def tail(step):
        """The Gaussian tail of the erf gate"""
        argument = b / sympy.sqrt(1 + 2 * a**2)
        step("By cancellation", sympy.Eq(t, 1 - sympy.erf(argument)), kind="definition", name="cancelling")
        step("Directly", sympy.Eq(t, sympy.erfc(argument)), name="direct")

    def tails(rng, n, a, b):
        return erfc(a * rng.standard_normal(n) + b)

    far = dict(a=st.floats(0.05, 0.2), b=st.floats(6.5, 8.0))
    cancelling, direct = tail.evaluator("cancelling"), tail.evaluator("direct")
    true = theory.monte_carlo(tails, expected=cancelling, relative=0.02, name="true", statement="s", **far)
    doubled = theory.monte_carlo(tails, expected=lambda a, b: 2 * cancelling(a=a, b=b), relative=0.02,
                                 name="doubled", statement="s", **far)
    for result in (run_claim(true, examples=4), run_claim(doubled, examples=4)):
        assert result.status == "inconclusive", result
        assert all("cannot tell the value from 0" in e.evidence.inconclusive for e in result.examples)
    resolved = theory.monte_carlo(tails, expected=lambda a, b: 2 * direct(a=a, b=b), relative=0.02,
                                  name="resolved", statement="s", **far)
    assert run_claim(resolved, examples=4).status == "refuted"


def test_a_relative_resolution_where_the_expected_value_vanishes_asks_for_an_absolute_one():
    """b·Φ(b) at b = 0 is 0: 2 % of it resolves nothing, and the example says to state resolution= as well."""
    theory = Theory("vanishing")

    def draws(rng, n, b):
        return b + rng.standard_normal(n)

    alone = theory.monte_carlo(draws, expected=lambda b: b, relative=0.02, name="alone", statement="s",
                               b=st.just(0.0))
    result = run_claim(alone, examples=1)
    assert result.status == "error" and "relative=0.02 of expected(b=0) = 0 is 0" in result.examples[0].error \
        and "state an absolute resolution=" in result.examples[0].error
    both = theory.monte_carlo(draws, expected=lambda b: b, relative=0.02, resolution=0.05, name="both",
                              statement="s", b=st.just(0.0))
    assert run_claim(both, examples=1).status == "holds"


def test_a_monte_carlo_claim_takes_options_per_profile_a_resolution_of_its_parameters_and_the_backend():
    theory = Theory("mine")
    seen = []

    @theory.monte_carlo(expected=lambda mu, sigma: mu, relative={"quick": 0.05, "thorough": 0.01},
                        resolution=lambda sigma, **p: 0.01 * sigma, budget={"quick": 40_000, "thorough": 400_000},
                        statement="the mean of N(μ, σ²) is μ", mu=st.floats(1.0, 2.0), sigma=st.floats(0.5, 1.0))
    def normal(rng, n, mu, sigma, backend):
        seen.append(backend.name)
        return backend.xp.asarray(rng.normal(mu, sigma, n))

    quick, thorough = run_claim(normal, profile="quick", examples=2), run_claim(normal, profile="thorough", examples=2)
    assert quick.status == thorough.status == "holds" and set(seen) == {"numpy"}
    for result, relative, budget in ((quick, 0.05, 40_000), (thorough, 0.01, 400_000)):
        for example in result.examples:
            mu, sigma, sizing = example.parameters["mu"], example.parameters["sigma"], example.evidence.figures
            assert sizing["budget"] == budget and math.isclose(sizing["resolution"], 0.01 * sigma + relative * mu,
                                                               rel_tol=1e-12)
    with pytest.raises(ValueError, match="relative per profile must give exactly quick, thorough"):
        theory.monte_carlo(lambda rng, n, x: None, expected=lambda x: 0.0, relative={"quick": 0.1}, statement="s",
                           x=st.floats(0, 1))
    with pytest.raises(ValueError, match="budget must be a positive finite int"):
        theory.monte_carlo(lambda rng, n, x: None, expected=lambda x: 0.0, relative=0.1, budget=0.5, statement="s",
                           x=st.floats(0, 1))
    with pytest.raises(TypeError, match=r"^bias <lambda> must accept the drawn parameter 'x'"):
        theory.monte_carlo(lambda rng, n, x: None, expected=lambda x: 0.0, resolution=0.1, bias=lambda L: 0.01,
                           statement="s", x=st.floats(0, 1))
    with pytest.raises(ValueError, match=r"^figure of <lambda> must give every parameter \(x, y\).*; missing y$"):
        theory.monte_carlo(lambda rng, n, x, y: None, expected=lambda x, y: 0.0, resolution=0.1, statement="s",
                           figure=dict(x=np.linspace(0, 1, 3)), x=st.floats(0, 1), y=st.floats(0, 1))
    theory.monte_carlo(lambda rng, n, x: None, expected=lambda x: 0.0, relative=np.float32(0.1),  # numpy's numbers
                       budget=np.int64(10**5), name="numpy_numbers", statement="s", x=st.floats(0, 1))


@pytest.mark.parametrize("budget, named", [
    (10**18, "budget = 1,000,000,000,000,000,000"),
    ({"quick": 10**5, "thorough": 10**14}, "budget['thorough'] = 100,000,000,000,000"),
], ids=["one budget", "per profile"])
def test_a_monte_carlo_budget_no_run_spends_is_refused_at_definition(budget, named):
    """The budget of draws is what bounds a claim's run: one that no run spends bounds nothing, and is refused in one
    line where the claim is declared."""
    assert_refused_as_endless(lambda: Theory("mine").monte_carlo(
        lambda rng, n, x: rng.standard_normal(n), expected=lambda x: 0.0, resolution=0.1, budget=budget,
        statement="s", x=st.floats(0, 1)), named)


def test_a_section_that_draws_only_gets_the_title_derivations_and_figures_from_its_theory(tmp_path):
    from attnverify.report.section import Section, Table

    theory = Theory("drawn", title="Drawn", introduction="what the section is about")

    @theory.section
    def section(out_dir, settings, progress):
        assert out_dir.is_dir() and settings.array_backend.name == "numpy"  # checked and resolved by the theory
        return Section(tables=[Table("one row", ["x"], [[1.0]])])

    @theory.figure
    def line(rng):
        return TheoryVsSimulation(x=[0.0, 1.0], estimates=[Estimate(0.0, 0.1, 10), Estimate(1.0, 0.1, 10)],
                                  theory=[0.0, 1.0], caption="a line")

    built = theory.build_section(tmp_path / "out", profile="quick", backend="numpy", seed=0, progress=lambda m: None)
    assert (built.theory, built.title, built.introduction) == ("drawn", "Drawn", "what the section is about")
    assert [t.caption for t in built.tables] == ["one row"] and [f.filename for f in built.figures] == ["drawn_line.png"]
    with pytest.raises(ValueError, match="profile"):
        theory.build_section(tmp_path, profile="slow", backend="numpy", seed=0, progress=lambda m: None)


def test_a_figure_with_a_non_finite_number_is_refused_by_name():
    estimates = [Estimate(1.0, 0.1, 10), Estimate(2.0, 0.1, 10)]
    with pytest.raises(ValueError, match=r"theory must be finite numbers; entry 1 is nan"):
        TheoryVsSimulation(x=[0, 1], estimates=estimates, theory=[1.0, math.nan], caption="c")
    with pytest.raises(ValueError, match=r"theory_x must be finite numbers; entry 0 is inf"):
        TheoryVsSimulation(x=[0, 1], estimates=estimates, theory=[1.0, 2.0], theory_x=[math.inf, 1], caption="c")


def test_a_figure_on_log_axes_is_drawn_so_and_refuses_what_a_log_axis_cannot_show(tmp_path):
    """xscale/yscale "log" draw a rate as a straight line (the axes and results.json say so); a value ≤ 0 on a log
    axis, or a scale that is neither, is refused by name."""
    from attnverify.report.figures import theory_vs_simulation

    lengths = [16.0, 64.0, 256.0]
    estimates = [Estimate(L**-0.5, 0.01 * L**-0.5, 100) for L in lengths]
    made = TheoryVsSimulation(x=lengths, estimates=estimates, theory=[L**-0.5 for L in lengths], caption="a rate",
                              xscale="log", yscale="log")
    drawn = theory_vs_simulation(tmp_path, "rate.png", x=made.x, theory=made.theory, estimates=made.estimates,
                                 caption=made.caption, xscale=made.xscale, yscale=made.yscale)
    assert (drawn.data["xscale"], drawn.data["yscale"]) == ("log", "log") and (tmp_path / "rate.png").is_file()
    with pytest.raises(ValueError, match=r"figure 'a rate': a log x axis needs positive values, got 0"):
        TheoryVsSimulation(x=[0.0, 1.0], estimates=estimates[:2], theory=[1.0, 2.0], caption="a rate", xscale="log")
    with pytest.raises(ValueError, match=r"yscale must be one of linear, log, got 'symlog'"):
        TheoryVsSimulation(x=lengths, estimates=estimates, theory=[1.0, 2.0, 3.0], caption="c", yscale="symlog")


def test_a_derived_function_is_called_by_keyword_and_names_its_symbols(tiny):
    module = load_user_module(tiny)
    m = module.moment.evaluator("m")
    assert m(t=np.array([0.0, 1.0])) == pytest.approx([1.0, math.exp(0.5)], rel=1e-15)
    with pytest.raises(TypeError, match="tiny.moment.m takes t; missing t; no symbol named s"):
        m(s=1.0)
    with pytest.raises(TypeError, match=r"^tiny.moment.m takes its symbols by keyword: m\(t=…\), got 1 positional"):
        m(1.0)
    with pytest.raises(KeyError, match="has no result named 'mean'; its results: m"):
        module.moment.evaluator("mean")


def test_a_mistake_in_a_user_file_is_shown_at_the_users_line_first(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ATTNVERIFY_BACKEND", raising=False)
    path = tmp_path / "bad.py"
    path.write_text('"""Bad"""\nfrom attnverify import Theory, st\ntheory = Theory("bad")\n\n'
                    '@theory.claim(x=st.floats(0, 1))\ndef c(x, y):\n    """s"""\n')
    assert cli.main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    head = err.split("full traceback:")[0]
    assert "argument(s) y have no strategy" in head and f'File "{path}", line 5' in head
    assert "theory_form.py" not in head  # the tool's own frames come after, in the full traceback


def test_an_error_in_a_user_check_shows_the_users_frames_and_not_the_tools(tmp_path, monkeypatch):
    path = tmp_path / "raises.py"
    path.write_text('"""Raises"""\nfrom attnverify import Theory, st\ntheory = Theory("raises")\n\n'
                    'def helper(x):\n    return {}["sigma"]\n\n'
                    '@theory.claim(x=st.floats(0, 1))\ndef c(x):\n    """s"""\n    return helper(x)\n')
    result = run_claim(from_file(path).claim_named("raises.c"), profile="quick", seed=0, examples=1)
    assert result.status == "error"
    head = result.error.error.split("full traceback:")[0]
    assert "KeyError: 'sigma'" in head and "line 6, in helper" in head and "theory_form.py" not in head


def test_verify_prints_an_error_with_the_users_frames_and_the_tools_under_debug(tmp_path, capsys, monkeypatch):
    """A draw of the wrong shape is refused by the tool in one line naming the user's function; verify prints that
    line (and the user's frames, here none) and points to --debug for the tool's traceback, which --debug prints.
    --latex without --report is refused: it would write nothing."""
    monkeypatch.delenv("ATTNVERIFY_BACKEND", raising=False)
    path = tmp_path / "shape.py"
    path.write_text('"""Shape"""\nfrom attnverify import Theory, st\ntheory = Theory("shape")\n\n'
                    'def draws(rng, n, mu):\n    """mean is mu"""\n    return mu + rng.standard_normal((n, 3))\n\n'
                    'theory.monte_carlo(draws, expected=lambda mu: mu, resolution=0.1, mu=st.just(0.5))\n')
    assert cli.main(["verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert "monte_carlo draws must return its draws of one quantity" in out and "got shape (1000, 3)" in out
    assert "full traceback:" not in out and "(the full traceback, attnverify's frames too: --debug)" in out
    assert cli.main(["verify", str(path), "--debug"]) == 1
    out = capsys.readouterr().out
    assert "full traceback:" in out and "sized.py" in out
    assert cli.main(["verify", str(path), "--latex"]) == 2
    assert "--latex writes the report's LaTeX: it goes with --report DIR" in capsys.readouterr().err


def test_the_long_form_figure_refuses_a_nan_theory_curve_by_name(tmp_path):
    from attnverify.report.figures import theory_vs_simulation

    estimates = [Estimate(1.0, 0.1, 10), Estimate(2.0, 0.1, 10)]
    with pytest.raises(ValueError, match=r"figure f.png: theory must be finite numbers; entry 1 is nan \(1 of 2 not finite"):
        theory_vs_simulation(tmp_path, "f.png", x=[0, 1], theory=[1.0, math.nan], estimates=estimates, caption="c")


def test_the_key_figures_show_the_example_nearest_its_tolerance_not_the_last():
    from attnverify.report.results import key_figures

    gaps = {0: 0.1, 1: 0.2, 2: 0.9, 3: 0.3, 4: 0.0, 5: 0.4}  # against a tolerance of 1: k = 2 came nearest to failing

    @claim("mine.nearest", parameters={"k": st.sampled_from(sorted(gaps))}, statement="s",
           examples={"quick": 20, "thorough": 20})
    def nearest(p, ctx):
        return within_error(1.0 + gaps[p["k"]], Estimate(1.0, 0.2, 100))

    result = run_claim(nearest, profile="quick", seed=0)
    drawn = [e.parameters["k"] for e in result.examples]
    assert result.status == "holds" and 2 in drawn and drawn[-1] != 2  # the last example is not the nearest
    assert key_figures(result.as_dict()).startswith("theory 1.9 vs observed 1")


def test_every_bad_claim_name_of_a_file_is_listed_at_once(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("ATTNVERIFY_BACKEND", raising=False)
    path = tmp_path / "names.py"
    path.write_text("from attnverify.checks import claim, close, st\n"
                    + "".join(f'@claim("{name}", parameters={{"x": st.just(1.0)}}, statement="s")\n'
                              f"def c{k}(p, ctx):\n    return close(1.0, 1.0)\n"
                              for k, name in enumerate(["Bad.one", "nodot", "mine.U_independent_of_T"])))
    assert cli.main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    import re

    assert "2 claim name(s) are not theory.name" in err  # (the decorator's line or its def's, by Python version)
    assert re.search(rf"'Bad.one' at {re.escape(str(path))}, line [12];", err)
    assert re.search(rf"'nodot' at {re.escape(str(path))}, line [45]", err)
    assert "U_independent_of_T'" not in err.split("full traceback")[0]
    with pytest.raises(ValueError, match="theory.name"):  # imported outside the tool: at definition, as before
        claim("nodot", parameters={}, statement="s")


def test_the_readme_example_goes_through_verify_and_its_report(tmp_path, monkeypatch):
    """examples/relu_kernel.py, shown in full in the README (≤ 30 non-blank lines): verify with --report gives its
    derivation with every step decided, its three claims as expected and its theory-vs-simulation figure."""
    monkeypatch.delenv("ATTNVERIFY_BACKEND", raising=False)
    example = Path(__file__).resolve().parents[1] / "examples" / "relu_kernel.py"
    assert sum(1 for line in example.read_text().splitlines() if line.strip()) <= 30
    assert example.read_text() in (Path(__file__).resolve().parents[1] / "README.md").read_text()
    out = tmp_path / "report"
    assert cli.main(["verify", str(example), "--report", str(out), "--workers", "1"]) == 0
    document = json.loads((out / "results.json").read_text())
    assert {c["name"]: c["status"] for c in document["claims"]} == {
        "relu.kernel_matches_monte_carlo": "holds", "relu.kernel_with_one_over_pi": "refuted",
        "relu.derivation_steps": "holds"}
    (section,) = document["sections"]
    (derivation,) = section["derivations"]
    assert derivation["checks"]["failed"] == 0 and derivation["checks"]["unchecked"] == 0
    (figure,) = section["figures"]
    assert len(figure["data"]["mean"]) == 9 and (out / figure["filename"]).is_file()


def test_parameters_that_depend_on_each_other_come_from_one_strategy():
    """``parameters=`` takes one strategy that draws the dict,
    for parameters that depend on each other; its names are checked against the function at the first draw, by name,
    and keywords and ``parameters=`` together are refused."""
    from attnverify import Theory, at_most, run_claim

    theory = Theory("dependent")

    @theory.claim(parameters=st.integers(1, 6).flatmap(
        lambda L: st.fixed_dictionaries({"L": st.just(L), "order": st.permutations(list(range(L)))})))
    def permutation_keeps_the_sum(L, order):
        """Permuting 0..L−1 keeps its sum."""
        return at_most(abs(sum(order) - L * (L - 1) / 2), 0.0)

    assert run_claim(permutation_keeps_the_sum, seed=0).status == "holds"

    @theory.claim(parameters=st.fixed_dictionaries({"L": st.integers(1, 3), "extra": st.just(1)}))
    def names_one_argument(L):
        """Names only L."""
        return at_most(0.0, 1.0)

    result = run_claim(names_one_argument, seed=0)
    assert result.status == "error" and "extra name no argument" in result.error.error

    with pytest.raises(TypeError, match="not both"):
        theory.claim(parameters=st.fixed_dictionaries({"L": st.just(1)}), M=st.just(2))
    with pytest.raises(TypeError, match=r"parameters=st.floats\(...\) draws one value with no name"):
        theory.claim(parameters=st.floats(0, 1))


LARGER_THEORY = '''
"""A larger theory: planned experiments and a section of its own."""
import numpy as np
from attnverify import Theory, at_most, st
from attnverify.execution.store import planned
from attnverify.report.section import Section, Table

theory = Theory("larger")
CALLS = []


def squares(*, count: int) -> tuple:
    CALLS.append(count)
    return tuple(float(k * k) for k in range(count))


@theory.experiments
def plan(settings):
    return [planned(squares, count=4)]


@theory.section
def section(out_dir, settings, progress):
    values = settings.store.get(squares, count=4)
    return Section(theory="larger", title="Larger", introduction="drawn from the store",
                   tables=[Table("squares", ["k", "k²"], [[k, v] for k, v in enumerate(values)])])


@theory.claim(count=st.integers(1, 4))
def squares_grow(count, ctx):
    """Squares do not decrease."""
    values = ctx.store.get(squares, count=4)[:count]
    return at_most(float(-min(np.diff(values), default=0.0)), 0.0)
'''


def test_a_theory_plans_its_experiments_and_draws_its_own_section(tmp_path):
    """``@theory.experiments`` plans what the run computes ahead of the
    section, once, and ``@theory.section`` draws the section from the run's store, as the built-in theories do."""
    import json

    from attnverify.theories import from_file

    path = tmp_path / "larger.py"
    path.write_text(LARGER_THEORY)
    theory = from_file(path)
    plans = theory.plan_experiments(profile="quick", seed=0, backend="numpy")
    assert [p.label for p in plans] == ["squares(count=4)"]
    out = tmp_path / "report"
    assert cli.main(["verify", str(path), "--report", str(out), "--workers", "1", "--backend", "numpy"]) == 0
    document = json.loads((out / "results.json").read_text())
    (section,) = document["sections"]
    assert section["title"] == "Larger" and section["tables"][0]["rows"][-1] == [3, 9.0]
    assert [c["status"] for c in document["claims"]] == ["holds"]
    from attnverify.theories.catalogue import load_user_module

    assert load_user_module(path).CALLS == [4]  # computed once, ahead of the section; the claim read it from the store


def test_the_erf_example_holds_for_every_run_seed_and_catches_a_planted_factor(tmp_path, monkeypatch):
    """examples/erf_kernel.py: its Monte Carlo claim over s from 1e-3 to 1e3 and θ from 0 to π (ends drawn) holds for
    run seeds 0–9, its 0.9 variant is refuted, its derivation is checked in seconds on a cold cache, and 1/π
    planted for 2/π makes derivation_steps fail."""
    import re

    from attnverify import run_claim
    from attnverify.theories.catalogue import load_user_module

    monkeypatch.setenv("ATTNVERIFY_CACHE", str(tmp_path / "cache"))
    example = Path(__file__).resolve().parents[1] / "examples" / "erf_kernel.py"
    theory = load_user_module(example).theory
    claims = {c.name: c for c in theory.claim_list()}
    for seed in range(10):
        result = run_claim(claims["erf_kernel.kernel_matches_monte_carlo"], seed=seed)
        assert result.status == "holds", str(result)
        assert {e.parameters["log_s"] for e in result.examples} >= {-3.0, 3.0}
    assert run_claim(claims["erf_kernel.kernel_times_0_9"], seed=0).status == "refuted"
    assert run_claim(claims["erf_kernel.derivation_steps"], seed=0).status == "holds"
    planted = tmp_path / "planted_erf_kernel.py"
    planted.write_text(re.sub(r"Eq\(K, 2 / pi \* asin", "Eq(K, 1 / pi * asin", example.read_text()))
    steps = [c for c in load_user_module(planted).theory.claim_list() if c.name.endswith("derivation_steps")][0]
    assert run_claim(steps, seed=0).status == "refuted"


def test_a_derived_function_shows_its_generated_code(tiny):
    """``d.evaluator(name).source`` is the numpy code that evaluates the result."""
    source = load_user_module(tiny).moment.evaluator("m").source
    assert source.startswith("def evaluate(t):") and "xp.exp" in source


POLAR = '''"""Polar coordinates"""
from sympy import Eq, Tuple, cos, sin, symbols
from attnverify import Theory

theory = Theory("polar")
r, phi, x, y = symbols("r phi x y", real=True)


@theory.derivation
def cartesian(step):
    """From polar to Cartesian coordinates"""
    step("The point", Eq(Tuple(x, y), Tuple(r * cos(phi), r * sin(phi))), name="point")
    step("Its first coordinate", Eq(x, r * cos(phi)), name="x")
'''


@pytest.fixture
def polar(tmp_path, monkeypatch):
    path = tmp_path / "polar.py"
    path.write_text(POLAR)
    monkeypatch.setenv("ATTNVERIFY_KEEP_DERIVATIONS", "0")
    return load_user_module(path)


def test_a_derived_function_as_an_array_function_is_called_by_position_in_the_order_named(polar):
    """``array_function(*names, backend=)`` is the generated evaluator in the order asked for, with plain arrays; a
    tuple result gives a tuple; every symbol must be named, once."""
    x = polar.cartesian.evaluator("x")
    r, phi = np.array([1.0, 2.0]), np.array([0.3, 1.1])
    by_position = x.array_function("phi", "r")(phi, r)
    assert type(by_position) is np.ndarray and np.array_equal(by_position, np.asarray(x(r=r, phi=phi)))
    assert np.array_equal(x.array_function()(phi, r), by_position)  # default: the names in sorted order
    first, second = polar.cartesian.evaluator("point").array_function("r", "phi")(r, phi)
    assert np.array_equal(first, by_position) and np.allclose(second, r * np.sin(phi), rtol=1e-15, atol=0)
    with pytest.raises(TypeError, match=r"polar.cartesian.x is a function of phi, r; missing phi"):
        x.array_function("r")
    with pytest.raises(TypeError, match="a name given twice"):
        x.array_function("r", "phi", "r")
    # a name the result does not depend on is an argument it ignores (results called alike)
    assert np.array_equal(x.array_function("phi", "y", "r")(phi, 7.0, r), by_position)


def test_a_derived_family_makes_one_result_per_structure_in_the_symbols_order_given():
    """A family's member ``at(L)`` is the expression ``make(L)`` gives, a function of its symbols in the order given
    (not sorted), made once per structure; a list of expressions gives a tuple of results."""
    import sympy

    from attnverify.theory_form.derived import DerivedFamily

    def power_sums(L):
        xs = sympy.symbols(f"x1:{L + 1}", real=True)
        return [sum(x**k for x in xs) for k in (1, 2)], tuple(reversed(xs))

    family = DerivedFamily("demo.sums", "power_sums", power_sums)
    member = family.at(3)
    assert member is family.at(3) and member is not family.at(2) and member.names == ("x3", "x2", "x1")
    first, second = member.array_function()(np.array([3.0]), 2.0, 1.0)  # x3, x2, x1
    assert first.tolist() == [6.0] and second.tolist() == [14.0]
    assert [float(v) for v in family.at(2).array_function(backend="numpy")(0.5, 2.0)] == [2.5, 4.25]


def test_a_derived_functions_derivative_is_sympys_and_agrees_with_finite_differences(polar):
    x = polar.cartesian.evaluator("x")
    gradient = x.derivative("r", "phi")
    assert gradient is x.derivative("r", "phi")  # made once
    r, phi = np.array([0.5, 2.0]), np.array([0.3, -1.1])
    d_r, d_phi = gradient.array_function("r", "phi")(r, phi)
    assert np.allclose(d_r, np.cos(phi), rtol=1e-15, atol=0) and np.allclose(d_phi, -r * np.sin(phi), rtol=1e-15)
    h = 1e-6  # central differences: error O(h²) ≈ 1e-12 against terms of size 1
    assert np.allclose(d_phi, (x(r=r, phi=phi + h) - x(r=r, phi=phi - h)) / (2 * h), rtol=0, atol=1e-9)
    with pytest.raises(TypeError, match="no symbol named theta"):
        x.derivative("theta")
    with pytest.raises(TypeError, match="polar.cartesian.point is a tuple of results"):
        polar.cartesian.evaluator("point").derivative("r")
