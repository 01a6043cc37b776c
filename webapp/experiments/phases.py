"""A run's phase (what it does before its first step, e.g. building the built-in model) as people read it.

The worker stores the latest ``trainer.sinks.PhaseReport`` on the Run (``phase``, ``phase_progress``,
services.run_record_phase). The run page, the lists of runs and ``rlvr stack``'s progress line all
show it through these helpers, so they agree on the words and on the time left; the words are the trainer's
(``trainer.sinks.time_left_text``), which ``rlvr init-model`` prints too.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from trainer.sinks import format_duration, time_left_text
from webapp.experiments.models import Run

__all__ = [
    "format_duration",
    "phase_done_message",
    "phase_line",
    "phase_time_left_s",
    "phase_view",
    "time_left_text",
]

PHASE_DONE_TEMPLATES = {
    "building_model": "Built {subject} in {seconds} s."
}  # the run event that ends a phase


def phase_time_left_s(progress: dict[str, Any], now: datetime | None = None) -> float | None:
    """Seconds left at the last report's rate, less the time since that report (a page opened between
    two reports counts down rather than showing a stale figure); None when the rate is not known yet."""
    eta = progress.get("eta_s")
    if eta is None:
        return None
    updated = progress.get("updated_at")
    since = 0.0
    if updated:
        since = max(0.0, ((now or timezone.now()) - datetime.fromisoformat(updated)).total_seconds())
    return max(0.0, float(eta) - since)


def phase_view(run: Run, now: datetime | None = None) -> dict[str, Any] | None:
    """What the run page renders for the phase (None without one): label, done, total, percent, and the
    time left as text ("about 4m 10s left", or "" before the rate is known)."""
    if not run.phase:
        return None
    p = run.phase_progress
    done, total = int(p.get("done", 0)), int(p.get("total", 0))
    left = phase_time_left_s(p, now)
    return {
        "name": run.phase,
        "label": p.get("label", run.phase_text),
        "done": done,
        "total": total,
        "percent": round(100 * done / total, 1) if total else 0.0,
        "time_left": time_left_text(left, finished=bool(total) and done >= total),
    }


def phase_line(run: Run) -> str:
    """One line for a terminal: "Building the built-in model tiny:addition (...) 120/1200, about 3m 2s left"."""
    view = phase_view(run)
    if view is None:
        return ""
    return f"{view['label']} {view['done']}/{view['total']}, {view['time_left']}"


def phase_done_message(name: str, subject: str, label: str, elapsed_s: float) -> str:
    template = PHASE_DONE_TEMPLATES.get(name, "{label}: done in {seconds} s.")
    return template.format(subject=subject or name, label=label, seconds=round(elapsed_s))
