"""Turning a step's tensors into the stable metric keys and the rollout records the dashboard browses."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from trainer.algorithms.group_stats import group_std
from trainer.config import ExperimentConfig
from trainer.optimize import UpdateStats
from trainer.rollout import RolloutBatch
from trainer.samples import Sample
from trainer.sinks import RolloutRecord
from trainer.verifiers.scoring import ScoreBatch


def step_metrics(
    cfg: ExperimentConfig,
    batch: RolloutBatch,
    scores: ScoreBatch,
    rewards: Tensor,
    advantages: Tensor,
    group_ids: Tensor,
    updates: Sequence[UpdateStats],
    timings: dict[str, float],
    lr: float,
) -> dict[str, float]:
    """Namespaced metrics (DESIGN.md "Stable names") for one step."""
    lengths = batch.lengths.float()
    first = updates[0]
    gen_tokens = float(lengths.sum())
    step_s = sum(timings.values())
    # Each completion carries its group's std; scatter writes it once per group.
    per_group_std = torch.zeros(int(group_ids.max()) + 1, device=rewards.device).scatter_(
        0, group_ids, group_std(rewards, group_ids)
    )  # [P]
    metrics = {
        "rollout/reward_mean": float(rewards.mean()),
        "rollout/reward_std": float(rewards.std()) if len(rewards) > 1 else 0.0,
        "rollout/accuracy": sum(scores.correct) / max(len(scores.correct), 1),
        "rollout/response_len_mean": float(lengths.mean()),
        "rollout/response_len_max": float(lengths.max()),
        "rollout/truncated_frac": sum(r == "length" for r in batch.finish_reasons) / len(batch),
        "rollout/zero_std_frac": float((per_group_std < 1e-6).float().mean()),
        "rollout/advantage_abs_mean": float(advantages.abs().mean()),
        "actor/loss": sum(u.loss for u in updates) / len(updates),
        "actor/pg_loss": sum(u.pg_loss for u in updates) / len(updates),
        "actor/entropy": first.entropy,
        "actor/clip_frac": sum(u.clip_frac for u in updates) / len(updates),
        "actor/grad_norm": sum(u.grad_norm for u in updates) / len(updates),
        "actor/lr": lr,
        "perf/step_s": step_s,
        "perf/gen_s": timings["gen"],
        "perf/verify_s": timings["verify"],
        "perf/train_s": timings["train"],
        "perf/gen_tokens_per_s": gen_tokens / timings["gen"] if timings["gen"] > 0 else 0.0,
    }
    if cfg.algorithm.beta > 0:
        metrics["actor/kl"] = sum(u.kl for u in updates) / len(updates)
    for key, values in scores.per_verifier.items():
        metrics[f"reward/{key}_mean"] = sum(values) / max(len(values), 1)
    return {k: (v if math.isfinite(v) else float("nan")) for k, v in metrics.items()}


def rollout_records(
    step: int,
    tokenizer: PreTrainedTokenizerBase,
    samples: Sequence[Sample],
    prompts: Sequence[str],
    batch: RolloutBatch,
    scores: ScoreBatch,
    advantages: Tensor,
    token_advantages: Tensor,
    loss_mask: Tensor,
    old_logprobs: Tensor,
    ref_logprobs: Tensor | None,
    group_size: int,
) -> list[RolloutRecord]:
    """One record per completion with its per-token arrays, cut to the completion's real length."""
    lengths = batch.lengths.tolist()
    ids = batch.completion_ids.tolist()
    # A step repeats few distinct tokens many times: decode each once (a token's string depends on it alone).
    distinct = sorted({t for row, n in zip(ids, lengths, strict=True) for t in row[: int(n)]})
    decoded = tokenizer.batch_decode([[t] for t in distinct], skip_special_tokens=False) if distinct else []
    token_str = dict(zip(distinct, decoded, strict=True))
    channels = {
        "logprob": batch.logprobs.tolist(),
        "old_logprob": old_logprobs.tolist(),
        "entropy": batch.entropies.tolist(),
        "advantage": token_advantages.tolist(),
        "loss_mask": loss_mask.float().tolist(),
    }
    if ref_logprobs is not None:
        channels["ref_logprob"] = ref_logprobs.tolist()
    records = []
    for i, n in enumerate(int(x) for x in lengths):
        sample = samples[i // group_size]
        records.append(RolloutRecord(
            step=step,
            prompt_id=sample.id,
            group=i // group_size,
            sample_index=i % group_size,
            prompt=prompts[i // group_size],
            completion=batch.texts[i],
            finish_reason=batch.finish_reasons[i],
            reward=scores.total[i],
            rewards={k: v[i] for k, v in scores.per_verifier.items()},
            correct=scores.correct[i],
            details=scores.details[i],
            advantage=float(advantages[i]),
            token_ids=ids[i][:n],
            tokens=[token_str[t] for t in ids[i][:n]],
            token_values={name: values[i][:n] for name, values in channels.items()},
            answer=sample.answer,
        ))
    return records
