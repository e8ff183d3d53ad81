"""Every step of a recorded derivation checked: symbolically where sympy decides it, else numerically at random
admissible points in 30-digit arithmetic, each step within a time budget; marked steps (definitions,
assumptions) shown as such, conditions held against the later steps that solve them. The rules, step by step:
docs/derivation_steps.md; one job per module: outcome, budget, expressions, symbolic, points, numeric, comparison
(one comparison, kept on disk), relations (what a step claims), walk (a whole derivation)."""

from .budget import BUDGET_VARIABLE, STEP_BUDGET, step_budget
from .comparison import checker_version, compare, comparison_key
from .expressions import function
from .numeric import AGREEMENT_DIGITS, WORKING_DIGITS
from .outcome import OUTCOMES, StepCheck, counts, counts_text
from .points import POINTS, QUADRATURE_POINTS
from .symbolic import EXPAND_OPERATIONS, SIMPLIFY_OPERATIONS
from .walk import check_derivation, derivation_key

__all__ = ["AGREEMENT_DIGITS", "BUDGET_VARIABLE", "EXPAND_OPERATIONS", "OUTCOMES", "POINTS",
           "QUADRATURE_POINTS", "SIMPLIFY_OPERATIONS", "STEP_BUDGET", "StepCheck", "WORKING_DIGITS", "check_derivation",
           "checker_version", "compare", "comparison_key", "counts", "counts_text", "derivation_key", "function",
           "step_budget"]
