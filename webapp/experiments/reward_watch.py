"""The run page's "Learned reward vs verifier" panel: what a run's reward-hacking watch compares, and whether it fired.

A run trained on a learned or judged reward with a weight-0 monitor verifier (``reward_watch``,
trainer/config/reward_watch.py) reports both as ``reward/<key>_mean`` and ``watch/hacking`` (0, then 1 from the step
the watch fired; trainer/rewards/hacking.py), plus a ``reward_hacking`` warning event with the figures. The panel
plots the two rewards with ``actor/kl`` and ``actor/entropy`` (static/js/reward_watch.js keeps it live); this module
gives it the keys from the run's config and the flag from the stored metrics and events. Torch-free.
"""

from __future__ import annotations

from typing import Any, TypedDict

from pydantic import ValidationError

from trainer.config.reward_watch import RewardWatchConfig, WatchedKeys, resolve_watch
from trainer.rewards.hacking import HACKING_METRIC, WARNING_KIND
from webapp.experiments.models import MetricPoint, Run, RunEvent

CONTEXT_METRICS = ("actor/kl", "actor/entropy")  # how far the policy moved, and how sure it became


class WatchFlag(TypedDict):
    step: int
    message: str  # the warning event's text ("" when the event is gone): rendered escaped


class RewardWatchView(TypedDict):
    learned_metric: str  # reward/<learned>_mean
    verifier_metric: str  # reward/<monitor>_mean
    context_metrics: list[str]
    flag_metric: str  # watch/hacking
    window: int
    min_rise: float
    min_fall: float
    flag: WatchFlag | None


def watched_keys(config: Any) -> tuple[WatchedKeys, RewardWatchConfig] | None:
    """The keys a stored run config watches, or None: no watch, or a config this version cannot read (an outside
    run's, an older one's)."""
    if not isinstance(config, dict):
        return None
    verifiers = config.get("verifiers")
    algorithm = config.get("algorithm")
    algorithm = algorithm if isinstance(algorithm, dict) else {}
    if not isinstance(verifiers, list) or not all(isinstance(v, dict) for v in verifiers):
        return None
    sources = [(str(v.get("name", "")), str(v.get("label") or v.get("name", ""))) for v in verifiers]
    weights = algorithm.get("reward_weights") or [1.0] * len(sources)
    try:
        watch = RewardWatchConfig.model_validate(config.get("reward_watch") or {})
        keys = resolve_watch(watch, sources, [float(w) for w in weights])
    except (ValidationError, ValueError, TypeError):
        return None
    return None if keys is None else (keys, watch)


def run_reward_watch(*, run: Run) -> RewardWatchView | None:
    """The panel's view of ``run``, or None when the run has no watch. Reads only the first raised ``watch/hacking``
    point (the run/key index) and the newest ``reward_hacking`` event."""
    resolved = watched_keys(run.config)
    if resolved is None:
        return None
    keys, watch = resolved
    raised = (
        MetricPoint.objects.filter(run=run, key=HACKING_METRIC, value__gte=0.5)
        .order_by("step")
        .values_list("step", flat=True)
        .first()
    )
    flag: WatchFlag | None = None
    if raised is not None:
        event = RunEvent.objects.filter(run=run, kind=WARNING_KIND).order_by("-id").first()
        flag = WatchFlag(step=raised, message=event.message if event is not None else "")
    return RewardWatchView(
        learned_metric=keys.learned_metric,
        verifier_metric=keys.verifier_metric,
        context_metrics=list(CONTEXT_METRICS),
        flag_metric=HACKING_METRIC,
        window=watch.window,
        min_rise=watch.min_rise,
        min_fall=watch.min_fall,
        flag=flag,
    )
