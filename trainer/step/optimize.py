"""One optimizer step over a batch of rollouts, in micro-batches with gradient accumulation.

Per micro-batch: training forward -> per-token logprobs -> policy loss (+ beta * KL) -> aggregation ->
backward. Memory is bounded by ``micro_batch_size`` whatever the step's size; each micro-batch is
trimmed to its own longest prompt and completion, so padding costs nothing. ``UpdateBatch.extras`` (HISPO
segment ids, GAPO clip scales; trainer/methods/policy_losses.py) is sliced with the same rows and columns.

A non-finite loss or gradient norm stops the update before the optimizer steps, and weights that became
non-finite in the step stop it right after: :class:`NonFiniteUpdate`, which the loop turns into
``TrainingDiverged`` with the step and the fix (trainer/step/divergence.py).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor
from transformers import PreTrainedModel

from trainer.config import ExperimentConfig
from trainer.distributed.fsdp import full_tensor, gathered, is_sharded
from trainer.methods import AggregationContext
from trainer.methods.axes import the_hook
from trainer.methods.policy_losses import LossExtras
from trainer.models.logprobs import completion_logprobs
from trainer.rollout import RolloutBatch
from trainer.step.importance import importance_weights, truncated_weights
from trainer.step.state import ImportanceWeights

if TYPE_CHECKING:
    from trainer.distributed.context import DistContext


@dataclass
class UpdateBatch:
    """What the update needs, all [N, T] aligned with the rollout batch."""

    rollouts: RolloutBatch
    advantages: Tensor  # [N, T] per-token advantages (token credit applied)
    loss_mask: Tensor  # [N, T]
    old_logprobs: Tensor | None  # [N, T]; None: on-policy, use the current logprobs detached
    ref_logprobs: Tensor | None  # [N, T]; None when beta == 0
    extras: LossExtras | None = None  # segment ids [N, T] (HISPO) and per-completion clip scale [N] (GAPO)
    # Set when the policy's scores of this off-policy batch were left to the update (trainer/step/policy_scoring.py
    # update_rescores): the first forward weighs each token's advantage by min(pi / pi_sampler, cap) from its own
    # detached logprobs (rollouts.sampler_logprobs are the sampler's), and the rows it leaves out are scored
    # without gradient, so that the pass returns the policy's scores of every row and their importance weights.
    rescore_cap: float | None = None

    def take(self, rows: Tensor) -> UpdateBatch:
        """The rows at ``rows`` ([K] long), in that order, every column kept."""
        return UpdateBatch(
            self.rollouts.take(rows),
            self.advantages[rows],
            self.loss_mask[rows],
            None if self.old_logprobs is None else self.old_logprobs[rows],
            None if self.ref_logprobs is None else self.ref_logprobs[rows],
            None if self.extras is None else self.extras.select(rows, slice(None)),
            self.rescore_cap,
        )


@dataclass
class UpdateStats:
    loss: float
    pg_loss: float
    kl: float
    entropy: float
    clip_frac: float
    grad_norm: float
    logprobs: Tensor  # [N, T] training-time logprobs of the first pass (detached)
    dual_clip_frac: float = 0.0  # share of loss tokens where the dual-clip cap was active (in clip_frac too)
    silent_rows: int = 0  # rows the forward and backward left out: they add nothing (rows_with_gradient)
    entropies: Tensor | None = None  # [N, T] per-token entropies of the pass (rows left out: the batch's)
    importance: ImportanceWeights | None = None  # the weights the pass computed (UpdateBatch.rescore_cap)
    # host seconds of the pass's parts (perf/update_forward_s, perf/update_backward_s, perf/optimizer_s): the
    # training forward with the loss, loss.backward(), and clipping + the optimizer step + the weight check
    forward_s: float = 0.0
    backward_s: float = 0.0
    optimizer_s: float = 0.0


class NonFiniteUpdate(Exception):
    """The update met NaN or infinity; ``what`` says where ("the loss became nan"), ``grad_norm`` is the
    norm before clipping."""

    def __init__(self, what: str, grad_norm: float) -> None:
        super().__init__(f"{what} (grad norm {grad_norm:.3g} before clipping)")
        self.what, self.grad_norm = what, grad_norm


def _non_finite_parameters(params: Sequence[Tensor], dist: DistContext | None) -> int:
    """How many parameter tensors (sharded: shards of them) hold a NaN or infinity; one device sync for all
    of them. Pass ``dist`` for a sharded model only: its shards differ, so the count is summed over ranks
    and every rank takes the same decision (unsharded ranks hold identical weights and need no collective)."""
    from torch.distributed.tensor import DTensor

    local = [p.to_local().detach() if isinstance(p, DTensor) else p.detach() for p in params]
    # One foreach kernel for all of them: a tensor's L2 norm is finite when every entry is (NaN and inf propagate);
    # a non-finite norm may also be an overflow of finite weights (|w| > ~1e19), so those few are checked entry
    # by entry. About five times cheaper than an isfinite pass per tensor on the tiny model.
    local = [t for t in local if t.numel()]  # an empty shard holds nothing non-finite
    norms = torch.stack(torch._foreach_norm(local)) if local else torch.zeros(0)
    suspects = (~torch.isfinite(norms)).nonzero().flatten().tolist()
    count = sum(int(not bool(torch.isfinite(local[i]).all())) for i in suspects)
    if dist is not None:
        count = int(dist.all_reduce_sum([float(count)])[0])
    return count


def _slices(n: int, size: int) -> list[slice]:
    return [slice(i, min(i + size, n)) for i in range(0, n, size)]


def _trim(rows: slice, batch: RolloutBatch) -> tuple[slice, slice]:
    """Column ranges that hold real tokens for these rows: (prompt columns, completion columns)."""
    p_used = batch.prompt_mask[rows].any(0).nonzero()
    c_used = batch.completion_mask[rows].any(0).nonzero()
    p_start = int(p_used[0]) if len(p_used) else batch.prompt_mask.shape[1] - 1
    c_end = int(c_used[-1]) + 1 if len(c_used) else 1
    return slice(p_start, None), slice(0, c_end)


@torch.no_grad()
def batch_logprobs(
    model: PreTrainedModel, batch: RolloutBatch, micro_batch_size: int, temperature: float
) -> Tensor:
    """Logprobs of the batch's completions under ``model`` (old-policy or reference), [N, T]."""
    return batch_logprobs_and_entropies(model, batch, micro_batch_size, temperature)[0]


@torch.no_grad()
def batch_logprobs_and_entropies(
    model: PreTrainedModel, batch: RolloutBatch, micro_batch_size: int, temperature: float
) -> tuple[Tensor, Tensor]:
    """(logprobs, entropies) [N, T] of the batch's completions under ``model``, 0 past each completion's end."""
    logprobs, entropies = torch.zeros_like(batch.logprobs), torch.zeros_like(batch.logprobs)
    with gathered(
        model
    ):  # a sharded model (trainer/distributed/fsdp.py): all-gathered once, not per micro-batch
        for rows in _slices(len(batch), micro_batch_size):
            pc, cc = _trim(rows, batch)
            logp, entropy = completion_logprobs(
                model,
                batch.prompt_ids[rows, pc],
                batch.prompt_mask[rows, pc],
                batch.completion_ids[rows, cc],
                batch.completion_mask[rows, cc],
                temperature,
            )
            logprobs[rows, cc], entropies[rows, cc] = logp, entropy
    return logprobs, entropies


# The built-in surrogates and normalisations under which a row adds nothing to the loss or its gradient when every
# one of its loss tokens has advantage 0: each surrogate is (ratio or clipped ratio) x advantage per token, and a
# row's ratio (token, sequence or segment) depends on that row alone; each normaliser divides by step-level counts
# that do not depend on which rows share a micro-batch (BNPO's per-micro-batch mean does, so it is not here). A
# method registered elsewhere is not assumed to behave so.
_ROW_SEPARABLE_LOSSES = frozenset({"token", "sequence", "segment"})
_ROW_SEPARABLE_AGGREGATIONS = frozenset({"grpo", "dr_grpo", "dapo"})


def rows_with_gradient(data: UpdateBatch, config: ExperimentConfig) -> Tensor | None:
    """The rows [K] the update must run through the model, in order; None: all of them.

    A silent row (every loss token's advantage exactly 0: a group whose completions all scored alike, with no
    token credit on top) contributes exactly zero to the loss and the gradient, so running it only costs a
    forward and a backward; GRPO batches carry many (``rollout/zero_std_frac``). Left out unless something else
    reads the row's forward: a KL term (``beta`` > 0), a normaliser or surrogate outside the built-in row-separable
    ones, or ``training.skip_silent_rows`` false. At least one row is kept, so every parameter still receives its
    (zero) gradient and the optimizer steps (momentum, weight decay) as it would have."""
    alg = config.algorithm
    if not config.training.skip_silent_rows or data.ref_logprobs is not None:
        return None
    if alg.importance_sampling_level.active().entry.name not in _ROW_SEPARABLE_LOSSES:
        return None
    if alg.loss_type.active().entry.name not in _ROW_SEPARABLE_AGGREGATIONS:
        return None
    live = ((data.advantages != 0) & (data.loss_mask != 0)).any(-1)  # [N]; a NaN advantage counts as live
    if bool(live.all()):
        return None
    if not bool(live.any()):
        batch = data.rollouts
        return (batch.prompt_mask.sum(-1) + batch.completion_mask.sum(-1)).argmin().reshape(1)
    return live.nonzero().flatten()


def _importance(batch: RolloutBatch, policy_logprobs: Tensor, cap: float | None) -> ImportanceWeights | None:
    """The importance weights of a batch the update rescored (``UpdateBatch.rescore_cap``), with their metrics."""
    if cap is None or batch.sampler_logprobs is None:
        return None
    mask = batch.completion_mask
    return importance_weights(
        policy_logprobs * mask.to(policy_logprobs.dtype), batch.sampler_logprobs, mask, cap
    )


def _idle_passes(model: PreTrainedModel, batch: RolloutBatch, count: int) -> None:
    """``count`` forward/backward passes whose loss is exactly 0, so every rank of a sharded model runs as many
    micro-batches as the busiest one: FSDP all-gathers weights and reduce-scatters gradients in each pass, so
    ranks with fewer rows (groups of different sizes: early abandonment, SARA, VIGOR, dynamic sampling) would
    otherwise wait forever for the others. The passes add zero gradient and are not counted as micro-batches."""
    if count <= 0:
        return
    device = next(model.parameters()).device
    if len(batch):
        prompt, completion = batch.prompt_ids[:1, -1:], batch.completion_ids[:1, :1]
    else:  # a rank with no rows this step still takes part in every collective
        prompt = completion = torch.zeros((1, 1), dtype=torch.long, device=device)
    ones = torch.ones_like(prompt), torch.ones_like(completion)
    for _ in range(count):
        logp, _ = completion_logprobs(model, prompt, ones[0], completion, ones[1], 1.0)
        (logp.sum() * 0.0).backward()


def policy_update(
    model: PreTrainedModel,
    optimizer: torch.optim.Optimizer,
    data: UpdateBatch,
    config: ExperimentConfig,
    dist: DistContext | None = None,
    micro_batch_size: int | None = None,
) -> UpdateStats:
    """Accumulate gradients over micro-batches, clip, and take one optimizer step.

    In a data-parallel rank (``dist``) the step's counts (sequences, loss tokens, micro-batches) are summed
    over ranks, so every normaliser is global, and the accumulated gradients are summed over ranks before
    clipping: the update equals the 1-process update on the global batch. The token means in the returned
    stats are then this rank's share of the global mean (trainer/distributed/context.py sums them).

    ``micro_batch_size`` overrides ``training.micro_batch_size`` (the memory plan's choice, trainer/models/memory.py).
    """
    alg, batch = config.algorithm, data.rollouts
    loss_fn, _ = the_hook("policy_loss", alg.importance_sampling_level.active())  # hooks without params
    aggregate, _ = the_hook("aggregation", alg.loss_type.active())
    kl_fn, _ = the_hook("regularizer", alg.kl_estimator.active())
    size = micro_batch_size or config.training.micro_batch_size
    sequences, loss_tokens = len(batch), int(data.loss_mask.sum())
    micro_batches = len(_slices(sequences, size))
    if dist is not None:
        sequences, loss_tokens, micro_batches = (
            int(x) for x in dist.all_reduce_sum([float(sequences), float(loss_tokens), float(micro_batches)])
        )
    ctx = AggregationContext(
        sequences_in_step=sequences,
        tokens_in_step=loss_tokens,
        max_completion_length=config.rollout.max_completion_length,
        num_micro_batches=micro_batches,
    )
    tokens = max(loss_tokens, 1)
    sums = {"loss": 0.0, "pg_loss": 0.0, "kl": 0.0, "entropy": 0.0, "clipped": 0.0, "dual_clipped": 0.0}
    new_logprobs, new_entropies = torch.zeros_like(batch.logprobs), torch.zeros_like(batch.entropies)
    kept = rows_with_gradient(data, config)
    work = data if kept is None else data.take(kept)
    cap, temperature = data.rescore_cap, config.rollout.temperature
    if kept is not None:
        # The rows left out: their logprobs and entropies under this policy are the batch's own (sampled by it, or
        # rescored by it: trainer/step/policy_scoring.py), or scored here when the rescoring was left to the update
        # (before the optimizer moves the weights); a zero-advantage token is never clipped.
        silent = torch.ones(len(batch), dtype=torch.bool, device=kept.device)
        silent[kept] = False
        if cap is None:
            new_logprobs[silent], new_entropies[silent] = batch.logprobs[silent], batch.entropies[silent]
        else:
            new_logprobs[silent], new_entropies[silent] = batch_logprobs_and_entropies(
                model, batch.take(silent.nonzero().flatten()), size, temperature
            )
        sums["entropy"] += float((new_entropies[silent] * data.loss_mask[silent]).sum())
    slices = _slices(len(work.rollouts), size)
    # A sharded model exchanges weights and gradients in every micro-batch: a rank with fewer micro-batches than
    # the busiest one runs idle passes after its own (counted here, before any of them, so that every rank makes
    # the same collectives in the same order).
    idle = max(dist.all_gather(len(slices))) - len(slices) if dist is not None and is_sharded(model) else 0
    optimizer.zero_grad(set_to_none=True)
    forward_s = backward_s = 0.0
    rollouts = work.rollouts
    for rows in slices:
        t0 = time.perf_counter()
        pc, cc = _trim(rows, rollouts)
        mask = work.loss_mask[rows, cc].float()  # [n, t]
        logp, entropy = completion_logprobs(
            model,
            rollouts.prompt_ids[rows, pc],
            rollouts.prompt_mask[rows, pc],
            rollouts.completion_ids[rows, cc],
            rollouts.completion_mask[rows, cc],
            temperature,
        )  # [n, t]
        old = logp.detach() if work.old_logprobs is None else work.old_logprobs[rows, cc]
        extras = work.extras.select(rows, cc) if work.extras is not None else None
        advantages = work.advantages[rows, cc]
        if cap is not None and rollouts.sampler_logprobs is not None:  # the rescoring, from this forward
            sampler = rollouts.sampler_logprobs[rows, cc]
            weights = truncated_weights(logp.detach(), sampler, rollouts.completion_mask[rows, cc], cap)
            advantages = advantages * weights.to(advantages.dtype)
        out = loss_fn(logp, old, advantages, mask, alg, extras)
        pg_loss = aggregate(out.per_token_loss, mask, ctx)
        loss = pg_loss
        if work.ref_logprobs is not None:
            kl = kl_fn(logp, work.ref_logprobs[rows, cc])  # [n, t]
            # Aggregation is linear, so this equals aggregating (per-token loss + beta * kl) as TRL does.
            loss = pg_loss + alg.beta * aggregate(kl, mask, ctx)
            sums["kl"] += float((kl.detach() * mask).sum())
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        forward_s, backward_s = forward_s + t1 - t0, backward_s + t2 - t1
        sums["loss"] += float(loss.detach())
        sums["pg_loss"] += float(pg_loss.detach())
        sums["entropy"] += float((entropy.detach() * mask).sum())
        sums["clipped"] += float((out.clipped.float() * mask).sum())
        if out.dual_clipped is not None:
            sums["dual_clipped"] += float((out.dual_clipped.float() * mask).sum())
        dest = rows if kept is None else kept[rows]
        new_logprobs[dest, cc], new_entropies[dest, cc] = logp.detach(), entropy.detach()
    if idle:
        _idle_passes(model, batch, idle)
    t3 = time.perf_counter()
    max_norm = config.training.max_grad_norm
    # DDP semantics: sum the ranks' gradients (their losses are shares of the global loss). A sharded model
    # (trainer/distributed/fsdp.py) summed them in its backward already, and the norm of its gradients is a DTensor.
    trainable = [p for p in model.parameters() if p.requires_grad]  # one walk of the modules (~0.3 ms each)
    if dist is not None and not is_sharded(model):
        dist.all_reduce_grads(trainable)
    params = [p for p in trainable if p.grad is not None]
    grad_norm = full_tensor(
        torch.nn.utils.clip_grad_norm_(params, max_norm if max_norm > 0 else float("inf"))
    )
    total_norm = float(grad_norm)
    # The norm is global (gradients were summed over ranks), so every rank stops here together; the loss
    # is this rank's share, so it is only checked in a single process (a NaN loss gives a NaN norm anyway).
    if not math.isfinite(total_norm) or (dist is None and not math.isfinite(sums["loss"])):
        optimizer.zero_grad(set_to_none=True)
        total_loss = sums["loss"]
        raise NonFiniteUpdate(
            f"the loss became {total_loss:g}"
            if not math.isfinite(total_loss)
            else f"the gradient norm became {total_norm:g}",
            total_norm,
        )
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    broken = _non_finite_parameters(trainable, dist if is_sharded(model) else None)
    if broken:
        raise NonFiniteUpdate(
            f"the optimizer step made {broken} weight tensor(s) NaN or infinite", total_norm
        )
    return UpdateStats(
        loss=sums["loss"],
        pg_loss=sums["pg_loss"],
        kl=sums["kl"] / tokens,
        entropy=sums["entropy"] / tokens,
        clip_frac=sums["clipped"] / tokens,
        grad_norm=total_norm,
        logprobs=new_logprobs,
        dual_clip_frac=sums["dual_clipped"] / tokens,
        silent_rows=0 if kept is None else len(batch) - len(kept),
        entropies=new_entropies,
        importance=_importance(batch, new_logprobs, cap),
        forward_s=forward_s,
        backward_s=backward_s,
        optimizer_s=time.perf_counter() - t3,
    )
