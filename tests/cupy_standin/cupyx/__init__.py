"""``cupyx`` of the stand-in: ``errstate``/``seterr``/``geterr`` for ``linalg`` ('ignore', cupy's default, or
'raise'), and ``cupyx.scipy.special`` and ``cupyx.scipy.linalg``."""

import contextlib
import threading

_config = threading.local()


def geterr() -> dict:
    return {"linalg": getattr(_config, "linalg", "ignore")}


def seterr(*, linalg=None, **others) -> dict:
    if others:
        raise NotImplementedError(f"cupy stand-in: cupyx.seterr supports linalg only, got {sorted(others)}")
    old = geterr()
    if linalg is not None:
        if linalg not in ("ignore", "raise"):
            raise NotImplementedError(linalg)
        _config.linalg = linalg
    return old


@contextlib.contextmanager
def errstate(*, linalg=None, **others):
    old = seterr(linalg=linalg, **others)
    try:
        yield
    finally:
        seterr(**old)
