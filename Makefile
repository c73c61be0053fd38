# Two commands do all the setup: `make run` (the app on embedded defaults) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test bench clean

$(STAMP): requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -r requirements-dev.txt
	touch $(STAMP)

ADDRESS ?= 127.0.0.1

run: $(STAMP)
	@scripts/ensure-tesseract
	$(BIN)/streamlit run app.py --server.address $(ADDRESS)

test: $(STAMP)
	@scripts/ensure-chromium
	@scripts/ensure-tesseract
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python -m rag bench

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
