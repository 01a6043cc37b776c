"""run_headlines (webapp/experiments/headline.py): a run's greedy accuracy on held-out problems, before
training and now, from its config (what it will measure) and its stored points."""

from __future__ import annotations

from webapp.experiments.headline import run_headlines
from webapp.experiments.models import Run
from webapp.experiments.services import run_record_step

KEY = "eval/chain_arithmetic/accuracy (greedy)"
DEMO_EVALUATION = {
    "benchmarks": ["builtin:chain_arithmetic"],
    "eval_at_start": True,
    "eval_every": 50,
    "eval_at_end": True,
}


def evaluating(run: Run, evaluation: dict[str, object]) -> Run:
    run.config = {**run.config, "evaluation": evaluation}
    run.save(update_fields=["config"])
    return run


def test_a_run_that_will_evaluate_greedily_says_on_how_many_problems_and_when(run: Run) -> None:
    (headline,) = run_headlines(run=evaluating(run, DEMO_EVALUATION))
    assert (headline["key"], headline["problems"], headline["first"]) == (KEY, 500, None)
    assert headline["summary"] == "not measured yet (before training, every 50 steps and at the end)"


def test_the_headline_is_the_first_and_the_latest_evaluation(run: Run) -> None:
    evaluating(run, {**DEMO_EVALUATION, "max_problems": 200})
    for step, value in ((0, 0.086), (50, 0.2), (100, 0.268)):
        run_record_step(
            run_id=run.pk,
            step=step,
            max_steps=200,
            metrics={KEY: value, "rollout/accuracy": 0.5},
            rollouts=[],
        )
    (headline,) = run_headlines(run=run)
    assert headline["problems"] == 200
    assert (headline["first"], headline["last"]) == (
        {"step": 0, "value": 0.086},
        {"step": 100, "value": 0.268},
    )
    assert headline["summary"] == "0.086 → 0.268 (step 0 → 100)"


def test_sampled_benchmarks_and_configs_the_web_side_cannot_read_make_no_headline(run: Run) -> None:
    assert run_headlines(run=run) == []  # no evaluation section
    assert run_headlines(run=evaluating(run, {"eval_every": 5, "benchmarks": ["builtin:addition"]})) == []
    assert (
        run_headlines(run=evaluating(run, {"eval_every": 5, "benchmarks": ["builtin:nope", {"name": 3}, 7]}))
        == []
    )


def test_the_stack_progress_line_shows_greedy_accuracy_before_training_and_now(run: Run) -> None:
    from webapp.stack import progress_line

    evaluating(run, DEMO_EVALUATION)
    run_record_step(run_id=run.pk, step=0, max_steps=200, metrics={KEY: 0.102}, rollouts=[])
    assert progress_line(run.pk)[0].endswith("  greedy 0.102")
    run_record_step(
        run_id=run.pk, step=50, max_steps=200, metrics={KEY: 0.23, "rollout/accuracy": 0.19}, rollouts=[]
    )
    assert progress_line(run.pk)[0].endswith("acc 0.190  greedy 0.102->0.230")
