# The two commands a newcomer needs: `make run` and `make test`. Every target is idempotent.
# Without DATABASE_URL the project-local Postgres + PostGIS cluster (.data/pg, port 54329) is used,
# installed from Debian packages and started on demand by scripts/pg.sh; a target that started it
# stops it again when it ends (Ctrl-C included), unless another session still uses it.
SHELL := /bin/bash
# a supported Node.js first on PATH for every target, the tests' child processes and CI
# (scripts/node.sh: the machine's when it is 22.12+, else Node.js 24 LTS from the npm registry, once,
# into .tools/node)
NODE_DIR := $(shell scripts/node.sh)
$(if $(NODE_DIR),,$(error no supported Node.js (22.12+): scripts/node.sh could not install one, see its message above))
export PATH := $(NODE_DIR):$(PATH)
.DEFAULT_GOAL := help

EMBEDDED := $(if $(DATABASE_URL),,1)
# runs the rest of the line with DATABASE_URL: the given one, or the embedded cluster's (scripts/pg.sh with)
WITH_DB := $(if $(EMBEDDED),scripts/pg.sh with)
# the same for the vehicle broker: MQTT_URL as given, or the embedded Mosquitto's (scripts/mqtt.sh with,
# which stops it again when it started it), with the demo fleet's identity
WITH_MQTT := $(if $(MQTT_URL),,scripts/mqtt.sh with)
# V8 options of the platform's processes (make run, the benches and every process they start, which
# inherit NODE_OPTIONS; production sets the same, README "Scaling out"): young-generation semi-spaces
# of at most 16 MiB, Node 20's size. Node 24's V8 grows them with the machine's memory, and on a
# 24 GiB machine the publisher's peak RSS over a 10x hour went from 175 to 300-350 MiB (BENCH=publisher,
# goal < 200), memory that buys only fewer scavenges
NODE_V8_OPTIONS := --max-semi-space-size=16
# the embedded setup keeps a random signing secret with its data (lib/core/config.ts writes it on first
# start); with an external DATABASE_URL, SIGNING_SECRET must be configured
export SIGNING_SECRET_FILE := $(if $(EMBEDDED),$(if $(SIGNING_SECRET),,$(CURDIR)/.data/signing-secret))
TSX := node --import tsx
# mocha workers of make test: every test file owns its database (a clone of the migrated template)
# and its ports, so files run side by side; much of a file's time is waiting on Postgres, child
# processes and sockets, so three times the cores keeps 2 cores busy (mocha's default, cores - 1, is
# one worker here)
TEST_JOBS ?= 6
# files that run alone after the others: their subject is how the API holds up under load (4,000
# requests of one partner answered in full with the production admission settings) or how fast it
# answers while Postgres is down (503 within 3 s), which the suite's own parallel files would
# otherwise be part of (at load 11 a few bursts were refused, as they should be when the host is that
# oversubscribed, and an outage's 503 took 3.6 s on a slow machine)
TEST_ALONE := test/bursts.test.ts test/faults-postgres-restart.test.ts test/faults-failover.test.ts
# the longest files first (mocha hands files to workers in the order given): started last, one of
# them was the only file still running for the final 8 s of the suite. Measured in the parallel run
# (longest first); the order is only a schedule, every file still owns its database and ports
TEST_FIRST := $(foreach f,ops-cli multi-process feeds-catchup readme-walkthrough simulator gbfs-breadth openapi-lint \
	publisher-metrics replica shutdown newcomer faults-publisher-kill ops-breadth docs-page store,test/$(f).test.ts)
TEST_FILES := $(TEST_FIRST) $(filter-out $(TEST_FIRST) $(TEST_ALONE),$(sort $(wildcard test/*.test.ts test/*/*.test.ts)))

# ops arguments (make backfill ZONE=berlin FROM=2026-11-20T00 TO=2026-11-20T23 FEEDS=all)
ZONE ?= all
FEEDS ?= all
DAYS ?= 1
VEHICLES ?= 200
SEED ?= 42

# no import cycle among the project's modules, type-only imports included; silent unless it finds one
NO_CYCLES = out=$$(npx madge --circular --no-spinner --extensions ts --ts-config tsconfig.json api lib publisher ingest schemas ops scripts bin 2>&1) || { echo "$$out"; exit 1; }

.PHONY: window help setup deps db build run test typecheck sql-types lint format migrate seed simulate backfill republish publish-status policy-status ops bench soak db-stop db-ha db-ha-stop db-replica clean

help:
	@echo "make run             start everything: API :8080 (PORT), legacy MDS host :8081 (LEGACY_PORT), publisher,"
	@echo "                     vehicle ingest, the MQTT broker and the fleet simulator's MQTT vehicles; Ctrl-C stops it"
	@echo "                     all, the embedded Postgres and broker included when run started them"
	@echo "make test            the query types, the type check, the linter and formatter check, then the whole test suite"
	@echo "make build           bundle the entry points into dist/ (scripts/build.ts): what make run and production run"
	@echo "make typecheck       the generated query types against the migrated database, then tsc --noEmit"
	@echo "make lint            the linter (typescript-eslint, type-checked, layers and cycles), the formatter check (prettier), unused code (knip), import cycles (madge)"
	@echo "make format          rewrite the sources in the formatter's style"
	@echo "make sql-types       regenerate lib/core/sql/queries.gen.ts and sql/schema.sql after changing sql/queries or sql/migrations"
	@echo "make migrate         apply the database migrations"
	@echo "make seed            the demo data on an empty database"
	@echo "make simulate        deterministic fleet history: DAYS=$(DAYS) VEHICLES=$(VEHICLES) SEED=$(SEED) END=YYYY-MM-DDTHH (default: this hour)"
	@echo "make backfill        publish missing/dirty/failed hours: FROM=YYYY-MM-DDTHH TO=YYYY-MM-DDTHH ZONE=$(ZONE) FEEDS=$(FEEDS)"
	@echo "make republish       rewrite every hour of a window: the same variables as backfill"
	@echo "make publish-status  hours x feeds and the history catch-up: ZONE=$(ZONE) FROM= TO= (default: the last 24 hours)"
	@echo "make policy-status   the city rules' compliance view (docs/city-policy.md): ZONE=$(ZONE)"
	@echo "make ops ARGS=\"…\"    any ops CLI command, e.g. ARGS=\"keys list\" (the same as npm run ops -- keys list)"
	@echo "make bench           every benchmark, report in bench/results/report.md (BENCH=feeds runs one)"
	@echo "make soak            the live simulator at 10x with API traffic for SOAK_SECONDS (default 120), then checks"
	@echo "make help            this list"
	@echo "make db              start the embedded Postgres and leave it running (so does make ops)"
	@echo "make db-stop         stop the embedded Postgres and the embedded MQTT broker"
	@echo "make db-ha           the HA cluster (etcd, Patroni primary + synchronous standby, HAProxy) under .data/ha:"
	@echo "                     prints DATABASE_URL and DATABASE_REPLICA_URL (make db-ha-stop, or db-stop, stops it)"
	@echo "make db-replica      a streaming replica of the embedded Postgres on the next port, for tests and benches:"
	@echo "                     prints its URL for DATABASE_REPLICA_URL (scripts/pg.sh replica-stop removes it; db-stop too)"
	@echo "make clean           stop the embedded Postgres and delete .data: the database, the feed files, the signing secret"
	@echo ""
	@echo "DATABASE_URL         an external Postgres + PostGIS instead of the embedded cluster"
	@echo "EMBEDDED_PG_PORT     port of a new embedded cluster (default 54329; a cluster keeps its port, .data/pg-port)"
	@echo "EMBEDDED_PG_DB       the embedded database (default platform); another name is a database of its own,"
	@echo "                     e.g. EMBEDDED_PG_DB=sim make simulate …"
	@echo "PORT, LEGACY_PORT    the ports of make run (8080, 8081)"
	@echo "LOG_LEVEL            make run logs warn and above; info shows every request and published file"
	@echo "every other setting is an environment variable listed in the README (Configuration)"

deps:
	@scripts/deps.sh

db:
	@$(if $(EMBEDDED),scripts/pg.sh ensure >/dev/null,true)

setup: deps db

# the entry points bundled into dist/ (scripts/build.ts): what make run and production run with plain node
build: deps
	@$(TSX) scripts/build.ts >/dev/null

# LOG_LEVEL=info shows one line per request and per published file
run: build
	@SEED_DEMO=$(if $(EMBEDDED),1,0) LOG_LEVEL=$${LOG_LEVEL:-warn} NODE_OPTIONS="$(NODE_V8_OPTIONS) $$NODE_OPTIONS" $(WITH_DB) $(WITH_MQTT) node dist/run.mjs

# the type check first (about 10 s): the suite runs through tsx, which strips types without checking them
test: deps
	@$(WITH_DB) $(TSX) scripts/sql-types.ts --check
	@npx tsc --noEmit
	@npx eslint . && npx prettier --check --log-level warn . && npx knip --no-progress && $(NO_CYCLES)
	@scripts/chromium.sh >/dev/null || echo "[test] chromium unavailable: the docs and console page tests will be skipped (under CI they fail)"
	@scripts/gbfs-validator.sh || echo "[test] the official GBFS validator is unavailable: its test will be skipped (under CI it fails)"
	@scripts/mqtt.sh install
	@scripts/cli-tools.sh || echo "[test] curl or jq unavailable: the README walkthrough test will be skipped (under CI it fails)"
	@NODE_ENV=test $(WITH_DB) npx mocha --parallel --jobs $(TEST_JOBS) $(TEST_FILES)
	@NODE_ENV=test $(WITH_DB) npx mocha $(TEST_ALONE)

# the named queries' generated types and the schema's dump (sql/schema.sql) against a clone of the
# migrated template first (a renamed column fails here, naming the query), then the type check
typecheck: deps
	@$(WITH_DB) $(TSX) scripts/sql-types.ts --check
	@npx tsc --noEmit

# typescript-eslint with type information (and the layering and no-cycle rules of eslint.config.js),
# the formatter's check (`make format` rewrites what it refuses), knip: no unused file, export or
# dependency (knip.jsonc), and madge: no import cycle, type-only imports included (which
# import-x/no-cycle does not follow)
lint: deps
	@npx eslint .
	@npx prettier --check --log-level warn .
	@npx knip --no-progress
	@$(NO_CYCLES)

format: deps
	@npx prettier --write --log-level warn .

# regenerates lib/core/sql/queries.gen.ts and the live schema's dump, sql/schema.sql, after a change to
# sql/queries or sql/migrations
sql-types: deps
	@$(WITH_DB) $(TSX) scripts/sql-types.ts

migrate: deps
	@$(WITH_DB) $(TSX) bin/ops.ts migrate

seed: deps
	@$(WITH_DB) $(TSX) bin/ops.ts seed

# OPS_CALLER: the CLI's hints then name make's variables (END=, VEHICLES=) rather than its flags
simulate: deps
	@OPS_CALLER=$(if $(EMBEDDED),make-embedded,make) $(WITH_DB) $(TSX) bin/ops.ts simulate --days $(DAYS) --vehicles $(VEHICLES) --seed $(SEED) $(if $(END),--end $(END))

# FROM and TO are UTC hours (YYYY-MM-DDTHH); without them make would pass an empty --from
window:
	@$(if $(FROM),,$(error FROM is required, e.g. make $(MAKECMDGOALS) FROM=2026-11-20T00 TO=2026-11-20T23))$(if $(TO),,$(error TO is required, e.g. make $(MAKECMDGOALS) FROM=2026-11-20T00 TO=2026-11-20T23))

backfill: window deps
	@$(WITH_DB) $(TSX) bin/ops.ts backfill --zone $(ZONE) --from $(FROM) --to $(TO) --feeds $(FEEDS)

republish: window deps
	@$(WITH_DB) $(TSX) bin/ops.ts backfill --force --zone $(ZONE) --from $(FROM) --to $(TO) --feeds $(FEEDS)

ops: deps
	@scripts/ops.sh $(ARGS)

publish-status: deps
	@$(WITH_DB) $(TSX) bin/ops.ts publish-status --zone $(ZONE) $(if $(FROM),--from $(FROM)) $(if $(TO),--to $(TO))

policy-status: deps
	@$(WITH_DB) $(TSX) bin/ops.ts policy status $(if $(filter-out all,$(ZONE)),$(ZONE))

# build: the benches that run the API or the publisher as processes start them from dist/, as make run does
bench: build
	@NODE_OPTIONS="$(NODE_V8_OPTIONS) $$NODE_OPTIONS" $(WITH_DB) $(TSX) bench/run.ts

soak: deps
	@NODE_OPTIONS="$(NODE_V8_OPTIONS) $$NODE_OPTIONS" $(WITH_DB) $(TSX) bench/soak.ts

db-stop:
	@scripts/pg.sh stop
	@scripts/mqtt.sh stop
	@scripts/ha.sh stop 2>/dev/null || true

# the HA cluster as operators run it (scripts/ha.sh, docs/ha-cluster.md): etcd, Patroni with a primary
# and a synchronous standby, HAProxy; prints DATABASE_URL (read-write) and DATABASE_REPLICA_URL
# (read-only) to run anything against it: `make db-ha`, then `DATABASE_URL=… DATABASE_REPLICA_URL=… make run`
db-ha:
	@scripts/ha.sh start

db-ha-stop:
	@scripts/ha.sh stop

# a read-only standby of the embedded cluster (pg_basebackup + streaming, .data/pg-replica); an external
# DATABASE_URL has its own replicas
db-replica:
	@$(if $(EMBEDDED),scripts/pg.sh replica,$(error db-replica copies the embedded cluster: with DATABASE_URL set, give a replica of that server as DATABASE_REPLICA_URL))

clean: db-stop
	rm -rf .data
