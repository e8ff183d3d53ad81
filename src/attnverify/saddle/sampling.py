"""The one driver of sampled networks: chains of the one HMC kernel
([`attnverify.numerics.hmc.run_chains`][attnverify.numerics.hmc.run_chains]) on a batched posterior (the collapsed
posterior of `attnverify.saddle.network`, or any kernel with a start, a potential and gradient and a record), with the
memory refused by name before the first draw and the kept records stacked as (…, chains, draws) for the diagnostics
([`attnverify.numerics.diagnostics.summarize`][attnverify.numerics.diagnostics.summarize]).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..base import arguments
from ..numerics import hmc
from ..numerics.diagnostics import MANY_CHAINS, superchain_size, superchains_for


DEVICE_CHAINS = 1024
"""Chains on a device backend (`sampler_size`): a leapfrog step of a batch of chains costs a GPU about what one
chain costs (a fixed number of launches whatever the batch, ``tests/saddle/test_network_device.py``), so there the
draws come from many chains rather than long ones: 32 superchains × 32 (`superchains_for`)."""

DEVICE_CHAINS_VARIABLE = "ATTNVERIFY_DEVICE_CHAINS"
"""The environment variable that replaces `DEVICE_CHAINS` (a whole number ≥ `MANY_CHAINS`, so that the
many-chain path runs: superchains, ChEES, nested R̂). ``make test-standin`` sets it: the stand-in runs the device
sizes on the CPU, where the cost grows with the chains."""

SHORT_CHAIN_DRAWS = 25
"""The fewest kept draws per chain on a device backend (`sampler_size`).

Measured with these sizes forced on numpy (2026-11-27, a 2-core VM shared with other jobs, so the seconds are loose):
``examples/deep_linear_saddle.py``'s ``sampled_networks_match_theory`` at 1,024 chains × (300 + 25) holds, max
gap/allowed 0.098, 0.166, 0.186 on its three examples (8 × (300 + 500): 0.102, 0.140, 0.163), the nested gate passed on
each. The attention-path ``sampled_markov_network`` at N = 10, 1,024 × (150 + 25): converged (nested F/limit 0.56 for
U, 0.70 for the predictor), max gap/allowed 0.223, accuracy 0.964 against the theory's 0.964, MCSE of U_gg 0.022 (8 ×
(150 + 400): 0.228, 0.963, 0.078). Windows of 25 draws after 150 to 725 iterations of 128 chains in 8 superchains:
the nested gate passed in all 24 (F/limit 0.30–0.66); 64 starts × 2 chains: none still near its start after 150
iterations (each superchain's mean within 3.0 robust sd of the median)."""


def device_chains() -> int:
    """The chains of a device backend: ``$ATTNVERIFY_DEVICE_CHAINS`` if set, else `DEVICE_CHAINS`."""
    value = os.environ.get(DEVICE_CHAINS_VARIABLE)
    if value is None or value == "":
        return DEVICE_CHAINS
    try:
        chains = int(value)
    except ValueError:
        chains = None
    if chains is None or chains < MANY_CHAINS:
        raise ValueError(f"{DEVICE_CHAINS_VARIABLE} must be a whole number ≥ {MANY_CHAINS} (the many-chain path), "
                         f"got {value!r}")
    return chains


def sampler_size(backend, *, chains: int, warmup: int, draws: int) -> dict:
    """The sampler's size on ``backend`` (a Backend, its name, or None for numpy) from its size on the host: on numpy
    ``chains``, ``warmup`` and ``draws`` (kept per chain) as given; on a device backend many short chains,
    `device_chains` of them, the same ``warmup`` (a chain forgets its start in as many transitions however
    many chains run beside it) and max(`SHORT_CHAIN_DRAWS`, ⌈chains·draws/device chains⌉) draws each, so that
    at least as many draws are kept in all. Returns ``dict(chains=…, warmup=…, draws=…)``."""
    name = backend if isinstance(backend, str) or backend is None else backend.name
    if name in (None, "numpy"):
        return dict(chains=chains, warmup=warmup, draws=draws)
    many = device_chains()
    return dict(chains=many, warmup=warmup, draws=max(SHORT_CHAIN_DRAWS, math.ceil(chains * draws / many)))


KEPT_ON_DEVICE_BYTES = 64 * 2**20
"""The most bytes of kept draws (records, acceptances and divergences) that wait on the device to come to the host in
one transfer (`run_sampler`): one host synchronisation for that many draws rather than one a draw, for at most
twice this much device memory (the draws, and the one array they are gathered into)."""


def refuse_chains_that_cannot_fit(chains: int, weights: int, data: int, what: str, *, backend=None) -> None:
    """Refuse, before the first draw, chains whose working memory cannot fit, by name: ``weights`` and ``data`` are
    one chain's bytes for its weights (and everything sized by them) and for its work on the inputs. One chain that
    cannot fit names the larger part, ``network`` or ``X``; more chains than fit name ``chains``."""
    arguments.fits_in_memory("network" if weights >= data else "X", weights + data, f"one chain's {what}",
                             backend=backend)
    arguments.fits_in_memory("chains", chains * (weights + data), f"{chains} chains' {what}", value=chains,
                             backend=backend)


def _nbytes(value) -> int:
    """Bytes of the arrays in ``value`` (nested in dicts, lists and tuples; None counts nothing)."""
    if isinstance(value, dict):
        return sum(_nbytes(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(item) for item in value)
    return 0 if value is None else int(value.nbytes)


def _stacked(records: list):
    """The kept records (one per draw, each (chains, *shape) arrays nested alike) as one structure of arrays shaped
    (*shape, chains, draws)."""
    first = records[0]
    if isinstance(first, dict):
        return {key: _stacked([r[key] for r in records]) for key in first}
    if isinstance(first, (list, tuple)):
        return type(first)(_stacked([r[k] for r in records]) for k in range(len(first)))
    if first is None:
        return None
    return np.moveaxis(np.moveaxis(np.stack(records), 0, -1), 0, -2)


@dataclass(frozen=True)
class SampledChains:
    """What `run_sampler` kept: ``draws``, the records stacked as (*shape, chains, draws) in the structure
    ``record`` returns; acceptance probabilities and divergences (chains, draws); the frozen step sizes (chains,)
    and leapfrog steps; the gradient evaluations and the seconds the run took; the superchains the chains were
    started in (chain c in c // (chains/superchains); None: each chain started on its own), for
    [`summarize`][attnverify.numerics.diagnostics.summarize]."""

    draws: Any
    acceptance: np.ndarray
    divergences: np.ndarray
    step_size: np.ndarray
    steps: int
    gradient_evaluations: int
    seconds: float
    superchains: int | None = None


def run_sampler(potential_and_gradient: Callable, start: Callable[[int], Any], record: Callable[[Any], Any], *,
                chains: int, warmup: int, draws: int, rng, backend, chain_bytes: tuple[int, int], what: str,
                after_transition: Callable | None = None, progress: Callable[[str], None] | None = None,
                superchains: int | str | None = "auto", **kernel_options) -> SampledChains:
    """Run ``chains`` chains from ``start(chains)`` (C, d) with [`run_chains`][attnverify.numerics.hmc.run_chains],
    keeping ``record(x)`` after each of ``draws`` transitions past ``warmup``. Before anything is drawn, one chain's
    ``chain_bytes`` = (weights, data) (``what`` they hold, for the message) and ``chains`` of them are refused if
    they cannot fit (`refuse_chains_that_cannot_fit`); then the kept records (bytes of ``record`` at the start)
    and the warm-up's mass windows ([`refuse_what_cannot_fit`][attnverify.numerics.hmc.refuse_what_cannot_fit]). On a
    device the kept draws come to the host `KEPT_ON_DEVICE_BYTES` at a time, one transfer each. Arguments are trusted:
    the public samplers check them.

    Many chains (≥ `MANY_CHAINS`) are run as Margossian et al. (2024) prescribe
    for nested R̂: ``superchains`` = K ("auto": `superchains_for`; None: every
    chain from its own start) gives each block of M = chains/K chains the start ``start(chains)`` gives its first
    chain (so a start that depends on the chain, e.g. on its own data set, stays valid), and the chains part by their
    own random numbers; and warm-up adapts by ChEES across the chains (``adapt="chees"``) unless
    ``adapt`` is given. Fewer chains run as before, each from its own start, with dual averaging."""
    begun = time.perf_counter()
    refuse_chains_that_cannot_fit(chains, *chain_bytes, what, backend=backend)
    if superchains == "auto":
        superchains = superchains_for(chains)
    x = start(chains)
    if superchains is not None:  # the first chain's start of each block, for all its chains
        size = superchain_size(chains, superchains)
        x = backend.xp.repeat(x[::size], size, axis=0)
    if chains >= MANY_CHAINS:
        kernel_options.setdefault("adapt", "chees")
    record_bytes = _nbytes(record(x))
    hmc.refuse_what_cannot_fit(chains, int(x.shape[1]), warmup=warmup, draws=draws, record_bytes=record_bytes,
                               mass_matrix=kernel_options.get("mass_matrix", "identity"), backend=backend)
    per_transfer = max(1, min(draws, KEPT_ON_DEVICE_BYTES // (record_bytes + 9 * chains)))
    run = hmc.run_chains(potential_and_gradient, x, rng=rng, warmup=warmup, draws=draws, backend=backend,
                         record=record, after_transition=after_transition, progress=progress,
                         draws_per_transfer=per_transfer, **kernel_options)
    return SampledChains(_stacked(run.records), run.acceptance, run.divergences, run.step_size, run.steps,
                         run.gradient_evaluations, time.perf_counter() - begun, superchains)
