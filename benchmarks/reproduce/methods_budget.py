"""Rows for the rollout-budget and prompt-selection methods (trainer/step/collect.py, trainer/methods/allocation.py,
trainer/methods/beta_sampler.py; issue 5 part 5). Claims are copied from shared/METHODS.md section 4."""

from __future__ import annotations

from benchmarks.reproduce.method import ClaimPart, Method
from benchmarks.reproduce.prepare import ANCHOR, ANCHOR_SAMPLES, anchor_pass_rates

DS = {"budget": {"dynamic_sampling": True, "max_generation_rounds": 4}}
THINKPRIOR = {"budget": {"prompt_sampler": "beta_learnability", "prior_strength": 8.0, "thompson": True}}
THINKPRIOR_NOTE = (
    f"the anchor is {ANCHOR} (an external, stronger model, as in the paper), sampled {ANCHOR_SAMPLES} times per "
    "training prompt offline; its rollouts, tokens and seconds are charged to the method arm (rollouts_total, "
    "tokens_total, wall_total_s); learnability is p(1-p) under Thompson sampling with prior strength 8 (the "
    "paper gives neither); 512 prompts instead of 250."
)
SAME_ACCURACY = ClaimPart("final_sampled_accuracy", "same", "no loss of accuracy")

METHODS: list[Method] = [
    Method(
        name="dapo_dynamic_sampling",
        paper="001:L97",
        claim="Oversample prompts, generate full groups, drop saturated groups (all correct or all wrong), and "
        "refill the batch. SARA treats DS as the oracle.",
        parts=(ClaimPart("zero_std_frac_early", "lower", "no silent groups in the update"),),
        overrides=DS,
        figures=("final_sampled_accuracy", "final_accuracy", "rollouts_to_target"),
        note="refills with just the missing number of prompts per round, at most 4 rounds per step; the claim "
        "is the mechanism's (no silent groups in the update batch), paid for in generated rollouts (see the costs).",
    ),
    Method(
        name="vigor",
        paper="001:L105",
        claim="Give every prompt a few rollouts, then repeatedly add rollouts to the prompts with the highest group "
        "reward variance until a fixed total budget is used. Up to 2.3x fewer rollouts to reach target accuracy on math.",
        parts=(
            ClaimPart("rollouts_to_target", "lower", "fewer rollouts to the target accuracy"),
            ClaimPart("rollouts_total", "same", "the same total budget"),
        ),
        overrides={
            "budget": {
                "allocator": "vigor",
                "vigor_initial_rollouts": 4,
                "vigor_increment": 2,
                "vigor_rounds": 2,
            }
        },
        figures=("final_sampled_accuracy", "final_accuracy", "zero_std_frac_early"),
        note="same 64-rollout budget per step as GRPO: 4 per prompt, then 2 rounds dealt 2 at a time to the "
        "non-silent groups, highest variance first; the target is half of the comparison arm's held-out greedy "
        "accuracy gain, read on the curve (every 20 steps).",
    ),
    Method(
        name="early_abandon_with_refill",
        paper="001:L97",
        claim="SARA: commit effective groups, abandon saturated ones after a short probe, and give the freed budget "
        "to fresh prompts. Matches DPS with 22% fewer rollouts than DS.",
        parts=(ClaimPart("rollouts_total", "lower", "fewer rollouts than DS"), SAME_ACCURACY),
        overrides={"budget": {"allocator": "early_abandon", "early_abandon_after": 4}},
        baseline_overrides=DS,
        comparison="dynamic sampling",
        figures=("final_accuracy", "zero_std_frac_early"),
        note="compared with dynamic sampling (both arms refill to 8 informative groups, at most 4 rounds); the "
        "abandon rule is a unanimous 4-rollout probe, not SARA's Beta-posterior SPRT (next row).",
    ),
    Method(
        name="sara_posterior_with_refill",
        paper="001:L97",
        claim="SARA: a Beta posterior per prompt and a closed-form predictor of group effectiveness; commit "
        "effective groups, abandon saturated ones after a short probe, give the freed budget to fresh prompts. "
        "Matches DPS with 22% fewer rollouts than DS.",
        parts=(ClaimPart("rollouts_total", "lower", "fewer rollouts than DS"), SAME_ACCURACY),
        overrides={
            "budget": {
                **DS["budget"],
                "allocator": "sara",
                "sara_probe": 2,
                "sara_step": 2,
                "prompt_sampler": "beta_learnability",
                "thompson": True,
            }
        },
        baseline_overrides={
            "budget": {**DS["budget"], "prompt_sampler": "beta_learnability", "thompson": True}
        },
        comparison="dynamic sampling on the same prompt sampler",
        figures=("final_accuracy", "zero_std_frac_early"),
        note="the 'sara' allocator (trainer/methods/allocation.py): a 2-rollout probe, then abandon below 0.2 / "
        "complete at 0.8 posterior probability of an effective group, 2 more rollouts in between; the prior is "
        "the beta_learnability sampler's per-prompt posterior; compared with dynamic sampling on the same "
        "sampler (only the allocator differs), both arms refilling to 8 informative groups in at most 4 rounds.",
    ),
    Method(
        name="thinkprior",
        paper="001:L23",
        claim="ThinkPrior more than halves early silent groups and cuts wasted rollouts through step 30 by nearly a "
        "fifth; no detectable difference in final accuracy. (Uniform sampling spends 39% of rollouts on silent groups.)",
        parts=(
            ClaimPart(
                "zero_std_frac_early", "lower", "fewer silent groups early (claimed: more than halved)"
            ),
            ClaimPart(
                "wasted_rollouts_early", "lower", "fewer wasted rollouts through step 30 (claimed: -19%)"
            ),
            SAME_ACCURACY,
        ),
        overrides=THINKPRIOR,
        figures=("final_accuracy",),
        prepare=anchor_pass_rates,
        note=THINKPRIOR_NOTE,
    ),
    Method(
        name="thinkprior_with_dapo",
        paper="001:L23",
        claim="The measured ThinkPrior+DAPO composition reduces generated rollouts by 10.6% while both arms retain "
        "the same update budget.",
        parts=(
            ClaimPart("rollouts_generated", "lower", "fewer generated rollouts (claimed: -10.6%)"),
            ClaimPart("rollouts_total", "lower", "fewer rollouts counting the anchor pass"),
        ),
        overrides=THINKPRIOR,
        baseline_overrides=DS,
        comparison="dynamic sampling",
        figures=("final_sampled_accuracy", "final_accuracy"),
        prepare=anchor_pass_rates,
        note="compared with dynamic sampling alone (both arms refill to 8 informative groups, at most 4 rounds). "
        + THINKPRIOR_NOTE,
    ),
]
