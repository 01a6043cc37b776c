"""The teacher: loading with a vocabulary check, OPSD's privileged prompts, and scoring sampled tokens."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from trainer.config import DataConfig, ExperimentConfig, TeacherConfig
from trainer.errors import ConfigError, DataError
from trainer.models.tiny_model import char_tokenizer
from trainer.rollout import HFRolloutEngine, SamplingParams
from trainer.samples import Sample
from trainer.step.teacher import (
    check_same_tokenizer,
    load_teacher,
    needs_teacher,
    privileged_prompts,
    score_completions,
    teacher_signals,
)


def config(**teacher: object) -> ExperimentConfig:
    return ExperimentConfig(teacher=TeacherConfig(**teacher))  # type: ignore[arg-type]


def test_privileged_prompts_put_the_reference_answer_in_the_teachers_view() -> None:
    cfg = ExperimentConfig(
        data=DataConfig(prompt_template="Q: {prompt}"),
        teacher=TeacherConfig(mode="self", privileged_template="[{answer}] {prompt}"),
    )
    prompts = privileged_prompts([Sample(id="1", prompt="2+2=", answer="4")], cfg, char_tokenizer())
    assert prompts == ["Q: [4] 2+2="]


def test_privileged_prompts_use_the_chat_template_like_student_prompts() -> None:
    tok = char_tokenizer()
    tok.chat_template = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
    cfg = ExperimentConfig(data=DataConfig(use_chat_template=True), teacher=TeacherConfig(mode="self"))
    prompts = privileged_prompts([Sample(id="1", prompt="2+2=", answer="4")], cfg, tok)
    assert prompts[0].startswith("<user>Reference answer: 4\n2+2=")


def test_a_sample_without_reference_answer_cannot_have_a_privileged_teacher() -> None:
    with pytest.raises(DataError, match="no reference answer"):
        privileged_prompts([Sample(id="x", prompt="2+2=")], config(mode="self"), char_tokenizer())


def test_a_teacher_with_another_vocabulary_is_refused_with_the_reason() -> None:
    other = char_tokenizer()
    other.add_tokens(["<think>"])
    with pytest.raises(ConfigError, match=r"does not share the policy's tokenizer.*'<think>'"):
        check_same_tokenizer(char_tokenizer(), other, "/models/other")
    check_same_tokenizer(char_tokenizer(), char_tokenizer(), "/models/same")  # no error


def test_an_external_teacher_directory_must_exist(random_model_dir: Path) -> None:
    model = AutoModelForCausalLM.from_pretrained(random_model_dir)
    with pytest.raises(ConfigError, match="does not exist"):
        load_teacher(config(name_or_path="/no/such/teacher"), model, char_tokenizer(), torch.device("cpu"))


def test_a_loaded_external_teacher_is_frozen_and_separate(random_model_dir: Path) -> None:
    policy = AutoModelForCausalLM.from_pretrained(random_model_dir)
    teacher = load_teacher(
        config(name_or_path=str(random_model_dir)), policy, char_tokenizer(), torch.device("cpu")
    )
    assert teacher is not None and teacher.mode == "external" and teacher.model is not policy
    assert not any(p.requires_grad for p in teacher.model.parameters()) and not teacher.model.training


def test_the_self_teacher_is_the_policy_and_no_teacher_loads_nothing(random_model_dir: Path) -> None:
    policy = AutoModelForCausalLM.from_pretrained(random_model_dir)
    teacher = load_teacher(config(mode="self"), policy, char_tokenizer(), torch.device("cpu"))
    assert teacher is not None and teacher.model is policy
    assert load_teacher(config(), policy, char_tokenizer(), torch.device("cpu")) is None


def test_the_teacher_is_not_scored_after_the_opd_then_rl_switch() -> None:
    cfg = config(name_or_path="t", fusion="opd", opd_until_step=2)
    assert [needs_teacher(cfg, s) for s in (1, 2, 3)] == [True, True, False]
    assert needs_teacher(config(name_or_path="t"), 50)  # recorded for the dashboard
    assert not needs_teacher(config(), 1)


@pytest.fixture(scope="module")
def sampled(random_model_dir: Path) -> tuple[object, object, object]:
    model = AutoModelForCausalLM.from_pretrained(random_model_dir).eval()
    tok = AutoTokenizer.from_pretrained(random_model_dir)
    engine = HFRolloutEngine(model, tok)
    batch = engine.generate(
        ["12+3=", "7+80=", "1+1="] * 2, SamplingParams(6, temperature=0.7), torch.Generator().manual_seed(0)
    )
    return model, tok, batch


def test_a_teacher_identical_to_the_student_reproduces_its_sampling_logprobs(sampled: tuple) -> None:
    model, _, batch = sampled
    logprob, entropy = score_completions(
        model, batch.prompt_ids, batch.prompt_mask, batch, 64, temperature=0.7
    )
    assert torch.allclose(logprob, batch.logprobs, atol=1e-4)
    assert torch.allclose(entropy, batch.entropies, atol=1e-4)


def test_scoring_does_not_depend_on_the_micro_batch_size(sampled: tuple) -> None:
    model, _, batch = sampled
    whole = score_completions(model, batch.prompt_ids, batch.prompt_mask, batch, 64, 0.7)
    pieces = score_completions(model, batch.prompt_ids, batch.prompt_mask, batch, 2, 0.7)
    assert torch.allclose(whole[0], pieces[0], atol=1e-5) and torch.allclose(whole[1], pieces[1], atol=1e-5)


def test_signals_hold_the_gap_and_zero_on_padding(sampled: tuple, random_model_dir: Path) -> None:
    model, tok, batch = sampled
    cfg = ExperimentConfig(
        rollout={"temperature": 0.7}, teacher=TeacherConfig(name_or_path=str(random_model_dir))
    )
    teacher = load_teacher(cfg, model, tok, torch.device("cpu"))
    samples = [Sample(id=str(i), prompt="p", answer="1") for i in range(len(batch))]
    signals = teacher_signals(teacher, cfg, 1, batch, samples, tok)
    assert signals is not None and signals.vocab_size == len(tok)
    assert torch.allclose(
        signals.gap, torch.zeros_like(signals.gap), atol=1e-4
    )  # same weights as the student
    pad = batch.completion_mask == 0
    assert torch.all(signals.logprob[pad] == 0) and torch.all(signals.entropy[pad] == 0)


def test_the_privileged_self_teacher_scores_the_same_tokens_under_another_prompt(sampled: tuple) -> None:
    model, tok, batch = sampled
    cfg = ExperimentConfig(rollout={"temperature": 0.7}, teacher=TeacherConfig(mode="self"))
    samples = [
        Sample(id=str(i), prompt=["12+3=", "7+80=", "1+1="][i % 3], answer="9") for i in range(len(batch))
    ]
    teacher = load_teacher(cfg, model, tok, torch.device("cpu"))
    signals = teacher_signals(teacher, cfg, 1, batch, samples, tok)
    assert signals is not None
    real = batch.completion_mask.bool()
    assert signals.gap[real].abs().max() > 1e-3  # the answer in the prompt changes the teacher's view
    assert torch.all(signals.gap[~real] == 0)


def test_the_tiny_teacher_is_the_student_trained_further_with_the_same_tokenizer(
    warm_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from trainer.models.tiny_model import TEACHER_NAME, ensure_tiny_model, resolve_model_path, tiny_model_path

    monkeypatch.setenv("RLVR_HOME", str(tmp_path))
    shutil.copytree(warm_model_dir, tiny_model_path())  # the student is cached: only the teacher is built
    path = ensure_tiny_model(TEACHER_NAME, sft_steps=2, log=lambda msg: None)
    assert path == tiny_model_path(TEACHER_NAME) and resolve_model_path(TEACHER_NAME) == str(path)
    check_same_tokenizer(
        AutoTokenizer.from_pretrained(warm_model_dir), AutoTokenizer.from_pretrained(path), str(path)
    )
    student = AutoModelForCausalLM.from_pretrained(warm_model_dir).state_dict()
    teacher = AutoModelForCausalLM.from_pretrained(path).state_dict()
    assert student.keys() == teacher.keys() and any(not torch.equal(student[k], teacher[k]) for k in student)
