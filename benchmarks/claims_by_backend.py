"""Every built-in claim under ``--backend numpy`` beside ``--backend cupy`` on one machine: issue 39 asks that none be
slower on the device.

    python benchmarks/claims_by_backend.py [--profile quick] [--only PATTERN] [--skip PATTERN] [--seed 0]

On a GPU each claim runs once per backend (same seed, same examples) and the table gives both wall times and their
ratio. On the strict stand-in (``ATTNVERIFY_CUPY_STANDIN=1 PYTHONPATH=tests/cupy_standin``), whose speed says
nothing, the cupy column counts what a GPU would pay for instead: the device arrays the claim creates (≈ kernel
launches) and the times a device value reaches the host (synchronisations), and projects a floor for its device time
at ``LAUNCH_SECONDS`` a launch and ``SYNC_SECONDS`` a synchronisation, arithmetic and transfers left out. A claim
whose floor exceeds its numpy time is marked ``at risk``: launches, not arithmetic, would make it slower on a GPU.
The mark is sufficient, not necessary: a claim's device time is also its host work, which the floor leaves out.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from attnverify.base.backend import cupy_works
from attnverify.execution.settings import RunSettings
from attnverify.run.claims import run_claim_or_error
from attnverify.theories import builtin_claims

LAUNCH_SECONDS = 5e-6
"""The least a CUDA kernel launch costs (5–10 µs each, measured on an H100 for cupy's elementwise kernels)."""
SYNC_SECONDS = 10e-6
"""The least a host synchronisation with a device-to-host copy costs."""
HOST_READS = ("get", "__float__", "__int__", "__bool__", "__index__", "item", "tolist")
"""Every way the stand-in's device array reaches the host."""


def counting_host_reads(cupy) -> list[int]:
    """``[n]``: the device values read by the host since the call, counted on the stand-in's arrays."""
    count = [0]
    for name in HOST_READS:
        original = getattr(cupy.ndarray, name)

        def counted(self, *args, _original=original, **kwargs):
            count[0] += 1
            return _original(self, *args, **kwargs)

        setattr(cupy.ndarray, name, counted)
    return count


def timed(claim, backend: str, profile: str, seed: int):
    """(result, seconds) of one run of ``claim`` in this process, its experiments in a fresh store."""
    with tempfile.TemporaryDirectory() as folder:
        begun = time.perf_counter()
        result = run_claim_or_error(claim, RunSettings(profile=profile, backend=backend, seed=seed, store=folder))
        if backend == "cupy":
            import cupy

            if not getattr(cupy, "STANDIN", False):
                cupy.cuda.Device().synchronize()
        return result, time.perf_counter() - begun


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="quick", choices=("quick", "thorough"))
    parser.add_argument("--only", default="", help="only the claims whose name contains this")
    parser.add_argument("--skip", action="append", default=[], help="leave out the claims whose name contains this "
                        "(repeatable; e.g. sampled, whose 1,024 device chains take an hour on the stand-in)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not cupy_works():
        raise SystemExit("claims_by_backend: no working cupy (a GPU, or the stand-in: ATTNVERIFY_CUPY_STANDIN=1 "
                         "PYTHONPATH=tests/cupy_standin)")
    import cupy

    standin = getattr(cupy, "STANDIN", False)
    reads = counting_host_reads(cupy) if standin else None
    claims = [c for c in builtin_claims() if args.only in c.name and not any(p in c.name for p in args.skip)]
    if standin:
        print(f"{'claim':<58} {'numpy s':>8} {'arrays':>9} {'syncs':>8} {'floor s':>8}  verdicts", flush=True)
    else:
        print(f"{'claim':<58} {'numpy s':>8} {'cupy s':>8} {'cupy/np':>8}  verdicts", flush=True)
    totals, at_risk = [0.0, 0.0], []
    for claim in claims:
        host, host_seconds = timed(claim, "numpy", args.profile, args.seed)
        if standin:
            arrays, syncs = cupy.created(), reads[0]
        device, device_seconds = timed(claim, "cupy", args.profile, args.seed)
        verdicts = f"{host.status}/{device.status}"
        if standin:
            arrays, syncs = cupy.created() - arrays, reads[0] - syncs
            device_seconds = arrays * LAUNCH_SECONDS + syncs * SYNC_SECONDS
            risk = "  at risk" if device_seconds > host_seconds else ""
            print(f"{claim.name:<58} {host_seconds:>8.2f} {arrays:>9,} {syncs:>8,} {device_seconds:>8.2f}  "
                  f"{verdicts}{risk}", flush=True)
        else:
            risk = "  slower" if device_seconds > host_seconds else ""
            print(f"{claim.name:<58} {host_seconds:>8.2f} {device_seconds:>8.2f} "
                  f"{device_seconds / host_seconds:>8.2f}  {verdicts}{risk}", flush=True)
        totals[0] += host_seconds
        totals[1] += device_seconds
        if device_seconds > host_seconds:
            at_risk.append(claim.name)
    column = "device floor" if standin else "cupy"
    print(f"\n{len(claims)} claims: numpy {totals[0]:.1f} s, {column} {totals[1]:.1f} s; "
          f"{'at risk' if standin else 'slower on cupy'}: {len(at_risk)}"
          + (f" ({', '.join(at_risk)})" if at_risk else ""))
    if standin:
        print(f"floor: {LAUNCH_SECONDS * 1e6:.0f} µs a device array (≈ a kernel launch) and {SYNC_SECONDS * 1e6:.0f} µs "
              "a host synchronisation; arithmetic and transfers left out")


if __name__ == "__main__":
    main()
