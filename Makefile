# The Makefile's targets are hookgate's developer interface. Every recipe runs the Node.js
# pinned in package.json (node_modules/.bin/node), never the machine's own.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)

DEPS := node_modules/.installed
CONFIG ?= hookgate.example.yaml

.PHONY: run test check lint format typecheck unit bench chaos install tools chart-tools postgres-15 pgbouncer fault-tools chromium clean

$(DEPS): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

install: $(DEPS)

## run: serve gateway and worker; embedded PostgreSQL under ./.hookgate/ unless DATABASE_URL is set,
## and then the web console too (its URL is in the log: http://127.0.0.1:8081/ unless CONSOLE_PORT);
## logs are text for the terminal (LOG_FORMAT=json for the JSON lines every deployment writes)
run: $(DEPS)
	LOG_FORMAT=$${LOG_FORMAT:-text} node services/cli/main.ts serve --role all --config $(CONFIG)

## tools: what the tests need beyond node_modules: promtool and prometheus (Debian's `prometheus`),
## PostgreSQL 15's binaries (Debian's `postgresql-15`, for the tests' second major, standbys and
## failovers), PgBouncer, ip and iptables (network faults), Debian's Chromium (the console's
## browser tests), and the chart tools (Helm 4, kubectl-validate, helm-unittest) built with
## `go install` into .tools/
tools: chart-tools postgres-15 pgbouncer fault-tools chromium
	@if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; \
	fi

# The tests make throwaway clusters of their own from these binaries (test/support/system-postgres.ts);
# a server the package may start on the machine is never used by them.
PG15_BIN := /usr/lib/postgresql/15/bin
postgres-15:
	@if [ ! -x $(PG15_BIN)/postgres ] || [ ! -x $(PG15_BIN)/initdb ]; then \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15; \
	fi

# The tests start PgBouncer processes of their own, on free ports, from temporary configuration
# files (test/support/pgbouncer.ts); the package's own service is never used.
PGBOUNCER := /usr/sbin/pgbouncer
pgbouncer:
	@if [ ! -x $(PGBOUNCER) ]; then \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends pgbouncer; \
	fi

# The network-fault tests make network namespaces, veth pairs and iptables rules of their own
# (test/support/netns.ts); they need root.
fault-tools:
	@if ! command -v ip >/dev/null || ! command -v iptables >/dev/null; then \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends iproute2 iptables; \
	fi

# The console's browser tests drive Debian's Chromium through playwright-core (never a browser
# download of Playwright's own): test/support/browser.ts launches /usr/bin/chromium.
CHROMIUM := /usr/bin/chromium
chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium; \
	fi

# Each tool is built into a directory named after its pinned version, so a second `make tools`
# finds it and does nothing, and bumping a version builds the new one beside the old.
# The tests run them through the stable links in .tools/bin/.
TOOLS := $(CURDIR)/.tools
HELM_VERSION := v4.2.4
KUBECTL_VALIDATE_VERSION := v0.0.4
HELM_UNITTEST_VERSION := v1.0.1
HELM := $(TOOLS)/helm-$(HELM_VERSION)/helm
KUBECTL_VALIDATE := $(TOOLS)/kubectl-validate-$(KUBECTL_VALIDATE_VERSION)/kubectl-validate
HELM_UNITTEST := $(TOOLS)/helm-unittest-$(HELM_UNITTEST_VERSION)/helm-unittest

chart-tools: $(HELM) $(KUBECTL_VALIDATE) $(HELM_UNITTEST)
	@mkdir -p $(TOOLS)/bin
	@ln -sfn $(HELM) $(TOOLS)/bin/helm
	@ln -sfn $(KUBECTL_VALIDATE) $(TOOLS)/bin/kubectl-validate
	@ln -sfn $(HELM_UNITTEST) $(TOOLS)/bin/helm-unittest

$(HELM):
	GOBIN=$(@D) go install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)

$(KUBECTL_VALIDATE):
	GOBIN=$(@D) go install sigs.k8s.io/kubectl-validate@$(KUBECTL_VALIDATE_VERSION)

# This version is on the module proxy but not in the checksum database.
$(HELM_UNITTEST):
	GOBIN=$(@D) GONOSUMDB=github.com/helm-unittest go install github.com/helm-unittest/helm-unittest/cmd/helm-unittest@$(HELM_UNITTEST_VERSION)

## test: lint, type-check, then every test suite against a real PostgreSQL
test: $(DEPS) tools lint typecheck
	vitest run

## check: the fast tests: the unit and chart projects (not chart-run, whose pods run as processes)
## and the integration files below on the embedded PostgreSQL 18 (vitest.config.ts names the
## projects); `make test` runs every file
CHECK_INTEGRATION := test/integration/migrate.test.ts test/integration/gateway-claim.test.ts \
  test/integration/worker-apply.test.ts
check: $(DEPS) chart-tools
	vitest run --project unit --project chart --project integration test/unit/ test/chart/ $(CHECK_INTEGRATION)

lint: $(DEPS)
	biome check .
	# Unused files, exports and dependencies (knip.json: the entry points).
	knip

format: $(DEPS)
	biome check --write .

typecheck: $(DEPS)
	tsc --noEmit -p tsconfig.json
	tsc --noEmit -p load/tsconfig.json

## bench: throughput ratios against baselines measured in the same run
bench: $(DEPS)
	node bench/run.ts

## chaos: the full chaos run (>= 20 SIGKILLs of gateways and workers, PostgreSQL restarted once,
## under signed load with duplicates) on its own embedded PostgreSQL, then a 100 000-event backlog
## catch-up, then the database tier's long runs (PgBouncer, four failovers, partitions of 30 and
## 120 s, a slow and lossy link; about 25 minutes, one JSON line of figures each); `make test`
## runs a short chaos run, a 20 000-event catch-up and the database tier's short runs
chaos: $(DEPS) postgres-15 pgbouncer fault-tools
	node test/chaos/main.ts
	CATCHUP_EVENTS=100000 CATCHUP_DRAIN_MS=600000 vitest run test/e2e/recovery-backlog.test.ts
	node test/chaos/db-tier-main.ts

clean:
	rm -rf node_modules .hookgate bench/results
