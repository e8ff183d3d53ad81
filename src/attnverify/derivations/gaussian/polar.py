"""E[h(X, Y)] over two independent standard normals when every kink and jump of h lies on a line through the origin
(ReLU products, arc-cosine kernels): in polar coordinates (X, Y) = ρ(cos φ, sin φ) each switch αX + βY changes
sign only at the two angles where α cos φ + β sin φ = 0, so between consecutive such angles h is one smooth
branch (`.jumps.branch_at`), and

    E[h] = Σ_sectors ∫ dφ ∫₀^∞ h(ρ cos φ, ρ sin φ) ρ e^{−ρ²/2} dρ / (2π).

A term ρᵏ A(φ) of the branch (positively homogeneous of degree k > −2) has the exact radial integral
∫₀^∞ ρ^{k+1} e^{−ρ²/2} dρ = 2^{k/2} Γ(k/2 + 1); any other term's radial integral is taken by Gauss–Legendre panels
(`.panels.panels`) at each angle. Each sector's angular integral, of a smooth function, is taken by the same
panels, with their error estimate."""

from __future__ import annotations

import mpmath
import sympy

from .jumps import branch_at, jump_lines
from .panels import SCAN, QuadratureShort, panel_tolerance, panels, rounding


def sector_estimate(h: sympy.Expr, variables: list) -> tuple | None:
    """(E[h], an estimate of its absolute error) over independent standard normal ``variables`` (two of them; h
    free of other symbols) at the current precision, by sectors (see the module docstring); None where some switch
    of h is not αX + βY with numbers α, β (a line off the origin, a curve: the sectors would not separate the
    branches)."""
    if len(variables) != 2:
        return None
    try:
        lines = jump_lines(h, variables)
    except QuadratureShort:
        return None
    if not lines or any(not (offset.is_zero and all(b.is_number and b.is_real for b in slopes))
                        for offset, slopes in lines):
        return None
    digits = mpmath.mp.dps + 5
    angles = set()
    for _, (alpha, beta) in lines:
        alpha, beta = (mpmath.mpf(sympy.Float(sympy.N(b, digits), digits)) for b in (alpha, beta))
        if alpha or beta:
            zero = mpmath.atan2(-alpha, beta)  # α cos φ + β sin φ = 0 there and at φ + π
            angles |= {zero % (2 * mpmath.pi), (zero + mpmath.pi) % (2 * mpmath.pi)}
    cuts = sorted(angles)
    cuts.append(cuts[0] + 2 * mpmath.pi)
    total, error = mpmath.mpf(0), mpmath.mpf(0)
    for low, high in zip(cuts, cuts[1:]):
        value, estimate = _sector(h, variables, low, high, digits)
        total += value
        error += estimate
    return total, error + rounding(total)


def _sector(h: sympy.Expr, variables: list, low, high, digits: int) -> tuple:
    """(∫_low^high dφ ∫₀^∞ h ρ e^{−ρ²/2} dρ/(2π), its error estimate) over a sector where no switch of h changes
    sign."""
    middle = (low + high) / 2
    x, y = variables
    branch = branch_at(h, {x: sympy.Float(mpmath.cos(middle), digits), y: sympy.Float(mpmath.sin(middle), digits)},
                       digits)
    rho = sympy.Dummy("rho", positive=True)
    c, s, phi = sympy.Dummy("c", real=True), sympy.Dummy("s", real=True), sympy.Dummy("phi", real=True)
    homogeneous, rest = sympy.S.Zero, sympy.S.Zero
    for term in sympy.Add.make_args(sympy.expand(branch.xreplace({x: rho * c, y: rho * s}))):
        factor, radial = term.as_independent(rho, as_Add=False)
        base, k = radial.as_base_exp()
        if radial == 1 or (base == rho and k.is_number and k.is_real):
            k = sympy.S.Zero if radial == 1 else k
            if not k > -2:
                raise ValueError(f"E diverges: a term of degree {k} at the origin")
            homogeneous += factor * 2 ** (k / 2) * sympy.gamma(k / 2 + 1) / (2 * sympy.pi)
        else:
            rest += term
    polar = {c: sympy.cos(phi), s: sympy.sin(phi)}
    a = sympy.lambdify(phi, homogeneous.xreplace(polar), modules="mpmath")
    inner = [mpmath.mpf(0)]
    if rest != 0:
        b = sympy.lambdify((rho, phi), rest.xreplace(polar) * rho * sympy.exp(-rho**2 / 2) / (2 * sympy.pi),
                           modules="mpmath")

        def angular(f):
            value, estimate = _radial(lambda r: b(r, f))
            inner[0] = max(inner[0], estimate)
            return a(f) + value
    else:
        angular = a
    width = high - low
    size = max(abs(angular(low + width * k / 4)) for k in (1, 2, 3)) * width
    value, estimate = panels(angular, low, high, panel_tolerance(size))
    return value, estimate + inner[0] * width


def _radial(g) -> tuple:
    """(∫₀^∞ g, its error estimate): Gauss–Legendre panels on [0, SCAN], mpmath.quad's tanh-sinh beyond."""
    size = max(abs(g(mpmath.mpf(r))) for r in (0.5, 1, 2, 4))
    value, estimate = panels(g, 0, SCAN, panel_tolerance(size))
    tail, other = mpmath.quad(g, [SCAN, mpmath.inf], error=True)
    return value + tail, estimate + abs(other)
