"""Indexes for a run's rollout search (``selectors.rollouts_for_run(search=...)``), PostgreSQL only.

Django writes ``completion__icontains`` as ``UPPER("experiments_rollout"."completion"::text) LIKE
UPPER(%s)`` on PostgreSQL, a pattern no B-tree serves: the search read every rollout of the table. GIN
trigram indexes (pg_trgm, a trusted extension since PostgreSQL 13: the database owner may create it) on
exactly those expressions serve it for patterns of three characters or more; the search's third arm,
``prompt_id = %s``, gets a B-tree on (run, prompt_id) so the planner can OR the three bitmaps.

Built CONCURRENTLY (outside a transaction, hence ``atomic = False``) so that upgrading a server with
millions of rollouts does not block the training steps being written meanwhile. SQLite (the embedded
mode) keeps scanning: it has no trigram indexes and its tables stay small.
"""

from django.db import migrations

INDEXES = {
    "rollout_completion_trgm": 'USING gin ((UPPER("completion"::text)) gin_trgm_ops)',
    "rollout_prompt_trgm": 'USING gin ((UPPER("prompt"::text)) gin_trgm_ops)',
    "rollout_run_prompt_id": '("run_id", "prompt_id")',
}


def create_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, definition in INDEXES.items():
        schema_editor.execute(
            f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{name}" ON "experiments_rollout" {definition}'
        )


def drop_indexes(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f'DROP INDEX CONCURRENTLY IF EXISTS "{name}"')


class Migration(migrations.Migration):
    atomic = False

    dependencies = [
        ("experiments", "0006_external_runs_and_token_store"),
    ]

    operations = [
        migrations.RunPython(create_indexes, drop_indexes, elidable=False),
    ]
