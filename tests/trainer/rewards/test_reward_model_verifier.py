"""The ``reward_model`` source: a real tiny sequence-classification checkpoint scored in batches."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from tests.trainer.rewards.rm_helpers import make_reward_model
from trainer.errors import ConfigError, VerifierError
from trainer.samples import Sample
from trainer.verifiers import build_verifier
from trainer.verifiers.reward_model import (
    RewardModelVerifier,
    encode,
    load_reward_model,
    score_ids,
    score_texts,
)
from trainer.verifiers.scoring import build_verifiers, score_batch

COMPLETIONS = [
    "15*4-5=60-5=55;#### 55",
    "#### 55",
    "",
    "7*3=21;#### 21",
    "1+2+3+4+5+6+7+8=36;#### 36",
    "####",
    "9",
    "(9+6)*4-5=15*4-5=60-5=55;#### 55 and more words after the answer",
]
SAMPLES = [Sample(f"s{i}", f"({i}+6)*4-5=", "55") for i in range(len(COMPLETIONS))]


@pytest.fixture(scope="module")
def rm_dir(random_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_reward_model(random_model_dir, tmp_path_factory.mktemp("tiny-rm"))


class _Spec:
    def __init__(self, name: str, params: dict[str, object], key: str) -> None:
        self.name, self.params, self.key = name, params, key


def built(rm_dir: Path, **params: object) -> RewardModelVerifier:
    verifier = build_verifier("reward_model", {"model": str(rm_dir), **params})
    assert isinstance(verifier, RewardModelVerifier)
    verifier.load()
    return verifier


def one_at_a_time(rm_dir: Path, completions: list[str], samples: list[Sample]) -> list[float]:
    """The plain transformers loop: each text through the model alone, no padding."""
    rm = load_reward_model(str(rm_dir))
    scores = []
    for completion, sample in zip(completions, samples, strict=True):
        ids = rm.tokenizer(sample.prompt + completion, return_tensors="pt")["input_ids"]
        with torch.inference_mode():
            scores.append(float(rm.model(input_ids=ids).logits[0, 0]))
    return scores


def test_a_batch_scores_as_the_one_at_a_time_loop_does(rm_dir: Path) -> None:
    results = built(rm_dir, micro_batch_size=3)(COMPLETIONS, SAMPLES)
    expected = one_at_a_time(rm_dir, COMPLETIONS, SAMPLES)
    assert [r.reward for r in results] == pytest.approx(expected, abs=1e-5)
    assert [r.detail["score"] for r in results] == pytest.approx(expected, abs=1e-5)
    assert len({round(r.reward, 6) for r in results}) > 1  # the head tells texts apart
    json.dumps([r.detail for r in results], allow_nan=False)


@pytest.mark.parametrize("micro_batch_size", [1, 2, 5, 64])
def test_every_micro_batch_size_gives_the_same_scores(rm_dir: Path, micro_batch_size: int) -> None:
    reference = [r.reward for r in built(rm_dir, micro_batch_size=8)(COMPLETIONS, SAMPLES)]
    scores = [r.reward for r in built(rm_dir, micro_batch_size=micro_batch_size)(COMPLETIONS, SAMPLES)]
    assert scores == pytest.approx(reference, abs=1e-5)


def test_micro_batches_hold_similar_lengths_and_cover_every_row(rm_dir: Path) -> None:
    from trainer.verifiers.reward_model import micro_batches

    rows = [[1] * n for n in (5, 1, 9, 3, 7)]
    batches = list(micro_batches(rows, 2))
    assert batches == [[2, 4], [0, 3], [1]]  # longest first


def test_a_long_input_loses_its_start_and_keeps_the_completions_end(rm_dir: Path) -> None:
    rm = load_reward_model(str(rm_dir))
    prompt, completion = "1+" * 200 + "1=", "201;#### 201"
    (row,) = encode(rm.tokenizer, [prompt], [completion], "plain", "{prompt}{completion}", max_length=16)
    full = rm.tokenizer(prompt + completion)["input_ids"]
    assert len(row) == 16 and row == full[-16:]
    assert rm.tokenizer.decode(row).endswith("#### 201")
    short = built(rm_dir, max_length=16)([completion], [Sample("p", prompt)])[0]
    assert short.reward == pytest.approx(score_ids(rm, [full[-16:]])[0], abs=1e-6)


def test_sigmoid_normalisation_and_correct_above(rm_dir: Path) -> None:
    raw = [r.reward for r in built(rm_dir)(COMPLETIONS, SAMPLES)]
    threshold = sorted(raw)[len(raw) // 2]
    results = built(rm_dir, normalize="sigmoid", correct_above=threshold)(COMPLETIONS, SAMPLES)
    for result, score in zip(results, raw, strict=True):
        assert result.reward == pytest.approx(1 / (1 + math.exp(-score)), abs=1e-6)
        assert result.detail["score"] == pytest.approx(score, abs=1e-6)
        assert result.correct == (score > threshold)


def test_score_texts_is_the_verifiers_path(rm_dir: Path) -> None:
    rm = load_reward_model(str(rm_dir))
    scores = score_texts(rm, [s.prompt for s in SAMPLES], COMPLETIONS, micro_batch_size=4)
    assert scores == pytest.approx([r.reward for r in built(rm_dir)(COMPLETIONS, SAMPLES)], abs=1e-6)


def test_the_model_loads_once_per_process(rm_dir: Path) -> None:
    assert load_reward_model(str(rm_dir)) is load_reward_model(str(rm_dir) + "/")


def test_a_failing_batch_is_absent_never_zero(rm_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    verifier = built(rm_dir, micro_batch_size=4)
    assert verifier._rm is not None
    real_forward = verifier._rm.model.forward
    calls = {"n": 0}

    def every_second_batch_runs_out_of_memory(*args: object, **kwargs: object) -> object:
        calls["n"] += 1
        if calls["n"] % 2 == 0:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_forward(*args, **kwargs)

    monkeypatch.setattr(verifier._rm.model, "forward", every_second_batch_runs_out_of_memory)
    results = verifier(COMPLETIONS, SAMPLES)
    absent = [i for i, r in enumerate(results) if r.absent]
    assert len(absent) == 4  # one micro-batch of four
    assert all(math.isnan(results[i].reward) and not results[i].correct for i in absent)
    reason = results[absent[0]].detail["absent"]
    assert "OutOfMemoryError" in reason and "batch of 4" in reason
    assert all(math.isfinite(r.reward) for r in results if not r.absent)

    calls["n"] = 0
    scores = score_batch([("rm", verifier)], [2.0], COMPLETIONS, SAMPLES)  # the step's view of it
    assert scores.absent["rm"] == [i in absent for i in range(len(COMPLETIONS))]
    for i in range(len(COMPLETIONS)):
        if i in absent:  # no score: nan in the breakdown, nothing in the total
            assert math.isnan(scores.per_verifier["rm"][i]) and scores.total[i] == 0.0
        else:
            assert scores.total[i] == pytest.approx(2.0 * scores.per_verifier["rm"][i])
    assert scores.latency_s["rm"] > 0


def test_a_chat_tokenizer_scores_the_prompt_and_completion_as_two_turns(rm_dir: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    chat_dir = tmp_path / "chat-rm"
    chat_dir.mkdir()
    for f in rm_dir.iterdir():
        (chat_dir / f.name).write_bytes(f.read_bytes())
    tokenizer = AutoTokenizer.from_pretrained(chat_dir)
    tokenizer.chat_template = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
    tokenizer.save_pretrained(chat_dir)
    verifier = built(chat_dir)  # input_format auto: the template is used
    rm = load_reward_model(str(chat_dir))
    (row,) = encode(rm.tokenizer, ["2+2="], ["4"], "auto")
    assert rm.tokenizer.decode(row) == "<user>2+2=<assistant>4"
    (result,) = verifier(["4"], [Sample("s", "2+2=")])
    assert result.reward == pytest.approx(score_ids(rm, [row])[0], abs=1e-6)


def test_a_missing_model_folder_is_refused_when_the_run_is_built(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"is not a model folder \(no config\.json"):
        build_verifiers([_Spec("reward_model", {"model": str(tmp_path / "nowhere")}, "rm")])


def test_a_causal_lm_folder_is_refused_as_not_a_scalar_reward_model(random_model_dir: Path) -> None:
    with pytest.raises(ConfigError, match=r"not a scalar reward model: its config has num_labels 2"):
        build_verifiers([_Spec("reward_model", {"model": str(random_model_dir)}, "rm")])


def test_a_folder_with_broken_weights_is_refused_with_the_reason(rm_dir: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in rm_dir.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ConfigError, match=r"could not load the reward model"):
        build_verifiers([_Spec("reward_model", {"model": str(broken)}, "rm")])


def test_a_model_that_cannot_load_at_scoring_time_gives_absent_results(tmp_path: Path) -> None:
    verifier = build_verifier("reward_model", {"model": str(tmp_path / "gone")})  # not loaded: the web's view
    results = verifier(["a", "b"], [Sample("s", "q")] * 2)
    assert all(r.absent and "not a model folder" in r.detail["absent"] for r in results)


def test_building_it_for_a_config_check_loads_nothing() -> None:
    verifier = build_verifier("reward_model", {"model": "/no/such/folder"})
    assert isinstance(verifier, RewardModelVerifier) and verifier._rm is None


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"plain_template": "{prompt}"}, "must contain {completion}"),
        ({"plain_template": "{completion}{answer}"}, "only {prompt} and {completion}"),
        ({"plain_template": "{completion.__class__}"}, "only {prompt} and {completion}"),
        ({"micro_batch_size": 0}, "micro_batch_size"),
        ({"max_length": 10**9}, "max_length"),
        ({"normalize": "softmax"}, "normalize"),
    ],
)
def test_bad_params_are_refused_with_the_field(params: dict[str, object], message: str) -> None:
    with pytest.raises(VerifierError, match=message):
        build_verifier("reward_model", {"model": "tiny:chain", **params})


def test_chat_input_without_a_chat_template_is_refused_at_build(rm_dir: Path) -> None:
    with pytest.raises(
        ConfigError, match="input_format is 'chat' but the reward model's tokenizer has no chat"
    ):
        build_verifiers([_Spec("reward_model", {"model": str(rm_dir), "input_format": "chat"}, "rm")])
