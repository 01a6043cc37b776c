"""The prompt-sampler registry (DESIGN.md "samplers / allocators"): config name -> builder.

Signature: ``(samples, config) -> PromptSource``. ``build_prompt_sampler`` is what run_setup calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from trainer.data.beta_sampler import BetaPromptSampler, load_pass_rates
from trainer.data.sampler import PromptSampler, PromptSource
from trainer.registry import Registry
from trainer.samples import Sample

if TYPE_CHECKING:
    from trainer.config import ExperimentConfig

SamplerBuilder = Callable[[Sequence[Sample], "ExperimentConfig"], PromptSource]
PROMPT_SAMPLERS: Registry[SamplerBuilder] = Registry("prompt sampler")


@PROMPT_SAMPLERS.register("uniform")
def uniform(samples: Sequence[Sample], config: ExperimentConfig) -> PromptSource:
    """Seeded epochs without replacement (the usual GRPO data loader; TRL's RepeatSampler order)."""
    return PromptSampler(samples, config.training.prompts_per_step, seed=config.seed, shuffle=config.data.shuffle)


@PROMPT_SAMPLERS.register("beta_learnability")
def beta_learnability(samples: Sequence[Sample], config: ExperimentConfig) -> PromptSource:
    """ThinkPrior (001:L23): Beta posterior per prompt, optional anchor-model prior, learnability p(1-p).

    See trainer/data/beta_sampler.py for how it differs from the paper.
    """
    b = config.budget
    prior = load_pass_rates(b.prior_file) if b.prior_file else None
    return BetaPromptSampler(
        samples, config.training.prompts_per_step, seed=config.seed, prior=prior,
        prior_strength=b.prior_strength, thompson=b.thompson,
    )


def build_prompt_sampler(samples: Sequence[Sample], config: ExperimentConfig) -> PromptSource:
    """The sampler named by ``budget.prompt_sampler``."""
    return PROMPT_SAMPLERS.get(config.budget.prompt_sampler)(samples, config)
