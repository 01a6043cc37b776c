"""Rows for the rollout-budget and prompt-selection methods (trainer/step/collect.py, trainer/methods/allocation.py,
trainer/methods/beta_sampler.py; issue 5 part 5). Claims are copied from shared/METHODS.md section 4."""

from __future__ import annotations

from benchmarks.reproduce.measures import ArmResult, _curve
from benchmarks.reproduce.method import ClaimPart, Comparison, Method
from benchmarks.reproduce.prepare import ANCHOR, ANCHOR_PASS, ANCHOR_SAMPLES

DS = {"budget": {"dynamic_sampling": True, "max_generation_rounds": 4}}
THINKPRIOR = {"budget": {"prompt_sampler": "beta_learnability", "prior_strength": 8.0, "thompson": True}}
THINKPRIOR_NOTE = (
    f"the anchor is {ANCHOR} (an external, stronger model, as in the paper), sampled {ANCHOR_SAMPLES} times per "
    "training prompt offline; its rollouts, tokens and seconds are charged to the method arm (rollouts_total, "
    "tokens_total, wall_total_s); learnability is p(1-p) under Thompson sampling with prior strength 8 (the "
    "paper gives neither); 512 prompts instead of 250."
)
SAME_ACCURACY = (
    ClaimPart("final_sampled_accuracy", "same", "no loss of accuracy (sampled)"),
    ClaimPart("final_accuracy", "same", "no loss of accuracy (greedy)"),
)
BETA_DS = {"budget": {**DS["budget"], "prompt_sampler": "beta_learnability", "thompson": True}}


def vigor_has_power(method: list[ArmResult], comparison: list[ArmResult]) -> str | None:
    """VIGOR's claim is read as rollouts to a target; when plain GRPO already reaches the target at its first
    checkpoint in most seeds, the measure cannot separate the arms at this checkpoint spacing."""
    early = 0
    for arm in comparison:
        start, end = _curve(arm, 0), _curve(arm, -1)
        if end > start and len(arm.evals) > 1 and _curve(arm, 1) >= start + (end - start) / 2:
            early += 1
    if comparison and early * 2 > len(comparison):
        step = comparison[0].evals[1]["step"]
        return (
            f"plain GRPO reaches the target (half its own gain) at its first checkpoint (step {step}) in {early} of "
            f"{len(comparison)} seeds, so rollouts-to-target has no power at this checkpoint spacing; a variant with "
            "checkpoints every 5 steps or a harder target would be needed"
        )
    return None


METHODS: list[Method] = [
    Method(
        name="dapo_dynamic_sampling",
        paper="001:L97",
        cites="DAPO's dynamic sampling (Yu et al. 2025)",
        claim="Oversample prompts, generate full groups, drop saturated groups (all correct or all wrong), and "
        "refill the batch. SARA treats DS as the oracle.",
        parts=(ClaimPart("zero_std_frac_early", "lower", "no silent groups in the update", "mechanism"),),
        overrides=DS,
        figures=("final_sampled_accuracy", "final_accuracy", "rollouts_to_target"),
        note="refills with just the missing number of prompts per round, at most 4 rounds per step; the claim "
        "is the mechanism's (no silent groups in the update batch), paid for in generated rollouts (see the costs).",
    ),
    Method(
        name="vigor",
        paper="001:L105",
        cites="VIGOR (variance-guided rollout allocation)",
        claim="Give every prompt a few rollouts, then repeatedly add rollouts to the prompts with the highest group "
        "reward variance until a fixed total budget is used. Up to 2.3x fewer rollouts to reach target accuracy on math.",
        parts=(
            ClaimPart("rollouts_to_target", "lower", "fewer rollouts to the target accuracy"),
            ClaimPart("rollouts_total", "same", "the same total budget", "mechanism"),
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
        applicable=vigor_has_power,
        note="same 64-rollout budget per step as GRPO: 4 per prompt, then 2 rounds dealt 2 at a time to the "
        "non-silent groups, highest variance first; the target is half of the comparison arm's held-out greedy "
        "accuracy gain, read on the curve (every 20 steps).",
    ),
    Method(
        name="early_abandon_with_refill",
        paper="001:L97",
        cites="SARA (Sequential Adaptive Rollout Allocation)",
        claim="SARA: commit effective groups, abandon saturated ones after a short probe, and give the freed budget "
        "to fresh prompts. Matches DPS with 22% fewer rollouts than DS.",
        parts=(ClaimPart("rollouts_total", "lower", "fewer rollouts than DS"), *SAME_ACCURACY),
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
        cites="SARA (Sequential Adaptive Rollout Allocation)",
        claim="SARA: a Beta posterior per prompt and a closed-form predictor of group effectiveness; commit "
        "effective groups, abandon saturated ones after a short probe, give the freed budget to fresh prompts. "
        "Matches DPS with 22% fewer rollouts than DS.",
        parts=(ClaimPart("rollouts_total", "lower", "fewer rollouts than DS"), *SAME_ACCURACY),
        overrides={
            "budget": {"allocator": "sara", "sara_probe": 2, "sara_step": 2, **BETA_DS["budget"]},
        },
        baseline_overrides=DS,
        comparison="plain dynamic sampling (as in the paper)",
        comparisons=(
            Comparison(
                "beta_ds",
                "dynamic sampling on the same beta prompt sampler",
                BETA_DS,
                (
                    ClaimPart("rollouts_total", "lower", "the allocator alone: rollouts", "ablation"),
                    ClaimPart("final_accuracy", "higher", "the allocator alone: greedy accuracy", "ablation"),
                ),
            ),
        ),
        figures=("final_accuracy", "zero_std_frac_early"),
        note="the 'sara' allocator (trainer/methods/allocation.py): a 2-rollout probe, then abandon below 0.2 / "
        "complete at 0.8 posterior probability of an effective group, 2 more rollouts in between; the prior is "
        "the beta_learnability sampler's per-prompt posterior, so the method arm also samples prompts by "
        "learnability. Judged against plain dynamic sampling, the paper's comparison; the ablation against DS on "
        "the same sampler isolates the allocator. Both arms refill to 8 informative groups in at most 4 rounds.",
    ),
    Method(
        name="thinkprior",
        paper="001:L23",
        cites="ThinkPrior (a zero-rollout Beta prior)",
        claim="ThinkPrior more than halves early silent groups and cuts wasted rollouts through step 30 by nearly a "
        "fifth; no detectable difference in final accuracy. (Uniform sampling spends 39% of rollouts on silent groups.)",
        parts=(
            ClaimPart(
                "zero_std_frac_early", "lower", "fewer silent groups early (claimed: more than halved)"
            ),
            ClaimPart(
                "wasted_rollouts_early", "lower", "fewer wasted rollouts through step 30 (claimed: -19%)"
            ),
            *SAME_ACCURACY,
        ),
        overrides=THINKPRIOR,
        prepare=ANCHOR_PASS,
        note=THINKPRIOR_NOTE,
    ),
    Method(
        name="thinkprior_with_dapo",
        paper="001:L23",
        cites="ThinkPrior (a zero-rollout Beta prior) with DAPO",
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
        prepare=ANCHOR_PASS,
        note="compared with dynamic sampling alone (both arms refill to 8 informative groups, at most 4 rounds). "
        + THINKPRIOR_NOTE,
    ),
]
