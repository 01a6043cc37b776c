"""Rows for process rewards (trainer/process/, the ``process_reward`` section): PURE's min-form credit against
sum-form, PRIME's online implicit process rewards against outcome-only GRPO, PROF's consistency filter against
blending, and the chain task's own step checker as the step scorer (the upper bound a process reward model can
reach here) against outcome-only GRPO.

Steps are the chain scratchpad's lines (the ``lines`` segmenter). The learned scorer is the tiny chain PRM
(``tiny:chain-prm``, trainer/process/tiny_prm.py, built on first use and hashed into every arm's key like the policy).
Every arm keeps the verifier's outcome reward; the process credit is added to it (the methods differ only in how).
"""

from __future__ import annotations

from collections.abc import Mapping

from benchmarks.reproduce.measures import LAST_STEPS, MEASURES, ArmResult, Measure
from benchmarks.reproduce.method import ClaimPart, Method

TINY_PRM = "tiny:chain-prm"
HIGHER_SAMPLED = ClaimPart("final_sampled_accuracy", "higher", "higher held-out accuracy (sampled)")
HIGHER_GREEDY = ClaimPart("final_accuracy", "higher", "higher held-out accuracy (greedy)")


def _mean(values: list[float]) -> float:
    finite = [v for v in values if v == v]
    return sum(finite) / len(finite) if finite else float("nan")


def step_score_last(arm: ArmResult, baseline: ArmResult) -> float:
    """The step scorer's mean step score on the training rollouts, last steps (what the policy was pushed up)."""
    return _mean(arm.series("process/score_mean", float("nan"))[-LAST_STEPS:])


def prof_kept_frac(arm: ArmResult, baseline: ArmResult) -> float:
    return _mean(arm.series("process/prof_kept_frac", float("nan")))


for _name, _text, _fn in (
    (
        "step_score_last",
        f"mean step score of the training rollouts, last {LAST_STEPS} steps",
        step_score_last,
    ),
    ("prof_kept_frac", "share of rollouts PROF kept in the loss, mean over the run", prof_kept_frac),
):
    if _name not in MEASURES:  # the harness imports this module once; a re-import must not fail
        MEASURES[_name] = Measure(_name, _text, _fn)


def _process(scorer: Mapping[str, object], **credit: object) -> dict[str, object]:
    return {"process_reward": {"segmenter": {"name": "lines"}, "scorer": scorer, **credit}}


PRM_SCORER = {"name": "prm", "params": {"model": TINY_PRM}}
FIGURES = (
    "final_reward",
    "step_score_last",
    "response_len_last",
)  # response_len_last: methods_loss_shaping.py

METHODS: list[Method] = [
    Method(
        name="pure_min_credit",
        paper="004:L263",
        cites="PURE (min-form credit assignment)",
        claim="With PRM step rewards, define value as the minimum of future step rewards instead of the "
        "gamma-discounted sum. Can be mixed with a small share (10%) of verifiable rewards. Matches verifiable-"
        "reward methods in only 30% of the steps; sum-form collapses.",
        parts=(HIGHER_SAMPLED, HIGHER_GREEDY),
        overrides=_process(PRM_SCORER, credit={"name": "min"}, weight=9.0),
        baseline_overrides=_process(PRM_SCORER, credit={"name": "sum"}, weight=9.0),
        comparison="sum-form credit from the same PRM",
        figures=FIGURES,
        note="the PRM is the tiny chain PRM (trained on oracle step labels of tiny:chain and its teacher), not a "
        "7B PRM; the process advantage has nine times the outcome's weight (the paper's 10% of verifiable rewards) "
        "in both arms, which differ only in the credit form.",
    ),
    Method(
        name="prime_implicit_prm",
        paper="004:L435",
        cites="PRIME (online implicit process rewards)",
        claim="Update the implicit PRM online from policy rollouts and outcome labels. Token-level implicit "
        "process rewards are combined with outcome rewards under any advantage function. +15.1% average over "
        "the SFT model.",
        parts=(HIGHER_SAMPLED, HIGHER_GREEDY),
        overrides=_process({"name": "implicit"}, credit={"name": "sum"}),
        figures=FIGURES,
        note="the implicit PRM starts from the policy's own weights (no SFT stage of its own) and is updated once "
        "per step on that step's outcome labels; its step score is the sigmoid of beta times the step's summed "
        "log-ratio, credited as a sum of future steps (gamma = 1), added to the GRPO outcome advantage.",
    ),
    Method(
        name="prof_filter",
        paper="004:L185",
        cites="PROF (process consistency filter)",
        claim="Keep correct responses with a high mean PRM score and incorrect responses with a low one, "
        "balancing positives and negatives, instead of blending PRM and ORM rewards. Over 4% above blending "
        "approaches.",
        parts=(HIGHER_SAMPLED, HIGHER_GREEDY),
        overrides=_process(PRM_SCORER, prof_filter={"keep_fraction": 0.5}),
        baseline_overrides=_process(PRM_SCORER, credit={"name": "mean"}),
        comparison="blending the same PRM's credit into the outcome's",
        figures=(*FIGURES, "prof_kept_frac"),
        note="the PRM is the tiny chain PRM; the blend adds its group-normalised mean-of-future-steps credit at "
        "weight 1; PROF keeps half of each group (as evenly correct/incorrect as it allows) with outcome-only "
        "advantages.",
    ),
    Method(
        name="oracle_step_credit",
        paper="ext:Lightman et al. 2023",
        cites="process supervision (Lightman et al. 2023, Let's Verify Step by Step)",
        claim="Process supervision with exact step labels ('Let's Verify Step by Step'): credit from the first "
        "wrong step beats outcome-only credit; the upper bound a learned PRM can reach on this task.",
        parts=(HIGHER_SAMPLED, HIGHER_GREEDY),
        overrides=_process({"name": "oracle_chain"}, credit={"name": "min"}),
        figures=FIGURES,
        note="the step labels are the chain_arithmetic verifier's own check of each scratchpad line (1 before the "
        "first wrong line, 0 from it on), credited min-form; the paper trains a PRM on human step labels and "
        "uses it for reranking, not as an RL reward.",
    ),
]
