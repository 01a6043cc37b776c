# RLVR Studio. `make demo` and `make test` work from a fresh clone: they create .venv and install first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint typecheck pytest bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch is pinned to the CPU wheel (torch==2.13.0) in pyproject.toml; pip finds it locally.
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/rlvr stack --demo

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The tiny model is built (once, ~1 min, cached under $$RLVR_HOME) before pytest so no test pays for it.
pytest: $(STAMP)
	$(BIN)/rlvr init-model --model tiny:addition
	$(BIN)/rlvr init-model --model tiny:addition-teacher
	$(BIN)/python -m pytest

# Lint, types, then every test (pytest exits 5 when it collects nothing: that fails too).
test: lint typecheck pytest

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python benchmarks/vs_trl.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
