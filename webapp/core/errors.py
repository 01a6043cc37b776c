"""The few error types services raise on purpose; the API turns each into one response shape.

Services also raise Django's ``Http404`` (an outsider asks for a project object) and
``PermissionDenied`` (a member whose role is too low); see webapp/teams/permissions.py.
"""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    """A request the service refuses, with a message for the user. Answered as 400."""

    status_code = 400

    def __init__(self, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra or {}


class InvalidInput(ApplicationError):
    """Some fields are wrong. ``fields`` maps a dotted path (``config.training.learning_rate``) to messages."""

    def __init__(self, message: str, fields: dict[str, list[str]]) -> None:
        super().__init__(message, {"fields": fields})
        self.fields = fields


class Conflict(ApplicationError):
    """The object is not in a state that allows this (cancel a finished run). Answered as 409."""

    status_code = 409
