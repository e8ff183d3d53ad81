"""The public boundary: one place that turns user input into checked values, or refuses it by name.

Every public function of ``derivations``, ``numerics`` and ``checks`` validates its arguments here,
once, at entry; hot loops work on already-checked values. Each refusal is a ``TypeError`` (wrong
kind of object) or a ``ValueError`` (right kind, outside the valid range) whose message names the
parameter, the valid range and the value given (the scipy convention).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import MISSING, field, fields, is_dataclass
from numbers import Integral, Real
from typing import Any, Callable, Sequence

import numpy as np
from scipy.linalg import cho_factor, lapack

from .backend import Backend, get_backend, on_device


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _interval(low: float, high: float, open_low: bool, open_high: bool) -> str:
    left = "(" if open_low or math.isinf(low) else "["
    right = ")" if open_high or math.isinf(high) else "]"
    return f"{left}{low:g}, {high:g}{right}"


# --------------------------------------------------------------------------- scalars


def _is_number(value: Any) -> bool:
    """A real number: Python/numpy/sympy reals and 0-d real arrays; never a bool."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, (Real, np.floating, np.integer)):
        return True
    dtype = getattr(value, "dtype", None)
    return getattr(value, "shape", None) == () and dtype is not None and getattr(dtype, "kind", "") in "iuf"


def real(
    name: str,
    value: Any,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    open_low: bool = False,
    open_high: bool = False,
) -> float:
    """``value`` as a finite float in [low, high] (open ends with ``open_low``/``open_high``).

    Booleans, strings and arrays are refused (TypeError): ``True`` is not the number 1 here.
    """
    if not _is_number(value):
        raise TypeError(f"{name} must be a real number in {_interval(low, high, open_low, open_high)}, "
                        f"got {_shown(value)} ({type(value).__name__})")
    x = float(value)
    bad = (not math.isfinite(x) or (x <= low if open_low else x < low) or (x >= high if open_high else x > high))
    if bad:
        raise ValueError(f"{name} must be a finite number in {_interval(low, high, open_low, open_high)}, "
                         f"got {_shown(value)}")
    return x


def positive(name: str, value: Any, *, high: float = math.inf) -> float:
    """``value`` as a finite float > 0 (and ≤ ``high``)."""
    return real(name, value, low=0.0, high=high, open_low=True)


def nonnegative(name: str, value: Any, *, high: float = math.inf) -> float:
    """``value`` as a finite float ≥ 0 (and ≤ ``high``)."""
    return real(name, value, low=0.0, high=high)


def integer(name: str, value: Any, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int in [minimum, maximum].

    Integral floats (``8.0``, ``1e5``) are accepted as the integer they equal; ``2.5``, NaN, infinities
    and booleans are refused.
    """
    span = f"≥ {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
    if minimum is None:
        span = "" if maximum is None else f"≤ {maximum}"
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer {span}, got {value!r} (a boolean)".replace("  ", " "))
    if isinstance(value, (Integral, np.integer)):
        n = int(value)
    elif isinstance(value, (Real, np.floating)):
        x = float(value)
        if not math.isfinite(x) or not x.is_integer():
            raise ValueError(f"{name} must be an integer {span}, got {_shown(value)}".replace("  ", " "))
        n = int(x)
    else:
        raise TypeError(f"{name} must be an integer {span}, got {_shown(value)} ({type(value).__name__})"
                        .replace("  ", " "))
    if (minimum is not None and n < minimum) or (maximum is not None and n > maximum):
        raise ValueError(f"{name} must be an integer {span}, got {_shown(value)}")
    return n


def available_memory() -> int:
    """Bytes of memory this process may still allocate: the kernel's MemAvailable (else the free pages), less
    where a cgroup limit (a container's) or this process's own limits (``ulimit -v``, ``ulimit -d``: what is left
    of them above its address space and its data) leave less."""
    available = None
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for row in meminfo:
                if row.startswith("MemAvailable:"):
                    available = int(row.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, AttributeError):
            return 2**63  # nothing says: no refusal here (numpy's own error remains)
    try:
        limit = open("/sys/fs/cgroup/memory.max", encoding="ascii").read().strip()
        if limit != "max":
            used = int(open("/sys/fs/cgroup/memory.current", encoding="ascii").read())
            available = min(available, max(int(limit) - used, 0))
    except (OSError, ValueError):
        pass
    return min(available, _left_by_process_limits())


def _left_by_process_limits() -> int:
    """Bytes left below the soft limits on this process's address space (VmSize) and data (VmData); 2⁶³ where none
    is set or nothing says."""
    left = 2**63
    try:
        import resource

        sizes = {}
        with open("/proc/self/status", encoding="ascii") as status:
            for row in status:
                if row.startswith(("VmSize:", "VmData:")):
                    sizes[row.split(":")[0]] = int(row.split()[1]) * 1024
        for limit, used in ((resource.RLIMIT_AS, "VmSize"), (resource.RLIMIT_DATA, "VmData")):
            soft = resource.getrlimit(limit)[0]
            if soft != resource.RLIM_INFINITY and used in sizes:
                left = min(left, max(soft - sizes[used], 0))
    except (ImportError, OSError, ValueError, IndexError):
        pass
    return left


def _size_text(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(nbytes) < 1024 or unit == "EiB":
            return f"{nbytes:.3g} {unit}"
        nbytes /= 1024
    return f"{nbytes:.3g} EiB"


def fits_in_memory(name: str, nbytes: int | float, what: str, *, value: Any = None, backend: Any = None) -> None:
    """Refuse, before allocating, ``nbytes`` for ``what`` that the memory available now cannot hold: a ValueError
    naming the size argument ``name`` (and its ``value``), the bytes needed and those available (on ``backend``'s
    device for cupy, else in the host's memory)."""
    be = None if backend is None else get_backend(backend)
    if be is not None and be.name == "cupy":
        try:
            available, where = int(be.xp.cuda.runtime.memGetInfo()[0]), "on the GPU"
        except Exception:
            available, where = available_memory(), ""
    else:
        available, where = available_memory(), ""
    if nbytes > available:
        given = "" if value is None else f" = {_shown(value)}"
        raise ValueError(f"{name}{given} needs {_size_text(nbytes)} for {what}, more than the "
                         f"{_size_text(available)} of memory available{' ' + where if where else ''}; "
                         f"give a smaller {name}")


MOST_NUMBERS_DRAWN = 10**13
"""The most random numbers one run may ask to draw (a Monte Carlo draw, a sample, a batch of SGD tokens, each one or
more): numpy makes 4·10⁷–10⁸ normals a second on one core, so 10¹³ take one to three days before any use of them."""


def at_most_work(name: str, value: int, most: int, what: str, *, work: int | None = None) -> None:
    """Refuse, before any of it starts, work that no run finishes: more than ``most`` ``what`` (steps, fits, numbers
    drawn), counted by the checked integer ``value`` of the argument ``name`` or, given, by ``work`` (what ``value``
    makes: draws times the numbers of one). A ValueError naming ``name``, its value, the work and the most allowed.

    Each cap (a ``MOST_…`` constant) states its arithmetic: the work it allows takes hours to days on one core, far
    beyond any run of the project's claims, examples and benchmarks."""
    if (value if work is None else work) > most:
        asked = (f"makes {work:,} {what}, more than the {most:,}" if work is not None
                 else f"is more than the {most:,} {what}")
        raise ValueError(f"{name} = {value:,} {asked} a run may ask for; give a smaller {name}")


def integers(name: str, values: Any, minimum: int | None = None, *, length: int | None = None) -> tuple[int, ...]:
    """A non-empty sequence of integers ≥ ``minimum`` as a tuple (``heads=(4, 4)``)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a sequence of integers, got {_shown(values)}")
    if len(values) == 0 or (length is not None and len(values) != length):
        wanted = "non-empty" if length is None else f"of length {length}"
        raise ValueError(f"{name} must be a {wanted} sequence of integers, got {_shown(values)}")
    return tuple(integer(f"{name}[{i}]", v, minimum) for i, v in enumerate(values))


def name_mismatch(given: Sequence[str], expected: Sequence[str], *, unknown: str = "no parameter named") -> str:
    """For an error that says which names are wrong: "" when ``given`` holds exactly the names ``expected``, else
    "; missing a, b" and/or "; <unknown> c" (each in the order given)."""
    missing = [n for n in expected if n not in given]
    extra = [n for n in given if n not in expected]
    return (f"; missing {', '.join(missing)}" if missing else "") + (f"; {unknown} {', '.join(extra)}" if extra else "")


def closest(word: str, candidates: Sequence[str], cutoff: float = 0.75) -> str | None:
    """The candidate ``word`` most likely misspells (difflib's ratio ≥ ``cutoff``), or None: for "did you mean"."""
    import difflib

    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=cutoff)
    return close[0] if close else None


def one_of(name: str, value: Any, choices: Sequence[Any]) -> Any:
    """``value`` when it is one of ``choices``, else ValueError listing them."""
    try:
        if value in choices:
            return value
    except TypeError:  # unhashable or uncomparable
        pass
    raise ValueError(f"{name} must be one of {tuple(choices)}, got {_shown(value)}")


def function(name: str, value: Any, shape: str = "", *, optional: bool = False) -> Callable | None:
    """``value`` when it is callable (or None, with ``optional``), else TypeError naming its type and what it must
    be: ``shape`` ("a function of one line of text"), else callable."""
    if not callable(value) and not (optional and value is None):
        raise TypeError(f"{name} must be {shape or 'callable'}{', or None' if optional else ''}, got "
                        f"{type(value).__name__}")
    return value


def flag(name: str, value: Any) -> bool:
    """``value`` as a bool (only ``True``/``False``)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {_shown(value)}")
    return bool(value)


# --------------------------------------------------------------------------- declared fields

_CHECK = "attnverify.check"


def checked(rule: Callable[..., Any], *args: Any, default: Any = MISSING, default_factory: Any = MISSING,
            named: str | None = None, optional: bool = False, compare: bool = True, **kwargs: Any) -> Any:
    """A dataclass field checked by ``rule(name, value, *args, **kwargs)``, a check of this module (`integer`,
    `real`, `one_of`, …) or of the class's own module, whose result becomes the field's value; ``named``: the name a
    refusal gives (the field's by default); ``optional``: None passes unchecked; ``default``, ``default_factory`` and
    ``compare`` as `dataclasses.field` takes them. A `Checked` dataclass runs the rules."""
    return field(default=default, default_factory=default_factory, compare=compare,
                 metadata={_CHECK: (rule, args, kwargs, named, optional)})


@contextmanager
def refusals_about(subject: str) -> Iterator[None]:
    """A refusal (``TypeError`` or ``ValueError``) raised inside, its message led by ``subject: `` (what the refused
    value belongs to, e.g. ``claim 'theory.name'``); nothing changes for an empty ``subject``."""
    try:
        yield
    except (TypeError, ValueError) as error:
        if subject and len(error.args) == 1 and isinstance(error.args[0], str) and str(error) == error.args[0]:
            error.args = (f"{subject}: {error.args[0]}",)  # the same error, its type, cause and notes kept
        raise


class Checked:
    """A dataclass (frozen or not) whose `checked` fields are checked once, when it is made, in their order, each
    replaced by what its rule returns; then ``_check_fields``, where a class defines what relates its fields. A
    refusal is led by the class's ``_subject()`` where it gives one (what the object is, by the fields checked
    before)."""

    def __post_init__(self) -> None:
        for declared in fields(self):
            check = declared.metadata.get(_CHECK)
            if check is None:
                continue
            rule, args, kwargs, named, optional = check
            value = getattr(self, declared.name)
            if not (optional and value is None):
                with refusals_about(self._subject()):
                    object.__setattr__(self, declared.name, rule(named or declared.name, value, *args, **kwargs))
        with refusals_about(self._subject()):
            self._check_fields()

    def _subject(self) -> str:
        """What leads every refusal of a field (nothing, unless a class says)."""
        return ""

    def _check_fields(self) -> None:
        """What relates the fields, checked after each field's own rule (nothing, unless a class says)."""


# --------------------------------------------------------------------------- objects


def backend(value: Any, name: str = "backend") -> Backend:
    """A `Backend`, by object or by name (``'numpy'``/``'cupy'``); None: numpy."""
    if value is not None and not isinstance(value, (Backend, str)):
        raise TypeError(f"{name} must be 'numpy', 'cupy', a Backend or None, got {_shown(value)}")
    try:
        return get_backend(value)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None


def generator(rng: Any, be: Backend | None = None, name: str = "rng", *, any_backend: bool = False) -> Any:
    """A random Generator: ``rng`` itself, or the backend's Generator seeded with the integer ``rng``. A Generator
    of the other backend (numpy's for a cupy computation, or the reverse) is refused, unless ``any_backend``
    (code that only passes the Generator on to a user's function, as
    [`sized_mean`][attnverify.numerics.sized.sized_mean])."""
    if isinstance(rng, (Integral, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        if rng < 0:
            raise ValueError(f"{name} must be a seed ≥ 0 or a random Generator, got {rng!r}")
        return (be or get_backend("numpy")).random(int(rng))
    if rng is None or isinstance(rng, (bool, np.bool_)) or not hasattr(rng, "standard_normal"):
        raise TypeError(
            f"{name} must be an integer seed ≥ 0 or a random Generator (numpy or backend), got {_shown(rng)}; "
            "randomness must be explicit"
        )
    cupy_generator = on_device(rng)
    wanted = (be or get_backend("numpy")).name
    if not any_backend and cupy_generator != (wanted == "cupy"):
        raise TypeError(f"{name} is a {'cupy' if cupy_generator else 'numpy'} Generator but the computation runs on "
                        f"{wanted}: give {wanted}'s Generator (backend.random(seed)) or an integer seed")
    return rng


def settings(name: str, value: Any, kind: type) -> Any:
    """An instance of the dataclass ``kind``: ``value`` itself, or ``kind(**value)`` for a mapping
    (None gives the defaults). Unknown keys are refused by name."""
    if value is None:
        return kind()
    if isinstance(value, kind):
        return value
    if isinstance(value, Mapping):
        known = {f.name for f in fields(kind)} if is_dataclass(kind) else set()
        unknown = sorted(str(k) for k in value if k not in known)
        if unknown:
            raise ValueError(f"{name} has unknown fields {unknown}; {kind.__name__} takes {sorted(known)}")
        return kind(**value)
    raise TypeError(f"{name} must be a {kind.__name__} (or a dict of its fields), got {_shown(value)}")


# --------------------------------------------------------------------------- arrays


def array(
    name: str,
    value: Any,
    be: Backend | None = None,
    *,
    shape: tuple[int | None, ...] | None = None,
    ndim: int | None = None,
    min_ndim: int | None = None,
    allow_empty: bool = False,
    read_only: bool = False,
) -> Any:
    """``value`` as a finite float64 array of the backend ``be`` (numpy when None).

    ``shape`` fixes the axes (None: any length on that axis); ``ndim``/``min_ndim`` fix only their
    number. Non-numeric input is a TypeError; NaN, infinities, a wrong shape or an empty array a
    ValueError naming ``name``. ``read_only`` (numpy only) returns a frozen copy.
    """
    be = be or get_backend("numpy")
    if value is None or isinstance(value, (str, bytes, Mapping)):
        raise TypeError(f"{name} must be an array of real numbers, got {_shown(value)}")
    if be.name == "numpy" and on_device(value):
        raise TypeError(f"{name} is a device (cupy) array, but this computation runs on numpy: pass "
                        f"backend='cupy' where the function takes one, or {name}.get() to bring it to the host")
    if getattr(value, "dtype", None) is None:  # lists, tuples, scalars: look at them as numpy first
        try:
            value = np.asarray(value)
        except (TypeError, ValueError) as error:  # ragged nesting
            raise TypeError(f"{name} must be an array of real numbers ({error})") from None
    if getattr(value.dtype, "kind", "O") not in "biuf":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {value.dtype}")
    arr = be.asarray(value)
    if read_only and be.name == "numpy":
        arr = np.array(arr, dtype=np.float64)
    if shape is not None:
        if arr.ndim != len(shape) or any(s is not None and s != n for s, n in zip(shape, arr.shape)):
            wanted = "(" + ", ".join("·" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
            raise ValueError(f"{name} must have shape {wanted}, got {tuple(arr.shape)}")
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} axes, got shape {tuple(arr.shape)}")
    if min_ndim is not None and arr.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} axes, got shape {tuple(arr.shape)}")
    if not allow_empty and arr.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(arr.shape)}")
    if not bool(be.xp.all(be.xp.isfinite(arr))):
        raise ValueError(f"{name} must contain only finite numbers, got NaN or infinity")
    if read_only and be.name == "numpy":
        arr.setflags(write=False)
    return arr


def broadcastable(named: Mapping[str, Any], what: str = "the array arguments") -> tuple[int, ...]:
    """The common broadcast shape of the named values, else a ValueError naming them with their shapes."""
    shapes = {name: tuple(np.shape(value)) for name, value in named.items()}
    try:
        return tuple(np.broadcast_shapes(*shapes.values()))
    except ValueError:
        listed = ", ".join(f"{name} {shape}" for name, shape in shapes.items() if shape != ())
        raise ValueError(f"{what} must broadcast together, got shapes {listed}") from None


def same_length(name: str, size: int, other: str, other_size: int) -> None:
    """ValueError unless two sizes that the theory ties together agree (``k`` and ``k_star``; ``d``)."""
    if size != other_size:
        raise ValueError(f"{name} has length {size} but {other} is {other_size}; they must agree")


# --------------------------------------------------------------------------- matrices


def symmetric(name: str, matrix: Any) -> np.ndarray:
    """``matrix`` as a finite, square, symmetric float64 host array (to relative round-off)."""
    arr = array(name, matrix, ndim=2)
    if arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {arr.shape}")
    scale = float(np.max(np.abs(arr))) if arr.size else 0.0
    if not np.allclose(arr, arr.T, rtol=1e-12, atol=1e-14 * max(scale, 1.0)):
        raise ValueError(f"{name} must be symmetric")
    return arr


def positive_definite_factor(name: str, matrix: Any):
    """scipy's lower Cholesky factor (``cho_factor``) of a symmetric positive-definite ``matrix``;
    ValueError naming ``name`` (with the smallest eigenvalue) otherwise."""
    arr = symmetric(name, matrix)
    try:
        return cho_factor(arr, lower=True)
    except np.linalg.LinAlgError:
        eig = float(np.linalg.eigvalsh(arr).min())
        raise ValueError(f"{name} must be positive definite, got smallest eigenvalue {eig:.3g}") from None


def semidefinite_eigh(name: str, matrix: Any, *, rtol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """(eigenvalues ascending, eigenvectors) of a symmetric positive-semidefinite ``matrix`` (`symmetric`, then
    eigenvalues ≥ −rtol·λ_max, round-off, as `positive_semidefinite` allows), else ValueError naming ``name`` with
    its smallest eigenvalue: for a factor or a spectrum of a matrix that may be singular (no Cholesky there)."""
    arr = symmetric(name, matrix)
    values, vectors = np.linalg.eigh(0.5 * (arr + arr.T))
    if values.size and (values[0] < -rtol * max(float(values[-1]), 0.0) or (values[-1] <= 0 and values[0] < 0)):
        raise ValueError(f"{name} must be positive semi-definite, got smallest eigenvalue {values[0]:.3g}")
    return values, vectors


def positive_semidefinite(name: str, matrix: Any, *, rtol: float = 1e-10, symmetrised: bool = False,
                          scratch: bool = False) -> np.ndarray:
    """``matrix`` when symmetric with eigenvalues ≥ −rtol·λ_max (round-off), else ValueError naming ``name``
    with its smallest eigenvalue. ``symmetrised``: the caller made ``matrix`` symmetric (½(A + Aᵀ) of an A whose
    symmetry it checked), so only its definiteness is checked here. ``scratch``: the caller's symmetric float64
    array may be overwritten (its upper triangle), which spares a copy.

    Fast path: a Cholesky factorisation of A + 2·rtol·Tr(A⁺)·I (Tr(A⁺), the sum of the positive diagonal,
    is ≥ λ_max, so it succeeds for every A the eigenvalue test accepts, at a fraction of the cost of
    eigvalsh). Where it succeeds A is accepted, so the round-off allowed is up to 2·rtol·Tr(A⁺) ≤ 2n·rtol·λ_max;
    where it fails the eigenvalues decide, and name the smallest.
    """
    arr = array(name, matrix, ndim=2) if symmetrised else symmetric(name, matrix)
    diagonal = np.diag(arr).copy()
    shift = 2.0 * rtol * float(np.sum(np.clip(diagonal, 0.0, None)))
    in_place = scratch and arr.flags.c_contiguous and arr.dtype == np.float64
    if shift > 0 and np.all(np.isfinite(diagonal)):
        # LAPACK's column-major lower triangle: Aᵀ's, that is A's upper triangle, in place when A is scratch
        shifted = arr.T if in_place else np.array(arr, dtype=float, order="F")
        shifted[np.diag_indices_from(shifted)] += shift
        factor, info = lapack.dpotrf(shifted, lower=1, clean=0, overwrite_a=1)
        if info == 0 and np.all(np.isfinite(np.diag(factor))):  # the factor exists (a NaN would reach its diagonal)
            return arr
        if in_place:  # the lower triangle is A's own; its diagonal comes back
            arr[np.diag_indices_from(arr)] = diagonal
    eig = np.linalg.eigvalsh(arr, UPLO="L")
    if eig[0] < -rtol * max(float(eig[-1]), 0.0) or (eig[-1] <= 0 and eig[0] < 0):
        raise ValueError(f"{name} must be positive semi-definite, got smallest eigenvalue {eig[0]:.3g}")
    return arr


# --------------------------------------------------------------------------- broadcast scalars (attention paths)


def positives(name: str, value: Any, length: int, meaning: str = "") -> tuple[float, ...]:
    """``length`` finite floats > 0: one number for all (``width=N``), or a sequence of exactly ``length``
    numbers (``width=(n_0, …, n_L)``, described by ``meaning``); entries are named ``name[i]``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)) or np.ndim(value) == 0:
        return (positive(name, value),) * length
    if len(value) != length:
        described = f" {meaning}" if meaning else ""
        raise ValueError(f"{name} must be a number or a sequence of {length} numbers{described}, got {_shown(value)}")
    return tuple(positive(f"{name}[{i}]", v) for i, v in enumerate(value))


# --------------------------------------------------------------------------- numbers or arrays of them (single location)


def reals(
    name: str,
    value: Any,
    be: Backend | None = None,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    open_low: bool = False,
    open_high: bool = False,
    integral: bool = False,
    lists: bool = False,
) -> Any:
    """A number in [low, high] (as `real`, or `integer` when ``integral``), or an array of
    them (float64 of the backend ``be``, host numpy when None; every entry in range): for closed forms
    that broadcast over a grid of a parameter. Lists and tuples are refused unless ``lists``."""
    if lists and isinstance(value, (list, tuple)):
        value = array(name, value)
    if getattr(value, "dtype", None) is None or getattr(value, "ndim", 0) == 0:
        if getattr(value, "dtype", None) is not None and getattr(value.dtype, "kind", "O") in "iuf":
            value = value.item()  # a 0-d array: its number
        if integral:
            lowest = None if math.isinf(low) else math.ceil(low)
            highest = None if math.isinf(high) else math.floor(high)
            return integer(name, value, lowest, highest)
        return real(name, value, low=low, high=high, open_low=open_low, open_high=open_high)
    if getattr(value.dtype, "kind", "O") == "b":
        raise TypeError(f"{name} must be real numbers in {_interval(low, high, open_low, open_high)}, "
                        f"got an array of booleans")
    host = value.get() if on_device(value) else value
    arr = array(name, host)
    bad = (arr <= low if open_low else arr < low) | (arr >= high if open_high else arr > high)
    if integral:
        bad |= arr != np.round(arr)
    if bool(np.any(bad)):
        kind = "integers" if integral else "numbers"
        raise ValueError(f"{name} must hold {kind} in {_interval(low, high, open_low, open_high)}, "
                         f"got {_shown(float(arr[bad].ravel()[0]))} among them")
    return arr if be is None else be.asarray(arr)
