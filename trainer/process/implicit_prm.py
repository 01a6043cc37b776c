"""The ``implicit`` step scorer: PRIME's implicit process reward model, trained online on outcome labels.

PRIME (Cui et al. 2025, "Process Reinforcement through Implicit Rewards") takes the implicit PRM of Yuan et al.
2024 ("Free Process Rewards without Process Labels"): a causal LM pi_phi, trained only on outcome labels, read
against a frozen reference pi_ref gives every token a reward

    r_t = beta * (log pi_phi(y_t | y_<t) - log pi_ref(y_t | y_<t)),

and the completion's sum of them is the outcome reward the PRM was trained to predict (its sigmoid, through a
cross-entropy loss against the verifier's verdict). Here both start from the run's policy start weights (or
``model``; pi_ref is whichever start point pi_phi had), and each training step:

1. scores: a step's score is ``sigmoid(beta * sum of log-ratios over the step's tokens)``, in [0, 1], 0.5 when
   the two models agree (neutral). The raw step reward ``beta * sum`` goes into the detail
   (``implicit_rewards``) and its mean into ``process/implicit_reward_mean``;
2. updates pi_phi (``updates_per_step`` optimizer steps, AdamW, micro-batched) with the cross-entropy between
   ``sigmoid(beta * sum of log-ratios over the whole completion)`` and the primary verifier's ``correct``,
   reporting the loss and the outcome accuracy of the sum's sign before the update (``process/implicit_loss``,
   ``process/implicit_acc``; a sum of exactly 0 predicts "wrong"). The scores come from the PRM before this update, so a step's own labels do not
   leak into its process scores.

How ours differs from PRIME: PRIME uses the token rewards r_t themselves (discounted returns of r_t added to the
outcome's leave-one-out advantage); here they are summed per step and squashed to [0, 1] so that they plug into
the step-credit methods like every other scorer (trainer/methods/step_credit.py), which then normalise them
within the group. PRIME's accuracy filter on prompts is left to the sampler's dynamic sampling. Both models run
without dropout (``eval()``), so the score is a deterministic function of the weights.

In a data-parallel run every rank holds a full PRM: the loss is normalised by the global completion count and
the gradients are summed over ranks (the run's ``DistContext``) before clipping, so every rank takes the same
step as one process would on the whole batch, and rank 0's copy is the one saved. The PRM's weights and
optimizer state are saved with every checkpoint (``implicit_prm/`` in the step folder; ``TrainerState
.scorer_state``), so a resumed run continues the same PRM. torch and transformers load inside the functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from trainer.bounds import BoundedModel
from trainer.errors import CheckpointError, ConfigError, TrainingDiverged
from trainer.process.base import ScorerContext, StepScoreBatch

if TYPE_CHECKING:
    import torch

    from trainer.process.steps import StepSpans
    from trainer.samples import Sample

CHECKPOINT_FOLDER = "implicit_prm"  # the PRM's weights inside a checkpoint's step folder


class ImplicitPRMParams(BoundedModel):
    beta: float = Field(
        0.05,
        gt=0.0,
        le=10.0,
        description="The scale of the log-ratio (PRIME's beta, 0.05): a step scores sigmoid(beta * sum of "
        "log pi_phi - log pi_ref over its tokens).",
    )
    lr: float = Field(
        1e-4,
        gt=0.0,
        le=1e-2,
        description="The implicit PRM's AdamW learning rate. PRIME uses 1e-6 for 7B models (twice its policy's); "
        "1e-4 suits the tiny models (the tiny runs' policy rate): on tiny:chain-teacher 1e-5 leaves the PRM "
        "at its start for 8 steps, 1e-3 fits and overshoots within them.",
    )
    updates_per_step: int = Field(
        1,
        ge=0,
        le=16,
        description="Optimizer steps of the PRM on each training step's outcome labels (0: a frozen PRM).",
    )
    max_grad_norm: float = Field(
        1.0, gt=0.0, le=1000.0, description="The PRM's gradient norm is clipped to this."
    )
    micro_batch_size: int | None = Field(
        None, ge=1, le=4096, description="Completions per PRM forward; null: the run's micro-batch size."
    )
    model: str | None = Field(
        None,
        min_length=1,
        max_length=1000,
        description="Where pi_phi and pi_ref start: null: the policy's start weights; else a local model folder "
        "(in the web app also checkpoint:<id> of the project) or a built-in 'tiny:' name, with the policy's "
        "tokenizer. Nothing is downloaded.",
    )


@dataclass
class ImplicitPRMState:
    """The implicit PRM between steps: pi_phi, the frozen pi_ref, pi_phi's optimizer and the updates taken."""

    model: Any  # PreTrainedModel, trained
    ref: Any  # PreTrainedModel, frozen (the run's own KL reference when it starts from the same weights)
    optimizer: Any  # torch.optim.AdamW over model's parameters
    dist: Any = None  # the run's DistContext (trainer/distributed/context.py) in a data-parallel run
    updates: int = 0

    def checkpoint_state(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict(), "updates": self.updates}

    def checkpoint_models(self) -> dict[str, Any]:
        return {CHECKPOINT_FOLDER: self.model}

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device  # type: ignore[no-any-return]


def build_implicit_prm(
    params: ImplicitPRMParams,
    base_model_path: str,
    dtype: torch.dtype,
    device: torch.device,
    tokenizer: Any,
    ref_model: Any = None,
    dist: Any = None,
    resume_dir: Path | None = None,
    saved: dict[str, Any] | None = None,
) -> ImplicitPRMState:
    """pi_phi from ``params.model`` (else the policy's start ``base_model_path``), or from a checkpoint's
    ``implicit_prm/`` folder with its optimizer state ``saved`` when resuming; pi_ref is ``ref_model`` (the run's
    frozen reference, passed only when it holds the policy's start weights whole) or a frozen copy of the start."""
    import torch

    from trainer.models.tiny_model import resolve_model_path

    start = str(Path(resolve_model_path(params.model)).resolve()) if params.model else base_model_path
    if not (Path(start) / "config.json").is_file():
        raise ConfigError(
            f"the implicit PRM's start {start!r} (process_reward.scorer.params.model) is not a model folder (no "
            "config.json): name a local causal LM folder, a 'tiny:' model, or leave it null for the policy's weights"
        )
    if resume_dir is not None and saved is None:
        raise CheckpointError(
            f"the checkpoint {resume_dir} holds no implicit PRM state: resume it with the scorer it was saved with"
        )
    weights = resume_dir / CHECKPOINT_FOLDER if resume_dir is not None else Path(start)
    model = _load_whole(weights, dtype)
    model.to(device).eval().requires_grad_(True)  # no dropout: a score is a function of the weights
    if params.model is not None or ref_model is None:
        ref_model = _load_whole(Path(start), dtype)
        ref_model.to(device)
    ref_model.eval().requires_grad_(False)
    _check_vocab(model, tokenizer)
    optimizer = torch.optim.AdamW(model.parameters(), lr=params.lr, weight_decay=0.0)
    state = ImplicitPRMState(model, ref_model, optimizer, dist)
    if saved is not None:
        optimizer.load_state_dict(saved["optimizer"])
        state.updates = int(saved["updates"])
    return state


def _load_whole(path: Path, dtype: torch.dtype) -> Any:
    """A causal LM with every weight its own: a LoRA adapter folder (a run's checkpoint) is merged into its base,
    so the whole PRM trains and is saved whole."""
    from trainer.models.lora import is_lora_model, load_causal_lm

    model: Any = load_causal_lm(path, dtype)
    return model.merge_and_unload() if is_lora_model(model) else model


def _check_vocab(model: Any, tokenizer: Any) -> None:
    """The PRM reads the policy's tokens: refuse a start model whose vocabulary cannot hold them."""
    vocab = int(model.get_input_embeddings().num_embeddings)
    if len(tokenizer) > vocab:
        raise ConfigError(
            f"process_reward.scorer.params.model has {vocab} token embeddings but the policy's tokenizer has "
            f"{len(tokenizer)} tokens: start the implicit PRM from a model with the policy's tokenizer (or null)"
        )


@dataclass(frozen=True)
class _Rows:
    """Completions as tensors: left-padded prompts, right-padded completions."""

    prompt_ids: torch.Tensor  # [N, Lp]
    prompt_mask: torch.Tensor  # [N, Lp]
    completion_ids: torch.Tensor  # [N, T]
    completion_mask: torch.Tensor  # [N, T]


def _rows(
    prompts: Sequence[Sequence[int]], completions: Sequence[Sequence[int]], pad: int, device: torch.device
) -> _Rows:
    import torch

    n = len(completions)
    lp, t = (
        max(max((len(p) for p in prompts), default=1), 1),
        max(max((len(c) for c in completions), default=1), 1),
    )
    p_ids, p_mask = torch.full((n, lp), pad, dtype=torch.long), torch.zeros((n, lp), dtype=torch.long)
    c_ids, c_mask = torch.full((n, t), pad, dtype=torch.long), torch.zeros((n, t), dtype=torch.long)
    for i, (p, c) in enumerate(zip(prompts, completions, strict=True)):
        if p:
            p_ids[i, lp - len(p) :], p_mask[i, lp - len(p) :] = torch.tensor(list(p)), 1
        if c:
            c_ids[i, : len(c)], c_mask[i, : len(c)] = torch.tensor(list(c)), 1
    return _Rows(p_ids.to(device), p_mask.to(device), c_ids.to(device), c_mask.to(device))


def _logprobs(model: Any, rows: _Rows, sl: slice) -> torch.Tensor:
    """[n, T] log pi(y_t | y_<t) at temperature 1 for rows ``sl`` (0 past each completion's end)."""
    from trainer.models.logprobs import completion_logprobs

    mask = rows.completion_mask[sl]
    logp, _ = completion_logprobs(
        model, rows.prompt_ids[sl], rows.prompt_mask[sl], rows.completion_ids[sl], mask, 1.0
    )
    return logp * mask  # [n, T]


def log_ratios(
    state: ImplicitPRMState, rows: _Rows, micro_batch_size: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """(log pi_phi - log pi_ref [N, T], log pi_ref [N, T]), without gradients."""
    import torch

    n = rows.completion_ids.shape[0]
    ratio = torch.zeros(rows.completion_ids.shape, dtype=torch.float32, device=state.device)
    ref = torch.zeros_like(ratio)
    with torch.no_grad():
        for start in range(0, n, micro_batch_size):
            sl = slice(start, min(start + micro_batch_size, n))
            ref[sl] = _logprobs(state.ref, rows, sl)
            ratio[sl] = _logprobs(state.model, rows, sl) - ref[sl]
    return ratio, ref


def update_prm(
    state: ImplicitPRMState,
    rows: _Rows,
    ref_logprobs: torch.Tensor,
    labels: torch.Tensor,
    kept: torch.Tensor,
    params: ImplicitPRMParams,
    micro_batch_size: int,
) -> float:
    """One optimizer step of pi_phi: binary cross-entropy between sigmoid(beta * sum_t log-ratio) and ``labels``
    [N] (1.0 right), the mean over the step's ``kept`` [N] completions (over every rank's, in a data-parallel run).
    Returns the loss (this rank's mean)."""
    import torch

    n, count = rows.completion_ids.shape[0], float(kept.sum())
    total = count if state.dist is None else state.dist.all_reduce_sum([count])[0]
    state.optimizer.zero_grad(set_to_none=True)
    loss_sum = 0.0
    for start in range(0, n, micro_batch_size):
        sl = slice(start, min(start + micro_batch_size, n))
        reward = params.beta * (_logprobs(state.model, rows, sl) - ref_logprobs[sl]).sum(-1)  # [n]
        bce = torch.nn.functional.binary_cross_entropy_with_logits(
            reward, labels[sl], reduction="none"
        )  # [n]
        loss = (bce * kept[sl]).sum()
        (loss / max(total, 1.0)).backward()
        loss_sum += float(loss.detach())
    trainable = [p for p in state.model.parameters() if p.requires_grad]
    if state.dist is not None:
        state.dist.all_reduce_grads(trainable)
    norm = float(torch.nn.utils.clip_grad_norm_(trainable, params.max_grad_norm))
    if not math.isfinite(norm):
        state.optimizer.zero_grad(set_to_none=True)
        raise TrainingDiverged(
            f"the implicit PRM's gradient norm is {norm} (update {state.updates + 1}): lower "
            "process_reward.scorer.params.lr or beta"
        )
    state.optimizer.step()
    state.optimizer.zero_grad(set_to_none=True)
    state.updates += 1
    return loss_sum / count if count else math.nan


def _sigmoid(x: float) -> float:
    """Without overflow for a long completion's large |beta * sum|."""
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def implicit_scores(
    completions: Sequence[str],
    samples: Sequence[Sample],
    spans: StepSpans,
    token_ids: Sequence[Sequence[int]],
    context: ScorerContext,
) -> StepScoreBatch:
    """The ``implicit`` scorer (see the module docstring): score every step, then update the PRM on the outcome
    labels of the completions not dropped for an absent reward (``context.dropped``)."""
    import torch

    params: ImplicitPRMParams = context.params
    state = context.state
    if not isinstance(state, ImplicitPRMState):
        raise ValueError(
            "the implicit step scorer needs the run's implicit PRM (built by the run setup): it trains with the "
            "policy, so it scores in a training run's process_reward, not in a standalone evaluation"
        )
    prompts = context.prompt_ids
    if prompts is None:
        prompts = [context.tokenizer(p, add_special_tokens=False)["input_ids"] for p in context.prompts]
    mb = params.micro_batch_size or context.micro_batch_size
    pad = context.tokenizer.pad_token_id if context.tokenizer.pad_token_id is not None else 0
    rows = _rows(prompts, token_ids, pad, state.device)
    ratio, ref = log_ratios(state, rows, mb)  # [N, T] each
    cum = torch.nn.functional.pad(ratio.double().cumsum(-1), (1, 0)).cpu()  # [N, T + 1]: prefix sums
    raw = [[params.beta * float(cum[i, e] - cum[i, s]) for s, e in row] for i, row in enumerate(spans)]
    every = [r for row in raw for r in row]
    metrics = {"process/implicit_reward_mean": sum(every) / len(every) if every else math.nan}
    if params.updates_per_step and context.correct is not None:
        labels = torch.tensor([1.0 if c else 0.0 for c in context.correct], device=state.device)  # [N]
        dropped = context.dropped or [False] * len(labels)
        kept = torch.tensor([0.0 if d else 1.0 for d in dropped], device=state.device)  # [N]
        right = ((params.beta * ratio.sum(-1) > 0).float() == labels).float()  # [N] the sign's verdict
        metrics["process/implicit_acc"] = float((right * kept).sum() / kept.sum()) if kept.any() else math.nan
        losses = [
            update_prm(state, rows, ref, labels, kept, params, mb) for _ in range(params.updates_per_step)
        ]
        metrics["process/implicit_loss"] = losses[0]
    scores = [[_sigmoid(r) for r in row] for row in raw]
    return StepScoreBatch(scores, [{"implicit_rewards": row} for row in raw], metrics)
