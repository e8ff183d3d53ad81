"""What ``figure=`` gives a declared saddle-point theory with ``network=``: each order parameter against 1/N, the
saddle point, the action's own prediction and sampled networks at the figure's widths, and the width claim
``sampled_gap_closes_at_the_theory_order`` over the same sweep (the gap between networks and saddle point closes at
the order the theory states: fitted slopes with their standard errors).
"""

from __future__ import annotations

import zlib
from typing import Any, Callable, Mapping

import numpy as np

from ..base.arguments import name_mismatch
from ..checks.comparisons import at_most
from ..checks.evidence import Evidence
from .claims import SaddleSetting
from .network_claims import PREDICTION_SOURCE, SAMPLING, network_at, not_a_network_width, prediction_at, \
    sample_networks
from .solve import gp_point, solve

class NetworkSweep:
    """``figure=``'s sweep of one registration: along the one width ``n`` that ``fixed`` gives as a sequence (every
    other parameter, other layers' widths included, one value), the saddle point of every order parameter against
    1/n, networks sampled at each of those widths (mean ± MCSE at the quick tier's sampler size; the trace of a
    matrix) and the action's own prediction there: from the GP point (1/n = 0) where n is the action's only width,
    from 1/(24·n_min) where other layers stay finite (there n → ∞ is not the GP limit). Widths are checked to be
    whole numbers above D + 1 here, at definition.

    Its numbers are one experiment of the run's store (`in_store`, keyed by ``key`` and the run's seed): the
    figure of each order parameter and the width claim read the same networks, sampled once."""

    def __init__(self, s: SaddleSetting, network: Callable, fixed: Mapping[str, Any], key: str):
        width_names = [w.name for w in s.declaration.widths]
        wanted = set(s.declaration.parameter_names) | {"temperature"} | set(s.data_parameters) | set(s.structure)
        wrong = name_mismatch(sorted(fixed), sorted(wanted), unknown="figure values naming nothing:")
        if wrong:
            raise TypeError("saddle_point figure=: give one value for each of the action's parameters, temperature and "
                            f"the data function's, and a sequence of widths for one of {', '.join(width_names)}" + wrong)
        swept = [name for name in sorted(fixed) if name in wanted - set(s.data_parameters) - set(s.structure)
                 and np.ndim(fixed[name]) > 0]
        if len(swept) != 1 or swept[0] not in width_names:
            raise ValueError(f"saddle_point figure=: exactly one width ({' or '.join(width_names)}) takes a sequence "
                             f"(the figure's one axis), every other parameter one value; got sequences for "
                             f"{', '.join(swept) or 'none'}")
        self.width_name = width_name = swept[0]
        D = s.wishart_size
        given = np.atleast_1d(fixed[width_name]).tolist()
        others = {n: fixed[n] for n in width_names if n != width_name}
        bad = [f"{n} = {v!r}" for n, v in [*((width_name, w) for w in given), *others.items()]
               if not_a_network_width(v, D)]
        self.widths = [] if bad else sorted({int(w) for w in given})
        if bad or len(self.widths) < 2:
            raise ValueError(f"saddle_point figure=: the sampled networks need whole widths above {D + 1} (the "
                             f"Wishart shift), at least two of {width_name}; got "
                             + (", ".join(bad) if bad else f"{self.widths}"))
        self.s, self.network, self.fixed, self.key = s, network, dict(fixed), key
        self.alone = len(width_names) == 1
        held = ", ".join(f"{n} = {int(float(v))}" for n, v in others.items())
        self.limit = (f"from the GP limit (1/{width_name} = 0)" if self.alone else
                      f"with {held} held fixed (1/{width_name} → 0 is not the GP limit while "
                      f"{'it stays' if len(others) == 1 else 'they stay'} finite)")

    def measure(self, rng: np.random.Generator) -> dict:
        """Every order parameter's numbers (name → dict): the saddle's curve, and at each sampled width the networks'
        estimate, the action's prediction with its stated error and the saddle point (the trace of each, for a
        matrix); a name the network does not estimate has no sampled widths."""
        from ..numerics.diagnostics import summarize
        from ..numerics.statistics import Estimate

        s, widths, width_name = self.s, self.widths, self.width_name
        names = [op.name for op in s.declaration.order_parameters]
        action_values, temperature, data_parameters = s.split({**self.fixed, width_name: float(widths[0])})
        data = s.draw(data_parameters, rng)
        grid = np.linspace(0.0, 1.0 / widths[0], 25)[1:]
        gp = gp_point(s.declaration, **action_values) if self.alone else None
        curves = {name: ([_scalar(gp[name])] if self.alone else []) for name in names}
        start = None
        for inverse in grid:  # from the widest: continuation from the GP side
            start = solve(s.declaration, data, temperature=temperature, start=start,
                          **{**action_values, width_name: 1.0 / inverse})
            for name in names:
                curves[name].append(_scalar(start[name]))
        estimates = {name: [] for name in names}
        unconverged = {name: [] for name in names}
        for width in widths:
            made = network_at(s, self.network, {**action_values, width_name: width},
                              {**data_parameters, **{n: self.fixed[n] for n in s.structure}}, data)
            sampled = sample_networks(s, made, data, temperature, int(rng.integers(2**31)), None, SAMPLING["quick"])
            every = all(one.converged for one in sampled.summaries.values())
            for name in names:
                if name not in sampled.draws:
                    continue  # the network estimates no such order parameter: the theory's curve alone
                draws = sampled.draws[name]  # (C, draws) or (C, draws, n, n)
                summary = summarize(np.trace(draws, axis1=2, axis2=3) if draws.ndim == 4 else draws)
                estimates[name].append(Estimate(mean=float(summary.mean), standard_error=float(summary.mcse),
                                                samples=int(draws.shape[0] * draws.shape[1])))
                if not (summary.converged and every):
                    unconverged[name].append(width)
        sampled_widths = list(widths) if any(estimates.values()) else []
        predictions = [prediction_at(s, {**action_values, width_name: float(w)}, temperature, data)
                       for w in sampled_widths]
        out = {}
        for name in names:
            size = next(op.size for op in s.declaration.order_parameters if op.name == name)
            kept = predictions if estimates[name] else []
            out[name] = dict(
                curve=curves[name], theory_x=[*([0.0] if self.alone else []), *grid],
                widths=sampled_widths if estimates[name] else [], estimates=estimates[name],
                unconverged=unconverged[name], predictions=kept,
                predicted=[_scalar(one.mean[name]) for one in kept],
                # the trace's error bounded by the sum of the diagonal's (each entry's stated error bounds its own)
                prediction_errors=[float(np.sum(np.diag(np.atleast_2d(one.error[name])))) for one in kept],
                saddles=[_scalar(one.saddle[name]) for one in kept], width_name=width_name,
                label=f"tr {name}" if size else name)
        return out

    def measured(self, *, sweep: str, seed: int) -> dict:
        """`measure` at the run's ``seed`` (its generator seeded by the seed and the sweep's key): the store's
        experiment, ``sweep`` this sweep's `key` (which, with the seed, keys its entry)."""
        if sweep != self.key:
            raise ValueError(f"sweep must be this sweep's key {self.key!r}, got {sweep!r}")
        return self.measure(np.random.default_rng([seed, zlib.crc32(sweep.encode())]))

    def in_store(self, settings) -> dict:
        """`measured` at the run's seed through the run's store (of its ``settings``): computed once per run, whoever
        asks first."""
        return settings.store.get(self.measured, sweep=self.key, seed=settings.seed)


def _scalar(value) -> float:
    value = np.asarray(value, dtype=float)
    return float(np.trace(value)) if value.ndim == 2 else float(value)


def sampled_networks_figure(sweep: NetworkSweep, name: str) -> Callable:
    """``figure(rng) -> dict`` (the fields of a
    [`attnverify.theory_form.TheoryVsSimulation`][attnverify.theory_form.TheoryVsSimulation], which the theory wraps it
    in): the order parameter ``name`` (its trace when it is a matrix) against 1/n from ``sweep``'s numbers, the saddle
    point's curve, the action's prediction and the sampled networks (none where the network estimates no ``name``: the
    caption says so); ``figure.in_store(settings)`` the same from the run's store. The theory registers one per order
    parameter."""
    if name not in [op.name for op in sweep.s.declaration.order_parameters]:
        raise ValueError(f"name must be an order parameter of the action "
                         f"({', '.join(op.name for op in sweep.s.declaration.order_parameters)}), got {name!r}")
    width_name, limit = sweep.width_name, sweep.limit

    def draw(m: dict) -> dict:
        curve, theory_x, sampled_widths, estimates = m["curve"], m["theory_x"], m["widths"], m["estimates"]
        label, unconverged, predictions = m["label"], m["unconverged"], m["predictions"]
        if not sampled_widths:
            return dict(x=[], estimates=[], theory=curve, theory_x=theory_x, xlabel=f"1/{width_name}",
                        ylabel=label, caption=f"{label}: the saddle point {limit}; the network estimates no {name}, "
                                              "so no sampled networks are drawn.")
        source = PREDICTION_SOURCE[predictions[0].method]
        return dict(
            x=[1.0 / w for w in sampled_widths], estimates=estimates, theory=curve, theory_x=theory_x,
            xlabel=f"1/{width_name}", ylabel=label, theory_label="saddle point",
            curves=((f"the action's prediction ({source})", [1.0 / w for w in sampled_widths], m["predicted"]),),
            caption=f"{label}: the saddle point {limit}, the action's own posterior mean ({source}, at the sampled "
                    f"widths; largest stated error {max(float(np.max(one.error[name])) for one in predictions):.2g}) "
                    f"and networks sampled from the posterior at {width_name} = "
                    f"{', '.join(map(str, sampled_widths))} (HMC, readout integrated out; Markov chain standard "
                    "errors, from the effective sample size). "
                    + gap_order_sentence(sampled_widths, [e.mean for e in estimates],
                                         [e.standard_error for e in estimates], m["saddles"], width_name,
                                         m["predicted"]) + " "
                    + (f"Not converged (R-hat/ESS) at {width_name} = {unconverged}." if unconverged
                       else "Every width passed the R-hat/ESS gate."))

    def figure(rng: np.random.Generator) -> dict:
        return draw(sweep.measure(rng)[name])

    figure.in_store = lambda settings: draw(sweep.in_store(settings)[name])
    return figure


RESOLVED_GAP = 3.0
"""A gap between networks and saddle point enters the width fit only where it exceeds this many of its standard
errors (its logarithm's error, SE/gap, is then below 1/3 and the linearised error of the log holds)."""


def gap_slope(widths, sampled, errors, saddle) -> tuple[float, float] | None:
    """(slope, standard error) of ln|sampled − saddle| against ln N over the widths, by weighted least squares with
    the linearised variance (SE/gap)² of each log gap (the saddle values exact): the order at which the theory's gap
    closes, −1 where the saddle point is right to O(1/N) and its O(1/N) term does not vanish. None where fewer than
    two gaps exceed `RESOLVED_GAP` standard errors (the slope is not resolved)."""
    fit = _gap_fit(widths, sampled, errors, saddle)
    return None if fit is None else (fit.slope, fit.slope_standard_error)


def _gap_fit(widths, sampled, errors, saddle):
    """`gap_slope`'s `LineFit` over the resolved gaps, or None."""
    from ..numerics.statistics import fit_line

    widths, sampled = np.asarray(widths, dtype=float), np.asarray(sampled, dtype=float)
    errors, gaps = np.asarray(errors, dtype=float), np.abs(sampled - np.asarray(saddle, dtype=float))
    kept = gaps > RESOLVED_GAP * errors
    if kept.sum() < 2:
        return None
    return fit_line(np.log(widths[kept]), np.log(gaps[kept]), standard_errors=errors[kept] / gaps[kept])


def gap_order_sentence(widths, sampled, errors, saddle, width_name: str, predicted=None) -> str:
    """The caption's sentences on `gap_slope`: the fitted slope ± its standard error against the −1 of a gap of
    order 1/N, or why none is given; with ``predicted`` (the action's prediction at the widths), on which side of
    the saddle point the networks and the prediction lie where the gap is resolved."""
    fitted = gap_slope(widths, sampled, errors, saddle)
    if fitted is None:
        return (f"The gap between networks and saddle point is resolved (> {RESOLVED_GAP:g} SE) at fewer than two "
                f"widths: no slope is fitted.")
    slope, error = fitted
    text = (f"The gap between networks and saddle point falls as {width_name}^({slope:.3g} ± {error:.2g}) (fitted "
            f"slope of ln|gap| against ln {width_name} ± its standard error; −1 for a gap of order 1/{width_name}, "
            f"{abs(slope + 1) / error:.1f} SE away).")
    if predicted is None:
        return text
    sampled, saddle, predicted = (np.asarray(v, dtype=float) for v in (sampled, saddle, predicted))
    resolved = np.abs(sampled - saddle) > RESOLVED_GAP * np.asarray(errors, dtype=float)

    def sides(values) -> str:
        found = {"below" if v < s else "above" for v, s in zip(values[resolved], saddle[resolved]) if v != s}
        return " and ".join(sorted(found)) or "at"

    networks, prediction = sides(sampled), sides(predicted)
    return text + (f" Where it is resolved the networks lie {networks} the saddle point, the action's prediction "
                   f"{prediction} it.")


def gap_closes_at_the_theory_order(sweep: NetworkSweep, stated_bias: Callable | None = None) -> Callable:
    """The width claim over ``figure=``'s widths (`gap_order_evidence`) for the kernel's order parameter (or
    its trace, for a matrix), from ``sweep``'s numbers in the run's store at the run's seed: the networks and
    predictions the figure draws. ``stated_bias(p, ctx)``: the theorist's bias budget per entry at parameters p,
    read at each width (times the matrix's size, for its trace)."""
    kernel = sweep.s.declaration.kernel.name
    size = max(sweep.s.declaration.kernel.size, 1)

    def check(p, ctx) -> Evidence:
        m = sweep.in_store(ctx.settings)[kernel]
        if len(m["widths"]) < 2:
            return Evidence(holds=False, relation="custom",
                            inconclusive=f"the network estimates {m['label']} at fewer than two widths")
        biases = None if stated_bias is None else \
            [size * stated_bias({**p, m["width_name"]: width}, ctx) for width in m["widths"]]
        return gap_order_evidence(m["widths"], [e.mean for e in m["estimates"]],
                                  [e.standard_error for e in m["estimates"]], m["saddles"], m["predicted"],
                                  m["prediction_errors"], m["width_name"], m["unconverged"], biases)
    return check


WIDTH_Z = 5.0
"""Standard errors of the networks' fitted slope the width claim allows (beyond the prediction's own bias)."""


def gap_order_evidence(widths, sampled, errors, saddles, predicted, prediction_errors, width_name: str,
                       unconverged=(), biases=None) -> Evidence:
    """The width claim: the gap between networks and saddle point closes at the order the theory states. Over the
    widths where the gap is resolved (> `RESOLVED_GAP` SE), the networks' slope of ln|gap| against ln N
    (`gap_slope`, weighted by the linearised variances) against the theory's: the same weighted fit of
    ln|E_N − u*_N|, the action's own prediction less the saddle point (−1 plus the curvature its next order
    carries). Holds where they differ by at most `WIDTH_Z` SE + the bias the prediction's stated error e_N
    allows (each log gap moved by up to −ln(1 − r_N), r_N = e_N/|E_N − u*_N|, through the fit's coefficients);
    inconclusive where fewer than two gaps are resolved, a width did not converge, or some r_N ≥ 1 (no order to
    compare: the stated error is as large as the shift). The order is read on |gap|, so the side is checked too:
    refuted where, at a width whose gap exceeds `WIDTH_Z` SE (its sign decided at the claim's z) plus the stated
    bias budget there (``biases``, one per width: what the action may leave out), the networks and the prediction
    lie on opposite sides of the saddle point (a correction of the wrong sign, whatever its order)."""
    widths, sampled, errors = (np.asarray(v, dtype=float) for v in (widths, sampled, errors))
    saddles, predicted, prediction_errors = (np.asarray(v, dtype=float) for v in (saddles, predicted,
                                                                                  prediction_errors))
    gaps, shifts = np.abs(sampled - saddles), np.abs(predicted - saddles)
    kept = gaps > RESOLVED_GAP * errors
    figures = {"widths": widths.tolist(), "sampled": sampled.tolist(), "saddles": saddles.tolist(),
               "predicted": predicted.tolist(), "gaps": gaps.tolist(), "standard_errors": errors.tolist(),
               "predicted_shifts": shifts.tolist(), "prediction_errors": prediction_errors.tolist()}
    if unconverged:
        return Evidence(holds=False, relation="custom", figures=figures,
                        inconclusive=f"the sampler has not converged at {width_name} = {list(unconverged)}: its Monte "
                                     "Carlo errors do not count; draw more")
    if kept.sum() < 2:
        return Evidence(holds=False, relation="custom", figures=figures,
                        inconclusive=f"the gap between networks and saddle point is resolved (> {RESOLVED_GAP:g} SE) "
                                     f"at fewer than two of {width_name} = {widths.astype(int).tolist()}: draw more")
    ratio = prediction_errors[kept] / shifts[kept]
    if np.any(ratio >= 1):
        return Evidence(holds=False, relation="custom", figures=figures,
                        inconclusive="the prediction's stated error is as large as its shift from the saddle point at "
                                     f"{width_name} = {widths[kept][ratio >= 1].astype(int).tolist()}: no order to "
                                     "compare")
    fit = _gap_fit(widths, sampled, errors, saddles)
    slope, se, coefficients = fit.slope, fit.slope_standard_error, np.array(fit.slope_weights)  # slope = Σ c_i y_i
    theory = float(coefficients @ np.log(shifts[kept]))
    bias = float(np.abs(coefficients) @ -np.log1p(-ratio))
    difference = abs(slope - theory)
    # every kept shift exceeds its stated error (r_N < 1 above): the prediction's side is decided there
    stated = np.zeros_like(gaps) if biases is None else np.asarray(biases, dtype=float)
    decided = kept & (gaps > WIDTH_Z * errors + stated)
    opposite = decided & (np.sign(sampled - saddles) != np.sign(predicted - saddles))
    figures.update(slope=slope, slope_standard_error=se, theory_slope=theory, bias=bias)
    if biases is not None:
        figures.update(stated_biases=stated.tolist())
    side = ""
    if opposite.any():
        below = sampled[opposite][0] < saddles[opposite][0]
        side = (f"; the networks lie {'below' if below else 'above'} the saddle point at {width_name} = "
                f"{widths[opposite].astype(int).tolist()} (> {WIDTH_Z:g} SE"
                f"{'' if biases is None else ' + the stated bias'}), the action's prediction "
                f"{'above' if below else 'below'} it: a correction of the wrong sign")
    return at_most(difference, WIDTH_Z * se + bias,
                   note=f"|networks − saddle| falls as {width_name}^({slope:.3g} ± {se:.2g}) over {width_name} = "
                        f"{widths[kept].astype(int).tolist()}; the action's prediction less the saddle point as "
                        f"{width_name}^({theory:.3g}); allowed {WIDTH_Z:g} SE + the prediction's stated-error bias "
                        f"{bias:.2g}{side}",
                   figures=figures, labels=("|networks' slope − theory's|", "allowance"),
                   conditions={"networks on the prediction's side of the saddle point": not opposite.any()})

