"""Attention paths (Tiberi, Mignacco, Irie, Sompolinsky, NeurIPS 2024): the whole theory in one package.

theory        the concise Theory object every part below registers on, as in a user's file
derivations/  sympy: the action, saddle-point equations, GP limit, readout U_a, H = 1 reduction (checked steps)
features      path features ξ^π(x), path-path kernels C, renormalized and GP kernels
markov_chain  the hidden Markov chain classification task of the paper's figure 2
action        the action S = ½E + 𝓛 declared on the saddle-point engine (attnverify.saddle), which solves it
              (one point, or widths × temperatures by continuation, kept in a SolutionStore)
single_head   the H = 1 scalar kernel renormalization (Li & Sompolinsky 2021), solved independently
heads         kernel–task alignment, head scores, theory pruning
synthetic     random tokens and heads with a teacher path (generic problems, scaling benchmarks)
posterior, collapsed, sampling   the finite-width network's posterior and its two exact HMC samplers
theory_points the theory and the sampled networks at a width, next to each other (figure 2's comparisons)
experiments   what claims and the section share, through the run's store
claims        the claims; section   the report section (drawing only)
one_shot/     figure 3: the one-shot task, the trained networks, their analysis, claims and panels

The names below are the package's numerics, importable from here.
"""

from .features import attention_matrix, attention_matrix_qk, gp_kernel, path_features, path_kernels, renormalized_kernel
from ...numerics.kernel_energy import FeatureKernelEnergy, FeatureSpaceEnergy, KernelEnergy, energy_for
from ...numerics.kernel_predictor import PredictorStatistics, predictor_statistics
from .action import ActionConfig, attention_paths_action, order_parameters, solve_paths
from .heads import head_scores, kernel_task_alignment, path_index, prune_heads
from .single_head import ScalarRenormalization, scalar_renormalization

__all__ = [
    "attention_matrix", "attention_matrix_qk", "gp_kernel", "path_features", "path_kernels", "renormalized_kernel",
    "ActionConfig", "FeatureKernelEnergy", "FeatureSpaceEnergy", "KernelEnergy", "PredictorStatistics",
    "ScalarRenormalization", "attention_paths_action", "energy_for", "head_scores", "kernel_task_alignment",
    "order_parameters", "path_index", "predictor_statistics", "prune_heads", "scalar_renormalization", "solve_paths",
]
