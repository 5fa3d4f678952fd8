# The Makefile's targets are hookgate's developer interface. Every recipe runs the Node.js
# pinned in package.json (node_modules/.bin/node), never the machine's own.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)

DEPS := node_modules/.installed
CONFIG ?= hookgate.example.yaml
, := ,

.PHONY: run test check lint format typecheck unit bench performance-doc chaos release install tools chart-tools postgres-15 pgbouncer fault-tools chromium shell-tools nats-server rabbitmq clean api-schema \
  image container-tools cluster-packages cluster-tools cluster-images cluster-up cluster-down test-k8s

$(DEPS): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

install: $(DEPS)

# The management API's type generator (openapi-typescript) lives apart in tools/openapi/: it needs
# TypeScript 5's compiler API, and the project's TypeScript is 7. Pinned in its own lock file.
API_TOOLS := tools/openapi/node_modules/.installed
$(API_TOOLS): tools/openapi/package.json tools/openapi/package-lock.json
	npm ci --prefix tools/openapi --no-audit --no-fund --loglevel=error
	@touch $@

## api-schema: services/console/api/schema.ts, the API's TypeScript types (the server's answers and
## the tests' openapi-fetch client are typed with them), from services/console/api/openapi.yaml
api-schema: $(DEPS) $(API_TOOLS)
	node tools/openapi/generate.mjs

## run: serve gateway and worker; embedded PostgreSQL under ./.hookgate/ unless DATABASE_URL is set,
## and then the web console too (its URL is in the log: http://127.0.0.1:8081/ unless CONSOLE_PORT);
## logs are text for the terminal (LOG_FORMAT=json for the JSON lines every deployment writes)
run: $(DEPS)
	LOG_FORMAT=$${LOG_FORMAT:-text} node services/cli/main.ts serve --role all --config $(CONFIG)

## tools: what the tests need beyond node_modules: promtool and prometheus (Debian's `prometheus`),
## PostgreSQL 15's binaries (Debian's `postgresql-15`, for the tests' second major, standbys and
## failovers), PgBouncer, ip and iptables (network faults), Debian's Chromium (the console's
## browser tests), nats-server and a running RabbitMQ (the bus destinations' tests), and the chart tools (Helm 4, kubectl-validate, helm-unittest) built with
## `go install` into .tools/
tools: chart-tools postgres-15 pgbouncer fault-tools chromium shell-tools nats-server rabbitmq
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

# The bus destinations' tests start nats-server processes of their own (`-js`, a free port, a store
# in a temporary directory: test/support/brokers.ts); the package's own service is never used.
NATS_SERVER := /usr/sbin/nats-server
nats-server:
	@if [ ! -x $(NATS_SERVER) ]; then \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nats-server; \
	fi

# ... and use the machine's RabbitMQ on 127.0.0.1:5672 (guest/guest), each test in a vhost of its
# own that it deletes afterwards; one test stops and starts its application for a few seconds.
# Installed and started here when it is not running.
rabbitmq:
	@if ! command -v rabbitmqctl >/dev/null; then \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends rabbitmq-server; \
	fi
	@if ! rabbitmqctl -q status >/dev/null 2>&1; then \
	  (service rabbitmq-server start || rabbitmq-server -detached) >/dev/null 2>&1; \
	  rabbitmqctl -q await_startup; \
	fi

# docs/api.md's walk-through is run verbatim by its test (test/integration/api-walkthrough.test.ts):
# curl, jq and openssl, as an operator's shell has them.
shell-tools:
	@if ! command -v curl >/dev/null || ! command -v jq >/dev/null || ! command -v openssl >/dev/null; then \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl jq openssl; \
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

lint: $(DEPS) $(API_TOOLS)
	biome check .
	# Unused files, exports and dependencies (knip.json: the entry points).
	knip
	# The management API's OpenAPI document, under Redocly's strict recommended rules (redocly.yaml;
	# offline), and the types generated from it current (else: make api-schema).
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true redocly lint
	node tools/openapi/generate.mjs --check

format: $(DEPS)
	biome check --write .

typecheck: $(DEPS)
	tsc --noEmit -p tsconfig.json
	tsc --noEmit -p load/tsconfig.json

## bench: throughput ratios against baselines measured in the same run
bench: $(DEPS)
	node bench/run.ts

## performance-doc: docs/performance.md's tables and docs/performance.json from the latest
## capacity results (BENCH_SCENARIOS=capacity make bench)
performance-doc: $(DEPS)
	node bench/performance-doc.ts

## chaos: the full chaos run (>= 20 SIGKILLs of gateways and workers, PostgreSQL restarted once,
## under signed load with duplicates) on its own embedded PostgreSQL, then a 100 000-event backlog
## catch-up, then the database tier's long runs (PgBouncer, four failovers, partitions of 30 and
## 120 s, a slow and lossy link; about 25 minutes, one JSON line of figures each); `make test`
## runs a short chaos run, a 20 000-event catch-up and the database tier's short runs
chaos: $(DEPS) postgres-15 pgbouncer fault-tools
	node test/chaos/main.ts
	CATCHUP_EVENTS=100000 CATCHUP_DRAIN_MS=600000 vitest run test/e2e/recovery-backlog.test.ts
	node test/chaos/db-tier-main.ts

## release: tags the release VERSION (make release VERSION=0.1.0) after checking that the working
## tree is clean, that package.json, the chart's version and appVersion, the docs' image tags and
## CHANGELOG.md all say VERSION; records the tagged commit in release/releases (docs/releases.md)
release: $(DEPS)
	@if [ -z "$(VERSION)" ]; then echo "make release VERSION=x.y.z (the version package.json says)" >&2; exit 2; fi
	node release/release.ts $(VERSION)

## image: the Dockerfile built with podman exactly as users build it with Docker, on a
## node:24-bookworm-slim made here without a registry (Debian's packages by debootstrap, the Node.js
## pinned in package.json, npm), then run by its smoke test (test/k8s/image.test.ts): read-only, as
## uid 10001, migrate, each role of serve, a signed delivery settled, SIGTERM drained. IMAGE names
## it; BUILD_CA and BUILD_NPMRC are passed to `npm ci` as build secrets (docs/kubernetes.md)
IMAGE ?= localhost/hookgate:dev
NPM_VERSION := 11.19.0
NODE_BASE_IMAGE := docker.io/library/node:24-bookworm-slim
NODE_BASE = $(TOOLS)/node-base-$(shell node_modules/.bin/node -p process.versions.node)-npm-$(NPM_VERSION)-bookworm/rootfs.tar
BUILD_CA ?= $(wildcard /etc/ssl/certs/ca-certificates.crt)
BUILD_NPMRC ?=
# podman's settings for a machine without systemd (the file says which and why).
PODMAN := env CONTAINERS_CONF=$(CURDIR)/test/k8s/image/containers.conf podman

container-tools:
	@if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v debootstrap >/dev/null; then \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    podman runc debootstrap containernetworking-plugins uidmap; \
	fi

# The base is built once per Node.js and npm version (debootstrap: a few minutes of download).
$(TOOLS)/node-base-%/rootfs.tar: | $(DEPS) container-tools
	@mkdir -p $(@D)
	nice -n 19 test/k8s/image/build-node-base.sh "$$(readlink -f node_modules/.bin/node)" $(NPM_VERSION) $@

image: $(DEPS) container-tools
	@$(MAKE) --no-print-directory $(NODE_BASE)
	@$(PODMAN) image exists $(NODE_BASE_IMAGE) || $(PODMAN) import \
	  --change 'ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	  --change 'CMD=["node"]' $(NODE_BASE) $(NODE_BASE_IMAGE)
	nice -n 19 $(PODMAN) build --pull=never --network=host \
	  $(if $(BUILD_CA),--secret id=ca$(,)src=$(BUILD_CA)) \
	  $(if $(BUILD_NPMRC),--secret id=npmrc$(,)src=$(BUILD_NPMRC)) \
	  --tag $(IMAGE) .
	HOOKGATE_IMAGE=$(IMAGE) nice -n 10 vitest run --config test/k8s/vitest.config.ts test/k8s/image.test.ts

## cluster-up: a one-node Kubernetes on this machine for the chart's tests: the Kubernetes
## binaries, CoreDNS and a pause image built once from the Go module proxy into .tools/ (about 35
## CPU-minutes, under `nice -n 19`), metrics-server and KEDA's operator and metrics server likewise, Debian's etcd, containerd, runc and CNI plugins; idempotent.
## Its kubeconfig is .k8s/pki/admin.kubeconfig. cluster-down removes every workload, stops every
## daemon and undoes what they changed (mounts, network namespaces, iptables, bridge, cgroups,
## sysctls); test/k8s/cluster/cluster.sh says how
KUBERNETES_VERSION := v1.34.4
COREDNS_VERSION := v1.15.0
KUBE_DIR := $(TOOLS)/kubernetes-$(KUBERNETES_VERSION)
KUBE_BINARIES := kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl
COREDNS := $(TOOLS)/coredns-$(COREDNS_VERSION)/coredns
METRICS_SERVER_VERSION := v0.8.1
METRICS_SERVER := $(TOOLS)/metrics-server-$(METRICS_SERVER_VERSION)/metrics-server
# KEDA's operator and metrics API server (keda.test.ts), in a copy of the module: its go.mod has
# replace directives, which `go install` refuses (test/k8s/tools/build-keda.sh)
KEDA_VERSION := v2.21.1
KEDA_DIR := $(TOOLS)/keda-$(KEDA_VERSION)
# The pause binary is the project's own (test/k8s/tools/pause/main.go): named by its source's hash.
PAUSE = $(TOOLS)/pause-$(shell sha256sum test/k8s/tools/pause/main.go | cut -c1-12)/pause
CLUSTER_STATE := $(CURDIR)/.k8s
CLUSTER_IMAGES := $(CURDIR)/.k8s-images
PAUSE_IMAGE := localhost/hookgate-test/pause:1
COREDNS_IMAGE := localhost/hookgate-test/coredns:$(COREDNS_VERSION)
CLUSTER := env STATE=$(CLUSTER_STATE) KUBE_BIN=$(KUBE_DIR) PAUSE_IMAGE=$(PAUSE_IMAGE) \
  COREDNS_IMAGE=$(COREDNS_IMAGE) test/k8s/cluster/cluster.sh

cluster-packages:
	@if ! command -v etcd >/dev/null || ! command -v containerd >/dev/null || ! command -v runc >/dev/null \
	  || [ ! -x /usr/lib/cni/bridge ] || ! command -v iptables >/dev/null || ! command -v openssl >/dev/null; then \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    etcd-server containerd runc containernetworking-plugins iptables iproute2 openssl; \
	fi

$(KUBE_DIR)/%:
	nice -n 19 test/k8s/tools/build-kubernetes.sh $(KUBERNETES_VERSION) $(@D) $*

$(COREDNS):
	nice -n 19 test/k8s/tools/build-go-main.sh test/k8s/tools/coredns $(@D) coredns github.com/coredns/coredns@$(COREDNS_VERSION)

$(METRICS_SERVER):
	nice -n 19 test/k8s/tools/build-go-module.sh sigs.k8s.io/metrics-server $(METRICS_SERVER_VERSION) $(@D) \
	  sigs.k8s.io/metrics-server/cmd/metrics-server

# keda is written last: its presence means keda-adapter and crd/ are there too.
$(KEDA_DIR)/keda:
	nice -n 19 test/k8s/tools/build-keda.sh $(KEDA_VERSION) $(@D)

$(TOOLS)/pause-%/pause:
	nice -n 19 test/k8s/tools/build-go-main.sh test/k8s/tools/pause $(@D) pause

cluster-tools: $(addprefix $(KUBE_DIR)/,$(KUBE_BINARIES)) $(COREDNS) $(METRICS_SERVER) $(KEDA_DIR)/keda
	@$(MAKE) --no-print-directory $(PAUSE)
	@mkdir -p $(TOOLS)/bin && ln -sfn $(KUBE_DIR)/kubectl $(TOOLS)/bin/kubectl

# Single-binary images for containerd, which takes them as archives.
cluster-images: container-tools cluster-tools
	@mkdir -p $(CLUSTER_IMAGES)
	test/k8s/cluster/binary-image.sh $(PAUSE) $(PAUSE_IMAGE) 65535 $(CLUSTER_IMAGES)/pause.tar
	test/k8s/cluster/binary-image.sh $(COREDNS) $(COREDNS_IMAGE) 65532 $(CLUSTER_IMAGES)/coredns.tar
	test/k8s/cluster/binary-image.sh $(METRICS_SERVER) localhost/hookgate-test/metrics-server:$(METRICS_SERVER_VERSION) \
	  65534 $(CLUSTER_IMAGES)/metrics-server.tar
	test/k8s/cluster/binary-image.sh $(KEDA_DIR)/keda localhost/hookgate-test/keda:$(KEDA_VERSION) \
	  1000 $(CLUSTER_IMAGES)/keda.tar
	test/k8s/cluster/binary-image.sh $(KEDA_DIR)/keda-adapter localhost/hookgate-test/keda-adapter:$(KEDA_VERSION) \
	  1000 $(CLUSTER_IMAGES)/keda-adapter.tar

cluster-up: cluster-packages cluster-images
	IMAGES="$$(ls $(CLUSTER_IMAGES)/*.tar)" $(CLUSTER) up

cluster-down:
	@if [ -d $(CLUSTER_STATE) ]; then $(CLUSTER) down; fi

## test-k8s: the image (make image), then the chart on a real one-node Kubernetes (make cluster-up):
## every ci/ scenario validated by the API server, the core ones installed and `helm test`ed,
## upgrades, a rollback and pods deleted under 200 signed deliveries/s with `hookgate verify`, a
## refused configuration, autoscaling (the gateway's HPA; the workers by KEDA on the backlog); then make cluster-down, pass or fail. Not part of `make test`
test-k8s: image chart-tools
	@$(MAKE) --no-print-directory cluster-up
	status=0; HOOKGATE_IMAGE=$(IMAGE) KUBECONFIG=$(CLUSTER_STATE)/pki/admin.kubeconfig \
	  CLUSTER_STATE=$(CLUSTER_STATE) KUBE_BIN=$(KUBE_DIR) KEDA_VERSION=$(KEDA_VERSION) KEDA_DIR=$(KEDA_DIR) \
	  vitest run --config test/k8s/vitest.config.ts --exclude test/k8s/image.test.ts || status=$$?; \
	$(MAKE) --no-print-directory cluster-down; exit $$status

clean:
	rm -rf node_modules .hookgate bench/results
