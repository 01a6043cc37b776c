"""On PostgreSQL the run's rollout search (``rollouts_for_run(search=...)``) is served by migration 0007's
trigram indexes, which match the SQL Django writes for ``icontains`` there: ``UPPER(col::text) LIKE``."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.webapp.helpers import rollout_record
from webapp.experiments.models import Rollout, Run
from webapp.experiments.selectors import rollouts_for_run
from webapp.experiments.services import run_record_step

pytestmark = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="trigram indexes exist on PostgreSQL only"
)


def test_the_indexes_exist_on_exactly_the_expressions_icontains_compiles_to(db: None) -> None:
    sql = str(rollouts_for_run(run=Run(pk=1), search="answer").query)
    assert 'UPPER("experiments_rollout"."completion"::text) LIKE UPPER(' in sql
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'experiments_rollout'")
        indexes = dict(cursor.fetchall())
    assert "gin (upper(completion) gin_trgm_ops)" in indexes["rollout_completion_trgm"]
    assert "gin (upper(prompt) gin_trgm_ops)" in indexes["rollout_prompt_trgm"]
    assert "(run_id, prompt_id)" in indexes["rollout_run_prompt_id"]


def filler(run: Run, n: int) -> None:
    """``n`` rows of varied text (no token arrays: the search never reads them), so that reading every row
    of the run costs the planner more than the trigram lookups, as it does on a real run."""
    words = ["alpha", "bravo", "carrot", "delta", "echo", "fox", "golf", "hotel", "india", "juliet"]
    Rollout.objects.bulk_create(
        Rollout(run=run, step=1 + i // 64, prompt_id=f"row-{i}", group=i % 64 // 8, sample_index=i % 8,
                prompt=f"{words[i % 10]} {i * 7919 % 10007} plus {words[i // 10 % 10]}",
                completion=f"{words[i // 100 % 10]} {i * 104729 % 99991} then {words[i % 7]}",
                finish_reason="eos", correct=False, length=4)
        for i in range(n)
    )  # fmt: skip


def test_the_search_query_uses_the_trigram_indexes(run: Run) -> None:
    filler(run, 5000)
    run_record_step(
        run_id=run.pk,
        step=100,
        max_steps=200,
        metrics={},
        rollouts=[rollout_record(100, 0, 0, completion="the answer is 42")],
    )
    search = rollouts_for_run(run=run, search="answer is")
    with connection.cursor() as cursor:
        # Rows just inserted wait in each GIN index's pending list, which the planner prices high;
        # (auto)vacuum merges it on a real server, this does the same inside the test's transaction.
        cursor.execute(
            "SELECT gin_clean_pending_list('rollout_completion_trgm'), gin_clean_pending_list('rollout_prompt_trgm')"
        )
        cursor.execute("ANALYZE experiments_rollout")
        cursor.execute("SET LOCAL enable_seqscan = off")  # no sequential scan of a test-sized table
    plan = search.explain()
    assert "BitmapOr" in plan, plan
    for index in ("rollout_completion_trgm", "rollout_prompt_trgm", "rollout_run_prompt_id"):
        assert f"Bitmap Index Scan on {index}" in plan, plan
    assert [r.completion for r in search] == ["the answer is 42"]
