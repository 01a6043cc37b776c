"""Prompt samplers (axis ``budget.prompt_sampler``, hook point ``prompt_sampler``): which prompts a step draws.

Hook signature: ``(samples, config, params) -> PromptSource``. ``build_prompt_sampler`` is what run_setup calls.

In a data-parallel run every process builds the same sampler (same seed), draws the same prompts and observes
every process's group outcomes in the 1-process order (trainer/step/collect.py), so its state, random stream
included, stays the 1-process one on every process.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import Field

from trainer.bounds import MAX_NAME_CHARS, BoundedModel
from trainer.data.sampler import PromptSampler, PromptSource
from trainer.methods.axes import Axis, the_hook
from trainer.methods.beta_sampler import BetaPromptSampler, load_pass_rates
from trainer.samples import Sample

if TYPE_CHECKING:
    from trainer.methods.views import RunConfig

SamplerBuilder = Callable[[Sequence[Sample], "RunConfig", Any], PromptSource]
PROMPT_SAMPLERS: Axis[SamplerBuilder] = Axis(
    "prompt sampler",
    "budget.prompt_sampler",
    "prompt_sampler",
    default="uniform",
    description="Which prompts a step draws.",
)


@PROMPT_SAMPLERS.method("uniform")
def uniform(samples: Sequence[Sample], config: RunConfig, params: Any) -> PromptSource:
    """Seeded epochs without replacement (the usual GRPO data loader; TRL's RepeatSampler order)."""
    return PromptSampler(
        samples, config.training.prompts_per_step, seed=config.seed, shuffle=config.data.shuffle
    )


class BetaLearnabilityParams(BoundedModel):
    prior_file: str | None = Field(
        None,
        max_length=MAX_NAME_CHARS,
        description='A JSON object {prompt id: pass rate} or JSONL lines {"id": ..., "pass_rate": ...} from an '
        "anchor model's verifier-scored pass rates (ThinkPrior's offline prior); prompts not listed start from "
        "Beta(1, 1). In the web app and API an uploaded data file of the project as 'dataset:<id>'.",
        json_schema_extra={"x-path": "data-file"},  # the web app confines it to the project's uploads
    )
    prior_strength: float = Field(
        8.0,
        gt=0,
        le=1e6,
        description="Pseudo-counts the anchor pass rate p is worth: Beta(1 + s p, 1 + s (1 - p)) (ThinkPrior does not "
        "give its form).",
    )
    thompson: bool = Field(
        True,
        description="Score each prompt with p(1-p) at a p drawn from its posterior (Thompson sampling, explores); "
        "false: the posterior expectation of p(1-p) (greedy).",
    )


@PROMPT_SAMPLERS.method("beta_learnability", params=BetaLearnabilityParams)
def beta_learnability(
    samples: Sequence[Sample], config: RunConfig, params: BetaLearnabilityParams
) -> PromptSource:
    """ThinkPrior: a Beta posterior per prompt from observed successes, optionally initialised from an anchor
    model's pass rates; picks the highest expected learnability p(1-p).

    (001:L23.) See trainer/methods/beta_sampler.py for how it differs from the paper.
    """
    prior = load_pass_rates(params.prior_file) if params.prior_file else None
    return BetaPromptSampler(
        samples,
        config.training.prompts_per_step,
        seed=config.seed,
        prior=prior,
        prior_strength=params.prior_strength,
        thompson=params.thompson,
    )


def build_prompt_sampler(samples: Sequence[Sample], config: RunConfig) -> PromptSource:
    """The sampler named by ``budget.prompt_sampler``, with its params."""
    build, params = the_hook("prompt_sampler", config.budget.prompt_sampler.active())
    source: PromptSource = build(samples, config, params)
    return source
