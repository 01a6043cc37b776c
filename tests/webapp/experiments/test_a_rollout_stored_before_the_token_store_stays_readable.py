"""Rollouts stored before the token store keep their arrays inline (token_data, tokens; token_key blank)
and read as they did; re-recording such a step moves it to the token store."""

from __future__ import annotations

from tests.webapp.helpers import rollout_record
from trainer.sinks import pack_token_arrays
from webapp.experiments.models import Rollout, Run
from webapp.experiments.rollout_writes import store_rollouts
from webapp.experiments.selectors import rollout_detail


def legacy_row(run: Run, group: int = 0) -> Rollout:
    record = rollout_record(1, group, 0, n_tokens=5)
    return Rollout.objects.create(
        run=run, step=1, prompt_id=record.prompt_id, group=group, sample_index=0, prompt=record.prompt,
        completion=record.completion, answer=record.answer, finish_reason="eos", reward=1.0, rewards={}, correct=True,
        details={}, advantage=0.5, length=5, tokens=list(record.tokens), token_data=pack_token_arrays(record),
    )  # fmt: skip


def test_a_legacy_row_reads_from_its_inline_columns(run: Run) -> None:
    row = legacy_row(run)
    detail = rollout_detail(run=run, rollout_id=row.pk)
    assert row.token_key == ""
    assert detail.token_ids == list(range(100, 105)) and detail.tokens == [" 4"] * 5
    assert detail.channels["logprob"] is not None and detail.channels["ref_logprob"] is None


def test_recording_a_legacy_step_again_replaces_its_inline_rows(run: Run) -> None:
    kept_id = legacy_row(run, group=0).pk
    legacy_row(run, group=1)
    store_rollouts(run_id=run.pk, step=1, records=[rollout_record(1, 0, 0, n_tokens=3)], replace_step=True)
    row = Rollout.objects.get(run=run)
    assert row.pk == kept_id  # same slot, same row
    assert row.token_key and row.tokens == [] and bytes(row.token_data) == b""
    assert rollout_detail(run=run, rollout_id=row.pk).token_ids == [100, 101, 102]
