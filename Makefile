# The two commands a newcomer needs: `make run` and `make test`. Every target is idempotent.
# Without DATABASE_URL the project-local Postgres + PostGIS cluster (.data/pg, port 54329) is used,
# installed from Debian packages and started on demand by scripts/pg.sh.
SHELL := /bin/bash
.DEFAULT_GOAL := help

EMBEDDED := $(if $(DATABASE_URL),,1)
PG_URL = $(if $(EMBEDDED),$(shell scripts/pg.sh ensure),$(DATABASE_URL))
# the embedded setup keeps a random signing secret with its data (lib/config.ts writes it on first
# start); with an external DATABASE_URL, SIGNING_SECRET must be configured
export SIGNING_SECRET_FILE := $(if $(EMBEDDED),$(if $(SIGNING_SECRET),,$(CURDIR)/.data/signing-secret))
TSX := node --import tsx

# ops arguments (make backfill ZONE=berlin FROM=2026-11-20T00 TO=2026-11-20T23 FEEDS=all)
ZONE ?= all
FEEDS ?= all
DAYS ?= 1
VEHICLES ?= 200
SEED ?= 42

.PHONY: window help setup deps db run test typecheck migrate seed simulate backfill republish publish-status ops bench soak db-stop clean

help:
	@echo "make run        start everything (API :8080, legacy MDS :8081, publisher, fleet simulator)"
	@echo "make test       run the whole test suite"
	@echo "make migrate | seed | simulate DAYS= VEHICLES= SEED= | backfill ZONE= FROM= TO= FEEDS= | republish | publish-status | bench | soak"
	@echo "make ops ARGS=\"keys list\"   any ops CLI command (same as npm run ops -- keys list)"

deps:
	@scripts/deps.sh

db:
	@$(if $(EMBEDDED),scripts/pg.sh ensure >/dev/null,true)

setup: deps db

# LOG_LEVEL=info shows one line per request and per published file
run: setup
	@DATABASE_URL="$(PG_URL)" SEED_DEMO=$(if $(EMBEDDED),1,0) LOG_LEVEL=$${LOG_LEVEL:-warn} $(TSX) bin/run.ts

# the type check first (about 10 s): the suite runs through tsx, which strips types without checking them
test: setup
	@npx tsc --noEmit
	@scripts/chromium.sh >/dev/null || echo "[test] chromium unavailable: the docs and console page tests will be skipped (under CI they fail)"
	@scripts/gbfs-validator.sh || echo "[test] the official GBFS validator is unavailable: its test will be skipped (under CI it fails)"
	@DATABASE_URL="$(PG_URL)" NODE_ENV=test npx mocha 'test/**/*.test.ts'

typecheck: deps
	@npx tsc --noEmit

migrate: setup
	@DATABASE_URL="$(PG_URL)" $(TSX) bin/ops.ts migrate

seed: setup
	@DATABASE_URL="$(PG_URL)" $(TSX) bin/ops.ts seed

simulate: setup
	@DATABASE_URL="$(PG_URL)" $(TSX) bin/ops.ts simulate --days $(DAYS) --vehicles $(VEHICLES) --seed $(SEED) $(if $(END),--end $(END))

# FROM and TO are UTC hours (YYYY-MM-DDTHH); without them make would pass an empty --from
window:
	@$(if $(FROM),,$(error FROM is required, e.g. make $(MAKECMDGOALS) FROM=2026-11-20T00 TO=2026-11-20T23))$(if $(TO),,$(error TO is required, e.g. make $(MAKECMDGOALS) FROM=2026-11-20T00 TO=2026-11-20T23))

backfill: window setup
	@DATABASE_URL="$(PG_URL)" $(TSX) bin/ops.ts backfill --zone $(ZONE) --from $(FROM) --to $(TO) --feeds $(FEEDS)

republish: window setup
	@DATABASE_URL="$(PG_URL)" $(TSX) bin/ops.ts backfill --force --zone $(ZONE) --from $(FROM) --to $(TO) --feeds $(FEEDS)

ops: deps
	@scripts/ops.sh $(ARGS)

publish-status: setup
	@DATABASE_URL="$(PG_URL)" $(TSX) bin/ops.ts publish-status --zone $(ZONE) $(if $(FROM),--from $(FROM)) $(if $(TO),--to $(TO))

bench: setup
	@DATABASE_URL="$(PG_URL)" $(TSX) bench/run.ts

soak: setup
	@DATABASE_URL="$(PG_URL)" $(TSX) bench/soak.ts

db-stop:
	@scripts/pg.sh stop

clean: db-stop
	rm -rf .data
