"""A TrainingSession on tiny:addition: its scoring is the trainer's, its updates train, its inputs are checked."""

from __future__ import annotations

import pytest
import torch

from tests.trainer.training_api.api_helpers import encode, new_session, rl_datum, sft_datum
from trainer.errors import ConfigError
from trainer.models.logprobs import completion_logprobs
from trainer.training_api.limits import ApiInputError, ApiLimits
from trainer.training_api.session import TrainingSession
from trainer.training_api.types import AdamParams, ApiDatum, ApiSampling


@pytest.fixture
def session() -> TrainingSession:
    return new_session()


PROBLEMS = [("37+58=", "95"), ("12+7=", "19"), ("80+44=", "124"), ("5+5=", "10")]


def _sft_batch(session: TrainingSession, wrong: bool = False) -> list[ApiDatum]:
    eos = [int(session.tokenizer.eos_token_id)]
    return [
        sft_datum(encode(session, p), encode(session, a[::-1] if wrong else a) + eos) for p, a in PROBLEMS
    ]


def _params(session: TrainingSession) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in session.model.named_parameters()}


def test_forward_scores_sampled_tokens_as_the_trainer_and_the_sampler_do(session: TrainingSession) -> None:
    prompt = encode(session, "37+58=")
    seqs = session.sample(prompt, 3, ApiSampling(max_tokens=6, seed=1)).sequences
    data = [rl_datum(prompt, s.tokens, s.logprobs, 1.0) for s in seqs]
    out = session.forward(data, "importance_sampling")
    for seq, datum_out in zip(seqs, out.outputs, strict=True):
        n = len(seq.tokens)
        p = torch.tensor([prompt])
        c = torch.tensor([seq.tokens])
        with torch.no_grad():
            trainer_logp, _ = completion_logprobs(
                session.model, p, torch.ones_like(p), c, torch.ones_like(c), 1.0
            )
        assert torch.allclose(datum_out["logprobs"][-n:], trainer_logp[0], atol=1e-5)
        assert torch.allclose(datum_out["logprobs"][-n:], torch.tensor(seq.logprobs), atol=1e-5)
    # On-policy, every ratio is 1: the importance-sampling loss is -sum(A) over the sampled tokens.
    assert out.metrics["loss:sum"] == pytest.approx(-sum(len(s.tokens) for s in seqs), abs=1e-3)


def test_prompt_logprobs_are_the_forward_logprobs_of_the_prompt(session: TrainingSession) -> None:
    prompt = encode(session, "80+44=")
    result = session.sample(prompt, 1, ApiSampling(max_tokens=2), prompt_logprobs=True)
    datum = ApiDatum(prompt[:-1], {"target_tokens": prompt[1:], "weights": [1.0] * (len(prompt) - 1)})
    forward = session.forward([datum], "cross_entropy").outputs[0]["logprobs"]
    assert result.prompt_logprobs is not None and result.prompt_logprobs[0] is None
    assert result.prompt_logprobs[1:] == pytest.approx(forward.tolist(), abs=1e-5)


def test_micro_batching_does_not_change_logprobs_or_loss(session: TrainingSession) -> None:
    data = _sft_batch(session)
    whole = session.forward(data, "cross_entropy")
    small = new_session(limits=ApiLimits(micro_batch_tokens=8)).forward(data, "cross_entropy")
    assert small.metrics["loss:sum"] == pytest.approx(whole.metrics["loss:sum"], rel=1e-5)
    for datum, a, b in zip(data, whole.outputs, small.outputs, strict=True):
        assert a["logprobs"].shape == a["elementwise_loss"].shape == (len(datum.input_tokens),)
        assert torch.allclose(a["logprobs"], b["logprobs"], atol=1e-5)
        assert torch.allclose(a["elementwise_loss"], b["elementwise_loss"], atol=1e-5)


def test_forward_leaves_no_gradient_and_forward_backward_accumulates_across_calls(
    session: TrainingSession,
) -> None:
    data = _sft_batch(session)
    session.forward(data, "cross_entropy")
    assert all(p.grad is None for p in session.model.parameters())
    session.forward_backward(data[:2], "cross_entropy")
    session.forward_backward(data[2:], "cross_entropy")
    split = [p.grad.clone() for p in session.model.parameters() if p.grad is not None]
    other = new_session()
    other.forward_backward(data, "cross_entropy")
    together = [p.grad for p in other.model.parameters() if p.grad is not None]
    assert len(split) == len(together) > 0
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(split, together, strict=True))


def test_an_optimizer_step_changes_the_parameters_and_zeroes_the_gradients(session: TrainingSession) -> None:
    before = _params(session)
    session.forward_backward(_sft_batch(session, wrong=True), "cross_entropy")
    metrics = session.optim_step(AdamParams(learning_rate=1e-3))
    assert metrics["grad_norm:mean"] > 0 and metrics["step:max"] == 1.0
    after = _params(session)
    assert any(not torch.equal(before[n], after[n]) for n in before)
    assert all(p.grad is None for p in session.model.parameters())


def test_cross_entropy_steps_lower_the_loss_on_a_fixed_batch(session: TrainingSession) -> None:
    data = _sft_batch(session, wrong=True)  # reversed answers: far from what the model says
    first = session.forward(data, "cross_entropy").metrics["loss:sum"]
    for _ in range(8):
        session.forward_backward(data, "cross_entropy")
        session.optim_step(AdamParams(learning_rate=3e-3))
    last = session.forward(data, "cross_entropy").metrics["loss:sum"]
    assert last < 0.5 * first


def test_the_learning_rate_of_each_step_is_the_clients(session: TrainingSession) -> None:
    before = _params(session)
    session.forward_backward(_sft_batch(session), "cross_entropy")
    session.optim_step(AdamParams(learning_rate=0.0))
    assert all(torch.equal(before[n], p) for n, p in session.model.named_parameters())


def test_lora_trains_only_the_adapter() -> None:
    session = new_session(lora_rank=4)
    frozen = {n: p.detach().clone() for n, p in session.model.named_parameters() if not p.requires_grad}
    adapters = {n: p.detach().clone() for n, p in session.model.named_parameters() if p.requires_grad}
    assert adapters and all("lora_" in n for n in adapters)
    session.forward_backward(_sft_batch(session, wrong=True), "cross_entropy")
    session.optim_step(AdamParams(learning_rate=1e-2))
    params = dict(session.model.named_parameters())
    assert all(torch.equal(frozen[n], params[n]) for n in frozen)
    assert any(not torch.equal(adapters[n], params[n]) for n in adapters)


def test_a_target_outside_the_vocabulary_is_named(session: TrainingSession) -> None:
    datum = _sft_batch(session)[1]
    targets = list(datum.inputs["target_tokens"])  # type: ignore[arg-type]
    targets[2] = 10_000
    datum.inputs["target_tokens"] = targets
    with pytest.raises(ApiInputError, match="token id 10000 is outside this model's vocabulary") as err:
        session.forward_backward([datum], "cross_entropy")
    assert err.value.field == "data[0].loss_fn_inputs.target_tokens[2]"
    assert all(p.grad is None for p in session.model.parameters())


def test_bad_values_are_named(session: TrainingSession) -> None:
    datum = _sft_batch(session)[0]
    datum.inputs["target_tokens"] = [float(t) + 0.5 for t in datum.inputs["target_tokens"]]  # type: ignore[union-attr]
    with pytest.raises(ApiInputError, match="must hold integer token ids"):
        session.forward([datum], "cross_entropy")
    datum = _sft_batch(session)[0]
    datum.inputs["weights"] = [float("nan")] * len(datum.input_tokens)
    with pytest.raises(ApiInputError, match="NaN or infinite"):
        session.forward([datum], "cross_entropy")
    datum = _sft_batch(session)[0]
    datum.input_tokens = [-1, *datum.input_tokens[1:]]
    with pytest.raises(ApiInputError, match=r"data\[0\].model_input\[0\]: token id -1"):
        session.forward([datum], "cross_entropy")


def test_an_unknown_loss_is_refused_before_any_work(session: TrainingSession) -> None:
    with pytest.raises(ApiInputError, match=r"'custom' is not supported.*cross_entropy, importance_sampling"):
        session.forward_backward(_sft_batch(session), "custom")


def test_a_missing_base_model_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        TrainingSession.create(base_model="/nowhere/model", lora_rank=None, seed=0, limits=ApiLimits())


def test_a_seeded_sample_is_reproducible_and_stops_where_asked(session: TrainingSession) -> None:
    prompt = encode(session, "12+7=")
    params = ApiSampling(max_tokens=6, seed=7, temperature=1.5)
    first = session.sample(prompt, 4, params).sequences
    assert [s.tokens for s in first] == [s.tokens for s in session.sample(prompt, 4, params).sequences]
    eos = int(session.tokenizer.eos_token_id)
    ended = [s for s in first if s.stop_reason == "stop"]
    assert all(s.tokens[-1] == eos for s in ended)
    never = session.sample(prompt, 4, ApiSampling(max_tokens=6, seed=7, stop=[])).sequences
    assert all(len(s.tokens) == 6 and s.stop_reason == "length" for s in never)


def test_stop_token_ids_replace_eos(session: TrainingSession) -> None:
    prompt = encode(session, "12+7=")
    stop_id = encode(session, "1")[0]  # the answer 19 starts with the digit 1
    seqs = session.sample(prompt, 8, ApiSampling(max_tokens=6, seed=3, stop=[stop_id])).sequences
    for s in seqs:
        assert (s.stop_reason == "stop") == (s.tokens[-1] == stop_id)
        assert stop_id not in s.tokens[:-1]
    assert any(s.stop_reason == "stop" for s in seqs)


def test_stop_strings_end_at_the_token_that_completes_them(session: TrainingSession) -> None:
    prompt = encode(session, "80+44=")
    seqs = session.sample(prompt, 8, ApiSampling(max_tokens=6, seed=2, stop=["2"])).sequences
    by_string = [
        s for s in seqs if s.stop_reason == "stop" and s.tokens[-1] != session.tokenizer.eos_token_id
    ]
    assert by_string  # the answer 124 holds a 2
    for s in by_string:
        text = session.tokenizer.decode(s.tokens, skip_special_tokens=True)
        assert text.endswith("2") and "2" not in text[:-1]
