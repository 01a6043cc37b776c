"""Beta-posterior prompt sampler (ThinkPrior, 001:L23), its prior file, and the uniform sampler's new hooks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainer.data.sampler import PromptSampler
from trainer.errors import CheckpointError, DataError
from trainer.methods.beta_sampler import BetaPromptSampler, load_pass_rates
from trainer.samples import Sample


def samples(n: int) -> list[Sample]:
    return [Sample(id=f"p{i}", prompt=str(i)) for i in range(n)]


def test_expected_learnability_is_the_posterior_mean_of_p_times_1_minus_p() -> None:
    s = BetaPromptSampler(samples(1), 1, seed=0, prior={"p0": 0.25}, prior_strength=4, thompson=False)
    a, b = 1 + 4 * 0.25, 1 + 4 * 0.75  # Beta(2, 4)
    assert s.learnability()[0] == pytest.approx(a * b / ((a + b) * (a + b + 1)))


def test_greedy_selection_prefers_prompts_near_half_pass_rate() -> None:
    prior = {"p0": 0.0, "p1": 1.0, "p2": 0.5, "p3": 0.4, "p4": 0.05}
    s = BetaPromptSampler(samples(5), 2, seed=0, prior=prior, prior_strength=20, thompson=False)
    assert [x.id for x in s.next_batch()] == ["p2", "p3"]


def test_observed_outcomes_update_the_posterior_and_the_rollout_count() -> None:
    s = BetaPromptSampler(samples(2), 1, seed=0)
    s.observe([("p0", 3, 8), ("p1", 0, 4)])
    assert (s.alpha.tolist(), s.beta.tolist(), s.rollouts_observed) == ([4.0, 1.0], [6.0, 5.0], 12)


def test_thompson_selection_explores_but_follows_the_posterior() -> None:
    # p0 is known to be ~50%, p1 known to be solved: p0 should be picked almost always.
    s = BetaPromptSampler(samples(2), 1, seed=0)
    s.observe([("p0", 50, 100), ("p1", 100, 100)])
    picks = [s.next_batch()[0].id for _ in range(200)]
    assert picks.count("p0") > 190


def test_a_restored_sampler_draws_what_the_original_would_have() -> None:
    a = BetaPromptSampler(samples(20), 4, seed=3)
    a.observe([("p1", 2, 4), ("p7", 0, 4)])
    a.next_batch()
    saved = json.loads(json.dumps(a.state_dict()))  # the state is JSON-serialisable
    b = BetaPromptSampler(samples(20), 4, seed=3)
    b.load_state_dict(saved)
    assert [[x.id for x in a.next_batch()] for _ in range(3)] == [
        [x.id for x in b.next_batch()] for _ in range(3)
    ]
    assert b.rollouts_observed == 8


def test_restoring_from_other_data_is_refused() -> None:
    state = BetaPromptSampler(samples(3), 1, seed=0).state_dict()
    with pytest.raises(CheckpointError, match="num_samples=3 but this run has num_samples=4"):
        BetaPromptSampler(samples(4), 1, seed=0).load_state_dict(state)
    with pytest.raises(CheckpointError, match="not 'beta_learnability'"):
        BetaPromptSampler(samples(3), 1, seed=0).load_state_dict(
            PromptSampler(samples(3), 1, 0, True).state_dict()
        )


def test_prior_file_as_json_object_and_as_jsonl(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"p0": 0.5, "p1": 1}))
    (tmp_path / "b.jsonl").write_text('{"id": "p0", "pass_rate": 0.5}\n\n{"id": 7, "pass_rate": 0}\n')
    assert load_pass_rates(tmp_path / "a.json") == {"p0": 0.5, "p1": 1.0}
    assert load_pass_rates(tmp_path / "b.jsonl") == {"p0": 0.5, "7": 0.0}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"p0": 1.5}', "pass rates are numbers in \\[0, 1\\]"),
        ('{"p0": "high"}', "pass rates are numbers"),
        ("[0.5]", "must be an object"),
        ('{"id": "p0"}\n{"id": "p1"}\n', 'needs "id" and "pass_rate"'),
        ("not json\n", "line 1 is not JSON"),
    ],
)
def test_bad_prior_files_say_what_to_fix(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "prior.jsonl"
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        load_pass_rates(path)


def test_missing_prior_file_and_unmatched_ids_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="does not exist"):
        load_pass_rates(tmp_path / "nope.json")
    with pytest.raises(DataError, match="none of the 1 prompt ids"):
        BetaPromptSampler(samples(2), 1, seed=0, prior={"other": 0.5})


def test_uniform_sampler_draws_extra_prompts_on_request_and_counts_rollouts() -> None:
    s = PromptSampler(samples(5), 2, seed=0, shuffle=False)
    assert [x.id for x in s.next_batch()] == ["p0", "p1"]
    assert [x.id for x in s.next_batch(3)] == ["p2", "p3", "p4"]
    s.observe([("p0", 1, 8), ("p1", 0, 3)])
    assert s.state_dict()["rollouts_observed"] == 11


def test_uniform_sampler_resumes_a_checkpoint_saved_before_the_rollout_counter() -> None:
    old = PromptSampler(samples(5), 2, seed=0, shuffle=True).state_dict()
    del old["rollouts_observed"]
    s = PromptSampler(samples(5), 2, seed=0, shuffle=True)
    s.load_state_dict(old)
    assert s.rollouts_observed == 0
