"""``reward_model``: a scalar reward model (a sequence-classification checkpoint with one output) as a reward source.

The Bradley-Terry reward models of InstructGPT-style RLHF (Stiennon et al. 2020, "Learning to summarize from human
feedback"; Ouyang et al. 2022, "Training language models to follow instructions with human feedback"): a language
model with a scalar head, trained on preference pairs so that the difference of two scores is the log-odds that
people prefer one completion over the other; the policy is then trained to raise the score. Any such checkpoint that
``AutoModelForSequenceClassification.from_pretrained`` loads with ``num_labels`` 1 works here, a 7B RM trained by
TRL's reward trainer or OpenRLHF as much as the tiny one built in tests.

How ours differs from InstructGPT's use: the score is one weighted reward source of a GRPO-family step beside the
verifiers (group-relative advantages, so only differences within a group matter and the RM's offset cancels); the KL
penalty is the algorithm's ``beta``, not folded into the reward; ``normalize: sigmoid`` maps the score to (0, 1); and a
batch the model fails to score (an error, running out of memory) gives *absent* results, never 0, which the config's
``reward_absence`` turns into dropped samples, zeros or a failed run.

Scoring: each (prompt, completion) becomes text through the tokenizer's chat template (the prompt as the user turn,
the completion as the assistant's; ``input_format``) or ``plain_template``; sequences longer than ``max_length``
lose tokens from the left, so the completion's end (where a reward model reads its verdict) is kept. Sequences are
scored in micro-batches of similar length, right-padded, under ``torch.inference_mode()``; the model and tokenizer
load once per process (a small cache keyed by folder, dtype and device). ``score_texts`` is the same path for
callers outside training (the throughput benchmark, reward model evaluation and training).

torch, transformers and trainer.models load lazily: building this verifier (the web process validating a config) is
cheap; ``load()`` (``build_verifiers`` in the worker) reads the checkpoint and refuses a broken one with a ConfigError.
"""

from __future__ import annotations

import math
import string
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator

from trainer.errors import ConfigError
from trainer.samples import Sample
from trainer.verifiers.base import (
    VERIFIERS,
    VerifierParams,
    VerifierResult,
    absent_result,
    error_result,
)
from trainer.verifiers.timeout_pool import describe_error

if TYPE_CHECKING:
    import torch

InputFormat = Literal["auto", "chat", "plain"]
_TEMPLATE_FIELDS = frozenset({"prompt", "completion"})
_CACHE_SIZE = 2  # reward models kept loaded per process (a run uses one; an evaluation may compare two)


class RewardModelParams(VerifierParams):
    model: str = Field(
        min_length=1,
        max_length=1000,
        description="The reward model: a local folder holding a sequence-classification checkpoint with one output "
        "(num_labels 1, e.g. a Bradley-Terry reward model), or a built-in 'tiny:' name. Configs from the web app "
        "name 'rm:<id>' or 'checkpoint:<id>', which the server turns into its folder before the worker loads it. "
        "Nothing is downloaded.",
    )
    micro_batch_size: int = Field(
        16, ge=1, le=4096, description="Sequences scored in one forward pass (similar lengths together)."
    )
    max_length: int = Field(
        1024,
        ge=8,
        le=131_072,
        description="Tokens per scored sequence; a longer one loses tokens from the left (the prompt's start), so "
        "the completion's end is kept.",
    )
    input_format: InputFormat = Field(
        "auto",
        description="'chat': the prompt as the user turn and the completion as the assistant turn of the "
        "tokenizer's chat template (how chat reward models were trained); 'plain': plain_template; 'auto': chat "
        "when the tokenizer has a chat template, else plain.",
    )
    plain_template: str = Field(
        "{prompt}{completion}",
        max_length=10_000,
        description="The scored text for input_format 'plain': a format string with {prompt} and {completion}, "
        "tokenized as written (no special tokens added: write a BOS token here if the model expects one; reward "
        "models trained here expect none).",
    )
    normalize: Literal["none", "sigmoid"] = Field(
        "none",
        description="'none': the reward is the raw score; 'sigmoid': 1 / (1 + exp(-score)), in (0, 1) (the "
        "Bradley-Terry probability of beating a completion scored 0).",
    )
    correct_above: float | None = Field(
        None,
        ge=-1e6,
        le=1e6,
        description="When set, a completion counts as correct (rollout/accuracy, when this source is listed first) "
        "if its raw score is above this; null: never correct.",
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        "auto", description="Weights dtype: 'auto' keeps the checkpoint's own."
    )
    device: Literal["auto", "cpu", "cuda"] = Field(
        "auto", description="'auto': the worker's CUDA GPU when it has one, else the CPU."
    )

    @field_validator("plain_template")
    @classmethod
    def _check_template(cls, template: str) -> str:
        try:
            names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
        except ValueError as err:
            raise ValueError(
                f"plain_template is not a valid format string ({err}); write {{{{ and }}}} for literal braces"
            ) from None
        if not names <= _TEMPLATE_FIELDS:  # '{prompt.__class__}' would read Python internals
            raise ValueError(
                f"plain_template may use only {{prompt}} and {{completion}}, not {sorted(names - _TEMPLATE_FIELDS)}"
            )
        if "completion" not in names:
            raise ValueError(
                "plain_template must contain {completion}: the reward model has to see the response"
            )
        return template


@dataclass(frozen=True)
class LoadedRewardModel:
    """A scalar reward model ready to score: an ``AutoModelForSequenceClassification`` and its tokenizer."""

    model: Any  # transformers.PreTrainedModel with num_labels 1, in eval mode
    tokenizer: Any  # transformers.PreTrainedTokenizerBase with a pad token
    path: str

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device


_cache: dict[tuple[str, str, str], LoadedRewardModel] = {}
_cache_lock = threading.Lock()


def load_reward_model(model: str, dtype: str = "auto", device: str = "auto") -> LoadedRewardModel:
    """The reward model at ``model`` (a folder or a 'tiny:' name), loaded once per process per (folder, dtype,
    device). ConfigError naming the field when it is missing, not a reward model, or not a scalar one."""
    from trainer.models.device import resolve_device
    from trainer.models.tiny_model import resolve_model_path

    path = str(Path(resolve_model_path(model)).resolve())
    try:
        where = resolve_device(device)
    except ConfigError:
        raise ConfigError(
            "verifier 'reward_model': params.device is 'cuda' but no CUDA GPU is visible: use 'auto' or 'cpu'"
        ) from None
    key = (path, dtype, str(where))
    with _cache_lock:
        if key not in _cache:
            loaded = _load(model, path, dtype, where)
            while len(_cache) >= _CACHE_SIZE:
                _cache.pop(next(iter(_cache)))
            _cache[key] = loaded
        return _cache[key]


def _load(name: str, path: str, dtype: str, device: torch.device) -> LoadedRewardModel:
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    what = f"the reward model {name!r} (verifier 'reward_model', params.model)"
    if not (Path(path) / "config.json").is_file():
        raise ConfigError(
            f"{what} is not a model folder (no config.json in {path}): name a local folder holding a "
            "sequence-classification checkpoint; nothing is downloaded"
        )
    try:
        config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError) as err:
        raise ConfigError(f"could not read the config of {what}: {err}") from None
    labels = getattr(config, "num_labels", None)
    if labels != 1:
        raise ConfigError(
            f"{what} is not a scalar reward model: its config has num_labels {labels} (a causal LM or a "
            "classifier); a reward model has one output: save one with "
            "AutoModelForSequenceClassification.from_pretrained(..., num_labels=1) and train it on preference pairs"
        )
    torch_dtype: Any = "auto" if dtype == "auto" else getattr(torch, dtype)
    try:
        model = AutoModelForSequenceClassification.from_pretrained(path, dtype=torch_dtype)
        tokenizer = AutoTokenizer.from_pretrained(path)
    except Exception as err:  # a missing file, a corrupt header, an unknown architecture
        raise ConfigError(f"could not load {what} from {path}: {describe_error(err)}") from None
    if tokenizer.pad_token is None:  # many causal-LM tokenizers have none; the RM never reads padding
        if tokenizer.eos_token is None:
            raise ConfigError(
                f"{what}: its tokenizer has neither a pad nor an eos token: give it a pad token"
            )
        tokenizer.pad_token = tokenizer.eos_token
    if model.config.pad_token_id is None:  # the head pools the last non-pad token: it must know the pad id
        model.config.pad_token_id = tokenizer.pad_token_id
    model.to(device)
    model.eval().requires_grad_(False)
    return LoadedRewardModel(model, tokenizer, path)


def use_chat(tokenizer: Any, input_format: InputFormat) -> bool:
    """Whether the scored text goes through the tokenizer's chat template."""
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if input_format == "chat" and not has_template:
        raise ConfigError(
            "verifier 'reward_model': input_format is 'chat' but the reward model's tokenizer has no chat template: "
            "use 'plain' (with plain_template) or 'auto'"
        )
    return input_format == "chat" or (input_format == "auto" and has_template)


def encode(
    tokenizer: Any,
    prompts: Sequence[str],
    completions: Sequence[str],
    input_format: InputFormat = "auto",
    plain_template: str = "{prompt}{completion}",
    max_length: int = 1024,
) -> list[list[int]]:
    """Token ids of each (prompt, completion), cut from the left to ``max_length`` (the completion's end kept)."""
    chat = use_chat(tokenizer, input_format)
    rows = []
    for prompt, completion in zip(prompts, completions, strict=True):
        if chat:
            messages = [{"role": "user", "content": prompt}, {"role": "assistant", "content": completion}]
            text = tokenizer.apply_chat_template(messages, tokenize=False)
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        else:
            ids = tokenizer(
                plain_template.format(prompt=prompt, completion=completion), add_special_tokens=False
            )["input_ids"]  # as written: put a BOS into plain_template if the model expects one
        rows.append(list(ids[-max_length:]))
    return rows


def micro_batches(rows: Sequence[Sequence[int]], size: int) -> Iterator[list[int]]:
    """Row indices in micro-batches of ``size``, longest first, so each batch holds similar lengths."""
    order = sorted(range(len(rows)), key=lambda i: -len(rows[i]))
    for start in range(0, len(order), size):
        yield order[start : start + size]


def score_ids(rm: LoadedRewardModel, rows: Sequence[Sequence[int]]) -> list[float]:
    """One forward pass over ``rows`` (right-padded, so positions start at 0 as when scored alone): raw scores."""
    import torch

    width = max(max(len(r) for r in rows), 1)
    pad = rm.tokenizer.pad_token_id
    ids = torch.full((len(rows), width), pad, dtype=torch.long)  # [B, T]
    mask = torch.zeros((len(rows), width), dtype=torch.long)  # [B, T]
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    with torch.inference_mode():
        logits = rm.model(input_ids=ids.to(rm.device), attention_mask=mask.to(rm.device)).logits  # [B, 1]
    return [float(x) for x in logits[:, 0].float().cpu()]


def score_texts(
    rm: LoadedRewardModel,
    prompts: Sequence[str],
    completions: Sequence[str],
    *,
    micro_batch_size: int = 16,
    max_length: int = 1024,
    input_format: InputFormat = "auto",
    plain_template: str = "{prompt}{completion}",
) -> list[float]:
    """The raw score of each (prompt, completion), in input order; raises on any failure (callers outside
    training: the throughput benchmark, reward model evaluation and training)."""
    rows = encode(rm.tokenizer, prompts, completions, input_format, plain_template, max_length)
    scores = [0.0] * len(rows)
    for batch in micro_batches(rows, micro_batch_size):
        for i, score in zip(batch, score_ids(rm, [rows[i] for i in batch]), strict=True):
            scores[i] = score
    return scores


@VERIFIERS.register("reward_model")
class RewardModelVerifier:
    """A scalar reward model's score (a Bradley-Terry reward model, as in InstructGPT-style RLHF): reward = the
    score (or its sigmoid), detail['score'] = the raw score; a batch it fails to score is absent, never 0.

    Params: ``model`` (a local sequence-classification folder with num_labels 1, or 'rm:<id>' / 'checkpoint:<id>'
    in the web app), ``micro_batch_size``, ``max_length`` (left truncation), ``input_format``, ``normalize``,
    ``correct_above``.
    """

    name: ClassVar[str] = "reward_model"
    Params: ClassVar[type[VerifierParams]] = RewardModelParams
    absent_on_failure: ClassVar[bool] = True  # score_batch: a crash is no score, not 0

    def __init__(self, params: RewardModelParams) -> None:
        self.params = params
        self._rm: LoadedRewardModel | None = None

    def load(self) -> None:
        """Load the model now (``build_verifiers``): a broken folder fails the run's setup with a ConfigError."""
        if self._rm is None:
            p = self.params
            self._rm = load_reward_model(p.model, p.dtype, p.device)
            use_chat(self._rm.tokenizer, p.input_format)  # 'chat' without a template: refused here too

    def __call__(self, completions: Sequence[str], samples: Sequence[Sample]) -> list[VerifierResult]:
        if len(completions) != len(samples):
            problem = f"got {len(completions)} completions but {len(samples)} samples: pass one sample per completion"
            return [error_result(problem) for _ in completions]
        if not completions:
            return []
        p = self.params
        try:
            self.load()
            assert self._rm is not None
            rows = encode(
                self._rm.tokenizer,
                [s.prompt for s in samples],
                completions,
                p.input_format,
                p.plain_template,
                p.max_length,
            )
        except Exception as err:
            return [
                absent_result(f"the reward model could not score: {describe_error(err)}") for _ in completions
            ]
        results: list[VerifierResult | None] = [
            absent_result("the scored text has no tokens") if not row else None for row in rows
        ]
        for batch in micro_batches(rows, p.micro_batch_size):
            batch = [i for i in batch if rows[i]]  # empty ones sort last and are absent already
            if not batch:
                continue
            try:
                scores = score_ids(self._rm, [rows[i] for i in batch])
            except Exception as err:  # out of memory, a device error: this batch has no scores
                reason = f"the reward model failed on a batch of {len(batch)}: {describe_error(err)}"
                for i in batch:
                    results[i] = absent_result(reason)
                continue
            for i, score in zip(batch, scores, strict=True):
                results[i] = self._result(score)
        return [r if r is not None else absent_result("not scored") for r in results]

    def _result(self, score: float) -> VerifierResult:
        if not math.isfinite(score):
            return absent_result(f"the reward model gave a non-finite score ({score})")
        p = self.params
        reward = sigmoid(score) if p.normalize == "sigmoid" else score
        correct = p.correct_above is not None and score > p.correct_above
        return VerifierResult(reward=reward, correct=correct, detail={"score": score})


def sigmoid(x: float) -> float:
    """1 / (1 + exp(-x)) without overflow for large |x|."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)
