"""Attention as a conditional mean (Zhang, Liu, Cai, Wang, Wang, 2022): the whole theory in one package.

theory       the concise Theory object every part below registers on, as in a user's file
derivations  sympy: the 1/L expansion of attention, the Gaussian and fixed-bandwidth limits, the posteriors
models       exchangeable token models: Gaussian keys with linear values, a sine conditional mean,
             and the latent models M1 (conjugate Gaussian), M2 (finite latent), M3 (linear-Gaussian)
attention    softmax, RBF and ridge (CME) attention as estimators of E[v | k] (numpy or cupy)
monte_carlo  bias and mean-squared error of attention at a sequence length, with standard errors; rate_fit
learning     empirical-risk minimisation of the attention parameter (supervised and masked)
experiments  what the claims and the section share, through the run's store
claims/      the claims (identities, approximation, concentration); section: the report section (drawing only)

The names below are the package's numerics, importable from here.
"""

from .attention import rbf_attention, ridge_attention, softmax, softmax_attention, weighted_mean
from .models import (ConjugateGaussianModel, FiniteLatentModel, GaussianKeyValueModel, LinearGaussianLatentModel,
                     SineValueModel)
from .monte_carlo import AttentionError, attention_error, rate_fit, score_attention_error

__all__ = [
    "AttentionError", "ConjugateGaussianModel", "FiniteLatentModel", "GaussianKeyValueModel",
    "LinearGaussianLatentModel", "SineValueModel", "attention_error", "rate_fit", "score_attention_error", "rbf_attention", "ridge_attention",
    "softmax", "softmax_attention", "weighted_mean",
]
