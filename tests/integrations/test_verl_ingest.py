"""verl to RLVR Studio (rlvr_client/verl.py): verl's metric names map onto the stable keys, its
rollout dump (tests/data/ingest/verl/, written from verl's source) becomes rollouts grouped by prompt, and
both the ``rlvr`` tracking backend and ``rlvr import --format verl`` deliver a verl run to a live server.

verl needs Ray, vLLM and CUDA and is not installed here: the backend is driven as verl's ``Tracking`` drives
its backends (``log(data, step)`` each step, ``finish(exit_code)`` at the end), and ``install`` is tested on
a class with the shape of verl's ``Tracking`` (verl/utils/tracking.py, v0.9.1 lines 39-224)."""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from rlvr_client import jsonl_import
from rlvr_client import verl as rlvr_verl
from rlvr_client.import_cli import main as import_main
from rlvr_client.jsonl_import import ImportFileError, Metrics, Rollout
from tests.integrations.live_studio import Studio

REPO = Path(__file__).resolve().parents[2]
VERL_DATA = REPO / "tests" / "data" / "ingest" / "verl"
DUMP = VERL_DATA / "rollout_data_dir"
FILE_LOGGER = VERL_DATA / "file_logger.jsonl"


def dump_items(path: Path = DUMP, metrics: Path | None = None, **kwargs: Any) -> list[jsonl_import.Item]:
    return list(jsonl_import.items(rlvr_verl.read_dump_dir(path, metrics, **kwargs)))


def file_logger_steps() -> list[tuple[int, dict[str, Any]]]:
    lines = FILE_LOGGER.read_text(encoding="utf-8").splitlines()
    return [(int(row["step"]), row["data"]) for row in map(json.loads, lines)]


# --- metric names ------------------------------------------------------------------------------------


def test_verls_metric_names_map_onto_the_stable_keys_and_the_rest_keeps_a_verl_prefix() -> None:
    values, skipped = rlvr_verl.map_metrics(
        {
            "critic/score/mean": 0.5,
            "actor/pg_loss": -0.01,
            "actor/entropy": 0.7,
            "actor/kl_loss": 0.002,
            "actor/pg_clipfrac": 0.01,
            "actor/grad_norm": 0.3,
            "response_length/mean": 40.0,
            "response_length/clip_ratio": 0.25,
            "timing_s/step": 9.0,
            "timing_s/gen": 4.0,
            "val-core/openai/gsm8k/acc/mean@1": 0.4,
            "critic/rewards/mean": 0.5,
            "perf/throughput": 800.0,
            "timing_s/old_log_prob": 1.0,
        }
    )

    assert values == {
        "rollout/reward_mean": 0.5,
        "actor/pg_loss": -0.01,
        "actor/entropy": 0.7,
        "actor/kl": 0.002,
        "actor/clip_frac": 0.01,
        "actor/grad_norm": 0.3,
        "rollout/response_len_mean": 40.0,
        "rollout/truncated_frac": 0.25,
        "perf/step_s": 9.0,
        "perf/gen_s": 4.0,
        "eval/openai/gsm8k/acc/mean@1": 0.4,
        "verl/critic/rewards/mean": 0.5,
        "verl/perf/throughput": 800.0,
        "verl/timing_s/old_log_prob": 1.0,
    }
    assert skipped == []


def test_numpy_scalars_count_as_numbers_and_other_values_are_left_out() -> None:
    values, skipped = rlvr_verl.map_metrics(
        {
            "actor/pg_loss": np.float32(-0.25),
            "training/global_step": np.int64(3),
            "actor/entropy": float("nan"),
            "actor/kl_loss": None,
            "val/generations": [["q", "a", 1.0]],
            "note": "text",
        }
    )

    assert values == {
        "actor/pg_loss": -0.25,
        "verl/training/global_step": 3.0,
        "actor/entropy": None,
        "actor/kl": None,
    }
    assert skipped == ["val/generations", "note"]


# --- the rollout dump --------------------------------------------------------------------------------


def test_a_dumps_completions_are_grouped_by_their_prompt_whatever_their_order() -> None:
    step_one = [item for item in dump_items() if isinstance(item, Rollout) and item.step == 1]
    lines = [json.loads(line) for line in (DUMP / "1.jsonl").read_text(encoding="utf-8").splitlines()]

    slots = [(r.fields["group"], r.fields["sample_index"]) for r in step_one]
    assert slots == [(0, 0), (1, 0), (1, 1), (0, 1)]  # balance_batch left the prompts interleaved
    for rollout, line in zip(step_one, lines, strict=True):
        assert (rollout.fields["prompt"], rollout.fields["completion"]) == (line["input"], line["output"])
    assert len({r.fields["prompt_id"] for r in step_one}) == 2


def test_score_acc_and_the_extra_infos_become_reward_correct_rewards_and_details() -> None:
    overlong = next(
        item
        for item in dump_items()
        if isinstance(item, Rollout) and item.step == 2 and item.fields["rewards"].get("overlong_reward")
    )

    fields = overlong.fields
    assert (fields["reward"], fields["correct"], fields["answer"]) == (-1.0, False, "5")
    assert fields["rewards"] == {"score": -1.0, "overlong_reward": -0.5}
    assert fields["details"] == {
        "verl": {"acc": False, "pred": "", "overlong_reward": -0.5, "overlong": True}
    }
    assert (fields["finish_reason"], fields["advantage"], fields.get("token_ids")) == ("unknown", None, None)


def test_without_verls_metrics_the_steps_metrics_are_computed_from_the_dump() -> None:
    computed = {item.step: item.values for item in dump_items() if isinstance(item, Metrics)}

    assert computed[2] == {
        "rollout/accuracy": 0.75,
        "rollout/reward_mean": 0.5,
        "rollout/reward_std": pytest.approx(0.8660254),
        "rollout/zero_std_frac": 0.5,
    }
    assert sorted(computed) == [1, 2, 3]


def test_with_verls_file_logger_its_metrics_are_used_and_only_accuracy_is_computed() -> None:
    metrics = [item for item in dump_items(metrics=FILE_LOGGER) if isinstance(item, Metrics)]

    logged = {m.step: m.values for m in metrics if "(computed)" not in m.where}
    computed = {m.step: m.values for m in metrics if "(computed)" in m.where}
    assert sorted(logged) == [0, 1, 2, 3]
    assert logged[0] == {
        "eval/openai/gsm8k/acc/mean@1": 0.41,
        "verl/val-aux/openai/gsm8k/score/mean@1": -0.18,
    }
    assert logged[2]["rollout/reward_mean"] == 0.5 and logged[2]["verl/actor/ppo_kl"] == 1e-4
    assert computed[2] == {"rollout/accuracy": 0.75}


def test_a_dump_line_without_output_is_refused_naming_its_line_and_field(tmp_path: Path) -> None:
    (tmp_path / "4.jsonl").write_text(
        '{"input": "q", "output": "a", "score": 1.0, "step": 4}\n{"input": "q", "score": 0.0, "step": 4}\n',
        encoding="utf-8",
    )

    with pytest.raises(ImportFileError, match=r"4.jsonl:2: output: is required"):
        jsonl_import.scan("verl", rlvr_verl.read_dump_dir(tmp_path))


def test_a_dump_line_of_another_step_than_its_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "4.jsonl").write_text(
        '{"input": "q", "output": "a", "score": 1.0, "step": 5}\n', encoding="utf-8"
    )

    with pytest.raises(ImportFileError, match=r"4.jsonl:1: step: is 5, but the file is the dump of step 4"):
        jsonl_import.scan("verl", rlvr_verl.read_dump_dir(tmp_path))


def test_a_directory_of_step_files_is_taken_for_a_verl_dump() -> None:
    assert jsonl_import.detect_format(DUMP) == "verl"


def test_with_a_tokenizer_completions_get_tokens_and_no_logprobs(tmp_path: Path) -> None:
    from trainer.models.tiny_model import char_tokenizer

    char_tokenizer().save_pretrained(tmp_path / "tok")
    rollouts = [
        i
        for i in dump_items(retokenize=rlvr_verl.Retokenizer(str(tmp_path / "tok")))
        if isinstance(i, Rollout)
    ]

    for rollout in rollouts:
        assert "".join(rollout.fields["tokens"]) == rollout.fields["completion"]
        assert len(rollout.fields["token_ids"]) == len(rollout.fields["tokens"])
        assert "token_values" not in rollout.fields


# --- teaching verl's Tracking the name "rlvr" -----------------------------------------------------------


class RecordingBackend:
    def __init__(self) -> None:
        self.logged: list[tuple[int, dict[str, Any]]] = []
        self.closed = False

    def log(self, data: dict[str, Any], step: int) -> None:
        self.logged.append((step, data))

    def finish(self) -> None:
        self.closed = True


def tracking_class(with_finish: bool) -> Any:
    """verl's Tracking as far as install relies on it: the asserted backend list, the ``logger`` dict of
    backends built in the constructor, ``log`` fanning out, and ``finish(exit_code)`` (v0.9) or ``__del__``."""

    class Tracking:
        supported_backend: ClassVar[list[str]] = ["wandb", "console", "file"]

        def __init__(
            self,
            project_name: str,
            experiment_name: str,
            default_backend: Any = "console",
            config: Any = None,
        ) -> None:
            names = [default_backend] if isinstance(default_backend, str) else default_backend
            for backend in names:
                assert backend in self.supported_backend, f"{backend} is not supported"
            self.logger: dict[str, Any] = {}
            if "file" in names:
                self.logger["file"] = RecordingBackend()

        def log(self, data: dict[str, Any], step: int, backend: Any = None) -> None:
            for name, instance in self.logger.items():
                if backend is None or name in backend:
                    instance.log(data=data, step=step)

    if with_finish:

        def finish(self: Any, exit_code: int = 0) -> None:
            if "file" in self.logger:
                self.logger["file"].finish()

        Tracking.finish = finish  # type: ignore[attr-defined]
    return Tracking


def test_verl_importing_this_module_installs_the_backend_once_its_tracking_module_loads(
    tmp_path: Path,
) -> None:
    """VERL_USE_EXTERNAL_MODULES: verl/__init__.py imports the modules named there before its tracking module."""
    package = tmp_path / "verl"
    (package / "utils").mkdir(parents=True)
    (package / "__init__.py").write_text(
        "import importlib, os\n"
        "for name in filter(None, os.environ.get('VERL_USE_EXTERNAL_MODULES', '').split(',')):\n"
        "    importlib.import_module(name)\n",
        encoding="utf-8",
    )
    (package / "utils" / "__init__.py").write_text("", encoding="utf-8")
    (package / "utils" / "tracking.py").write_text(
        "class Tracking:\n    supported_backend = ['console']\n", encoding="utf-8"
    )
    code = (
        "import sys, verl\n"
        "assert 'verl.utils.tracking' not in sys.modules\n"
        "from verl.utils.tracking import Tracking\n"
        "print(Tracking.supported_backend, any(type(f).__name__ == '_InstallOnImport' for f in sys.meta_path))"
    )
    env = {
        "PYTHONPATH": f"{tmp_path}:{REPO}",
        "VERL_USE_EXTERNAL_MODULES": rlvr_verl.THIS_MODULE,
        "PATH": "/usr/bin:/bin",
    }
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )

    assert out.stdout.strip() == "['console', 'rlvr'] False"


# --- against a live server ---------------------------------------------------------------------------


def test_rlvr_import_of_a_verl_dump_makes_a_verl_run_with_verls_metrics(studio: Studio) -> None:
    code = import_main(
        [
            "import",
            str(DUMP),
            "--format",
            "verl",
            "--metrics",
            str(FILE_LOGGER),
            "--project",
            studio.project.slug,
            "--name",
            "dapo-qwen",
            "--experiment",
            "gsm8k",
        ]
    )

    assert code == 0
    run = studio.only_run()
    assert (run.source, run.status, run.max_steps, run.experiment.name) == ("verl", "succeeded", 3, "gsm8k")
    assert run.source_info["format"] == "verl-rollout-dump"
    assert studio.metric(run.pk, "eval/openai/gsm8k/acc/mean@1") == {
        "step": [0, 3],
        "value": [0.41, 0.47],
        "min": [0.41, 0.47],
        "max": [0.41, 0.47],
    }
    assert studio.metric(run.pk, "rollout/reward_mean")["value"] == [0.0, 0.5, 0.5]
    assert studio.metric(run.pk, "rollout/accuracy")["value"] == [0.5, 0.75, 0.75]
    assert studio.metric(run.pk, "verl/perf/throughput")["step"] == [1, 2, 3]
    for step in (1, 2, 3):
        rollouts = studio.rollouts(run.pk, step)
        assert [(r["group"], r["sample_index"]) for r in rollouts] == [(0, 0), (0, 1), (1, 0), (1, 1)]
        assert all(r["finish_reason"] == "unknown" and r["advantage"] is None for r in rollouts)
    detail = studio.get(f"/api/runs/{run.pk}/rollouts/{studio.rollouts(run.pk, 1)[0]['id']}/")
    assert detail["tokens"] == [] and detail["rewards"] == {"score": 1.0, "overlong_reward": 0.0}


def test_importing_the_same_verl_dump_twice_finds_the_same_run(studio: Studio) -> None:
    from webapp.experiments.models import MetricPoint
    from webapp.experiments.models import Rollout as RolloutRow

    args = ["import", str(DUMP), "--project", studio.project.slug]
    assert import_main(args) == 0
    rows = (MetricPoint.objects.count(), RolloutRow.objects.count())
    assert import_main(args) == 0

    assert studio.only_run() is not None and (MetricPoint.objects.count(), RolloutRow.objects.count()) == rows


def verl_config(rollout_dir: Path, steps: int) -> dict[str, Any]:
    """The parts of verl's config (ppo_trainer.yaml, as OmegaConf.to_container gives it) the backend reads."""
    return {
        "trainer": {
            "project_name": "verl_examples",
            "experiment_name": "gsm8k-dapo",
            "total_training_steps": steps,
            "rollout_data_dir": str(rollout_dir),
            "resume_mode": "auto",
            "default_local_dir": "checkpoints/verl_examples/gsm8k-dapo",
            "logger": ["console", "rlvr"],
        },
        "actor_rollout_ref": {"rollout": {"n": 2}, "actor": {"optim": {"lr": 1e-6}}},
        "algorithm": {"adv_estimator": "grpo"},
    }


def test_the_tracking_backend_sends_each_step_under_our_keys_and_the_dumped_rollouts(
    studio: Studio, tmp_path: Path
) -> None:
    rollout_dir = tmp_path / "rollout_data_dir"
    rollout_dir.mkdir()
    backend = rlvr_verl.RlvrTracking("verl_examples", "gsm8k-dapo", verl_config(rollout_dir, steps=3))
    for step, data in file_logger_steps():  # as RayPPOTrainer.fit: the step's dump is written, then logged
        if step:
            shutil.copy(DUMP / f"{step}.jsonl", rollout_dir / f"{step}.jsonl")
        backend.log(data, step)
    backend.finish(exit_code=0)

    run = studio.only_run()
    assert (run.source, run.status, run.max_steps, run.step) == ("verl", "succeeded", 3, 3)
    assert (run.experiment.name, run.config["algorithm"], run.source_info["verl_project"]) == (
        "gsm8k-dapo",
        {"adv_estimator": "grpo"},
        "verl_examples",
    )
    for key in (
        "rollout/reward_mean",
        "actor/pg_loss",
        "actor/entropy",
        "actor/kl",
        "actor/clip_frac",
        "actor/grad_norm",
        "rollout/response_len_mean",
        "perf/step_s",
        "verl/critic/rewards/mean",
    ):
        assert studio.metric(run.pk, key)["step"] == [1, 2, 3], key
    assert studio.metric(run.pk, "actor/kl")["value"] == [0.0, 0.0011, 0.0019]
    assert studio.metric(run.pk, "rollout/accuracy")["value"] == [0.5, 0.75, 0.75]  # from the dumps' acc
    assert studio.metric(run.pk, "eval/openai/gsm8k/acc/mean@1")["step"] == [0, 3]
    assert [len(studio.rollouts(run.pk, step)) for step in (1, 2, 3)] == [4, 4, 4]


def test_a_backend_started_again_with_the_same_names_continues_the_same_run(
    studio: Studio, tmp_path: Path
) -> None:
    config = verl_config(tmp_path / "no-dump", steps=3)
    steps = file_logger_steps()
    first = rlvr_verl.RlvrTracking("verl_examples", "gsm8k-dapo", config)
    first.log(steps[1][1], 1)
    first.run.close()  # the job is killed: no finish, and no exit handlers either
    atexit.unregister(first._at_exit)
    second = rlvr_verl.RlvrTracking(
        "verl_examples", "gsm8k-dapo", config
    )  # resume_mode auto, same checkpoints
    for step, data in steps[2:]:
        second.log(data, step)
    second.finish()

    run = studio.only_run()
    assert run.status == "succeeded" and studio.metric(run.pk, "actor/pg_loss")["step"] == [1, 2, 3]


def test_a_resumed_job_leaves_the_dumps_of_the_steps_before_its_checkpoint_alone(
    studio: Studio, tmp_path: Path
) -> None:
    rollout_dir = tmp_path / "rollout_data_dir"
    shutil.copytree(
        DUMP, rollout_dir
    )  # steps 1-3 dumped by the job before; it resumes from step 2's checkpoint
    backend = rlvr_verl.RlvrTracking("verl_examples", "resumed", verl_config(rollout_dir, steps=3))
    for step, data in file_logger_steps()[3:]:
        backend.log(data, step)
    backend.finish()

    run = studio.only_run()
    assert [len(studio.rollouts(run.pk, step)) for step in (1, 2, 3)] == [0, 4, 4]


def test_a_step_of_more_rollouts_than_a_batch_holds_arrives_whole(studio: Studio, tmp_path: Path) -> None:
    rollout_dir = tmp_path / "rollout_data_dir"
    rollout_dir.mkdir()
    lines = [
        json.dumps(
            {"input": f"prompt {g}", "output": f"answer {i}", "gts": "1", "score": float(i == 0), "step": 1}
        )
        for g in range(260)
        for i in range(5)
    ]  # train_batch_size 260, rollout.n 5: over the 1,024 of a batch
    (rollout_dir / "1.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    backend = rlvr_verl.RlvrTracking("verl_examples", "big-step", verl_config(rollout_dir, steps=1))
    backend.log(file_logger_steps()[1][1], 1)
    backend.finish()

    run = studio.only_run()
    assert studio.get(f"/api/runs/{run.pk}/rollouts/", step=1)["count"] == 1300 and run.status == "succeeded"


def test_a_verl_run_that_stops_before_its_last_step_is_marked_failed(studio: Studio, tmp_path: Path) -> None:
    backend = rlvr_verl.RlvrTracking("verl_examples", "short", verl_config(tmp_path / "none", steps=3))
    backend.log(file_logger_steps()[1][1], 1)
    backend.finish()  # verl before 0.9 deletes its Tracking, crash or not: no exit code

    run = studio.only_run()
    assert run.status == "failed" and "stopped at step 1 of 3" in run.error_message


def test_verls_nonzero_exit_code_marks_the_run_failed(studio: Studio, tmp_path: Path) -> None:
    backend = rlvr_verl.RlvrTracking("verl_examples", "crashed", verl_config(tmp_path / "none", steps=1))
    backend.log(file_logger_steps()[1][1], 1)
    backend.finish(exit_code=1)

    run = studio.only_run()
    assert run.status == "failed" and "exit code 1" in run.error_message


def test_install_makes_rlvr_a_backend_of_verls_tracking_that_hears_log_and_finish(
    studio: Studio, tmp_path: Path
) -> None:
    tracking_cls: Any = rlvr_verl.install(tracking_class(with_finish=True))
    assert tracking_cls.supported_backend.count("rlvr") == 1
    again: Any = rlvr_verl.install(tracking_cls)
    assert (
        again is tracking_cls and again.supported_backend.count("rlvr") == 1
    )  # a second install changes nothing

    tracking = tracking_cls(
        "verl_examples", "installed", ["file", "rlvr"], verl_config(tmp_path / "none", steps=2)
    )
    tracking.log(file_logger_steps()[1][1], step=1)
    tracking.finish(exit_code=1)

    run = studio.only_run()
    assert (run.status, run.experiment.name) == ("failed", "installed")
    assert studio.metric(run.pk, "rollout/reward_mean")["step"] == [1]
    assert tracking.logger["file"].closed and tracking.logger["file"].logged[0][0] == 1


def test_on_verl_before_0_9_the_backend_is_closed_when_tracking_is_deleted(
    studio: Studio, tmp_path: Path
) -> None:
    tracking_cls: Any = rlvr_verl.install(tracking_class(with_finish=False))

    tracking = tracking_cls("verl_examples", "old-verl", "rlvr", verl_config(tmp_path / "none", steps=1))
    tracking.log(file_logger_steps()[1][1], step=1)
    del tracking

    assert studio.only_run().status == "succeeded"
