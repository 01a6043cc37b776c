"""Training a process reward model (PRM) from step-labelled completions.

A PRM scores every step of a solution (Lightman et al. 2023, "Let's Verify Step by Step"; Wang et al. 2024,
"Math-Shepherd: Verify and Reinforce LLMs Step-by-step without Human Annotations"). Ours is the ``prm`` step
scorer's token-classification kind (trainer/process/prm_head.py): ``AutoModelForTokenClassification`` with two
labels (0 = the step is wrong, 1 = it is right), read at each step's last token. The labels come from:

- the chain task's oracle (``oracle_labels``): rollouts of a policy segmented by a segmenter (``lines``) and
  labelled by the ``oracle_chain`` scorer (1 before the verifier's first wrong step, 0 from it on);
- Monte-Carlo values (``monte_carlo_labels``): the ``monte_carlo`` scorer's share of right continuations from each
  step's end, thresholded at ``label_threshold`` or kept soft (``soft_labels``), Math-Shepherd's hard and soft
  estimation;
- an uploaded step-labelled file (``file_labels``): Math-Shepherd's or PRM800K's format (trainer/process/
  step_labels.py).

Every source gives ``StepExample(prompt, steps, labels)``; a ``nan`` label is a step without a label (not trained,
not measured). The text is built exactly as the ``prm`` scorer builds it (``prm_head.encode_steps``: the prompt and
then each step, each tokenized alone, no special tokens, cut from the left at ``max_length``), so what is trained is
what is scored. The loss is the cross-entropy at each step's last token only (a soft label is the target
distribution (1 - y, y)); every other token carries no loss. As TRL's PRMTrainer trains the same kind of model,
with these differences: the steps are not joined by a separator token, the label sits on the step's last token
rather than on a separator after it, and held-out examples are split off by prompt (no prompt in both sets).

Measured on the held-out examples every ``eval_every`` steps and at the end, reported live to ``on_progress``: the
step accuracy (a step's score >= 0.5 against its label at ``label_threshold``), the first-error accuracy (the first
step scored below 0.5 is the first wrong step, or none when none is wrong: ProcessBench's reading), and, once, the
majority-class baseline (every held-out step given the training labels' commoner class: its step accuracy and
first-error accuracy). The loop is plain, the worker's cancel flag read through ``should_stop`` every step,
deterministic for a seed on a CPU, and the folder is written beside its place and renamed in with ``rlvr_prm.json``
(provenance), as trainer/rewards/bradley_terry.py does. The same code trains a larger PRM on a GPU (``device: auto``, ``bf16``, ``gradient_checkpointing``).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from transformers import (
    AutoModelForTokenClassification,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from trainer.errors import DataError, RLVRError
from trainer.models.device import autocast, resolve_device
from trainer.models.tiny_model import resolve_model_path
from trainer.process.monte_carlo import MonteCarloParams
from trainer.process.prm_config import PRMTrainingConfig
from trainer.process.prm_head import LoadedPRM, PRMParams, encode_steps, score_rows
from trainer.process.scorers import STEP_SCORERS, blamed_step, first_error_f1
from trainer.process.step_labels import LabelFormat, StepExample, read_step_labels
from trainer.process.steps import segment, token_texts
from trainer.samples import Sample

METADATA_FILE = "rlvr_prm.json"
POSITIVE_LABEL = 1  # the ``prm`` scorer's default positive_label
INPUT_FORMAT = (
    "the prompt, then each step, each tokenized alone with no special tokens; a step's score is label 1's "
    "probability at its last token; truncated from the left (trainer/process/prm_head.py encode_steps)"
)


@dataclass(frozen=True)
class PRMProgress:
    """What ``on_progress`` receives after each step (the accuracies on the steps that measured them)."""

    step: int
    total: int
    loss: float
    held_out_step_accuracy: float | None
    held_out_first_error_accuracy: float | None
    elapsed_s: float

    @property
    def eta_s(self) -> float | None:
        return None if self.step <= 0 else self.elapsed_s / self.step * max(0, self.total - self.step)


@dataclass(frozen=True)
class HeldOut:
    """Held-out measures of a PRM (None without held-out steps)."""

    step_accuracy: float | None
    first_error_accuracy: float | None
    first_error_f1: float | None
    steps: int


@dataclass(frozen=True)
class PRMTrainingResult:
    output_dir: str
    steps: int
    train_examples: int
    held_out_examples: int
    held_out_steps: int
    held_out_step_accuracy: float | None
    held_out_first_error_accuracy: float | None
    held_out_first_error_f1: float | None
    initial_held_out_step_accuracy: float | None
    majority_step_accuracy: float | None  # the training labels' commoner class given to every held-out step
    majority_first_error_accuracy: float | None  # ... and that constant scorer's first-error accuracy
    train_positive_share: float
    final_loss: float
    seconds: float
    data_hash: str
    source: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class PRMTrainingStopped(RLVRError):
    """``should_stop`` answered True: training stopped before its last step and nothing was saved."""


# --- labels ------------------------------------------------------------------------------------------------------


def file_labels(
    path: Path, fmt: LabelFormat, *, max_examples: int = 100_000, neutral: float = 1.0
) -> tuple[list[StepExample], dict[str, Any]]:
    """The examples of a Math-Shepherd or PRM800K file and its provenance (rows skipped, the first problem);
    DataError when no row is usable."""
    got = read_step_labels(path, fmt, max_examples=max_examples, neutral=neutral)
    if not got.examples:
        raise DataError(
            f"{path.name}: no {fmt} example could be read"
            + (f" ({got.skipped} rows skipped; first: {got.first_problem})" if got.skipped else "")
        )
    return got.examples, {
        "kind": "file", "file": path.name, "format": fmt, "neutral": neutral, "skipped": got.skipped,
        "first_problem": got.first_problem,
    }  # fmt: skip


@dataclass(frozen=True)
class Rollouts:
    """Sampled completions: their samples, their tokens (each cut to its length) and the policy's tokenizer."""

    samples: list[Sample]
    token_ids: list[list[int]]
    texts: list[str]
    tokenizer: Any
    generated_tokens: int


def sample_rollouts(
    engine: Any, problems: Sequence[Sample], k: int, *, max_new_tokens: int, temperature: float,
    generator: torch.Generator, chunk: int = 256,
) -> Rollouts:  # fmt: skip
    """``k`` samples of the engine's policy per problem, in batches of ``chunk`` completions."""
    from trainer.rollout.base import SamplingParams

    params = SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature, batch_size=chunk)
    samples, ids, texts, tokens = [], [], [], 0
    per = max(1, chunk // k)
    for start in range(0, len(problems), per):
        part = [s for s in problems[start : start + per] for _ in range(k)]
        batch = engine.generate([s.prompt for s in part], params, generator)
        lengths = batch.lengths.tolist()
        tokens += int(sum(lengths))
        samples += part
        ids += [batch.completion_ids[i, : int(n)].tolist() for i, n in enumerate(lengths)]
        texts += batch.texts
    return Rollouts(samples, ids, texts, engine.tokenizer, tokens)


def _examples(
    rollouts: Rollouts, spans: list[list[tuple[int, int]]], scores: list[list[float]]
) -> list[StepExample]:
    tts = token_texts(rollouts.token_ids, rollouts.tokenizer)
    out = []
    for sample, tt, row, labels in zip(rollouts.samples, tts, spans, scores, strict=True):
        if not row or all(math.isnan(v) for v in labels):
            continue
        out.append(StepExample(sample.prompt, ["".join(tt.pieces[s:e]) for s, e in row], list(labels)))
    return out


def oracle_labels(rollouts: Rollouts, segmenter: Any = None) -> list[StepExample]:
    """Each rollout cut into steps (``segmenter``: a spec with name and params; default ``lines``) and labelled by
    the ``oracle_chain`` scorer; a rollout the oracle cannot label (no reference scratchpad) is left out."""
    from trainer.process.base import ScorerContext

    spec = segmenter or _LINES
    spans = segment(rollouts.token_ids, rollouts.tokenizer, rollouts.texts, None, spec)
    scorer = STEP_SCORERS.get("oracle_chain")
    context = ScorerContext(
        params=scorer.Params(), tokenizer=rollouts.tokenizer, prompts=[s.prompt for s in rollouts.samples]
    )
    got = scorer.score(rollouts.texts, rollouts.samples, spans, rollouts.token_ids, context)
    return _examples(rollouts, spans, got.scores)


def monte_carlo_labels(
    rollouts: Rollouts, engine: Any, verifier: Any, params: MonteCarloParams, *, max_new_tokens: int,
    temperature: float, generator: torch.Generator, segmenter: Any = None, chunk: int = 64,
) -> tuple[list[StepExample], int]:  # fmt: skip
    """Each rollout's steps valued by the ``monte_carlo`` scorer (k continuations from each step's end through
    ``engine``, judged by ``verifier``; the last step is the rollout's own verdict), ``chunk`` rollouts per call;
    the values are kept as they are (the trainer thresholds them or keeps them soft). Also the tokens generated."""
    from trainer.process.base import ScorerContext
    from trainer.rollout.base import SamplingParams

    spec = segmenter or _LINES
    scorer = STEP_SCORERS.get("monte_carlo")
    sampling = SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature)
    examples: list[StepExample] = []
    tokens = 0
    for start in range(0, len(rollouts.samples), chunk):
        part = Rollouts(
            rollouts.samples[start : start + chunk], rollouts.token_ids[start : start + chunk],
            rollouts.texts[start : start + chunk], rollouts.tokenizer, 0,
        )  # fmt: skip
        spans = segment(part.token_ids, part.tokenizer, part.texts, None, spec)
        correct = [bool(r.correct) for r in verifier(part.texts, part.samples)]
        context = ScorerContext(
            params=params, tokenizer=part.tokenizer, prompts=[s.prompt for s in part.samples], engine=engine,
            sampling=sampling, generator=generator, verifier=verifier, correct=correct,
        )  # fmt: skip
        got = scorer.score(part.texts, part.samples, spans, part.token_ids, context)
        tokens += int(got.metrics.get("process/mc_tokens", 0.0))
        examples += _examples(part, spans, got.scores)
    return examples, tokens


class _Spec:
    name = "lines"
    params: dict[str, Any] = {}  # noqa: RUF012 (read only)


_LINES = _Spec()


# --- the model, the encoding and the loss ------------------------------------------------------------------------


def load_token_prm(
    path: str, device: torch.device | None = None
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A two-label token-classification model and its tokenizer from ``path`` (a causal LM gets a fresh head)."""
    from transformers.utils import logging

    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()  # "some weights were newly initialized": the head, as intended
    try:
        model = AutoModelForTokenClassification.from_pretrained(
            path, num_labels=2, id2label={0: "wrong", 1: "right"}, label2id={"wrong": 0, "right": 1}
        )
    finally:
        logging.set_verbosity(verbosity)
    model.config.pad_token_id = tokenizer.pad_token_id
    if device is not None:
        model.to(device)  # type: ignore[arg-type]
    return model, tokenizer


@dataclass(frozen=True)
class Encoded:
    ids: list[int]
    ends: list[int | None]  # per step: the position read (None: cut off)
    labels: list[float]  # per step, nan: no label


def encode_example(
    model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, example: StepExample, max_length: int
) -> Encoded:
    """The ids and step ends the ``prm`` scorer would read for ``example``."""
    prm = LoadedPRM(model, tokenizer, "token_classification", "")
    ids, ends = encode_steps(prm, example.prompt, example.steps, PRMParams(model="-", max_length=max_length))
    return Encoded(ids, ends, list(example.labels))


def step_targets(labels: Sequence[float], soft: bool, threshold: float) -> list[float]:
    """The training targets: soft labels as they are, else 1.0 at or above ``threshold`` and 0.0 below (nan stays)."""
    return [v if soft or math.isnan(v) else (1.0 if v >= threshold else 0.0) for v in labels]


def step_end_loss(
    logits: Tensor, ends: Sequence[Sequence[int | None]], targets: Sequence[Sequence[float]]
) -> tuple[Tensor, int]:
    """The summed cross-entropy at each labelled step's last token, and how many steps it sums over.

    ``logits`` [B, T, 2]; a step whose end is None (cut off) or whose target is nan carries no loss, nor does any
    other token. Target y is the distribution (1 - y, y) over (wrong, right).
    """
    rows, cols, ys = [], [], []
    for i, (row_ends, row_targets) in enumerate(zip(ends, targets, strict=True)):
        for e, y in zip(row_ends, row_targets, strict=True):
            if e is not None and not math.isnan(y):
                rows.append(i)
                cols.append(e)
                ys.append(y)
    if not ys:
        return logits.sum() * 0.0, 0
    picked = torch.log_softmax(logits[rows, cols].float(), dim=-1)  # [S, 2]
    target = torch.tensor(ys, dtype=picked.dtype, device=picked.device)  # [S]
    return -(target * picked[:, POSITIVE_LABEL] + (1 - target) * picked[:, 1 - POSITIVE_LABEL]).sum(), len(ys)


def _forward(model: PreTrainedModel, rows: Sequence[Encoded], pad: int, bf16: bool) -> Tensor:
    device = next(model.parameters()).device
    width = max(max(len(r.ids) for r in rows), 1)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, : len(r.ids)] = torch.tensor(r.ids, dtype=torch.long)
        mask[i, : len(r.ids)] = 1
    with autocast(device, bf16):
        return model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits  # type: ignore[no-any-return]


# --- measures ----------------------------------------------------------------------------------------------------


def predict_steps(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    encoded: Sequence[Encoded],
    micro_batch_size: int,
) -> list[list[float]]:
    """Each step's score as the ``prm`` scorer computes it (prm_head.score_rows; nan where the end is cut)."""
    was_training = model.training
    model.eval()
    prm = LoadedPRM(model, tokenizer, "token_classification", "")
    params = PRMParams(model="-", positive_label=POSITIVE_LABEL)
    out: list[list[float]] = []
    try:
        for start in range(0, len(encoded), micro_batch_size):
            chunk = encoded[start : start + micro_batch_size]
            out += score_rows(prm, [r.ids for r in chunk], [r.ends for r in chunk], params)
    finally:
        model.train(was_training)
    return out


def first_wrong(labels: Sequence[float], threshold: float) -> int | None:
    """The first labelled step below ``threshold``, or None."""
    return next((k for k, v in enumerate(labels) if not math.isnan(v) and v < threshold), None)


def held_out_measures(
    scores: Sequence[Sequence[float]], labels: Sequence[Sequence[float]], threshold: float
) -> HeldOut:
    """Step accuracy, first-error accuracy and ProcessBench-style first-error F1 of ``scores`` against ``labels``."""
    right = total = 0
    pairs: list[tuple[int | None, int | None]] = []
    for row_scores, row_labels in zip(scores, labels, strict=True):
        for s, y in zip(row_scores, row_labels, strict=True):
            if not (math.isnan(s) or math.isnan(y)):
                total += 1
                right += (s >= 0.5) == (y >= threshold)
        if any(not math.isnan(y) for y in row_labels):
            pairs.append((blamed_step(row_scores), first_wrong(row_labels, threshold)))
    return HeldOut(
        step_accuracy=right / total if total else None,
        first_error_accuracy=sum(p == o for p, o in pairs) / len(pairs) if pairs else None,
        first_error_f1=first_error_f1(pairs),
        steps=total,
    )


def split_by_prompt(
    examples: Sequence[StepExample], held_out_frac: float, seed: int
) -> tuple[list[StepExample], list[StepExample]]:
    """(train, held-out): the examples of a seeded ``held_out_frac`` share of the distinct prompts are held out,
    so no prompt is in both. With one prompt, or a share that rounds to none, nothing is held out."""
    prompts = sorted({e.prompt for e in examples})
    random.Random(f"split:{seed}").shuffle(prompts)
    n_held = min(len(prompts) - 1, math.ceil(held_out_frac * len(prompts))) if held_out_frac > 0 else 0
    held = set(prompts[: max(0, n_held)])
    return [e for e in examples if e.prompt not in held], [e for e in examples if e.prompt in held]


def examples_hash(examples: Sequence[StepExample]) -> str:
    """A sha256 of the examples (order included): the provenance of the data a PRM was trained on."""
    h = hashlib.sha256()
    for e in examples:
        h.update(json.dumps([e.prompt, e.steps, [None if math.isnan(v) else v for v in e.labels]]).encode())
    return h.hexdigest()


# --- training ----------------------------------------------------------------------------------------------------


def train_prm(
    config: PRMTrainingConfig,
    examples: Sequence[StepExample],
    on_progress: Callable[[PRMProgress], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    source: dict[str, Any] | None = None,
) -> PRMTrainingResult:
    """Fit a two-label token-classification head (and the body) on ``examples`` and save it to
    ``config.output_dir`` (a folder the ``prm`` scorer loads); deterministic for a seed on a CPU. ``source`` (where
    the labels came from) goes into the provenance file. Raises PRMTrainingStopped when ``should_stop`` says so,
    DataError without labelled training steps."""
    t0 = time.perf_counter()
    train, held = split_by_prompt(examples, config.held_out_frac, config.seed)
    device = resolve_device(config.device)
    torch.manual_seed(config.seed)  # the fresh head's initial weights
    model, tokenizer = load_token_prm(resolve_model_path(config.base_model), device)
    if config.gradient_checkpointing:
        model.gradient_checkpointing_enable()
    model.train()
    threshold = config.label_threshold
    enc_train = [
        e for e in (encode_example(model, tokenizer, x, config.max_length) for x in train) if _trainable(e)
    ]
    if not enc_train:
        raise DataError(
            "no labelled training step is left after holding some out: add examples or lower held_out_frac"
        )
    enc_held = [encode_example(model, tokenizer, x, config.max_length) for x in held]
    held_labels = [e.labels for e in enc_held]
    train_labels = [y >= threshold for e in enc_train for y, end in zip(e.labels, e.ends, strict=True)
                    if end is not None and not math.isnan(y)]  # fmt: skip
    positive = sum(train_labels) / len(train_labels)
    constant = 1.0 if positive >= 0.5 else 0.0
    majority = held_out_measures([[constant] * len(row) for row in held_labels], held_labels, threshold)
    pad = tokenizer.pad_token_id or 0

    def measure() -> HeldOut:
        return held_out_measures(
            predict_steps(model, tokenizer, enc_held, config.micro_batch_size), held_labels, threshold
        )

    initial = measure()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    per_epoch = math.ceil(len(enc_train) / config.batch_size)
    total = (
        per_epoch * config.epochs
        if config.max_steps == 0
        else min(config.max_steps, per_epoch * config.epochs)
    )
    rng = random.Random(f"order:{config.seed}")
    step, loss_value, latest = 0, float("nan"), initial
    for _epoch in range(config.epochs):
        order = list(range(len(enc_train)))
        rng.shuffle(order)
        for start in range(0, len(order), config.batch_size):
            if step >= total:
                break
            if should_stop is not None and should_stop():
                raise PRMTrainingStopped(f"stopped at step {step} of {total}: nothing was saved")
            batch = [enc_train[i] for i in order[start : start + config.batch_size]]
            loss_value = _optimizer_step(model, optimizer, batch, pad, config)
            step += 1
            measured = None
            if (config.eval_every and step % config.eval_every == 0) or step == total:
                latest = measured = measure()
            if on_progress is not None:
                on_progress(PRMProgress(
                    step, total, loss_value, None if measured is None else measured.step_accuracy,
                    None if measured is None else measured.first_error_accuracy, time.perf_counter() - t0,
                ))  # fmt: skip
    result = PRMTrainingResult(
        output_dir=config.output_dir, steps=step, train_examples=len(enc_train), held_out_examples=len(enc_held),
        held_out_steps=latest.steps, held_out_step_accuracy=latest.step_accuracy,
        held_out_first_error_accuracy=latest.first_error_accuracy, held_out_first_error_f1=latest.first_error_f1,
        initial_held_out_step_accuracy=initial.step_accuracy, majority_step_accuracy=majority.step_accuracy,
        majority_first_error_accuracy=majority.first_error_accuracy,
        train_positive_share=round(positive, 6), final_loss=loss_value, seconds=round(time.perf_counter() - t0, 2),
        data_hash=examples_hash(examples), source=dict(source or {}),
    )  # fmt: skip
    _save(model, tokenizer, config, result)
    return result


def _trainable(e: Encoded) -> bool:
    return any(end is not None and not math.isnan(y) for end, y in zip(e.ends, e.labels, strict=True))


def _optimizer_step(
    model: PreTrainedModel,
    optimizer: torch.optim.Optimizer,
    batch: Sequence[Encoded],
    pad: int,
    config: PRMTrainingConfig,
) -> float:
    """One AdamW step on ``batch``, accumulated over micro-batches; the mean loss per labelled step."""
    optimizer.zero_grad(set_to_none=True)
    counted = sum(1 for e in batch for end, y in zip(e.ends, e.labels, strict=True)
                  if end is not None and not math.isnan(y))  # fmt: skip
    total = 0.0
    for start in range(0, len(batch), config.micro_batch_size):
        chunk = batch[start : start + config.micro_batch_size]
        logits = _forward(model, chunk, pad, config.bf16)
        targets = [step_targets(e.labels, config.soft_labels, config.label_threshold) for e in chunk]
        loss_sum, n = step_end_loss(logits, [e.ends for e in chunk], targets)
        if n == 0:
            continue
        if not torch.isfinite(loss_sum):
            raise RLVRError(
                f"the PRM's loss became {float(loss_sum)}: lower learning_rate (now {config.learning_rate})"
            )
        (loss_sum / counted).backward()
        total += float(loss_sum.detach())
    optimizer.step()
    return total / max(counted, 1)


def _save(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    config: PRMTrainingConfig,
    result: PRMTrainingResult,
) -> None:
    """save_pretrained (safetensors) + tokenizer + rlvr_prm.json, written beside the folder and renamed into place,
    so a folder that exists is complete."""
    import safetensors
    import transformers

    final = Path(config.output_dir)
    partial = final.with_name(final.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    metadata = {
        "kind": "token_classification_prm",
        "scorer": {"name": "prm", "params": {"kind": "token_classification", "positive_label": POSITIVE_LABEL,
                                             "max_length": config.max_length}},
        "base_model": config.base_model,
        "input_format": INPUT_FORMAT,
        "seed": config.seed,
        "config": config.model_dump(),
        **result.to_json(),
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                     "safetensors": safetensors.__version__},
    }  # fmt: skip
    (partial / METADATA_FILE).write_text(json.dumps(metadata, indent=2, sort_keys=True), encoding="utf-8")
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
