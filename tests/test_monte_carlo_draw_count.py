"""Theory.monte_carlo passes the number of draws by position, after rng: every other name is a parameter's."""

import re

import numpy as np
import pytest

from attnverify import Theory, st
from attnverify.checks import run_claim

SIZES = dict(n=st.integers(1, 5), d=st.integers(1, 5))


def chi_square_over_n(rng, draws, n, d):
    """E[|Z|² / n] = d / n for Z ~ N(0, I_d)."""
    return (rng.standard_normal((draws, d)) ** 2).sum(axis=1) / n


def test_a_simulator_whose_count_has_another_name_leaves_n_and_d_to_the_theory():
    theory = Theory("sizes")
    true = theory.monte_carlo(chi_square_over_n, expected=lambda n, d: d / n, relative=0.05,
                              figure=dict(n=np.array([1, 2, 4]), d=3), **SIZES)
    false = theory.monte_carlo(chi_square_over_n, expected=lambda n, d: (d + 1) / n, relative=0.05,
                               expect="refuted", name="one_more", statement="(False.) d + 1.", **SIZES)
    assert run_claim(true, examples=3).status == "holds"
    assert run_claim(false, examples=3).status == "refuted"
    figure = theory.figures[0].make(np.random.default_rng(0))  # the figure draws through the same simulator
    # 5 SE each (about 1 % of the mean): a false alarm of 6e-7 per point, whatever the generator's seed
    assert all(abs(e.mean - truth) <= 5 * e.standard_error for e, truth in zip(figure.estimates, (3, 1.5, 0.75)))
    # the theory along the integer axis at every integer between its ends, a curve rather than a line through 3 points
    assert list(figure.theory_x) == [1, 2, 3, 4] and list(figure.theory) == [3.0, 1.5, 1.0, 0.75]


def test_a_simulator_without_a_count_is_named_by_the_argument_after_rng():
    def missing(rng, n, d):
        return np.zeros(n)

    with pytest.raises(TypeError, match=r"must take \(rng, draws, n, d\): rng, the number of draws \(the argument "
                                        r"after rng, by position, any name\).*; it takes \(rng, n, d\)$"):
        Theory("sizes").monte_carlo(missing, expected=lambda n, d: 0.0, resolution=0.1, statement="s", **SIZES)


def test_a_wrong_shape_names_the_count_by_the_simulators_own_name():
    def columns(rng, draws, n, d):
        return rng.standard_normal((draws, d))

    made = Theory("sizes").monte_carlo(columns, expected=lambda n, d: 0.0, resolution=0.1, statement="s",
                                       n=st.integers(1, 5), d=st.integers(2, 5))
    error = run_claim(made, examples=1).examples[0].error
    assert "must return its draws of one quantity, shape (draws,) = (" in error, error


def test_chunk_caps_the_draws_one_call_is_asked_for_and_is_refused_by_name():
    """``chunk=`` bounds the memory of one call (sequences of many tokens) and leaves the sizing alone: the same
    number of draws in all, no call asked for more than the chunk."""
    asked = []

    def recorded(rng, draws, n, d):
        """E[|Z|² / n] = d / n, each call's count recorded."""
        asked.append(draws)
        return chi_square_over_n(rng, draws, n, d)

    theory = Theory("chunks")
    whole = theory.monte_carlo(recorded, expected=lambda n, d: d / n, relative=0.05, name="whole", **SIZES)
    chunked = theory.monte_carlo(recorded, expected=lambda n, d: d / n, relative=0.05, chunk=100, name="chunked",
                                 **SIZES)
    examples = {"n": 2, "d": 3}
    from attnverify.checks.runner import evaluate

    first = evaluate(whole, examples, 0)
    calls_whole, asked[:] = list(asked), []
    second = evaluate(chunked, examples, 0)
    # the first two calls (1 and 2 draws, on copies of the generator) measure a call's memory: not draws
    assert calls_whole[:2] == asked[:2] == [1, 2]
    assert max(calls_whole) > 100 and max(asked) == 100
    assert first.evidence.figures["samples"] == second.evidence.figures["samples"] == sum(calls_whole[2:]) \
        == sum(asked[2:])
    with pytest.raises(ValueError, match=r"chunk must be a positive finite int"):
        theory.monte_carlo(recorded, expected=lambda n, d: d / n, relative=0.05, chunk=0, name="bad", **SIZES)


def shifted_normals(rng, draws, mu, d):
    """E[Z + (μ, 2μ, …, dμ)] for Z ~ N(0, I_d): a vector of d means."""
    return rng.standard_normal((draws, d)) + mu * np.arange(1, d + 1)


VECTOR = dict(mu=st.floats(-1.0, 1.0), d=st.integers(1, 4))


def test_a_vector_of_means_is_compared_component_by_component():
    """expected giving d values asks for draws of shape (n, d): each mean sized and compared, the component closest
    to failing decides; one wrong component refutes and is named."""
    theory = Theory("vectors")
    true = theory.monte_carlo(shifted_normals, expected=lambda mu, d: mu * np.arange(1, d + 1), resolution=0.1,
                              **VECTOR)
    last_off = theory.monte_carlo(
        shifted_normals, expected=lambda mu, d: mu * np.arange(1, d + 1) + (np.arange(d) == d - 1), resolution=0.1,
        expect="refuted", name="last_off", statement="(False.) the last mean is one more.", **VECTOR)
    assert run_claim(true, examples=4).status == "holds"
    result = run_claim(last_off, examples=4)
    assert result.status == "refuted"
    evidence = result.counterexample.evidence
    assert "worst case component" in evidence.note and set(evidence.figures["cases"]) == {
        f"component {j}" for j in range(result.counterexample.parameters["d"])}


def test_a_vector_of_means_refuses_a_wrong_width_a_relative_resolution_and_a_figure():
    theory = Theory("vectors")
    narrow = theory.monte_carlo(lambda rng, n, mu, d: rng.standard_normal((n, d + 1)), name="narrow",
                                statement="s", expected=lambda mu, d: np.zeros(d), resolution=0.1, **VECTOR)
    error = run_claim(narrow, examples=1).examples[0].error
    assert re.search(r"must return its draws of \d quantities \(one per entry of expected\), shape \(n, \d\)", error)
    relative = theory.monte_carlo(shifted_normals, expected=lambda mu, d: np.ones(d), relative=0.1, name="relative",
                                  statement="s", **VECTOR)
    assert "relative= sizes one quantity by its terms" in run_claim(relative, examples=1).examples[0].error
    theory.monte_carlo(shifted_normals, expected=lambda mu, d: np.ones(d), resolution=0.1, name="drawn",
                       statement="s", figure=dict(mu=np.array([0.0, 1.0]), d=2), **VECTOR)
    with pytest.raises(ValueError, match="figure= draws one quantity against mu; expected gives a vector of 2"):
        theory.figures[0].make(np.random.default_rng(0))


def test_the_components_of_a_vector_are_named_as_the_theory_names_them():
    theory = Theory("vectors")
    named = theory.monte_carlo(lambda rng, n, mu: rng.standard_normal((n, 2)) + mu, expected=lambda mu: [mu, mu + 1],
                               resolution=0.1, components=("L=16", "L=64"), name="named", statement="s", expect="refuted",
                               mu=st.floats(-1.0, 1.0))
    result = run_claim(named, examples=1)
    assert result.status == "refuted" and result.counterexample.evidence.note.startswith("worst case L=64:")
    drawn = []
    three = theory.monte_carlo(lambda rng, n, mu: drawn.append(n) or rng.standard_normal((n, 2)),
                               expected=lambda mu: [0.0, 0.0], resolution=0.1, components=("a", "b", "c"),
                               name="three", statement="s", mu=st.floats(-1.0, 1.0))
    assert "components names 3 entries (a, b, c), expected gives 2" in run_claim(three, examples=1).examples[0].error
    assert drawn == []  # refused before anything is drawn
    for bad in (["a"], ("a", "a"), ("",)):
        with pytest.raises(ValueError, match="components must be a tuple of distinct names"):
            theory.monte_carlo(shifted_normals, expected=lambda mu, d: np.ones(d), resolution=0.1, components=bad,
                               name="bad", statement="s", **VECTOR)


def test_resolution_and_bias_may_be_given_one_per_component():
    theory = Theory("vectors")
    made = theory.monte_carlo(lambda rng, n, mu: rng.standard_normal((n, 2)) * (1, 10) + mu,
                              expected=lambda mu: [mu, mu], resolution=(0.1, 1.0), bias=(0.0, 0.01),
                              components=("narrow", "wide"), name="per_component", statement="s",
                              mu=st.floats(-1.0, 1.0))
    result = run_claim(made, examples=2)
    assert result.status == "holds"
    cases = result.examples[0].evidence.figures["cases"]
    assert cases["narrow"]["figures"]["resolution"] == pytest.approx(0.1)
    assert cases["wide"]["figures"]["resolution"] == pytest.approx(1.01)
    with pytest.raises(ValueError, match=r"resolution must be a positive .*one per component.*got \(0.1, -1.0\)"):
        theory.monte_carlo(shifted_normals, expected=lambda mu, d: np.ones(d), resolution=(0.1, -1.0), name="bad",
                           statement="s", **VECTOR)


@pytest.mark.parametrize("option, words", [(dict(relative=0.1), "relative= is for one quantity"),
                                           (dict(resolution=0.1, figure=dict(mu=np.array([0.0, 1.0]), d=2)),
                                            "figure= is for one quantity")])
def test_a_declared_vector_refuses_one_quantitys_options_at_definition(option, words):
    with pytest.raises(ValueError, match=words + ", and components= declares a vector of 2 means"):
        Theory("vectors").monte_carlo(shifted_normals, expected=lambda mu, d: np.ones(d), components=("a", "b"),
                                      name="declared", statement="s", **option, **VECTOR)
