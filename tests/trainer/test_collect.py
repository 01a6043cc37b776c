"""trainer/step/collect.py on the real tiny models: plain GRPO unchanged, and every allocator's batch consistent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tests.trainer.loop_helpers import tiny_config
from trainer.data import render_prompt
from trainer.step.collect import StepRollouts, collect_rollouts
from trainer.step.run_setup import Run, build_run
from trainer.verifiers.scoring import score_batch


def warm_run(model_dir: Path, out: Path, **budget: Any) -> Run:
    """The warm addition model with an exact-match reward: many silent (all-wrong) groups, some mixed."""
    cfg = tiny_config(
        model_dir,
        out,
        verifiers=[{"name": "exact", "params": {"extract": "first_line"}}],
        rollout={"num_generations": 6, "max_completion_length": 6},
        training={"prompts_per_step": 4, "max_steps": 3},
        budget=budget,
    )
    return build_run(cfg, log=lambda m: None)


def assert_consistent(run: Run, ro: StepRollouts) -> None:
    """Rows, groups, scores and allocation records line up after dropping and reordering."""
    n = len(ro.batch)
    assert ro.group_ids.shape == (n,) and ro.rewards.shape == (n,) and len(ro.allocation) == n
    assert ro.group_ids.tolist() == sorted(ro.group_ids.tolist())  # each group contiguous
    assert ro.group_ids.max().item() + 1 == len(ro.samples) == len(ro.prompts)
    assert [ro.samples[g].id for g in ro.group_ids.tolist()] == [s.id for s in ro.group_samples]
    rescored = score_batch(run.verifiers, run.config.reward_weights, ro.batch.texts, ro.group_samples)
    assert rescored.total == ro.scores.total == ro.rewards.tolist()
    assert (
        run.tokenizer.batch_decode(
            [
                ids[: int(m.sum())]
                for ids, m in zip(ro.batch.completion_ids, ro.batch.completion_mask, strict=True)
            ],
            skip_special_tokens=True,
        )
        == ro.batch.texts
    )
    assert torch.all(ro.batch.logprobs[ro.batch.completion_mask == 0] == 0)
    sizes = torch.bincount(ro.group_ids).tolist()
    assert [a["group_size"] for a in ro.allocation] == [sizes[g] for g in ro.group_ids.tolist()]
    m = ro.metrics
    assert m["budget/rollouts_used"] == n <= m["budget/rollouts_generated"]


def test_default_collect_is_exactly_plain_grpo(random_model_dir: Path, tmp_path: Path) -> None:
    cfg = tiny_config(random_model_dir, tmp_path)
    a, b = build_run(cfg, log=lambda m: None), build_run(cfg, log=lambda m: None)
    ro = collect_rollouts(a, step=1)

    G = cfg.rollout.num_generations
    samples = b.sampler.next_batch()
    prompts = [render_prompt(s, cfg.data, b.tokenizer) for s in samples]
    batch = b.engine.generate([p for p in prompts for _ in range(G)], b.sampling, b.generator)
    scores = score_batch(b.verifiers, cfg.reward_weights, batch.texts, [s for s in samples for _ in range(G)])

    assert [s.id for s in ro.samples] == [s.id for s in samples] and ro.prompts == prompts
    assert torch.equal(ro.batch.completion_ids, batch.completion_ids)
    assert torch.equal(ro.batch.logprobs, batch.logprobs)
    assert ro.scores.total == scores.total
    assert torch.equal(ro.group_ids, torch.arange(len(samples)).repeat_interleave(G))
    assert ro.metrics["budget/rollouts_generated"] == ro.metrics["budget/rollouts_used"] == len(samples) * G
    assert ro.metrics["budget/generation_rounds"] == 1
    assert ro.metrics["budget/tokens_generated"] == int(batch.lengths.sum()) > 0


def test_dynamic_sampling_trains_only_on_informative_groups(warm_model_dir: Path, tmp_path: Path) -> None:
    run = warm_run(warm_model_dir, tmp_path, dynamic_sampling=True, max_generation_rounds=8)
    total = 0.0
    for step in (1, 2):
        ro = collect_rollouts(run, step)
        assert_consistent(run, ro)
        spread = [
            max(r) - min(r) for g in range(len(ro.samples)) for r in [ro.rewards[ro.group_ids == g].tolist()]
        ]
        assert all(s > 0 for s in spread)  # no silent group reaches the update
        m = ro.metrics
        assert m["budget/prompts_drawn"] - m["budget/dropped_groups"] == len(ro.samples) <= 4
        assert m["budget/generation_rounds"] > 1  # the warm model leaves many all-wrong groups to refill
        total += m["budget/rollouts_generated"]
        assert m["budget/cumulative_rollouts"] == total
        # dropped groups' tokens count too: more than the trained batch holds
        assert m["budget/tokens_generated"] > int(ro.batch.lengths.sum())


def test_vigor_spends_the_fixed_budget_unevenly(warm_model_dir: Path, tmp_path: Path) -> None:
    run = warm_run(
        warm_model_dir, tmp_path, allocator="vigor", vigor_initial_rollouts=2, vigor_rollout_budget=24
    )
    ro = collect_rollouts(run, 1)
    assert_consistent(run, ro)
    assert ro.metrics["budget/rollouts_generated"] == len(ro.batch) == 24
    assert ro.metrics["budget/generation_calls"] == 3
    sizes = torch.bincount(ro.group_ids).tolist()
    assert min(sizes) >= 2 and len(set(sizes)) > 1


def test_sara_abandons_hopeless_groups_and_completes_effective_ones(
    warm_model_dir: Path, tmp_path: Path
) -> None:
    run = warm_run(
        warm_model_dir,
        tmp_path,
        allocator="sara",
        sara_probe=2,
        sara_step=1,
        sara_abandon_below=0.5,
        sara_commit_above=0.9,
    )
    ro = collect_rollouts(run, 1)
    assert_consistent(run, ro)
    for g in range(len(ro.samples)):
        rows = [
            (a, c)
            for a, c, gid in zip(ro.allocation, ro.scores.correct, ro.group_ids.tolist(), strict=True)
            if gid == g
        ]
        size, abandoned = rows[0][0]["group_size"], rows[0][0]["abandoned"]
        outcomes = {c for _, c in rows}
        if abandoned:  # stopped early, unanimous so far
            assert size < 6 and len(outcomes) == 1
        else:
            assert size == 6
    # seeded: the warm model's step 1 has one all-wrong group that the test gives up on after 3 completions
    assert ro.metrics["budget/abandoned_groups"] >= 1 and ro.metrics["budget/rollouts_generated"] < 4 * 6


def test_early_abandon_stops_decided_groups_after_the_probe(warm_model_dir: Path, tmp_path: Path) -> None:
    run = warm_run(warm_model_dir, tmp_path, allocator="early_abandon", early_abandon_after=2)
    ro = collect_rollouts(run, 1)
    assert_consistent(run, ro)
    for g in range(len(ro.samples)):
        rows = [a for a, gid in zip(ro.allocation, ro.group_ids.tolist(), strict=True) if gid == g]
        assert rows[0]["group_size"] == (2 if rows[0]["abandoned"] else 6)
    assert ro.metrics["budget/abandoned_groups"] == sum(a["abandoned"] for a in ro.allocation) / 2


def test_beta_sampler_with_anchor_prior_picks_learnable_prompts(warm_model_dir: Path, tmp_path: Path) -> None:
    import json

    from trainer.data import load_samples

    run0 = warm_run(warm_model_dir, tmp_path / "probe")
    ids = [s.id for s in load_samples(run0.config.data)]
    prior = tmp_path / "prior.json"
    prior.write_text(json.dumps({i: (0.5 if n < 4 else 0.0) for n, i in enumerate(ids)}))
    run = warm_run(
        warm_model_dir,
        tmp_path / "run",
        prompt_sampler="beta_learnability",
        prior_file=str(prior),
        prior_strength=1000,
        thompson=False,
    )
    ro = collect_rollouts(run, 1)
    assert sorted(s.id for s in ro.samples) == sorted(ids[:4])


@pytest.mark.slow
@pytest.mark.parametrize(
    "budget",
    [
        {"allocator": "vigor", "dynamic_sampling": True, "prompt_sampler": "beta_learnability"},
        {"allocator": "early_abandon", "early_abandon_after": 3, "dynamic_sampling": True},
        {"allocator": "sara", "prompt_sampler": "beta_learnability"},
    ],
)
def test_training_with_budget_methods_reports_group_sizes_and_resumes_exactly(
    warm_model_dir: Path, tmp_path: Path, budget: dict[str, Any]
) -> None:
    from tests.trainer.loop_helpers import Steps
    from tests.trainer.test_resume import comparable
    from trainer.step.loop import train

    def config(out: Path, steps: int) -> Any:
        return tiny_config(
            warm_model_dir,
            out,
            verifiers=[{"name": "exact", "params": {"extract": "first_line"}}],
            rollout={"num_generations": 6, "max_completion_length": 6},
            training={"prompts_per_step": 3, "max_steps": steps},
            budget=budget,
        )

    straight, first, second = Steps(), Steps(), Steps()
    train(config(tmp_path / "a", 3), sink=straight, log=lambda m: None)
    train(config(tmp_path / "b", 2), sink=first, log=lambda m: None)
    train(config(tmp_path / "b", 3), sink=second, resume_from=tmp_path / "b", log=lambda m: None)
    for a, b in zip(straight.reports, first.reports + second.reports, strict=True):
        assert comparable(a) == pytest.approx(comparable(b), rel=1e-5, abs=1e-6)
        assert [r.completion for r in a.rollouts] == [r.completion for r in b.rollouts]
    last = straight.reports[-1]
    assert last.metrics["budget/cumulative_rollouts"] == sum(
        r.metrics["budget/rollouts_generated"] for r in straight.reports
    )
    by_group: dict[int, list[int]] = {}
    for record in last.rollouts:
        by_group.setdefault(record.group, []).append(record.sample_index)
        assert record.details["allocation"]["group_size"] == sum(
            r.group == record.group for r in last.rollouts
        )
    assert all(indices == list(range(len(indices))) for indices in by_group.values())


def test_a_group_relative_rubric_is_aggregated_over_whole_groups_under_vigor(
    warm_model_dir: Path, tmp_path: Path
) -> None:
    """VIGOR spreads a group over several generation calls; the 'rank' rubric reward must still compare each
    completion with its whole group, not only with the completions of its own call."""
    from trainer.rubrics.scoring import criterion_key

    rubric = {
        "aggregation": "rank",
        "reward_weight": 1.0,
        "criteria": [
            {
                "name": "right",
                "scorer": "rule",
                "rule": {
                    "type": "verifier",
                    "params": {"name": "exact", "params": {"extract": "first_line"}},
                },
            },
            {
                "name": "short",
                "scale": "range",
                "min_value": 0,
                "max_value": 1,
                "scorer": "rule",
                "rule": {"type": "length", "params": {"unit": "chars", "max": 2}},
            },
        ],
    }
    cfg = tiny_config(
        warm_model_dir,
        tmp_path,
        verifiers=[{"name": "exact", "params": {"extract": "first_line"}}],
        rollout={"num_generations": 6, "max_completion_length": 6},
        rubric=rubric,
        training={"prompts_per_step": 4},
        budget={"allocator": "vigor", "vigor_initial_rollouts": 2, "vigor_rollout_budget": 24},
    )
    run = build_run(cfg, log=lambda m: None)
    assert run.rubric is not None
    ro = collect_rollouts(run, step=1)
    assert ro.metrics["budget/generation_calls"] > 1  # groups really were spread over calls
    criteria = run.rubric.criteria
    matrix = [
        [ro.scores.details[i][criterion_key(c.name)]["score"] for c in criteria] for i in range(len(ro.batch))
    ]
    whole = run.rubric.aggregate(matrix, criteria, ro.group_ids.tolist())
    assert ro.scores.per_verifier["rubric"] == pytest.approx(whole)
    verifiers = score_batch(run.verifiers, cfg.reward_weights, ro.batch.texts, ro.group_samples)
    assert ro.scores.total == pytest.approx([v + w for v, w in zip(verifiers.total, whole, strict=True)])
