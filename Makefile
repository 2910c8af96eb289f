PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(VENV)/.installed $@

demo: $(VENV)/.installed
	$(BIN)/platinum-jax demo --out demo_output --overwrite

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest -n 2 --dist loadfile

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check platinum_jax tests benchmarks

bench: $(VENV)/.installed-dev
	$(BIN)/python -m pip install --quiet -e ".[dev,bench]"
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b --quick || exit 1; done

clean:
	rm -rf $(VENV) demo_output .pytest_cache
