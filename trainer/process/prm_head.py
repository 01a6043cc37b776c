"""The ``prm`` step scorer: a process reward model checkpoint scored at the end of every step.

Two kinds of checkpoint, told apart by the folder's config (``kind: auto``) or named:

- a token-classification model (``AutoModelForTokenClassification``, as PRMs trained with TRL's PRM trainer are):
  the step's score is the positive class's probability (``positive_label``; with one output, its sigmoid) at the
  step's last token;
- a causal LM scored as Math-Shepherd scores (Wang et al. 2024, "Math-Shepherd: Verify and Reinforce LLMs
  Step-by-step without Human Annotations"): ``step_tag`` is appended after each step, and the step's score is the
  probability of ``good_token`` against ``bad_token`` (a softmax over the two) as the next token after the tag.
  A real Math-Shepherd checkpoint folder works with ``step_tag: "ки"``, ``good_token: "+"``, ``bad_token: "-"``.

The scored text is the prompt and then each step's text, each tokenized by the PRM's own tokenizer (so the policy's
and the PRM's tokenizers may differ), every step's end position recorded; a sequence longer than ``max_length``
loses tokens from the left, and a step whose end is cut is absent. Sequences are scored in micro-batches
(``micro_batch_size``, right-padded) under ``torch.inference_mode()``; the model loads once per process
(``from_pretrained(path)``). A checkpoint that fails to load or a batch that fails to score gives absent scores
(nan), never 0, as the reward_model source does. torch and transformers load lazily.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from trainer.bounds import BoundedModel
from trainer.errors import ConfigError
from trainer.process.base import ScorerContext, StepScoreBatch

CHAIN_PRM = "tiny:chain-prm"  # the tiny chain PRM (trainer/process/tiny_prm.py), resolved by records.with_builtin_model

if TYPE_CHECKING:
    from trainer.process.steps import StepSpans
    from trainer.samples import Sample


class PRMParams(BoundedModel):
    model: str = Field(
        min_length=1,
        max_length=1000,
        description="The PRM: a local folder (a token-classification checkpoint, or a causal LM scored with a step "
        "tag), or a built-in 'tiny:' name ('tiny:chain-prm': the tiny chain PRM, built on first use). Nothing is "
        "downloaded.",
    )
    kind: Literal["auto", "token_classification", "causal_lm"] = Field(
        "auto",
        description="'auto': token_classification when the folder's architecture is a *ForTokenClassification, "
        "else causal_lm.",
    )
    positive_label: int = Field(
        1, ge=0, le=1000, description="token_classification: the label index meaning 'this step is right'."
    )
    step_tag: str = Field(
        "ки",
        min_length=1,
        max_length=32,
        description="causal_lm: the text appended after each step (Math-Shepherd's 'ки').",
    )
    good_token: str = Field(
        "+", min_length=1, max_length=32, description="causal_lm: the 'step is right' token."
    )
    bad_token: str = Field(
        "-", min_length=1, max_length=32, description="causal_lm: the 'step is wrong' token."
    )
    micro_batch_size: int = Field(16, ge=1, le=4096, description="Sequences scored in one forward pass.")
    max_length: int = Field(
        2048,
        ge=8,
        le=131_072,
        description="Tokens per scored sequence; a longer one loses tokens from the left.",
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="'auto': a CUDA GPU when there is one."
    )


@dataclass(frozen=True)
class LoadedPRM:
    model: Any
    tokenizer: Any
    kind: str  # "token_classification" | "causal_lm"
    path: str

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device


_cache: dict[tuple[str, str, str], LoadedPRM] = {}
_lock = threading.Lock()


def load_prm(params: PRMParams) -> LoadedPRM:
    """The PRM at ``params.model``, loaded once per process; ConfigError when it is no model folder."""
    from trainer.models.device import resolve_device
    from trainer.models.tiny_model import resolve_model_path

    path = str(Path(resolve_model_path(params.model)).resolve())
    device = resolve_device(params.device)
    key = (path, params.kind, str(device))
    with _lock:
        if key not in _cache:
            if len(_cache) >= 2:
                _cache.pop(next(iter(_cache)))
            _cache[key] = _load(path, params.kind, device)
        return _cache[key]


def _load(path: str, kind: str, device: Any) -> LoadedPRM:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForTokenClassification, AutoTokenizer

    if not (Path(path) / "config.json").is_file():
        raise ConfigError(
            f"the PRM {path!r} (process_reward.scorer.params.model) is not a model folder (no config.json)"
        )
    config = AutoConfig.from_pretrained(path)
    if kind == "auto":
        archs = getattr(config, "architectures", None) or []
        kind = (
            "token_classification"
            if any(a.endswith("ForTokenClassification") for a in archs)
            else "causal_lm"
        )
    cls = AutoModelForTokenClassification if kind == "token_classification" else AutoModelForCausalLM
    model = cls.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.to(device).eval().requires_grad_(False)
    return LoadedPRM(model, tokenizer, kind, path)


def _single_token(tokenizer: Any, text: str, what: str) -> int:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        raise ConfigError(
            f"process_reward.scorer.params.{what} {text!r} is {len(ids)} tokens for the PRM's tokenizer: name one token"
        )
    return int(ids[0])


def encode_steps(
    prm: LoadedPRM, prompt: str, steps: Sequence[str], params: PRMParams
) -> tuple[list[int], list[int | None]]:
    """The scored ids of one completion and, per step, the position whose output scores it (None: cut off)."""
    tok = prm.tokenizer
    ids = list(tok(prompt, add_special_tokens=False)["input_ids"])
    tag = list(tok(params.step_tag, add_special_tokens=False)["input_ids"]) if prm.kind == "causal_lm" else []
    ends = []
    for text in steps:
        ids += tok(text, add_special_tokens=False)["input_ids"] if text else []
        ids += tag
        ends.append(len(ids) - 1)
    cut = max(0, len(ids) - params.max_length)
    return ids[cut:], [e - cut if e - cut >= 0 and ids else None for e in ends]


def score_rows(
    prm: LoadedPRM, rows: Sequence[Sequence[int]], ends: Sequence[Sequence[int | None]], params: PRMParams
) -> list[list[float]]:
    """One forward pass over ``rows`` (right-padded): each step end's probability of 'right'."""
    import torch

    width = max(max((len(r) for r in rows), default=1), 1)
    pad = prm.tokenizer.pad_token_id or 0
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        if row:
            ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
            mask[i, : len(row)] = 1
    with torch.inference_mode():
        logits = prm.model(input_ids=ids.to(prm.device), attention_mask=mask.to(prm.device)).logits.float()
    if prm.kind == "token_classification":
        if logits.shape[-1] == 1:
            probs = torch.sigmoid(logits[..., 0])  # [B, T]
        else:
            probs = torch.softmax(logits, dim=-1)[..., params.positive_label]  # [B, T]
    else:
        good = _single_token(prm.tokenizer, params.good_token, "good_token")
        bad = _single_token(prm.tokenizer, params.bad_token, "bad_token")
        probs = torch.softmax(logits[..., [good, bad]], dim=-1)[..., 0]  # [B, T]
    probs = probs.cpu()
    return [
        [math.nan if e is None else float(probs[i, e]) for e in row_ends] for i, row_ends in enumerate(ends)
    ]


def prm_scores(
    completions: Sequence[str],
    samples: Sequence[Sample],
    spans: StepSpans,
    token_ids: Sequence[Sequence[int]],
    context: ScorerContext,
) -> StepScoreBatch:
    """The ``prm`` scorer (see the module docstring)."""
    from trainer.process.steps import token_texts
    from trainer.verifiers.timeout_pool import describe_error

    params: PRMParams = context.params
    n = len(spans)
    scores: list[list[float]] = [[math.nan] * len(row) for row in spans]
    details: list[dict[str, Any]] = [{} for _ in range(n)]
    try:
        prm = load_prm(params)
        tts = token_texts(token_ids, context.tokenizer)
        encoded = [
            encode_steps(prm, context.prompts[i], ["".join(tts[i].pieces[s:e]) for s, e in spans[i]], params)
            for i in range(n)
        ]
    except Exception as err:
        reason = f"the PRM could not score: {describe_error(err)}"
        return StepScoreBatch(scores, [{"note": reason} for _ in range(n)])
    order = sorted(range(n), key=lambda i: -len(encoded[i][0]))
    for start in range(0, n, params.micro_batch_size):
        batch = [i for i in order[start : start + params.micro_batch_size] if spans[i]]
        if not batch:
            continue
        try:
            got = score_rows(prm, [encoded[i][0] for i in batch], [encoded[i][1] for i in batch], params)
        except Exception as err:  # out of memory, a device error, a bad token: this batch is absent
            for i in batch:
                details[i] = {"note": f"the PRM failed on a batch of {len(batch)}: {describe_error(err)}"}
            continue
        for i, row in zip(batch, got, strict=True):
            scores[i] = row
    return StepScoreBatch(scores, details)
