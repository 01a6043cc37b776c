"""GMTS token selection (trainer/methods/gmts.py) on hand-computed tensors, and the seam it was added through:
the config, its schema, the web form and the step take it with no edit outside its module."""

from __future__ import annotations

import math

import torch

from trainer.config import ExperimentConfig, config_from_dict, config_schema
from trainer.methods.gmts import gmts, gradient_magnitude
from trainer.methods.token_credit import TOKEN_CREDIT, CreditInputs, top_entropy

MASK = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
# Row 0: a rewarded completion with a small advantage and high-entropy tokens; row 1: a penalised one with a
# large advantage and moderate entropies (its last position is padding, with a high entropy that must not count).
ADV = torch.tensor([0.1, -2.0])
PROBS = [[0.3, 0.2, 0.25], [0.5, 0.4, 0.5]]
ENTROPIES = [[2.5, 3.0, 2.8], [1.0, 1.2, 5.0]]
LOGPROB = torch.log(torch.tensor(PROBS))
ENTROPY = torch.tensor(ENTROPIES)


def inputs() -> CreditInputs:
    return CreditInputs(mask=MASK, entropy=ENTROPY, logprob=LOGPROB)


def by_hand(a: float, p: float, h: float) -> float:
    return abs(a) * math.sqrt(max(1 - 2 * p + math.exp(-h), 0.0))


def test_the_score_is_the_advantage_times_the_logit_gradient_norm_estimate() -> None:
    scores = gradient_magnitude(ADV, inputs())
    expected = [
        [by_hand(float(ADV[i]), PROBS[i][t], ENTROPIES[i][t]) * float(MASK[i, t]) for t in range(3)]
        for i in range(2)
    ]
    assert torch.allclose(scores, torch.tensor(expected), atol=1e-6)
    assert math.isclose(expected[1][1], 2.0 * math.sqrt(1 - 0.8 + math.exp(-1.2)), rel_tol=1e-9)  # 1.416
    assert scores[1, 2] == 0.0  # padding


def test_a_one_hot_distribution_has_no_gradient_and_a_uniform_one_is_exact() -> None:
    one_hot = CreditInputs(mask=torch.ones(1, 1), entropy=torch.zeros(1, 1), logprob=torch.zeros(1, 1))
    assert float(gradient_magnitude(torch.tensor([1.0]), one_hot)) == 0.0
    v = 4  # uniform over 4 tokens: ||e_y - p||^2 = (1 - 1/4)^2 + 3/16 = 3/4 exactly; exp(-log 4) = 1/4 = sum p^2
    uniform = CreditInputs(
        mask=torch.ones(1, 1),
        entropy=torch.full((1, 1), math.log(v)),
        logprob=torch.full((1, 1), -math.log(v)),
    )
    assert math.isclose(
        float(gradient_magnitude(torch.tensor([1.0]), uniform)), math.sqrt(0.75), rel_tol=1e-6
    )


def test_gmts_keeps_the_top_fraction_by_score_where_entropy_alone_would_pick_otherwise() -> None:
    # 5 loss tokens; quantile 0.4 keeps the top 2. By entropy those are row 0's 3.0 and 2.8 (the low-advantage
    # completion); by GMTS both tokens of the large-advantage row 1 (scores 1.21 and 1.42 against row 0's < 0.09).
    params = TOKEN_CREDIT.entry("gmts").parse_params({"quantile": 0.4})
    kept = gmts(ADV, inputs(), params) != 0
    scores = gradient_magnitude(ADV, inputs())
    threshold = torch.quantile(scores[MASK.bool()], 0.6)
    assert torch.equal(kept, (scores >= threshold) & MASK.bool())
    assert kept.tolist() == [[False, False, False], [True, True, False]]
    entropy_kept = (
        top_entropy(ADV, inputs(), TOKEN_CREDIT.entry("top_entropy").parse_params({"quantile": 0.4})) != 0
    )
    assert entropy_kept.tolist() == [[False, True, True], [False, False, False]]


def test_kept_tokens_keep_the_completion_advantage_and_the_rest_get_zero() -> None:
    out = gmts(ADV, inputs(), TOKEN_CREDIT.entry("gmts").parse_params({"quantile": 0.4}))
    assert out.tolist() == [[0.0, 0.0, 0.0], [-2.0, -2.0, 0.0]]


def test_the_config_schema_and_form_offer_gmts_with_its_description_and_params() -> None:
    from webapp.pages.forms_editors import editor_specs  # the generic form, unchanged by this method

    config = config_from_dict({"algorithm": {"token_credit": {"name": "gmts", "params": {"quantile": 0.3}}}})
    assert config.algorithm.token_credit.params.quantile == 0.3
    choices = config_schema()["$defs"]["AlgorithmConfig"]["properties"]["token_credit"]["x-choices"]
    gmts_entry = next(c for c in choices if c["name"] == "gmts")
    assert gmts_entry["description"].startswith("GMTS")
    assert gmts_entry["params"]["properties"]["quantile"]["default"] == 0.2
    offered = {c["name"]: c for c in editor_specs()["algorithm.token_credit"]["choices"]}
    assert offered["gmts"]["description"].startswith("GMTS")
    assert offered["gmts"]["defaults"] == {"quantile": 0.2}


def test_a_bad_quantile_is_refused_at_the_choice() -> None:
    import pytest

    from trainer.errors import ConfigError

    with pytest.raises(
        ConfigError, match=r"algorithm\.token_credit\.params: token credit 'gmts': params\.quantile"
    ):
        config_from_dict({"algorithm": {"token_credit": {"name": "gmts", "params": {"quantile": 0}}}})


def test_two_training_steps_with_gmts_run_through_the_unchanged_step(random_model_dir, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from tests.trainer.loop_helpers import tiny_config
    from trainer.step.loop import train

    cfg: ExperimentConfig = tiny_config(
        random_model_dir, tmp_path / "run", algorithm={"token_credit": "gmts"}, training={"max_steps": 2}
    )
    result = train(cfg)
    assert result.status == "succeeded" and result.steps_done == 2
