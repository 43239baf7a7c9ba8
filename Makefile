# The two commands that matter: `make dev` runs everything, `make test` tests everything.
# Both install what they need first (Debian packages, the virtualenv, the dev provider's npm packages).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
IDP := dev/idp

.PHONY: dev traces test lint format unit token app-token bench sizing mutation security-report system system-test clean failover

# `make dev TRACES=1` also traces the app to a local receiver that writes each request as a tree of
# spans to .dev/traces.txt; `make traces` is that receiver alone on OTLP/HTTP's port 4318, printing.
dev: system $(VENV)/.installed $(IDP)/node_modules/.installed
	TRACES=$(TRACES) $(BIN)/python -m dev.run

traces: $(VENV)/.installed
	$(BIN)/python -m dev.otlp_receiver

# Every suite once (writing the security report under .reports/, and the figures of its Redis failovers
# to .reports/failover.md), then the integration suite again on a real three-master Redis Cluster; last,
# the committed docs/security-report.md must match the run's report. `make test` changes no tracked file;
# `make security-report` takes the new report.
REPORT := .reports/security-report.md
FAILOVER_REPORT := .reports/failover.md

test: system-test $(VENV)/.installed $(IDP)/node_modules/.installed lint
	mkdir -p $(dir $(REPORT))
	rm -f $(FAILOVER_REPORT)
	SECURITY_REPORT=$(REPORT) $(BIN)/python -m pytest
	$(BIN)/python -m pytest tests/integration --redis-cluster -q -p no:cacheprovider
	@diff -u docs/security-report.md $(REPORT) >/dev/null || { diff -u docs/security-report.md $(REPORT) | head -40; \
	  echo "docs/security-report.md does not match this run's tests: run 'make security-report' and commit it" >&2; exit 1; }

# Redis failovers under load, longer than make test's (tests/failover): FAILOVER_ROUNDS of each kind (a
# cluster master killed, CLUSTER FAILOVER, a Sentinel master killed), FAILOVER_BEFORE and FAILOVER_AFTER
# seconds of load around each; their figures go to .reports/failover.md and are printed at the end.
failover: system $(VENV)/.installed $(IDP)/node_modules/.installed
	mkdir -p $(dir $(FAILOVER_REPORT))
	rm -f $(FAILOVER_REPORT)
	FAILOVER_ROUNDS=$${FAILOVER_ROUNDS:-3} FAILOVER_BEFORE=$${FAILOVER_BEFORE:-5} FAILOVER_AFTER=$${FAILOVER_AFTER:-10} \
	  FAILOVER_TARGETS=$${FAILOVER_TARGETS:-6000} $(BIN)/python -m pytest tests/failover -q -p no:cacheprovider
	@cat $(FAILOVER_REPORT)

# Copies the report of the last `make test` run into docs/ (run make test first).
security-report:
	@test -f $(REPORT) || { echo "run make test first: it writes $(REPORT)" >&2; exit 1; }
	cp $(REPORT) docs/security-report.md

# The shape of app/ first (import cycles, layers, sizes): without the conftest, which imports the app,
# so that a cycle Python itself cannot import is still named.
lint: $(VENV)/.installed
	$(BIN)/python -m pytest -q -p no:cacheprovider --noconftest tests/unit/test_architecture.py
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.installed
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

unit: $(VENV)/.installed
	$(BIN)/python -m pytest tests/unit

# `make token USER=alice`; with DPOP=ES256 (or PS256, RS256) a DPoP-bound token, its key in .dev/dpop-<alg>.json.
token: $(VENV)/.installed
	@test -f .dev/dev.env || { echo "start the service first: make dev" >&2; exit 1; }
	@set -a && . ./.dev/dev.env && set +a && $(BIN)/python -m dev.mint_token user "$(USER)"$(if $(DPOP), --dpop "$(DPOP)")$(if $(ACR), --acr "$(ACR)")

app-token: $(VENV)/.installed
	@test -f .dev/dev.env || { echo "start the service first: make dev" >&2; exit 1; }
	@set -a && . ./.dev/dev.env && set +a && $(BIN)/python -m dev.mint_token app

system:
	@dev/bootstrap-system.sh

# wrk too: tests/integration/test_bench_open_loop.py holds make bench's open-loop windows to their promise.
system-test:
	@dev/bootstrap-system.sh chromium wrk

$(VENV)/.installed: requirements.txt requirements-dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

$(IDP)/node_modules/.installed: $(IDP)/package.json $(IDP)/package-lock.json
	cd $(IDP) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

clean:
	rm -rf $(VENV) $(IDP)/node_modules bench/.venv-flask bench/.venv-fastapi bench/.venv-plots .pytest_cache .ruff_cache

# The service against the same routes written plainly in Flask and in FastAPI (bench/peers/), each
# peer in its own virtualenv, and the pictures drawn by matplotlib in a third (bench/.venv-plots);
# BENCH_SECONDS and BENCH_ROUNDS set the windows (see docs/performance.md).
BENCH_VENVS := bench/.venv-flask/.installed bench/.venv-fastapi/.installed bench/.venv-plots/.installed

bench: $(VENV)/.installed $(IDP)/node_modules/.installed $(BENCH_VENVS)
	@dev/bootstrap-system.sh wrk
	$(BIN)/python -m bench.run

bench/.venv-plots/.installed: bench/requirements-plots.txt
	test -x bench/.venv-plots/bin/python || $(PYTHON) -m venv bench/.venv-plots
	bench/.venv-plots/bin/python -m pip install --quiet --disable-pip-version-check -r $<
	touch $@

bench/.venv-%/.installed: bench/peers/requirements-%.txt
	test -x bench/.venv-$*/bin/python || $(PYTHON) -m venv bench/.venv-$*
	bench/.venv-$*/bin/python -m pip install --quiet --disable-pip-version-check -r $<
	touch $@

sizing: $(VENV)/.installed $(IDP)/node_modules/.installed
	$(BIN)/python -m bench.studies.sizing

# mutmut over the security core with the fast tests; writes docs/mutation-report.{md,json}.
mutation: $(VENV)/.installed
	$(BIN)/python -m dev.mutation
