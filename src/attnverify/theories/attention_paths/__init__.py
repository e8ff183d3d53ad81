"""Numerics of attention paths (Tiberi, Mignacco, Irie, Sompolinsky, NeurIPS 2024).

features      path features ξ^π(x), path-path kernels C, renormalized and GP kernels
markov_chain  the hidden Markov chain classification task of the paper's figure 2
entropy       the entropy 𝓛 of the action and its matrix gradients
energy        E(U) = ln det(K+TI) + Yᵀ(K+TI)^{-1}Y and ∂E/∂U from C, from X, or in feature space
saddle_point  the minimum of S = E + 𝓛 over positive-definite order parameters
single_head   the H = 1 scalar kernel renormalization (Li & Sompolinsky 2021), solved independently
predictor     predictor mean and variance, generalisation error, accuracy
heads         kernel–task alignment, head scores, theory pruning
synthetic     random tokens and heads with a teacher path (generic problems, scaling benchmarks)
experiments   the figure-2 experiments: GP reference lines, sweeps over the width
"""

from .features import attention_matrix, attention_matrix_qk, gp_kernel, path_features, path_kernels, renormalized_kernel
from .energy import FeatureKernelEnergy, FeatureSpaceEnergy, KernelEnergy, energy_for
from .entropy import ActionConfig, entropy, entropy_gradients, partial_trace
from .heads import head_scores, kernel_task_alignment, path_index, prune_heads
from .predictor import PredictorStatistics, predictor_statistics
from .saddle_point import Action, SaddlePoint, SaddlePointError, saddle_point, saddle_point_from_features
from .single_head import ScalarRenormalization, scalar_renormalization

__all__ = [
    "attention_matrix", "attention_matrix_qk", "gp_kernel", "path_features", "path_kernels", "renormalized_kernel",
    "Action", "ActionConfig", "FeatureKernelEnergy", "FeatureSpaceEnergy", "KernelEnergy", "PredictorStatistics",
    "SaddlePoint", "SaddlePointError", "ScalarRenormalization", "energy_for", "entropy", "entropy_gradients",
    "head_scores", "kernel_task_alignment", "partial_trace", "path_index", "predictor_statistics", "prune_heads",
    "saddle_point", "saddle_point_from_features", "scalar_renormalization",
]
