"""Shared pieces of the pairwise tests: a pairs file on disk and a task judged by dana and erin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from webapp.annotation.models import AnnotationTask, Assignment


def write_pairs(path: Path, rows: list[dict[str, Any]] | list[str]) -> Path:
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8"
    )
    return path


def judge(task: AnnotationTask, people: dict[str, User], choices: dict[int, dict[str, str]]) -> None:
    """Submit ``choices`` (position -> username -> choice) through the service."""
    from webapp.annotation.services_pairwise import judgement_submit

    for item in task.items.order_by("position"):
        for name, choice in choices.get(item.position, {}).items():
            work = Assignment.objects.get(item=item, annotator=people[name])
            judgement_submit(
                assignment=work, actor=people[name], choice=choice, reason=f"{name} on {item.position}"
            )
