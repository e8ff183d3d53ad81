"""The one Gaussian-expectation engine: closed forms (exact moments, the erf conditioning rule, ζ and Stein's lemma:
`.closed_forms`), the self-evaluating [`Expectation`][attnverify.derivations.gaussian.Expectation] a derivation step
states (`.expectation`), its quadrature (`.panels`; by sectors where every kink lies on a line through the origin:
`.polar`), definite integrals at a point (`.integrals`), the identity table the single-location claim checks
(`.identities`)."""

from .closed_forms import (ErfSquareMean, erf_mean, erf_prime, gaussian_expectation, gaussian_moments_expectation,
                           moments_taken, normal_moment, polynomial_in, zeta_at_zero, zeta_mpmath, zeta_t_derivative)
from .expectation import (Expectation, by_linearity, gaussian, gaussian_mean, moment, standard_estimate,
                          standard_mean)
from .identities import HALF, Z, gaussian_quadrature, identity_table
from .integrals import INTEGRAL_DEGREE, QuadratureShort, integral_estimate, integral_value

__all__ = ["ErfSquareMean", "Expectation", "HALF", "INTEGRAL_DEGREE", "QuadratureShort", "Z", "by_linearity",
           "erf_mean", "erf_prime", "gaussian", "gaussian_expectation",
           "gaussian_mean", "gaussian_moments_expectation", "gaussian_quadrature", "identity_table", "integral_estimate",
           "integral_value", "moment", "moments_taken", "normal_moment",
           "polynomial_in", "standard_estimate", "standard_mean", "zeta_at_zero", "zeta_mpmath", "zeta_t_derivative"]
