# Two entry points, each sets itself up on a fresh machine with only python3.11 and make:
#   make report   -> virtual environment + default derivation report in ./report
#   make test     -> virtual environment + quick test tier
#   make docs     -> the documentation site in build/site, its verdicts and figures from a report run first
# Both reports keep their run in build/store/KEY (attnverify report --store), KEY a fingerprint of this code
# (attnverify.run.report.store_key: the package's files, the tutorial's examples, the versions of Python and of
# the dependencies, the ATTNVERIFY_* settings). `make docs` after `make report` reads the papers' finished claims
# and experiments back from there (their sections are drawn again from those experiments) and checks only the
# examples' claims; after any change of the code the key, and so the folder, is new, and everything runs again.
# Only the current key's folder is kept.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: report test test-standin test-load test-thorough check docs docs-browser docs-serve clean

# pip compiles the installed modules on one core (~40 s of the set-up); compileall -j 0 does it on every core
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-compile -e '.[test]'
	$(BIN)/python -m compileall -q -j 0 $(VENV)/lib > /dev/null || true
	touch $(STAMP)

# the site's tools (mkdocs-material, mkdocstrings) and the notebook tutorial's kernel, each installed once
$(VENV)/.docs-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet --no-compile -e '.[test,docs]'
	touch $@

$(VENV)/.notebook-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet --no-compile -e '.[test,notebook]'
	touch $@

# the examples docs/examples.md shows with their verdicts, which `make docs` adds to the report (part of the store's
# key, so one folder serves both); examples/new_bound.py, whose unexpected refutation is its point, is shown alone
DOCS_EXAMPLES := examples/attention_mean.py examples/linear_network.py examples/relu_saddle.py \
	examples/erf_saddle.py examples/relu_kernel.py examples/erf_kernel.py examples/partition_theory.py \
	examples/deep_linear_saddle.py

# sets $$store to build/store/KEY and removes the folders of other keys (runs of code that is no longer here)
STORE = key=$$($(BIN)/python -c 'import sys; from attnverify.run.report import store_key; \
	print(store_key(*sys.argv[1:]))' $(DOCS_EXAMPLES)) && store=build/store/$$key && mkdir -p build/store && \
	find build/store -mindepth 1 -maxdepth 1 ! -name "$$key" -exec rm -rf {} +

report: $(STAMP)
	$(STORE) && $(BIN)/attnverify report --out report --store "$$store"

# pytest-xdist: one worker per core, each test module on one worker (module fixtures built once; with
# --dist loadgroup the report-section fixtures were built twice and the tier took 5 min 13 s instead of ~4).
# --no-loadscope-reorder: modules go to the workers in the order tests/conftest.py collects them (the longest
# first), not xdist's default of the most tests first, which started the ~90 s section fixture near the end
XDIST  := -n auto --dist loadscope --no-loadscope-reorder

test: $(STAMP)
	$(BIN)/python -m pytest -q -m "not thorough and not load" $(XDIST)

# The same verdicts with the machine kept busy (3 spinning processes per core, started by the tests): every
# derivation step of the built-ins and of examples/ as idle, and the README's theorem as expected.
test-load: $(STAMP)
	$(BIN)/python -m pytest -q -m load tests/under_load

# The GPU path without a GPU: the gpu-marked tests (every finding of the strict cupy stand-in, every boundary entry
# point with backend="cupy", both samplers, and `check --backend cupy --profile quick` claim by claim) on the
# stand-in of tests/cupy_standin, which is never installed. A real GPU stays the final word: `pytest -m gpu` there.
# The stand-in computes on the CPU, so its sampled networks run the device's many-chain path at the fewest chains
# (ATTNVERIFY_DEVICE_CHAINS, attnverify.saddle.sampling.sampler_size) instead of a GPU's 1,024.
test-standin: $(STAMP)
	ATTNVERIFY_CUPY_STANDIN=1 ATTNVERIFY_DEVICE_CHAINS=64 $(BIN)/python -m pytest -q -m gpu -n auto --dist load

test-thorough: $(VENV)/.notebook-installed
	$(BIN)/python -m pytest -q $(XDIST)

# The site is built offline with warnings as errors (broken links and anchors, API pages that fail to load). Its
# claims tables and figures are read from a finished report of the three papers and the tutorial's examples in
# build/report, written afresh; its claims come from the store of this code (above) where they are there already.
# The site's search from file:// runs in an iframe in place of a web worker: npm's iframe-worker shim (MIT, 1.4 kB)
SEARCH_SHIM := build/iframe-worker/shim/index.js
$(SEARCH_SHIM):
	@command -v npm >/dev/null || { echo "make docs: the offline search needs npm (Node.js) to fetch iframe-worker"; exit 1; }
	mkdir -p build/iframe-worker
	cd build && npm pack --silent iframe-worker@1.0.4 >/dev/null && \
		tar xzf iframe-worker-1.0.4.tgz -C iframe-worker --strip-components=1 && rm iframe-worker-1.0.4.tgz

docs: $(VENV)/.docs-installed $(SEARCH_SHIM)
	rm -rf build/report
	$(STORE) && $(BIN)/attnverify report --out build/report --store "$$store" $(addprefix --with ,$(DOCS_EXAMPLES))
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The built site drawn by headless Chromium from disk: formulas laid out as MathML, figures loaded, pages not blank
docs-browser:
	ATTNVERIFY_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -q -p no:randomly tests/documentation/test_rendered_site.py

# The built site, search included, reads from disk (open build/site/index.html), or served here on port 8000
docs-serve: docs
	$(BIN)/python -m http.server --directory build/site 8000

check: $(STAMP)
	$(BIN)/attnverify check

clean:
	rm -rf $(VENV) report build .pytest_cache .hypothesis
