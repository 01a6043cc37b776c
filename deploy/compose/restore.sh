#!/usr/bin/env bash
# Restore a backup made by deploy/compose/backup.sh into a stopped stack (e.g. after `docker compose down
# --volumes`, or on a new host): starts only postgres, restores the database and the volumes, stops it.
# Then `docker compose up`. Usage: deploy/compose/restore.sh DIR    (COMPOSE: default `docker compose`)
set -euo pipefail
dir="${1:?usage: deploy/compose/restore.sh DIR}"
compose=(${COMPOSE:-docker compose})
[ -s "$dir/database.dump" ] && [ -s "$dir/volumes.tar" ] || { echo "no backup in $dir" >&2; exit 1; }
"${compose[@]}" up -d --wait postgres
"${compose[@]}" exec -T postgres sh -c 'pg_restore -U "$POSTGRES_USER" -d "$POSTGRES_DB" --clean --if-exists --no-owner' \
  < "$dir/database.dump"
# The app image's own user owns /data and /runs; --no-deps: nothing else starts.
"${compose[@]}" run --rm --no-deps -T --entrypoint tar worker -C / -xf - < "$dir/volumes.tar"
"${compose[@]}" stop postgres
echo "restored from $dir; now: docker compose up -d"
