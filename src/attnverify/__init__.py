"""attnverify: a symbolic-numeric verifier for the theory of attention.

Layers, in the one direction the data flows (see ``shared/style.md``):
``derivations`` (sympy) -> ``numerics`` (arrays) -> ``checks`` (claims) -> ``report`` / ``cli``.
"""

__version__ = "0.1.0"
