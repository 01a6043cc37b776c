"""The ingest client stamps each logged step with ``perf/elapsed_s`` (the run page's wall-clock x-axis) unless the
caller sent its own, or the steps are an earlier run's being imported. Offline: the batches are read back
from the spool, no server needed."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rlvr_client import start_run
from rlvr_client.run import ELAPSED_KEY
from rlvr_client.spool import RunSpool
from rlvr_client.transport import Transport


def spooled_points(spool_dir: Path, **options: Any) -> list[dict[str, Any]]:
    """Log three steps to a server that is down and return the metric points the spool holds."""
    transport = Transport("http://127.0.0.1:9", "t")  # nothing listens: every batch stays in the spool
    run = start_run(
        project="lab",
        name="x",
        transport=transport,
        spool_dir=spool_dir,
        key="k1",
        flush_interval_s=0.05,
        attempts=1,
        **options,
    )
    try:
        run.log_metrics(1, {"rollout/reward_mean": 0.1})
        time.sleep(0.02)
        run.log_metrics(2, {"rollout/reward_mean": 0.2})
        run.log_metrics(3, {"rollout/reward_mean": 0.3, ELAPSED_KEY: 99.0})  # the caller's own is kept
        run.flush(timeout_s=2, stop_when_offline=True)
    finally:
        run.close()
    batches = sorted(RunSpool(spool_dir, "k1").pending(), key=lambda b: b.sequence)
    return [point for batch in batches for point in batch.read().get("metrics", [])]


def test_each_step_gets_the_seconds_since_the_run_started(tmp_path: Path) -> None:
    points = spooled_points(tmp_path)
    assert [p["step"] for p in points] == [1, 2, 3]
    first, second, third = (p["values"][ELAPSED_KEY] for p in points)
    assert 0 <= first < second < 10
    assert third == 99.0
    assert all(p["values"]["rollout/reward_mean"] == p["step"] / 10 for p in points)


def test_an_import_of_earlier_steps_is_not_stamped(tmp_path: Path) -> None:
    points = spooled_points(tmp_path, stamp_elapsed=False)
    assert [ELAPSED_KEY in p["values"] for p in points] == [False, False, True]
