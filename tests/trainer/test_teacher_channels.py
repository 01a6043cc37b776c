"""Teacher channels in stored rollouts and the teacher/* metrics."""

from __future__ import annotations

import math

import pytest
import torch

from trainer.config import ExperimentConfig, TeacherConfig
from trainer.sinks import TOKEN_CHANNELS, RolloutRecord, pack_token_arrays, unpack_token_arrays
from trainer.step.reporting import teacher_metrics
from trainer.step.teacher import TeacherSignals


def record(values: dict[str, list[float]]) -> RolloutRecord:
    return RolloutRecord(
        step=1,
        prompt_id="p",
        group=0,
        sample_index=0,
        prompt="1+1=",
        completion="2",
        finish_reason="eos",
        reward=1.0,
        rewards={},
        correct=True,
        details={},
        advantage=0.0,
        token_ids=[5, 1],
        tokens=["2", "<eos>"],
        token_values=values,
    )


def test_teacher_channels_round_trip_through_the_packed_blob() -> None:
    assert {"teacher_logprob", "teacher_entropy"} <= set(TOKEN_CHANNELS)
    ids, channels = unpack_token_arrays(
        pack_token_arrays(record({"teacher_logprob": [-0.5, -1.5], "teacher_entropy": [0.25, 2.0]}))
    )
    assert ids == [5, 1]
    assert channels["teacher_logprob"] == [-0.5, -1.5] and channels["teacher_entropy"] == [0.25, 2.0]
    assert all(math.isnan(v) for v in channels["ref_logprob"])


def test_a_blob_packed_before_the_teacher_channels_existed_reads_them_as_not_recorded() -> None:
    blob = pack_token_arrays(record({"logprob": [-1.0, -2.0]}))
    first = TOKEN_CHANNELS.index("teacher_logprob")
    old = blob[: 4 + 4 * 2 + first * 4 * 2]  # ids and the channels that came before the teacher's
    ids, channels = unpack_token_arrays(old)
    assert ids == [5, 1] and channels["logprob"] == [-1.0, -2.0]
    assert all(math.isnan(v) for v in channels["teacher_logprob"] + channels["teacher_entropy"])


def test_teacher_metrics_are_token_means_over_the_completions() -> None:
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    gap = torch.tensor([[-1.0, -2.0, 0.0], [0.0, 0.0, 0.0]])
    signals = TeacherSignals(
        logprob=torch.tensor([[-1.0, -3.0, 0.0], [-2.0, 0.0, 0.0]]),
        entropy=torch.tensor([[0.5, 1.0, 0.0], [1.5, 0.0, 0.0]]),
        gap=gap,
        mask=mask,
        vocab_size=8,
    )
    cfg = ExperimentConfig(
        teacher=TeacherConfig(name_or_path="t", fusion={"name": "opd", "params": {"until_step": 2}})
    )
    m = teacher_metrics(signals, cfg, step=2)
    assert m["teacher/gap_mean"] == pytest.approx(-1.0) and m["teacher/reverse_kl"] == pytest.approx(1.0)
    assert m["teacher/logprob_mean"] == pytest.approx(-2.0) and m["teacher/entropy_mean"] == pytest.approx(
        1.0
    )
    assert m["teacher/seq_score_mean"] == pytest.approx((-1.5 + 0.0) / 2)
    assert (
        m["teacher/fusion_active"] == 1.0
        and teacher_metrics(signals, cfg, step=3)["teacher/fusion_active"] == 0.0
    )
    assert teacher_metrics(None, cfg, step=1) == {}
