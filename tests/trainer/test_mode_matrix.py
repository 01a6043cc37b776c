"""Every method of every axis in every mode (issue 14 part 3): each registered method trains with
``training.num_processes`` 2 (gloo, plain data parallel) and with ``training.fsdp``, and gives the 1-process
result of the same config (seed_per_prompt true) within float tolerance: the same rollout records (completions,
rewards, advantages, per-token advantages) and the same weights after the steps. What cannot is refused when
the config is built, with why (checked here too).

The methods are combined into a few configs of 2 steps each (``CONFIGS``); a fast test fails when a registered
method is in none of them, so a new method cannot slip through untested. To stay within a few minutes on two
cores, every multi-process run of the matrix shares one torchrun launch: this module is also the ranks' entry
point (``python -m torch.distributed.run ... -m tests.trainer.test_mode_matrix RUNS``), and each rank calls
``train`` once per run, as trainer/distributed/rank_main.py does for one (the launcher itself is tested in
test_distributed_runs.py and test_fsdp_runs.py).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from tests.trainer.loop_helpers import tiny_config
from trainer.config import ExperimentConfig, config_from_dict
from trainer.errors import ConfigError
from trainer.methods.axes import AXES
from trainer.models.checkpoint import latest_checkpoint
from trainer.sinks import NullSink, StepReport

REPO = Path(__file__).resolve().parents[2]
TEACHER = {"name_or_path": "tiny:addition-teacher"}
SHORT = {"name": "short", "rule": {"type": "length", "params": {"unit": "chars", "max": 4}}}
DIGITS = {"name": "digits", "rule": {"type": "regex", "params": {"pattern": "[0-9]"}}}
# Process rewards on the digit task: steps cut after each digit, valued by 2 Monte-Carlo continuations each.
PROCESS: dict[str, Any] = {
    "segmenter": {"name": "pattern", "params": {"pattern": "[0-9]"}},
    "scorer": {"name": "monte_carlo", "params": {"k": 2}},
}
# The same steps scored by PRIME's implicit PRM, trained online at a tiny-model learning rate.
IMPLICIT: dict[str, Any] = {**PROCESS, "scorer": {"name": "implicit", "params": {"beta": 0.5, "lr": 1e-3}}}
# Self-correction episodes of up to 3 turns on the digit reward (a wrong answer is told so and tries again).
EPISODES: dict[str, Any] = {
    "name": "self_correction",
    "params": {"retry_message": " no. "},
    "limits": {"max_turns": 3, "max_total_tokens": 24},
}
# On top of tests/trainer/loop_helpers.py's tiny config: 4 prompts x 8 completions of up to 8 tokens. Whole rows
# are scored in every mode, as an FSDP-sharded model always scores them: the matrix compares the modes float for
# float (the shared-prompt forward's equality with the whole-row one: tests/trainer/test_shared_prompt_logprobs.py;
# data parallel with it: tests/trainer/test_distributed_runs.py).
BASE: dict[str, dict[str, Any]] = {
    "rollout": {"max_completion_length": 8, "seed_per_prompt": True},
    "training": {
        "prompts_per_step": 4,
        "max_steps": 2,
        "micro_batch_size": 8,
        "learning_rate": 1e-2,
        "shared_prompt_forward": False,
    },
}


# The warm addition model with an exact-match reward: many silent (all-wrong) groups and some mixed ones, so
# allocators abandon and deal unevenly, and dynamic sampling refills (with rounds of odd sizes).
WARM: dict[str, Any] = {
    "verifiers": [{"name": "exact", "params": {"extract": "first_line"}}],
    "rollout": {"max_completion_length": 6},
}


Reports = list[dict[str, Any]]  # a run's step reports, as JSON


@dataclass(frozen=True)
class Case:
    sections: dict[str, Any]
    fsdp: bool  # also run with training.fsdp (else: fsdp must be refused, with why)
    warm: bool = False  # the warm model with WARM's reward (else the random tiny model, a digit reward)
    # what the 1-process run must show for the case to test what it is meant to (else the test tries other seeds)
    expect: Callable[[Reports], bool] = lambda reports: True


def _first(reports: Reports, key: str) -> float:
    value: float = reports[0]["metrics"][key]
    return value


CONFIGS: dict[str, Case] = {
    # the statistics over the whole step: REINFORCE++ whitening, the top-entropy and HISPO quantiles, GAPO's rms
    "step_wide": Case(
        {
            "algorithm": {
                "advantage_estimator": "reinforce_pp",
                "token_credit": {"name": "top_entropy", "params": {"quantile": 0.5}},
                "importance_sampling_level": {
                    "name": "segment",
                    "params": {"min_tokens": 2, "boundary_quantile": 0.7},
                },
                "clip_mode": "gapo",
                "dual_clip": True,
                "loss_type": "grpo",
                "kl_estimator": "k1",
                "beta": 0.04,
                "num_iterations": 2,
            },
            "teacher": {**TEACHER, "fusion": "puu"},
            "shaping": {
                "reward_shaping": [{"name": "overlong_penalty", "params": {"buffer": 2}}, "length_penalty"]
            },
        },
        fsdp=True,
    ),
    # an external teacher's per-token credit (the teacher only recorded otherwise); the batch std; a rubric and
    # the Beta prompt sampler
    "teacher_credit": Case(
        {
            "algorithm": {
                "advantage_estimator": {"name": "grpo", "params": {"scale_rewards": "batch"}},
                "token_credit": "ecr",
                "importance_sampling_level": "sequence",
                "loss_type": "bnpo",
                "loss_masks": [{"name": "answer_span", "params": {"pattern": "[0-9]+"}}],
            },
            "teacher": {**TEACHER, "fusion": "none"},
            "shaping": {
                "reward_shaping": [{"name": "majority_vote", "params": {"combine": "add"}}],
                "advantage_shaping": ["rarity"],
            },
            "budget": {"prompt_sampler": "beta_learnability"},
            "rubric": {"criteria": [SHORT, DIGITS]},
        },
        fsdp=True,
    ),
    # the policy as its own teacher (OPSD), OPD-then-RL, a leave-one-out baseline, a label-free reward
    "self_distillation": Case(
        {
            "algorithm": {"advantage_estimator": "rloo", "loss_type": "dr_grpo"},
            "teacher": {"mode": "self", "fusion": {"name": "opd", "params": {"until_step": 1}}},
            "shaping": {"reward_shaping": ["soft_consensus"]},
        },
        fsdp=True,
    ),
    "modulated": Case(
        {
            "algorithm": {"advantage_estimator": "dr_grpo"},
            "teacher": {"mode": "self", "fusion": "modulated"},
            "rubric": {"aggregation": "rank", "criteria": [SHORT, DIGITS]},
        },
        fsdp=True,
    ),
    # GMTS's step-wide score quantile, then an external teacher's additive fusion on top of it
    "additive": Case(
        {
            "algorithm": {"token_credit": {"name": "gmts", "params": {"quantile": 0.5}}},
            "teacher": {**TEACHER, "fusion": "additive"},
        },
        fsdp=True,
    ),
    # a step-wide rollout budget dealt over every process's groups, refilled by dynamic sampling
    "vigor_dynamic": Case(
        {
            "budget": {
                "allocator": {"name": "vigor", "params": {"initial_rollouts": 4, "rounds": 2}},
                "dynamic_sampling": True,
                "prompt_sampler": "beta_learnability",
            },
            "rubric": {"aggregation": "rank", "criteria": [SHORT, DIGITS]},
        },
        fsdp=True,
        warm=True,
        expect=lambda r: (
            _first(r, "budget/group_size_min") < _first(r, "budget/group_size_max")
            and _first(r, "budget/generation_rounds") > 1
        ),
    ),
    # per-group decisions with the sampler's posterior as prior, and dynamic sampling's refills
    "sara_dynamic": Case(
        {
            "budget": {
                "allocator": {"name": "sara", "params": {"probe": 2, "step": 2}},
                "dynamic_sampling": True,
                "prompt_sampler": "beta_learnability",
            },
        },
        fsdp=True,
        warm=True,
        expect=lambda r: r[1]["metrics"]["budget/generation_rounds"] > 1,
    ),
    # abandoned groups refilled; seed 3's step 1 abandons both of process 1's groups and one of process 0's, so
    # process 1 makes one call fewer in round 1 and must number its refill's calls on from the step's count
    "early_abandon_dynamic": Case(
        {
            "seed": 3,
            "budget": {
                "allocator": {"name": "early_abandon", "params": {"after": 4}},
                "dynamic_sampling": True,
            },
        },
        fsdp=True,
        warm=True,
        expect=lambda r: _first(r, "budget/abandoned_groups") >= 3 and _first(r, "budget/prompts_drawn") >= 7,
    ),
    # 2 prompts and 2 rounds: step 1 finds a single informative group (one of 3 drawn; the refill round gives one
    # process nothing to generate), so every process trains on it (a replicated step)
    "dynamic_replicated": Case(
        {
            "seed": 0,
            "training": {"prompts_per_step": 2},
            "budget": {"dynamic_sampling": True, "max_generation_rounds": 2},
        },
        fsdp=True,
        warm=True,
        expect=lambda r: (
            {x["group"] for x in r[0]["rollouts"]} == {0} and _first(r, "budget/prompts_drawn") == 3
        ),
    ),
    # process rewards: Monte-Carlo step values (continuations through the engine, every rank its own rollouts'),
    # each step-credit method once; PROF's filter zeroes loss rows, clipping/delta/gating reshape the step rewards
    "process_min": Case(
        {"process_reward": {**PROCESS, "credit": "min", "prof_filter": {"keep_fraction": 0.5}}},
        fsdp=True,
        expect=lambda r: _first(r, "process/prof_kept_frac") < 1.0,
    ),
    "process_sum": Case(
        {"process_reward": {**PROCESS, "credit": "sum", "clip": 0.5, "delta": True}},
        fsdp=True,
        expect=lambda r: _first(r, "process/credit_abs_mean") > 0,
    ),
    "process_mean": Case(
        {"process_reward": {**PROCESS, "credit": "mean", "success_gated": True}},
        fsdp=True,
    ),
    # the implicit PRM (PRIME): every rank scores its own rollouts and its PRM's gradients are summed over ranks, so
    # step 2's scores (after step 1's PRM update) and their credit equal one process's
    "process_implicit": Case(
        {"process_reward": {**IMPLICIT, "credit": "sum"}},
        fsdp=True,
        expect=lambda r: r[1]["metrics"]["process/implicit_reward_mean"] != 0,  # the PRM moved
    ),
    # multi-turn episodes (self-correction on the digit reward): a wrong answer gets a retry reply and another
    # turn; TCPO's turn credit from the per-turn scores, the environment's tokens masked out of the loss
    "environment_tcpo": Case(
        {"environment": {**EPISODES, "turn_credit": {"name": "tcpo", "params": {"hindsight_gamma": 0.5}}}},
        fsdp=True,
        expect=lambda r: _first(r, "env/turn_credit_shift_abs_mean") > 0 and _first(r, "env/turns_mean") > 1,
    ),
    "environment_outcome": Case(
        {"environment": EPISODES},
        fsdp=True,
        expect=lambda r: _first(r, "env/turn_credit_shift_abs_mean") == 0 and _first(r, "env/turns_mean") > 1,
    ),
    "environment_segmented": Case(
        {
            "environment": {
                **EPISODES,
                "turn_credit": {"name": "turn_segmented", "params": {"normalize": "all", "mix": 0.5}},
                "tool_shaping": {"cost_per_call": 0.1},
            }
        },
        fsdp=True,
        expect=lambda r: _first(r, "env/turn_credit_shift_abs_mean") > 0,
    ),
    # asynchronous (one step off-policy, 3 steps so that step 3 samples with version 1): every rank's generator
    # process produces its share, the generators all-gathering the groups' outcomes among themselves (dynamic
    # sampling's refills, the Beta sampler's posterior); fsdp is refused (the generator holds the whole policy)
    "async_dynamic": Case(
        {
            "training": {"max_off_policy_steps": 1, "max_steps": 3},
            "budget": {"dynamic_sampling": True, "prompt_sampler": "beta_learnability"},
        },
        fsdp=False,
        warm=True,
        expect=lambda r: (
            max(x["metrics"]["budget/generation_rounds"] for x in r) > 1
            and r[-1]["metrics"]["async/policy_version"] == 1
        ),
    ),
    "process_last": Case(
        {"process_reward": {**PROCESS, "segmenter": {"name": "entropy"}, "credit": "last"}},
        fsdp=True,
        expect=lambda r: _first(r, "process/credit_abs_mean") > 0,
    ),
}
# Choices outside the method axes that span the step or the processes: each must be in some config above.
FEATURES = {
    "grpo scale_rewards 'batch'": lambda c: (
        c.algorithm.advantage_estimator == "grpo"
        and c.algorithm.advantage_estimator.params.scale_rewards == "batch"
    ),
    "budget.dynamic_sampling": lambda c: c.budget.dynamic_sampling,
    "an external teacher": lambda c: c.teacher.enabled and c.teacher.mode == "external",
    "teacher.mode 'self'": lambda c: c.teacher.mode == "self",
    "a rubric (weighted_sum)": lambda c: c.rubric is not None and c.rubric.aggregation == "weighted_sum",
    "a rubric (rank)": lambda c: c.rubric is not None and c.rubric.aggregation == "rank",
    "algorithm.dual_clip": lambda c: c.algorithm.dual_clip,
    "algorithm.num_iterations > 1": lambda c: c.algorithm.num_iterations > 1,
    "algorithm.beta > 0 (a KL reference)": lambda c: c.algorithm.beta > 0,
    "an environment (multi-turn episodes)": lambda c: c.environment is not None,
    "process_reward.scorer 'implicit' (a PRM updated every step)": lambda c: (
        c.process_reward is not None and c.process_reward.scorer.name == "implicit"
    ),
    "training.max_off_policy_steps > 0 (asynchronous)": lambda c: c.training.max_off_policy_steps > 0,
}


def _sections(case: Case, out: Path, processes: int = 1, fsdp: bool = False) -> dict[str, Any]:
    layers = [BASE, WARM, case.sections] if case.warm else [BASE, case.sections]
    sections: dict[str, Any] = {}
    for layer in layers:
        for key, value in layer.items():
            sections[key] = {**sections.get(key, {}), **value} if isinstance(value, dict) else value
    sections["training"] = {**sections["training"], "num_processes": processes, "fsdp": fsdp}
    sections["checkpoint"] = {"output_dir": str(out)}
    return sections


def _build(
    case: Case, models: dict[bool, Path], out: Path, processes: int = 1, fsdp: bool = False
) -> ExperimentConfig:
    return tiny_config(models[case.warm], out, **_sections(case, out, processes, fsdp))


def _methods(config: ExperimentConfig) -> set[tuple[str, str]]:
    """(axis config field, method name) of every method the config chose, defaults included."""
    field_of = {axis.kind: field for field, axis in AXES.items()}
    return {(field_of[m.entry.axis], m.entry.name) for m in config.methods()}


def _registered() -> set[tuple[str, str]]:
    return {(field, name) for field, axis in AXES.items() for name in axis.names()}


def test_every_registered_method_and_step_wide_feature_is_in_the_matrix(tmp_path: Path) -> None:
    configs = {
        name: _build(case, {False: tmp_path, True: tmp_path}, tmp_path) for name, case in CONFIGS.items()
    }
    covered = set().union(*(_methods(c) for c in configs.values()))
    missing = sorted(_registered() - covered)
    assert not missing, (
        f"add these methods to a config in CONFIGS (tests/trainer/test_mode_matrix.py): {missing}"
    )
    absent = [feature for feature, used in FEATURES.items() if not any(used(c) for c in configs.values())]
    assert not absent, f"add these to a config in CONFIGS: {absent}"


def test_every_method_runs_with_fsdp(tmp_path: Path) -> None:
    """Every config of the matrix is accepted with 2 processes, and sharded unless the case says fsdp is refused
    (asynchronous runs: refused when built, with why); the sharded ones together choose every registered method:
    no method is refused with fsdp (groups of different sizes are evened out with idle passes,
    trainer/step/optimize.py)."""
    models = {False: tmp_path, True: tmp_path}
    for case in CONFIGS.values():
        _build(case, models, tmp_path, processes=2)
        if case.fsdp:
            _build(case, models, tmp_path, processes=2, fsdp=True)
        else:
            with pytest.raises(ConfigError, match=r"training\.fsdp with"):
                _build(case, models, tmp_path, processes=2, fsdp=True)
    sharded = [c for c in CONFIGS.values() if c.fsdp]
    with_fsdp = set().union(*(_methods(_build(c, models, tmp_path, 2, True)) for c in sharded))
    assert sorted(_registered() - with_fsdp) == []


# --- the matrix ---------------------------------------------------------------------------------------------


def _report_json(report: StepReport) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(asdict(report), allow_nan=True))
    return data


class _Reports(NullSink):
    def __init__(self) -> None:
        self.reports: list[dict[str, Any]] = []

    def on_step(self, report: StepReport) -> None:
        self.reports.append(_report_json(report))


def _rank_main(runs_file: str) -> int:
    """A rank of the matrix's one launch: train every run of ``runs_file`` in turn; rank 0 writes each run's
    step reports to ``<output_dir>/reports.json``."""
    from trainer.distributed.context import RANK_ENV, init_process_group
    from trainer.step.loop import train

    os.environ[RANK_ENV] = os.environ.get(
        "RANK", "0"
    )  # train() trains this rank's share instead of launching
    torch.set_num_threads(1)
    ctx = init_process_group("cpu", 120)
    try:
        for run in json.loads(Path(runs_file).read_text()):
            config = config_from_dict(run)
            sink = _Reports() if ctx.is_main else NullSink()
            train(config, sink, log=lambda m: None)
            if isinstance(sink, _Reports):
                (Path(config.checkpoint.output_dir) / "reports.json").write_text(json.dumps(sink.reports))
    except BaseException:
        traceback.print_exc()
        return 1
    import torch.distributed as dist

    dist.destroy_process_group()
    return 0


def _launch(runs: list[ExperimentConfig], work: Path) -> float:
    """One torchrun launch (2 ranks) that trains ``runs`` in turn; returns its wall time."""
    runs_file = work / "runs.json"
    runs_file.write_text(json.dumps([r.model_dump(mode="json") for r in runs]))
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node=2",
        "--max-restarts=0",
        "--monitor-interval=0.2",
        "-m",
        "tests.trainer.test_mode_matrix",
        str(runs_file),
    ]
    t0 = time.monotonic()
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=540)
    assert done.returncode == 0, f"the matrix launch failed:\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    return time.monotonic() - t0


def _max_diff(a: list[float], b: list[float]) -> float:
    assert len(a) == len(b)
    return max(
        (abs(x - y) for x, y in zip(a, b, strict=True) if not (math.isnan(x) and math.isnan(y))), default=0.0
    )


def _compare_records(one: list[dict[str, Any]], many: list[dict[str, Any]], label: str) -> dict[str, float]:
    """Same rollouts step by step (texts, groups, allocation exactly; rewards and advantages within float
    tolerance); returns the largest differences seen."""
    diffs = {"reward": 0.0, "advantage": 0.0, "token_advantage": 0.0}
    assert [s["step"] for s in many] == [s["step"] for s in one], label
    for s1, s2 in zip(one, many, strict=True):
        r1, r2 = s1["rollouts"], s2["rollouts"]
        key = ("group", "sample_index", "prompt_id", "completion", "finish_reason", "correct", "token_ids")
        assert [[r[k] for k in key] for r in r2] == [[r[k] for k in key] for r in r1], (
            f"{label} step {s1['step']}"
        )
        assert [r["details"].get("allocation") for r in r2] == [r["details"].get("allocation") for r in r1], (
            label
        )
        diffs["reward"] = max(
            diffs["reward"], _max_diff([r["reward"] for r in r1], [r["reward"] for r in r2])
        )
        diffs["advantage"] = max(
            diffs["advantage"], _max_diff([r["advantage"] for r in r1], [r["advantage"] for r in r2])
        )
        for a, b in zip(r1, r2, strict=True):
            assert a["rewards"].keys() == b["rewards"].keys(), label
            diffs["reward"] = max(
                diffs["reward"], *(_max_diff([a["rewards"][k]], [b["rewards"][k]]) for k in a["rewards"])
            )
            t1, t2 = a["token_values"], b["token_values"]
            assert t1.keys() == t2.keys(), label
            diffs["token_advantage"] = max(
                diffs["token_advantage"], _max_diff(t1["advantage"], t2["advantage"])
            )
            if "segment" in t1:
                assert t1["segment"] == t2["segment"], f"{label}: HISPO segments differ"
            assert t1["loss_mask"] == t2["loss_mask"], f"{label}: loss masks differ"
    return diffs


# Equal in every mode, step by step (the gradient's norm: Adam's steps barely depend on the gradient's scale).
METRICS = (
    "actor/grad_norm",
    "actor/pg_loss",
    "rollout/reward_mean",
    "rollout/reward_std",
    "budget/rollouts_generated",
    "budget/rollouts_used",
    "budget/prompts_drawn",
    "budget/dropped_groups",
    "budget/generation_calls",
    "budget/generation_rounds",
    "budget/cumulative_rollouts",
    "budget/silent_group_frac",
    "budget/group_size_mean",
    "budget/group_size_min",
    "budget/group_size_max",
)


def _compare_metrics(one: list[dict[str, Any]], many: list[dict[str, Any]], label: str) -> None:
    for s1, s2 in zip(one, many, strict=True):
        for key in METRICS:
            assert s2["metrics"][key] == pytest.approx(s1["metrics"][key], rel=1e-4, abs=1e-6), (
                f"{label}: {key}"
            )


def _compare_weights(
    got: dict[str, torch.Tensor], want: dict[str, torch.Tensor], start: dict[str, torch.Tensor], label: str
) -> tuple[float, int]:
    """Equal up to float summation order: Adam divides each gradient by its own scale, so where a gradient is
    about as small as rounding, rounding moves the weight by up to the learning rate; allowed for a few
    elements, and for the keys' bias (its gradient is 0 in exact arithmetic: softmax ignores a shift shared by
    all keys). The same holds in part for the keys' weights where a layer's inputs share a direction, so each
    element may also differ by 0.5% of how far training moved it (Adam's steps carry the gradients' relative
    rounding). Returns the largest difference elsewhere, and how many elements differ beyond rounding."""
    assert got.keys() == want.keys(), label
    off: list[tuple[str, float]] = []
    elements, largest = 0, 0.0
    for k in want:
        diff = (got[k] - want[k]).abs()
        assert float(diff.max()) <= 2 * BASE["training"]["learning_rate"] * BASE["training"]["max_steps"], (
            f"{label}: {k}"
        )
        if k.endswith("k_proj.bias"):
            continue
        beyond = diff > 5e-5 + 1e-4 * want[k].abs() + 5e-3 * (want[k] - start[k]).abs()
        off += [(k, float(d)) for d in diff[beyond]]
        elements += diff.numel()
        largest = max(largest, float(diff.max()))
    assert len(off) <= max(3, elements // 20_000), f"{label}: weights differ beyond rounding: {off[:10]}"
    return largest, len(off)


def _weights(run_dir: Path) -> dict[str, torch.Tensor]:
    ckpt = latest_checkpoint(run_dir)
    assert ckpt is not None, f"no checkpoint in {run_dir}"
    return load_file(ckpt / "model.safetensors")


# How many seeds a case may try before it is declared broken (see _one_process_run).
SEEDS_TO_TRY = 8


@dataclass(frozen=True)
class _OneProcess:
    case: Case  # the case at the seed its run exercises
    out: Path
    reports: Reports


def _one_process_run(name: str, case: Case, models: dict[bool, Path], work: Path) -> _OneProcess:
    """The case's 1-process run at the first seed (its own first) whose run shows what the case is there for.
    Which seeds do depends on the tiny model's exact weights, and a model built on another processor differs
    in its last bits, so the seed is found here rather than fixed; no seed of the first few is a failure."""
    from trainer.step.loop import train

    own = int(case.sections.get("seed", 0))
    for seed in [own, *(s for s in range(SEEDS_TO_TRY) if s != own)]:
        seeded = replace(case, sections={**case.sections, "seed": seed})
        out = work / f"{name}-one-seed{seed}"
        sink = _Reports()
        train(_build(seeded, models, out), sink, log=lambda m: None)
        if case.expect(sink.reports):
            return _OneProcess(seeded, out, sink.reports)
    raise AssertionError(
        f"{name}: no seed of 0..{SEEDS_TO_TRY - 1} exercises what it is there for (see CONFIGS)"
    )


@pytest.mark.slow
def test_every_method_gives_the_one_process_result_in_data_parallel_and_fsdp(
    random_model_dir: Path, warm_model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    models = {False: random_model_dir, True: warm_model_dir}
    ones = {name: _one_process_run(name, case, models, tmp_path) for name, case in CONFIGS.items()}
    launched = [
        (name, mode, _build(one.case, models, tmp_path / f"{name}-{mode}", 2, mode == "fsdp"))
        for name, one in ones.items()
        for mode in ("dp", "fsdp")
        if mode == "dp" or one.case.fsdp
    ]
    launch_s = _launch([config for _, _, config in launched], tmp_path)
    rows = []
    for name, found in ones.items():
        one_dir, case = found.out, found.case
        want, start = _weights(one_dir), load_file(models[case.warm] / "model.safetensors")
        moved = max(float((want[k] - start[k]).abs().max()) for k in want)
        assert moved > 1e-3, f"{name}: training did not move the weights"
        for run_name, mode, config in launched:
            if run_name != name:
                continue
            out = Path(config.checkpoint.output_dir)
            label = f"{name} ({mode})"
            many = json.loads((out / "reports.json").read_text())
            diffs = _compare_records(found.reports, many, label)
            _compare_metrics(found.reports, many, label)
            assert (
                diffs["reward"] <= 1e-5 and diffs["advantage"] <= 1e-4 and diffs["token_advantage"] <= 1e-4
            ), (label, diffs)
            weight, off = _compare_weights(_weights(out), want, start, label)
            rows.append(
                f"{label:28s} "
                + "  ".join(f"{k} {v:.1e}" for k, v in diffs.items())
                + f"  weight {weight:.1e} ({off} element(s) beyond rounding)"
            )
    with capsys.disabled():
        print(
            f"\nmode matrix: {len(launched)} runs in one launch {launch_s:.0f} s, {time.monotonic() - started:.0f} s in all;"
            " max |difference| to 1 process:\n  " + "\n  ".join(rows)
        )


if __name__ == "__main__":  # a rank of the matrix's launch (see the module docstring)
    sys.exit(_rank_main(sys.argv[1]))
