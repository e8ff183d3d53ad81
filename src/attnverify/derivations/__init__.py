"""Symbolic derivations (sympy) and the code generator that turns them into array evaluators."""
