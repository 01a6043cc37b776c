#!/usr/bin/env bash
# Builds the images the compose stack needs without a registry of images (only Debian's packages and PyPI):
#   rlvr-local/debian:bookworm   debootstrap --variant=minbase bookworm, imported
#   rlvr-local/python:3.11       Debian's python3.11 in a venv (a stand-in for python:3.11-slim)
#   rlvr-local/postgres:15       Debian's postgresql-15 (a stand-in for postgres:16-alpine)
#   rlvr-local/redis:7           Debian's redis-server (a stand-in for redis:7-alpine)
# and puts the CPU torch wheel in deploy/wheels/, where the Dockerfile installs it from (pip inside a build
# cannot see this machine's disk). An image that exists is kept (delete it to rebuild). Needs root and docker.
set -euo pipefail
cd "$(dirname "$0")"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
PYTHON="${PYTHON:-python3}"

exists() { docker image inspect "$1" >/dev/null 2>&1; }

if ! exists rlvr-local/debian:bookworm; then
  root="$(mktemp -d /tmp/rlvr-debootstrap.XXXXXX)"
  echo "debootstrap bookworm -> rlvr-local/debian:bookworm"
  debootstrap --variant=minbase bookworm "$root" "$DEBIAN_MIRROR" >/tmp/rlvr-debootstrap.log 2>&1 \
    || { tail -20 /tmp/rlvr-debootstrap.log >&2; exit 1; }
  # Images keep no package lists or caches; apt-get update in each Dockerfile fetches fresh ones.
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
  tar -C "$root" -c . | docker import - rlvr-local/debian:bookworm >/dev/null
  rm -rf "$root"
fi
# The python stand-in trusts what this machine trusts (a TLS-inspecting proxy's authority included).
cp /etc/ssl/certs/ca-certificates.crt host-ca-certificates.crt
for name in python:3.11 postgres:15 redis:7; do
  exists "rlvr-local/$name" && continue
  echo "docker build rlvr-local/$name"
  docker build --quiet --network host -t "rlvr-local/$name" -f "${name%%:*}.Dockerfile" . >/dev/null
done

# The CPU wheel, never a CUDA build: pip takes a local copy where it has one (this machine's find-links),
# else PyTorch's CPU index.
wheels=../wheels
if ! ls "$wheels"/torch-"$TORCH_VERSION"+cpu-*.whl >/dev/null 2>&1; then
  "$PYTHON" -m pip download --quiet --no-deps --only-binary :all: --python-version 3.11 \
    --extra-index-url https://download.pytorch.org/whl/cpu -d "$wheels" "torch==$TORCH_VERSION+cpu"
fi
ls "$wheels"/torch-"$TORCH_VERSION"+cpu-*.whl >/dev/null
echo "local images ready: $(docker image ls --format '{{.Repository}}:{{.Tag}}' 'rlvr-local/*' | sort | tr '\n' ' ')"
