# Two entry points for a fresh machine: `make demo` (build the API on the devnet and serve it) and
# `make test`. Everything installs into .venv and node_modules, Python packages from the hash-locked
# requirements/*.txt (regenerate them with `make lock` after editing a pyproject.toml).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
SCENARIO ?= demo
PIP := $(BIN)/python -m pip --quiet --disable-pip-version-check

.PHONY: setup demo build serve test unit lint docs lock bench bench-all clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The runtime set only: what `publisher` needs to build, check, serve and publish.
$(VENV)/.runtime: $(BIN)/python pyproject.toml requirements/runtime.txt
	$(PIP) install --require-hashes -r requirements/runtime.txt
	$(PIP) install --no-deps --no-build-isolation -e .
	@touch $@

# The devnet beside it (devnet/, a distribution of its own that the runtime wheel and the image
# never carry): what `make demo`, the tests and the benchmarks start.
$(VENV)/.devnet: $(VENV)/.runtime devnet/pyproject.toml requirements/devnet.txt
	$(PIP) install --require-hashes -r requirements/devnet.txt
	$(PIP) install --no-deps --no-build-isolation -e ./devnet
	@touch $@

# The test set on top: pytest, schemathesis, moto, web3 (the reference implementation), linters.
$(VENV)/.test: $(VENV)/.devnet requirements/test.txt
	$(PIP) install --require-hashes -r requirements/test.txt
	@touch $@

# `npm ci`: exactly the locked versions, and it never writes package-lock.json. The lock lists
# anvil's binary for every platform (optional dependencies; npm installs the one that matches), so
# it is in sync everywhere. After editing package.json, `npm install` rewrites the lock: commit it.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

setup: $(VENV)/.devnet node_modules/.package-lock.json

# `make demo SCENARIO=wound-down` shows another scenario of the devnet (any that `publisher
# build --scenario` takes). The demo builds a fresh chain into out/ whatever an earlier build left
# there (another scenario, a rehearsal, a watch): --force lifts only the change bounds against that
# previous run, which guard a publisher following one chain; schemas and invariants still hold.
demo: setup
	$(BIN)/publisher build --scenario $(SCENARIO) --out out --force
	$(BIN)/publisher serve --dir out --port $(PORT)

# One pytest worker more than there are cores: many tests spend seconds waiting on a node, a
# retry's backoff or a subprocess, and the extra worker keeps the cores busy meanwhile.
WORKERS ?= $(shell $(PYTHON) -c 'import os; print((os.cpu_count() or 1) + 1)')

test: setup $(VENV)/.test
	$(BIN)/ruff check publisher devnet tests benchmarks tools
	$(BIN)/mypy
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadgroup -q

# The pure tests alone: no anvil, node or Chromium (tests/conftest.py marks each test by what it
# uses); they need only the Python test set, and finish in about a minute.
unit: $(VENV)/.test
	$(BIN)/python -m pytest -m unit -n 2 -q

lint: $(VENV)/.test
	$(BIN)/ruff check publisher devnet tests benchmarks tools
	$(BIN)/mypy

# Regenerate the documentation's generated tables (the tests fail when they drift): the command and
# variable tables from the code, docs/performance.md's tables from benchmarks/results/.
docs: $(VENV)/.runtime
	$(BIN)/python tools/gendocs.py
	$(BIN)/python benchmarks/report.py

# Resolve the locks anew from pyproject.toml and devnet/pyproject.toml (needs uv: `pip install uv`):
# the runtime set, the devnet's (the runtime set and what the devnet adds) and the tests' (both and
# the test tools). The two local packages themselves are installed from the checkout, not the locks.
UV_COMPILE := uv pip compile --generate-hashes --universal --python-version 3.11 --quiet --custom-compile-command "make lock" \
  --no-emit-package ggp-publisher --no-emit-package ggp-devnet

lock:
	$(UV_COMPILE) pyproject.toml requirements/build.in -o requirements/runtime.txt
	$(UV_COMPILE) requirements/devnet.in requirements/build.in -o requirements/devnet.txt
	$(UV_COMPILE) pyproject.toml requirements/devnet.in requirements/build.in --extra test -o requirements/test.txt

# Measure, then write the figures into docs/performance.md: each benchmark writes its report into
# benchmarks/results/ and benchmarks/report.py renders the tables from them. `make bench` runs the
# pipeline, the forecasts and growth (GROWTH_SIZES=1k,10k,30k for a lighter run); `make bench-all`
# adds the snapshot's naive baseline, the rewards function, serve, the mainnet rehearsal and the
# soak (which took 23 minutes on a busy machine). The machine should be otherwise idle: every table
# states the load it was measured at.
RESULTS := benchmarks/results
GROWTH_SIZES ?= 10k,100k

bench: setup $(VENV)/.test
	$(BIN)/python benchmarks/bench.py --json $(RESULTS)/pipeline.json
	$(BIN)/python benchmarks/bench_watch.py --scenario mainnet-size --poll 0.1 --changes 7 --json $(RESULTS)/watch.json
	$(BIN)/python benchmarks/bench_watch.py --scenario scale --poll 0.1 --changes 7 --json $(RESULTS)/watch-scale.json
	$(BIN)/python benchmarks/bench_live.py --cycles 10 --every 2 --json $(RESULTS)/live.json
	$(BIN)/python benchmarks/bench_growth.py --sizes $(GROWTH_SIZES) --json $(RESULTS)/growth.json
	$(BIN)/python benchmarks/bench_queue.py --json $(RESULTS)/queue.json
	$(BIN)/python benchmarks/report.py

bench-all: bench
	$(BIN)/python benchmarks/bench_snapshot.py --sample 50 --json $(RESULTS)/snapshot.json
	$(BIN)/python benchmarks/bench_function.py --json $(RESULTS)/function.json
	$(BIN)/python benchmarks/bench_serve.py --json $(RESULTS)/serve.json
	$(BIN)/python benchmarks/bench_mainnet.py --json $(RESULTS)/mainnet.json
	$(BIN)/python benchmarks/soak.py --runs 50 --seed 7 --json $(RESULTS)/soak.json
	$(BIN)/python benchmarks/report.py

clean:
	rm -rf $(VENV) node_modules .pytest_cache
