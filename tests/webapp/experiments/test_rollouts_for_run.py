from __future__ import annotations

import math

import pytest
from django.http import Http404

from tests.webapp.helpers import record_steps, rollout_record
from trainer.sinks import TOKEN_CHANNELS
from webapp.experiments.models import Run
from webapp.experiments.selectors import rollout_detail, rollouts_for_run
from webapp.experiments.services import run_record_step


@pytest.fixture
def stored(run: Run) -> Run:
    record_steps(
        run, range(1, 4), groups=2, samples=2
    )  # 3 steps x 4 rollouts; even samples correct, reward 1
    run_record_step(
        run_id=run.pk,
        step=4,
        max_steps=20,
        metrics={},
        rollouts=[
            rollout_record(4, 0, 0, completion="the answer is 42", finish_reason="length", reward=0.25)
        ],
    )
    return run


def test_rollouts_filter_by_step(stored: Run) -> None:
    assert {r.step for r in rollouts_for_run(run=stored, step=2)} == {2}


def test_rollouts_filter_by_reward_range(stored: Run) -> None:
    rewards = {r.reward for r in rollouts_for_run(run=stored, reward_min=0.2, reward_max=0.5)}
    assert rewards == {0.25}


def test_rollouts_filter_by_correctness(stored: Run) -> None:
    assert {r.sample_index for r in rollouts_for_run(run=stored, correct=False)} == {1}


def test_rollouts_filter_by_finish_reason(stored: Run) -> None:
    assert [r.step for r in rollouts_for_run(run=stored, finish_reason="length")] == [4]


def test_rollouts_search_the_completion_text_case_insensitively(stored: Run) -> None:
    assert [r.completion for r in rollouts_for_run(run=stored, search="ANSWER IS")] == ["the answer is 42"]


def test_rollouts_come_in_step_group_sample_order(stored: Run) -> None:
    keys = [(r.step, r.group, r.sample_index) for r in rollouts_for_run(run=stored)]
    assert keys == sorted(keys)


def test_a_rollout_detail_round_trips_the_packed_token_arrays(run: Run) -> None:
    original = rollout_record(1, n_tokens=300)
    run_record_step(run_id=run.pk, step=1, max_steps=20, metrics={}, rollouts=[original])
    detail = rollout_detail(run=run, rollout_id=rollouts_for_run(run=run).get().pk)
    assert detail.token_ids == original.token_ids
    assert detail.channels["ref_logprob"] is None  # not recorded (beta = 0)
    for channel in TOKEN_CHANNELS:
        if channel == "ref_logprob":
            continue
        got = detail.channels[channel]
        assert got is not None
        assert all(
            math.isclose(a or 0.0, b, rel_tol=1e-6)
            for a, b in zip(got, original.token_values[channel], strict=True)
        )


def test_a_rollout_of_another_run_is_not_found(run: Run, experiment: object) -> None:
    from webapp.experiments.services import run_launch

    other = run_launch(experiment=run.experiment, actor=run.created_by)  # type: ignore[arg-type]
    record_steps(other, range(1, 2))
    with pytest.raises(Http404):
        rollout_detail(run=run, rollout_id=rollouts_for_run(run=other).first().pk)  # type: ignore[union-attr]
