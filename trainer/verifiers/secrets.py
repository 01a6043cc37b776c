"""Secrets a reward source needs (a judge endpoint's API key), looked up by NAME, never written in a config.

A config names a secret (``api_key_secret: openai``); the value comes from, in order:

1. this process's registry, which the worker fills from the project's encrypted secrets before it builds the
   verifiers (``provide_secrets``);
2. the environment variable ``RLVR_SECRET_<NAME>`` (the name upper-cased, every character other than a letter
   or digit written ``_``: ``openai-judge`` -> ``RLVR_SECRET_OPENAI_JUDGE``), for ``rlvr train`` on one's own
   machine, and for a run's child rank processes, which a launcher passes them through ``secret_env`` (the
   environment only: never a config file, a checkpoint or a log).

Values are never logged, shown in an error or kept in a ``repr``: ``scrub`` removes every known value from a
text before it is stored. Torch-free and Django-free.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from trainer.errors import VerifierError

ENV_PREFIX = "RLVR_SECRET_"
MAX_SECRET_NAME_CHARS = 64
MAX_SECRET_VALUE_CHARS = 4096
SCRUBBED = "[secret]"

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
# Prefixes of provider API keys and tokens (OpenAI, Anthropic, Hugging Face, Groq, xAI, Google, GitHub, GitLab, ...)
_KEY_PREFIXES = (
    "sk-",
    "sk_",
    "hf_",
    "gsk_",
    "xai-",
    "AIza",
    "ghp_",
    "gho_",
    "github_pat_",
    "glpat-",
    "pk-",
    "rk-",
)
_lock = threading.Lock()
_registry: dict[str, str] = {}


def env_name(name: str) -> str:
    """The environment variable that may hold the secret ``name``.

    >>> env_name("openai-judge")
    'RLVR_SECRET_OPENAI_JUDGE'
    """
    return ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def looks_like_a_key(text: str) -> bool:
    """Whether ``text`` looks like a credential rather than a name (a provider key prefix, 'Bearer ...', or a
    long random-looking token: at least 20 characters with 3+ digits and both cases).

    >>> looks_like_a_key("openai"), looks_like_a_key("sk-proj-abc"), looks_like_a_key("q8Fz2LkP0xW7mRt4Yb9Vn")
    (False, True, True)
    """
    if text.startswith(_KEY_PREFIXES) or text.lower().startswith("bearer"):
        return True
    digits = sum(c.isdigit() for c in text)
    return (
        len(text) >= 20 and digits >= 3 and any(c.isupper() for c in text) and any(c.islower() for c in text)
    )


def secret_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a secret, or None. The message never repeats a value that looks like a key."""
    if looks_like_a_key(name):
        return (
            "looks like an API key, not the name of a secret: never put the key in a config; store it as a "
            "project secret (or set the environment variable RLVR_SECRET_<NAME>) and give its name here"
        )
    if not _NAME.fullmatch(name):
        return (
            f"must be 1-{MAX_SECRET_NAME_CHARS} letters, digits, '_', '-' or '.', starting with a letter "
            f"(the name of a project secret)"
        )
    return None


def provide_secrets(mapping: Mapping[str, str]) -> None:
    """Add ``{name: value}`` to this process's registry (the worker calls it before building verifiers)."""
    for name, value in mapping.items():
        problem = secret_name_problem(name)
        if problem:  # the name itself is not repeated: it may be a key pasted in the wrong place
            raise VerifierError(f"a secret name {problem}")
        if not isinstance(value, str) or not value or len(value) > MAX_SECRET_VALUE_CHARS:
            raise VerifierError(
                f"secret {name!r} must be a non-empty text of at most {MAX_SECRET_VALUE_CHARS} characters"
            )
    with _lock:
        _registry.update(mapping)


def forget_secrets() -> None:
    """Empty this process's registry (after a run, and between tests)."""
    with _lock:
        _registry.clear()


def secret(name: str) -> str:
    """The value of the secret ``name``: the registry, else ``RLVR_SECRET_<NAME>``, else a VerifierError
    saying how to set it."""
    with _lock:
        value = _registry.get(name)
    if value is None:
        value = os.environ.get(env_name(name)) or None
    if value is None:
        raise VerifierError(
            f"the secret {name!r} is not set: add it to the project's secrets (Project > Secrets), or, for "
            f"`rlvr train` on your own machine, set the environment variable {env_name(name)}"
        )
    return value


def secret_env(names: Iterable[str]) -> dict[str, str]:
    """``{RLVR_SECRET_<NAME>: value}`` for ``names``, for a launcher to pass to child processes through their
    environment only (raises VerifierError for a secret that is not set)."""
    return {env_name(name): secret(name) for name in names}


def config_secret_names(verifiers: Iterable[Any]) -> list[str]:
    """The secret names a config's reward sources use (each entry's ``params['api_key_secret']``), for a launcher:
    ``env.update(secret_env(config_secret_names(config.verifiers)))``."""
    names = [getattr(v, "params", {}).get("api_key_secret") for v in verifiers]
    return sorted({n for n in names if isinstance(n, str) and n})


def scrub(text: str, *values: str) -> str:
    """``text`` with every provided secret value and every one of ``values`` replaced by ``[secret]``."""
    with _lock:
        known = [*values, *_registry.values()]
    for value in sorted({v for v in known if v}, key=len, reverse=True):
        text = text.replace(value, SCRUBBED)
    return text
