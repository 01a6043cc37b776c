"""The built-in chain-arithmetic task with a scratchpad (trainer/data/chain_arithmetic.py)."""

import re

import pytest

from trainer.config import DataConfig
from trainer.data import load_samples
from trainer.data.chain_arithmetic import (
    LEVELS,
    chain_arithmetic_levels,
    chain_arithmetic_samples,
    render_expression,
    scratchpad,
)
from trainer.errors import DataError

TOKEN = re.compile(r"\d+|[-+*]")


def steps_of(sample) -> list[tuple[int, str, int, int]]:
    """The steps (left, op, right, result) a sample's scratchpad takes: the operations from the prompt, the
    results from the leading number of each rewritten line; checks each line is the rewrite of the one before."""
    tokens = TOKEN.findall(sample.prompt)
    acc, ops = int(tokens[0]), [(tokens[i], int(tokens[i + 1])) for i in range(1, len(tokens), 2)]
    body, final = sample.meta["solution"].split(";")
    assert final.startswith("#### ")
    lines = body.split("=")
    steps = []
    for k, ((op, b), line) in enumerate(zip(ops, lines, strict=True)):
        result = int(re.match(r"\(*(\d+)", line).group(1))
        assert line == render_expression(result, ops[k + 1 :]), (sample.prompt, line)
        steps.append((acc, op, b, result))
        acc = result
    return steps


def test_the_same_seed_gives_the_same_problems():
    assert chain_arithmetic_samples(200, seed=3) == chain_arithmetic_samples(200, seed=3)


def test_another_seed_gives_other_problems():
    first = [s.prompt for s in chain_arithmetic_samples(50, seed=3)]
    assert first != [s.prompt for s in chain_arithmetic_samples(50, seed=4)]


def test_a_larger_size_only_appends_problems():
    assert chain_arithmetic_samples(30, seed=1)[:10] == chain_arithmetic_samples(10, seed=1)


def test_the_first_problems_for_seed_zero_never_change():
    # Pinned: a run resumed or compared across versions must see the same problems.
    assert [(s.prompt, s.meta["solution"]) for s in chain_arithmetic_samples(3, seed=0)] == [
        ("8-3-1-3+1=", "5-1-3+1=4-3+1=1+1=2;#### 2"),
        ("8-5+1-2+7-4=", "3+1-2+7-4=4-2+7-4=2+7-4=9-4=5;#### 5"),
        ("9-4-4+5-3+5=", "5-4+5-3+5=1+5-3+5=6-3+5=3+5=8;#### 8"),
    ]


def test_the_scratchpad_rewrites_the_expression_once_per_step_then_gives_a_delimited_answer():
    assert scratchpad([(9, "+", 6, 15), (15, "*", 4, 60), (60, "-", 5, 55)]) == "15*4-5=60-5=55;#### 55"
    # a product after a sum keeps its parentheses in every line that still has both
    steps = [(2, "+", 3, 5), (5, "-", 1, 4), (4, "*", 2, 8), (8, "*", 3, 24)]
    assert scratchpad(steps) == "(5-1)*2*3=4*2*3=8*3=24;#### 24"
    assert render_expression(2, [("+", 3), ("-", 1), ("*", 2), ("*", 3)]) == "(2+3-1)*2*3"


def test_every_line_of_the_scratchpad_equals_the_prompt():
    for sample in chain_arithmetic_samples(300, seed=4):
        for line in sample.meta["solution"].split(";")[0].split("="):
            assert eval(line) == int(sample.answer)  # our own digits and operators


@pytest.mark.parametrize("level", chain_arithmetic_levels())
def test_each_step_is_right_and_chains_into_the_next(level: str):
    for sample in chain_arithmetic_samples(300, seed=0, level=level):
        steps = steps_of(sample)
        assert len(steps) == sample.meta["operands"] - 1
        for (a, op, b, r), following in zip(steps, [*steps[1:], None], strict=True):
            assert r == (a + b if op == "+" else a - b if op == "-" else a * b)
            if following is not None:
                assert following[0] == r
        assert sample.answer == str(steps[-1][3])
        assert sample.meta["solution"].endswith(f"#### {sample.answer}")


@pytest.mark.parametrize("level", chain_arithmetic_levels())
def test_the_prompt_is_ordinary_arithmetic_with_the_same_answer(level: str):
    for sample in chain_arithmetic_samples(300, seed=5, level=level):
        assert sample.prompt.endswith("=")
        assert re.fullmatch(r"[0-9+\-*()]+=", sample.prompt)
        assert eval(sample.prompt.removesuffix("=")) == int(sample.answer)  # our own digits and operators


def test_the_operand_count_knobs_set_the_number_of_steps():
    few = chain_arithmetic_samples(
        100, seed=0, level="easy", overrides={"min_operands": 2, "max_operands": 2}
    )
    many = chain_arithmetic_samples(
        100, seed=0, level="easy", overrides={"min_operands": 7, "max_operands": 7}
    )
    assert {s.meta["operands"] for s in few} == {2}
    assert {s.meta["operands"] for s in many} == {7}
    assert {len(steps_of(s)) for s in many} == {6}


def test_the_value_knobs_set_the_operand_sizes():
    big = {"min_value": 1000, "max_value": 9999, "max_result": 10**6}
    for sample in chain_arithmetic_samples(100, seed=0, level="easy", overrides=big):
        for _, _, b, r in steps_of(sample):
            assert 1000 <= b <= 9999 and 1000 <= r <= 10**6
    for sample in chain_arithmetic_samples(100, seed=0, level="easy"):
        assert all(1 <= b <= 9 for _, _, b, _ in steps_of(sample))


def test_the_product_share_sets_the_operator_mix():
    def products(samples: list) -> int:
        return sum(op == "*" for s in samples for _, op, _, _ in steps_of(s))

    assert products(chain_arithmetic_samples(200, seed=0, level="easy")) == 0
    always = chain_arithmetic_samples(
        200, seed=0, level="easy", overrides={"product_share": 1.0, "max_result": 10**9}
    )
    assert products(always) > 0.9 * sum(len(steps_of(s)) for s in always)
    for sample in always:
        assert all(2 <= b <= 9 for _, op, b, _ in steps_of(sample) if op == "*")


def test_intermediate_results_stay_between_the_floor_and_the_ceiling():
    for sample in chain_arithmetic_samples(300, seed=2, level="hard"):
        assert all(1 <= r <= 99 for _, _, _, r in steps_of(sample))


def test_the_levels_get_harder():
    def mean(values: list[int]) -> float:
        return sum(values) / len(values)

    by_level = {name: chain_arithmetic_samples(300, seed=0, level=name) for name in LEVELS}
    operands = {name: mean([s.meta["operands"] for s in samples]) for name, samples in by_level.items()}
    answers = {name: mean([int(s.answer) for s in samples]) for name, samples in by_level.items()}
    assert operands["easy"] < operands["medium"] < operands["hard"]
    assert answers["easy"] < answers["hard"]


def test_the_mixed_default_draws_every_level():
    assert {s.meta["level"] for s in chain_arithmetic_samples(200, seed=0)} == set(LEVELS)


def test_reference_solutions_of_the_default_levels_are_26_to_80_tiny_tokens():
    from trainer.models.tiny_model import char_tokenizer

    tok = char_tokenizer()
    for level in chain_arithmetic_levels():
        lengths = [
            len(tok(s.meta["solution"])["input_ids"])
            for s in chain_arithmetic_samples(1000, seed=0, level=level)
        ]
        assert min(lengths) >= 26 and max(lengths) <= 80, (level, min(lengths), max(lengths))


def test_the_config_can_name_the_source_and_a_level():
    cfg = DataConfig(source="chain_arithmetic", task="hard", size=4, data_seed=7)
    samples = load_samples(cfg)
    assert samples == chain_arithmetic_samples(4, seed=7, level="hard")
    assert [s.id for s in samples] == ["chain-0", "chain-1", "chain-2", "chain-3"]


def test_the_config_passes_task_config_as_knob_overrides():
    cfg = DataConfig(source="chain_arithmetic", size=20, task_config={"min_operands": 3, "max_operands": 3})
    assert {s.meta["operands"] for s in load_samples(cfg)} == {3}


def test_an_unknown_level_is_refused_with_the_valid_ones():
    with pytest.raises(
        DataError, match=r"'medum' is not a chain_arithmetic level; valid levels are: easy, medium"
    ):
        chain_arithmetic_samples(5, seed=0, level="medum")


def test_an_unknown_knob_is_refused_with_the_valid_keys():
    with pytest.raises(DataError, match=r"min_terms.*valid keys are: min_operands, max_operands"):
        chain_arithmetic_samples(5, seed=0, overrides={"min_terms": 3})


def test_contradictory_knobs_are_refused_with_the_fix():
    with pytest.raises(DataError, match="max_operands 2 is below min_operands 5"):
        chain_arithmetic_samples(5, seed=0, level="easy", overrides={"max_operands": 2})
    with pytest.raises(DataError, match="at least 3 \\* min_value"):
        chain_arithmetic_samples(
            5, seed=0, level="easy", overrides={"min_value": 90, "max_value": 99, "max_result": 100}
        )
