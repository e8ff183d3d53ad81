"""The arcsine kernel of an erf unit, derived as a user writes it, twice (and once more with a wrong factor)

For w ~ N(0, I) and x, y in the plane, E_w[erf(s w·x) erf(s w·y)] = (2/π) arcsin(2s²x·y / √((1 + 2s²|x|²)(1 +
2s²|y|²))) (Williams 1997, eq. 11). w has two coordinates: the two projections w·x and w·y see only the plane of
x and y. The derivation rotates x onto the first axis, t = w·x/|x|, so that w·y = (x·y/|x|) t + d t₂ with
d = |x₁y₂ − x₂y₁|/|x| and t₂ independent of t; averaging t₂ out, E[erf(α + βZ)] = erf(α/√(1 + 2β²)), leaves one
integral over t, whose value is the arcsine. Written once with sympy ``Integral`` steps and once with
``Expectation(…, gaussian(z1), gaussian(z2))``.
"""
from sympy import Eq, Integral, asin, erf, exp, oo, pi, sqrt, symbols

from attnverify import Theory
from attnverify.derivations.gaussian import Expectation, gaussian

s = symbols("s", positive=True)  # the unit's input scale
x1, x2, y1, y2 = symbols("x1 x2 y1 y2", real=True)  # the two inputs, in their plane
z1, z2, t = symbols("z1 z2 t", real=True)  # the weight's coordinates; the weight along x
K = symbols("K", real=True)

norm_x = sqrt(x1**2 + x2**2)
dot = x1 * y1 + x2 * y2
d2 = (x1 * y2 - x2 * y1) ** 2 / (x1**2 + x2**2)  # the squared part of y across x
along_y = s * dot / norm_x / sqrt(1 + 2 * s**2 * d2)  # the slope in t of erf(s w·y), t₂ averaged out
arcsine = asin(2 * s**2 * dot / sqrt((1 + 2 * s**2 * (x1**2 + x2**2)) * (1 + 2 * s**2 * (y1**2 + y2**2))))
phi1 = exp(-t**2 / 2) / sqrt(2 * pi)
phi2 = exp(-(z1**2 + z2**2) / 2) / (2 * pi)


def _integral_steps(step, factor):
    step("The kernel as a Gaussian integral over the weight's two coordinates",
         Eq(K, Integral(Integral(erf(s * (x1 * z1 + x2 * z2)) * erf(s * (y1 * z1 + y2 * z2)) * phi2,
                                 (z1, -oo, oo)), (z2, -oo, oo))), kind="definition")
    step("Rotate x onto the first axis and average the other coordinate out: E[erf(α + βZ)] = erf(α/√(1+2β²))",
         Eq(K, Integral(erf(s * norm_x * t) * erf(along_y * t) * phi1, (t, -oo, oo))))
    step("The integral over t", Eq(K, factor * arcsine), name="K")


def _expectation_steps(step, factor):
    step("The kernel as an expectation over the weight's two coordinates",
         Eq(K, Expectation(erf(s * (x1 * z1 + x2 * z2)) * erf(s * (y1 * z1 + y2 * z2)), gaussian(z1), gaussian(z2))),
         kind="definition")
    step("Rotate x onto the first axis and average the other coordinate out: E[erf(α + βZ)] = erf(α/√(1+2β²))",
         Eq(K, Expectation(erf(s * norm_x * t) * erf(along_y * t), gaussian(t))))
    step("The expectation over t", Eq(K, factor * arcsine), name="K")


erf_integral = Theory("erf_integral", source="Williams (1997), eq. 11")
erf_expectation = Theory("erf_expectation", source="Williams (1997), eq. 11")
erf_integral_wrong = Theory("erf_integral_wrong", source="(False on purpose.) 1/π for 2/π")
erf_expectation_wrong = Theory("erf_expectation_wrong", source="(False on purpose.) 1/π for 2/π")


@erf_integral.derivation(name="erf_kernel", title="The arcsine kernel, by integrals")
def _(step):
    _integral_steps(step, 2 / pi)


@erf_expectation.derivation(name="erf_kernel", title="The arcsine kernel, by expectations")
def _(step):
    _expectation_steps(step, 2 / pi)


@erf_integral_wrong.derivation(name="erf_kernel", title="The arcsine kernel, by integrals, with 1/π")
def _(step):
    _integral_steps(step, 1 / pi)


@erf_expectation_wrong.derivation(name="erf_kernel", title="The arcsine kernel, by expectations, with 1/π")
def _(step):
    _expectation_steps(step, 1 / pi)
