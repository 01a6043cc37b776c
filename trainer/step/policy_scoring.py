"""When the sampler is not the policy being trained: rescore the sampled tokens with the policy and weight
each token by a truncated importance ratio.

Two cases make the sampler differ from the trainer's policy: vLLM (other kernels, other numerics; Yao et al.
2025 measured the gap growing over a run) and an asynchronous run (``training.max_off_policy_steps``: the
rollouts of step s were sampled by the policy of step s - 1 - k). Either way the batch carries the sampler's
logprobs (``RolloutBatch.sampler_logprobs``). This stage returns the batch with ``logprobs`` and ``entropies``
replaced by the current policy's (``PolicyScores.batch``, a new batch: the collected one keeps the sampler's), so
every later stage (token credit, the policy loss, the token view) sees the policy's own numbers,
and computes per-token weights w = min(pi_policy / pi_sampler, importance_cap), truncated importance
sampling as in IMPALA's V-trace (Espeholt et al. 2018). The update multiplies each token's advantage by w,
which for the clipped surrogate is the same as weighting each token's loss by w (w > 0).

Metrics (``async/*``, reported for vLLM too): the weights' mean, the share of tokens the cap truncated, and the
sampler-trainer KL(pi_sampler || pi_policy), estimated per token as (r - 1) - log r with r = pi_policy / pi_sampler
(Schulman's k3 estimator: unbiased under the sampler, never negative).
"""

from __future__ import annotations

import dataclasses

import torch
from torch import Tensor

from trainer.rollout import RolloutBatch
from trainer.step.optimize import batch_logprobs_and_entropies
from trainer.step.run_setup import Run
from trainer.step.state import ImportanceWeights, PolicyScores


def importance_weights(
    policy_logprobs: Tensor, sampler_logprobs: Tensor, mask: Tensor, cap: float
) -> ImportanceWeights:
    """Truncated per-token importance weights and their metrics; a token whose sampler logprob is missing
    (NaN) gets weight 1."""
    valid = mask.bool() & ~torch.isnan(sampler_logprobs)
    delta = torch.where(
        valid, policy_logprobs - torch.nan_to_num(sampler_logprobs), torch.zeros_like(policy_logprobs)
    )
    ratio = delta.exp()
    weights = torch.where(valid, ratio.clamp(max=cap), torch.ones_like(ratio))
    n = int(valid.sum())
    if n == 0:
        return ImportanceWeights(weights, {})
    k3 = (ratio - 1 - delta)[valid]
    return ImportanceWeights(
        weights,
        {
            "async/is_weight_mean": float(weights[valid].mean()),
            "async/is_weight_max": float(ratio[valid].max()),
            "async/is_clipped_frac": float((ratio[valid] > cap).float().mean()),
            "async/sampler_trainer_kl": float(k3.mean()),
            "async/sampler_logprob_gap": float(delta[valid].abs().mean()),
        },
    )


def rescore_with_policy(run: Run, batch: RolloutBatch) -> PolicyScores:
    """The batch with the policy's logprobs and entropies, and the importance weights; the batch itself and no
    weights when the policy sampled it."""
    if batch.sampler_logprobs is None:
        return PolicyScores(batch, None)
    was_training = run.model.training
    run.model.eval()
    try:
        logprobs, entropies = batch_logprobs_and_entropies(
            run.model, batch, run.micro_batch_size, run.config.rollout.temperature
        )
    finally:
        run.model.train(was_training)
    mask = batch.completion_mask.to(logprobs.dtype)
    rescored = dataclasses.replace(batch, logprobs=logprobs * mask, entropies=entropies * mask)  # [N, T]
    sampler = batch.sampler_logprobs.to(logprobs.device)
    weights = importance_weights(
        rescored.logprobs, sampler, batch.completion_mask, run.config.training.importance_cap
    )
    return PolicyScores(rescored, weights)


def weighted(advantages: Tensor, weights: ImportanceWeights | None) -> Tensor:
    """Token advantages [N, T] weighted for the update (unchanged when the policy sampled)."""
    return advantages if weights is None else advantages * weights.weights.to(advantages.dtype)


__all__ = ["ImportanceWeights", "PolicyScores", "importance_weights", "rescore_with_policy", "weighted"]
