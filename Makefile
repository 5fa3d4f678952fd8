# The Makefile's targets are hookgate's developer interface. Every recipe runs the Node.js
# pinned in package.json (node_modules/.bin/node), never the machine's own.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)

DEPS := node_modules/.installed
CONFIG ?= hookgate.example.yaml

.PHONY: run test lint format typecheck unit bench install tools clean

$(DEPS): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

install: $(DEPS)

## run: serve gateway and worker; embedded PostgreSQL under ./.hookgate/ unless DATABASE_URL is set
run: $(DEPS)
	node services/cli/main.ts serve --role all --config $(CONFIG)

## tools: system tools the tests use: promtool and prometheus (Debian's `prometheus`), if missing
tools:
	@if ! command -v promtool >/dev/null || ! command -v prometheus >/dev/null; then \
	  DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; \
	fi

## test: lint, type-check, then every test suite against a real PostgreSQL
test: $(DEPS) tools lint typecheck
	vitest run

lint: $(DEPS)
	biome check .

format: $(DEPS)
	biome check --write .

typecheck: $(DEPS)
	tsc --noEmit -p tsconfig.json
	tsc --noEmit -p load/tsconfig.json

## bench: throughput ratios against baselines measured in the same run
bench: $(DEPS)
	node bench/run.ts

clean:
	rm -rf node_modules .hookgate bench/results
