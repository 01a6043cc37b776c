"""Each Tinker call's body read, bounded and checked into the payload its worker runs.

The bounds and the loss/sampling checks are the trainer's own (trainer/training_api/limits.py, torch-free), run
here before anything is queued and again by the worker. What the SDK can ask for but this server does not
compute (top-k logprobs, image chunks, custom losses, another optimizer) is refused with a message naming it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest

from trainer.bounds import UnsafeInput, strict_json_loads
from trainer.training_api.limits import (
    ApiInputError,
    validate_adam,
    validate_forward_request,
    validate_sample_request,
)
from trainer.training_api.types import AdamParams, ApiDatum, ApiSampling
from webapp.core.errors import InvalidInput
from webapp.core.limits import RequestTooLarge, body_limit_bytes
from webapp.training_api.services import api_limits, input_error
from webapp.training_api.wire import ForwardBackwardRequest

MAX_NAME_CHARS = 200
ADAM_FIELDS = ("learning_rate", "beta1", "beta2", "eps", "weight_decay", "grad_clip_norm")


def read_json(request: HttpRequest) -> dict[str, Any]:
    """A call's JSON body as a dict, bounded by the server's body limit; refused in the error shape otherwise."""
    try:
        raw = request.body
    except RequestDataTooBig:
        raise RequestTooLarge(
            f"The body is over the server's limit of {body_limit_bytes() // 1024} KB (RLVR_MAX_BODY_KB)."
        ) from None
    if not raw:
        return {}
    try:
        data = strict_json_loads(raw.decode("utf-8"))
    except (UnsafeInput, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise refuse("body", f"is not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise refuse("body", "must be a JSON object")
    return data


def refuse(field: str, message: str) -> InvalidInput:
    return InvalidInput(f"{field}: {message}", {field: [message]})


def text(
    body: Mapping[str, Any], name: str, *, required: bool = True, limit: int = MAX_NAME_CHARS
) -> str | None:
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value or len(value) > limit or "\x00" in value:
        raise refuse(name, f"must be a non-empty string of at most {limit} characters")
    return value


def integer(body: Mapping[str, Any], name: str, *, default: int | None = None) -> int | None:
    value = body.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise refuse(name, f"must be a whole number from 0 to 2**63 - 1, got {value!r}")
    return value


def forward_backward_payload(request: ForwardBackwardRequest) -> dict[str, Any]:
    """A decoded forward_backward (or forward, ``forward_only``) as its queued payload."""
    data = []
    for datum in request.data:
        inputs: dict[str, list[float] | list[int]] = {}
        for name, tensor in datum.inputs.items():
            if len(tensor.shape) != 1:
                raise refuse(
                    f"loss_fn_inputs.{name}",
                    f"has shape {tensor.shape}: every loss input is one value per token",
                )
            inputs[name] = tensor.data
        data.append(ApiDatum(input_tokens=datum.tokens, inputs=dict(inputs)))
    try:
        config = validate_forward_request(data, request.loss_fn, request.loss_fn_config, api_limits())
    except ApiInputError as err:
        raise input_error(err) from None
    return {
        "loss_fn": request.loss_fn,
        "loss_fn_config": config,
        "data": [{"tokens": d.input_tokens, "inputs": d.inputs} for d in data],
    }


def optim_step_payload(body: Mapping[str, Any]) -> dict[str, Any]:
    params = body.get("adam_params")
    if params is None and isinstance(body.get("optimizer_params"), Mapping):
        kind = body["optimizer_params"].get("type")
        raise refuse(
            "optimizer_params", f"the {kind!r} optimizer is not supported here: use AdamParams (AdamW)"
        )
    if not isinstance(params, Mapping):
        raise refuse("adam_params", "is required: optim_step(types.AdamParams(learning_rate=...))")
    unknown = sorted(set(params) - set(ADAM_FIELDS) - {"type"})
    if unknown:
        raise refuse("adam_params", f"has fields this server does not know: {', '.join(unknown)}")
    values = {}
    for name in ADAM_FIELDS:
        if name in params:
            value = params[name]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise refuse(f"adam_params.{name}", f"must be a number, got {value!r}")
            values[name] = float(value)
    adam = AdamParams(**values)
    try:
        validate_adam(adam)
    except ApiInputError as err:
        raise input_error(err) from None
    return {"adam": values}


def _prompt_tokens(prompt: Any) -> list[int]:
    chunks = prompt.get("chunks") if isinstance(prompt, Mapping) else None
    if not isinstance(chunks, list):
        raise refuse("prompt", "must be a ModelInput with chunks")
    limit = api_limits().max_prompt_tokens
    tokens: list[int] = []
    for i, chunk in enumerate(chunks[: limit + 1]):
        if not isinstance(chunk, Mapping) or chunk.get("type", "encoded_text") != "encoded_text":
            kind = chunk.get("type") if isinstance(chunk, Mapping) else type(chunk).__name__
            raise refuse(
                f"prompt.chunks.{i}", f"is a {kind!r} chunk: this server samples from text tokens only"
            )
        values = chunk.get("tokens")
        if not isinstance(values, list) or len(tokens) + len(values) > limit:
            raise refuse("prompt", f"must hold token lists of at most {limit} tokens in all")
        if any(isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < 2**31 for t in values):
            raise refuse(f"prompt.chunks.{i}.tokens", "must be token ids (whole numbers from 0)")
        tokens.extend(values)
    return tokens


UNSUPPORTED_SAMPLE_FIELDS = {
    "topk_prompt_logprobs": "top-k prompt logprobs",
    "topk_sample_logprobs": "top-k sampled-token logprobs",
    "prompt_alt_tokens_k": "alternative prompt tokens",
    "target_prompt_logprobs": "target prompt logprobs",
    "prompt_logprobs_last_n": "prompt logprobs of the last n tokens",
    "record_stability_info": "stability info (StableReinforce)",
}


def sample_payload(body: Mapping[str, Any]) -> dict[str, Any]:
    for name, what in UNSUPPORTED_SAMPLE_FIELDS.items():
        if body.get(name) not in (None, 0, False):
            raise refuse(name, f"{what} is not supported by this server; leave it unset")
    params = body.get("sampling_params")
    if not isinstance(params, Mapping):
        raise refuse("sampling_params", "is required: types.SamplingParams(max_tokens=...)")
    stop = params.get("stop")
    sampling = ApiSampling(
        max_tokens=params.get("max_tokens"),
        temperature=params.get("temperature", 1.0),
        top_p=params.get("top_p", 1.0),
        top_k=params.get("top_k", -1),
        stop=[stop] if isinstance(stop, str) else stop,
        seed=params.get("seed"),
    )
    prompt = _prompt_tokens(body.get("prompt"))
    num_samples = body.get("num_samples", 1)
    try:
        max_tokens = validate_sample_request(prompt, num_samples, sampling, api_limits())
    except ApiInputError as err:
        raise input_error(err) from None
    return {
        "prompt": prompt,
        "num_samples": num_samples,
        "prompt_logprobs": bool(body.get("prompt_logprobs")),
        "sampling": {
            "max_tokens": max_tokens,
            "temperature": float(sampling.temperature),
            "top_p": float(sampling.top_p),
            "top_k": sampling.top_k,
            "stop": sampling.stop,
            "seed": sampling.seed,
        },
    }
