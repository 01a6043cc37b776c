"""Turning a step's tensors into the stable metric keys and the rollout records the dashboard browses."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor
from transformers import PreTrainedTokenizerBase

from trainer.config import ExperimentConfig
from trainer.methods.group_stats import group_std
from trainer.process.records import step_score_channel
from trainer.rollout import RolloutBatch
from trainer.sinks import RolloutRecord
from trainer.step.optimize import UpdateStats
from trainer.step.state import StepOutcome, StepTimings
from trainer.step.teacher import TeacherSignals
from trainer.verifiers.scoring import ScoreBatch


def step_metrics(
    cfg: ExperimentConfig,
    batch: RolloutBatch,
    scores: ScoreBatch,
    rewards: Tensor,
    advantages: Tensor,
    group_ids: Tensor,
    updates: Sequence[UpdateStats],
    timings: StepTimings,
    lr: float,
    teacher: TeacherSignals | None = None,
    step: int = 0,
) -> dict[str, float]:
    """Namespaced metrics (DESIGN.md "Stable names") for one step; ``teacher`` adds the teacher/* keys."""
    lengths = batch.lengths.float()
    first = updates[0]
    gen_tokens = float(lengths.sum())
    step_tokens = float(batch.prompt_mask.sum() + batch.completion_mask.sum())  # each rollout once
    train_tokens = step_tokens * len(updates)
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
        "actor/silent_rows_frac": first.silent_rows / max(len(batch), 1),
        "actor/lr": lr,
        "perf/step_s": timings.step_s,
        "perf/gen_s": timings.gen_s,
        "perf/verify_s": timings.verify_s,
        "perf/train_s": timings.train_s,
        # the update's parts, summed over its passes (trainer/step/optimize.py UpdateStats)
        "perf/update_forward_s": sum(u.forward_s for u in updates),
        "perf/update_backward_s": sum(u.backward_s for u in updates),
        "perf/optimizer_s": sum(u.optimizer_s for u in updates),
        "perf/gen_tokens_per_s": gen_tokens / timings.gen_s if timings.gen_s > 0 else 0.0,
        # prompt + completion tokens through forward and backward, per second of the update phase
        "perf/train_tokens_per_s": train_tokens / timings.train_s if timings.train_s > 0 else 0.0,
        # the step's rollouts' prompt + completion tokens; the loop sums them into perf/tokens_total
        "perf/step_tokens": step_tokens,
    }
    if cfg.algorithm.beta > 0:
        metrics["actor/kl"] = sum(u.kl for u in updates) / len(updates)
    if (
        cfg.algorithm.dual_clip
    ):  # the share of loss tokens held at the dual-clip cap (also in actor/clip_frac)
        metrics["actor/dual_clip_frac"] = sum(u.dual_clip_frac for u in updates) / len(updates)
    for key, values in scores.per_verifier.items():  # over the scores present (an absent one is nan)
        present = [v for v in values if not math.isnan(v)]
        metrics[f"reward/{key}_mean"] = sum(present) / len(present) if present else float("nan")
    metrics.update(teacher_metrics(teacher, cfg, step))
    return {k: (v if math.isfinite(v) else float("nan")) for k, v in metrics.items()}


def rollout_records(outcome: StepOutcome, tokenizer: PreTrainedTokenizerBase) -> list[RolloutRecord]:
    """One record per completion with its per-token arrays, cut to the completion's real length.

    The collected ``group_ids`` [N] map each completion to its prompt in ``samples`` / ``prompts`` (groups may
    differ in size); its ``allocation`` [N] is stored under ``details["allocation"]`` (group size, generation
    round, abandoned) so the rollout browser shows how many rollouts each prompt got. A source's absent score is
    ``None`` in ``rewards`` (its detail's ``absent`` says why); a completion dropped for one (``reward_absence``)
    has ``details["allocation"]["dropped"]`` true, advantage 0 and no tokens in the loss.
    """
    c, batch, scores = outcome.collected, outcome.scored.batch, outcome.shaped.scores
    samples, prompts, group_ids, allocation = c.samples, c.prompts, c.group_ids, c.allocation
    teacher, segment_ids = outcome.signals, outcome.credit.segment_ids
    advantages, ref_logprobs = outcome.advantages.values, outcome.update.ref_logprobs
    lengths = batch.lengths.tolist()
    ids = batch.completion_ids.tolist()
    # A step repeats few distinct tokens many times: decode each once (a token's string depends on it alone).
    distinct = sorted({t for row, n in zip(ids, lengths, strict=True) for t in row[: int(n)]})
    decoded = tokenizer.batch_decode([[t] for t in distinct], skip_special_tokens=False) if distinct else []
    token_str = dict(zip(distinct, decoded, strict=True))
    channels = {
        "logprob": batch.logprobs.tolist(),
        "old_logprob": outcome.update.old_logprobs.tolist(),
        "entropy": batch.entropies.tolist(),
        "advantage": outcome.credit.token_advantages.tolist(),
        "loss_mask": outcome.loss_mask.mask.float().tolist(),
    }
    if ref_logprobs is not None:
        channels["ref_logprob"] = ref_logprobs.tolist()
    if teacher is not None:  # the rollout browser colours tokens by these and by the teacher gap
        channels["teacher_logprob"] = teacher.logprob.tolist()
        channels["teacher_entropy"] = teacher.entropy.tolist()
    if segment_ids is not None:  # HISPO segments: the token view can colour tokens by segment
        channels["segment"] = segment_ids.float().tolist()
    if batch.model_mask is not None:  # multi-turn: the environment's tokens (masked out of the loss)
        channels["env_token"] = (batch.completion_mask - batch.model_mask).clamp(min=0).float().tolist()
    steps = outcome.steps
    if steps is not None:  # process rewards: each token carries its step's score (nan: absent)
        channels["step_score"] = step_score_channel(steps.spans, steps.scores, lengths)
    records = []
    seen: dict[int, int] = {}  # group -> completions of it so far
    for i, (n, g) in enumerate(zip((int(x) for x in lengths), group_ids.tolist(), strict=True)):
        sample = samples[g]
        seen[g] = seen.get(g, 0) + 1
        details = {**scores.details[i], "allocation": dict(allocation[i])}
        if c.dropped and c.dropped[i]:
            details["allocation"]["dropped"] = True
        if steps is not None:  # spans, scores, blamed and oracle steps (trainer/process/records.py)
            details["process"] = steps.detail[i]
        records.append(
            RolloutRecord(
                step=outcome.step,
                prompt_id=sample.id,
                group=g,
                sample_index=seen[g] - 1,
                prompt=prompts[g],
                completion=batch.texts[i],
                finish_reason=batch.finish_reasons[i],
                reward=scores.total[i],
                rewards={k: None if math.isnan(v[i]) else v[i] for k, v in scores.per_verifier.items()},
                correct=scores.correct[i],
                details=details,
                advantage=float(advantages[i]),
                token_ids=ids[i][:n],
                tokens=[token_str[t] for t in ids[i][:n]],
                token_values={name: values[i][:n] for name, values in channels.items()},
                answer=sample.answer,
            )
        )
    return records


def teacher_metrics(signals: TeacherSignals | None, cfg: ExperimentConfig, step: int) -> dict[str, float]:
    """teacher/* metrics: token means over the completions of the step (empty without teacher signals).

    gap_mean is E[log pi_T - log pi_old] on sampled tokens, i.e. minus the per-token reverse KL(student ||
    teacher) estimate that OPD minimises; it rises towards 0 as the student moves to the teacher.
    """
    from trainer.methods.fusion import fusion_acts, sequence_teacher_score

    if signals is None:
        return {}
    mask = signals.mask
    tokens = float(mask.sum().clamp(min=1))
    gap_mean = float((signals.gap * mask).sum()) / tokens
    return {
        "teacher/gap_mean": gap_mean,
        "teacher/reverse_kl": -gap_mean,
        "teacher/logprob_mean": float((signals.logprob * mask).sum()) / tokens,
        "teacher/entropy_mean": float((signals.entropy * mask).sum()) / tokens,
        "teacher/seq_score_mean": float(sequence_teacher_score(signals).mean()),
        "teacher/fusion_active": float(fusion_acts(cfg.teacher, step)),
    }
