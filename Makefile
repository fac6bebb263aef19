# The README's two commands: `make demo` (set up, run the main job) and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
UV_VERSION := 0.13.9
UV := $(PYTHON) -m uv
export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON := $(PYTHON)

EXAMPLE := examples/wordfreq.spec.json

.PHONY: setup demo test lint typecheck unit

setup:
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"
	@$(UV) sync --frozen --quiet --compile-bytecode
	@# Every child Pi starts a bridge: compiled here, no child pays compiling pi-squad and its
	@# dependencies (about 75 ms of its start, bench.child_start). uv compiles site-packages only;
	@# the project's own packages stay in the checkout (an editable install): compileall.
	@$(UV) run --frozen --no-sync python -m compileall -q -j 0 domain application adapters entrypoints

demo: setup runtime
	$(UV) run pi-squad demo
	@echo "pi-squad is in .venv/bin: source .venv/bin/activate puts it on PATH (or: uv tool install .);"
	@echo "next: pi-squad demo --pi, the same squad started from inside Pi (README: Try it inside Pi, offline)"

lint: setup
	$(UV) run ruff check .
	$(UV) run ruff format --check .
	$(UV) run lint-imports --no-cache
	$(UV) run actionlint .github/workflows/ci.yml

typecheck: setup
	$(UV) run mypy

unit: setup runtime
	$(UV) run pytest -q

test: runtime lint typecheck unit

# Benchmarks at full size (docs/benchmarks.md; about 17 minutes, 10 of them flows and delegation):
# each script writes bench/results/<name>.json, then the report regenerates the results table.
BENCHES := create_limits full_read guard attestation child_start scheduler driver_idle scaling flow_children delegation_host flow_waiting cli_start profiles

.PHONY: bench
bench: setup runtime
	@for name in $(BENCHES); do $(UV) run python -m bench.$$name || exit 1; done
	$(UV) run python -m bench.report

# The project-local Node 22 + Pi 0.80.10 runtime in .runtime/ (idempotent, offline once installed).
.PHONY: runtime
runtime:
	bash scripts/install-runtime
