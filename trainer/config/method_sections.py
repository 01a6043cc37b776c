"""The config sections that choose methods: the objective (``algorithm``), reward and advantage shaping
(``shaping``), the rollout budget (``budget``) and the teacher (``teacher``).

Each method choice is a ``{name, params}`` field built from its axis's registry (trainer/config/choice.py):
the schema lists the registered names, and the params are the chosen method's own model. What stays here
as plain fields is what every method shares (clip radii, the KL weight, optimizer passes, reward weights).
Flat names of earlier versions and of TRL (``scale_rewards``, ``top_entropy_quantile``, ``ecr_strength``...)
are accepted and moved into their method's params (trainer/config/legacy.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

import trainer.methods  # noqa: F401  -- registers every method before the choice models are built
from trainer.bounds import MAX_LIST_ITEMS, BoundedModel
from trainer.config.choice import MethodChoice, choice_field, choice_model
from trainer.config.legacy import aliases, upgrade_section
from trainer.methods.advantages import ADVANTAGES
from trainer.methods.aggregation import AGGREGATIONS
from trainer.methods.allocation import ALLOCATORS
from trainer.methods.answer_span import LOSS_MASKS
from trainer.methods.fusion import FUSIONS
from trainer.methods.policy_losses import CLIP_RANGES, POLICY_LOSSES
from trainer.methods.prompt_samplers import PROMPT_SAMPLERS
from trainer.methods.rarity import ADVANTAGE_SHAPING
from trainer.methods.regularizers import KL_ESTIMATORS
from trainer.methods.shaping import REWARD_SHAPING
from trainer.methods.token_credit import TOKEN_CREDIT

if TYPE_CHECKING:  # every choice is a MethodChoice to the type checker; pydantic sees each axis's own model
    AdvantageChoice = MethodChoice
    TokenCreditChoice = MethodChoice
    PolicyLossChoice = MethodChoice
    ClipRangeChoice = MethodChoice
    AggregationChoice = MethodChoice
    KLChoice = MethodChoice
    LossMaskChoice = MethodChoice
    RewardShapingChoice = MethodChoice
    AdvantageShapingChoice = MethodChoice
    AllocatorChoice = MethodChoice
    PromptSamplerChoice = MethodChoice
    FusionChoice = MethodChoice
else:
    AdvantageChoice = choice_model(ADVANTAGES)
    TokenCreditChoice = choice_model(TOKEN_CREDIT)
    PolicyLossChoice = choice_model(POLICY_LOSSES)
    ClipRangeChoice = choice_model(CLIP_RANGES)
    AggregationChoice = choice_model(AGGREGATIONS)
    KLChoice = choice_model(KL_ESTIMATORS)
    LossMaskChoice = choice_model(LOSS_MASKS)
    RewardShapingChoice = choice_model(REWARD_SHAPING)
    AdvantageShapingChoice = choice_model(ADVANTAGE_SHAPING)
    AllocatorChoice = choice_model(ALLOCATORS)
    PromptSamplerChoice = choice_model(PROMPT_SAMPLERS)
    FusionChoice = choice_model(FUSIONS)


def _aliases_in_schema(schema: dict[str, Any], cls: type[Any]) -> None:
    found = aliases(cls.__name__)
    if found:
        schema["x-aliases"] = found


class _MethodSection(BoundedModel):
    """A section with method choices: flat legacy names are moved into their method's params first (listed
    in the section's schema as ``x-aliases``)."""

    model_config = ConfigDict(json_schema_extra=_aliases_in_schema)

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        return upgrade_section(cls.__name__, data) if isinstance(data, dict) else data


class AlgorithmConfig(_MethodSection):
    """The GRPO-family objective: one method for each choice below, and the knobs they all share."""

    advantage_estimator: AdvantageChoice = choice_field(
        ADVANTAGES,
        "How rewards become one advantage per completion. 'grpo' takes scale_rewards (TRL name) in its params.",
    )
    token_credit: TokenCreditChoice = choice_field(
        TOKEN_CREDIT,
        "How a completion's advantage becomes per-token advantages (what the token view colours). "
        "TRL's top_entropy_quantile is accepted in this section as an alias of 'top_entropy''s quantile "
        "(Wang et al. 2025, 'Beyond the 80/20 Rule'; see x-aliases).",
    )
    loss_type: AggregationChoice = choice_field(
        AGGREGATIONS,
        "Loss normalisation (TRL name): how per-token losses become the scalar that is back-propagated.",
    )
    importance_sampling_level: PolicyLossChoice = choice_field(
        POLICY_LOSSES,
        "The unit of the clipped importance ratio (TRL name): 'token' (PPO), 'sequence' (GSPO, Zheng et al. 2025, in "
        "its GSPO-token form so per-token advantages keep their gradient) or 'segment' (HISPO).",
    )
    clip_mode: ClipRangeChoice = choice_field(
        CLIP_RANGES,
        "The clip range of each completion: 'fixed' [1 - epsilon, 1 + epsilon_high] (PPO) or 'gapo'.",
    )
    loss_masks: list[LossMaskChoice] = choice_field(
        LOSS_MASKS, "Tokens taken out of the loss, e.g. 'answer_span' (OM-GRPO); applied in order."
    )
    kl_estimator: KLChoice = choice_field(
        KL_ESTIMATORS, "Per-token KL estimator to the reference model (Schulman 2020), weighted by beta."
    )
    epsilon: float = Field(0.2, gt=0, le=10, description="Lower clip range: ratio >= 1 - epsilon (PPO).")
    epsilon_high: float | None = Field(
        None,
        gt=0,
        le=10,
        description="Upper clip range (clip-higher, DAPO, Yu et al. 2025: 0.28); default: epsilon.",
    )
    beta: float = Field(
        0.0, ge=0, le=100, description="KL coefficient to the frozen reference model; 0 loads no reference."
    )
    num_iterations: int = Field(
        1,
        ge=1,
        le=64,
        description="Optimizer passes over each batch of rollouts (mu in GRPO); >1 reuses them "
        "with stored old logprobs and PPO clipping.",
    )
    mask_truncated_completions: bool = Field(
        False,
        description="Exclude completions cut at max_completion_length from the loss (DAPO overlong filtering).",
    )
    reward_weights: list[Annotated[float, Field(ge=-1000, le=1000)]] | None = Field(
        None,
        max_length=MAX_LIST_ITEMS,
        description="One weight per verifier for the total reward (TRL name); default all 1.0.",
    )
    dual_clip: bool = Field(
        False,
        description="Dual-clip PPO (Ye et al. 2020, 'Mastering Complex Control in MOBA Games'): for negative "
        "advantages the per-token loss is capped at dual_clip_c x |A|, so a token whose ratio exploded "
        "cannot dominate the step. As verl's clip_ratio_c.",
    )
    dual_clip_c: float = Field(
        3.0, gt=1, le=1000, description="Dual-clip bound c (> 1; Ye et al. 2020 and verl use 3)."
    )

    @property
    def clip_high(self) -> float:
        return self.epsilon if self.epsilon_high is None else self.epsilon_high

    @model_validator(mode="after")
    def _clip_higher(self) -> AlgorithmConfig:
        if self.clip_high < self.epsilon * 0.5:
            raise ValueError(
                "algorithm.epsilon_high is far below epsilon; clip-higher needs epsilon_high >= epsilon"
            )
        return self


class ShapingConfig(_MethodSection):
    """Rewards without labels (majority vote, soft consensus) and reward / advantage shaping (DAPO overlong
    punishment, length penalty, Cue-GRPO rarity redistribution), applied after the verifiers score a step."""

    reward_shaping: list[RewardShapingChoice] = choice_field(
        REWARD_SHAPING,
        "Applied in order to the verifiers' total: 'majority_vote' / 'soft_consensus' (label-free rewards: test-time "
        "RL, OM-GRPO), 'overlong_penalty' (DAPO), 'length_penalty'. Each term is also shown as its own reward key.",
    )
    advantage_shaping: list[AdvantageShapingChoice] = choice_field(
        ADVANTAGE_SHAPING,
        "Applied in order to the advantages: 'rarity' (Cue-GRPO rarity-aware redistribution).",
    )


class RolloutBudgetConfig(_MethodSection):
    """Rollout budget and prompt selection (VIGOR, SARA, DAPO dynamic sampling, ThinkPrior). The defaults are
    plain GRPO: uniform prompts, num_generations each."""

    allocator: AllocatorChoice = choice_field(
        ALLOCATORS, "How many completions each prompt gets ('fixed': num_generations each, GRPO)."
    )
    prompt_sampler: PromptSamplerChoice = choice_field(
        PROMPT_SAMPLERS, "Which prompts a step draws ('uniform': seeded epochs, the usual data loader)."
    )
    dynamic_sampling: bool = Field(
        False,
        description="DAPO dynamic sampling (Yu et al. 2025): drop groups whose rewards "
        "are all equal (no gradient) and draw more prompts until prompts_per_step informative groups or "
        "max_generation_rounds rounds.",
    )
    max_generation_rounds: int = Field(
        3,
        ge=1,
        le=100,
        description="Dynamic sampling: most rounds of prompt drawing per step (DAPO's max_num_gen_batches); "
        "when they run out the step trains on the informative groups found so far.",
    )


class TeacherConfig(_MethodSection):
    """Teacher signals (on-policy distillation, OPD / OPSD): an external
    teacher (OPD) or the policy shown privileged context (OPSD) scores every sampled token; fusion decides
    how that score meets the verifier reward. Defaults: no teacher."""

    name_or_path: str | None = Field(
        None,
        description="External teacher (mode 'external'): a local Hugging Face causal-LM directory that uses "
        "the policy's tokenizer, or a built-in teacher: 'tiny:chain-teacher' for tiny:chain, "
        "'tiny:addition-teacher' for tiny:addition (the student trained further, built on first use or by "
        "`rlvr init-model --teacher`). It scores the student's sampled tokens: on-policy distillation "
        "(OPD). null: no external teacher.",
    )
    mode: Literal["external", "self"] = Field(
        "external",
        description="'external': the model at name_or_path is the teacher (OPD). 'self': the policy itself, "
        "shown privileged context (the reference answer) through privileged_template, is the teacher "
        "(on-policy self-distillation, OPSD); no second model is loaded.",
    )
    privileged_template: str = Field(
        "Reference answer: {answer}\n{prompt}",
        description="OPSD (mode 'self'): the teacher's view of a problem, a Python format string over "
        "the raw problem text {prompt} and its reference answer {answer}; the result is rendered like a "
        "student prompt (data.prompt_template or the chat template), then scores the student's tokens.",
    )
    fusion: FusionChoice = choice_field(
        FUSIONS,
        "How the teacher meets the verifier: 'none' (the teacher is only recorded, unless token_credit is 'ecr'), "
        "'opd' (on-policy distillation), 'additive', 'modulated', 'puu' (UECR-GRPO).",
    )

    @property
    def enabled(self) -> bool:
        """Whether a teacher scores the rollouts (an external model, or the policy with privileged context)."""
        return self.mode == "self" or self.name_or_path is not None


def chosen_methods(section: BoundedModel) -> list[MethodChoice]:
    """Every method choice inside ``section`` (a config or any part of it), in field order."""
    found: list[MethodChoice] = []
    stack: list[Any] = [section]
    while stack:
        item = stack.pop(0)
        if isinstance(item, MethodChoice):
            found.append(item)
        elif isinstance(item, BoundedModel):
            stack[:0] = [getattr(item, name) for name in type(item).model_fields]
        elif isinstance(item, list):
            stack[:0] = list(item)
    return found
