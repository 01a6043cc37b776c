"""How a Sample becomes the text the policy sees: a format-string template, or the tokenizer's chat template.

Plain mode: ``data.prompt_template.format(prompt=..., **meta)``. Templates come from users of a shared web
app, so only plain ``{name}`` fields are allowed (``{prompt.__class__...}`` could read Python internals
into a prompt), and never the reference answer: neither ``{answer}`` (or the file's answer column) nor
the reasoning-gym ``{entry}``, which holds the answer too.

Chat mode (``data.use_chat_template``): the raw prompt becomes the user message, after an optional
system message; ``prompt_template`` is ignored, as DataConfig documents.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from trainer.data.config import DataConfig
from trainer.errors import DataError
from trainer.samples import Sample

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

# Meta keys that hold the reference answer (see the module docstring).
_ANSWER_KEYS = frozenset({"answer", "entry"})


def render_prompt(sample: Sample, cfg: DataConfig, tokenizer: PreTrainedTokenizerBase | None = None) -> str:
    """The prompt text for ``sample``: ``cfg.prompt_template`` filled in, or the chat template applied.

    >>> render_prompt(Sample(id="1", prompt="2+2=", answer="4"), DataConfig(prompt_template="Q: {prompt}"))
    'Q: 2+2='
    """
    if cfg.use_chat_template:
        return _render_chat(sample, cfg, tokenizer)
    values: dict[str, Any] = {}
    for name in template_fields(cfg.prompt_template):
        values[name] = _field_value(sample, name, cfg)
    return cfg.prompt_template.format_map(values)


def check_template(
    cfg: DataConfig, samples: Sequence[Sample], tokenizer: PreTrainedTokenizerBase | None = None
) -> None:
    """Fail early, with a DataError, if a prompt of ``samples`` cannot be rendered.

    Plain mode checks every sample has every field the template names. Chat mode needs the tokenizer:
    without one only the plain checks are skipped; with one the first sample is rendered once.
    """
    if cfg.use_chat_template:
        if tokenizer is not None and samples:
            _render_chat(samples[0], cfg, tokenizer)
        return
    names = template_fields(cfg.prompt_template)
    for sample in samples:
        for name in names:
            _field_value(sample, name, cfg)


@lru_cache(maxsize=64)
def template_fields(template: str) -> tuple[str, ...]:
    """The field names a template uses, once each; DataError for anything but plain ``{name}`` fields."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as err:
        raise DataError(
            f"data.prompt_template {template!r} is not a valid format string ({err}); write a literal "
            "brace as {{ or }}"
        ) from None
    names: dict[str, None] = {}
    for _, name, spec, _ in parsed:
        if name is None:
            continue
        if not name.isidentifier():
            raise DataError(
                f"data.prompt_template field {{{name}}} is not allowed: use plain named fields such as "
                "{prompt}, without positions, attributes or indexing"
            )
        if spec and ("{" in spec or "}" in spec):
            raise DataError(f"data.prompt_template field {{{name}:{spec}}} nests a field in its format spec")
        names[name] = None
    return tuple(names)


def _field_value(sample: Sample, name: str, cfg: DataConfig) -> Any:
    if name == "prompt":
        return sample.prompt
    if name in _ANSWER_KEYS or name == cfg.answer_field:
        raise DataError(
            f"data.prompt_template uses {{{name}}}, which holds the reference answer; a template must "
            "not show the model the answer it is rewarded for. Remove the field from the template"
        )
    if name not in sample.meta:
        available = ["prompt", *(k for k in sample.meta if k not in _ANSWER_KEYS and k != cfg.answer_field)]
        raise DataError(
            f"data.prompt_template uses {{{name}}} but sample {sample.id!r} has no such field; "
            f"available fields: {', '.join('{' + k + '}' for k in available)}"
        )
    return sample.meta[name]


def _render_chat(sample: Sample, cfg: DataConfig, tokenizer: PreTrainedTokenizerBase | None) -> str:
    if tokenizer is None:
        raise ValueError("data.use_chat_template is true: pass the policy's tokenizer to render_prompt")
    if not getattr(tokenizer, "chat_template", None):
        raise DataError(
            f"the tokenizer of {getattr(tokenizer, 'name_or_path', '') or 'this model'} has no chat "
            "template: set data.use_chat_template to false and put the prompt format in "
            "data.prompt_template"
        )
    return chat_text(
        tokenizer, sample.prompt, cfg.system_prompt, f"sample {sample.id!r}", "data.system_prompt"
    )


def chat_text(
    tokenizer: PreTrainedTokenizerBase, user: str, system: str | None, what: str, system_field: str
) -> str:
    """``user`` (after an optional ``system`` message) through the tokenizer's chat template, ready for the
    assistant's turn. DataError naming ``what`` was being rendered when the template fails."""
    messages = []
    if system is not None:
        messages.append({"role": "system", "content": system})
    messages.append({"role": "user", "content": user})
    try:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    except Exception as err:  # jinja2 errors, including the template's own raise_exception(...)
        hint = f"; try without {system_field}" if system is not None else ""
        raise DataError(f"the chat template failed on {what}: {err}{hint}") from err
    if not isinstance(text, str):
        raise DataError(f"the chat template returned {type(text).__name__}, not text, for {what}")
    return text
