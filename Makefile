# Basil's two commands for a newcomer are `make demo` and `make test`; everything else here is what
# they are built from.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(VENV)/bin/pip
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck pytest venv clean bench bench-search bench-store postgres lab lab-check bench-lab bench-api
.PHONY: plugin plugin-test chromium ansible-test

$(STAMP): setup.py pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e '.[test,dev]'
	touch $(STAMP)

venv: $(STAMP)

lint: $(STAMP)
	$(VENV)/bin/ruff check service tests benchmarks scripts
	$(VENV)/bin/ruff format --check service tests benchmarks scripts

typecheck: $(STAMP)
	$(VENV)/bin/mypy

pytest: $(STAMP) lab plugin
	$(VENV)/bin/pytest

test: lint typecheck lab-check plugin-test ansible-test pytest

# The lab vCenter (Go, on govmomi's simulator): build/basil-lab.
LAB_SOURCES := $(shell find lab -name '*.go' -o -name go.mod -o -name go.sum)

build/basil-lab: $(LAB_SOURCES)
	cd lab && go build -o ../build/basil-lab ./cmd/basil-lab

# The evaluation's driver of the lab's physics (lab/cmd/evaluate), used by benchmarks/evaluate.py.
build/basil-evaluate: $(LAB_SOURCES)
	cd lab && go build -o ../build/basil-evaluate ./cmd/evaluate

lab: build/basil-lab build/basil-evaluate

lab-check:
	cd lab && out="$$(gofmt -l .)" && if [ -n "$$out" ]; then echo "gofmt -l:"; echo "$$out"; exit 1; fi
	cd lab && go vet ./...
	cd lab && go test ./...

# Basil against the lab's physics on seeded scenario families, baselines and the exhaustive best;
# report, plots and target figures in build/evaluation (not part of `make test`, whose
# tests/evaluation runs a three-configuration smoke version).
.PHONY: evaluate
evaluate: $(STAMP) lab
	$(PY) benchmarks/evaluate.py

# The SLO goal (issue 15, docs/slo.md) against the balance goal and no moves over a simulated day of
# the slo-tiers scenario family, and one SLO round at 40,000 disks / 1,000 datastores.
.PHONY: evaluate-slo
evaluate-slo: $(STAMP) lab
	$(PY) benchmarks/evaluate_slo.py
	$(PY) benchmarks/bench_slo.py

bench-lab: $(STAMP) lab
	$(PY) benchmarks/bench_lab_queryperf.py

# The lab on BASIL §6.3 at 30x and `basil serve` on SQLite (scripts/demo.py); Ctrl-C stops both.
# The store var/demo/basil.db is kept across runs; `make demo FRESH=1` starts from an empty one.
demo: $(STAMP) lab plugin
	$(PY) scripts/demo.py $(if $(FRESH),--fresh)

# A wheel in dist/ that carries the built plugin and the migrations (docs/packaging.md). Built without
# build isolation, from the venv's setuptools: no network. setuptools' staging (build/lib) is cleared
# first, so that no file deleted from the sources lingers in the wheel.
.PHONY: wheel
wheel: $(STAMP) plugin
	rm -rf dist build/lib build/bdist.*
	$(PIP) wheel --quiet --no-deps --no-build-isolation --wheel-dir dist .

bench: $(STAMP)
	$(PY) benchmarks/bench_balancer.py

# Basil's search against a plain best-single-move greedy on random pods of 3-1,000 datastores, and
# one round on 40,000 disks / 1,000 datastores for both objectives (minutes: the greedy is slow).
bench-search: $(STAMP)
	$(PY) benchmarks/bench_search.py

bench-store: $(STAMP)
	$(PY) benchmarks/bench_store.py

# Capacity for a latency target (RTT/Miser): Table 4.1's shape, 10 million requests' time and memory.
.PHONY: bench-capacity
bench-capacity: $(STAMP)
	$(PY) benchmarks/bench_capacity.py

# The consolidation what-if (Casale et al.) against the lab's physics: pairs of workload types.
.PHONY: bench-whatif
bench-whatif: $(STAMP) lab
	$(PY) benchmarks/bench_whatif.py

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

# The vSphere Client plugin: npm ci from the committed lockfile, then a type-checked production build
# into plugin/dist, which the service serves under /plugin/. Built here, never committed.
PLUGIN_SOURCES := $(shell find plugin/src plugin/public -type f) plugin/index.html plugin/client.html \
	plugin/plugin.json plugin/vite.config.ts plugin/tsconfig.json plugin/tsconfig.test.json

plugin/node_modules/.package-lock.json: plugin/package.json plugin/package-lock.json
	cd plugin && npm ci --no-audit --no-fund

plugin/dist/index.html: plugin/node_modules/.package-lock.json $(PLUGIN_SOURCES)
	cd plugin && npm run build

plugin: plugin/dist/index.html

# The plugin's unit tests (Vitest) and type check.
plugin-test: plugin/node_modules/.package-lock.json
	cd plugin && npx tsc --noEmit -p tsconfig.test.json && npx vitest run

# Debian's chromium, for the plugin's end-to-end tests (Playwright drives /usr/bin/chromium; it never
# downloads a browser of its own). Idempotent and quiet; needs root (or sudo) to install.
chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	else \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		echo "installing chromium (Debian package) for the plugin's browser tests"; \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

# The Ansible collection (ansible/): `ansible-test sanity` and `ansible-test units` on a copy staged as
# ansible_collections/basil/vsphere in a temporary tree, then `ansible-galaxy collection build` and an
# install of the tarball. ansible-test's own virtual environments (requirements from PyPI) are cached in
# build/ansible-test-home. The collection's integration tests (the playbooks against `basil serve` on the
# lab) and the PowerShell module's checks are pytest tests: tests/ansible, tests/powershell.
ansible-test: $(STAMP)
	$(PY) tests/ansible/run_ansible_test.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache plugin/dist plugin/node_modules

.PHONY: bench-srp
bench-srp: $(STAMP)
	$(PY) benchmarks/bench_srp.py

.PHONY: bench-collect
bench-collect: $(STAMP) lab
	$(PY) benchmarks/bench_collect.py

bench-api: $(STAMP)
	$(PY) benchmarks/bench_api.py

# The HTTP front end alone (a synthetic application): its CPU per request and latency (docs/frontend.md).
.PHONY: bench-frontend
bench-frontend: $(STAMP)
	$(PY) benchmarks/bench_frontend.py

# The service's memory on the large lab scenario: an hour of collection, then an hour's outage caught up.
.PHONY: bench-memory
bench-memory: $(STAMP) lab
	$(PY) benchmarks/bench_service_memory.py
