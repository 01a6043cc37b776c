"""The test bench's verdicts run out of the request thread under a hard budget, and user patterns are RE2.

Audit finding: ``regex_format`` with ``(a+)+$`` on 27 ``a``s and a ``b`` held a (viewer's) bench request for
12 s with Python's ``re``. The slow verdict used for the budget is real: ``a.*z|a`` as an extraction pattern
takes the *last* of 100,000 matches on 100,000 ``a``s, each reading to the end (about 8 s even in RE2).
The live-server version (daphne, other requests served meanwhile) is test_bench_live.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User
from pytest_django.fixtures import Settings as SettingsWrapper
from rest_framework.test import APIClient

from webapp.teams.models import Project
from webapp.verification.models import TestStatus as CaseStatus
from webapp.verification.models import VerifierVersion
from webapp.verification.services import verifier_definition_create

Api = Callable[[User | None], APIClient]
Join = Callable[[User, str | None], User]
SLOW = {"extract": "regex", "pattern": "a.*z|a"}
SLOW_TEXT = "a" * 100_000


def _version(project: Project, alice: User, verifier: str, params: dict[str, Any]) -> VerifierVersion:
    definition = verifier_definition_create(
        project=project, actor=alice, name="v", verifier=verifier, params=params
    )
    return definition.versions.get(number=1)


def test_a_viewer_gets_the_audit_pattern_verdict_at_once(
    api: Api, alice: User, bob: User, join: Join, project: Project
) -> None:
    version = _version(project, alice, "regex_format", {"pattern": r"(a+)+$"})
    join(bob, "viewer")
    started = time.monotonic()
    resp = api(bob).post(
        f"/api/verifier-versions/{version.pk}/test/", {"completion": "a" * 27 + "b"}, format="json"
    )
    assert time.monotonic() - started < 3  # worker start-up included; Python's re took ~12 s
    assert resp.status_code == 200, resp.json()
    assert resp.json()["correct"] is False and resp.json()["error"] is None


def test_a_lookahead_pattern_is_refused_in_the_one_error_shape(
    api: Api, alice: User, project: Project
) -> None:
    resp = api(alice).post(
        f"/api/projects/{project.pk}/verifiers/",
        {"name": "fmt", "verifier": "regex_format", "params": {"pattern": r"<answer>(?=\d)"}},
        format="json",
    )
    assert resp.status_code == 400
    body = resp.json()
    assert set(body) == {"message", "extra"}
    assert (
        "lookahead (?=...) is not supported: patterns run in linear time (RE2 syntax); rewrite without it"
        in (body["message"])
    )


def test_a_slow_verdict_comes_back_as_a_timeout_verdict_within_its_budget(
    api: Api, alice: User, project: Project, settings: SettingsWrapper
) -> None:
    settings.RLVR_BENCH_BUDGET_S = 1
    version = _version(project, alice, "exact", SLOW)
    api(alice).post(f"/api/verifier-versions/{version.pk}/test/", {"completion": "a"}, format="json")  # warm
    started = time.monotonic()
    resp = api(alice).post(
        f"/api/verifier-versions/{version.pk}/test/",
        {"completion": SLOW_TEXT, "reference": "a"},
        format="json",
    )
    assert time.monotonic() - started < 4
    verdict = resp.json()
    assert resp.status_code == 200 and verdict["correct"] is False
    assert verdict["error"].startswith("verifier exceeded its 1 s budget and was stopped")
    assert verdict["reason"] == verdict["error"]


def test_saved_test_cases_of_a_slow_verifier_fail_within_their_budget(
    api: Api, alice: User, project: Project, settings: SettingsWrapper
) -> None:
    settings.RLVR_BENCH_BUDGET_S = 1
    version = _version(project, alice, "exact", SLOW)
    case = {"completion": SLOW_TEXT, "reference": "a", "expected_correct": True, "name": "long"}
    started = time.monotonic()
    resp = api(alice).post(f"/api/verifiers/{version.definition_id}/cases/", case, format="json")
    assert time.monotonic() - started < 6
    assert resp.status_code == 201, resp.json()
    version.refresh_from_db()
    assert version.test_status == CaseStatus.FAILING
    assert "budget" in version.test_results[0]["reason"]
