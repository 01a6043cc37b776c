#!/usr/bin/env bash
# Back up a running compose stack into DIR: the database (pg_dump's custom format) and the data and runs
# volumes (users' uploads, rollouts' token arrays, the tiny models; checkpoints). docs/self_hosting.md.
# Usage: deploy/compose/backup.sh DIR    (COMPOSE: how you run compose, default `docker compose`)
set -euo pipefail
dir="${1:?usage: deploy/compose/backup.sh DIR}"
compose=(${COMPOSE:-docker compose})
mkdir -p "$dir"
"${compose[@]}" exec -T postgres sh -c 'pg_dump -U "$POSTGRES_USER" -Fc "$POSTGRES_DB"' > "$dir/database.dump"
"${compose[@]}" exec -T worker tar -C / -cf - data runs > "$dir/volumes.tar"
echo "backed up to $dir: database.dump ($(du -h "$dir/database.dump" | cut -f1)), volumes.tar ($(du -h "$dir/volumes.tar" | cut -f1))"
