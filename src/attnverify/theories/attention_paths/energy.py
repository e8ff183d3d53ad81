"""The energy E(U) = ln det(K(U) + T I) + Yᵀ(K(U) + T I)^{-1} Y of the attention-path action, from the path-path
kernels C or the path features X: the generic kernel energy of :mod:`attnverify.numerics.kernel_energy` (any
theory whose kernel is linear in an order parameter, K(U) = Σ_ab U_ab C_ab, shares it), under this theory's names."""

from ...numerics.kernel_energy import (SPACES, FeatureKernelEnergy, FeatureSpaceEnergy, KernelEnergy,  # noqa: F401
                                       _add_to_diagonal, _cho_solve, _cholesky, energy_for,
                                       hessian_from_feature_blocks)
