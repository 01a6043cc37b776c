"""The longest rollout the ingest API documents (131,072 tokens, 8 per-token channels) goes through the real
client to a live server and arrives whole; one the server can never take is counted on the run, never a
silent success."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from rlvr_client import start_run
from rlvr_client.spool import RunSpool
from rlvr_client.wire import TOKEN_CHANNELS
from tests.integrations.live_studio import Studio

LONGEST = 131_072  # webapp/ingest/schema.py MAX_TOKENS, the documented maximum (docs/ingest_format.md)
CHANNELS = TOKEN_CHANNELS[:8]


def long_rollout(sample_index: int, n_tokens: int) -> dict[str, Any]:
    rng = random.Random(sample_index)  # values that do not compress away: the body is as large as a real one
    return {
        "group": 0,
        "sample_index": sample_index,
        "prompt": "Prove it.",
        "completion": "x" * n_tokens,
        "tokens": [f"t{i % 50_000}" for i in range(n_tokens)],
        "token_ids": [i % 50_000 for i in range(n_tokens)],
        "reward": 1.0,
        "token_values": {c: [round(rng.uniform(-5, 0), 6) for _ in range(n_tokens)] for c in CHANNELS},
    }


def test_the_longest_documented_rollout_arrives_whole_through_the_client(studio: Studio) -> None:
    run = start_run(project=studio.project.slug, name="long", key="long-rollouts", flush_interval_s=0.05)
    longest = long_rollout(8, LONGEST)
    run.log_rollouts(1, [long_rollout(i, 64) for i in range(8)] + [longest])
    assert run.finish("succeeded", timeout_s=300) is True
    assert run.rejections == []

    rows = studio.rollouts(run.run_id, step=1)
    assert len(rows) == 9
    detail = studio.rollout_detail(run.run_id, rows[-1]["id"])
    assert len(detail["tokens"]) == LONGEST and detail["token_ids"][-1] == (LONGEST - 1) % 50_000
    assert sorted(c for c, values in detail["channels"].items() if values is not None) == sorted(CHANNELS)
    assert detail["channels"]["logprob"][-1] == pytest.approx(
        longest["token_values"]["logprob"][-1], rel=1e-6
    )
    assert RunSpool(Path(os.environ["RLVR_SPOOL_DIR"]), "long-rollouts").rejected() == []


def test_a_rollout_the_server_can_never_take_is_counted_on_the_run_not_a_silent_success(
    studio: Studio, settings: Any
) -> None:
    settings.RLVR_MAX_INGEST_MB = 1  # so that a 20,000-token rollout is over it
    run = start_run(project=studio.project.slug, name="dropped", key="dropped-rollout", flush_interval_s=0.05)
    run.log_rollouts(1, [long_rollout(i, 64) for i in range(8)] + [long_rollout(8, 20_000)])

    assert run.finish("succeeded", timeout_s=120) is False
    assert run.rollouts_dropped == 1
    spool = RunSpool(Path(os.environ["RLVR_SPOOL_DIR"]), "dropped-rollout")
    [rejected] = spool.rejected()
    assert "RLVR_MAX_INGEST_MB" in rejected.with_name(rejected.stem + ".error.txt").read_text()

    shown = studio.get(f"/api/runs/{run.run_id}/")
    assert (shown["status"], shown["rollouts_dropped"]) == ("succeeded", 1)
    assert len(studio.rollouts(run.run_id, step=1)) == 8
    events = studio.get(f"/api/runs/{run.run_id}/events/")
    ended = [e for e in events.get("results", events) if e["kind"] == "succeeded"]
    assert ended[0]["level"] == "warning" and "1 rollout could not be delivered" in ended[0]["message"]


def test_a_refused_rollout_sent_with_the_outcome_does_not_take_the_outcome_with_it(
    studio: Studio, settings: Any
) -> None:
    settings.RLVR_MAX_INGEST_MB = 1
    run = start_run(
        project=studio.project.slug, name="alone", key="refused-with-outcome", flush_interval_s=30
    )
    run.log_rollouts(
        1, [long_rollout(0, 20_000)]
    )  # cut with the outcome, in one batch, when finish() flushes

    assert run.finish("succeeded", timeout_s=120) is False

    shown = studio.get(f"/api/runs/{run.run_id}/")
    assert (shown["status"], shown["rollouts_dropped"]) == ("succeeded", 1)
