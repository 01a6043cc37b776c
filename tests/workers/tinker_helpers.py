"""What the Tinker SDK tests share: the real web server with its idle and session-gone settings, the SDK's
clients (closed after the test, so no heartbeat thread outlives it), and a supervised datum."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.workers.helpers import serve_daphne, worker_env


@contextmanager
def tinker_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **settings_s: float) -> Iterator[str]:
    """daphne with ``RLVR_TINKER_<NAME>`` set from ``settings_s`` (e.g. idle_s=5) in this process's environment,
    which the worker processes copy; yields the server's root address."""
    from django.conf import settings

    for name, value in settings_s.items():
        monkeypatch.setenv(f"RLVR_TINKER_{name.upper()}", str(value))
    env = {**worker_env(tmp_path / "web-data", list(settings.RLVR_MODEL_ROOTS)), "RLVR_ENQUEUE": "1"}
    with serve_daphne(env, tmp_path / "daphne.log") as url:
        yield url


@contextmanager
def tinker_clients(base_url: str) -> Iterator[Callable[..., Any]]:
    """``open(owner, project)``: the official SDK's ServiceClient for ``owner`` (a fresh API token) in
    ``project``; every client opened is closed on exit, ending its sessions and heartbeat threads."""
    import tinker

    from webapp.accounts.tokens import issue_token

    with ExitStack() as opened:

        def open_client(owner: Any, project: Any) -> Any:
            client = tinker.ServiceClient(
                base_url=base_url, api_key="tml-" + issue_token(owner).token, project_id=project.slug
            )
            return opened.enter_context(client)

        yield open_client


def sft_datum(tokenizer: Any, prompt: str, answer: str = "") -> Any:
    """A cross_entropy datum for ``prompt + answer`` and EOS, weighted on the answer (on every token when
    the answer is empty)."""
    from tinker import types

    prompt_ids = tokenizer.encode(prompt)
    ids = prompt_ids + (tokenizer.encode(answer) if answer else []) + [tokenizer.eos_token_id]
    start = len(prompt_ids) - 1 if answer else 0
    weights = [0.0] * start + [1.0] * (len(ids) - 1 - start)
    return types.Datum(
        model_input=types.ModelInput.from_ints(ids[:-1]),
        loss_fn_inputs={"target_tokens": ids[1:], "weights": weights},  # type: ignore[dict-item]  # lists: the SDK converts
    )
