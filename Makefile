# paperrec developer commands. `make run` and `make test` are the README's quick start.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install run test test-fast check clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

run: install
	$(BIN)/paperrec ingest --sample
	$(BIN)/paperrec rebuild-index
	$(BIN)/paperrec serve --port $(PORT)

test: install
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
