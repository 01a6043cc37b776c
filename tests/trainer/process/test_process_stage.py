"""The score_steps stage in real tiny training steps on the chain task: records carry details["process"] and the
step_score channel, metrics carry process/*, Monte Carlo makes one extra generate call per step and counts its
tokens, and a run without the section has none of it."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import pytest

from tests.trainer.loop_helpers import Steps
from trainer.config import ExperimentConfig, config_from_dict
from trainer.errors import ConfigError
from trainer.sinks import RolloutRecord, pack_token_arrays, unpack_token_arrays
from trainer.step.loop import train
from trainer.step.run_setup import build_run
from trainer.step.step import training_step

PROCESS_KEYS = {"spans", "scores", "blamed", "oracle_first_wrong", "scorer", "segmenter"}


def chain_config(out_dir: Path, **sections: Any) -> ExperimentConfig:
    data: dict[str, Any] = {
        "name": "process",
        "seed": 0,
        "model": {"name_or_path": "tiny:chain"},
        "data": {"source": "chain_arithmetic", "task": "easy", "size": 32},
        "rollout": {"num_generations": 4, "max_completion_length": 40},
        "verifiers": [{"name": "chain_arithmetic"}],
        "training": {"max_steps": 2, "prompts_per_step": 2, "micro_batch_size": 8, "learning_rate": 1e-4},
        "checkpoint": {"output_dir": str(out_dir), "save_steps": 0},
    }
    data.update(sections)
    return config_from_dict(data)


def check_record(record: RolloutRecord) -> dict[str, Any]:
    process = record.details["process"]
    assert set(process) <= PROCESS_KEYS | {"note"} and set(process) >= PROCESS_KEYS
    spans, scores = process["spans"], process["scores"]
    n = len(record.token_ids)
    assert spans[0][0] == 0 and spans[-1][1] == n and len(spans) == len(scores) <= 64
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
    channel = record.token_values["step_score"]
    assert len(channel) == n
    for (s, e), score in zip(spans, scores, strict=True):
        for value in channel[s:e]:
            assert (math.isnan(value) and score is None) or value == score
    _ids, stored = unpack_token_arrays(pack_token_arrays(record))  # the channel is stored with the others
    assert stored["step_score"] == pytest.approx(channel, nan_ok=True)
    return process


def test_two_steps_with_oracle_step_scores(tmp_path: Path) -> None:
    sink = Steps()
    cfg = chain_config(
        tmp_path, process_reward={"segmenter": "lines", "scorer": "oracle_chain", "credit": "min"}
    )
    train(cfg, sink=sink, log=lambda m: None)
    assert [r.step for r in sink.reports] == [1, 2]
    for report in sink.reports:
        m = report.metrics
        assert 0.0 <= m["process/score_mean"] <= 1.0 and m["process/steps_mean"] >= 1.0
        assert 0.0 <= m["process/blamed_frac"] <= 1.0
        assert m["process/oracle_f1"] == 1.0  # the oracle blames exactly the oracle's step
        for record in report.rollouts:
            process = check_record(record)
            assert process["scorer"] == "oracle_chain" and process["segmenter"] == "lines"
            assert process["blamed"] == process["oracle_first_wrong"]
            assert all(s in (0.0, 1.0) for s in process["scores"])
            wrong = record.details["chain_arithmetic"]["first_wrong_step"]
            if record.correct and wrong is None:
                assert process["blamed"] is None and all(s == 1.0 for s in process["scores"])
            if wrong is not None and wrong["kind"] != "missing":
                assert (
                    process["oracle_first_wrong"] == wrong["index"]
                )  # lines steps: the verifier's line index


def test_a_run_without_the_section_has_no_process_data(tmp_path: Path) -> None:
    sink = Steps()
    cfg = chain_config(tmp_path)
    assert cfg.process_reward is None and "process_reward" in cfg.model_dump()
    run = build_run(cfg, log=lambda m: None)
    try:
        report = training_step(run, 1)
    finally:
        run.close()
    sink.on_step(report)
    assert not any(k.startswith("process/") for k in report.metrics)
    for record in report.rollouts:
        assert "process" not in record.details and "step_score" not in record.token_values


class CountingEngine:
    """The run's own engine, counting generate calls and the prompts of each."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.calls: list[int] = []

    def generate(self, prompts: list[str], params: Any, generator: Any) -> Any:
        self.calls.append(len(prompts))
        return self.engine.generate(prompts, params, generator)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.engine, name)


def test_monte_carlo_adds_one_generate_call_per_step_and_counts_its_tokens(tmp_path: Path) -> None:
    cfg = chain_config(
        tmp_path,
        process_reward={"scorer": {"name": "monte_carlo", "params": {"k": 2, "max_new_tokens": 16}}},
        rollout={"num_generations": 2, "max_completion_length": 40},
    )
    run = build_run(cfg, log=lambda m: None)
    counting = CountingEngine(run.engine)
    run.engine = counting  # type: ignore[assignment]
    try:
        for step in (1, 2):
            counting.calls.clear()
            report = training_step(run, step)
            m = report.metrics
            prefixes = int(m["process/mc_prefixes"])
            # one call for the rollouts (2 prompts x 2), then ONE for every step prefix x k
            assert counting.calls == ([4, 2 * prefixes] if prefixes else [4])
            rollout_tokens = sum(len(r.token_ids) for r in report.rollouts)
            assert m["budget/tokens_generated"] == rollout_tokens + m["process/mc_tokens"]
            assert (m["process/mc_tokens"] > 0) == (prefixes > 0)
            for record in report.rollouts:
                process = check_record(record)
                assert all(s is None or 0.0 <= s <= 1.0 for s in process["scores"])
                assert process["scores"][-1] == (1.0 if record.correct else 0.0)
    finally:
        run.close()


def test_monte_carlo_is_refused_in_an_asynchronous_run(tmp_path: Path) -> None:
    cfg = chain_config(
        tmp_path,
        process_reward={"scorer": {"name": "monte_carlo", "params": {"k": 2}}},
        training={"max_steps": 1, "prompts_per_step": 2, "micro_batch_size": 8, "max_off_policy_steps": 1},
    )
    with pytest.raises(ConfigError, match="max_off_policy_steps"):
        train(cfg, sink=Steps(), log=lambda m: None)
