"""``cupyx`` of the stand-in (``cupyx.scipy.special`` and ``cupyx.scipy.linalg``)."""
