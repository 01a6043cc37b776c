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

from torch import Tensor

from trainer.distributed.fsdp import is_sharded
from trainer.models.logprobs import dropout_active
from trainer.rollout import RolloutBatch
from trainer.step.importance import importance_weights
from trainer.step.optimize import batch_logprobs_and_entropies
from trainer.step.run_setup import Run
from trainer.step.state import ImportanceWeights, PolicyScores
from trainer.step.teacher import needs_teacher

# Hook points whose hooks may read the batch's policy scores (logprobs, entropies) before the update, and the
# built-in hooks there that read neither (the defaults, and GAPO's clip range, which reads advantages only).
_SCORE_READERS = frozenset(
    {"token_credit", "turn_credit", "step_credit", "token_fusion", "loss_mask", "loss_inputs"}
)
_BLIND_HOOKS = frozenset({("token_credit", "uniform"), ("loss_inputs", "fixed"), ("loss_inputs", "gapo")})


def update_rescores(run: Run, step: int) -> bool:
    """Whether the policy's scores of an off-policy batch can wait for the update's own forward (trainer/step/
    optimize.py ``UpdateBatch.rescore_cap``), which then computes the importance weights from its detached
    logprobs: the same numbers up to float rounding, for one forward over the batch fewer. Only when nothing
    before the update reads them: one optimizer pass (a second reads old logprobs from a forward of its own
    anyway), no process reward, no teacher scoring this step, only built-in hooks that ignore them, and a model
    whose training forward equals its evaluation one (no active dropout) and is not sharded."""
    cfg = run.config
    if cfg.algorithm.num_iterations != 1 or cfg.process_reward is not None or needs_teacher(cfg, step):
        return False
    for method in run.methods:
        readers = [
            p for p in _SCORE_READERS if method.has_hook(p) and (p, method.entry.name) not in _BLIND_HOOKS
        ]
        if readers and method.acts_at(step):
            return False
    return not is_sharded(run.model) and not dropout_active(run.model)


def rescore_with_policy(run: Run, batch: RolloutBatch, step: int | None = None) -> PolicyScores:
    """The batch with the policy's logprobs and entropies, and the importance weights; the batch itself and no
    weights when the policy sampled it, or when the update will score it (``update_rescores``, at ``step``:
    ``PolicyScores.deferred``)."""
    if batch.sampler_logprobs is None:
        return PolicyScores(batch, None)
    if step is not None and update_rescores(run, step):
        return PolicyScores(batch, None, deferred=True)
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


__all__ = [
    "ImportanceWeights",
    "PolicyScores",
    "importance_weights",
    "rescore_with_policy",
    "update_rescores",
    "weighted",
]
