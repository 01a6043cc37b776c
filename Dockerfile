# One image for every RLVR Studio role (web, worker, worker-gpu): see docker-compose.yml.
# TORCH_INDEX_URL picks the torch build: CUDA (default, for worker-gpu) or https://download.pytorch.org/whl/cpu.
# BASE_IMAGE: the official python:3.11-slim by default; deploy/compose/local-images.sh builds a stand-in from
# Debian's packages where no registry of images can be reached (deploy/compose/docker-compose.local.yml names it).
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128
# When set, the build fails unless torch reports exactly this version (e.g. 2.13.0+cpu: never a CUDA build by accident).
ARG TORCH_EXPECT=""
# Optional extras, e.g. RLVR_EXTRAS=vllm on GPU hosts (vLLM needs CUDA; see docs/gpu.md).
ARG RLVR_EXTRAS=""

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=webapp.settings \
    PYTHONPATH=/app \
    RLVR_DATA_DIR=/data \
    RLVR_HOME=/data/home \
    HF_HUB_OFFLINE=1 \
    HF_DATASETS_OFFLINE=1

WORKDIR /app

# The code sandbox (trainer/sandbox) runs untrusted programs under bubblewrap with a libseccomp filter;
# the unprivileged rlvr user starts it (compose gives the workers the seccomp profile it needs).
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap libseccomp2 \
    && rm -rf /var/lib/apt/lists/*

# Dependencies first (cached while only the code changes): install the project's requirements from
# pyproject.toml with a stub package, then the real code.
# deploy/wheels/ holds wheels pip takes before any index (the local build puts the CPU torch wheel there; empty
# otherwise). TORCH_INDEX_URL empty: no extra index.
COPY pyproject.toml ./
COPY deploy/wheels/ /tmp/wheels/
# A C compiler only for this step: some dependencies publish no wheel (pycosat, via reasoning-gym).
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && mkdir -p trainer webapp workers rlvr_client \
    && touch trainer/__init__.py webapp/__init__.py workers/__init__.py rlvr_client/__init__.py README.md \
    && pip install --find-links /tmp/wheels ${TORCH_INDEX_URL:+--extra-index-url "${TORCH_INDEX_URL}"} \
        ".${RLVR_EXTRAS:+[${RLVR_EXTRAS}]}" \
    && pip uninstall -y rlvr-studio \
    && apt-get purge -y --auto-remove gcc libc6-dev && rm -rf /var/lib/apt/lists/* /tmp/wheels \
    && python -c 'import sys, torch; e = sys.argv[1]; assert not e or torch.__version__ == e, (torch.__version__, e)' \
        "${TORCH_EXPECT}"

COPY manage.py README.md ./
COPY trainer ./trainer
COPY webapp ./webapp
COPY workers ./workers
COPY rlvr_client ./rlvr_client
COPY templates ./templates
COPY static ./static
# Editable: the code runs from /app (templates/ and static/ beside it), and `rlvr` is on PATH.
RUN pip install --no-deps -e . \
    && useradd --create-home --uid 1000 rlvr \
    && mkdir -p /data /runs && chown rlvr:rlvr /data /runs /app

USER rlvr
EXPOSE 8000
# Overridden per service in docker-compose.yml.
CMD ["daphne", "-b", "0.0.0.0", "-p", "8000", "webapp.asgi:application"]
