"""The theory interface: derivations, planned experiments (run as tasks of their own before the section, which
finds them in the store), claims and section, the same for the built-in theories and a user's file."""

from __future__ import annotations

import textwrap

import pytest

from attnverify.execution.store import Planned, Store, planned
from attnverify.run import report as builder
from attnverify.theories import from_file

THEORY_FILE = textwrap.dedent('''
    """Counting theory: a test theory whose experiment leaves a mark each time it is computed."""
    from pathlib import Path

    from attnverify.execution.store import planned
    from attnverify.report.section import Section, Table

    THEORY = "counting"


    def squares(*, n: int, marks: str) -> tuple:
        with open(marks, "a") as handle:
            handle.write(f"squares {n}\\n")
        return tuple(k * k for k in range(n))


    def total(*, n: int, marks: str, store) -> int:
        with open(marks, "a") as handle:
            handle.write(f"total {n}\\n")
        return sum(store.get(squares, n=n, marks=marks))


    def plan_experiments(settings):
        marks, seed = str(Path(__file__).with_name("marks.txt")), settings.seed
        first = planned(squares, n=4 + seed, marks=marks)
        return [first, planned(total, n=4 + seed, marks=marks, after=(first,))]


    def build_section(out_dir, settings, progress):
        marks, seed = str(Path(__file__).with_name("marks.txt")), settings.seed
        value = settings.store.get(total, n=4 + seed, marks=marks)
        return Section(theory=THEORY, title="Counting", introduction="Squares.",
                       tables=[Table("Sum of squares", ["n", "sum"], [[4 + seed, value]])])
''')


@pytest.mark.parametrize("workers", [1, 2, "local:2"])
def test_planned_experiments_are_computed_once_ahead_of_the_section(tmp_path, workers):
    source = tmp_path / "counting.py"
    source.write_text(THEORY_FILE)
    theory = from_file(source)
    if workers == "local:2":  # on a Dask cluster of two worker processes
        pytest.importorskip("distributed")
        options = {"scheduler": workers}
    else:
        options = {"workers": workers}
    document = builder.build_report(tmp_path / "out", theories=[theory], only="counting", seed=1, **options)
    (section,) = document["sections"]
    assert section["errors"] == [] and section["warnings"] == []
    assert section["tables"][0]["rows"] == [[5, 0 + 1 + 4 + 9 + 16]]
    # each experiment computed exactly once, by its own task, in the order its "after" asks for
    assert (tmp_path / "marks.txt").read_text().splitlines() == ["squares 5", "total 5"]
    assert sorted(section["experiment_seconds"]) == sorted(
        ["squares(marks=%r, n=5)" % str(tmp_path / "marks.txt"), "total(marks=%r, n=5)" % str(tmp_path / "marks.txt")])


def test_planning_checks_the_parameters_and_names_the_task():
    def experiment(*, n: int, store=None) -> int:
        return n

    plan = planned(experiment, n=3)
    assert isinstance(plan, Planned) and plan.label == "experiment(n=3)"
    assert plan.key == Store.key(experiment, {"n": 3})
    with pytest.raises(TypeError, match="does not take"):
        planned(experiment, m=3)
    with pytest.raises(TypeError, match="plain|str, int"):
        planned(experiment, n=[3])
    with pytest.raises(TypeError, match="after must hold planned"):
        planned(experiment, n=3, after=("experiment(n=2)",))


def test_builtin_theories_plan_every_experiment_their_sections_use():
    """The built-in plans name each experiment once; the attention-paths thorough plan samples the one-shot
    posterior (the longest task) and the quick plan does not."""
    from attnverify.theories import builtin, builtin_theory

    for theory in builtin():
        for profile in ("quick", "thorough"):
            labels = [p.label for p in theory.plan_experiments(profile=profile, seed=0, backend="numpy")]
            assert labels and len(set(labels)) == len(labels)
    paths = builtin_theory("attention_paths")
    quick = [p.label for p in paths.plan_experiments(profile="quick", seed=0, backend="numpy")]
    thorough = [p.label for p in paths.plan_experiments(profile="thorough", seed=0, backend="numpy")]
    assert not any(label.startswith(("one_shot_sampled_networks", "one_shot_chain_group")) for label in quick)
    (sampled,) = [p for p in paths.plan_experiments(profile="thorough", seed=0, backend="numpy")
                  if p.label.startswith("one_shot_sampled_networks")]
    groups = [p for p in sampled.after if p.label.startswith("one_shot_chain_group")]  # one task each
    assert [(dict(p.parameters)["group"], dict(p.parameters)["seed"]) for p in groups] == [(0, 0), (1, 0)]
    assert {p.label for p in groups} < set(thorough)


def test_every_builtin_theory_names_its_derivations_claims_and_section():
    from attnverify.theories import builtin

    for theory in builtin():
        derivations = theory.derivation_list()
        assert derivations and all(d.steps for d in derivations)
        assert len({d.name for d in derivations}) == len(derivations)
        assert theory.claim_list() and all(c.name.startswith(theory.name + ".") for c in theory.claim_list())
        assert theory.builtin and theory.plans_experiments and theory._section is not None


def test_a_users_file_gives_its_derivations_to_its_default_section(tmp_path):
    source = tmp_path / "tiny.py"
    source.write_text(textwrap.dedent('''
        """Tiny theory

        One derivation, no claims of its own beyond one identity."""
        import sympy
        from attnverify.checks import claim, close, st
        from attnverify.derivations.derivation import DerivationRecorder

        THEORY = "tiny"


        def derivations():
            x = sympy.Symbol("x")
            rec = DerivationRecorder("tiny.square", "A square", "here")
            rec.step("Square x.", x**2, name="square")
            return [rec.finish()]


        @claim("tiny.one", parameters=st.just({}))
        def one(p, ctx):
            """1 = 1."""
            return close(1.0, 1.0)
    '''))
    theory = from_file(source)
    assert [d.name for d in theory.derivation_list()] == ["tiny.square"]
    section = theory.build_section(tmp_path, profile="quick", backend="numpy", seed=0, progress=print, store=None)
    assert section.title == "Tiny theory" and [d.name for d in section.derivations] == ["tiny.square"]


def test_builtin_experiments_name_their_sizes_not_the_profile():
    """A planned experiment's parameters are what it computes with (its key in the store): the profile picks them
    and is never one of them, so the same sizes are the same result whichever profile asked."""
    from attnverify.theories import builtin

    for theory in builtin():
        for profile in ("quick", "thorough"):
            plan = theory.plan_experiments(profile=profile, seed=0, backend="numpy")
            named = {name for p in plan for name, _ in p.parameters} | {
                name for p in plan for before in p.after for name, _ in before.parameters}
            assert "profile" not in named, (theory.name, profile)
