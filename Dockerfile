# One image for every RLVR Studio role (web, worker, worker-gpu): see docker-compose.yml.
# TORCH_INDEX_URL picks the torch build: CUDA (default, for worker-gpu) or https://download.pytorch.org/whl/cpu.
FROM python:3.11-slim

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128
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
COPY pyproject.toml README.md ./
RUN mkdir -p trainer webapp workers && touch trainer/__init__.py webapp/__init__.py workers/__init__.py \
    && pip install --extra-index-url "${TORCH_INDEX_URL}" ".${RLVR_EXTRAS:+[${RLVR_EXTRAS}]}" \
    && pip uninstall -y rlvr-studio

COPY manage.py ./
COPY trainer ./trainer
COPY webapp ./webapp
COPY workers ./workers
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
