"""The implicit step scorer (trainer/process/implicit_prm.py) on a tiny random model: step scores equal
sigmoid(beta * the step's summed log-ratio), a PRM equal to its reference scores every step 0.5, the online update
moves the PRM toward the outcome labels and leaves the reference alone, and what cannot work is refused."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
from pydantic import ValidationError
from transformers import AutoTokenizer

from trainer.config.process_reward import ProcessRewardConfig
from trainer.errors import CheckpointError, ConfigError
from trainer.process.implicit_prm import ImplicitPRMParams, ImplicitPRMState, build_implicit_prm
from trainer.process.scorers import STEP_SCORERS, ScorerContext, StepScoreBatch
from trainer.samples import Sample

PROMPTS = ["12+3=", "7+8=", "40+2=", "5+5="]
COMPLETIONS = ["15\n#### 15", "16\n#### 16", "42\n#### 42", "9\n#### 9"]
CORRECT = [True, False, True, False]
# Two steps per completion: the working line and the answer line (half-open token spans).
SPANS = [[(0, 3), (3, 10)], [(0, 3), (3, 10)], [(0, 3), (3, 10)], [(0, 2), (2, 8)]]


@pytest.fixture(scope="module")
def tok(random_model_dir: Path) -> Any:
    return AutoTokenizer.from_pretrained(random_model_dir)


def _state(model_dir: Path, tok: Any, **params: Any) -> tuple[ImplicitPRMState, ImplicitPRMParams]:
    p = ImplicitPRMParams(**params)
    return build_implicit_prm(p, str(model_dir), torch.float32, torch.device("cpu"), tok), p


def _ids(tok: Any, texts: list[str]) -> list[list[int]]:
    return [list(tok(t, add_special_tokens=False)["input_ids"]) for t in texts]


def _score(state: ImplicitPRMState, params: ImplicitPRMParams, tok: Any) -> StepScoreBatch:
    ids = _ids(tok, COMPLETIONS)
    assert [len(i) for i in ids] == [row[-1][1] for row in SPANS]  # the char tokenizer: one token a character
    context = ScorerContext(
        params=params,
        tokenizer=tok,
        prompts=PROMPTS,
        correct=list(CORRECT),
        micro_batch_size=3,  # two micro-batches of unequal size
        state=state,
    )
    samples = [Sample(str(i), p, "") for i, p in enumerate(PROMPTS)]
    return STEP_SCORERS.get("implicit").score(COMPLETIONS, samples, SPANS, ids, context)


def _token_logprobs(model: Any, prompt: list[int], completion: list[int]) -> list[float]:
    """Each completion token's log-probability, one unpadded sequence at a time (the reference computation)."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + completion])).logits[0].double()  # [L, V]
    logp = torch.log_softmax(logits, dim=-1)
    return [float(logp[len(prompt) + t - 1, tok]) for t, tok in enumerate(completion)]


def _perturb(model: Any, seed: int = 0) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=gen))


def test_a_prm_equal_to_its_reference_scores_every_step_exactly_one_half(
    random_model_dir: Path, tok: Any
) -> None:
    state, params = _state(random_model_dir, tok, updates_per_step=0)
    got = _score(state, params, tok)
    assert got.scores == [[0.5] * len(row) for row in SPANS]
    assert got.metrics["process/implicit_reward_mean"] == 0.0
    assert all(d["implicit_rewards"] == [0.0] * len(row) for d, row in zip(got.detail, SPANS, strict=True))


def test_a_step_scores_the_sigmoid_of_beta_times_its_summed_log_ratio(
    random_model_dir: Path, tok: Any
) -> None:
    state, params = _state(random_model_dir, tok, beta=0.5, updates_per_step=0)
    _perturb(state.model)
    got = _score(state, params, tok)
    raws = []
    for prompt, completion, row, scores in zip(
        _ids(tok, PROMPTS), _ids(tok, COMPLETIONS), SPANS, got.scores, strict=True
    ):
        phi = _token_logprobs(state.model, prompt, completion)
        ref = _token_logprobs(state.ref, prompt, completion)
        for (s, e), score in zip(row, scores, strict=True):
            raw = 0.5 * sum(phi[t] - ref[t] for t in range(s, e))
            raws.append(raw)
            assert score == pytest.approx(1 / (1 + math.exp(-raw)), abs=1e-5)
    assert any(abs(r) > 1e-2 for r in raws)  # the perturbation moved the scores off 0.5
    assert got.metrics["process/implicit_reward_mean"] == pytest.approx(sum(raws) / len(raws), abs=1e-5)


def test_the_online_update_moves_the_prm_toward_the_outcome_labels_and_leaves_the_reference(
    random_model_dir: Path, tok: Any
) -> None:
    state, params = _state(random_model_dir, tok, beta=0.5, lr=1e-3, updates_per_step=1)
    start = [p.detach().clone() for p in state.model.parameters()]
    ref_start = [p.detach().clone() for p in state.ref.parameters()]
    metrics = [_score(state, params, tok).metrics for _ in range(6)]
    losses = [m["process/implicit_loss"] for m in metrics]
    assert losses[0] == pytest.approx(math.log(2), abs=1e-5)  # sigmoid(0) = 0.5 against every label
    assert losses[-1] < losses[0] - 0.05
    assert metrics[-1]["process/implicit_acc"] == 1.0  # the sum's sign now tells right from wrong
    assert state.updates == 6
    assert any(not torch.equal(a, b) for a, b in zip(start, state.model.parameters(), strict=True))
    assert all(torch.equal(a, b) for a, b in zip(ref_start, state.ref.parameters(), strict=True))
    rewards = [sum(d["implicit_rewards"]) for d in _score(state, params, tok).detail]
    assert min(r for r, c in zip(rewards, CORRECT, strict=True) if c) > max(
        r for r, c in zip(rewards, CORRECT, strict=True) if not c
    )


def test_several_updates_per_step_take_that_many_optimizer_steps(random_model_dir: Path, tok: Any) -> None:
    state, params = _state(random_model_dir, tok, updates_per_step=3)
    _score(state, params, tok)
    assert state.updates == 3
    assert state.checkpoint_state()["optimizer"]["state"]  # AdamW's moments exist, to be saved


def test_the_runs_reference_is_reused_only_when_the_prm_starts_from_the_policys_weights(
    random_model_dir: Path, tok: Any
) -> None:
    from trainer.models.lora import load_causal_lm

    ref = load_causal_lm(random_model_dir, torch.float32)
    p = ImplicitPRMParams()
    shared = build_implicit_prm(
        p, str(random_model_dir), torch.float32, torch.device("cpu"), tok, ref_model=ref
    )
    assert shared.ref is ref and not any(q.requires_grad for q in ref.parameters())
    named = ImplicitPRMParams(model=str(random_model_dir))
    own = build_implicit_prm(
        named, str(random_model_dir), torch.float32, torch.device("cpu"), tok, ref_model=ref
    )
    assert own.ref is not ref


def test_the_scorer_refuses_bad_params_saying_which_bound(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="beta"):
        ProcessRewardConfig.model_validate({"scorer": {"name": "implicit", "params": {"beta": 0}}})
    with pytest.raises(ValidationError, match="updates_per_step"):
        ProcessRewardConfig.model_validate(
            {"scorer": {"name": "implicit", "params": {"updates_per_step": 17}}}
        )
    with pytest.raises(ValidationError, match="lr"):
        ProcessRewardConfig.model_validate({"scorer": {"name": "implicit", "params": {"lr": 1.0}}})
    chosen = ProcessRewardConfig.model_validate({"scorer": "implicit"}).scorer.params
    assert (chosen.beta, chosen.lr, chosen.updates_per_step, chosen.model) == (0.05, 1e-4, 1, None)


def test_a_start_that_is_no_model_folder_is_refused_with_how_to_fix(tmp_path: Path, tok: Any) -> None:
    params = ImplicitPRMParams(model=str(tmp_path))
    with pytest.raises(ConfigError, match=r"not a model folder.*leave it null"):
        build_implicit_prm(params, str(tmp_path), torch.float32, torch.device("cpu"), tok)


def test_resuming_from_a_checkpoint_without_the_prm_is_refused(
    random_model_dir: Path, tmp_path: Path, tok: Any
) -> None:
    with pytest.raises(CheckpointError, match="no implicit PRM state"):
        build_implicit_prm(
            ImplicitPRMParams(),
            str(random_model_dir),
            torch.float32,
            torch.device("cpu"),
            tok,
            resume_dir=tmp_path,
        )


def test_a_start_model_whose_vocabulary_is_smaller_than_the_policys_tokenizer_is_refused(
    random_model_dir: Path, tmp_path: Path, tok: Any
) -> None:
    from transformers import AutoModelForCausalLM

    small = AutoModelForCausalLM.from_pretrained(random_model_dir)
    small.resize_token_embeddings(len(tok) - 4)
    small.save_pretrained(tmp_path / "small")
    params = ImplicitPRMParams(model=str(tmp_path / "small"))
    with pytest.raises(ConfigError, match="policy's tokenizer"):
        build_implicit_prm(params, str(random_model_dir), torch.float32, torch.device("cpu"), tok)


def test_completions_dropped_for_an_absent_reward_do_not_train_the_prm(
    random_model_dir: Path, tok: Any
) -> None:
    """An update with completions 1 and 3 dropped equals an update on completions 0 and 2 alone."""
    samples = [Sample(str(i), p, "") for i, p in enumerate(PROMPTS)]
    got = []
    for keep, dropped in (([0, 1, 2, 3], [False, True, False, True]), ([0, 2], None)):
        state, params = _state(random_model_dir, tok, beta=0.5, lr=1e-3)
        context = ScorerContext(
            params=params,
            tokenizer=tok,
            prompts=[PROMPTS[i] for i in keep],
            correct=[CORRECT[i] for i in keep],
            micro_batch_size=3,
            state=state,
            dropped=dropped,
        )
        texts = [COMPLETIONS[i] for i in keep]
        spans = [SPANS[i] for i in keep]
        batch = STEP_SCORERS.get("implicit").score(
            texts, [samples[i] for i in keep], spans, _ids(tok, texts), context
        )
        got.append((batch.metrics, [p.detach().clone() for p in state.model.parameters()]))
    (dropped_metrics, dropped_params), (alone_metrics, alone_params) = got
    assert dropped_metrics["process/implicit_loss"] == pytest.approx(alone_metrics["process/implicit_loss"])
    # Adam's first step moves a weight by about lr (1e-3) whatever its gradient's size, so a dropped completion that
    # trained would move weights by ~1e-3; equal up to rounding is far below that. (The two batches pack into rows of
    # different lengths, and Adam's division scales a gradient's rounding up where the gradient is near 0.)
    diffs = torch.cat([(a - b).abs().flatten() for a, b in zip(dropped_params, alone_params, strict=True)])
    assert float(diffs.max()) < 1e-5
