"""Prompt rendering: format-string templates and chat templates (trainer/data/templates.py)."""

import pytest
from tokenizers import Tokenizer, models
from transformers import PreTrainedTokenizerFast

from trainer.config import DataConfig
from trainer.data import check_template, render_prompt
from trainer.errors import DataError
from trainer.samples import Sample

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
SAMPLE = Sample(id="s1", prompt="2+2=", answer="4", meta={"topic": "sums", "entry": {"answer": "4"}})


def tiny_tokenizer(chat_template: str | None) -> PreTrainedTokenizerFast:
    """A word-level tokenizer built in memory: enough to run chat templates, nothing downloaded."""
    backend = Tokenizer(models.WordLevel(vocab={"[UNK]": 0}, unk_token="[UNK]"))
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", chat_template=chat_template)


def test_the_default_template_is_the_prompt_itself():
    assert render_prompt(SAMPLE, DataConfig()) == "2+2="


def test_a_template_wraps_the_prompt():
    cfg = DataConfig(prompt_template="Question: {prompt}\nAnswer:")
    assert render_prompt(SAMPLE, cfg) == "Question: 2+2=\nAnswer:"


def test_a_template_may_use_meta_fields():
    cfg = DataConfig(prompt_template="[{topic}] {prompt}")
    assert render_prompt(SAMPLE, cfg) == "[sums] 2+2="


def test_literal_braces_are_kept():
    cfg = DataConfig(prompt_template="{prompt} Put the result in \\boxed{{}}.")
    assert render_prompt(SAMPLE, cfg) == "2+2= Put the result in \\boxed{}."


def test_braces_inside_the_prompt_are_not_template_fields():
    sample = Sample(id="s2", prompt="Solve {x}: x+1=2", answer="1")
    assert render_prompt(sample, DataConfig(prompt_template="Q: {prompt}")) == "Q: Solve {x}: x+1=2"


@pytest.mark.parametrize("field", ["answer", "entry"])
def test_a_template_cannot_show_the_reference_answer(field: str):
    cfg = DataConfig(prompt_template=f"{{prompt}} (hint: {{{field}}})")
    with pytest.raises(DataError, match="holds the reference answer"):
        check_template(cfg, [SAMPLE])
    with pytest.raises(DataError, match="holds the reference answer"):
        render_prompt(SAMPLE, cfg)


def test_a_template_cannot_show_a_renamed_answer_column():
    sample = Sample(id="s3", prompt="2+2=", answer="4", meta={"solution": "4"})
    cfg = DataConfig(prompt_template="{prompt} {solution}", answer_field="solution")
    with pytest.raises(DataError, match=r"\{solution\}, which holds the reference answer"):
        check_template(cfg, [sample])


def test_an_unknown_template_field_is_named_with_the_available_ones():
    cfg = DataConfig(prompt_template="{prompt} {level}")
    with pytest.raises(
        DataError,
        match=r"uses \{level\} but sample 's1' has no such field; available fields: \{prompt\}, \{topic\}",
    ):
        check_template(cfg, [SAMPLE])


@pytest.mark.parametrize(
    "template", ["{prompt} {topic.__class__}", "{prompt} {topic[0]}", "{prompt} {}", "{prompt} {0}"]
)
def test_a_template_may_only_use_plain_named_fields(template: str):
    with pytest.raises(DataError, match="use plain named fields"):
        check_template(DataConfig(prompt_template=template), [SAMPLE])


def test_an_unbalanced_brace_is_explained():
    with pytest.raises(DataError, match=r"not a valid format string.*\{\{"):
        check_template(DataConfig(prompt_template="{prompt} {"), [SAMPLE])


def test_the_chat_template_gets_the_system_and_user_messages():
    cfg = DataConfig(use_chat_template=True, system_prompt="Be brief.")
    text = render_prompt(SAMPLE, cfg, tiny_tokenizer(CHAT_TEMPLATE))
    assert text == "<|system|>Be brief.\n<|user|>2+2=\n<|assistant|>"


def test_the_chat_template_leaves_out_an_unset_system_prompt():
    text = render_prompt(SAMPLE, DataConfig(use_chat_template=True), tiny_tokenizer(CHAT_TEMPLATE))
    assert text == "<|user|>2+2=\n<|assistant|>"


def test_a_tokenizer_without_a_chat_template_says_to_turn_it_off():
    cfg = DataConfig(use_chat_template=True)
    with pytest.raises(DataError, match=r"has no chat template: set data\.use_chat_template to false"):
        render_prompt(SAMPLE, cfg, tiny_tokenizer(None))
    with pytest.raises(DataError, match="has no chat template"):
        check_template(cfg, [SAMPLE], tiny_tokenizer(None))


def test_a_chat_template_error_is_reported_with_the_sample():
    no_system = "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    cfg = DataConfig(use_chat_template=True, system_prompt="Be brief.")
    with pytest.raises(
        DataError, match=r"sample 's1': System role not supported; try without data\.system_prompt"
    ):
        render_prompt(SAMPLE, cfg, tiny_tokenizer(no_system))
