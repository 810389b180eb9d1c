# Basil's two commands for a newcomer are `make demo` and `make test`; everything else here is what
# they are built from.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest venv clean bench bench-store postgres lab lab-check bench-lab

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

pytest: $(STAMP) lab
	$(VENV)/bin/pytest

test: lint typecheck lab-check pytest

# The lab vCenter (Go, on govmomi's simulator): build/basil-lab.
LAB_SOURCES := $(shell find lab -name '*.go' -o -name go.mod -o -name go.sum)

build/basil-lab: $(LAB_SOURCES)
	cd lab && go build -o ../build/basil-lab ./cmd/basil-lab

lab: build/basil-lab

lab-check:
	cd lab && out="$$(gofmt -l .)" && if [ -n "$$out" ]; then echo "gofmt -l:"; echo "$$out"; exit 1; fi
	cd lab && go vet ./...
	cd lab && go test ./...

bench-lab: $(STAMP) lab
	$(PY) benchmarks/bench_lab_queryperf.py

demo: $(STAMP)
	$(VENV)/bin/basil recommend --snapshot examples/basil-table2.json

bench: $(STAMP)
	$(PY) benchmarks/bench_balancer.py

bench-store: $(STAMP)
	$(PY) benchmarks/bench_store.py

# Debian's PostgreSQL server, for the store's tests on PostgreSQL (they start their own throw-away
# cluster from /usr/lib/postgresql/*/bin). Idempotent and quiet; needs root (or sudo) to install.
postgres:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	else \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		echo "installing PostgreSQL (Debian package) for the store's tests"; \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	fi

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache

.PHONY: bench-srp
bench-srp: $(STAMP)
	$(PY) benchmarks/bench_srp.py

.PHONY: bench-collect
bench-collect: $(STAMP) lab
	$(PY) benchmarks/bench_collect.py
