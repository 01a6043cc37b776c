"""HISPO segment boundaries and saliency weights on hand-made entropies."""

import math

import pytest
import torch

from trainer.config import AlgorithmConfig
from trainer.config.method_sections import chosen_methods
from trainer.methods.policy_losses import prepare_loss_inputs
from trainer.methods.segments import (
    entropy_segments,
    segment_boundaries,
    segment_metrics,
    segment_saliency,
)

# Sorted: four 0.1s then three 2.0s. torch.quantile(q=0.6) interpolates at position 3.6: 0.1 + 0.6 * 1.9 = 1.24,
# so the 2.0 tokens (positions 1, 4, 6) are the boundary candidates.
ENTROPY = torch.tensor([[0.1, 2.0, 0.1, 0.1, 2.0, 0.1, 2.0]])
MASK = torch.ones(1, 7)


def test_high_entropy_tokens_open_segments_once_the_minimum_length_is_reached() -> None:
    ids = segment_boundaries(ENTROPY, MASK, quantile=0.6, min_tokens=2)
    # position 1 is too close to the start (1 token so far); 4 opens segment 1; 6 opens segment 2 (2 tokens).
    assert ids.tolist() == [[0, 0, 0, 0, 1, 1, 2]]


def test_min_tokens_one_lets_every_candidate_open_a_segment() -> None:
    assert segment_boundaries(ENTROPY, MASK, quantile=0.6, min_tokens=1).tolist() == [[0, 1, 1, 1, 2, 2, 3]]


def test_a_high_entropy_first_token_does_not_open_an_empty_segment() -> None:
    # threshold 0.1 + 0.2 * 4.9 = 1.08: only the first token is a candidate
    ids = segment_boundaries(torch.tensor([[5.0, 0.0, 0.1]]), torch.ones(1, 3), quantile=0.6, min_tokens=1)
    assert ids.tolist() == [[0, 0, 0]]


def test_padding_gets_segment_zero_and_does_not_move_the_threshold() -> None:
    entropy = torch.tensor([[0.1, 2.0, 0.1, 0.1, 2.0, 0.1, 2.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0] * 7 + [0.0] * 3])
    assert segment_boundaries(entropy, mask, quantile=0.6, min_tokens=2).tolist() == [
        [0, 0, 0, 0, 1, 1, 2, 0, 0, 0]
    ]


def test_the_threshold_is_shared_by_the_whole_step() -> None:
    # Row 1 is all low-entropy relative to row 0: none of its tokens reaches the step's threshold.
    entropy = torch.tensor([[0.1, 3.0, 0.1, 3.0], [0.5, 0.6, 0.5, 0.6]])
    ids = segment_boundaries(entropy, torch.ones(2, 4), quantile=0.8, min_tokens=1)  # threshold 2.04
    assert ids.tolist() == [[0, 1, 1, 2], [0, 0, 0, 0]]


def test_saliency_is_softmax_of_mean_segment_entropy_with_token_mean_one() -> None:
    ids = torch.tensor([[0, 0, 1, 1]])
    w = segment_saliency(ids, torch.tensor([[1.0, 1.0, 2.0, 2.0]]), torch.ones(1, 4), temperature=1.0)
    # w_s = exp(h_s) * L / sum_s' n_s' exp(h_s'): exp(1) * 4 / (2e + 2e^2) = 2 / (1 + e)
    low, high = 2 / (1 + math.e), 2 * math.e / (1 + math.e)
    assert w[0].tolist() == pytest.approx([low, low, high, high], rel=1e-6)
    assert float(w.sum()) == pytest.approx(4.0)


def test_saliency_temperature_softens_the_weights() -> None:
    ids, entropy = torch.tensor([[0, 0, 1, 1]]), torch.tensor([[1.0, 1.0, 2.0, 2.0]])
    w = segment_saliency(ids, entropy, torch.ones(1, 4), temperature=2.0)
    e = math.exp(0.5)  # exp((2 - 1) / 2)
    assert w[0].tolist() == pytest.approx(
        [2 / (1 + e), 2 / (1 + e), 2 * e / (1 + e), 2 * e / (1 + e)], rel=1e-6
    )


def test_zero_temperature_turns_saliency_off() -> None:
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    w = segment_saliency(torch.tensor([[0, 1, 0]]), torch.tensor([[1.0, 5.0, 0.0]]), mask, temperature=0.0)
    assert w.tolist() == [[1.0, 1.0, 0.0]]


def test_saliency_is_zero_on_padding_and_sums_to_each_rows_length() -> None:
    ids = torch.tensor([[0, 1, 1, 0], [0, 0, 0, 0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    w = segment_saliency(
        ids, torch.tensor([[0.3, 1.2, 0.7, 9.0], [0.4, 0.8, 9.0, 9.0]]), mask, temperature=1.0
    )
    assert w[0, 3] == 0 and w[1, 2:].tolist() == [0.0, 0.0]
    assert w.sum(-1).tolist() == pytest.approx([3.0, 2.0])
    assert w[1, :2].tolist() == pytest.approx([1.0, 1.0])  # one segment: weight 1


def test_entropy_segments_only_at_segment_level() -> None:
    # Only the 'segment' level cuts segments: the default token level leaves the step without segment ids.
    plain = [c.active() for c in chosen_methods(AlgorithmConfig())]
    assert prepare_loss_inputs(torch.ones(1), MASK.clone(), ENTROPY, MASK, plain).segment_ids is None
    cfg = AlgorithmConfig(
        importance_sampling_level={"name": "segment", "params": {"boundary_quantile": 0.6, "min_tokens": 2}}
    )
    segments = entropy_segments(ENTROPY, MASK, cfg.importance_sampling_level.params)
    methods = [c.active() for c in chosen_methods(cfg)]
    inputs = prepare_loss_inputs(torch.ones(1), MASK.clone(), ENTROPY, MASK, methods)
    assert inputs.segment_ids is not None and torch.equal(inputs.segment_ids, segments.ids)
    assert segments.starts.tolist() == [[True, False, False, False, True, False, True]]
    metrics = segment_metrics(segments, MASK)
    assert metrics["segment/count_mean"] == 3.0
    assert metrics["segment/len_mean"] == pytest.approx(7 / 3)
