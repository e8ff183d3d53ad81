"""Helpers shared by the claim tests."""

import dataclasses


def unshrunk(claim):
    """The claim without shrinking: a power test asks only whether a wrong theory is refuted, and each
    shrink trial reruns the whole Monte Carlo check."""
    return dataclasses.replace(claim, shrink_budget=0)
