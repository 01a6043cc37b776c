"""Page tests: a Django test client signed in as a member of "lab" with a given role."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.test import Client

from webapp.teams.models import Project


@pytest.fixture
def browser_as(
    alice: User, bob: User, join: Callable[[User, str | None], User], project: Project
) -> Callable[[str | None], Client]:
    """``browser_as("owner")`` -> alice's client; another role -> bob with that role; ``"outsider"`` -> bob
    outside the project; None -> an anonymous client."""

    def make(role: str | None) -> Client:
        client = Client()
        if role is None:
            return client
        if role == "owner":
            client.force_login(alice)
            return client
        join(bob, None if role == "outsider" else role)
        client.force_login(bob)
        return client

    return make
