"""System checks (``manage.py check``, ``migrate``, ``runserver``) for settings that cannot fail at import."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage, Error, register


@register()
def secret_key_is_set(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    # Not settings.SECRET_KEY itself: reading it raises when it is empty.
    if not settings.RLVR_SECRET_KEY_MISSING:
        return []
    return [Error(f"RLVR_SECRET_KEY is not set: {settings.SECRET_KEY_HELP}", id="rlvr.E001")]
