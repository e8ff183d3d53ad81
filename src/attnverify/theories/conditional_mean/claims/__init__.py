"""Claims of attention as a conditional mean (Zhang, Liu, Cai, Wang, Wang, 2022).

The paper's body could not be recovered; every claim follows the research note
``docs/papers/conditional_mean.md`` (its §6 lists the testable predictions P1–P10). Exact
identities are tested at float64 round-off; Monte Carlo claims compare with the symbolic expansion
E‖attn − m∞‖² = C/L + D/L² + O(L⁻³), E[attn − m∞] = B/L + B₂/L² + O(L⁻³) of
`attnverify.theories.conditional_mean.derivations`, with tolerance 5 standard errors plus a bias
budget equal to the last derived term (the O(L⁻³) remainder is allowed to be as large as it).

The claims live in submodules by topic: `.identities` (exact identities, exchangeability, quadrature),
`.approximation` (the 1/L rate and its constants, the fixed-bandwidth bias) and `.concentration`
(posterior concentration, Lipschitz constant, learning); each registers on the theory, and its claims are
importable from here, in that order.
"""

from .identities import (finite_latent_posterior_is_attention, ridge_attention_is_posterior_mean,
                         softmax_is_rbf_for_equal_norm_keys, conjugate_posterior_closed_form,
                         attention_is_exchangeable, gaussian_constants_match_quadrature,
                         fixed_bandwidth_constants_match_quadrature)
from .approximation import (error_constant, bias_constant, error_rate_slope, identity_parameter_limit,
                            identity_parameter_is_consistent, fixed_bandwidth_limit, fixed_bandwidth_is_consistent)
from .concentration import (latent_posterior_concentrates, lipschitz_in_parameter, generalization_gap_flat_supervised,
                            generalization_gap_flat_masked)

__all__ = [
    "finite_latent_posterior_is_attention", "ridge_attention_is_posterior_mean", "softmax_is_rbf_for_equal_norm_keys",
    "conjugate_posterior_closed_form", "attention_is_exchangeable", "gaussian_constants_match_quadrature",
    "fixed_bandwidth_constants_match_quadrature", "error_constant", "bias_constant", "error_rate_slope",
    "identity_parameter_limit", "identity_parameter_is_consistent", "fixed_bandwidth_limit",
    "fixed_bandwidth_is_consistent", "latent_posterior_concentrates", "lipschitz_in_parameter",
    "generalization_gap_flat_supervised", "generalization_gap_flat_masked",
]
