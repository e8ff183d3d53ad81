r"""The minimum of a declared saddle-point action: from the GP point (the entropy's own minimum, the $N \to \infty$
limit) or a given start, by the trust-region Newton method on the exact Hessian (`attnverify.numerics.trust_region`),
accepted only where the saddle-point equations hold, $\max \lvert\partial(S/N)/\partial e\rvert \le \text{tolerance}$
over the relative entries $e$ of the order parameters ($U \to R(I + E)R^\top$ for $U = RR^\top$, $q \to q(1 + e)$:
a tolerance no rescaling of an order parameter changes), and the Hessian over the entries is positive definite.
Where the Newton iteration from the GP point fails, continuation in $N$ brings the solution down from a width near
the GP limit, and, where that fails too, continuation in $T$ from a temperature near it (both limits leave the
entropy alone: the GP point).
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import numpy as np

from ..base import arguments, blas
from ..base.backend import for_size, get_backend, on_device, to_numpy
from ..numerics import trust_region
from ..numerics.kernel_energy import SPACES, energy_for
from ..numerics.symmetric import triangle
from .action import NumericAction
from .declaration import SaddlePointAction


class SaddlePointError(RuntimeError):
    """The solver did not reach a minimum of the action (the equations unsolved, or the Hessian not positive)."""


@dataclass(frozen=True)
class Solution:
    r"""A minimum of $S$: ``order_parameters`` (name → float or symmetric matrix), the action $S$, its energy part
    $\tfrac12 E$ and entropy $\mathcal{L}$, the ``residual`` $\max \lvert\partial(S/N)/\partial e\rvert$ over the
    relative entries, the eigenvalues of $\partial^2(S/N)/\partial u\,\partial u'$, the size of one more Newton step
    in $u$ plus the step the gradient's round-off would move it by (``error_estimate``, the largest absolute error of
    the entries $u$: the iteration's own error, from the gradient as computed, and its round-off, sampled by
    factorising the kernel in other orders; the solver's error, not the $O(1/N)$ of reading the theory at its saddle
    point, which `posterior_mean` gives), and how the solver got there (``stopped``: why its iteration ended)."""

    order_parameters: dict
    action: float
    energy: float
    entropy: float
    residual: float
    hessian_eigenvalues: np.ndarray
    error_estimate: float
    converged: bool
    iterations: int
    evaluations: int
    seconds: float
    parameters: dict
    temperature: float | None
    message: str = ""
    entries: np.ndarray = field(default=None, repr=False)
    stopped: str = ""

    @property
    def is_minimum(self) -> bool:
        return bool(self.hessian_eigenvalues.size and self.hessian_eigenvalues.min() > 0)

    @property
    def at_round_off_floor(self) -> bool:
        """Whether the iteration stopped where float64's round-off of the gradient keeps the residual from falling
        further (`trust_region.ROUND_OFF_FLOOR`): the equations hold to that floor, above the tolerance asked, and
        ``error_estimate`` says how far u may be from the minimum. An action unbounded below stops here too, with a
        residual that overflows and no minimum (``is_minimum`` False): read ``residual`` beside it."""
        return self.stopped == trust_region.ROUND_OFF_FLOOR

    def __getitem__(self, name: str):
        return self.order_parameters[name]

    def matrix(self, name: str) -> np.ndarray:
        r"""The order parameter ``name`` as a 2-D array (a scalar as $1 \times 1$)."""
        return np.atleast_2d(np.asarray(self.order_parameters[name], dtype=float))


def training_data(data: Mapping[str, Any]) -> None:
    """Refuse training data that are not a dict with the labels y and either the kernels C or the features X, by
    what they hold."""
    if not isinstance(data, Mapping) or "y" not in data or ("C" in data) == ("X" in data):
        raise ValueError("data must be a dict with the labels y and either the kernels C or the features X, got "
                         f"{sorted(map(str, data)) if isinstance(data, Mapping) else type(data).__name__}")


def data_energy(data: Mapping[str, Any], temperature: float, *, space: str = "auto", backend=None):
    r"""$E = \ln\det(K + T \cdot I) + Y^\top (K + T \cdot I)^{-1} Y$ for ``data``: ``C`` (kernels,
    $(\mathcal{H}, \mathcal{H}, P, P)$, or $(P, P)$ for a scalar kernel order parameter) or ``X`` (features,
    $(P, N_0, \mathcal{H})$, or $(P, N_0)$), and the labels ``y``. On ``backend`` where its arrays are large enough to
    pay for the launches (`for_size` of the larger of the data and the $P \times P$ kernel), else on the host, the
    data moved there once."""
    training_data(data)
    space = arguments.one_of("space", space, SPACES)
    key = "C" if "C" in data else "X"
    # checked before any cast: numpy's cast of a complex array to float drops the imaginary part
    inputs = data[key] if on_device(data[key]) else arguments.array(key, data[key], allow_empty=True)
    P = int(inputs.shape[-1] if key == "C" else inputs.shape[0]) if inputs.ndim else 0
    asked = get_backend(backend)
    backend = for_size(asked, max(int(inputs.size), P * P))
    y = data["y"]
    if backend is not asked:  # small work asked of the device: moved to the host once (numpy asked: refused there)
        inputs, y = to_numpy(inputs), to_numpy(y)
    with blas.threads(1):  # the checks' factorisations are P × P, small as the solver's (base.blas)
        if key == "C":
            if inputs.ndim == 2 and inputs.shape[0] != inputs.shape[1]:
                raise ValueError(f"C must be a P × P kernel (or the path kernels, (𝓗, 𝓗, P, P)), got shape "
                                 f"{tuple(inputs.shape)}")
            C = inputs[None, None] if inputs.ndim == 2 else inputs
            return energy_for(C=C, y=y, temperature=temperature, backend=backend)
        X = inputs[:, :, None] if inputs.ndim == 2 else inputs
        return energy_for(X=X, y=y, temperature=temperature, space=space, backend=backend)


def _minimise(action: NumericAction, theta: np.ndarray, tolerance: float, max_iterations: int):
    # an action unbounded below overflows along the way: the iteration treats non-finite values as undefined,
    # and the solution says where it stopped (`_solution`)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return trust_region.minimise(action, action.hessian, action.residual, theta, tolerance=tolerance,
                                     max_iterations=max_iterations)


def _solution(action: NumericAction, theta: np.ndarray, result, tolerance: float, t0: float,
              temperature) -> Solution:
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # where an unbounded action overflowed
        E, L, u, g = action.parts(theta)[:4]
        H = action.entries_hessian(theta)
        residual = action.residual(theta)
    finite = bool(np.all(np.isfinite(H)))  # an action unbounded below sends the iterate where it overflows
    eigenvalues = np.linalg.eigvalsh(H) if finite else np.full(H.shape[0], np.nan)
    if finite and eigenvalues.min() > 0:
        # one more Newton step, and the largest step the gradient's round-off (samples: `roundoff_gradients`) would move
        # u by
        roundoff = action.roundoff_gradients(theta)
        if np.all(np.isfinite(roundoff)):
            steps = np.linalg.solve(H, np.column_stack([g, roundoff.T]) / action.scale)
            error = float(np.max(np.abs(steps[:, 0])) + np.max(np.abs(steps[:, 1:])))
        else:
            error = float("inf")
    else:
        error = float("inf")
    declaration = action.declaration
    converged = residual <= tolerance
    lowest = (f"smallest Hessian eigenvalue {eigenvalues.min():.3g}" if finite else
              "the Hessian is not finite at the last iterate (is the action bounded below?)")
    message = (f"max |∂(S/N)/∂e| = {residual:.3g} (tolerance {tolerance:g}) after {result.iterations} trust-region "
               f"Newton iterations ({result.stopped}); {lowest}; estimated error of u {error:.2g}")
    return Solution(order_parameters=declaration.split(u), action=0.5 * E + L, energy=0.5 * E, entropy=L,
                    residual=residual, hessian_eigenvalues=eigenvalues, error_estimate=error, converged=converged,
                    iterations=result.iterations, evaluations=action.evaluations, seconds=time.perf_counter() - t0,
                    parameters=dict(zip(declaration.parameter_names, action.parameters)), temperature=temperature,
                    message=message, entries=u, stopped=result.stopped)


def domain_point(declaration: SaddlePointAction) -> np.ndarray:
    """Identity matrices and unit scalars (their entries): a point of the domain, where the search for the
    entropy's own minimum starts."""
    return np.concatenate([np.ones(1) if op.size == 0 else np.eye(op.size)[triangle(op.size)]
                           for op in declaration.order_parameters])


def _start(declaration: SaddlePointAction, start) -> np.ndarray:
    if start is None:
        return domain_point(declaration)
    if isinstance(start, Solution):
        return np.array(start.entries, dtype=float)
    return declaration.join(start)


def gp_point(declaration: SaddlePointAction, *, tolerance: float = 1e-12, max_iterations: int = 200,
             raise_on_failure: bool = True, **parameters) -> Solution:
    r"""The GP limit: the minimum of the entropy $\mathcal{L}$ alone ($\mathcal{L} = O(N)$ outweighs the energy's
    $O(P)$ as $N \to \infty$). It depends on the parameter values only; the last few are kept (each solve and sweep
    point starts here)."""
    values = declaration.parameter_values(parameters)
    tolerance = arguments.positive("tolerance", tolerance)
    max_iterations = arguments.integer("max_iterations", max_iterations, 1)
    raise_on_failure = arguments.flag("raise_on_failure", raise_on_failure)
    solution = _entropy_minimum(declaration, values, tolerance, max_iterations)
    if not (solution.converged and solution.is_minimum):
        message = f"the entropy has no minimum the solver could reach (the GP point): {solution.message}"
        if raise_on_failure:
            raise SaddlePointError(message)
        return replace(solution, converged=False, message=message)
    return solution


@functools.lru_cache(maxsize=64)
def _entropy_minimum(declaration: SaddlePointAction, values: tuple, tolerance: float, max_iterations: int) -> Solution:
    action = NumericAction(declaration, None, values, with_energy=False)
    t0 = time.perf_counter()
    theta = action.parametrisation.theta(_start(declaration, None))
    _check_start(action, theta, "identity matrices and unit scalars, where the search for its minimum (the GP point) "
                                "starts")
    result = _minimise(action, theta, tolerance, max_iterations)
    return _solution(action, result.x, result, tolerance, t0, None)


def given_temperature(temperature, parameters: Mapping[str, Any]) -> float:
    """The temperature T > 0, or, where it is missing, a TypeError that names a misspelt keyword among the others."""
    if temperature is None:
        close = arguments.closest("temperature", list(parameters), cutoff=0.6)
        hint = f"; {close}={parameters[close]!r} is no parameter: did you mean temperature=?" if close else ""
        raise TypeError(f"temperature must be given (temperature=T, T > 0){hint}")
    return arguments.positive("temperature", temperature)


def solve(declaration: SaddlePointAction, data: Mapping[str, Any], *, temperature: float | None = None, start=None,
          tolerance: float = 1e-9, max_iterations: int = 500, space: str = "auto", backend=None,
          raise_on_failure: bool = True, continuation: bool = True, **parameters) -> Solution:
    r"""The minimum of $S = \tfrac12 \ln\det(K + T \cdot I) + \tfrac12 Y^\top (K + T \cdot I)^{-1} Y + \mathcal{L}$ for
    ``data`` (see [`data_energy`][attnverify.saddle.solve.data_energy]: from features $X$ it works in the
    $N_0 \cdot \mathcal{H}$-dimensional feature space when $N_0 \cdot \mathcal{H} < P$, so an iteration's cost does not
    grow with $P$) at the parameter values given by name (the widths among them) and ``temperature`` $T$. ``start``:
    name → value, or a [`Solution`][attnverify.saddle.solve.Solution] (a neighbour's, for sweeps:
    [`attnverify.saddle.sweep`][attnverify.saddle.sweep]); by default the GP point, and, if the Newton iteration from
    there fails, continuation in $N$ from $10^4 N$ down to $N$, then in $T$ from $10^4 T$ down to $T$
    (``continuation``: True for both, "width" or "temperature" for one, False for none)."""
    if not isinstance(declaration, SaddlePointAction):
        raise TypeError(f"declaration must be a SaddlePointAction, got {type(declaration).__name__}")
    temperature = given_temperature(temperature, parameters)
    values = declaration.parameter_values(parameters)
    given = data.get("C") if isinstance(data, Mapping) else None
    if np.ndim(given) == 4:  # the paths first: the checks of C's symmetry read them as given
        _same_paths(declaration, int(np.shape(given)[0]))
    energy = data_energy(data, temperature, space=space, backend=backend)
    return solve_energy(declaration, energy, values, temperature=temperature, start=start, tolerance=tolerance,
                        max_iterations=max_iterations, raise_on_failure=raise_on_failure, continuation=continuation)


def solve_energy(declaration: SaddlePointAction, energy, values: tuple, *, temperature: float, start=None,
                 tolerance: float = 1e-9, max_iterations: int = 500, raise_on_failure: bool = True,
                 continuation: bool = True) -> Solution:
    """[`solve`][attnverify.saddle.solve.solve] on a prepared energy (from
    [`data_energy`][attnverify.saddle.solve.data_energy], or its ``at_temperature``) and the parameter values in
    declaration order ([`SaddlePointAction.parameter_values`][attnverify.saddle.SaddlePointAction.parameter_values]):
    what a sweep calls per grid point."""
    tolerance = arguments.positive("tolerance", tolerance)
    max_iterations = arguments.integer("max_iterations", max_iterations, 1)
    raise_on_failure = arguments.flag("raise_on_failure", raise_on_failure)
    if continuation not in (True, False, "width", "temperature"):
        raise ValueError(f"continuation must be True, False, 'width' or 'temperature', got {continuation!r}")
    _same_paths(declaration, energy.paths)
    t0 = time.perf_counter()
    with blas.threads(1):
        if start is None:
            gp = gp_point(declaration, raise_on_failure=raise_on_failure,
                          **dict(zip(declaration.parameter_names, values)))
            if not gp.converged:
                return replace(gp, temperature=temperature)
            start_entries = gp.entries
        else:
            start_entries = _start(declaration, start)
        action = NumericAction(declaration, energy, values)
        theta = action.parametrisation.theta(start_entries)
        _check_temperature(action, start_entries, temperature)
        _check_start(action, theta, "the GP point" if start is None else "the start given")
        result = _minimise(action, theta, tolerance, max_iterations)
        solution = _solution(action, result.x, result, tolerance, t0, temperature)
        failed = start is None and not (solution.converged and solution.is_minimum)
        if failed and continuation in (True, "width"):
            solution = _continued(declaration, lambda width: (energy, scaled_widths(declaration, values, width)),
                                  declaration.scale(values), "N", start_entries, tolerance, max_iterations, t0)
            failed = not (solution.converged and solution.is_minimum)
        if failed and continuation in (True, "temperature"):
            solution = _continued(declaration, lambda t: (energy.at_temperature(t), values),
                                  temperature, "T", start_entries, tolerance, max_iterations, t0)
    if raise_on_failure and not (solution.converged and solution.is_minimum):
        what = "did not converge" if not solution.converged else "is not a minimum (Hessian not positive definite)"
        hint = "" if solution.converged else (" (raise_on_failure=False returns the solution where it stopped, with "
                                              "its error_estimate; tolerance= sets the test)")
        raise SaddlePointError(f"the saddle point {what}: {solution.message}{hint}")
    return solution


def _same_paths(declaration: SaddlePointAction, paths: int) -> None:
    """Refuse data with another number of paths than the kernel order parameter's size."""
    size = max(declaration.kernel.size, 1)
    if paths != size:
        raise ValueError(f"the kernel order parameter {declaration.kernel.name} is {size} × {size} but the data have "
                         f"{paths} path{'s' * (paths != 1)}: give C of shape ({size}, {size}, P, P) "
                         f"or X of shape (P, N0, {size})" + ("" if size > 1 else " (or C (P, P), X (P, N0))"))


def _check_start(action: NumericAction, theta: np.ndarray, where: str) -> None:
    """Refuse a start where S/N or its gradient is not finite, naming the part that is not (the data's energy, too
    large for float64; the entropy, undefined there), instead of the minimiser's refusal of its objective."""
    with np.errstate(all="ignore"):
        value, gradient = action(theta)
        if np.isfinite(value) and np.all(np.isfinite(gradient)):
            return
        try:
            E, L = action.parts(theta)[:2]
        except (np.linalg.LinAlgError, ValueError):
            E, L = math.nan, math.nan
    if not action.with_energy:
        raise ValueError(f"the entropy 𝓛 or its gradient is not finite at {where}: 𝓛 = {L:.3g} (undefined there, or "
                         "its gradient infinite?)")
    raise ValueError(f"the action S = ½E + 𝓛 or its gradient is not finite at the solver's start ({where}): the data's "
                     f"energy ½E = {0.5 * E:.3g} (labels y or kernels too large for float64?), the entropy 𝓛 = {L:.3g} "
                     f"(undefined there, or its gradient infinite?)")


def _check_temperature(action: NumericAction, entries: np.ndarray, temperature: float) -> None:
    """Refuse a temperature below ε·Tr K(U) at the start where the kernel K(U) is singular in float64 (always in
    the feature space, where N0·𝓗 < P): T·I, which alone makes K(U) + T·I definite, is then lost in the round-off
    of K, and the action is not defined numerically. (A K(U) definite by itself needs no T·I.)"""
    traces = getattr(action.energy, "path_traces", None)  # T_ab = Σ_μ C^{μμ}_ab: Tr K(U) = Σ U_ab T_ab
    if traces is None:
        return
    R = action.kernel_factor(entries)
    lowest = float(np.finfo(float).eps * abs(np.sum((R @ R.T) * traces)))
    if temperature >= lowest:
        return
    if not hasattr(action.energy, "gram") and hasattr(action.energy, "kernel"):
        if float(action.energy.backend.xp.linalg.eigvalsh(action.energy.kernel(R))[0]) > lowest:
            return
    raise ValueError(f"temperature must be in [{lowest:.3g}, inf) for these data: the kernel K(U) at the solver's "
                     f"start is singular in float64, and below ε·Tr K(U) the T·I that makes K(U) + T·I definite is "
                     f"lost in its round-off; got {temperature!r}")


def scaled_widths(declaration: SaddlePointAction, values: tuple, width: float) -> tuple:
    r"""The parameter values with every width scaled by $\text{width}/\max n$ (ratios between layers kept)."""
    factor = float(width) / declaration.scale(values)
    indices = set(declaration._width_indices)
    return tuple(v * factor if k in indices else v for k, v in enumerate(values))


def _continued(declaration, problem, target: float, label: str, gp_entries, tolerance, max_iterations,
               t0) -> Solution:
    """Continuation in N (or T): solve at 10⁴ times the target (near the GP point), then at values a factor √10
    apart down to it, each from the last solution (the intermediate ones only as starts: to 1e-8, or the tolerance
    if looser). ``problem(value)`` gives the energy and the parameter values there. A step that fails
    ends the continuation with a solution marked unconverged that is the one where it stopped: its temperature and
    parameter values are that step's, and ``stopped`` names the step (never the round-off floor of the target)."""
    entries = gp_entries
    ladder = target * 10.0 ** np.arange(4.0, -0.25, -0.5)
    for step, value in enumerate(ladder):
        last = step == len(ladder) - 1
        energy, values = problem(float(value) if not last else target)
        action = NumericAction(declaration, energy, values)
        goal = tolerance if last else max(tolerance, 1e-8)
        result = _minimise(action, action.parametrisation.theta(entries), goal, max_iterations)
        solution = _solution(action, result.x, result, goal, t0, energy.temperature)
        if not (solution.converged and solution.is_minimum):
            if last:
                return solution
            where = f"continuation in {label} stopped at {label} = {value:.4g} (target {target:g})"
            return replace(solution, converged=False, stopped=where, message=f"{where}: {solution.message}")
        entries = solution.entries
    return solution
