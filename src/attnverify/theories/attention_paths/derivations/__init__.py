"""Attention paths (Tiberi, Mignacco, Irie, Sompolinsky, NeurIPS 2024), derived symbolically.

The theory (spec ``docs/papers/attention_paths.md`` §1.2, §2, §3): the posterior of the value
weights concentrates, at finite α = P/N, on the minimum of the action

    S(U_a, U_L, …, U_1) = E(U_1) + 𝓛(U_a, U_L, …, U_1)                                   (§2.1)
    E(U_1) = ln det(K + T I_P) + Yᵀ (K + T I_P)^{-1} Y,    K^{μν} = Σ_{ππ'} (U_1)_{ππ'} C^{μν}_{ππ'}
    𝓛 = n_L [U_a/σ_a² − ln U_a]
        + Σ_{ℓ=1}^{L} n_{ℓ−1} [ (1/σ_ℓ²) Tr(U_{ℓ+1}^{-1} Tr_{h_ℓ} U_ℓ) − ln det U_ℓ + H_ℓ ln det U_{ℓ+1} ]

with U_{L+1} ≡ U_a and h_ℓ the slow index of U_ℓ (paths packed row-major, h_1 slowest).

Names: ``order_parameter`` U_ℓ (D_ℓ × D_ℓ, D_ℓ = Π_{k≥ℓ} H_k), ``readout`` U_a, ``path_kernels``
C_{ππ'} (P × P blocks, C_{π'π} = C_{ππ'}ᵀ), ``labels`` Y, ``temperature`` T, ``widths`` n_0..n_L,
``variances`` σ_1²..σ_L², σ_a² (σ_0² sits inside C).

Here the action is built with explicit symmetric symbolic matrices for small configurations; its
derivatives (sympy ``diff``) are proven equal to the matrix formulas of §2.2, the GP point of §3 is
shown to be the entropy's minimum, U_a is solved in closed form (the evaluator the numerical
saddle-point solver calls) and the H = 1 case is reduced to Li & Sompolinsky's back-propagating
kernel renormalisation (BPKR), a single scalar equation.

The derivations live in submodules by job: `._common` (symbols, sizes), `.action` (§1),
`.saddle_equations` (§2), `.gp_limit` (§3), `.readout` (§4), `.single_head` (§5) and
`.report_derivations` (§6); every public name is re-exported here. Each derivation is registered on
`attnverify.theories.attention_paths.theory.theory`, which lists them in the report's order.
"""

from ._common import (SOURCE, T, U_a, dimensions, kron_identity, partial_trace, readout_symbol, sigma_a2,
                      temperature_symbol, variance_symbol, variance_symbols, width_symbol, width_symbols)

from .action import (SymbolicAction, action_evaluator, evaluate_action, symbolic_action)

from .saddle_equations import (IdentityTest, MatrixGradient, action_derivatives, action_hessian_at,
                               energy_gradient_matrix, entry_derivatives, formula_derivatives, general_action_gradient,
                               random_rational_point, saddle_point_equations_agree, saddle_point_equations_proved)

from .gp_limit import (entropy_hessian_at_gp, gp_hessian_is_positive_definite, gp_is_stationary,
                       gp_order_parameter_scale, gp_order_parameters, gp_point, is_positive_definite)

# registered on the theory in report order: the action, the saddle point and the GP limit, then U_a and H = 1
from .report_derivations import action_derivation, gp_derivation, saddle_point_derivation

from .readout import (READOUT_ARGUMENTS, heads_last, readout_coefficients, readout_derivation, readout_expression,
                      readout_order_parameter, trace_U_L, var_last, width_last, width_prev)

from .single_head import (N_symbol, alpha_symbol, bpkr_arguments, bpkr_energy_slope, bpkr_fixed_point_evaluator,
                          bpkr_fixed_point_residual, bpkr_mode_slope, bpkr_residual, eigenvalue, energy_slope,
                          h1_entropy_in_ratio_variables, h1_entropy_is_bpkr, h1_reduction_derivation, kernel_scale,
                          label_projection_sq, q_symbol, ratio_substitution, ratio_symbols, t0_quadratic_steps)

