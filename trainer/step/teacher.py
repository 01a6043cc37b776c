"""Teacher signals: a teacher scores the student's sampled tokens (OPD / OPSD; METHODS.md section 5).

``load_teacher`` builds what ``teacher.mode`` asks for: an external model that must share the policy's
tokenizer (on-policy distillation, shared/seeds 001:L83, 001:L33), or the policy itself, shown a
privileged prompt that contains the reference answer (on-policy self-distillation, 001:L65, 001:L115).
``teacher_signals`` runs it once per step, without gradients and in micro-batches, over the completions
the student sampled, and returns per-token teacher logprobs of the sampled tokens, the full-vocabulary
teacher entropy and the teacher-minus-student gap ``log pi_T(y_t) - log pi_old(y_t)``: the per-token
reverse-KL estimate OPD uses as its advantage. Fusion with the verifier is in trainer/methods/fusion.py.

Both distributions are taken at the rollout temperature, so a teacher identical to the student gives a
gap of exactly 0 (the student's logprobs are the sampling-time ones, also temperature-scaled).

The signals are per token, so a data-parallel process scores only its own share's completions (each holds the
external teacher whole; under ``training.fsdp`` OPSD's teacher is the sharded policy, all-gathered once per
scoring pass).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import Tensor
from transformers import AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from trainer.config import ExperimentConfig
from trainer.data import render_prompt
from trainer.distributed.fsdp import gathered
from trainer.errors import ConfigError, DataError
from trainer.methods.token_credit import CreditInputs
from trainer.models.device import resolve_dtype
from trainer.models.logprobs import completion_logprobs
from trainer.rollout import RolloutBatch
from trainer.samples import Sample

if TYPE_CHECKING:
    from trainer.models.tiny_model import BuildCallback


@dataclass
class Teacher:
    """A loaded teacher. For mode 'self' ``model`` is the live policy (no copy)."""

    mode: str  # "external" | "self"
    model: PreTrainedModel
    path: str | None  # the external teacher's directory


@dataclass
class TeacherSignals:
    """One step's teacher scores, aligned with the rollout batch; 0 on padding."""

    logprob: Tensor  # [N, T] log pi_teacher of the sampled tokens
    entropy: Tensor  # [N, T] full-vocabulary teacher entropy (nats)
    gap: Tensor  # [N, T] teacher logprob - student (sampling-time) logprob
    mask: Tensor  # [N, T] completion tokens
    vocab_size: int  # teacher distribution size V (entropy <= log V)


def check_same_tokenizer(
    student: PreTrainedTokenizerBase, teacher: PreTrainedTokenizerBase, teacher_path: str
) -> None:
    """Raise ConfigError unless both tokenizers map every token string to the same id."""
    s_vocab, t_vocab = student.get_vocab(), teacher.get_vocab()
    if s_vocab == t_vocab:
        return
    differing = sorted(
        {tok for tok in s_vocab.keys() | t_vocab.keys() if s_vocab.get(tok) != t_vocab.get(tok)}
    )
    examples = ", ".join(repr(tok) for tok in differing[:5])
    raise ConfigError(
        f"teacher {teacher_path!r} does not share the policy's tokenizer ({len(s_vocab)} vs {len(t_vocab)} "
        f"tokens; {len(differing)} differ, e.g. {examples}). OPD scores the student's token ids under the "
        "teacher, so both need one tokenizer: pick a teacher from the policy's model family (or "
        "'tiny:addition-teacher' for the tiny policy), or use teacher.mode 'self' (OPSD)"
    )


def load_teacher(
    config: ExperimentConfig,
    policy: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    device: torch.device,
    on_build: BuildCallback | None = None,
) -> Teacher | None:
    """The teacher ``config.teacher`` describes, on ``device`` and frozen; None when there is none.
    A built-in teacher built on first use reports each warm-start step to ``on_build``."""
    t = config.teacher
    if not t.enabled:
        return None
    if t.mode == "self":
        return Teacher(mode="self", model=policy, path=None)
    from trainer.models.lora import load_causal_lm
    from trainer.models.tiny_model import resolve_model_path

    assert t.name_or_path is not None  # TeacherConfig.enabled
    try:
        path = resolve_model_path(
            t.name_or_path, on_progress=on_build
        )  # 'tiny:addition-teacher' is built on first use
    except ValueError as err:  # an unknown 'tiny:' name
        raise ConfigError(f"teacher.name_or_path: {err}") from None
    if not Path(path).exists():
        raise ConfigError(
            f"teacher.name_or_path {path!r} does not exist: give a local Hugging Face model directory "
            "(nothing is downloaded) or 'tiny:addition-teacher' (built by `rlvr init-model --teacher`)"
        )
    try:
        teacher_tokenizer = AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as err:
        raise ConfigError(
            f"teacher {path!r} has no loadable tokenizer ({err}); OPD needs it to check the vocabulary"
        ) from None
    check_same_tokenizer(tokenizer, teacher_tokenizer, path)
    try:
        model = load_causal_lm(path, resolve_dtype(config.model.dtype))
    except (OSError, ValueError) as err:
        raise ConfigError(f"could not load the teacher causal LM from {path!r}: {err}") from None
    if model.get_output_embeddings() is not None and model.get_output_embeddings().weight.shape[0] < len(
        tokenizer
    ):  # type: ignore[union-attr]
        raise ConfigError(f"teacher {path!r} has fewer output logits than the policy's tokenizer has tokens")
    model.to(device)  # type: ignore[arg-type]  # transformers stubs type .to oddly; modules move in place
    model.eval().requires_grad_(False)
    return Teacher(mode="external", model=model, path=path)


def privileged_prompts(
    samples: Sequence[Sample], cfg: ExperimentConfig, tokenizer: PreTrainedTokenizerBase
) -> list[str]:
    """OPSD: each sample's problem rewritten by ``teacher.privileged_template`` (with its reference answer),
    then rendered exactly like a student prompt (prompt template or chat template)."""
    template = cfg.teacher.privileged_template
    prompts = []
    for sample in samples:
        if sample.answer is None:
            raise DataError(
                f"prompt {sample.id!r} has no reference answer, which OPSD's privileged teacher needs: set "
                "data.answer_field or use an external teacher (teacher.mode 'external')"
            )
        privileged = replace(sample, prompt=template.format(prompt=sample.prompt, answer=sample.answer))
        prompts.append(render_prompt(privileged, cfg.data, tokenizer))
    return prompts


def needs_teacher(cfg: ExperimentConfig, step: int) -> bool:
    """Whether ``step`` scores with the teacher: when a chosen method reads its signals at this step, or when no
    method reads them at all (fusion 'none': the signals are recorded for the dashboard); OPD-then-RL stops
    scoring after its switch."""
    if not cfg.teacher.enabled:
        return False
    readers = [m for m in cfg.methods() if m.has_hook("needs_teacher")]
    return not readers or any(m.needs_teacher(step) for m in readers)


@torch.no_grad()
def score_completions(
    model: PreTrainedModel,
    prompt_ids: Tensor,
    prompt_mask: Tensor,
    batch: RolloutBatch,
    micro_batch_size: int,
    temperature: float,
) -> tuple[Tensor, Tensor]:
    """(logprob [N, T], entropy [N, T]) of the batch's completions after the given left-padded prompts,
    ``micro_batch_size`` rows per forward pass, each trimmed to its real prompt and completion columns."""
    logprob = torch.zeros_like(batch.logprobs)
    entropy = torch.zeros_like(batch.logprobs)
    was_training = model.training
    model.eval()
    # OPSD under training.fsdp scores with the sharded policy: all-gathered once for all micro-batches, so
    # processes need not pair up forward by forward (a no-op for an unsharded model).
    try:
        with gathered(model):
            for start in range(0, len(batch), micro_batch_size):
                rows = slice(start, min(start + micro_batch_size, len(batch)))
                p_used = prompt_mask[rows].any(0).nonzero()
                c_used = batch.completion_mask[rows].any(0).nonzero()
                pc = slice(int(p_used[0]) if len(p_used) else prompt_mask.shape[1] - 1, None)
                cc = slice(0, int(c_used[-1]) + 1 if len(c_used) else 1)
                lp, ent = completion_logprobs(
                    model,
                    prompt_ids[rows, pc],
                    prompt_mask[rows, pc],
                    batch.completion_ids[rows, cc],
                    batch.completion_mask[rows, cc],
                    temperature,
                )  # [n, t]
                logprob[rows, cc] = lp.to(logprob.dtype)
                entropy[rows, cc] = ent.to(entropy.dtype)
    finally:
        model.train(was_training)
    mask = batch.completion_mask.to(logprob.dtype)
    return logprob * mask, entropy * mask


def teacher_signals(
    teacher: Teacher | None,
    cfg: ExperimentConfig,
    step: int,
    batch: RolloutBatch,
    completion_samples: Sequence[Sample],
    tokenizer: PreTrainedTokenizerBase,
    micro_batch_size: int | None = None,
) -> TeacherSignals | None:
    """Score the step's completions under the teacher; None without a teacher or when the step needs none.

    ``completion_samples`` holds one sample per completion (row of ``batch``), for OPSD's privileged prompts.
    ``micro_batch_size`` overrides ``training.micro_batch_size`` (the memory plan's, trainer/models/memory.py).
    """
    if teacher is None or not needs_teacher(cfg, step):
        return None
    if teacher.mode == "self":
        enc = tokenizer(
            privileged_prompts(completion_samples, cfg, tokenizer),
            return_tensors="pt",
            padding=True,
            padding_side="left",
            add_special_tokens=False,
        )
        device = batch.completion_ids.device
        prompt_ids, prompt_mask = enc["input_ids"].to(device), enc["attention_mask"].to(device)  # [N, Lp']
    else:
        prompt_ids, prompt_mask = batch.prompt_ids, batch.prompt_mask
    logprob, entropy = score_completions(
        teacher.model,
        prompt_ids,
        prompt_mask,
        batch,
        micro_batch_size or cfg.training.micro_batch_size,
        cfg.rollout.temperature,
    )
    mask = batch.completion_mask.to(logprob.dtype)
    vocab = teacher.model.get_output_embeddings()
    return TeacherSignals(
        logprob=logprob,
        entropy=entropy,
        gap=(logprob - batch.logprobs) * mask,
        mask=mask,
        vocab_size=int(vocab.weight.shape[0]) if vocab is not None else len(tokenizer),  # type: ignore[union-attr]
    )


def credit_inputs(loss_mask: Tensor, batch: RolloutBatch, signals: TeacherSignals | None) -> CreditInputs:
    """What token credit sees (trainer/methods/token_credit.py), with the teacher fields when scored."""
    if signals is None:
        return CreditInputs(loss_mask, batch.entropies, batch.logprobs)
    return CreditInputs(
        loss_mask,
        batch.entropies,
        batch.logprobs,
        teacher_logprob=signals.logprob,
        teacher_entropy=signals.entropy,
        teacher_vocab_size=signals.vocab_size,
    )
