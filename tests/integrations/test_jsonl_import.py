"""``rlvr import``: the RLVR ingest file and ``rlvr train``'s run directory are checked line by line (an error
names the file, the line and the field, before anything is sent), and sent to a live server as one run,
the same one however often the same files are imported."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rlvr_client import jsonl_import
from rlvr_client.import_cli import main as import_main
from rlvr_client.jsonl_import import ImportFileError, Limits, Metrics, Rollout
from tests.integrations.live_studio import Studio

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "ingest"
EXAMPLE = DATA / "example.jsonl"
TRAINER_RUN = DATA / "trainer_run"
RUN_LINE = '{"type": "run", "version": 1, "name": "t"}'


def scan_file(path: Path, limits: Limits | None = None) -> jsonl_import.ImportPlan:
    return jsonl_import.scan("rlvr", jsonl_import.read_ingest_file(path), limits)


def write_lines(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def rollout_line(step: int = 1, **fields: Any) -> str:
    return json.dumps(
        {
            "type": "rollout",
            "step": step,
            "group": 0,
            "sample_index": 0,
            "prompt": "2+2=",
            "completion": "4",
            **fields,
        }
    )


# --- reading and checking ----------------------------------------------------------------------------


def test_the_example_file_reads_as_one_run_with_its_items_and_outcome() -> None:
    plan = scan_file(EXAMPLE)

    assert (plan.header.name, plan.header.experiment, plan.header.source, plan.max_steps) == (
        "grpo-qwen-0.5b",
        "gsm8k-grpo",
        "script",
        2,
    )
    assert plan.header.config["algorithm"] == {"name": "grpo", "beta": 0.0}
    assert (plan.metric_lines, plan.rollouts, plan.tokens, plan.checkpoints) == (2, 4, 13, 1)
    assert plan.finish is not None and plan.finish.status == "succeeded"
    assert plan.finish.final_metrics == {"eval/gsm8k/accuracy": 0.38}


BAD_FILES = [
    ("no_run_line.jsonl", 1, "type", "the first line must be the run line"),
    ("broken_json.jsonl", 3, "", "not valid JSON"),
    ("reward_not_a_number.jsonl", 2, "reward", "must be a number or null, got str 'high'"),
    ("token_values_too_short.jsonl", 2, "token_values.logprob", "1 values for 2 tokens"),
    ("same_slot_twice.jsonl", 3, "sample_index", "already taken by"),
    ("newer_version.jsonl", 1, "version", "reads version 1 only"),
    ("unknown_field.jsonl", 2, "epoch", "unknown field in a metrics line"),
    ("line_after_finish.jsonl", 3, "type", "comes after the finish line"),
    ("negative_step.jsonl", 2, "step", "must be an integer from 0"),
]


@pytest.mark.parametrize(("name", "line", "field", "problem"), BAD_FILES, ids=[b[0] for b in BAD_FILES])
def test_a_bad_line_is_refused_naming_its_file_line_and_field(
    name: str, line: int, field: str, problem: str
) -> None:
    path = DATA / "bad" / name
    with pytest.raises(ImportFileError) as caught:
        scan_file(path)

    assert caught.value.where == f"{path}:{line}"
    assert caught.value.field == field
    assert problem in str(caught.value)
    assert str(caught.value).startswith(f"{path}:{line}: ")


def test_a_line_longer_than_the_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "long.jsonl", RUN_LINE, rollout_line(completion="x" * 500))

    with pytest.raises(ImportFileError, match=r"long.jsonl:2: the line is longer than 200 bytes"):
        scan_file(path, Limits(line_bytes=200))


def test_more_lines_than_the_limit_are_refused(tmp_path: Path) -> None:
    metrics = [json.dumps({"type": "metrics", "step": s, "metrics": {"a/b": 1}}) for s in range(1, 6)]
    path = write_lines(tmp_path / "many.jsonl", RUN_LINE, *metrics)

    with pytest.raises(ImportFileError, match=r"many.jsonl:5: more than 4 lines"):
        scan_file(path, Limits(lines=4))


def test_a_rollout_with_more_tokens_than_the_limit_is_refused(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "tokens.jsonl", RUN_LINE, rollout_line(token_ids=list(range(9)), tokens=["a"] * 9)
    )

    with pytest.raises(
        ImportFileError, match=r"tokens.jsonl:2: token_ids: has 9 tokens; at most 8 per rollout"
    ):
        scan_file(path, Limits(tokens=8))


def test_a_token_that_is_not_a_string_is_named_by_its_index(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "t.jsonl", RUN_LINE, rollout_line(token_ids=[1, 2, 3], tokens=["a", 7, "c"])
    )

    with pytest.raises(ImportFileError) as caught:
        scan_file(path)
    assert caught.value.field == "tokens[1]"


def test_a_rollout_needs_its_completion_and_its_slot(tmp_path: Path) -> None:
    no_text = write_lines(
        tmp_path / "a.jsonl", RUN_LINE, '{"type": "rollout", "step": 1, "group": 0, "sample_index": 0}'
    )
    no_slot = write_lines(
        tmp_path / "b.jsonl", RUN_LINE, '{"type": "rollout", "step": 1, "group": 0, "completion": "4"}'
    )

    with pytest.raises(ImportFileError, match=r"a.jsonl:2: completion: is required"):
        scan_file(no_text)
    with pytest.raises(ImportFileError, match=r"b.jsonl:2: sample_index: is required"):
        scan_file(no_slot)


def test_nan_and_infinity_are_read_as_not_recorded(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "nan.jsonl",
        RUN_LINE,
        '{"type": "metrics", "step": 1, "metrics": {"a/x": NaN, "a/y": Infinity}}',
        rollout_line(reward=float("nan"), token_ids=[1], tokens=["4"], token_values={"logprob": [None]}),
    )
    items = list(jsonl_import.items(jsonl_import.read_ingest_file(path)))

    metrics, rollout = items
    assert isinstance(metrics, Metrics) and metrics.values == {"a/x": None, "a/y": None}
    assert isinstance(rollout, Rollout) and rollout.fields["reward"] is None
    assert rollout.fields["token_values"] == {"logprob": [None]}


def test_a_rollout_without_a_prompt_id_gets_one_from_its_prompt_text(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "ids.jsonl",
        RUN_LINE,
        rollout_line(step=1),
        rollout_line(step=2, prompt="3+3="),
        rollout_line(step=3),
    )
    ids = [
        item.fields["prompt_id"]
        for item in jsonl_import.items(jsonl_import.read_ingest_file(path))
        if isinstance(item, Rollout)
    ]

    assert ids[0] == ids[2] != ids[1]


def test_the_run_directory_of_rlvr_train_reads_with_its_checkpoint_and_outcome() -> None:
    plan = jsonl_import.scan("trainer", jsonl_import.read_trainer_dir(TRAINER_RUN))

    assert (plan.metric_lines, plan.rollouts, plan.checkpoints, plan.first_step, plan.last_step) == (
        2,
        8,
        1,
        1,
        2,
    )
    assert plan.finish is not None and plan.finish.status == "succeeded"
    assert jsonl_import.detect_format(TRAINER_RUN) == "trainer"


def test_an_error_event_of_rlvr_train_makes_the_run_failed_with_its_message(tmp_path: Path) -> None:
    run_dir = tmp_path / "crashed"
    shutil.copytree(TRAINER_RUN, run_dir)
    write_lines(
        run_dir / "events.jsonl",
        '{"step": 0, "event": "start", "time": 1.0}',
        '{"step": 1000000000000, "event": "error", "message": "TrainingDiverged at step 2"}',
    )
    plan = jsonl_import.scan("trainer", jsonl_import.read_trainer_dir(run_dir))

    assert plan.finish is not None
    assert (plan.finish.status, plan.finish.error_message) == ("failed", "TrainingDiverged at step 2")


def test_the_key_follows_the_content_and_the_project_not_the_file_name(tmp_path: Path) -> None:
    copy = tmp_path / "renamed.jsonl"
    shutil.copy(EXAMPLE, copy)
    edited = tmp_path / "edited.jsonl"
    edited.write_text(EXAMPLE.read_text(encoding="utf-8").replace("12.5", "12.6"), encoding="utf-8")

    key = scan_file(EXAMPLE).key("lab")
    assert scan_file(copy).key("lab") == key
    assert scan_file(edited).key("lab") != key
    assert scan_file(EXAMPLE).key("other-lab") != key
    assert key.startswith("import-") and len(key) <= 128


def test_the_limits_agree_with_the_servers() -> None:
    from webapp.ingest import schema

    assert jsonl_import.MAX_STEP == schema.MAX_STEP
    assert jsonl_import.MAX_METRIC_KEYS == schema.MAX_METRIC_KEYS
    assert jsonl_import.MAX_TEXT == schema.MAX_TEXT
    assert Limits().tokens == schema.MAX_TOKENS


def test_rlvr_import_loads_neither_django_nor_torch() -> None:
    code = (
        "import sys, webapp.cli\n"
        f"code = webapp.cli._layer('import')(['import', {str(EXAMPLE)!r}, '--project', 'lab', '--check'])\n"
        "heavy = sorted(m for m in ('django', 'torch', 'transformers', 'celery') if m in sys.modules)\n"
        "print(code, ','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "0"


def test_check_says_what_would_be_sent_and_sends_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        import_main(["import", str(EXAMPLE), "--project", "lab", "--check", "--url", "http://127.0.0.1:9"])
        == 0
    )

    out = capsys.readouterr().out
    assert "steps 1..2: 2 metric lines (10 values), 4 rollouts (13 tokens), 1 checkpoints" in out
    assert "nothing sent" in out


def test_a_bad_file_ends_the_command_with_its_line_named(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "bad" / "reward_not_a_number.jsonl"

    assert import_main(["import", str(path), "--project", "lab", "--check"]) == 2
    assert f"error: {path}:2: reward: must be a number or null" in capsys.readouterr().err


# --- against a live server ---------------------------------------------------------------------------


def test_importing_the_example_file_makes_a_run_with_its_metrics_rollouts_and_checkpoint(
    studio: Studio, capsys: pytest.CaptureFixture[str]
) -> None:
    assert studio.import_(str(EXAMPLE)) == 0

    (run,) = studio.runs()
    assert (run.source, run.status, run.max_steps, run.step) == ("script", "succeeded", 2, 2)
    assert run.experiment.name == "gsm8k-grpo" and run.config["num_generations"] == 2
    assert run.source_info["library"] == "my-trainer"
    assert f"{studio.url}/runs/{run.pk}/" in capsys.readouterr().out
    assert studio.metric(run.pk, "rollout/reward_mean")["value"] == [0.5, 1.0]
    assert studio.metric(run.pk, "actor/kl")["value"] == [None, 0.0012]
    assert [c["step"] for c in studio.get(f"/api/runs/{run.pk}/checkpoints/")] == [2]
    first, _, third = studio.rollouts(run.pk, 1)
    assert (first["reward"], first["correct"], first["prompt_id"], first["answer"]) == (
        1.0,
        True,
        "gsm8k-17",
        "42",
    )
    assert (third["reward"], third["correct"]) == (None, None)
    detail = studio.rollout_detail(run.pk, first["id"])
    assert detail["tokens"][:4] == [" ", "6", "*", "7"] and detail["token_ids"][9] == 820
    assert detail["channels"]["logprob"][5] == pytest.approx(-1.3)
    assert detail["channels"]["advantage"] == [pytest.approx(0.71)] * 13
    assert detail["channels"]["entropy"] in (None, [None] * 13)  # not sent: not recorded, never zeros
    assert len(studio.rollouts(run.pk, 2)) == 1


def test_importing_the_same_file_twice_finds_the_same_run_and_adds_no_rows(studio: Studio) -> None:
    from webapp.experiments.models import Checkpoint, MetricPoint
    from webapp.experiments.models import Rollout as RolloutRow

    assert studio.import_(str(EXAMPLE)) == 0
    counts = (MetricPoint.objects.count(), RolloutRow.objects.count(), Checkpoint.objects.count())
    assert studio.import_(str(EXAMPLE), "--name", "a second name") == 0

    assert len(studio.runs()) == 1
    assert (MetricPoint.objects.count(), RolloutRow.objects.count(), Checkpoint.objects.count()) == counts
    assert counts[1] == 4


def test_a_run_directory_of_rlvr_train_arrives_with_its_token_arrays(studio: Studio) -> None:
    assert studio.import_(str(TRAINER_RUN), "--name", "addition-grpo", "--experiment", "addition") == 0

    (run,) = studio.runs()
    assert (run.source, run.status, run.experiment.name, run.max_steps) == (
        "import",
        "succeeded",
        "addition",
        2,
    )
    assert studio.metric(run.pk, "actor/kl")["value"] == [None, None]  # JsonlSink wrote NaN
    rollouts = studio.rollouts(run.pk, 2)
    assert [(r["group"], r["sample_index"], r["correct"]) for r in rollouts] == [
        (0, 0, True),
        (0, 1, False),
        (1, 0, True),
        (1, 1, True),
    ]
    detail = studio.rollout_detail(run.pk, rollouts[0]["id"])
    assert "".join(detail["tokens"]) == "#### 7" and detail["finish_reason"] == "eos"
    assert detail["channels"]["logprob"][:2] == [pytest.approx(-0.1), pytest.approx(-0.2)]


def test_a_file_without_a_finish_line_takes_the_status_option(studio: Studio, tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "partial.jsonl", RUN_LINE, '{"type": "metrics", "step": 1, "metrics": {"a/b": 1}}'
    )

    assert studio.import_(str(path), "--status", "cancelled") == 0
    (run,) = studio.runs()
    assert (run.status, run.experiment.name) == ("cancelled", "t")


def test_metrics_lines_of_one_step_add_up_and_a_name_given_twice_keeps_the_later_value(
    studio: Studio, tmp_path: Path
) -> None:
    path = write_lines(
        tmp_path / "twice.jsonl",
        RUN_LINE,
        '{"type": "metrics", "step": 1, "metrics": {"a/x": 1, "a/y": 2}}',
        '{"type": "metrics", "step": 1, "metrics": {"a/x": 3, "eval/b/acc": 0.5}}',
    )

    assert studio.import_(str(path)) == 0
    (run,) = studio.runs()
    assert [studio.metric(run.pk, key)["value"] for key in ("a/x", "a/y", "eval/b/acc")] == [
        [3.0],
        [2.0],
        [0.5],
    ]


def test_an_unreachable_server_stops_the_import_and_the_same_command_completes_it_later(
    studio: Studio, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RLVR_URL", "http://127.0.0.1:9")  # nothing listens there

    assert studio.import_(str(EXAMPLE)) == 1
    assert "cannot reach http://127.0.0.1:9: run the same command again" in capsys.readouterr().err
    assert studio.runs() == []

    monkeypatch.setenv("RLVR_URL", studio.url)
    assert studio.import_(str(EXAMPLE)) == 0
    (run,) = studio.runs()
    assert run.status == "succeeded" and len(studio.rollouts(run.pk, 1)) == 3
