"""Who is calling: the project's own API tokens, sent the way the Tinker SDK sends its key.

The SDK puts its key in ``X-API-Key`` and refuses, before sending anything, a key that does not start with
``tml-``. So a Tinker script uses ``tml-`` followed by an RLVR Studio API token (``rlvr login`` or the tokens
page): ``TINKER_API_KEY=tml-rlvr_...``. The prefix is dropped here and the token checked like every other
(hashed, expiring, revocable: webapp/accounts/tokens.py). ``Authorization: Token <token>`` works too.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest

from webapp.accounts.tokens import GET_A_NEW_ONE, TokenRefused, check_token
from webapp.core.errors import ApplicationError

SDK_KEY_PREFIX = "tml-"
MAX_KEY_CHARS = 200


class NotAuthenticated(ApplicationError):
    status_code = 401


def caller(request: HttpRequest) -> User:
    """The user behind the request's key; ``NotAuthenticated`` saying how to send one otherwise."""
    key = request.headers.get("X-API-Key", "").strip()
    if not key:
        words = request.headers.get("Authorization", "").split()
        key = words[1] if len(words) == 2 and words[0].lower() == "token" else ""
    if not key:
        raise NotAuthenticated(
            "No API key: set TINKER_API_KEY (or api_key=) to 'tml-' followed by an RLVR Studio API token "
            "(create one with `rlvr login` or on the API tokens page)."
        )
    if len(key) > MAX_KEY_CHARS:
        raise NotAuthenticated(f"The API key is too long to be a token; {GET_A_NEW_ONE}.")
    token = key.removeprefix(SDK_KEY_PREFIX)
    try:
        record = check_token(token)
    except TokenRefused as refused:
        raise NotAuthenticated(
            f"{refused} (the Tinker API key is 'tml-' followed by an RLVR Studio API token)"
        ) from None
    return record.user
