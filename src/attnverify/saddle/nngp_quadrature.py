"""The NNGP kernel K(x, y) = E_w[φ(w·x) φ(w·y)], w ~ N(0, I/d), of an activation φ at pairs of inputs
([`nngp_kernel`][attnverify.saddle.network.nngp_kernel]): with a = |x|²/d, b = |y|²/d and cos θ = x·y/(|x||y|),

    K = E_{z₁,z₂}[φ(√a z₁) φ(√b (cos θ z₁ + sin θ z₂))],  z₁, z₂ ~ N(0, 1) independent,          (1)

by the closed form of [`kernel_derivation`][attnverify.saddle.activations.kernel_derivation] where there is one, else
by a float64 Gauss–Legendre quadrature of (1) in polar coordinates over sectors of the (z₁, z₂) plane, cut where u, v
cross 0 or a kink of φ, with its error estimate
([`kernel_quadrature`][attnverify.saddle.nngp_quadrature.kernel_quadrature]).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable

import numpy as np

from ..base import arguments
from ..derivations.gaussian import QuadratureShort
from ..derivations.gaussian.jumps import jump_lines
from ..derivations.gaussian.panels import composite_rule
from ..execution import tasks
from .activations import Activation, Z, activation, closed_form_kernel

RADIUS = 10.0
"""The radial integral of (1) in polar coordinates stops at ρ = 10: beyond, the Gaussian holds e^{−50} ≈ 2e-22 of
its mass, and the tail is estimated ([`kernel_quadrature`][attnverify.saddle.nngp_quadrature.kernel_quadrature])."""

TAIL_RADII = RADIUS * np.array([1.0, 1.2, 1.4, 1.7, 2.0, 2.5])
"""Radii beyond RADIUS where |φ(u)φ(v)| is looked at for the tail's estimate (`_tail`)."""

RULE, COARSE = 16, 12
"""Gauss–Legendre nodes per panel of the rule whose value is taken, and of the rule beside it on the same panels whose
difference from it is the error estimate (measured on ReLU(z − 1): the 12-node rule already within 10⁻¹⁵ of
E|φφ| of a 24-node one, the 8-node rule 10⁻¹² off: a coarser partner would only inflate the estimate)."""

RADIAL_BREAKS = np.concatenate([[0.0], 2.0 ** np.arange(-6, 0), np.arange(1.0, RADIUS + 1.0)])
"""Radial panels: graded towards 0 by halving (a φ steep or singular at 0 is resolved there), unit panels beyond;
each ray's panels are cut again where it crosses a kink of φ away from 0 (`_radial_rule`)."""

ANGULAR_BREAKS = np.concatenate([[0.0], 2.0 ** np.arange(-6, 0), 1.0 - 2.0 ** np.arange(-2, -7, -1), [1.0]])
"""Panels of each sector, as fractions of it: graded towards both ends, where one unit's argument crosses 0."""

CHUNK = 8
"""Pairs integrated at once (the nodes of one pair without kinks away from 0: 4 sectors × 12 panels × RULE angles by
16 panels × RULE radii, about 2·10⁵ float64; each kink adds angular pieces and radial cuts: CHUNK pairs take some
100 MB of temporaries)."""

QUADRATURE_TOLERANCE = 1e-10
"""The largest error estimate [`nngp_kernel`][attnverify.saddle.network.nngp_kernel] accepts, relative to E|φ(u)φ(v)| at
the same pair."""

PROGRESS_PAIRS = 10_000
"""A call of at least this many pairs (1–2 ms each on one core: half a minute or more) given no ``progress`` tells the
run's display (`attnverify.execution.tasks.progress`, nothing outside a run), so that a theorist's data function that
takes the kernel of thousands of inputs is not silent for hours inside ``verify``."""


@lru_cache(maxsize=None)
def kinks(unit: Activation) -> tuple[float, ...]:
    """The points z ≠ 0 where φ jumps or bends (`attnverify.derivations.gaussian.jumps.jump_lines`: the
    switches of its Piecewise, Abs, Max, …); () where it has none, or where a switch is not affine in z (the error
    estimate then shows what the uncut panels miss)."""
    try:
        lines = jump_lines(unit.expression, [Z])
    except QuadratureShort:
        return ()
    points = {float(-offset / slopes[0]) for offset, slopes in lines if slopes[0] != 0}
    return tuple(sorted(p for p in points if p != 0.0))


def _radial_rule(scales: list, points: tuple, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """(ρ, weights × ρe^{−ρ²/2}/(2π)) on each ray (…, rays, radii), or one rule (radii,) where φ has no kink away
    from 0: `RADIAL_BREAKS` and, for each ``scales`` s (the
    unit's argument per unit ρ along the ray, √a cos ψ or √b cos(ψ − θ)) and kink z_k of φ, the cut ρ = z_k/s where
    it is in (0, RADIUS) (else a panel of width 0 at RADIUS, which adds nothing). Within a sector each cut moves
    smoothly with ψ (s keeps its sign there), so the integral over the rays stays smooth in ψ."""
    if not points:  # one rule for every ray, broadcast
        rho, weights = composite_rule(RADIAL_BREAKS, nodes)
        return rho, weights * rho * np.exp(-rho**2 / 2) / (2 * np.pi)
    shape = scales[0].shape
    cuts = [np.broadcast_to(RADIAL_BREAKS, shape + RADIAL_BREAKS.shape)]
    for scale in scales:
        for point in points:
            with np.errstate(divide="ignore", invalid="ignore"):
                rho = point / scale
            cuts.append(np.where((rho > 0) & (rho < RADIUS), rho, RADIUS)[..., None])
    breaks = np.sort(np.concatenate(cuts, axis=-1), axis=-1)
    rho, weights = composite_rule(breaks, nodes)
    return rho, weights * rho * np.exp(-rho**2 / 2) / (2 * np.pi)


def _pieces(a, b, r, points: tuple, half: bool) -> tuple[np.ndarray, np.ndarray]:
    """(start, width) of the angular pieces (n, pieces) over which the integral of each ray is smooth in ψ: the four
    sectors between the rays where u ∝ cos ψ or v ∝ cos(ψ − θ) vanishes (ψ = π/2, π/2 + θ, 3π/2, 3π/2 + θ for
    θ = arccos r ∈ [0, π]), cut again at the ray through each corner where the lines u = z_j and v = z_k of two
    kinks cross (there the first cut of a ray passes from one line to the other, and the ray's integral bends).
    ``half``: the first two sectors only, ψ ∈ [π/2, 3π/2), each cut taken modulo π (for an integrand of period π in
    ψ, `_flip_symmetric`)."""
    theta = np.arccos(r)
    end = 1.5 * np.pi if half else 2.5 * np.pi
    cuts = [np.full_like(theta, np.pi / 2), np.pi / 2 + theta, np.full_like(theta, 1.5 * np.pi)]
    if not half:
        cuts += [1.5 * np.pi + theta, np.full_like(theta, end)]
    across = np.sqrt(1 - r**2)
    crossing = (a > 0) & (b > 0) & (across > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        for first in points:
            for second in points:
                z1 = first / np.sqrt(a)
                z2 = (second / np.sqrt(b) - r * z1) / across
                angle = np.mod(np.arctan2(z2, z1) - np.pi / 2, end - np.pi / 2) + np.pi / 2  # into [π/2, end)
                cuts.append(np.where(crossing, angle, np.pi / 2))  # none: a piece of width 0, which adds nothing
    cuts = np.sort(np.stack(cuts, axis=1), axis=1)
    return cuts[:, :-1], np.diff(cuts, axis=1)


def _sector_sums(phi: Callable, points: tuple, a, b, r, nodes: int, half: bool, *, bounds: bool = True
                 ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(Σ w φ(u)φ(v), Σ w |φ(u)φ(v)|, the tail's estimate beyond RADIUS (`_tail`)) for one rule, pairs (n,):
    u = √a ρ cos ψ, v = √b ρ cos(ψ − θ), cos(ψ − θ) = r cos ψ + √(1 − r²) sin ψ; ``points``: φ's kinks. ``half``:
    over ψ ∈ [π/2, 3π/2) with twice the weights, exact where φ(−u)φ(−v) = φ(u)φ(v) (`_flip_symmetric`).
    ``bounds=False``: the sum alone (None for the other two), for the rule whose difference is the error estimate."""
    fractions, angular = composite_rule(ANGULAR_BREAKS, nodes)
    start, width = _pieces(a, b, r, points, half)
    psi = (start[:, :, None] + width[:, :, None] * fractions).reshape(len(r), -1)  # (n, angles)
    weight = ((2 if half else 1) * width[:, :, None] * angular).reshape(len(r), -1)
    along_u = np.sqrt(a)[:, None] * np.cos(psi)
    along_v = np.sqrt(b)[:, None] * (r[:, None] * np.cos(psi) + np.sqrt(1 - r**2)[:, None] * np.sin(psi))
    rho, radial = _radial_rule([along_u, along_v], points, nodes)  # (n or 1, angles or 1, radii)
    product = phi(along_u[:, :, None] * rho) * phi(along_v[:, :, None] * rho)
    if not bounds:
        return np.einsum("na,nar->n", weight, product * radial), None, None
    size = np.einsum("na,nar->n", weight, np.abs(product) * radial)
    product *= radial
    value = np.einsum("na,nar->n", weight, product)
    return value, size, _tail(phi, along_u, along_v)


def _flip_symmetric(unit: Activation) -> bool:
    """Whether φ is odd or even as sympy writes it (φ(−z) ∓ φ(z) adds up to 0 term by term: tanh, erf, z³, |z|), so
    that φ(−u)φ(−v) = φ(u)φ(v): the integrand of (1) in polar coordinates then has period π in ψ. False where sympy's
    automatic simplification does not show it (a Piecewise such as hard tanh): the quadrature then takes the whole
    circle, the same integral at twice the work."""
    flipped = unit.expression.subs(Z, -Z)
    return (flipped - unit.expression) == 0 or (flipped + unit.expression) == 0


def _tail(phi: Callable, along_u, along_v) -> np.ndarray:
    """An estimate of (1/2π)∫dψ ∫_R^∞ ρe^{−ρ²/2}|φ(u)φ(v)| dρ per pair: with G(ρ) the largest |φ(u)φ(v)| over the
    rule's angles at radius ρ, and ρ₀ = R < ρ₁ < … < ρ_m = `TAIL_RADII`,

        Σ_i e^{−ρ_i²/2} G(ρ_{i+1}) + 2e^{−ρ_m²/2} G(ρ_m),

    a bound wherever |φ(u)φ(v)| does not decrease along a ray between those radii and grows at most like ρ^k,
    k ≤ ρ_m²/2, beyond ρ_m (∫_{ρ_m}^∞ ρ^{k+1}e^{−ρ²/2} dρ ≤ ρ_m^k e^{−ρ_m²/2}/(1 − k/ρ_m²)). A region where both
    units are active only far out (φ = ReLU(z − 1) at opposite inputs) is seen at the radius where it starts."""
    largest = np.stack([np.max(np.abs(phi(along_u * rho) * phi(along_v * rho)), axis=1) for rho in TAIL_RADII])
    weights = np.exp(-TAIL_RADII**2 / 2)
    return np.einsum("i,in->n", weights[:-1], largest[1:]) + 2 * weights[-1] * largest[-1]


def kernel_quadrature(unit: Any, a, b, r, *, progress: Callable[[str], None] | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""($K$, its error estimate, $\mathbb{E}\lvert\varphi(u)\varphi(v)\rvert$) at variances $a, b \ge 0$ and
    correlation $r \in [-1, 1]$ (1-D, one entry per pair), by (1) in polar coordinates
    $(z_1, z_2) = \rho(\cos\psi, \sin\psi)$:

    $$
    K = (1/2\pi) \int_0^{2\pi} d\psi \int_0^\infty \rho\, e^{-\rho^2/2}\, \varphi(\sqrt{a}\,\rho\cos\psi)\,
    \varphi(\sqrt{b}\,\rho\cos(\psi - \theta))\, d\rho,
    $$

    over the sectors between the rays where $u$ or $v$ is 0, so that a kink or a steep step of $\varphi$ at 0 (ReLU,
    sign, tanh of a large argument) lies on a sector's edge, never inside a panel; each ray cut again where $u$ or $v$
    crosses a kink of $\varphi$ away from 0 (`kinks`); Gauss–Legendre on panels graded towards $\rho = 0$ and towards
    each sector's edges, and at the rays through the corners where two kinks' lines cross (`_pieces`). The error
    estimate is the sum of: $\lvert\text{RULE-node rule} - \text{COARSE-node rule}\rvert$ (the coarser rule's error,
    which bounds the finer one's generously); the tail beyond $\rho =$ `RADIUS` (`_tail`); and 64 ulps of
    $\mathbb{E}\lvert\varphi\varphi\rvert$ for the summation. Non-finite values (an overflow, a divergent $\varphi$)
    give an infinite estimate. Where $\varphi$ is odd or even (`_flip_symmetric`) the integrand has period $\pi$ in
    $\psi$, and half the circle, twice weighted, is the same integral at half the work. ``progress``: a function of
    one line of text, told the pairs done at most twenty times a call (after every `CHUNK` pairs where there are
    fewer than twenty chunks); without one, a call of `PROGRESS_PAIRS` or more tells the run's display."""
    unit = activation(unit)
    arguments.function("progress", progress, "a function of one line of text", optional=True)
    phi, points, half = unit.values, kinks(unit), _flip_symmetric(unit)
    try:
        a, b, r = (np.ascontiguousarray(np.ravel(v), dtype=np.float64) for v in np.broadcast_arrays(a, b, r))
    except (ValueError, TypeError) as error:
        raise ValueError(f"a, b and r must be numbers or arrays of one shape (broadcast together): {error}") from None
    for name, values, low, high in (("a", a, 0.0, np.inf), ("b", b, 0.0, np.inf), ("r", r, -1.0, 1.0)):
        outside = ~((values >= low) & (values <= high) & np.isfinite(values))
        if outside.any():
            span = "[0, inf)" if high == np.inf else "[-1, 1]"
            raise ValueError(f"{name} must be finite and in {span}, got {float(values[outside][0])!r}")
    if progress is None and a.size >= PROGRESS_PAIRS:
        progress = tasks.progress
    values, errors, sizes = (np.empty(a.size) for _ in range(3))
    chunks = -(-a.size // CHUNK)
    with np.errstate(all="ignore"):  # an overflow is reported as an infinite error estimate, below
        for index, low in enumerate(range(0, a.size, CHUNK)):
            part = slice(low, low + CHUNK)
            fine, size, tail = _sector_sums(phi, points, a[part], b[part], r[part], RULE, half)
            coarse = _sector_sums(phi, points, a[part], b[part], r[part], COARSE, half, bounds=False)[0]
            error = np.abs(fine - coarse) + tail + 64 * np.finfo(float).eps * size
            finite = np.isfinite(fine) & np.isfinite(error)
            values[part], errors[part], sizes[part] = fine, np.where(finite, error, np.inf), size
            if progress is not None and (20 * (index + 1) // chunks > 20 * index // chunks):
                progress(f"the NNGP kernel of {unit.name} by quadrature: {min(low + CHUNK, a.size):,} of "
                         f"{a.size:,} pairs")
    return values, errors, sizes


# --- the kernel of inputs ---------------------------------------------------------------------------------------


def nngp_kernel(X, Y=None, *, activation: Any = "relu", progress: Callable[[str], None] | None = None) -> np.ndarray:
    """K(x_i, y_j) = E_w[φ(w·x_i) φ(w·y_j)] for w ~ N(0, I/d) (P × Q; Y = X when not given), d the inputs' columns:
    the kernel of one hidden layer of units φ at infinite width, per unit of readout variance (the network of
    [`one_hidden_layer`][attnverify.saddle.network.one_hidden_layer] has σ² times it). By the closed form of
    `kernel_derivation` where there is one (ReLU: |x||y|(sin θ + (π − θ) cos θ)/(2πd); erf:
    (2/π) arcsin(2x·y/d / √((1 + 2|x|²/d)(1 + 2|y|²/d))); linear: x·y/d), else by
    [`kernel_quadrature`][attnverify.saddle.nngp_quadrature.kernel_quadrature], whose error estimate must stay within
    `QUADRATURE_TOLERANCE` of E|φφ| at every pair (else ValueError); ``progress`` (a function of one line of text)
    is told the quadrature's pairs done, at most twenty times (`kernel_quadrature`)."""
    unit = _resolve(activation)
    arguments.function("progress", progress, "a function of one line of text", optional=True)
    X = arguments.array("X", X, ndim=2)
    Y = X if Y is None else arguments.array("Y", Y, ndim=2)
    if Y.shape[1] != X.shape[1]:
        raise ValueError(f"Y must have X's {X.shape[1]} columns, got {Y.shape[1]}")
    d = X.shape[1]
    with np.errstate(over="ignore", invalid="ignore"):
        a, b = np.sum(X * X, axis=1) / d, np.sum(Y * Y, axis=1) / d
        for name, norms in (("X", a), ("Y", b)):
            if not np.all(np.isfinite(norms)):
                raise ValueError(f"{name} is too large: |{name.lower()}|²/d of its row "
                                 f"{int(np.argmin(np.isfinite(norms)))} overflows float64 (rescale the inputs)")
        r = _correlations(X @ Y.T / d, a, b)
    if unit.closed_form is not None:
        with np.errstate(over="ignore", invalid="ignore"):
            kernel = np.asarray(closed_form_kernel(unit, a[:, None], b[None, :], r), dtype=np.float64)
        if not np.all(np.isfinite(kernel)):
            i, j = np.argwhere(~np.isfinite(kernel))[0]
            raise ValueError(f"X is too large for activation {unit.name}: its kernel overflows float64 at x_{i}, y_{j} "
                             f"(|x|²/d = {a[i]:.3g}, |y|²/d = {b[j]:.3g}); rescale the inputs")
        return kernel
    return _kernel_by_quadrature(unit, a, b, r, symmetric=Y is X, progress=progress)


def _resolve(spec: Any) -> Activation:
    """[`activation`][attnverify.saddle.activations.activation] (under another name:
    [`nngp_kernel`][attnverify.saddle.network.nngp_kernel]'s keyword of that name hides it there)."""
    return activation(spec)


def _correlations(dot: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """r = (x·y/d)/√(ab), clipped to [−1, 1] (Cauchy–Schwarz holds exactly; rounding may step past it by an ulp),
    and 0 where x or y is 0 (then u or v is 0 whatever r is)."""
    scale = np.sqrt(a)[:, None] * np.sqrt(b)[None, :]
    r = np.divide(dot, scale, out=np.zeros_like(dot), where=scale > 0)
    return np.clip(r, -1.0, 1.0)


def _kernel_by_quadrature(unit: Activation, a, b, r, *, symmetric: bool, progress: Callable | None) -> np.ndarray:
    """[`kernel_quadrature`][attnverify.saddle.nngp_quadrature.kernel_quadrature] at every pair (the upper triangle only
    when Y is X), each error estimate checked against `QUADRATURE_TOLERANCE` of the pair's scale, the larger of
    E|φ(u)φ(v)| and √(K(x, x) K(y, y)) (the bound on |K| by Cauchy–Schwarz: a pair whose kernel is 0 or tiny is judged
    on the kernel's own scale)."""
    rows, cols = np.triu_indices(len(a)) if symmetric else np.indices(r.shape).reshape(2, -1)
    values, errors, sizes = kernel_quadrature(unit, a[rows], b[cols], r[rows, cols], progress=progress)
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(sizes))):
        worst = int(np.argmin(np.isfinite(values) & np.isfinite(sizes)))
        raise ValueError(f"X is too large for activation {unit.name}: its kernel overflows float64 at x_{rows[worst]}, "
                         f"y_{cols[worst]} (|x|²/d = {a[rows[worst]]:.3g}, |y|²/d = {b[cols[worst]]:.3g}); rescale "
                         "the inputs")
    if symmetric:
        diagonal = values[rows == cols]
        own_x = own_y = np.abs(diagonal)
    else:
        own = kernel_quadrature(unit, np.concatenate([a, b]), np.concatenate([a, b]), 1.0)[0]
        own_x, own_y = np.abs(own[:len(a)]), np.abs(own[len(a):])
    scales = np.maximum(sizes, np.sqrt(own_x[rows] * own_y[cols]))
    worst = int(np.argmax(errors / np.maximum(scales, np.finfo(float).tiny)))
    if not errors[worst] <= QUADRATURE_TOLERANCE * scales[worst]:
        raise ValueError(f"activation {unit.name}: the quadrature of its kernel at x_{rows[worst]}, y_{cols[worst]} "
                         f"(|x|²/d = {a[rows[worst]]:.3g}, |y|²/d = {b[cols[worst]]:.3g}, cos θ = "
                         f"{r[rows[worst], cols[worst]]:.3g}) has an error estimate {errors[worst]:.2g} against a "
                         f"scale {scales[worst]:.2g}, beyond {QUADRATURE_TOLERANCE:g} of it: E[φ(u)φ(v)] diverges "
                         "there, or φ has a feature the panels do not resolve")
    kernel = np.empty(r.shape)
    kernel[rows, cols] = values
    if symmetric:
        kernel[cols, rows] = values
    return kernel
