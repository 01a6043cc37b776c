"""The LLM judge for rubric criteria: a frozen local model, run through the rollout engine, that writes a score.

Each judge criterion has a prompt template (filled with the question, the response, the reference answer,
the criterion's name, description and scale bounds) and a regular expression that pulls the score out of
the judge's text, as a rubric-conditioned judge (Prometheus, METHODS.md §3b ``004:L439``) does with its
"[RESULT] n" line. The filled template is sent as the user message of the judge tokenizer's chat template
when it has one (``judge_model.chat_template``: auto / always / never). How ours differs: greedy decoding by default
(top_k 1), no feedback text is required, and an output without a number on the scale is scored ``nan``
(reward 0 after aggregation) with ``detail['error'] = 'unparseable judge output'`` instead of retried.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.rubrics.config import CriterionSpec, JudgeModelConfig, JudgeSpec
from trainer.samples import Sample
from trainer.user_regex import compile_user_pattern

if TYPE_CHECKING:
    import torch

    from trainer.rollout.base import RolloutEngine

UNPARSEABLE = "unparseable judge output"
_SHOWN = 300  # characters of judge output kept in a detail record


@dataclass
class JudgeVerdict:
    """One criterion's judged score on its scale (``nan`` when unparseable) and what the judge wrote."""

    score: float
    detail: dict[str, Any]


def render_judge_prompt(spec: JudgeSpec, criterion: CriterionSpec, completion: str, sample: Sample) -> str:
    """The judge's prompt for one completion; user text is substituted, never parsed as a template."""
    low, high = criterion.bounds
    return spec.prompt_template.format(
        prompt=sample.prompt,
        completion=completion,
        answer=sample.answer if sample.answer is not None else "",
        criterion=criterion.name,
        description=criterion.description,
        min=f"{low:g}",
        max=f"{high:g}",
    )


def parse_judge_score(output: str, spec: JudgeSpec, criterion: CriterionSpec) -> JudgeVerdict:
    """The first match of the parse pattern (its first group, if any) as a number within the scale's bounds."""
    shown = output if len(output) <= _SHOWN else output[: _SHOWN - 3] + "..."
    pattern = compile_user_pattern(
        spec.parse_pattern, what="judge.parse_pattern"
    )  # RE2: linear in the output
    match = pattern.search(output)
    if match is None:
        return JudgeVerdict(
            math.nan, {"error": UNPARSEABLE, "reason": "the parse pattern did not match", "output": shown}
        )
    text = match.group(1) if pattern.groups else match.group(0)
    try:
        score = float(text)
    except (TypeError, ValueError):
        return JudgeVerdict(
            math.nan, {"error": UNPARSEABLE, "reason": f"{text!r} is not a number", "output": shown}
        )
    low, high = criterion.bounds
    if not math.isfinite(score) or not low <= score <= high:
        return JudgeVerdict(
            math.nan,
            {
                "error": UNPARSEABLE,
                "reason": f"{score:g} is outside the scale [{low:g}, {high:g}]",
                "output": shown,
            },
        )
    return JudgeVerdict(score, {"output": shown, "extracted": text})


class LLMJudge:
    """Scores judge criteria for a batch: one generation call for every (criterion, completion) prompt."""

    def __init__(self, engine: RolloutEngine, settings: JudgeModelConfig, seed: int = 0) -> None:
        import torch

        from trainer.rollout.base import SamplingParams

        self.engine = engine
        self.tokenizer = getattr(engine, "tokenizer", None)
        self.chat = _use_chat_template(settings, self.tokenizer)
        self.system_prompt = settings.system_prompt
        # Its own generator: judging must not shift the policy's sampling stream (seeded runs stay reproducible).
        self.generator = torch.Generator(device=getattr(engine, "device", torch.device("cpu"))).manual_seed(
            seed
        )
        self.sampling = SamplingParams(
            settings.max_new_tokens, settings.temperature, 1.0, settings.top_k, settings.batch_size
        )

    def judge(
        self, criteria: Sequence[CriterionSpec], completions: Sequence[str], samples: Sequence[Sample]
    ) -> dict[str, list[JudgeVerdict]]:
        """criterion name -> one verdict per completion."""
        judged = [c for c in criteria if c.scorer == "judge"]
        prompts = self.prompts(judged, completions, samples)
        if not prompts:
            return {}
        outputs = self.engine.generate(prompts, self.sampling, self.generator).texts
        n = len(completions)
        return {
            c.name: [
                parse_judge_score(out, c.judge or JudgeSpec(), c) for out in outputs[k * n : (k + 1) * n]
            ]
            for k, c in enumerate(judged)
        }

    def prompts(
        self, judged: Sequence[CriterionSpec], completions: Sequence[str], samples: Sequence[Sample]
    ) -> list[str]:
        """The text the judge model sees, criterion-major: each filled template, in the chat template if used."""
        texts = [
            render_judge_prompt(c.judge or JudgeSpec(), c, text, sample)
            for c in judged
            for text, sample in zip(completions, samples, strict=True)
        ]
        if not self.chat:
            return texts
        from trainer.data.templates import chat_text

        field, tokenizer = "rubric.judge_model.system_prompt", self.tokenizer
        assert tokenizer is not None  # self.chat is only set when the engine has a tokenizer with a template
        return [chat_text(tokenizer, t, self.system_prompt, "a judge prompt", field) for t in texts]


def _use_chat_template(settings: JudgeModelConfig, tokenizer: Any) -> bool:
    has_template = bool(getattr(tokenizer, "chat_template", None))
    if settings.chat_template == "always" and not has_template:
        from trainer.errors import ConfigError

        raise ConfigError(
            f"rubric.judge_model.chat_template is 'always' but the judge tokenizer of {settings.name_or_path!r} has "
            "no chat template: use 'auto' or 'never' (plain-text prompts), or a judge model that has one"
        )
    return settings.chat_template != "never" and has_template


def load_judge(settings: JudgeModelConfig, dtype: str, device: torch.device, seed: int = 0) -> LLMJudge:
    """Load the frozen judge model and tokenizer from a local directory and wrap it in the hf engine."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.errors import ConfigError
    from trainer.models.device import resolve_dtype
    from trainer.models.tiny_model import resolve_model_path
    from trainer.rollout import HFRolloutEngine

    if settings.name_or_path is None:
        raise ConfigError(
            "rubric.judge_model.name_or_path is not set: name a local judge model (a causal-LM folder or a 'tiny:' "
            "model), or use a 'judge' reward source (an OpenAI-compatible endpoint) under verifiers"
        )
    path = resolve_model_path(settings.name_or_path)
    if not Path(path).exists():
        raise ConfigError(
            f"rubric judge model {settings.name_or_path!r} does not exist: set rubric.judge_model.name_or_path "
            "to a local causal-LM directory (nothing is downloaded) or a 'tiny:' model"
        )
    try:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=resolve_dtype(dtype))
        tokenizer = AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as err:
        raise ConfigError(
            f"could not load the rubric judge model from {settings.name_or_path!r}: {err}; set "
            "rubric.judge_model.name_or_path to a local causal-LM directory or a 'tiny:' model"
        ) from None
    model.to(device)  # type: ignore[arg-type]  # transformers stubs type .to oddly
    model.eval().requires_grad_(False)
    return LLMJudge(HFRolloutEngine(model, tokenizer), settings, seed)
