"""run_record_phase: what a run does before its first step (a first-use model build) is stored on the Run,
published as ``run.phase``, logged once when it starts and once when it ends, and gone with the first step."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.utils import timezone
from rest_framework.test import APIClient

from webapp.experiments.models import Run, RunEvent
from webapp.experiments.phases import phase_view
from webapp.experiments.services import run_fail, run_mark_started, run_record_phase, run_record_step
from webapp.realtime.publish import run_group

Capture = Any
LABEL = "Building the built-in model tiny:addition (warm-start SFT, once)"


def building(
    run: Run, done: int, total: int = 1200, subject: str = "tiny:addition", elapsed_s: float = 10.0
) -> None:
    run_record_phase(
        run_id=run.pk,
        name="building_model",
        label=LABEL if subject == "tiny:addition" else f"Building {subject}",
        subject=subject,
        done=done,
        total=total,
        elapsed_s=elapsed_s,
        eta_s=(total - done) * elapsed_s / done,
    )


def started(run: Run) -> Run:
    return run_mark_started(run_id=run.pk, worker="w1")


def test_a_phase_report_is_stored_on_the_run(run: Run) -> None:
    building(started(run), 120)
    run.refresh_from_db()
    assert run.phase == "building_model"
    progress = run.phase_progress
    assert (progress["label"], progress["done"], progress["total"], progress["eta_s"]) == (
        LABEL,
        120,
        1200,
        90.0,
    )
    assert progress["updated_at"]


def test_a_phase_report_is_published_after_commit(
    run: Run, memory_channel_layer: None, django_capture_on_commit_callbacks: Capture
) -> None:
    started(run)
    layer = get_channel_layer()
    assert layer is not None
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(run_group(run.pk), channel)
    with django_capture_on_commit_callbacks(execute=True):
        building(run, 600)
    messages = [
        async_to_sync(layer.receive)(channel) for _ in range(2)
    ]  # the start's run.log, then run.phase
    phase = next(m for m in messages if m["event"] == "run.phase")["payload"]["phase"]
    assert (phase["name"], phase["label"], phase["done"], phase["total"]) == (
        "building_model",
        LABEL,
        600,
        1200,
    )
    assert phase["eta_s"] == 10.0


def test_the_start_and_the_end_of_a_build_each_log_one_event(run: Run) -> None:
    started(run)
    for done in (1, 300, 600, 1200):
        building(run, done, elapsed_s=95.0 * done / 1200)
    building(run, 1200, elapsed_s=95.0)  # a repeated last report logs nothing more
    messages = list(RunEvent.objects.filter(run=run, kind__startswith="phase").values_list("kind", "message"))
    assert messages == [
        ("phase_started", f"{LABEL}: 1200 steps."),
        ("phase_finished", "Built tiny:addition in 95 s."),
    ]


def test_a_teacher_build_after_its_student_logs_each_model(run: Run) -> None:
    started(run)
    for subject in ("tiny:addition", "tiny:addition-teacher"):
        building(run, 1, 5, subject)
        building(run, 5, 5, subject)
    finished = RunEvent.objects.filter(run=run, kind="phase_finished").values_list("message", flat=True)
    assert [m.split(" in ")[0] for m in finished] == ["Built tiny:addition", "Built tiny:addition-teacher"]


def test_the_first_step_clears_the_phase(run: Run) -> None:
    building(started(run), 1200, total=1200)
    run_record_step(run_id=run.pk, step=1, max_steps=20, metrics={"rollout/reward_mean": 0.5}, rollouts=[])
    run.refresh_from_db()
    assert (run.phase, run.phase_progress, run.step) == ("", {}, 1)


def test_a_failed_run_forgets_its_phase_and_ignores_late_reports(run: Run) -> None:
    building(started(run), 30)
    run_fail(run_id=run.pk, message="out of memory", traceback_text="")
    building(run, 40)
    run.refresh_from_db()
    assert (run.status, run.phase, run.phase_progress) == ("failed", "", {})


def test_the_run_api_shows_the_phase(run: Run, api: Any) -> None:
    building(started(run), 120)
    client: APIClient = api(run.created_by)
    body = client.get(f"/api/runs/{run.pk}/").json()
    assert body["phase"]["label"] == LABEL and (body["phase"]["done"], body["phase"]["total"]) == (120, 1200)
    assert client.get("/api/runs/").json()["results"][0]["phase"]["done"] == 120


def test_the_time_left_counts_down_from_the_last_report(run: Run) -> None:
    building(started(run), 120)  # 90 s left at the report
    run.refresh_from_db()
    later = timezone.now() + timedelta(seconds=30)
    view = phase_view(run, now=later)
    assert view is not None
    assert (view["label"], view["done"], view["total"], view["percent"]) == (LABEL, 120, 1200, 10.0)
    assert view["time_left"] in ("about 1m 0s left", "about 59s left")
