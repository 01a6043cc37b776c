"""Turn credit (trainer/methods/turn_credit.py): hand-computed TCPO credits (retrospective, hindsight, the group's
first-turn baseline), group normalisation over tokens, CrEST's turn-segmented advantages (turn_index vs all, mix),
absent scores and the loss mask; a plain-Python reference against the vectorised TCPO; the axis and its checks."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from types import SimpleNamespace

import pytest
import torch

from trainer.environments.records import EpisodeRecord, ToolCallRecord, TurnRecord
from trainer.errors import ConfigError, DataError
from trainer.methods.axes import AXES, HOOK_POINTS, ActiveMethod
from trainer.methods.turn_credit import (
    TURN_CREDIT,
    TCPOParams,
    TurnCreditInputs,
    TurnSegmentedParams,
    apply_turn_credit,
    first_turn_baseline,
    tcpo_turn_credit,
    turn_credit_inputs,
)
from trainer.verifiers.base import VerifierResult

NAN = math.nan
EPS = TCPOParams().eps
Spans = Sequence[Sequence[tuple[int, int]]]


def inputs(
    spans: Spans,
    scores: Sequence[Sequence[float]],
    *,
    width: int,
    groups: Sequence[int] | None = None,
    mask: torch.Tensor | None = None,
) -> TurnCreditInputs:
    """Every token inside a turn is in the loss unless ``mask`` says otherwise (the environment's are not)."""
    n = len(spans)
    if mask is None:
        mask = torch.zeros(n, width)
        for i, row in enumerate(spans):
            for start, end in row:
                mask[i, start:end] = 1
    return TurnCreditInputs(
        spans=spans,
        scores=scores,
        group_ids=torch.tensor(list(groups or [0] * n)),
        mask=mask,
        rewards=torch.zeros(n),
    )


def credits(scores: Sequence[Sequence[float]], baseline: Sequence[float], gamma: float) -> list[list[float]]:
    table = torch.tensor(scores, dtype=torch.float64)
    out = tcpo_turn_credit(table, torch.tensor(baseline, dtype=torch.float64), gamma)
    return [[round(x, 12) if not math.isnan(x) else x for x in row] for row in out.tolist()]


def run(
    name: str, data: TurnCreditInputs, params: object, advantages: torch.Tensor | None = None
) -> torch.Tensor:
    token_advantages = torch.ones(data.mask.shape) if advantages is None else advantages
    out: torch.Tensor = TURN_CREDIT.get(name)(token_advantages, data, params)
    return out


def assert_rows(out: torch.Tensor, expected: Sequence[Sequence[float]]) -> None:
    torch.testing.assert_close(out, torch.tensor(expected, dtype=out.dtype), rtol=1e-5, atol=1e-6)


def normalised(values: Sequence[float]) -> list[float]:
    """(v - mean) / (Bessel std + eps), as GRPO normalises a group."""
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
    return [(v - mean) / (std + EPS) for v in values]


# --- the axis -------------------------------------------------------------------------------------------------------


def test_the_axis_offers_three_methods_at_an_optional_point_right_after_token_credit() -> None:
    assert AXES["environment.turn_credit"] is TURN_CREDIT
    assert TURN_CREDIT.names() == ["outcome", "tcpo", "turn_segmented"]
    assert TURN_CREDIT.default == "outcome" and TURN_CREDIT.point == "turn_credit"
    points = list(HOOK_POINTS)
    assert points.index("turn_credit") == points.index("token_credit") + 1
    assert not HOOK_POINTS["turn_credit"].required


def test_an_unknown_method_is_refused_with_the_valid_names() -> None:
    with pytest.raises(
        ConfigError, match="unknown turn credit 'tcp'; valid names are: outcome, tcpo, turn_segmented"
    ):
        TURN_CREDIT.entry("tcp")


@pytest.mark.parametrize(
    ("name", "raw", "field"),
    [
        ("tcpo", {"weight": 101}, "weight"),
        ("tcpo", {"weight": -1}, "weight"),
        ("tcpo", {"hindsight_gamma": 1.5}, "hindsight_gamma"),
        ("tcpo", {"first_baseline": 1e7}, "first_baseline"),
        ("tcpo", {"eps": 0}, "eps"),
        ("turn_segmented", {"mix": 1.01}, "mix"),
        ("turn_segmented", {"normalize": "episode"}, "normalize"),
        ("turn_segmented", {"mixx": 0.5}, "mixx"),
        ("outcome", {"weight": 1.0}, "weight"),
    ],
)
def test_params_out_of_range_or_unknown_are_refused(name: str, raw: dict[str, object], field: str) -> None:
    with pytest.raises(ValueError, match=f"turn credit '{name}': params.{field}"):
        TURN_CREDIT.entry(name).parse_params(raw)


def test_a_turn_score_method_is_refused_when_the_environment_section_says_it_scores_no_turn() -> None:
    def check(name: str, turn_rewards: bool | None) -> None:
        config = SimpleNamespace(environment=SimpleNamespace(name="calculator", turn_rewards=turn_rewards))
        for fn in TURN_CREDIT.entry(name).checks:
            fn(config, TURN_CREDIT.entry(name).parse_params(None))

    for name in ("tcpo", "turn_segmented"):
        with pytest.raises(
            ValueError, match=f"'{name}' .* environment 'calculator' gives no reward per turn"
        ):
            check(name, False)
        check(name, True)
        check(name, None)  # unknown: nothing refused
    check("outcome", False)


# --- TCPO: the turn credits -----------------------------------------------------------------------------------------


def test_retrospective_credit_is_progress_or_regression_against_the_best_earlier_turn() -> None:
    assert credits([[0.2, 0.5, 0.3, 0.8]], [0.0], gamma=0.0) == [[0.2, 0.3, -0.2, 0.3]]


def test_hindsight_gives_a_non_improving_turn_the_discounted_improvement_of_the_next_improving_turn() -> None:
    # turn 2 regresses (-0.2), turn 3 improves by 0.3 one turn later: -0.2 + 0.5 * 0.3
    assert credits([[0.2, 0.5, 0.3, 0.8]], [0.0], gamma=0.5) == [[0.2, 0.3, -0.05, 0.3]]
    # two non-improving turns before a jump: each gets gamma^distance of it; a regression with no later
    # improvement keeps its own credit
    assert credits([[0.5, 0.5, 0.5, 1.0, 0.0]], [0.5], gamma=0.5) == [[0.0625, 0.125, 0.25, 0.5, -1.0]]


def test_the_first_scored_turn_compares_with_the_group_mean_first_scored_turn() -> None:
    scores = torch.tensor(
        [[0.0, 0.0, 1.0, NAN], [0.5, 0.2, NAN, 0.9], [NAN, 1.0, 0.0, 0.0]], dtype=torch.float64
    )
    baseline = first_turn_baseline(scores, torch.tensor([0, 0, 0]), None)
    assert baseline.tolist() == [0.5, 0.5, 0.5]  # mean of 0.0, 0.5 and 1.0 (the third's first scored turn)
    out = credits(scores.tolist(), baseline.tolist(), gamma=0.5)
    assert out[0] == [-0.25, 0.5, 1.0, out[0][3]] and math.isnan(out[0][3])
    # the last turn: 0.9 against the best earlier 0.5
    assert out[1][:2] == [0.05, -0.2] and math.isnan(out[1][2]) and out[1][3] == 0.4
    assert math.isnan(out[2][0]) and out[2][1:] == [0.5, -1.0, -1.0]


def test_an_absent_score_is_not_a_zero_in_the_baseline_or_as_the_best_earlier_turn() -> None:
    scores = torch.tensor([[NAN, 0.4], [0.8, NAN]], dtype=torch.float64)
    baseline = first_turn_baseline(scores, torch.tensor([0, 0]), None)
    assert baseline.tolist() == pytest.approx([0.6, 0.6])  # (0.4 + 0.8) / 2, not (0 + 0.8) / 2
    out = tcpo_turn_credit(scores, baseline, 0.5)
    assert out[0, 1].item() == pytest.approx(-0.2) and out[1, 0].item() == pytest.approx(0.2)
    assert out.isnan().tolist() == [[True, False], [False, True]]


def test_an_episode_without_any_scored_turn_does_not_count_in_its_group_baseline() -> None:
    scores = torch.tensor([[NAN, NAN], [0.2, NAN], [0.6, 1.0], [0.0, 0.0]], dtype=torch.float64)
    baseline = first_turn_baseline(scores, torch.tensor([0, 0, 0, 1]), None)
    assert baseline.tolist() == pytest.approx([0.4, 0.4, 0.4, 0.0])


def test_a_fixed_first_baseline_and_gamma_zero_switch_off_the_group_baseline_and_hindsight() -> None:
    data = inputs([[(0, 1), (1, 2)], [(0, 1)]], [[0.0, 1.0], [1.0]], width=2)
    by_hand = normalised([-0.25, 1.0, 0.75])  # -0.25 and 0.75 vs 0.25, 1.0 vs 0.0; no hindsight for the first
    out = run("tcpo", data, TCPOParams(first_baseline=0.25, hindsight_gamma=0.0), torch.zeros(2, 2))
    assert_rows(out, [[by_hand[0], by_hand[1]], [by_hand[2], 0.0]])


def reference_credit(scores: Sequence[float], baseline: float, gamma: float) -> list[float]:
    """TCPO's retrospective + hindsight credit of one episode, turn by turn in plain Python."""
    retro: list[float] = []
    best: float | None = None
    for s in scores:
        if math.isnan(s):
            retro.append(NAN)
            continue
        retro.append(s - (baseline if best is None else best))
        best = s if best is None else max(best, s)
    out = list(retro)
    for k, r in enumerate(retro):
        if math.isnan(r) or r > 0:
            continue
        later = next((m for m in range(k + 1, len(retro)) if not math.isnan(retro[m]) and retro[m] > 0), None)
        if later is not None:
            out[k] = r + gamma ** (later - k) * retro[later]
    return out


@pytest.mark.parametrize("seed", range(5))
def test_the_vectorised_credit_matches_the_turn_by_turn_reference(seed: int) -> None:
    rng = random.Random(seed)
    table = [
        [NAN if rng.random() < 0.3 else rng.choice([0.0, 0.25, 0.5, 1.0]) for _ in range(6)] for _ in range(8)
    ]
    baseline = [rng.random() for _ in table]
    gamma = rng.choice([0.0, 0.5, 0.9, 1.0])
    got = tcpo_turn_credit(
        torch.tensor(table, dtype=torch.float64), torch.tensor(baseline, dtype=torch.float64), gamma
    )
    want = [reference_credit(row, b, gamma) for row, b in zip(table, baseline, strict=True)]
    assert torch.allclose(got, torch.tensor(want, dtype=torch.float64), equal_nan=True)


# --- TCPO: tokens, normalisation, mask --------------------------------------------------------------------------------

# Two turns with an environment reply (token 1) between them; one single turn of two tokens.
TWO_ROLLOUTS = [[(0, 1), (2, 4)], [(0, 2)]]


def test_tcpo_adds_the_group_normalised_credit_over_the_valued_tokens_to_the_outcome_advantage() -> None:
    # baseline 0.5: row 0's turns -0.5 then +1.0, so the first gets -0.5 + 0.5 * 1.0 = 0; row 1's turn +0.5
    data = inputs(TWO_ROLLOUTS, [[0.0, 1.0], [1.0]], width=4)
    advantages = torch.tensor([[1.0, 1.0, 1.0, 1.0], [-1.0, -1.0, -1.0, -1.0]])
    out = run("tcpo", data, TCPOParams(first_baseline=0.5, weight=2.0), advantages)
    n0, n1a, n1b, n2a, n2b = normalised([0.0, 1.0, 1.0, 0.5, 0.5])  # every valued token counts once
    expected = [[1 + 2 * n0, 0.0, 1 + 2 * n1a, 1 + 2 * n1b], [-1 + 2 * n2a, -1 + 2 * n2b, 0.0, 0.0]]
    assert_rows(out, expected)


def two_groups() -> TurnCreditInputs:
    """2 groups x 3 episodes of up to 4 turns, turns of 1 or 2 tokens with one-token replies between them."""
    spans = [
        [(0, 2), (3, 4), (5, 7), (8, 9)],
        [(0, 1), (2, 4)],
        [(0, 3)],
        [(0, 1), (2, 3), (4, 6)],
        [(0, 2), (3, 5), (6, 7), (8, 10)],
        [(0, 1), (2, 3)],
    ]
    scores = [
        [0.0, 0.5, NAN, 1.0],
        [1.0, 0.0],
        [0.25],
        [NAN, 0.5, 0.5],
        [0.0, 0.0, 0.75, 0.5],
        [1.0, 1.0],
    ]
    return inputs(spans, scores, width=10, groups=[0, 0, 0, 1, 1, 1])


def test_a_group_credit_sums_to_zero_over_its_valued_tokens_and_absent_turns_get_none() -> None:
    data = two_groups()
    credit = run("tcpo", data, TCPOParams(), torch.zeros(data.mask.shape))  # [N, T], the credit alone
    assert credit[0, 5:7].tolist() == [0.0, 0.0] and credit[3, 0].item() == 0.0  # the absent turns
    scored = torch.zeros(data.mask.shape, dtype=torch.bool)
    for i, (spans, scores) in enumerate(zip(data.spans, data.scores, strict=True)):
        for (start, end), score in zip(spans, scores, strict=True):
            scored[i, start:end] = not math.isnan(score)
    for rows in ([0, 1, 2], [3, 4, 5]):
        valued = credit[rows][scored[rows]]
        assert abs(valued.sum().item()) < 1e-5
        assert valued.std().item() == pytest.approx(1.0, abs=1e-3)


def test_each_group_is_normalised_on_its_own() -> None:
    data = two_groups()
    other = TurnCreditInputs(
        spans=data.spans,
        scores=[*data.scores[:3], [NAN, 0.0, 1.0], [1.0, 0.25, 0.0, 0.5], [0.0, 0.5]],
        group_ids=data.group_ids,
        mask=data.mask,
        rewards=data.rewards,
    )
    zeros = torch.zeros(data.mask.shape)
    same, changed = run("tcpo", data, TCPOParams(), zeros), run("tcpo", other, TCPOParams(), zeros)
    assert torch.equal(same[:3], changed[:3]) and not torch.equal(same[3:], changed[3:])


def test_tokens_outside_the_loss_mask_get_zero_and_weigh_nothing_in_the_normalisation() -> None:
    masked = torch.tensor([[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])  # token 3 of row 0 left out
    out = run(
        "tcpo",
        inputs(TWO_ROLLOUTS, [[0.0, 1.0], [1.0]], width=4, mask=masked),
        TCPOParams(first_baseline=0.5),
    )
    shorter = inputs([[(0, 1), (2, 3)], [(0, 2)]], [[0.0, 1.0], [1.0]], width=4)  # as if the turn ended there
    assert out[0, 3].item() == 0.0 and out[0, 1].item() == 0.0  # the outcome advantage 1 is zeroed too
    assert torch.equal(out, run("tcpo", shorter, TCPOParams(first_baseline=0.5)))


def test_weight_zero_or_no_scored_turn_leaves_the_outcome_advantage() -> None:
    data = two_groups()
    advantages = torch.randn(data.mask.shape)
    assert torch.equal(run("tcpo", data, TCPOParams(weight=0.0), advantages), advantages * data.mask)
    unscored = inputs([[(0, 2)], [(0, 1), (2, 3)]], [[NAN], [NAN, NAN]], width=3)
    advantages = torch.randn(2, 3)
    assert torch.equal(run("tcpo", unscored, TCPOParams(), advantages), advantages * unscored.mask)
    no_turns = inputs([[], []], [[], []], width=3, mask=torch.ones(2, 3))
    assert torch.equal(run("tcpo", no_turns, TCPOParams(), advantages), advantages)


def test_outcome_returns_the_token_advantages_unchanged() -> None:
    data = two_groups()
    advantages = torch.randn(data.mask.shape)
    assert run("outcome", data, TURN_CREDIT.entry("outcome").parse_params(None), advantages) is advantages


# --- CrEST's turn-segmented advantages ------------------------------------------------------------------------------

# One group: turn 0 scored in both episodes, turn 1 only in the first (the second's is absent).
SEGMENTED = [[(0, 1), (2, 3)], [(0, 1), (2, 3)]]
SEGMENTED_SCORES = [[0.0, 1.0], [1.0, NAN]]


def test_turn_index_normalises_each_turn_among_the_group_turns_at_the_same_index() -> None:
    data = inputs(SEGMENTED, SEGMENTED_SCORES, width=3)
    advantages = torch.tensor([[0.5, 0.5, 0.5], [-0.5, -0.5, -0.5]])
    out = run("turn_segmented", data, TurnSegmentedParams(normalize="turn_index", mix=0.5), advantages)
    low, high = normalised([0.0, 1.0])  # turn 0 of each; turn 1 alone in its index: advantage 0
    # the second episode's turn 1 is absent: it keeps the outcome advantage
    assert_rows(out, [[0.25 + 0.5 * low, 0.0, 0.25 + 0.0], [-0.25 + 0.5 * high, 0.0, -0.5]])


def test_all_normalises_each_turn_among_every_scored_turn_of_the_group() -> None:
    data = inputs(SEGMENTED, SEGMENTED_SCORES, width=3)
    advantages = torch.tensor([[0.5, 0.5, 0.5], [-0.5, -0.5, -0.5]])
    out = run("turn_segmented", data, TurnSegmentedParams(normalize="all", mix=0.5), advantages)
    a, b, c = normalised([0.0, 1.0, 1.0])  # each turn once, whatever its length
    assert_rows(out, [[0.25 + 0.5 * a, 0.0, 0.25 + 0.5 * b], [-0.25 + 0.5 * c, 0.0, -0.5]])


def test_mix_zero_is_the_outcome_and_mix_one_the_turns_own_advantage() -> None:
    data = two_groups()
    advantages = torch.randn(data.mask.shape)
    assert torch.equal(
        run("turn_segmented", data, TurnSegmentedParams(mix=0.0), advantages), advantages * data.mask
    )
    own = run("turn_segmented", data, TurnSegmentedParams(mix=1.0, normalize="all"), advantages)
    first_group = normalised([0.0, 0.5, 1.0, 1.0, 0.0, 0.25])  # group 0's six scored turns, in order
    assert own[0, [0, 3, 8]].tolist() == pytest.approx([first_group[0], first_group[1], first_group[2]])
    assert own[0, 5:7].tolist() == pytest.approx(advantages[0, 5:7].tolist())  # absent turn 2: the outcome
    assert own[2, 0:3].tolist() == pytest.approx([first_group[5]] * 3)


# --- inputs, the step's caller -----------------------------------------------------------------------------------------


def episode(turns: list[tuple[tuple[int, int], float | None]]) -> EpisodeRecord:
    records = tuple(
        TurnRecord(model_span=span, env_span=(span[1], span[1] + 1), finish="stop", reward=reward)
        for span, reward in turns
    )
    return EpisodeRecord(records, "done", VerifierResult(reward=1.0, correct=True))


def test_inputs_from_episode_records_read_a_turn_without_reward_as_absent() -> None:
    episodes = [episode([((0, 2), 0.0), ((3, 5), None), ((6, 7), 1.0)]), episode([((0, 3), None)])]
    data = turn_credit_inputs(episodes, torch.tensor([0, 0]), torch.ones(2, 7), torch.tensor([1.0, 0.0]))
    assert data.spans == [[(0, 2), (3, 5), (6, 7)], [(0, 3)]]
    assert data.scores[0][0] == 0.0 and math.isnan(data.scores[0][1]) and data.scores[0][2] == 1.0
    assert math.isnan(data.scores[1][0])
    call = ToolCallRecord(name="calc", arguments={}, result="2", status="ok", seconds=0.0)
    with_call = EpisodeRecord(
        (TurnRecord((0, 1), (1, 2), "stop", None, tool_calls=(call,)),), "done", VerifierResult(1.0, True)
    )
    assert turn_credit_inputs([with_call], torch.tensor([0]), torch.ones(1, 2), torch.ones(1)).spans == [
        [(0, 1)]
    ]


@pytest.mark.parametrize(
    ("spans", "scores", "error", "message"),
    [
        ([[(0, 2), (1, 3)]], [[0.0, 1.0]], ValueError, "in order, non-overlapping"),
        ([[(0, 5)]], [[0.0]], ValueError, r"inside \[0, 4\]"),
        ([[(2, 1)]], [[0.0]], ValueError, "in order"),
        ([[(0, 1)]], [[0.0, 1.0]], ValueError, "1 turn spans but 2 scores"),
        ([[(0, 1)]], [[math.inf]], DataError, "must be a finite number"),
        ([[(0, 0)] * 65], [[0.0] * 65], ValueError, "more than 64"),
    ],
)
def test_bad_inputs_are_refused(
    spans: Spans, scores: list[list[float]], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        run("tcpo", inputs(spans, scores, width=4, mask=torch.ones(1, 4)), TCPOParams())


def test_rows_must_agree_on_n() -> None:
    with pytest.raises(ValueError, match="must agree on N"):
        TurnCreditInputs([[(0, 1)]], [[0.0]], torch.tensor([0, 0]), torch.ones(2, 2), torch.zeros(2))


def test_apply_turn_credit_runs_the_chosen_method_and_reports_the_scored_share_and_the_shift() -> None:
    data = two_groups()
    advantages = torch.zeros(data.mask.shape)
    chosen = ActiveMethod(TURN_CREDIT.entry("tcpo"), TCPOParams())
    out, metrics = apply_turn_credit(advantages, data, [chosen], step=3)
    assert torch.equal(out, run("tcpo", data, TCPOParams(), advantages))
    assert metrics["env/turn_scored_frac"] == pytest.approx(14 / 16)
    assert metrics["env/turn_credit_shift_abs_mean"] == pytest.approx(
        out[data.mask.bool()].abs().mean().item()
    )
    default = ActiveMethod(TURN_CREDIT.entry("outcome"), TURN_CREDIT.entry("outcome").parse_params(None))
    same, metrics = apply_turn_credit(advantages, data, [default], step=3)
    assert same is advantages and metrics["env/turn_credit_shift_abs_mean"] == 0.0
