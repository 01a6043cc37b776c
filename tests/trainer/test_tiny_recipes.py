"""The built-in tiny models' recipes (trainer/models/tiny_recipes.py): real builds, cut short."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.trainer.build_helpers import QUICK_SFT_STEPS, quick_builds
from trainer.cli import main as rlvr
from trainer.data.chain_arithmetic import LEVELS, MIXED_LEVELS
from trainer.models.tiny_model import (
    BUILT_IN_MODELS,
    BuildProgress,
    ensure_tiny_model,
    greedy_accuracy,
    recipe_for,
    resolve_model_path,
    tiny_model_path,
)
from trainer.models.tiny_recipes import RECIPES, chain_answer, chain_held_out


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return quick_builds(monkeypatch, tmp_path / "rlvr-home")


def test_every_built_in_model_has_a_recipe_and_starts_from_nothing_or_a_built_in_model() -> None:
    assert set(BUILT_IN_MODELS) == set(RECIPES) >= {"tiny:addition", "tiny:chain", "tiny:chain-teacher"}
    for recipe in RECIPES.values():
        assert recipe.start_from is None or recipe.start_from in RECIPES
        assert recipe.cache_name.endswith(f"-v{recipe.version}")
    with pytest.raises(ValueError, match="valid: tiny:addition"):
        recipe_for("tiny:nope")


def test_the_chain_student_builds_its_teacher_first_and_reports_both(home: Path) -> None:
    heard: list[BuildProgress] = []
    path = ensure_tiny_model("tiny:chain", on_progress=heard.append, log=lambda m: None)
    assert [p.model for p in heard] == ["tiny:chain-teacher"] * QUICK_SFT_STEPS + [
        "tiny:chain"
    ] * QUICK_SFT_STEPS
    assert [p.done for p in heard[:QUICK_SFT_STEPS]] == list(range(1, QUICK_SFT_STEPS + 1))
    assert all(p.total == QUICK_SFT_STEPS and p.eta_s is not None and p.eta_s >= 0 for p in heard)
    assert heard[-1].eta_s == 0
    assert (
        path == tiny_model_path("tiny:chain")
        and (tiny_model_path("tiny:chain-teacher") / "config.json").exists()
    )
    warm = dict(line.split("=", 1) for line in (path / "WARM_START.txt").read_text().splitlines())
    assert warm["recipe"] == "tiny:chain" and warm["sft_steps"] == str(QUICK_SFT_STEPS)
    assert 0.0 <= float(warm["greedy_accuracy"]) <= 1.0
    # loaded like any checkpoint; a cached model reports nothing
    AutoModelForCausalLM.from_pretrained(path)
    heard.clear()
    assert resolve_model_path("tiny:chain", on_progress=heard.append) == str(path) and heard == []
    assert resolve_model_path("tiny:chain-teacher", on_progress=heard.append) != str(path) and heard == []


def test_the_student_mix_answers_about_two_problems_in_three_bare_and_the_rest_worked() -> None:
    from trainer.models.tiny_recipes import BARE_SHARE

    recipe = recipe_for("tiny:chain")
    rng = random.Random(0)
    completions = [c for step in range(1, 31) for _, c in recipe.batch(rng, step, 32)]
    bare = [c for c in completions if c.startswith("#### ")]
    worked = [c for c in completions if not c.startswith("#### ")]
    assert abs(len(bare) / len(completions) - BARE_SHARE) < 0.05
    assert all("=" in c and ";#### " in c for c in worked)
    assert all(chain_answer(c) for c in bare)  # a bare answer is still an answer the verifier reads


def test_the_teachers_rate_holds_until_the_decay_starts_then_falls_to_a_tenth() -> None:
    from trainer.models.tiny_model import lr_factor

    recipe = recipe_for("tiny:chain-teacher")
    steps, start = recipe.sft_steps, recipe.decay_start
    assert 0 < start < steps
    assert [lr_factor(recipe, s, steps) for s in (recipe.warmup_steps, start // 2, start)] == [1.0, 1.0, 1.0]
    assert 0.1 < lr_factor(recipe, (start + steps) // 2, steps) < 1.0
    assert lr_factor(recipe, steps - 1, steps) == pytest.approx(0.1)


def test_a_chain_warm_start_batch_is_one_level_and_the_levels_take_turns() -> None:
    recipe = recipe_for("tiny:chain")
    rng = random.Random(0)
    seen = []
    for step in range(1, 7):
        batch = recipe.batch(rng, step, 16)
        assert len(batch) == 16
        operands = {prompt.count("+") + prompt.count("-") + prompt.count("*") + 1 for prompt, _ in batch}
        assert len(operands) == 1  # one level: every prompt has that level's operand count
        seen.append(operands.pop())
        for prompt, completion in batch:
            assert prompt.endswith("=") and "#### " in completion
    assert seen == [LEVELS[MIXED_LEVELS[s % 3]].min_operands for s in range(1, 7)]


def test_the_chain_answer_is_read_as_the_verifier_reads_it() -> None:
    assert chain_answer("15*4-5=60-5=55;#### 55") == "55"
    assert chain_answer("15*4-5=60-5=55;#### 55;junk") == "55"
    assert chain_answer("15*4-5=60-5=55;55") == ""
    assert chain_answer("#### ") == ""


def test_greedy_accuracy_reads_the_task_of_the_model_it_is_asked_about(home: Path) -> None:
    path = ensure_tiny_model("tiny:chain", log=lambda m: None)
    model, tok = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    assert greedy_accuracy(model, tok, "tiny:chain", n=4) in (0.0, 0.25, 0.5, 0.75, 1.0)
    assert [p for p, _ in chain_held_out(3)] == [p for p, _ in chain_held_out(3)]


def test_init_model_builds_the_named_model_or_its_teacher(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert rlvr(["init-model", "--model", "tiny:chain"]) == 0  # the teacher it starts from is built first
    out = capsys.readouterr().out
    assert out.index("building the built-in model tiny:chain-teacher") < out.index(
        "building the built-in model tiny:chain "
    )
    assert out.strip().endswith(str(tiny_model_path("tiny:chain")))
    assert (
        rlvr(["init-model", "--model", "tiny:chain", "--teacher"]) == 0
    )  # cached: prints the folder, builds nothing
    assert capsys.readouterr().out.strip() == str(tiny_model_path("tiny:chain-teacher"))
    with pytest.raises(SystemExit):
        rlvr(["init-model", "--model", "tiny:nope"])


def test_the_tokenizer_keeps_spaces_and_newlines_through_auto_tokenizer(tmp_path: Path) -> None:
    """Qwen2 checkpoints load Qwen2's byte-level tokenizer class whatever the saved class: a plain character
    vocabulary lost every space there ("#### 5" trained as "####5")."""
    from trainer.models.tiny_model import build_tiny_model, char_tokenizer

    text = "15*4-5=60-5=55;#### 55\nThe answer is 4."
    built = char_tokenizer()
    first = AutoTokenizer.from_pretrained(build_tiny_model(tmp_path / "m", hidden=32, layers=1, heads=2))
    first.save_pretrained(tmp_path / "again")
    for tok in (built, first, AutoTokenizer.from_pretrained(tmp_path / "again")):
        ids = tok(text)["input_ids"]
        assert len(ids) == len(text) and tok.decode(ids) == text
        assert ids == built(text)["input_ids"]


def test_the_demo_preset_names_the_chain_models_and_validates() -> None:
    from trainer.config import config_from_dict
    from trainer.models.tiny_model import DEMO_MODEL
    from trainer.presets import preset

    config = config_from_dict(preset("demo"))
    assert config.model.name_or_path == DEMO_MODEL and config.teacher.name_or_path == f"{DEMO_MODEL}-teacher"
    assert config.data.source == "chain_arithmetic" and config.teacher.fusion.name != "none"
    assert [v.name for v in config.verifiers] == ["chain_arithmetic"]
    assert config.rollout.max_completion_length >= 80  # the hard level's scratchpads are up to 67 tokens
