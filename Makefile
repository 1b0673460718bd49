# The two commands of the README quick start. Each creates .venv and installs what it needs
# when needed, then runs: `make plan` the runtime and the plots only (the `plot` extra: no
# PyTorch, Ray, pyarrow or aiperf); `make test` adds the test extras (`dev`), PyTorch's CPU
# build and aiperf. tests/cli/test_packaging.py keeps heavy packages out of `make plan`'s install.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-plan
TEST_STAMP := $(VENV)/.installed-test
PROBLEM ?= problems/llama3-70b-online.yaml
# pytest-xdist workers for `make test` (auto: one per core; 0: the suite in one process). Each test
# module runs on one worker (--dist loadfile, tests/conftest.py). CP-SAT runs one worker per solve.
TEST_WORKERS ?= auto

.PHONY: plan test bench clean

# the runtime dependencies and matplotlib (`plan --format html`, `--plot`)
$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "fleetplan needs Python >= 3.11")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[plot]'
	touch $(STAMP)

# everything the tests need on top: the test extras (pytest, hypothesis, ruff, pyarrow, Ray, ...)
$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	# PyTorch's CPU build (optional test dependency of the profile collector); without it the
	# collector tests are skipped and everything else runs
	$(BIN)/python -m pip install --quiet 'torch==2.13.0' || echo "note: PyTorch 2.13.0 CPU build not installable; collector tests will be skipped"
	# aiperf (the `bench` extra) for the integration test of `fleetplan validate` against its real export;
	# without it that test is skipped
	$(BIN)/python -m pip install --quiet -e '.[bench]' || echo "note: aiperf 0.13.0 not installable; the aiperf integration test will be skipped"
	touch $(TEST_STAMP)

plan: $(STAMP)
	$(BIN)/fleetplan plan $(PROBLEM)

test: $(TEST_STAMP)
	$(BIN)/ruff check solver tests benchmarks
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile

bench: $(STAMP)
	$(BIN)/python benchmarks/bench_perf_model.py

clean:
	rm -rf $(VENV) build dist .pytest_cache
