"""The official Tinker SDK (``tinker==0.38.0``), pointed at this platform with ``base_url``, trains tiny:addition
through the real web server (daphne) and a real Celery worker: a supervised step lowers the loss, a short RL loop
(sample, score with the trainer's exact-match verifier, importance_sampling, optim_step) raises the reward, and
the session is an ordinary run (source tinker) with its metrics, rollouts (tokens, logprobs, advantages) and
checkpoints; cancelling the run on the platform stops the client's next call with a message saying so."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.workers.helpers import make_project, make_user, wait_for
from tests.workers.tinker_helpers import sft_datum, tinker_clients, tinker_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]
tinker = pytest.importorskip("tinker")  # the test/dev extra pins it


@pytest.fixture
def open_client(
    real_services: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., Any]]:
    with tinker_server(tmp_path, monkeypatch, idle_s=30) as url, tinker_clients(url + "/tinker") as opener:
        yield opener


def rl_step(training: Any, tokenizer: Any, problems: list[tuple[str, str]], verifier: Any) -> float:
    """One step of a plain Tinker RL loop: sample 8 per prompt from the saved weights, score, group-centred
    advantages, importance_sampling, optim_step. Returns the mean reward of the samples."""
    from tinker import types

    from trainer.samples import Sample

    sampler = training.save_weights_and_get_sampling_client().result()
    params = types.SamplingParams(max_tokens=5, temperature=1.0)
    futures = [
        (prompt, answer, sampler.sample(types.ModelInput.from_ints(tokenizer.encode(prompt)), 8, params))
        for prompt, answer in problems
    ]
    data, rewards = [], []
    for prompt, answer, future in futures:
        sequences = future.result().sequences
        texts = [tokenizer.decode(s.tokens, skip_special_tokens=True) for s in sequences]
        scores = [
            r.reward for r in verifier(texts, [Sample(id=prompt, prompt=prompt, answer=answer)] * len(texts))
        ]
        rewards += scores
        mean = sum(scores) / len(scores)
        prompt_ids = tokenizer.encode(prompt)
        for sequence, score in zip(sequences, scores, strict=True):
            if score == mean:
                continue
            ids, pad = prompt_ids + list(sequence.tokens), [0.0] * (len(prompt_ids) - 1)
            inputs = {
                "target_tokens": ids[1:],
                "logprobs": pad + list(sequence.logprobs),
                "advantages": pad + [score - mean] * len(sequence.tokens),
            }
            data.append(types.Datum(model_input=types.ModelInput.from_ints(ids[:-1]), loss_fn_inputs=inputs))
    if data:
        training.forward_backward(data, "importance_sampling").result()
    training.optim_step(types.AdamParams(learning_rate=LEARNING_RATE)).result()
    return sum(rewards) / len(rewards)


LEARNING_RATE = 2e-3
RL_STEPS = 16


def test_the_tinker_sdk_trains_the_tiny_model_through_the_platform(
    open_client: Callable[..., Any], start_worker: Any
) -> None:
    from tinker import types

    from trainer.models.tiny_recipes import addition_held_out
    from trainer.verifiers.base import build_verifier
    from webapp.experiments.models import Checkpoint, MetricPoint, Rollout, RunSource, RunStatus
    from webapp.training_api.models import TinkerModel

    worker = start_worker("tinker@%h")
    owner = make_user("tinkerer")
    project = make_project(owner, "tinker-lab")
    service = open_client(owner, project)
    training = service.create_lora_training_client(base_model="tiny:addition", rank=16, seed=0).result()
    tokenizer = training.get_tokenizer()

    datum = sft_datum(tokenizer, "12+7=", "19")
    losses = []
    for _ in range(3):
        losses.append(training.forward_backward([datum], "cross_entropy").result().metrics["loss:sum"])
        training.optim_step(types.AdamParams(learning_rate=1e-3)).result()
    assert losses[-1] < losses[0] - 0.1, losses

    verifier = build_verifier("exact")
    problems = addition_held_out(8, seed=5)
    rewards = [rl_step(training, tokenizer, problems, verifier) for _ in range(RL_STEPS)]
    first, last = statistics.mean(rewards[:4]), statistics.mean(rewards[-4:])
    assert last > first + 0.2, [round(r, 3) for r in rewards]  # seen: about 0.2 -> 0.65

    model = TinkerModel.objects.get()
    run = model.run
    assert (run.source, run.status, run.step) == (RunSource.TINKER, RunStatus.RUNNING, 3 + RL_STEPS)

    def keys_at(step: int) -> set[str]:
        return set(MetricPoint.objects.filter(run=run, step=step).values_list("key", flat=True))

    # A supervised step reports its forward_backward sums with the optimizer's figures; an RL step whose groups
    # all scored alike trains on nothing (no forward_backward), so the last step may carry the optimizer's alone.
    assert {"actor/loss_sum", "actor/grad_norm", "actor/lr", "perf/step_tokens"} <= keys_at(1)
    assert {"actor/grad_norm", "actor/lr"} <= keys_at(run.step)
    sampled = Rollout.objects.filter(run=run, details__tinker__call="sample")
    trained = Rollout.objects.filter(run=run, details__tinker__loss_fn="importance_sampling")
    assert sampled.count() >= 8 * 8 * RL_STEPS // 2 and trained.exists()
    assert Checkpoint.objects.filter(run=run).exists()

    from webapp.experiments.selectors import rollout_detail

    one = trained.first()
    assert one is not None
    detail = rollout_detail(run=run, rollout_id=one.pk)
    assert all(detail.channels[name] for name in ("advantage", "old_logprob", "logprob")), detail.channels

    listed = service.create_rest_client().list_checkpoints(model.pk).result().checkpoints
    assert listed and all(c.tinker_path.startswith(f"tinker://{model.pk}/sampler_weights/") for c in listed)

    from webapp.experiments.services import run_cancel

    run_cancel(run=run, actor=owner)  # the page's Cancel: the worker stops at its next call
    wait_for(lambda: _status(run.pk) == RunStatus.CANCELLED, 30, "the run to be cancelled", worker)
    with pytest.raises(Exception, match="new training client"):
        training.optim_step(types.AdamParams(learning_rate=1e-3)).result()


def _status(run_id: int) -> str:
    from webapp.experiments.models import Run

    return str(Run.objects.get(pk=run_id).status)
