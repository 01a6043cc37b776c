"""The paper-style table (newest finished evaluation per model, best per column), Pass@k curves and
metrics over training steps."""

from __future__ import annotations

from django.utils import timezone

from webapp.benchmarks.models import Benchmark, EvalRun
from webapp.benchmarks.selectors_tables import metrics_over_steps, pass_at_k_curves, results_table
from webapp.experiments.models import Checkpoint, Experiment, MetricPoint, Run


def finished(
    benchmark: Benchmark,
    experiment: Experiment,
    metrics: dict[str, float],
    *,
    run: Run | None = None,
    step: int | None = None,
    status: str = "succeeded",
) -> EvalRun:
    kind = "checkpoint" if run else "base"
    label = f"{experiment.name} (base)" if run is None else f"{experiment.name} run #{run.pk} step {step}"
    return EvalRun.objects.create(
        benchmark=benchmark,
        target_kind=kind,
        experiment=experiment,
        run=run,
        step=step,
        model_path="m",
        label=label,
        config=benchmark.config,
        status=status,
        metrics=metrics,
        ci={k: [v - 0.1, v + 0.1] for k, v in metrics.items()},
        finished_at=timezone.now(),
    )


def test_the_best_value_per_column_is_marked_and_lengths_are_not(
    benchmark: Benchmark, experiment: Experiment, run: Run
) -> None:
    finished(benchmark, experiment, {"pass@1 (n=4)": 0.2, "response_len_mean": 9.0})
    finished(benchmark, experiment, {"pass@1 (n=4)": 0.6, "response_len_mean": 3.0}, run=run, step=5)
    table = results_table(eval_runs=EvalRun.objects.all())
    assert table["columns"] == [
        {"benchmark": "addition", "metric": "pass@1 (n=4)"},
        {"benchmark": "addition", "metric": "response_len_mean"},
    ]
    base, ckpt = table["rows"]
    assert base["kind"] == "base" and ckpt["step"] == 5
    assert (
        ckpt["cells"]["addition\tpass@1 (n=4)"]["best"]
        and not base["cells"]["addition\tpass@1 (n=4)"]["best"]
    )
    assert not any(r["cells"]["addition\tresponse_len_mean"]["best"] for r in table["rows"])
    assert base["cells"]["addition\tpass@1 (n=4)"]["ci"] == [0.1, 0.30000000000000004]


def test_the_newest_succeeded_evaluation_of_a_model_wins_and_failures_are_left_out(
    benchmark: Benchmark, experiment: Experiment
) -> None:
    finished(benchmark, experiment, {"avg@4": 0.1})
    finished(benchmark, experiment, {"avg@4": 0.3})
    finished(benchmark, experiment, {"avg@4": 0.9}, status="failed")
    table = results_table(eval_runs=EvalRun.objects.all())
    assert len(table["rows"]) == 1 and table["rows"][0]["cells"]["addition\tavg@4"]["value"] == 0.3


def test_columns_come_in_the_papers_order(benchmark: Benchmark, experiment: Experiment) -> None:
    finished(
        benchmark,
        experiment,
        {"truncated": 0.0, "maj@4": 0.3, "pass@4 (n=4)": 0.7, "pass@1 (n=4)": 0.2, "avg@4": 0.2},
    )
    table = results_table(eval_runs=EvalRun.objects.all())
    assert [c["metric"] for c in table["columns"]] == [
        "avg@4",
        "pass@1 (n=4)",
        "pass@4 (n=4)",
        "maj@4",
        "truncated",
    ]


def test_pass_at_k_curves_are_sorted_by_k(benchmark: Benchmark, experiment: Experiment) -> None:
    finished(
        benchmark, experiment, {"pass@4 (n=4)": 0.7, "pass@1 (n=4)": 0.25, "pass@2 (n=4)": 0.5, "maj@4": 0.3}
    )
    (curve,) = pass_at_k_curves(eval_runs=EvalRun.objects.all())
    assert (curve["k"], curve["value"]) == ([1, 2, 4], [0.25, 0.5, 0.7])


def test_checkpoints_plot_over_steps_from_the_base_model_with_training_eval_metrics(
    benchmark: Benchmark, experiment: Experiment, run: Run
) -> None:
    finished(benchmark, experiment, {"avg@4": 0.1})
    finished(benchmark, experiment, {"avg@4": 0.5}, run=run, step=10)
    finished(benchmark, experiment, {"avg@4": 0.3}, run=run, step=5)
    MetricPoint.objects.create(run=run, step=4, key="eval/addition/avg@4", value=0.25)
    Checkpoint.objects.create(run=run, step=5, path="/x")
    series = {s["name"]: s for s in metrics_over_steps(benchmark=benchmark, eval_runs=EvalRun.objects.all())}
    assert (series[f"run #{run.pk}"]["step"], series[f"run #{run.pk}"]["value"]) == (
        [0, 5, 10],
        [0.1, 0.3, 0.5],
    )
    assert series[f"run #{run.pk} (training)"]["value"] == [0.25]


def test_a_base_model_shared_by_two_experiments_is_one_row_naming_both(
    benchmark: Benchmark, experiment: Experiment, run: Run
) -> None:
    other = Experiment.objects.create(project=experiment.project, name="second", config=experiment.config)
    finished(benchmark, experiment, {"avg@4": 0.2})
    finished(benchmark, other, {"avg@4": 0.25})  # the same weights ("m"), evaluated again: the newest counts
    finished(benchmark, experiment, {"avg@4": 0.6}, run=run, step=5)
    table = results_table(eval_runs=EvalRun.objects.all())
    base, ckpt = table["rows"]
    assert (base["kind"], base["label"], base["experiments"]) == ("base", "m (base)", ["addition", "second"])
    assert base["cells"]["addition\tavg@4"]["value"] == 0.25
    assert ckpt["kind"] == "checkpoint" and ckpt["experiments"] == []


def test_a_base_model_of_one_experiment_keeps_the_evaluation_label(
    benchmark: Benchmark, experiment: Experiment
) -> None:
    finished(benchmark, experiment, {"avg@4": 0.2})
    (row,) = results_table(eval_runs=EvalRun.objects.all())["rows"]
    assert (row["label"], row["experiments"]) == ("addition (base)", ["addition"])
