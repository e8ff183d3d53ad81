"""``cupyx.scipy`` of the stand-in."""

from . import linalg, special  # noqa: F401
