#!/usr/bin/env bash
# One call on a lent GPU (the `device` tool): the GPU test tier, then the GPU benchmarks beside their numpy baseline
# on the same machine. The machine has numpy, scipy, sympy, hypothesis, pytest(-xdist, -timeout) and cupy; the rest
# travels as wheels in .whl: attnverify's own and the dependencies the image lacks (arviz-stats, mdit-py-plugins,
# latex2mathml), made here first with
#   pip wheel --no-deps -w .whl . && pip download --no-deps -d .whl arviz-stats mdit-py-plugins latex2mathml
#   run: bash benchmarks/gpu_session.sh [pytest arguments, e.g. -k "not manifold"]   (carry .whl; logs under $OUT)
# Environment: TEST_LIMIT (s, default 280), WORKERS (default 12), TIER=0 skips the GPU tier, BENCH=0 the benchmarks,
# BENCH_BUDGET (s, default 60) the longest case a benchmark starts, SOLVE_LIMIT/SAMPLER_LIMIT/NUTS_LIMIT their limits.
# The device budget of a session is 15 minutes with start-up: run the tier and the benchmarks as two calls
# (TEST_LIMIT=240 BENCH=0 …, then TIER=0 …) or one with smaller limits; REPORT=1 TIER=0 BENCH=0 runs the thorough
# report on cupy (REPORT_LIMIT, default 540 s); CLAIMS=1 TIER=0 BENCH=0 every built-in claim on numpy beside cupy
# (CLAIMS_LIMIT, default 540 s).
# Measured on an H100 (2026-11-27): the tier's claim tests of single-location PGD ran over 200 s each on cupy
# (thousands of 4-D steps, each bound by kernel launches and host synchronisations, not arithmetic).
set -u
OUT=${OUT:-/tmp/gpu_session}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
nvidia-smi -L
python3 -c "import cupy, numpy, scipy, sympy; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__, 'sympy', sympy.__version__)"
python3 -c "from attnverify.base.backend import cupy_works; print('cupy_works', cupy_works())"
# Every dependency must import before the tier starts: a missing one shows as dozens of collection errors.
python3 -c "import arviz_stats, mdit_py_plugins, latex2mathml, attnverify.numerics.diagnostics" || exit 1
if [ "${TIER:-1}" = 1 ]; then
ATTNVERIFY_EVALUATOR_LOG=$OUT/evaluators.jsonl timeout -s INT ${TEST_LIMIT:-280} python3 -m pytest -q -m gpu -n ${WORKERS:-12} \
    --dist load -p no:cacheprovider --timeout 200 --durations=15 -rfE "$@" 2>&1 | tee "$OUT/gpu_tests.log" | tail -40
python3 - "$OUT/evaluators.jsonl" <<'PY'
import json, sys
try:
    rows = [json.loads(line) for line in open(sys.argv[1])]
except FileNotFoundError:
    rows = []
print(f"evaluators compared numpy vs cupy: {len(rows)} calls, {len({tuple(r['arguments']) for r in rows})} distinct "
      f"argument lists, worst relative difference {max((r['worst_relative_difference'] for r in rows), default=0):.3g}")
PY
fi
if [ "${REPORT:-0}" = 1 ]; then  # the thorough report on the device (issue 39 asks: within 10 minutes)
    /usr/bin/time -f "report --profile thorough --backend cupy: %e s wall" timeout -s INT ${REPORT_LIMIT:-540} \
        python3 -m attnverify report --profile thorough --backend cupy --workers ${WORKERS:-12} --out "$OUT/report" \
        2>&1 | tee "$OUT/report.log" | tail -15
fi
if [ "${CLAIMS:-0}" = 1 ]; then  # every built-in claim on numpy beside cupy (issue 39: none slower on the device)
    timeout ${CLAIMS_LIMIT:-540} python3 benchmarks/claims_by_backend.py 2>&1 | tee "$OUT/claims.log" | tail -60
fi
[ "${BENCH:-1}" = 1 ] || exit 0
# The benchmarks, numpy (all cores) beside cupy on this machine; each case stops itself past BENCH_BUDGET seconds.
for be in numpy cupy; do timeout 60 python3 benchmarks/bench_single_location.py --backend $be 2>&1 | tee -a "$OUT/bench.log" | tail -4; done
timeout ${SOLVE_LIMIT:-150} python3 benchmarks/bench_device.py solve --budget ${BENCH_BUDGET:-60} 2>&1 | tee -a "$OUT/bench.log"
timeout ${SAMPLER_LIMIT:-240} python3 benchmarks/bench_device.py sampler --budget ${BENCH_BUDGET:-60} 2>&1 | tee -a "$OUT/bench.log"
timeout ${SAMPLER_LIMIT:-240} python3 benchmarks/bench_device.py network --budget ${BENCH_BUDGET:-60} 2>&1 | tee -a "$OUT/bench.log"
# numpyro's NUTS on the same posterior and this GPU (jax), its chains as one vectorized batch, beside ours at 1,024
# chains on cupy, both at the device sizes (150 warm-up + 25 draws); the ratio leaves numpyro's compilation out
timeout ${NUTS_LIMIT:-240} python3 benchmarks/bench_posterior_sampler.py --backend cupy --chains 1024 --warmup 150 \
    --draws 25 --widths 10 --no-gibbs --nuts-chains 1024 --nuts-method vectorized --nuts-warmup 150 --nuts-draws 25 \
    2>&1 | tee -a "$OUT/bench.log" | tail -5
