"""Saved states resume exactly; saved weights sample as the session did; a state of another model is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.trainer.training_api.api_helpers import encode, new_session, sft_datum
from trainer.errors import CheckpointError
from trainer.training_api.limits import ApiLimits
from trainer.training_api.sampler import Sampler
from trainer.training_api.session import TrainingSession
from trainer.training_api.types import AdamParams, ApiDatum, ApiSampling

ADAM = AdamParams(learning_rate=2e-3, weight_decay=0.01)


def _data(session: TrainingSession) -> list[ApiDatum]:
    eos = [int(session.tokenizer.eos_token_id)]
    return [
        sft_datum(encode(session, p), encode(session, a) + eos) for p, a in [("37+58=", "59"), ("4+4=", "44")]
    ]


def _step(
    session: TrainingSession,
) -> tuple[float, dict[str, float], list[list[int]], dict[str, torch.Tensor]]:
    """One training step and a sample from the session's own generator: everything that must repeat."""
    loss = session.forward_backward(_data(session), "cross_entropy").metrics["loss:sum"]
    metrics = session.optim_step(ADAM)
    tokens = [
        s.tokens for s in session.sample(encode(session, "9+9="), 4, ApiSampling(max_tokens=4)).sequences
    ]
    return loss, metrics, tokens, {n: p.detach().clone() for n, p in session.model.named_parameters()}


def _same(a: tuple, b: tuple) -> bool:  # type: ignore[type-arg]
    return (
        a[0] == b[0]
        and a[1] == b[1]
        and a[2] == b[2]
        and a[3].keys() == b[3].keys()
        and all(torch.equal(a[3][n], b[3][n]) for n in a[3])
    )


@pytest.mark.parametrize("lora_rank", [None, 4])
def test_load_state_gives_identical_next_steps(tmp_path: Path, lora_rank: int | None) -> None:
    session = new_session(lora_rank=lora_rank)
    _step(session)  # the optimizer has moments to save
    session.save_state(tmp_path / "state")
    expected = _step(session)
    _step(session)  # move on, then come back
    session.load_state(tmp_path / "state")
    assert session.steps == 1
    assert _same(_step(session), expected)
    resumed = TrainingSession.from_state(tmp_path / "state", limits=ApiLimits(), device="cpu")
    assert _same(_step(resumed), expected)


def test_loading_without_the_optimizer_starts_fresh_moments_on_the_saved_weights(tmp_path: Path) -> None:
    session = new_session()
    _step(session)
    saved = {n: p.detach().clone() for n, p in session.model.named_parameters()}
    session.save_state(tmp_path / "state")
    _step(session)
    session.load_state(tmp_path / "state", with_optimizer=False)
    assert session.optimizer.state_dict()["state"] == {}
    assert all(torch.equal(saved[n], p) for n, p in session.model.named_parameters())


def test_saved_weights_sample_what_the_session_samples(tmp_path: Path) -> None:
    session = new_session()
    _step(session)
    session.save_weights(tmp_path / "weights")
    sampler = Sampler.from_directory(tmp_path / "weights", seed=0, limits=ApiLimits(), device="cpu")
    params = ApiSampling(max_tokens=5, seed=11, temperature=1.3)
    prompt = encode(session, "61+27=")
    ours = session.sample(prompt, 6, params, prompt_logprobs=True)
    theirs = sampler.sample(prompt, 6, params, prompt_logprobs=True)
    assert [s.tokens for s in ours.sequences] == [s.tokens for s in theirs.sequences]
    assert ours.prompt_logprobs == pytest.approx(theirs.prompt_logprobs, abs=1e-6)
    base = Sampler.from_base_model("tiny:addition", seed=0, limits=ApiLimits(), device="cpu")
    assert base.sample(prompt, 1, params, prompt_logprobs=True).prompt_logprobs != pytest.approx(
        ours.prompt_logprobs, abs=1e-6
    )  # the trained weights were saved, not the base


def test_a_state_of_another_model_is_refused(tmp_path: Path) -> None:
    new_session(lora_rank=4).save_state(tmp_path / "lora")
    with pytest.raises(CheckpointError, match=r"lora_rank 4.*this one has None"):
        new_session().load_state(tmp_path / "lora")


def test_weights_for_a_sampler_are_not_a_training_state(tmp_path: Path) -> None:
    session = new_session()
    session.save_weights(tmp_path / "weights")
    with pytest.raises(CheckpointError, match="not a complete training state"):
        session.load_state(tmp_path / "weights")
    with pytest.raises(CheckpointError, match="holds no saved weights"):
        Sampler.from_directory(tmp_path / "nothing", seed=0, limits=ApiLimits())


def test_a_failed_save_leaves_no_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = new_session()

    def boom(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(session.tokenizer, "save_pretrained", boom)
    with pytest.raises(OSError, match="disk full"):
        session.save_state(tmp_path / "state")
    assert list(tmp_path.iterdir()) == []
