"""An off-policy batch (an asynchronous run's) is rescored by the update's own forward when no stage before the
update reads the policy's scores: the same update, importance weights, metrics and token view as rescoring it
first, for one forward over the batch fewer."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.config import config_from_dict
from trainer.models.checkpoint import latest_checkpoint
from trainer.rollout import HFRolloutEngine, RolloutBatch, SamplingParams
from trainer.step import policy_scoring
from trainer.step.importance import importance_weights
from trainer.step.loop import train
from trainer.step.optimize import UpdateBatch, UpdateStats, batch_logprobs_and_entropies, policy_update
from trainer.step.run_setup import build_run

CAP = 2.0


@pytest.fixture(scope="module")
def off_policy(random_model_dir: Path) -> tuple[torch.nn.Module, RolloutBatch]:
    """Twelve completions (four groups of three) whose sampler logprobs differ from the policy's, as an older
    copy's would; one token's sampler logprob is missing."""
    model = AutoModelForCausalLM.from_pretrained(random_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(random_model_dir)
    batch = HFRolloutEngine(model, tokenizer).generate(
        [p for p in ["12+34=", "7+8=", "50+50=", "1+1="] for _ in range(3)],
        SamplingParams(6),
        torch.Generator().manual_seed(0),
    )
    shift = torch.linspace(-1.2, 0.9, len(batch))[:, None]  # some ratios above the cap, some below 1
    sampler = (batch.logprobs + shift) * batch.completion_mask
    sampler[2, 0] = float("nan")
    return model, dataclasses.replace(batch, sampler_logprobs=sampler)


ADVANTAGES = torch.tensor([0.0, 0.0, 0.0, 1.2, -0.6, -0.6, 0.0, 0.0, 0.0, -1.0, 2.0, -1.0])


def _update(model: torch.nn.Module, batch: RolloutBatch, deferred: bool) -> tuple[UpdateStats, Any, Any]:
    cfg = config_from_dict({"rollout": {"max_completion_length": 6}, "training": {"micro_batch_size": 5}})
    model = copy.deepcopy(model)
    mask = batch.completion_mask.float()
    advantages = ADVANTAGES[:, None] * mask
    if deferred:
        data = UpdateBatch(batch, advantages, mask, None, None, rescore_cap=CAP)
    else:  # the rescoring stage, then the update
        logprobs, entropies = batch_logprobs_and_entropies(model, batch, 5, 1.0)
        rescored = dataclasses.replace(batch, logprobs=logprobs * mask, entropies=entropies * mask)
        weights = importance_weights(rescored.logprobs, batch.sampler_logprobs, batch.completion_mask, CAP)  # type: ignore[arg-type]
        data = UpdateBatch(rescored, advantages * weights.weights, mask, None, None)
    stats = policy_update(model, torch.optim.SGD(model.parameters(), lr=0.5), data, cfg)
    importance = stats.importance if deferred else weights
    return stats, importance, {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_the_update_rescoring_a_batch_itself_changes_nothing(
    off_policy: tuple[torch.nn.Module, RolloutBatch],
) -> None:
    model, batch = off_policy
    first, first_iw, first_after = _update(model, batch, deferred=False)
    folded, folded_iw, folded_after = _update(model, batch, deferred=True)
    assert folded.silent_rows == first.silent_rows == 6
    mask = batch.completion_mask.bool()
    assert torch.allclose(folded.logprobs[mask], first.logprobs[mask], atol=1e-5)
    assert folded.entropies is not None and first.entropies is not None
    assert torch.allclose(folded.entropies[mask], first.entropies[mask], atol=1e-5)
    assert folded.entropy == pytest.approx(first.entropy, rel=1e-5)
    assert folded.pg_loss == pytest.approx(first.pg_loss, rel=1e-5)
    assert folded_iw.metrics == pytest.approx(first_iw.metrics, rel=1e-5)
    assert 0 < folded_iw.metrics["async/is_clipped_frac"] < 1
    assert torch.allclose(folded_iw.weights, first_iw.weights, atol=1e-5)
    for key, value in first_after.items():
        assert torch.allclose(folded_after[key], value, atol=1e-6), key


def _config(model_dir: Path, out: Path, **algorithm: Any) -> Any:
    return tiny_config(
        model_dir,
        out,
        algorithm=algorithm,
        training={"max_steps": 3, "prompts_per_step": 2, "micro_batch_size": 8, "max_off_policy_steps": 1},
    )


def test_an_async_run_trains_the_same_with_the_rescoring_in_the_update(
    random_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folded = Steps()
    train(_config(random_model_dir, tmp_path / "folded"), sink=folded, log=lambda _: None)
    monkeypatch.setattr(policy_scoring, "update_rescores", lambda run, step: False)
    apart = Steps()
    train(_config(random_model_dir, tmp_path / "apart"), sink=apart, log=lambda _: None)
    for a, b in zip(apart.reports, folded.reports, strict=True):
        assert [r.completion for r in a.rollouts] == [r.completion for r in b.rollouts]
        for key in ("async/is_weight_mean", "async/sampler_trainer_kl", "actor/entropy", "actor/pg_loss"):
            assert b.metrics[key] == pytest.approx(a.metrics[key], rel=1e-4, abs=1e-7), (a.step, key)
        for ra, rb in zip(a.rollouts, b.rollouts, strict=True):  # the token view: the policy's scores
            for channel in ("logprob", "old_logprob", "entropy", "advantage"):
                assert rb.token_values[channel] == pytest.approx(ra.token_values[channel], abs=1e-5), channel
    w1 = load_file(str(latest_checkpoint(tmp_path / "apart") / "model.safetensors"))  # type: ignore[operator]
    w2 = load_file(str(latest_checkpoint(tmp_path / "folded") / "model.safetensors"))  # type: ignore[operator]
    assert all(torch.allclose(w1[k], w2[k], atol=1e-6) for k in w1)


@pytest.mark.parametrize(
    ("algorithm", "folds"),
    [
        ({}, True),
        ({"clip_mode": "gapo"}, True),  # GAPO's clip range reads advantages only
        ({"num_iterations": 2}, False),  # the second pass's old logprobs come from a forward of their own
        (  # HISPO's segments read the entropies
            {"importance_sampling_level": {"name": "segment", "params": {"min_tokens": 2}}},
            False,
        ),
        ({"token_credit": "top_entropy"}, False),
    ],
)
def test_the_rescoring_waits_for_the_update_only_when_nothing_reads_it_first(
    random_model_dir: Path, tmp_path: Path, algorithm: dict[str, Any], folds: bool
) -> None:
    run = build_run(_config(random_model_dir, tmp_path, **algorithm), log=lambda m: None)
    assert policy_scoring.update_rescores(run, 1) is folds
