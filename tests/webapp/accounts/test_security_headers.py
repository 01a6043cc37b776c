"""Security headers on pages: a Content-Security-Policy the pages' own scripts live within, and the rest."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from webapp.teams.models import Project

REPO = Path(__file__).resolve().parents[3]
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>", re.I)
INLINE_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.I)


def directives(policy: str) -> dict[str, str]:
    return {
        part.split()[0]: part.partition(" ")[2] for part in (p.strip() for p in policy.split(";")) if part
    }


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/", "/api/docs/"])
def test_pages_carry_the_content_security_policy(client: Client, path: str, db: None) -> None:
    policy = directives(client.get(path)["Content-Security-Policy"])
    assert policy["script-src"] == "'self'"
    assert policy["default-src"] == "'self'"
    assert policy["frame-ancestors"] == "'none'"
    assert policy["object-src"] == "'none'"
    assert policy["connect-src"] == "'self' ws: wss:"
    assert (policy["base-uri"], policy["form-action"]) == ("'self'", "'self'")


def test_a_signed_in_page_carries_the_policy_and_the_other_headers(
    client: Client, project: Project, alice: User
) -> None:
    client.force_login(alice)
    response = client.get(f"/projects/{project.pk}/")
    assert response.status_code == 200
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"


def test_the_session_cookie_is_http_only(client: Client, alice: User) -> None:
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice-123"})
    assert response.cookies["sessionid"]["httponly"]


def test_no_template_has_an_inline_script_or_event_handler() -> None:
    offenders = []
    for template in sorted((REPO / "templates").rglob("*.html")):
        text = template.read_text(encoding="utf-8")
        offenders += [
            f"{template.relative_to(REPO)}: {m.group(0)[:80]}" for m in INLINE_SCRIPT.finditer(text)
        ]
        offenders += [
            f"{template.relative_to(REPO)}: {m.group(0)[:80]}" for m in INLINE_HANDLER.finditer(text)
        ]
    assert not offenders, "script-src 'self' blocks these; move them to static/js/:\n" + "\n".join(offenders)


def cookie_settings(tmp_path: Path, **env: str) -> str:
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTEST_VERSION", "RLVR_HTTPS", "RLVR_TRUSTED_PROXIES")
    }
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
        env={**base, "DJANGO_SETTINGS_MODULE": "webapp.settings", "RLVR_DATA_DIR": str(tmp_path), "RLVR_DEBUG": "1", **env},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_rlvr_https_makes_the_cookies_secure_and_trusts_the_proto_header_only_behind_a_proxy(
    tmp_path: Path,
) -> None:
    assert cookie_settings(tmp_path) == "False False None"
    assert cookie_settings(tmp_path, RLVR_HTTPS="1") == "True True None"
    assert cookie_settings(tmp_path, RLVR_HTTPS="1", RLVR_TRUSTED_PROXIES="1") == (
        "True True ('HTTP_X_FORWARDED_PROTO', 'https')"
    )
