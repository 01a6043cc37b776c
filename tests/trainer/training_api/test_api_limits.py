"""The request checks the web process and the session share: each bad input named, with its limit and the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from trainer.training_api.limits import (
    ApiInputError,
    ApiLimits,
    validate_adam,
    validate_create,
    validate_forward_request,
    validate_sample_request,
)
from trainer.training_api.types import AdamParams, ApiDatum, ApiSampling

LIMITS = ApiLimits(
    max_datums_per_call=3,
    max_tokens_per_datum=6,
    max_tokens_per_call=10,
    max_num_samples=4,
    max_sample_tokens=8,
    max_prompt_tokens=5,
    max_lora_rank=8,
)


def _rl(n: int = 3) -> ApiDatum:
    return ApiDatum(
        list(range(n)), {"target_tokens": [1] * n, "logprobs": [0.0] * n, "advantages": [1.0] * n}
    )


def test_the_package_imports_without_torch() -> None:
    code = "import sys, trainer.training_api; assert 'torch' not in sys.modules, 'torch was imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[3])


def test_a_valid_request_gets_the_loss_config_with_tinker_defaults() -> None:
    assert validate_forward_request([_rl()], "ppo", None, LIMITS) == {
        "clip_low_threshold": 0.8,
        "clip_high_threshold": 1.2,
    }
    assert (
        validate_forward_request([_rl()], "ppo", {"clip_high_threshold": 1.5}, LIMITS)["clip_high_threshold"]
        == 1.5
    )
    assert validate_forward_request([_rl()], "dro", None, LIMITS) == {"beta": 0.05}


@pytest.mark.parametrize("name", ["custom", "gspo", "stable_reinforce", "nonsense"])
def test_an_unsupported_loss_is_named_and_the_supported_ones_listed(name: str) -> None:
    with pytest.raises(
        ApiInputError, match=f"'{name}'.*cross_entropy, importance_sampling, ppo, cispo, dro"
    ) as err:
        validate_forward_request([_rl()], name, None, LIMITS)
    assert err.value.field == "loss_fn"


def test_a_loss_turned_off_by_the_limits_is_refused() -> None:
    limits = ApiLimits(allowed_losses=("cross_entropy",))
    with pytest.raises(ApiInputError, match="'ppo' is turned off on this server; use one of: cross_entropy"):
        validate_forward_request([_rl()], "ppo", None, limits)


def test_limits_refuse_a_loss_the_server_cannot_compute() -> None:
    with pytest.raises(ValueError, match="cannot compute"):
        ApiLimits(allowed_losses=("custom",))


def test_too_many_tokens_in_a_datum_names_the_datum_and_the_limit() -> None:
    with pytest.raises(ApiInputError, match="has 7 tokens, more than this server's limit of 6") as err:
        validate_forward_request([_rl(), _rl(7)], "importance_sampling", None, LIMITS)
    assert err.value.field == "data[1].model_input"


def test_too_many_tokens_or_datums_in_a_call_says_to_split_it() -> None:
    with pytest.raises(ApiInputError, match=r"12 tokens in all.*limit of 10.*split"):
        validate_forward_request([_rl(6), _rl(6)], "importance_sampling", None, LIMITS)
    with pytest.raises(ApiInputError, match=r"4 datums.*limit of 3"):
        validate_forward_request([_rl(1)] * 4, "importance_sampling", None, LIMITS)


def test_mismatched_lengths_name_the_input() -> None:
    datum = _rl(3)
    datum.inputs["advantages"] = [1.0, 2.0]
    with pytest.raises(ApiInputError, match="has 2 entries but model_input has 3 tokens") as err:
        validate_forward_request([datum], "ppo", None, LIMITS)
    assert err.value.field == "data[0].loss_fn_inputs.advantages"


def test_missing_and_unused_inputs_are_named_with_what_the_loss_takes() -> None:
    with pytest.raises(ApiInputError, match=r"lacks \['weights'\] for 'cross_entropy'"):
        validate_forward_request([ApiDatum([1, 2], {"target_tokens": [2, 3]})], "cross_entropy", None, LIMITS)
    datum = _rl()
    datum.inputs["mask"] = [1.0] * 3
    with pytest.raises(ApiInputError, match=r"holds \['mask'\], which 'ppo' does not use"):
        validate_forward_request([datum], "ppo", None, LIMITS)


def test_bad_loss_config_is_refused() -> None:
    with pytest.raises(ApiInputError, match="is not a setting of 'ppo'") as err:
        validate_forward_request([_rl()], "ppo", {"beta": 0.1}, LIMITS)
    assert err.value.field == "loss_fn_config.beta"
    with pytest.raises(ApiInputError, match="clip thresholds must satisfy"):
        validate_forward_request([_rl()], "cispo", {"clip_low_threshold": 1.1}, LIMITS)
    with pytest.raises(ApiInputError, match="must be a finite number"):
        validate_forward_request([_rl()], "ppo", {"clip_low_threshold": "0.8"}, LIMITS)
    with pytest.raises(ApiInputError, match="must be a finite number"):
        validate_forward_request([_rl()], "dro", {"beta": float("nan")}, LIMITS)


def test_empty_requests_are_refused() -> None:
    with pytest.raises(ApiInputError, match="data: is empty"):
        validate_forward_request([], "ppo", None, LIMITS)
    with pytest.raises(ApiInputError, match="at least one token"):
        validate_forward_request(
            [ApiDatum([], {"target_tokens": [], "weights": []})], "cross_entropy", None, LIMITS
        )


@pytest.mark.parametrize(
    ("prompt", "num", "params", "field"),
    [
        ([1] * 6, 1, ApiSampling(max_tokens=4), "prompt"),
        ([], 1, ApiSampling(max_tokens=4), "prompt"),
        ([1], 5, ApiSampling(max_tokens=4), "num_samples"),
        ([1], 0, ApiSampling(max_tokens=4), "num_samples"),
        ([1], 1, ApiSampling(max_tokens=9), "sampling_params.max_tokens"),
        ([1], 1, ApiSampling(max_tokens=4, temperature=0.0), "sampling_params.temperature"),
        ([1], 1, ApiSampling(max_tokens=4, top_p=0.0), "sampling_params.top_p"),
        ([1], 1, ApiSampling(max_tokens=4, top_k=0), "sampling_params.top_k"),
        ([1], 1, ApiSampling(max_tokens=4, stop=["a", 3]), "sampling_params.stop"),  # type: ignore[list-item]
        ([1], 1, ApiSampling(max_tokens=4, stop=[""]), "sampling_params.stop[0]"),
        ([1], 1, ApiSampling(max_tokens=4, seed=-1), "sampling_params.seed"),
    ],
)
def test_each_bad_sampling_input_is_named(
    prompt: list[int], num: int, params: ApiSampling, field: str
) -> None:
    with pytest.raises(ApiInputError) as err:
        validate_sample_request(prompt, num, params, LIMITS)
    assert err.value.field == field


def test_max_tokens_defaults_to_the_limit() -> None:
    assert validate_sample_request([1], 1, ApiSampling(), LIMITS) == 8


@pytest.mark.parametrize(
    ("params", "field"),
    [
        (AdamParams(learning_rate=-1.0), "adam_params.learning_rate"),
        (AdamParams(beta2=1.0), "adam_params.beta2"),
        (AdamParams(eps=float("inf")), "adam_params.eps"),
        (AdamParams(grad_clip_norm=-0.5), "adam_params.grad_clip_norm"),
    ],
)
def test_bad_adam_params_are_named(params: AdamParams, field: str) -> None:
    with pytest.raises(ApiInputError) as err:
        validate_adam(params)
    assert err.value.field == field


def test_model_creation_bounds() -> None:
    validate_create("tiny:addition", 8, 0, LIMITS)
    with pytest.raises(ApiInputError, match="from 1 to 8"):
        validate_create("tiny:addition", 9, 0, LIMITS)
    with pytest.raises(ApiInputError, match="base_model: is empty"):
        validate_create(" ", None, 0, LIMITS)
