"""Step-wide statistics across processes (trainer/distributed/context.py ``all_ranks``): on a real 2-rank gloo
group (two forked processes, a second or two), each rank holding half of a step gets exactly its half of the
1-process result: REINFORCE++'s whitening, GRPO's batch std, the top-entropy and HISPO quantiles, GAPO's rms,
VIGOR's deal. Also the gather of uneven shares, a replicated step, and the report of uneven shares."""

from __future__ import annotations

import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from tests.trainer.fork_ranks import run_forked_ranks
from trainer.distributed.context import DistContext, all_ranks, balanced_share, set_step_replicated
from trainer.methods.advantages import GRPOParams, grpo, reinforce_pp
from trainer.methods.allocation import Group, VIGORParams, vigor
from trainer.methods.policy_losses import GAPOParams, gapo_clip_scale
from trainer.methods.segments import segment_boundaries
from trainer.methods.token_credit import top_fraction_mask
from trainer.samples import Sample
from trainer.sinks import RolloutRecord, StepReport

GROUPS, G, T = 4, 4, 6  # 4 groups of 4 completions of up to 6 tokens; rank r holds groups 2r, 2r + 1


def _step() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(rewards [N], group_ids [N], lengths [N], entropy [N, T], mask [N, T]) of a whole step, with ties."""
    gen = torch.Generator().manual_seed(3)
    n = GROUPS * G
    rewards = torch.randint(0, 3, (n,), generator=gen).float()
    group_ids = torch.arange(GROUPS).repeat_interleave(G)
    lengths = torch.randint(1, T + 1, (n,), generator=gen)
    mask = (torch.arange(T)[None, :] < lengths[:, None]).long()
    entropy = torch.randint(0, 8, (n, T), generator=gen).float() / 4 * mask
    return rewards, group_ids, lengths, entropy, mask


def _statistics(
    rewards: torch.Tensor,
    group_ids: torch.Tensor,
    lengths: torch.Tensor,
    entropy: torch.Tensor,
    mask: torch.Tensor,
) -> dict[str, torch.Tensor]:
    adv = reinforce_pp(rewards, group_ids, None, lengths)
    return {
        "reinforce_pp": adv,
        "grpo_batch_std": grpo(rewards, group_ids, GRPOParams(scale_rewards="batch")),
        "top_entropy": top_fraction_mask(entropy, mask, 0.3),
        "hispo_segments": segment_boundaries(entropy, mask, 0.7, 2),
        "gapo": gapo_clip_scale(adv, GAPOParams(max_scale=2.0)),
    }


def _vigor_counts(groups_of_rank: Sequence[int]) -> list[int]:
    """Completions VIGOR gives each of ``groups_of_rank`` (step-wide indices) when group g's rewards are
    deterministic in (g, completion index): the same deal must come out however the step is split."""
    groups = [Group(Sample(id=str(g), prompt=str(g)), prompt=str(g)) for g in groups_of_rank]

    def generate(chosen: Sequence[Group], counts: Sequence[int]) -> None:
        for group, count in zip(chosen, counts, strict=True):
            g = int(group.sample.id)
            for _ in range(count):
                group.rewards.append(float((g * 7 + group.size * 3) % (g + 2) == 0))
                group.correct.append(bool(group.rewards[-1]))

    vigor(groups, generate, VIGORParams(initial_rollouts=2, rounds=3, increment=1), group_size=4)
    return [g.size for g in groups]


def _record(group: int) -> RolloutRecord:
    return RolloutRecord(
        step=1,
        prompt_id=str(group),
        group=group,
        sample_index=0,
        prompt="p",
        completion="c",
        finish_reason="eos",
        reward=0.0,
        rewards={},
        correct=False,
        details={},
        advantage=0.0,
        token_ids=[],
        tokens=[],
        token_values={},
    )


def _checks(ctx: DistContext) -> None:
    rewards, group_ids, lengths, entropy, mask = _step()
    whole = _WHOLE  # one process's (computed before the fork)
    rows = slice(ctx.rank * 2 * G, (ctx.rank + 1) * 2 * G)
    local_ids = group_ids[rows] - 2 * ctx.rank
    mine = _statistics(rewards[rows], local_ids, lengths[rows], entropy[rows], mask[rows])
    for name, values in mine.items():
        assert torch.equal(values, whole[name][rows]), f"{name}: {values} != {whole[name][rows]}"
    assert whole["top_entropy"].sum() > 0 and whole["hispo_segments"].max() > 0 and whole["gapo"].max() > 1

    # uneven lengths, one rank with nothing: joined in rank order
    part = torch.arange(3.0) if ctx.rank == 0 else torch.zeros(0)
    assert all_ranks(part).tolist() == [0.0, 1.0, 2.0]

    # a replicated step: every rank holds the whole step, nothing is gathered
    set_step_replicated(True)
    try:
        assert torch.equal(all_ranks(rewards), rewards)
        report = StepReport(
            step=1,
            max_steps=1,
            metrics={"actor/loss": 0.25, "rollout/reward_mean": 0.5},
            rollouts=[_record(0), _record(1)],
            elapsed_s=0.0,
        )
        combined = ctx.gather_report(report)
        if ctx.is_main:
            assert [r.group for r in combined.rollouts] == [0, 1]  # one rank's records, not both
            assert combined.metrics == {"actor/loss": 0.5, "rollout/reward_mean": 0.5}  # shares summed
    finally:
        set_step_replicated(False)

    # uneven shares (3 groups on rank 0, 1 on rank 1): records numbered step-wide from the records themselves
    report = StepReport(
        step=1,
        max_steps=1,
        metrics={"rollout/reward_mean": 1.0},
        rollouts=[_record(g) for g in ([0, 1, 2] if ctx.rank == 0 else [0])],
        elapsed_s=0.0,
    )
    combined = ctx.gather_report(report)
    if ctx.is_main:
        assert [r.group for r in combined.rollouts] == [0, 1, 2, 3]

    # VIGOR deals the step-wide budget over every rank's groups: the deal of one process (computed before the fork)
    assert _vigor_counts(range(2 * ctx.rank, 2 * ctx.rank + 2)) == _ALONE[2 * ctx.rank : 2 * ctx.rank + 2]


# One process's results, computed by the test before the ranks fork.
_WHOLE: dict[str, torch.Tensor] = {}
_ALONE: list[int] = []  # VIGOR's deal


def _rank_main(rank: int, store: str, result_dir: str, check: Callable[[DistContext], None]) -> None:
    import torch.distributed as dist

    out = Path(result_dir) / f"rank{rank}.txt"
    try:
        torch.set_num_threads(1)
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
        check(DistContext(rank=rank, world_size=2))
        dist.destroy_process_group()
        out.write_text("ok")
    except BaseException:  # the parent reads what went wrong
        out.write_text(traceback.format_exc())


def test_each_rank_gets_its_share_of_the_one_process_step_wide_statistics(tmp_path: Path) -> None:
    _WHOLE.update(_statistics(*_step()))  # one process: no process group in the parent
    _ALONE[:] = _vigor_counts(range(GROUPS))
    assert len(set(_ALONE)) > 1  # the deal is uneven, so a per-rank deal would differ
    results = run_forked_ranks(
        _rank_main,
        lambda r: (r, str(tmp_path / "store"), str(tmp_path), _checks),
        tmp_path,
        "a rank hung in a collective",
    )
    assert results == ["ok", "ok"], "\n".join(results)  # a failing rank fails the other's next collective


def test_shares_are_contiguous_and_as_even_as_possible() -> None:
    assert [balanced_share(6, r, 2) for r in range(2)] == [slice(0, 3), slice(3, 6)]
    assert [balanced_share(5, r, 3) for r in range(3)] == [slice(0, 2), slice(2, 4), slice(4, 5)]
    assert [balanced_share(1, r, 2) for r in range(2)] == [slice(0, 1), slice(1, 1)]
    assert DistContext(rank=1, world_size=2).share(4) == slice(2, 4)
