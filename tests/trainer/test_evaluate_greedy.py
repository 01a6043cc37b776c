"""A greedy benchmark (``greedy: true``): the most likely token at every position, one completion per
problem, reported as ``accuracy (greedy)``; the engine's completions are those of ``generate(do_sample=False)``."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from trainer.errors import ConfigError
from trainer.evaluation.config import GREEDY_ACCURACY, benchmark_from_dict
from trainer.evaluation.engine import evaluate, load_benchmark_samples
from trainer.models.tiny_model import greedy_completions

GREEDY = {
    "name": "addition-greedy", "data": {"source": "demo", "size": 6, "data_seed": 1},
    "verifiers": [{"name": "exact", "params": {"extract": "first_line"}}], "n_samples": 1, "greedy": True,
    "max_tokens": 6,
}  # fmt: skip


def test_greedy_evaluation_writes_what_generate_without_sampling_writes(random_model_dir: Path) -> None:
    model, tok = (
        AutoModelForCausalLM.from_pretrained(random_model_dir),
        AutoTokenizer.from_pretrained(random_model_dir),
    )
    bench = benchmark_from_dict(GREEDY)
    result = evaluate(bench, (model, tok))
    expected = greedy_completions(
        model, tok, [s.prompt for s in load_benchmark_samples(bench)], max_new_tokens=6
    )
    assert [p.samples[0].text for p in result.problems] == expected
    assert set(result.metrics) == {GREEDY_ACCURACY, "response_len_mean", "truncated"}
    assert result.metrics[GREEDY_ACCURACY] == sum(p.c for p in result.problems) / 6


def test_greedy_evaluation_with_more_than_one_sample_is_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError, match="set n_samples to 1"):
        benchmark_from_dict({**GREEDY, "n_samples": 4})
