"""run_reward_watch (webapp/experiments/reward_watch.py): the keys a run's reward-hacking watch compares, from its
config, and the step its flag fired, from the stored metrics and the warning event."""

from __future__ import annotations

from typing import Any

from webapp.experiments.models import Run
from webapp.experiments.reward_watch import run_reward_watch
from webapp.experiments.services import run_log_event, run_record_step

WATCHED = {
    "verifiers": [{"name": "regex_format", "label": "rm", "params": {"pattern": "[0-9]"}}, {"name": "chain_arithmetic"}],
    "algorithm": {"reward_weights": [1.0, 0.0]},
    "reward_watch": {"learned": "rm", "window": 4},
}  # fmt: skip
MESSAGE = (
    "Reward hacking suspected at step 3: reward/rm_mean rose +0.20 over steps 1-3 while the verifier's accuracy "
    "(reward/chain_arithmetic_mean) fell -0.10"
)


def configured(run: Run, config: Any) -> Run:
    run.config = config if not isinstance(config, dict) else {**run.config, **config}
    run.save(update_fields=["config"])
    return run


def test_a_watched_run_names_its_learned_reward_and_its_verifier(run: Run) -> None:
    view = run_reward_watch(run=configured(run, WATCHED))
    assert view is not None
    assert (view["learned_metric"], view["verifier_metric"]) == (
        "reward/rm_mean",
        "reward/chain_arithmetic_mean",
    )
    assert view["context_metrics"] == ["actor/kl", "actor/entropy"]
    assert (view["window"], view["min_rise"], view["min_fall"], view["flag"]) == (4, 0.05, 0.03, None)


def test_the_flag_is_the_first_step_watch_hacking_reads_one_with_the_warning(run: Run) -> None:
    configured(run, WATCHED)
    for step, raised in ((1, 0.0), (2, 0.0), (3, 1.0), (4, 1.0)):
        run_record_step(
            run_id=run.pk, step=step, max_steps=10, metrics={"watch/hacking": raised}, rollouts=[]
        )
    run_log_event(run_id=run.pk, level="warning", kind="reward_hacking", step=3, message=MESSAGE)
    view = run_reward_watch(run=run)
    assert view is not None and view["flag"] == {"step": 3, "message": MESSAGE}


def test_a_flag_whose_event_is_gone_still_shows_its_step(run: Run) -> None:
    configured(run, WATCHED)
    run_record_step(run_id=run.pk, step=7, max_steps=10, metrics={"watch/hacking": 1.0}, rollouts=[])
    view = run_reward_watch(run=run)
    assert view is not None and view["flag"] == {"step": 7, "message": ""}


def test_runs_without_a_watch_or_with_configs_it_cannot_read_have_no_panel(run: Run) -> None:
    assert run_reward_watch(run=run) is None  # one programmatic verifier, no learned source
    assert run_reward_watch(run=configured(run, {**WATCHED, "reward_watch": {"enabled": False}})) is None
    assert run_reward_watch(run=configured(run, {**WATCHED, "reward_watch": {"learned": "nope"}})) is None
    assert run_reward_watch(run=configured(run, {**WATCHED, "verifiers": "exact"})) is None
    assert (
        run_reward_watch(run=configured(run, {**WATCHED, "algorithm": {"reward_weights": ["x", 0]}})) is None
    )
    assert run_reward_watch(run=configured(run, ["not", "a", "dict"])) is None
