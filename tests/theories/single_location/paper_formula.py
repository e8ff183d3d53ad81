"""The authors' closed form of the risk (spec §3.1, from their code dynamics.R + run.py), typed
independently of the derivation engine so that the derived expression can be compared with it."""

import numpy as np
from scipy.special import erf, owens_t


def zeta(t, g):
    """ζ(t, g) through Owen's T (spec §5), an evaluation route independent of the package."""
    return 1 - 8 * owens_t(np.sqrt(2) * t / np.sqrt(1 + 2 * g**2), 1 / np.sqrt(1 + 4 * g**2))


def erf_prime(x):
    return 2 / np.sqrt(np.pi) * np.exp(-x**2)


def authors_risk(kappa, nu, theta, eta, rho, lam, gamma, d, L, eps):
    s = 1 + 2 * lam**2 * gamma**2
    sp = 1 + 4 * lam**2 * gamma**2
    a = lam * kappa * np.sqrt(d / (2 * s))
    c_lam = 2 * lam / np.sqrt(np.pi * (1 + 2 * lam**2))
    z0 = 2 / np.pi * np.arcsin(2 * lam**2 / (1 + 2 * lam**2))
    erf2 = -2 * a * erf_prime(a)
    g2 = gamma**2
    return (
        eps**2 + g2 - 2 * g2 * nu * erf(a)
        - 2 * lam * g2 * np.sqrt(d / 2) * eta * theta / np.sqrt(s) * erf_prime(a)
        - 2 * lam**2 * gamma**4 * eta * rho / s * erf2
        + (d * theta**2 / 2 + g2) * zeta(lam * kappa * np.sqrt(d / 2), lam * gamma)
        + 4 * lam * g2 * np.sqrt(d / 2) / np.sqrt(s) * (theta * rho - lam**2 * g2 * rho**2 * kappa / s)
        * erf(a / np.sqrt(sp)) * erf_prime(a)
        + 4 / np.sqrt(np.pi) * lam**2 * gamma**4 * rho**2 / s / np.sqrt(sp) * erf_prime(lam * kappa * np.sqrt(d) / np.sqrt(sp))
        + (L - 1) * z0 + (L - 1) * 8 / np.pi * lam**2 * rho**2 / ((1 + 2 * lam**2) * np.sqrt(1 + 4 * lam**2))
        + (L - 1) * (L - 2) * 4 / np.pi * lam**2 * rho**2 / (1 + 2 * lam**2)
        + 2 * (L - 1) * c_lam * rho * (np.sqrt(d / 2) * theta * erf(a) + lam * g2 * rho / np.sqrt(s) * erf_prime(a))
    )
