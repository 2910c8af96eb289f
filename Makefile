PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint bench docs docs-serve clean eee-validator

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(VENV)/.installed $@

$(VENV)/.installed-docs: $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[docs]"
	touch $(VENV)/.installed $@

# MkDocs plugins print a banner about MkDocs 2.0 on every build; it is not about this site.
DOCS_ENV := NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true

demo: $(VENV)/.installed
	$(BIN)/platinum-jax demo --out demo_output --overwrite

# The side environment of Every Eval Ever's validator is made before the tests run (as the
# dev extras are); without a Python >= 3.12 the tests that need it skip and say why.
test: $(VENV)/.installed-dev
	@$(PYTHON) scripts/eee_validator.py > /dev/null 2>&1 || \
		echo "no Every Eval Ever validator environment (the tests that need it say why)"
	$(BIN)/python -m pytest -n 2 --dist loadgroup

# The site in site/, warnings (broken cross-references included) as errors; notebooks are
# rendered as committed, not executed (the test suite executes them).
docs: $(VENV)/.installed-docs
	$(DOCS_ENV) $(BIN)/mkdocs build --strict

docs-serve: $(VENV)/.installed-docs
	$(DOCS_ENV) $(BIN)/mkdocs serve

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check platinum_jax tests benchmarks

bench: $(VENV)/.installed-dev
	$(BIN)/python -m pip install --quiet -e ".[dev,bench]"
	for b in benchmarks/bench_*.py; do $(BIN)/python $$b --quick || exit 1; done

# Every Eval Ever's own validator needs Python >= 3.12: a side environment, .venv-eee, made
# from the first such interpreter found (the tests make it too, or skip saying why).
eee-validator:
	$(PYTHON) scripts/eee_validator.py

clean:
	rm -rf $(VENV) .venv-eee demo_output .pytest_cache site .cache
