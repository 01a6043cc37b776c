"""The hf engine's token-in path: it shares the sampling code with ``generate`` and ends at stop strings."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from trainer.rollout import HFRolloutEngine, RolloutBatch, SamplingParams

PROMPTS = ["1+2=", "1+2=", "33*4-5=", "9=", "(9+6)*4-5="]


@pytest.fixture(scope="module")
def engine(random_model_dir: Path) -> HFRolloutEngine:
    return HFRolloutEngine(
        AutoModelForCausalLM.from_pretrained(random_model_dir),
        AutoTokenizer.from_pretrained(random_model_dir),
    )


def _fields(batch: RolloutBatch) -> dict[str, Any]:
    return {f.name: getattr(batch, f.name) for f in dataclasses.fields(batch)}


@pytest.mark.parametrize("params", [SamplingParams(12), SamplingParams(9, 0.7, 0.9, 20, batch_size=2)])
def test_continuing_the_prompts_token_ids_samples_exactly_what_generate_samples(
    engine: HFRolloutEngine, params: SamplingParams
) -> None:
    ids = [engine.tokenizer(p, add_special_tokens=False)["input_ids"] for p in PROMPTS]
    from_text = engine.generate(PROMPTS, params, torch.Generator().manual_seed(5))
    from_ids = engine.generate_from_ids(ids, params, torch.Generator().manual_seed(5))
    for name, value in _fields(from_text).items():
        other = _fields(from_ids)[name]
        assert torch.equal(value, other) if isinstance(value, torch.Tensor) else value == other, name


def test_a_stop_string_ends_the_completion_at_the_token_that_completes_it(engine: HFRolloutEngine) -> None:
    params = SamplingParams(40)
    ids = [engine.tokenizer(p, add_special_tokens=False)["input_ids"] for p in PROMPTS]
    free = engine.generate_from_ids(ids, params, torch.Generator().manual_seed(3))
    stop = free.texts[0][
        5:7
    ]  # two tokens of the character tokenizer, from the middle of the first completion
    stopped = engine.generate_from_ids(ids, params, torch.Generator().manual_seed(3), stop=[stop])
    end = next(n for n in range(1, 41) if stop in engine.tokenizer.decode(free.completion_ids[0, :n]))
    assert stopped.finish_reasons[0] == "stop"
    assert stopped.completion_mask[0].sum() == end
    assert torch.equal(stopped.completion_ids[0, :end], free.completion_ids[0, :end])
    assert stopped.texts[0].endswith(stop) and stop not in stopped.texts[0][: -len(stop)]
    for row, reason in enumerate(stopped.finish_reasons):
        assert (reason == "stop") == (stop in stopped.texts[row])


def test_an_empty_context_is_refused(engine: HFRolloutEngine) -> None:
    with pytest.raises(ValueError, match="context 1 is empty"):
        engine.generate_from_ids([[5], []], SamplingParams(4), torch.Generator())


def test_joining_a_multi_turn_batch_with_single_turn_ones_gives_those_all_model_tokens() -> None:
    def batch(n: int, t: int, model_mask: torch.Tensor | None) -> RolloutBatch:
        ones = torch.ones(n, t, dtype=torch.long)
        zeros = torch.zeros(n, t)
        return RolloutBatch(
            ones, ones, ones, ones, zeros, zeros, ["eos"] * n, ["x"] * n, model_mask=model_mask
        )

    single, multi = batch(1, 2, None), batch(1, 3, torch.tensor([[1, 0, 1]]))
    joined = RolloutBatch.concat([single, multi], pad_id=0)
    assert joined.model_mask is not None
    assert joined.model_mask.tolist() == [[1, 1, 0], [1, 0, 1]]
    assert RolloutBatch.concat([single, single], pad_id=0).model_mask is None
