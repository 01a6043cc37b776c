"""The evaluation job's process part as the trainer validates it (torch-free): a step scorer's entry with its
defaults, the evaluation's bound on Monte-Carlo k, a scorer that keeps training state refused, and the part's
needs (Best-of-N samples or a step-labelled file; no more samples or problems than Best-of-N draws)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from trainer.rewards.evaluation import RewardEvaluationConfig
from trainer.rewards.evaluation_process import MAX_MC_K, ProcessSpec, is_process_entry, process_source_entry

BON = {"n": 4, "problems": 8}


def _config(**changes: Any) -> RewardEvaluationConfig:
    base: dict[str, Any] = {"sources": [{"process_scorer": {"name": "oracle_chain"}}], "best_of_n": BON,
                            "process": {}}  # fmt: skip
    return RewardEvaluationConfig.model_validate({**base, **changes})


def _message(**changes: Any) -> str:
    with pytest.raises(ValidationError) as err:
        _config(**changes)
    return str(err.value.errors()[0]["msg"])


def test_a_step_scorer_entry_is_stored_with_its_defaults_and_kind() -> None:
    entry = process_source_entry(
        {"process_scorer": {"name": "monte_carlo", "params": {"k": 2}}, "label": "mc"}
    )
    assert entry == {"name": "monte_carlo", "label": "mc", "kind": "process",
                     "params": {"k": 2, "max_prefixes": 8192, "max_new_tokens": None}}  # fmt: skip
    told = process_source_entry({"process_scorer": {"name": "monte_carlo", "params": {"max_prefixes": 16}}})
    assert told["params"]["max_prefixes"] == 16 and told["label"] == "monte_carlo"
    assert is_process_entry(entry) and is_process_entry({"process_scorer": {}})
    assert not is_process_entry({"name": "chain_arithmetic"})


def test_the_process_part_defaults_to_min_over_lines_at_one_half() -> None:
    spec = ProcessSpec()
    assert (spec.aggregate, spec.segmenter.name, spec.threshold, spec.bins) == ("min", "lines", 0.5, 10)
    assert spec.problems is None and spec.samples_per_problem is None and spec.labels is None
    assert _config().process == spec


def test_refusals_name_the_entry_and_the_fix() -> None:
    mc = {"process_scorer": {"name": "monte_carlo", "params": {"k": MAX_MC_K + 1}}}
    assert f"k may be at most {MAX_MC_K}" in _message(sources=[mc]) and "sources.0" in _message(sources=[mc])
    assert "cannot be evaluated" in _message(sources=[{"process_scorer": {"name": "implicit"}}])
    assert "params.model" in _message(sources=[{"process_scorer": {"name": "prm"}}])
    assert "add best_of_n, or give process.labels" in _message(best_of_n=None)
    assert "more than the 4 samples" in _message(process={"samples_per_problem": 5})
    assert "more than the 8 problems" in _message(process={"problems": 9})
    assert "choose at least one of" in _message(best_of_n=None, process=None)


def test_a_labels_file_alone_is_enough_for_the_part() -> None:
    got = _config(best_of_n=None, process={"labels": {"dataset": 3, "format": "prm800k"}})
    assert got.process is not None and got.process.labels is not None
    assert (got.process.labels.dataset, got.process.labels.max_examples) == (3, 1000)
