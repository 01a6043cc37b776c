"""Encryption of project secrets (a judge endpoint's API key) at rest, and the rules for their names and values.

Values are Fernet tokens (AES-128-CBC with HMAC-SHA256, from ``cryptography``). The key is, in order:

1. ``RLVR_SECRETS_KEY``: a Fernet key (32 random bytes, url-safe base64), made with
   ``python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"``;
2. otherwise one derived from Django's ``SECRET_KEY`` (``RLVR_SECRET_KEY``) with HKDF-SHA256. Rotating
   ``RLVR_SECRET_KEY`` then makes every stored secret unreadable: the project's Secrets page lists the ones that
   cannot be decrypted and asks for them to be set again. Setting ``RLVR_SECRETS_KEY`` keeps secrets apart
   from the session-signing key.

A value never leaves this module in a ``repr``, an error message or a log line; the API and the pages take it
and answer only with names and dates.
"""

from __future__ import annotations

import base64
import re

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

from trainer.verifiers.secrets import MAX_SECRET_VALUE_CHARS, secret_name_problem
from webapp.core.errors import InvalidInput

NAME_RULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
MAX_VALUE_BYTES = 8192  # 8 KB: an API key is far shorter; anything longer is a paste gone wrong
_HKDF_SALT = b"rlvr-studio project secrets"
_HKDF_INFO = b"fernet key v1"


class SecretUnreadable(Exception):
    """A stored token that the current key cannot decrypt (the key changed since it was written)."""


def fernet() -> Fernet:
    """The Fernet of this deployment's key (``RLVR_SECRETS_KEY``, else derived from ``SECRET_KEY``)."""
    configured = str(getattr(settings, "RLVR_SECRETS_KEY", "") or "")
    if configured:
        return Fernet(configured.encode("ascii"))  # settings.py already checked it is a Fernet key
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=_HKDF_SALT, info=_HKDF_INFO).derive(
        settings.SECRET_KEY.encode("utf-8")
    )
    return Fernet(base64.urlsafe_b64encode(derived))


def encrypt(value: str) -> bytes:
    return fernet().encrypt(value.encode("utf-8"))


def decrypt(token: bytes | memoryview) -> str:
    """The value of a stored token; SecretUnreadable when the key changed since it was stored."""
    try:
        return fernet().decrypt(bytes(token)).decode("utf-8")
    except (InvalidToken, UnicodeDecodeError):
        raise SecretUnreadable(
            "it was stored under another key (RLVR_SECRETS_KEY or RLVR_SECRET_KEY changed): set it again"
        ) from None


def readable(token: bytes | memoryview) -> bool:
    try:
        decrypt(token)
    except SecretUnreadable:
        return False
    return True


def check_name(name: str, *, field: str = "name") -> str:
    """``name`` if it may name a secret; InvalidInput otherwise (never repeating a name that looks like a key)."""
    problem = (
        None
        if NAME_RULE.fullmatch(name)
        else ("must be 1-64 letters, digits or '_', not starting with a digit (e.g. OPENAI_KEY)")
    )
    problem = problem or secret_name_problem(name)  # the worker's own rule (trainer/verifiers/secrets.py)
    if problem:
        message = f"A secret's name {problem}."
        raise InvalidInput(message, {field: [message]})
    return name


def check_value(value: str, *, field: str = "value") -> str:
    """The value without surrounding whitespace (a pasted key's newline); InvalidInput, not quoting it, if empty
    or too long."""
    value = value.strip()
    limit_chars = min(MAX_SECRET_VALUE_CHARS, MAX_VALUE_BYTES)
    if not value:
        message = "A secret needs a value: paste the API key."
    elif len(value.encode("utf-8")) > MAX_VALUE_BYTES or len(value) > limit_chars:
        message = (
            f"A secret's value may have at most {limit_chars} characters ({MAX_VALUE_BYTES // 1024} KB)."
        )
    else:
        return value
    raise InvalidInput(message, {field: [message]})
