# Basil's two commands for a newcomer are `make demo` and `make test`; everything else here is what
# they are built from.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest venv clean bench

$(STAMP): setup.py pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[test,dev]'
	touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check service tests benchmarks
	$(VENV)/bin/ruff format --check service tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy

pytest: $(STAMP)
	$(VENV)/bin/pytest

test: lint typecheck pytest

demo: $(STAMP)
	$(VENV)/bin/basil recommend --snapshot examples/basil-table2.json

bench: $(STAMP)
	$(PY) benchmarks/bench_balancer.py

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache

.PHONY: bench-srp
bench-srp: $(STAMP)
	$(PY) benchmarks/bench_srp.py
