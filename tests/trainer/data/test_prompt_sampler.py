"""PromptSampler: seeded epochs, wrap-around and exact resume (trainer/data/sampler.py)."""

import json

import pytest

from trainer.data import PromptSampler
from trainer.errors import CheckpointError, DataError
from trainer.samples import Sample


def samples(n: int) -> list[Sample]:
    return [Sample(id=f"p{i}", prompt=f"{i}+0=", answer=str(i)) for i in range(n)]


def draw_ids(sampler: PromptSampler, batches: int) -> list[list[str]]:
    return [[s.id for s in sampler.next_batch()] for _ in range(batches)]


def test_the_same_seed_draws_the_same_prompts():
    first = draw_ids(PromptSampler(samples(10), prompts_per_step=3, seed=5, shuffle=True), 8)
    assert first == draw_ids(PromptSampler(samples(10), prompts_per_step=3, seed=5, shuffle=True), 8)


def test_another_seed_draws_another_order():
    first = draw_ids(PromptSampler(samples(10), prompts_per_step=10, seed=5, shuffle=True), 1)
    assert first != draw_ids(PromptSampler(samples(10), prompts_per_step=10, seed=6, shuffle=True), 1)


def test_each_epoch_visits_every_prompt_once_in_a_new_order():
    sampler = PromptSampler(samples(8), prompts_per_step=8, seed=0, shuffle=True)
    epoch_0, epoch_1 = draw_ids(sampler, 2)
    assert sorted(epoch_0) == sorted(epoch_1) == sorted(f"p{i}" for i in range(8))
    assert epoch_0 != epoch_1


def test_without_shuffle_prompts_come_in_file_order():
    assert draw_ids(PromptSampler(samples(4), prompts_per_step=3, seed=0, shuffle=False), 2) == [
        ["p0", "p1", "p2"],
        ["p3", "p0", "p1"],
    ]


def test_a_batch_continues_into_the_next_epoch():
    sampler = PromptSampler(samples(5), prompts_per_step=3, seed=1, shuffle=True)
    flat = [i for batch in draw_ids(sampler, 4) for i in batch]  # 12 prompts: epochs 0, 1 and 2 begun
    assert sorted(flat[:5]) == sorted(flat[5:10]) == [f"p{i}" for i in range(5)]
    assert sampler.epoch == 2


def test_the_epoch_counts_completed_passes():
    sampler = PromptSampler(samples(4), prompts_per_step=2, seed=0, shuffle=True)
    epochs = []
    for _ in range(4):
        sampler.next_batch()
        epochs.append(sampler.epoch)
    assert epochs == [0, 0, 1, 1]  # the epoch changes when its first prompt is drawn


def test_fewer_samples_than_prompts_per_step_still_fills_every_batch():
    sampler = PromptSampler(samples(2), prompts_per_step=5, seed=0, shuffle=True)
    batch = [s.id for s in sampler.next_batch()]
    assert len(batch) == 5
    assert sorted(batch[:2]) == sorted(batch[2:4]) == ["p0", "p1"]


def test_a_resumed_sampler_draws_what_an_uninterrupted_one_draws():
    straight = draw_ids(PromptSampler(samples(6), prompts_per_step=4, seed=9, shuffle=True), 7)

    before = PromptSampler(samples(6), prompts_per_step=4, seed=9, shuffle=True)
    first_three = draw_ids(before, 3)
    saved = json.loads(json.dumps(before.state_dict()))  # as a checkpoint stores it
    after = PromptSampler(samples(6), prompts_per_step=4, seed=9, shuffle=True)
    after.load_state_dict(saved)
    assert first_three + draw_ids(after, 4) == straight
    assert after.epoch == 4  # 28 prompts of 6: four epochs done, the fifth begun


def test_resuming_with_other_data_is_refused():
    sampler = PromptSampler(samples(6), prompts_per_step=2, seed=0, shuffle=True)
    state = sampler.state_dict()
    other = PromptSampler(
        [*samples(5), Sample(id="new", prompt="x")], prompts_per_step=2, seed=0, shuffle=True
    )
    with pytest.raises(CheckpointError, match="ids_sha256"):
        other.load_state_dict(state)


def test_resuming_with_another_seed_is_refused():
    state = PromptSampler(samples(6), prompts_per_step=2, seed=0, shuffle=True).state_dict()
    with pytest.raises(CheckpointError, match="seed=0 but this run has seed=1"):
        PromptSampler(samples(6), prompts_per_step=2, seed=1, shuffle=True).load_state_dict(state)


def test_an_empty_dataset_is_refused():
    with pytest.raises(DataError, match="no samples"):
        PromptSampler([], prompts_per_step=2, seed=0, shuffle=True)
