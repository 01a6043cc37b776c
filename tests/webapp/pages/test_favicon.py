"""The browser's automatic /favicon.ico request is answered (a redirect to the static icon), and every
page links the icon."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.contrib.staticfiles import finders
from django.test import Client


def test_favicon_ico_redirects_to_the_static_svg(db: None) -> None:
    response = Client().get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/favicon.svg"
    found = finders.find("favicon.svg")
    assert found, "static/favicon.svg is missing"
    with open(found, encoding="utf-8") as icon:
        assert icon.read().lstrip().startswith("<svg")


def test_pages_link_the_icon(alice: User) -> None:
    client = Client()
    assert (
        '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">'
        in client.get("/accounts/login/").content.decode()
    )
    client.force_login(alice)
    assert 'rel="icon"' in client.get("/").content.decode()
