# Two commands do everything on a fresh clone: `make train`, then `make test`.
# The venv is created on first use: `make train` installs what training needs, `make test` adds the dev extra (every
# optional feature, the test tools), each from its hashed lock in requirements/. Each is reinstalled only when
# pyproject.toml or its lock changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
CONFIG ?= configs/default.yaml
PYTEST_ARGS ?=

.DEFAULT_GOAL := help
.PHONY: help install install-dev train test test-fast new template lint format schema tensorboard clean update-deps
.PHONY: node-client peers

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "}; {printf "  make %-13s %s\n", $$1, $$2}'

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

# On Linux x86_64 with CPython 3.11 a hashed lock installs (scripts/lock.py says why), then the project alone: pip
# refuses `-e .` in hash-checking mode. Anywhere else the ranges in pyproject.toml install, after a one-line notice.
# $(1): the lock, $(2): what to install from the ranges instead.
define install_locked
	@if $(BIN)/python scripts/lock.py --matches; then \
		echo "$(BIN)/python -m pip install --require-hashes -r $(1)"; \
		$(BIN)/python -m pip install --quiet --require-hashes -r $(1) && \
		$(BIN)/python -m pip install --quiet --no-deps -e .; \
	else \
		$(BIN)/python -m pip install --quiet -e '$(2)'; \
	fi
endef

$(STAMP): pyproject.toml requirements/train.txt | $(VENV)/bin/python
	$(call install_locked,requirements/train.txt,.)
	@touch $(STAMP)

$(DEV_STAMP): pyproject.toml requirements/dev.txt | $(VENV)/bin/python
	$(call install_locked,requirements/dev.txt,.[dev])
	@touch $(STAMP) $(DEV_STAMP)

install: $(STAMP) ## Create .venv and install what training needs
install-dev: $(DEV_STAMP) ## Create .venv and install everything: every extra, the test tools

train: $(STAMP) ## Train on the embedded digits data (CONFIG=... to pick another config)
	$(BIN)/litstarter fit --config $(CONFIG)

new: $(STAMP) ## Write a project of your own on this library: make new NAME=<dir> TASK=<task> [EXTRAS=deploy,serve]
	@test -n "$(NAME)" || (echo "usage: make new NAME=<dir> TASK=<classification|multilabel|regression|segmentation|detection> [EXTRAS=deploy,serve,...]" >&2; exit 2)
	$(BIN)/litstarter new "$(NAME)" --task "$(or $(TASK),classification)" $(if $(EXTRAS),--extras "$(EXTRAS)")

template: $(STAMP) ## After editing a task module or src/litstarter/_template: copy the tasks out, write template.bundle
	$(BIN)/python scripts/template_tasks.py
	$(BIN)/python scripts/template_bundle.py

# Two processes (pytest-xdist), one test file per process at a time (--dist loadfile): a file's module fixtures
# (a shared sweep, a shared photo folder) are built once, and the two cores are both busy.
test: $(DEV_STAMP) ## Run the whole test suite (what CI runs; < 30 min on 2 cores)
test: node-client
test:
	$(BIN)/python -m pytest -n 2 --dist loadfile $(PYTEST_ARGS)

test-fast: $(DEV_STAMP) ## Run the fast tests only, without the end-to-end ones (< 2 min on 2 cores): the edit loop
	$(BIN)/python -m pytest -m "not slow" -n 2 $(PYTEST_ARGS)

# The Node client's test (tests/extras/deploy/test_preprocess_reference.py) runs it from examples/node_client:
# `npm ci` from its lock file, install scripts off (onnxruntime-node's fetches GPU binaries online; the CPU ones ship
# in the package). Only when the lock file changed since; without npm, that one test skips, saying so.
node-client: ## Install the Node client's packages from examples/node_client/package-lock.json (needs npm)
	@if ! command -v npm >/dev/null 2>&1; then echo "npm not found: the Node client's test will be skipped (install Node.js 18+)"; \
	elif [ ! -d examples/node_client/node_modules/onnxruntime-node ] || \
		[ examples/node_client/package-lock.json -nt examples/node_client/node_modules/.package-lock.json ]; then \
		cd examples/node_client && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error; fi

# The peers the benchmarks/*_peer_*.py scripts compare us with, each in a virtual environment of its own under .peers/
# (several GB each, built once, rebuilt when its requirements/peers/<peer>.txt changes). Never imported by the
# project, never a dependency: Ultralytics is AGPL-3.0. The suite's smoke of a peer skips, saying so, without it.
PEERS := .peers
peers: $(PEERS)/ultralytics/.installed $(PEERS)/fastai/.installed ## Build the peers' own venvs for benchmarks/*_peer_*.py (several GB, once)

$(PEERS)/%/.installed: requirements/peers/%.txt
	$(PYTHON) -m venv $(PEERS)/$*
	$(PEERS)/$*/bin/python -m pip install --quiet -r $<
	@touch $@

lint: $(DEV_STAMP) ## ruff check + format check
	$(BIN)/ruff check src tests benchmarks examples scripts
	$(BIN)/ruff format --check src tests benchmarks examples scripts

format: $(DEV_STAMP) ## Apply ruff fixes and formatting
	$(BIN)/ruff check --fix src tests benchmarks examples scripts
	$(BIN)/ruff format src tests benchmarks examples scripts

# Not committed: the signatures are the schema, so it is written from the code, here as in a generated project.
schema: $(STAMP) ## Write configs/schema.json: what editors complete and check configs with
	$(BIN)/litstarter schema

tensorboard: $(STAMP) ## Serve the TensorBoard logs under runs/
	$(BIN)/tensorboard --logdir runs

update-deps: $(DEV_STAMP) ## Propose raising each dependency's cap; APPLY=1 writes them, renews the hashed locks and writes them once make test's suite passes on them
	$(BIN)/python scripts/raise_caps.py $(if $(APPLY),--apply)

clean: ## Remove runs, caches and build artefacts (keeps .venv)
	rm -rf runs lightning_logs .pytest_cache .ruff_cache build dist src/*.egg-info
	find . -name __pycache__ -type d -prune -not -path './.venv/*' -exec rm -rf {} +
