"""The bounds of every Tinker-compatible API request, and the checks that enforce them.

Torch-free, so the web process refuses a bad request before it reaches the worker; the session runs the same
checks again (a worker never trusts its queue) plus the value checks that need the model (token ids inside the
vocabulary). Every refusal is an ``ApiInputError`` whose ``field`` is a dotted path into the request and whose
message says what was wrong, the limit, and how to fix it.

The loss table follows Tinker's documented losses ("Loss Functions", tinker-docs.thinkingmachines.ai): their
inputs and their ``loss_fn_config`` keys with Tinker's defaults (PPO's 0.8 / 1.2 ratio thresholds, CISPO's
0 / 4, DRO's beta 0.05).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from trainer.errors import RLVRError
from trainer.training_api.types import AdamParams, ApiDatum, ApiSampling

RL_INPUTS = ("target_tokens", "logprobs", "advantages")
LOSS_INPUTS: dict[str, tuple[str, ...]] = {
    "cross_entropy": ("target_tokens", "weights"),
    "importance_sampling": RL_INPUTS,
    "ppo": RL_INPUTS,
    "cispo": RL_INPUTS,
    "dro": RL_INPUTS,
}
SUPPORTED_LOSSES: tuple[str, ...] = tuple(LOSS_INPUTS)
# Names the Tinker SDK knows that this server does not compute (a custom loss runs client-side in the SDK and
# reaches the server as cross_entropy with weights = -dL/dlogp, which works).
KNOWN_UNSUPPORTED = ("gspo", "stable_reinforce", "custom")
LOSS_CONFIG_DEFAULTS: dict[str, dict[str, float]] = {
    "cross_entropy": {},
    "importance_sampling": {},
    "ppo": {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2},
    "cispo": {"clip_low_threshold": 0.0, "clip_high_threshold": 4.0},
    "dro": {"beta": 0.05},
}
MAX_CLIP_THRESHOLD = 1e3
MAX_DRO_BETA = 1e4
MAX_STOP_ENTRIES = 16
MAX_STOP_STRING_CHARS = 256
MAX_SEED = 2**63 - 1


class ApiInputError(RLVRError):
    """A Tinker API request was refused; ``field`` is the dotted path of what was wrong (HTTP 400)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class ApiLimits:
    """The bounds of one server: request sizes, sampling lengths, the LoRA rank and the losses it computes.

    ``micro_batch_tokens`` is not a request bound: it caps the padded tokens of one forward pass, so the memory
    of a call is bounded however many datums it holds.
    """

    max_datums_per_call: int = 512
    max_tokens_per_datum: int = 4096
    max_tokens_per_call: int = 131_072
    max_num_samples: int = 128
    max_sample_tokens: int = 2048
    max_prompt_tokens: int = 8192
    max_lora_rank: int = 256
    micro_batch_tokens: int = 4096
    allowed_losses: tuple[str, ...] = SUPPORTED_LOSSES

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "allowed_losses" and (not isinstance(value, int) or value < 1):
                raise ValueError(f"ApiLimits.{f.name} must be a positive integer, got {value!r}")
        unknown = sorted(set(self.allowed_losses) - set(SUPPORTED_LOSSES))
        if unknown:
            raise ValueError(
                f"ApiLimits.allowed_losses names losses this server cannot compute: {unknown}; "
                f"choose among {list(SUPPORTED_LOSSES)}"
            )


def check_loss_fn(loss_fn: str, limits: ApiLimits) -> None:
    """Refuse a loss this server does not compute or does not allow, listing the ones it does."""
    allowed = ", ".join(limits.allowed_losses)
    if loss_fn in limits.allowed_losses:
        return
    if loss_fn in SUPPORTED_LOSSES:
        raise ApiInputError("loss_fn", f"{loss_fn!r} is turned off on this server; use one of: {allowed}")
    if loss_fn in KNOWN_UNSUPPORTED:
        raise ApiInputError(
            "loss_fn",
            f"{loss_fn!r} is not supported by this server; use one of: {allowed} (a custom loss works through "
            "the SDK's forward_backward_custom, which sends cross_entropy)",
        )
    raise ApiInputError("loss_fn", f"unknown loss {loss_fn!r}; use one of: {allowed}")


def _number(field: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ApiInputError(field, f"must be a finite number, got {value!r}")
    return float(value)


def resolve_loss_config(loss_fn: str, config: Mapping[str, object] | None) -> dict[str, float]:
    """The loss's config with Tinker's defaults filled in; unknown keys and out-of-range values refused."""
    defaults = LOSS_CONFIG_DEFAULTS[loss_fn]
    resolved = dict(defaults)
    for key, value in (config or {}).items():
        if key not in defaults:
            valid = ", ".join(defaults) or "none"
            raise ApiInputError(
                f"loss_fn_config.{key}", f"is not a setting of {loss_fn!r} (its settings: {valid}); remove it"
            )
        resolved[key] = _number(f"loss_fn_config.{key}", value)
    if "clip_low_threshold" in resolved:
        low, high = resolved["clip_low_threshold"], resolved["clip_high_threshold"]
        if not 0.0 <= low <= 1.0 <= high <= MAX_CLIP_THRESHOLD:
            raise ApiInputError(
                "loss_fn_config",
                f"clip thresholds must satisfy 0 <= clip_low_threshold <= 1 <= clip_high_threshold <= "
                f"{MAX_CLIP_THRESHOLD:g} (they bound the ratio p/q itself, e.g. 0.8 and 1.2), got {low:g} and {high:g}",
            )
    if "beta" in resolved and not 0.0 <= resolved["beta"] <= MAX_DRO_BETA:
        raise ApiInputError(
            "loss_fn_config.beta", f"must be in [0, {MAX_DRO_BETA:g}], got {resolved['beta']:g}"
        )
    return resolved


def _check_datum(i: int, datum: ApiDatum, required: tuple[str, ...], loss_fn: str, limits: ApiLimits) -> int:
    """Structure of one datum: its length within the limit, exactly the loss's inputs, each as long as the input."""
    where = f"data[{i}]"
    length = len(datum.input_tokens)
    if length == 0:
        raise ApiInputError(f"{where}.model_input", "is empty: give every datum at least one token")
    if length > limits.max_tokens_per_datum:
        raise ApiInputError(
            f"{where}.model_input",
            f"has {length} tokens, more than this server's limit of {limits.max_tokens_per_datum}; "
            "split or truncate the sequence",
        )
    missing = [k for k in required if k not in datum.inputs]
    extra = sorted(set(datum.inputs) - set(required))
    if missing:
        raise ApiInputError(
            f"{where}.loss_fn_inputs",
            f"lacks {missing} for {loss_fn!r}, which needs {list(required)}",
        )
    if extra:
        raise ApiInputError(
            f"{where}.loss_fn_inputs",
            f"holds {extra}, which {loss_fn!r} does not use (it takes {list(required)}); remove them",
        )
    for key in required:
        n = len(datum.inputs[key])
        if n != length:
            raise ApiInputError(
                f"{where}.loss_fn_inputs.{key}",
                f"has {n} entries but model_input has {length} tokens; every loss input is aligned with the "
                "input tokens (target t is predicted from input tokens 0..t)",
            )
    return length


def validate_forward_request(
    data: Sequence[ApiDatum], loss_fn: str, loss_fn_config: Mapping[str, object] | None, limits: ApiLimits
) -> dict[str, float]:
    """Check a forward / forward_backward request's structure and return the loss config with defaults.

    Values are checked by the session (token ids against the vocabulary, finite floats): the web process has no
    model to check them against.
    """
    check_loss_fn(loss_fn, limits)
    config = resolve_loss_config(loss_fn, loss_fn_config)
    if not data:
        raise ApiInputError("data", "is empty: give at least one datum")
    if len(data) > limits.max_datums_per_call:
        raise ApiInputError(
            "data",
            f"holds {len(data)} datums, more than this server's limit of {limits.max_datums_per_call} per call; "
            "split it into several forward_backward calls before one optim_step (gradients accumulate)",
        )
    required = LOSS_INPUTS[loss_fn]
    total = sum(_check_datum(i, d, required, loss_fn, limits) for i, d in enumerate(data))
    if total > limits.max_tokens_per_call:
        raise ApiInputError(
            "data",
            f"holds {total} tokens in all, more than this server's limit of {limits.max_tokens_per_call} per "
            "call; split it into several forward_backward calls before one optim_step",
        )
    return config


def validate_sample_request(
    prompt: Sequence[int], num_samples: int, params: ApiSampling, limits: ApiLimits
) -> int:
    """Check a sample request; returns the resolved ``max_tokens``."""
    if not prompt:
        raise ApiInputError("prompt", "is empty: give at least one prompt token")
    if len(prompt) > limits.max_prompt_tokens:
        raise ApiInputError(
            "prompt", f"has {len(prompt)} tokens, more than this server's limit of {limits.max_prompt_tokens}"
        )
    if (
        isinstance(num_samples, bool)
        or not isinstance(num_samples, int)
        or not 1 <= num_samples <= limits.max_num_samples
    ):
        raise ApiInputError(
            "num_samples", f"must be an integer from 1 to {limits.max_num_samples}, got {num_samples!r}"
        )
    max_tokens = limits.max_sample_tokens if params.max_tokens is None else params.max_tokens
    if (
        isinstance(max_tokens, bool)
        or not isinstance(max_tokens, int)
        or not 1 <= max_tokens <= limits.max_sample_tokens
    ):
        raise ApiInputError(
            "sampling_params.max_tokens",
            f"must be an integer from 1 to {limits.max_sample_tokens}, got {max_tokens!r}",
        )
    temperature = _number("sampling_params.temperature", params.temperature)
    if not 0.0 < temperature <= 100.0:
        raise ApiInputError(
            "sampling_params.temperature",
            f"must be in (0, 100], got {temperature:g}; for near-greedy sampling use a small value such as 0.01",
        )
    if not 0.0 < _number("sampling_params.top_p", params.top_p) <= 1.0:
        raise ApiInputError("sampling_params.top_p", f"must be in (0, 1], got {params.top_p!r}")
    if (
        isinstance(params.top_k, bool)
        or not isinstance(params.top_k, int)
        or (params.top_k < 1 and params.top_k != -1)
    ):
        raise ApiInputError(
            "sampling_params.top_k", f"must be -1 (no limit) or a positive integer, got {params.top_k!r}"
        )
    _check_stop(params.stop)
    if params.seed is not None and (
        isinstance(params.seed, bool) or not isinstance(params.seed, int) or not 0 <= params.seed <= MAX_SEED
    ):
        raise ApiInputError(
            "sampling_params.seed", f"must be an integer from 0 to 2**63 - 1, got {params.seed!r}"
        )
    return max_tokens


def _check_stop(stop: Sequence[str] | Sequence[int] | None) -> None:
    if stop is None:
        return
    if isinstance(stop, str):
        raise ApiInputError("sampling_params.stop", "give a list of strings or token ids, not a bare string")
    if len(stop) > MAX_STOP_ENTRIES:
        raise ApiInputError(
            "sampling_params.stop", f"has {len(stop)} entries, more than the limit of {MAX_STOP_ENTRIES}"
        )
    kinds = {type(s) for s in stop}
    if kinds and kinds not in ({str}, {int}):
        raise ApiInputError("sampling_params.stop", "must be all strings or all token ids, not a mix")
    for i, s in enumerate(stop):
        if isinstance(s, str) and not 1 <= len(s) <= MAX_STOP_STRING_CHARS:
            raise ApiInputError(
                f"sampling_params.stop[{i}]",
                f"must have 1 to {MAX_STOP_STRING_CHARS} characters, got {len(s)}",
            )
        if isinstance(s, int) and s < 0:
            raise ApiInputError(f"sampling_params.stop[{i}]", f"is a negative token id ({s})")


def validate_adam(params: AdamParams) -> None:
    """AdamW's hyperparameters within the ranges where the update is defined."""
    checks = {
        "learning_rate": (0.0, 10.0, True),
        "beta1": (0.0, 1.0, False),
        "beta2": (0.0, 1.0, False),
        "eps": (0.0, 1.0, True),
        "weight_decay": (0.0, 10.0, True),
        "grad_clip_norm": (0.0, 1e6, True),
    }
    for name, (low, high, high_inclusive) in checks.items():
        value = _number(f"adam_params.{name}", getattr(params, name))
        if value < low or value > high or (not high_inclusive and value == high):
            bracket = "]" if high_inclusive else ")"
            raise ApiInputError(
                f"adam_params.{name}", f"must be in [{low:g}, {high:g}{bracket}, got {value:g}"
            )


def validate_create(base_model: str, lora_rank: int | None, seed: int, limits: ApiLimits) -> None:
    """A model creation request: a base model named, a LoRA rank within the limit, a seed in range."""
    if not isinstance(base_model, str) or not base_model.strip():
        raise ApiInputError(
            "base_model", "is empty: name a local model directory or a built-in 'tiny:<name>'"
        )
    if lora_rank is not None and (
        isinstance(lora_rank, bool)
        or not isinstance(lora_rank, int)
        or not 1 <= lora_rank <= limits.max_lora_rank
    ):
        raise ApiInputError(
            "lora_config.rank",
            f"must be an integer from 1 to {limits.max_lora_rank} (or no LoRA config for full fine-tuning), "
            f"got {lora_rank!r}",
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise ApiInputError("seed", f"must be an integer from 0 to 2**63 - 1, got {seed!r}")
