from trainer.data import addition_prompt, demo_samples


def test_the_same_seed_gives_the_same_problems():
    assert demo_samples(50, seed=3) == demo_samples(50, seed=3)


def test_another_seed_gives_other_problems():
    assert [s.prompt for s in demo_samples(50, seed=3)] != [s.prompt for s in demo_samples(50, seed=4)]


def test_each_problem_is_two_operands_below_100_and_their_sum():
    for sample in demo_samples(200, seed=0):
        a, b = sample.prompt.removesuffix("=").split("+")
        assert 0 <= int(a) <= 99 and 0 <= int(b) <= 99
        assert sample.answer == str(int(a) + int(b))


def test_ids_are_numbered_from_zero():
    assert [s.id for s in demo_samples(3, seed=0)] == ["demo-0", "demo-1", "demo-2"]


def test_prompts_use_the_format_the_warm_start_uses():
    assert addition_prompt(37, 5) == "37+5="
    first = demo_samples(1, seed=0)[0]
    assert first.prompt == addition_prompt(*map(int, first.prompt[:-1].split("+")))


def test_the_first_problems_for_seed_zero_never_change():
    # Pinned: checkpoints, benchmarks and the warm-started tiny model all assume this exact sequence.
    assert [(s.prompt, s.answer) for s in demo_samples(3, seed=0)] == [
        ("49+97=", "146"),
        ("53+5=", "58"),
        ("33+65=", "98"),
    ]
