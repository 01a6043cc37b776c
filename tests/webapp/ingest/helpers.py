"""Batches as the ingest client sends them, for the server-side tests."""

from __future__ import annotations

import gzip
import json
from typing import Any

from rest_framework.test import APIClient

from webapp.accounts.tokens import issue_token


def token_client(user: Any) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {issue_token(user).token}")
    return client


def rollout(
    step: int, group: int = 0, sample_index: int = 0, n_tokens: int = 3, **overrides: Any
) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "step": step,
        "group": group,
        "sample_index": sample_index,
        "prompt_id": f"q{group}",
        "prompt": f"What is {group}+{sample_index}?",
        "completion": " 4" * n_tokens,
        "finish_reason": "eos",
        "reward": 1.0,
        "rewards": {"accuracy": 1.0, "format": None},
        "correct": None,
        "advantage": 0.5,
        "token_ids": list(range(10, 10 + n_tokens)),
        "tokens": [" 4"] * n_tokens,
        "token_values": {
            "logprob": [-0.1] * n_tokens,
            "advantage": [0.5] * n_tokens,
            "loss_mask": [1.0] * n_tokens,
        },
    }
    fields.update(overrides)
    return fields


def batch(project: str = "lab", key: str = "run-a", **items: Any) -> dict[str, Any]:
    run = {
        "project": project,
        "key": key,
        "name": "trl-grpo",
        "config": {"learning_rate": 1e-6},
        "source": "trl",
        "source_info": {"library": "trl", "version": "1.16.0", "host": "gpu-3"},
        "max_steps": 10,
    }
    run.update(items.pop("run", {}))
    return {"version": 1, "run": run, **items}


def post(client: APIClient, body: dict[str, Any], *, gzipped: bool = False) -> Any:
    data = json.dumps(body).encode()
    if gzipped:
        return client.generic(
            "POST",
            "/api/ingest/batches/",
            gzip.compress(data),
            content_type="application/json",
            HTTP_CONTENT_ENCODING="gzip",
        )
    return client.generic("POST", "/api/ingest/batches/", data, content_type="application/json")
