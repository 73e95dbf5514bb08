# Two entry points for a fresh machine: `make demo` (build the API on the embedded devnet and
# serve it) and `make test`. Everything installs into .venv and node_modules.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000

.PHONY: setup demo build serve test bench clean

$(BIN)/publisher: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	@touch $@

# `npm install` against the committed lock, not `npm ci`: npm writes lock files without the other
# platforms' anvil binaries (optional dependencies), and `npm ci` then refuses the lock as out of
# sync. Versions are still pinned exactly by package.json and the lock, which stays unchanged.
node_modules/.package-lock.json: package.json package-lock.json
	npm install --no-audit --no-fund
	@touch $@

setup: $(BIN)/publisher node_modules/.package-lock.json

demo: setup
	$(BIN)/publisher build --out out
	$(BIN)/publisher serve --dir out --port $(PORT)

test: setup
	$(BIN)/python -m pytest -n auto -q

bench: setup
	$(BIN)/python benchmarks/bench_snapshot.py
	$(BIN)/python benchmarks/bench_build.py
	$(BIN)/python benchmarks/bench_function.py
	$(BIN)/python benchmarks/bench_live.py

clean:
	rm -rf $(VENV) node_modules .pytest_cache
