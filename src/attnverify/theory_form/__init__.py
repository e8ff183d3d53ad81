"""The concise form of a theory: one object whose decorators register derivations, claims and figures.

    from attnverify import Theory, st, within_error

    theory = Theory("partition")

    @theory.derivation(source="this note")
    def mean(step):                       # step = DerivationRecorder.step, checked step by step
        ...
        step("Insert", Eq(E, L * exp(sigma**2 / 2)), name="partition_mean")

    @theory.claim(L=st.integers(2, 64), sigma=st.floats(0.1, 3.0))
    def jensen_gap(L, sigma, ctx):        # named arguments, as hypothesis's @given; ctx (or rng) if asked for
        ...

    @theory.monte_carlo(expected=lambda L, sigma: mean.evaluator("partition_mean")(L=L, sigma=sigma),
                        relative=0.01, figure=dict(sigma=np.linspace(0.1, 1.5, 8), L=16),
                        L=st.integers(2, 64), sigma=st.floats(0.1, 1.0))
    def mean_matches_monte_carlo(rng, n, L, sigma):   # n draws of the quantity whose mean is `expected`
        ...

A claim is named ``<theory>.<function name>`` and remembers the file it came from (its replay is ``attnverify
verify FILE --only NAME``). Derivations are derived once per process and kept on disk per file content (a changed
file derives afresh, `attnverify.derivations.kept`). The report's section is made from the file's docstring,
its derivations and its figures; ``attnverify verify FILE`` and ``report --with FILE`` find the object by itself.
Its parts: `.derived` (a derivation and its results as array functions), `.signatures` (calling what a
theory writes by its parameters' names), `.monte_carlo` (the Monte Carlo claim) and `.figures`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from pathlib import Path
from typing import Any, Callable

import numpy as np
from hypothesis import strategies as st

from ..base import arguments
from ..base.files import fingerprint
from ..checks.claim import PROFILES, Claim, claim_parameters
from ..checks.evidence import Evidence
from ..execution.settings import RunSettings
from .derived import DerivationHandle, DerivedFunction
from .figures import FigureMaker, TheoryVsSimulation
from .monte_carlo import Sizing, checked_option, compare, figure_axis, finite_expected, simulator, sweep
from .saddle_point import SaddleEquations, SaddlePointOptions
from .signatures import accepts_the_drawn, options_not_strategies, signature_call, statement_of

__all__ = ["DerivationHandle", "DerivedFunction", "Theory", "TheoryVsSimulation"]


class Theory:
    """A theory of one's own, in one file: ``theory = Theory("name")`` and its decorators
    ([`derivation`][attnverify.theory_form.Theory.derivation], `claim`,
    [`monte_carlo`][attnverify.theory_form.Theory.monte_carlo], [`figure`][attnverify.theory_form.Theory.figure]; for a
    larger theory, [`section`][attnverify.theory_form.Theory.section] and
    [`experiments`][attnverify.theory_form.Theory.experiments]). ``title`` defaults to the first line of the file's
    docstring, ``introduction`` to the rest of it. ``file``: the defining file, by default the one that says
    ``Theory(...)`` (given, the docstring is not read: ``title`` and ``introduction`` say what the section shows).

    A theory pickles as a reference, its name and file (`attnverify.theories` registers how): a worker process
    loads the file, or the built-in package, again and finds the same theory there."""

    def __init__(self, name: str, *, title: str | None = None, introduction: str | None = None, source: str = "",
                 file: str | Path | None = None):
        if not isinstance(name, str) or not name.isidentifier() or name != name.lower():
            raise ValueError(f"Theory name must be a lower_snake_case identifier (the claims are named name.…), "
                             f"got {name!r}")
        import sys

        module = sys._getframe(1).f_globals  # the file that says theory = Theory(...)
        self.name, self.source = name, source
        if file is not None:
            module = {"__file__": str(file)}
        self.file = str(Path(module.get("__file__") or sys._getframe(1).f_code.co_filename).resolve())
        # one of the package's own theories (attnverify/theories/<name>/): its claims replay by name (``check
        # --only``), not by file, and its derivations are kept per the package's code version
        self.builtin = Path(self.file).is_relative_to(Path(__file__).resolve().parent.parent / "theories")
        self._docstring = inspect.cleandoc(module.get("__doc__") or "")
        self._title, self._introduction = title, introduction
        self.derivations: list[DerivationHandle] = []
        self.claims: list[Claim] = []
        self.figures: list[FigureMaker] = []
        self._saddle_equations = SaddleEquations()
        self._section: Callable | None = None
        self._plan: Callable | None = None
        self._derived: Callable | None = None

    # -- identity -------------------------------------------------------------------------------------------
    @functools.cached_property
    def content_key(self) -> str:
        """The fingerprint of the defining file's bytes (`attnverify.base.files.fingerprint`): the disk keeps
        derivations per file content."""
        try:
            return fingerprint(Path(self.file).read_bytes())
        except OSError:
            return "unsaved"

    @property
    def title(self) -> str:
        return self._title or self._docstring.partition("\n")[0].strip() or self.name

    @property
    def introduction(self) -> str:
        if self._introduction is not None:
            return self._introduction
        return self._docstring.partition("\n")[2].strip()  # the docstring's first line is its title

    # -- registration ---------------------------------------------------------------------------------------
    def derivation(self, function: Callable | None = None, *, source: str = "", title: str | None = None,
                   name: str | None = None):
        """Register ``function(step)``, which records the derivation's steps with ``step(description, expression,
        name=…, kind=…)`` ([`step`][attnverify.derivations.derivation.DerivationRecorder.step]), as the derivation
        ``<theory>.<name>`` (the function's name by default). Returns a `DerivationHandle`, which the
        theory's own code calls for the [`Derivation`][attnverify.derivations.derivation.Derivation]."""
        options_not_strategies("derivation", source=source, title=title, name=name)

        def register(function: Callable) -> DerivationHandle:
            handle = DerivationHandle(self, function, source or self.source, title, name)
            if any(d.name == handle.name for d in self.derivations):
                raise ValueError(f"theory {self.name} already has a derivation named {handle.name}")
            self.derivations.append(handle)
            return handle

        return register if function is None else register(function)

    def add(self, claim: Claim) -> Claim:
        """Add a claim made elsewhere (a top-level ``@claim`` of the theory's file) to the theory's claims."""
        if not isinstance(claim, Claim):
            raise TypeError(f"theory {self.name} can add a Claim, got {type(claim).__name__}")
        if not claim.name.startswith(self.name + "."):
            raise ValueError(f"the claims of theory {self.name!r} are named {self.name}.…, got {claim.name!r}")
        return self._add(claim)

    def derived(self, function: Callable[[], list]) -> Callable:
        """Register ``function() -> list[Derivation]``, derivations recorded without
        [`derivation`][attnverify.theory_form.Theory.derivation] (a long-form file's ``derivations()``); they follow the
        registered ones in [`derivation_list`][attnverify.theory_form.Theory.derivation_list] and are checked step by
        step by the same ``<theory>.derivation_steps`` claim."""
        arguments.function("derived", function, "a function returning derivations")
        self._derived = function
        return function

    def _add(self, claim: Claim) -> Claim:
        if any(c.name == claim.name for c in self.claims):
            raise ValueError(f"theory {self.name} already has a claim named {claim.name}")
        self.claims.append(claim)
        return claim

    def claim(self, function: Callable | None = None, *, name: str | None = None, statement: str | None = None,
              source: str = "", expect: str = "holds", examples: dict | None = None, shrink_budget: int = 40,
              parameters: Any = None, **strategies: st.SearchStrategy):
        """Register ``function(**parameters[, ctx][, rng]) -> Evidence`` as the claim ``<theory>.<name>`` (the
        function's name by default), its parameters drawn from the keyword strategies as hypothesis's ``@given``
        has them, or, for parameters that depend on each other, from ``parameters=``: one strategy that draws the
        dict of them (``st.integers(1, 40).flatmap(lambda L: st.fixed_dictionaries({"L": st.just(L), "order":
        st.permutations(range(L))}))``). The statement is the docstring. Returns the
        [`Claim`][attnverify.checks.claim.Claim]."""
        options_not_strategies("claim", strategies, name=name, statement=statement, source=source, expect=expect,
                                examples=examples, shrink_budget=shrink_budget)
        label = f"{self.name}.{name or '…'}"
        if parameters is not None and strategies:
            raise TypeError(f"claim {label!r}: give the parameters as keyword strategies or as parameters=, not both "
                            f"(got parameters= and {', '.join(strategies)})")
        drawn = claim_parameters(strategies if parameters is None else parameters, label)
        names = tuple(strategies) if parameters is None else (tuple(parameters) if isinstance(parameters, dict)
                                                               else None)

        def register(function: Callable) -> Claim:
            call = signature_call(function, names, "claim")
            return self._new_claim(name or function.__name__, statement_of(statement, function, name), drawn, call,
                                   source, expect, examples, shrink_budget)

        return register if function is None else register(function)

    def _new_claim(self, name: str, statement: str, parameters, check: Callable, source: str, expect: str,
                   examples: dict | None, shrink_budget: int) -> Claim:
        """The claim ``<theory>.<name>``, from this theory's file, added to the theory."""
        return self._add(Claim(name=f"{self.name}.{name}", statement=statement, parameters=parameters, check=check,
                               source=source or self.source, expect=expect, examples=examples,
                               shrink_budget=shrink_budget,
                               origin="" if self.builtin else self.file))

    def monte_carlo(self, function: Callable | None = None, *, expected: Callable, resolution: float | None = None,
                    relative: float | None = None, budget: int = 1_000_000, bounds: tuple | None = None,
                    bias: float | Callable | None = None, chunk: int | None = None,
                    components: tuple[str, ...] | None = None, figure: dict | None = None,
                    xlabel: str | None = None,
                    ylabel: str = "value",
                    name: str | None = None, statement: str | None = None, source: str = "", expect: str = "holds",
                    examples: dict | None = None, shrink_budget: int = 40, **strategies: st.SearchStrategy):
        r"""The common claim: $\mathbb{E}[$``function(rng, n, **parameters)``$]$ equals ``expected(**parameters)``.

        ``function`` returns $n$ i.i.d. draws, $n$ its argument after ``rng`` (passed by position, whatever its name,
        so that ``n`` may name a parameter); they are drawn in batches until 5 SE resolve an error of
        ``resolution`` + ``relative`` $\cdot$ (the size of the expected value's terms: $\lvert\text{expected}\rvert$
        unless they cancel)
        ([`sized_mean`][attnverify.numerics.sized.sized_mean], at most ``budget`` draws, itself at most 10¹³; short of
        it the example is inconclusive), then compared within 5 SE and the round-off of the derivations' terms
        ([`within_error`][attnverify.checks.comparisons.within_error] with their rounding scale).
        ``bounds=(low, high)``: the range every draw lies in
        ($\lvert\operatorname{erf} \cdot \operatorname{erf}\rvert \le 1$), where it is known: every draw is
        checked against it, where a few rare draws carry the spread the error bar is one that holds without
        the central limit theorem (empirical Bernstein), identical draws refute only beyond what an unseen event
        within it could move, and the resolution asked of a relative ``relative`` is at most that fraction of the
        range's largest magnitude.
        ``figure``: the parameters of a theory-vs-simulation figure, one of them an array (the axis), the rest
        fixed, e.g. ``dict(sigma=np.linspace(0.1, 1.5, 8), L=16)``, its axes labelled ``xlabel`` (default: the
        axis's name) and ``ylabel`` (default "value"). ``resolution``, ``relative`` and ``budget`` may
        be given per profile (``relative={"quick": 0.01, "thorough": 0.005}``), and ``resolution`` as a function of
        the parameters (``lambda gamma, eps, **p: 1e-3 * (gamma**2 + eps**2)``); ``function`` may also take
        ``backend``: then it draws on the run's backend (numpy or cupy) from a Generator of that backend.
        ``bias``: a stated bias budget $b$ (a number, one per profile, or a function of the parameters, e.g.
        ``lambda L, **p: 3 / L**2`` for an $O(1/L^2)$ remainder the expected value leaves out): the draws still resolve
        the resolution, and the comparison allows $5\,\mathrm{SE} + b$ + round-off. ``chunk``: the most draws one call
        of ``function`` is asked for (default 65,536), where one draw holds many numbers (a sequence of $L$ tokens):
        it bounds the memory, not the sizing. ``expected`` may give a vector of $k$ numbers: ``function`` then returns
        draws of shape $(n, k)$, each mean is sized and compared, and the component closest to failing decides
        ([`worst_case`][attnverify.checks.cases.worst_case]), each named by ``components`` (default "component j");
        ``relative`` and ``figure`` are for one quantity."""
        options_not_strategies("monte_carlo", strategies, expected=expected, resolution=resolution, relative=relative,
                                budget=budget, bounds=bounds, bias=bias, chunk=chunk, components=components,
                                figure=figure, xlabel=xlabel,
                                ylabel=ylabel,
                                name=name, statement=statement, source=source, expect=expect, examples=examples,
                                shrink_budget=shrink_budget)
        parameters = claim_parameters(strategies, f"{self.name}.{name or getattr(function, '__name__', '…')}")
        arguments.function("expected", expected, f"a function of the parameters ({', '.join(strategies)})")
        if resolution is None and relative is None:
            raise ValueError("monte_carlo needs the smallest error it must resolve: resolution= (absolute) and/or "
                             "relative= (a fraction of |expected|)")
        checked_option("resolution", resolution, PROFILES, function=True, per_component=True)
        checked_option("relative", relative, PROFILES)
        checked_option("budget", budget, PROFILES, integer=True)
        checked_option("bias", bias, PROFILES, function=True, per_component=True, zero=True)
        checked_option("chunk", chunk, PROFILES, integer=True)
        if components is not None and (not isinstance(components, tuple) or not components or len(set(components))
                                       != len(components) or not all(isinstance(c, str) and c for c in components)):
            raise ValueError(f"components must be a tuple of distinct names, one per entry of expected's vector "
                             f"(\"L=64\", \"L=512\"), got {components!r}")
        if components is not None and (relative is not None or figure is not None):
            raise ValueError(f"{'relative=' if relative is not None else 'figure='} is for one quantity, and "
                             f"components= declares a vector of {len(components)} means: state resolution= (a number "
                             "or one per component) and leave figure= out")
        from ..numerics.sized import refuse_endless_budget
        from ..numerics.statistics import checked_bounds

        for profile, given in budget.items() if isinstance(budget, dict) else [(None, budget)]:
            if given is not None:
                refuse_endless_budget(given, "budget" if profile is None else f"budget[{profile!r}]")
        sizing = Sizing(resolution, relative, budget, checked_bounds("bounds", bounds), bias, chunk, components)

        def register(function: Callable) -> Claim:
            names = tuple(strategies)
            for option, value in (("expected", expected), ("resolution", resolution), ("bias", bias)):
                accepts_the_drawn(value, names, option)
            theory_side = finite_expected(expected, signature_call(expected, names, "expected"))
            simulate = simulator(function, names)
            axis = figure_axis(figure, names, function.__name__) if figure is not None else None

            def check(p: dict, ctx) -> Evidence:
                return compare(theory_side, simulate, p, ctx, sizing)

            check.__wrapped__ = function  # inspect.unwrap(claim.check): the function the theory wrote

            text = statement_of(statement, function, name)
            made = self._new_claim(name or function.__name__, text, parameters, check, source, expect, examples,
                                   shrink_budget)
            if axis is not None:
                self.figures.append(FigureMaker(made.name.split(".", 1)[1], functools.partial(
                    sweep, theory_side, simulate, figure, axis, sizing, xlabel or axis, ylabel, text),
                    claims=(made.name,)))
            return made

        return register if function is None else register(function)

    def saddle_point(self, declaration, *, name: str = "", symmetries: dict | None = None, network=None,
                     test_error: bool = False, figure: dict | None = None, bias=None, source: str = "",
                     examples: dict | None = None, expect: dict | None = None,
                     **strategies: st.SearchStrategy):
        r"""Register ``data(rng, **data_parameters) -> dict`` (the kernels ``C`` or features ``X`` and the labels
        ``y``) for a declared [`SaddlePointAction`][attnverify.saddle.SaddlePointAction], and the claims every such
        theory gets: ``saddle_point_is_a_minimum`` (the saddle-point equations hold to 1e-9 and the Hessian is positive
        definite), ``saddle_gradient_matches_finite_differences`` (the generated gradient and Hessian against
        central differences and their own error), ``saddle_point_approaches_gp``
        ($\max \lvert U(N) - U_\text{GP}\rvert$ falls as $1/N$: log-log slope $-1 \pm 0.05$ over the first
        $N \to 10N$ where the $O(1/N^2)$ term is below $10^{-2}$ of the $O(1/N)$ one)
        and, for each ``symmetries[label] = (data_map, order_parameter_map)``, ``symmetric_under_<label>`` (the
        solution on the transformed data is the transformed solution). With ``network`` (a function of any of the
        action's and the data function's parameters, the width an integer, returning an
        [`attnverify.saddle.network.Network`][attnverify.saddle.network.Network]) and the data's raw ``inputs``, also
        ``network_gradient_matches_finite_differences`` (its vector–Jacobian product against central differences)
        and ``sampled_networks_match_theory`` (networks sampled from the posterior have the action's own posterior
        mean of the order parameters, [`attnverify.saddle.posterior_mean`][attnverify.saddle.posterior_mean], within
        $z$ MCSE + its stated error); with ``test_error`` also
        ``sampled_networks_generalise_as_theory``, the same for the generalisation error on the data's
        ``test_inputs`` and ``y_test`` (and ``C_test`` and ``C_test_diagonal``, or ``X_test``, for the theory): the
        action's own posterior mean of it where the quadrature applies, else the saddle point's with an $O(1/N)$
        budget.
        ``figure`` (with ``network``): one value for every parameter and a sequence of widths for the width, drawn as
        each order parameter against $1/N$ (one figure each; a matrix by its trace): the saddle point, the action's
        own prediction and sampled networks, the caption giving the fitted slope of
        $\log\lvert\text{networks} - \text{saddle}\rvert$ against $\log N$ with its standard error.
        ``bias`` (with ``network``): a stated bias budget $b$ for the sampled networks' comparisons (a number, one per
        profile, or a function of the drawn parameters, e.g. ``lambda N, **p: 2 / N`` for an $O(1/N)$ effect the
        action leaves out, such as the non-Gaussian fluctuations of a nonlinear unit's features): each allowance
        becomes $z$ MCSE + the stated error + $b$, and the story prints $b$ beside them.
        ``expect``: a verdict other than "holds" for some of these claims, by name (e.g.
        ``{"sampled_networks_match_theory": "refuted"}`` for an approximation the networks are known to leave).
        Strategies for every action parameter, ``temperature`` and every data parameter; ``name`` prefixes the claims'
        names (two actions in one theory).

        ``declaration`` may also be a family: a function of structural parameters (e.g. ``heads``) returning a
        [`SaddlePointAction`][attnverify.saddle.SaddlePointAction] whose parameters are the same for every member. Its
        parameters are drawn like the others (a strategy each) and may also be named by the data function, ``network``
        and ``figure``; every claim then checks the member of its draw, and the report prints the member at their
        simplest draw. A symmetry's maps may name drawn parameters after their first argument
        (``data_map(data, heads, layer)``, ``order_map(order, heads, layer)``), each with a strategy."""
        options = SaddlePointOptions(self.name, declaration, name=name, symmetries=symmetries, network=network,
                                     test_error=test_error, figure=figure, bias=bias, source=source, examples=examples,
                                     expect=expect, strategies=strategies)

        def register(function: Callable) -> Callable:
            built = options.build(function, {c.name for c in self.claims})
            for claims, parameters, counts, shrink in ((built.drawn, options.parameters, options.counts, 20),
                                                       (built.at_figure, built.figure_parameters,
                                                        {"quick": 1, "thorough": 1}, 1)):
                for claim_name, check, statement in claims:
                    check.__wrapped__ = function  # inspect.unwrap(claim.check): the function the theory wrote
                    self._new_claim(options.prefix + claim_name, statement, parameters, check, source,
                                    options.expected(claim_name), counts, shrink)
            self._saddle_equations.register(self, built.member, built.simplest, name, source)
            self.figures.extend(built.figures)
            return function

        return register

    def figure(self, function: Callable[..., TheoryVsSimulation]) -> Callable:
        """Register ``function(rng) -> TheoryVsSimulation`` as a figure of the section (the report draws it)."""
        if len(inspect.signature(function).parameters) != 1:
            raise TypeError(f"figure {function.__name__} must take one argument, the random generator (rng)")
        self.figures.append(FigureMaker(function.__name__, function))
        return function

    # -- what the pipeline reads ----------------------------------------------------------------------------
    @property
    def has_derivations(self) -> bool:
        """Whether the theory has derivations (registered or [`derived`][attnverify.theory_form.Theory.derived]);
        nothing is derived."""
        return bool(self.derivations) or self._derived is not None

    def derivation_list(self) -> list:
        """The derivations, the registered ones first (each derived once per process), then the
        [`derived`][attnverify.theory_form.Theory.derived] ones."""
        return [d() for d in self.derivations] + (list(self._derived()) if self._derived is not None else [])

    def derivation_cost(self) -> str | None:
        """What the derivations derived so far cost this process (derived, or read from the disk), as a line; None
        when none was."""
        spent = [d for d in self.derivations if d.seconds is not None]
        if not spent:
            return None
        return (f"{self.name}: {len(spent)} derivation(s), {sum(len(d().steps) for d in spent)} steps, "
                f"{sum(d.seconds for d in spent):.1f} s to derive or read from the disk, once in this process")

    def claim_list(self) -> list[Claim]:
        """The claims in definition order, then ``<theory>.derivation_steps`` when the theory has derivations
        (every recorded step holds, `attnverify.checks.derivation_steps`)."""
        from ..checks.derivation_steps import claim_name, derivation_steps_claim

        steps = [derivation_steps_claim(self.name, self.derivation_list, "" if self.builtin else self.file)] \
            if self.has_derivations and all(c.name != claim_name(self.name) for c in self.claims) else []
        return list(self.claims) + steps

    def claim_named(self, name: str) -> Claim:
        """The claim ``name`` of [`claim_list`][attnverify.theory_form.Theory.claim_list]; a KeyError when the theory
        has none."""
        found = [c for c in self.claim_list() if c.name == name]
        if not found:
            raise KeyError(f"theory {self.name!r} has no claim {name!r}")
        return found[0]

    def section(self, function: Callable) -> Callable:
        """Register ``function(out_dir, settings, progress) -> Section`` as the theory's report section, in place of the
        default one (title, docstring, derivations and [`figure`][attnverify.theory_form.Theory.figure] figures). It
        only draws: it gets ``out_dir``, a folder that exists, the run's checked
        [`RunSettings`][attnverify.execution.settings.RunSettings] (``settings.store`` holds the experiments it reads)
        and ``progress``, which takes one short line, and returns ``Section(figures=…, tables=…)``; the theory fills in
        its name, title, introduction and derivations ([`build_section`][attnverify.theory_form.Theory.build_section])."""
        arguments.function("section", function, "a function returning a Section")
        self._section = function
        return function

    def experiments(self, function: Callable) -> Callable:
        """Register ``function(settings) -> list`` of
        [`attnverify.execution.store.planned`][attnverify.execution.store.planned] experiments for the run of
        ``settings`` (a [`RunSettings`][attnverify.execution.settings.RunSettings]: its profile, seed, backend), which a
        run computes as tasks ahead of the section (in parallel with ``--workers``); the section and the claims then
        find them in the run's store."""
        arguments.function("experiments", function, "a function returning planned experiments")
        self._plan = function
        return function

    @property
    def plans_experiments(self) -> bool:
        """Whether [`experiments`][attnverify.theory_form.Theory.experiments] registered a plan."""
        return self._plan is not None

    def plan_experiments(self, settings: RunSettings | None = None, **options) -> list:
        """The experiments [`experiments`][attnverify.theory_form.Theory.experiments] plans for the run of ``settings``
        (or of the settings named as keywords) (none without a plan): each a planned experiment, each label once, else
        a TypeError or ValueError naming the theory."""
        from ..execution.store import Planned

        settings = RunSettings.given(settings, **options)
        if self._plan is None:
            return []
        plans = list(self._plan(settings))
        for item in plans:
            if not isinstance(item, Planned):
                raise TypeError(f"plan_experiments of {self.name} must return planned experiments "
                                f"(attnverify.execution.store.planned), got {item!r}")
        labels = [item.label for item in plans]
        if len(set(labels)) != len(labels):
            raise ValueError(f"plan_experiments of {self.name} plans an experiment twice: {labels}")
        return plans

    def build_section(self, out_dir, settings: RunSettings | None = None, *, progress=None, **options):
        """The section for the run of ``settings`` (or of the settings named as keywords: ``profile``, ``backend``,
        ``seed``, ``store``), drawn into ``out_dir`` (created), ``progress`` (one short line at a time) told what it
        does: the function
        [`section`][attnverify.theory_form.Theory.section] registered draws its figures and tables, and the theory fills
        in its name, title, introduction (unless the section gives one) and derivations; without one, the section is the
        title, the file's docstring and the derivations. Either way the [`figure`][attnverify.theory_form.Theory.figure]
        figures (and those of [`monte_carlo`][attnverify.theory_form.Theory.monte_carlo] claims) follow the section's
        own."""
        from ..base.arguments import function
        from ..report.section import Section

        settings = RunSettings.given(settings, **options)
        progress = (lambda message: None) if progress is None else function("progress", progress)
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        derivations = [d() for d in self.derivations]  # the derived() ones only where the section has none
        cost = self.derivation_cost()
        if cost:
            progress(cost)
        drawn = Section()
        if self._section is not None:
            drawn = self._section(out_dir, settings, progress)
            if not isinstance(drawn, Section):
                raise TypeError(f"build_section of {self.name} returned {type(drawn).__name__}, not Section")
        return dataclasses.replace(drawn, theory=drawn.theory or self.name, title=drawn.title or self.title,
                                   introduction=drawn.introduction or self.introduction,
                                   derivations=drawn.derivations or derivations + (
                                       list(self._derived()) if self._derived is not None else []),
                                   figures=[*drawn.figures, *self._draw_figures(out_dir, settings, progress)])

    def _draw_figures(self, out_dir: Path, settings: RunSettings, progress) -> list:
        """The [`figure`][attnverify.theory_form.Theory.figure] figures, each drawn from a random generator seeded by
        the run's seed and its place, or (``figure=``'s) from the numbers it shares with a claim in the run's
        ``store``."""
        from ..report.figures import theory_vs_simulation

        figures = []
        for number, item in enumerate(self.figures):
            progress(f"{self.name}: figure {item.name}")
            data = (item.make(np.random.default_rng([settings.seed, number])) if item.shared is None
                    else item.shared(settings))
            if not isinstance(data, TheoryVsSimulation):
                raise TypeError(f"figure {item.name} of theory {self.name} must return a TheoryVsSimulation, got "
                                f"{type(data).__name__}")
            drawn = theory_vs_simulation(out_dir, f"{self.name}_{item.name}.png", x=data.x, theory=data.theory,
                                         theory_x=data.theory_x, estimates=data.estimates, xlabel=data.xlabel,
                                         ylabel=data.ylabel, caption=data.caption, theory_label=data.theory_label,
                                         curves=data.curves, xscale=data.xscale, yscale=data.yscale)
            drawn.claims = item.claims
            figures.append(drawn)
        return figures

    def __repr__(self) -> str:
        return (f"<Theory {self.name}: {len(self.derivations)} derivation(s), {len(self.claims)} claim(s), "
                f"{len(self.figures)} figure(s), from {self.file}>")

