"""Numerics of attention as a conditional mean (Zhang, Liu, Cai, Wang, Wang, 2022).

models       exchangeable token models: Gaussian keys with linear values, a sine conditional mean,
             and the latent models M1 (conjugate Gaussian), M2 (finite latent), M3 (linear-Gaussian)
attention    softmax, RBF and ridge (CME) attention as estimators of E[v | k]
monte_carlo  bias and mean-squared error of attention at a sequence length, with standard errors
learning     empirical-risk minimisation of the attention parameter (supervised and masked)
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
