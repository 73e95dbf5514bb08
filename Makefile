# Two entry points for a fresh machine: `make demo` (build the API on the embedded devnet and
# serve it) and `make test`. Everything installs into .venv and node_modules, Python packages from
# the hash-locked requirements/*.txt (regenerate them with `make lock` after editing pyproject.toml).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
PIP := $(BIN)/python -m pip --quiet --disable-pip-version-check

.PHONY: setup demo build serve test lint docs lock bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The runtime set only: what `publisher` needs to build, check, serve and publish.
$(VENV)/.runtime: $(BIN)/python pyproject.toml requirements/runtime.txt
	$(PIP) install --require-hashes -r requirements/runtime.txt
	$(PIP) install --no-deps --no-build-isolation -e .
	@touch $@

# The test set on top: pytest, schemathesis, moto, web3 (the reference implementation), linters.
$(VENV)/.test: $(VENV)/.runtime requirements/test.txt
	$(PIP) install --require-hashes -r requirements/test.txt
	@touch $@

# `npm ci`: exactly the locked versions, and it never writes package-lock.json. The lock lists
# anvil's binary for every platform (optional dependencies; npm installs the one that matches), so
# it is in sync everywhere. After editing package.json, `npm install` rewrites the lock: commit it.
node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

setup: $(VENV)/.runtime node_modules/.package-lock.json

demo: setup
	$(BIN)/publisher build --out out
	$(BIN)/publisher serve --dir out --port $(PORT)

test: setup $(VENV)/.test
	$(BIN)/ruff check publisher tests benchmarks
	$(BIN)/mypy publisher
	$(BIN)/python -m pytest -n auto -q

lint: $(VENV)/.test
	$(BIN)/ruff check publisher tests benchmarks
	$(BIN)/mypy publisher

# Regenerate the README's generated tables (the tests fail when they drift).
docs: $(VENV)/.runtime
	$(BIN)/python -m publisher.readme

# Resolve the locks anew from pyproject.toml (needs uv: `pip install uv`).
lock:
	uv pip compile pyproject.toml requirements/build.in --generate-hashes --universal --python-version 3.11 \
	  --quiet --custom-compile-command "make lock" -o requirements/runtime.txt
	uv pip compile pyproject.toml requirements/build.in --extra test --generate-hashes --universal --python-version 3.11 \
	  --quiet --custom-compile-command "make lock" -o requirements/test.txt

# One command, one table (`make bench JSON=bench.json` also writes the figures as JSON). The
# snapshot's naive baseline stays its own script: benchmarks/bench_snapshot.py.
bench: setup $(VENV)/.test
	$(BIN)/python benchmarks/bench.py $(if $(JSON),--json $(JSON))
	$(BIN)/python benchmarks/bench_live.py
	$(BIN)/python benchmarks/bench_growth.py

clean:
	rm -rf $(VENV) node_modules .pytest_cache
