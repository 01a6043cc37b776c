"""Training goes on while the code verifier runs hostile code: every test case of the data file is an escape
attempt (fork bomb, infinite loop, 10 GB allocation, socket connect, reading the settings file and the
environment), run in the sandbox after each completion's program. The run finishes all its steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.trainer.loop_helpers import Steps, tiny_config
from trainer.step.loop import train

SETTINGS = Path(__file__).resolve().parents[3] / "webapp" / "settings.py"
HOSTILE = [
    "import os\nwhile True:\n    os.fork()",
    "while True:\n    pass",
    "x = bytearray(10 * 1024 ** 3)",
    "import socket\nsocket.create_connection(('127.0.0.1', 5432), timeout=1)",
    f"print(open({str(SETTINGS)!r}).read())",
    "import os\nprint(os.environ['RLVR_SECRET_KEY'])",
]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_short_training_run_finishes_while_hostile_tests_fail_in_the_sandbox(
    warm_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RLVR_SECRET_KEY", "must-not-leak")
    rows = [
        {"prompt": f"{a}+{a}=", "answer": str(2 * a), "tests": [{"assert": h} for h in HOSTILE]}
        for a in range(10, 14)
    ]
    data = tmp_path / "hostile.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = tiny_config(
        warm_model_dir, tmp_path / "out",
        data={"source": "file", "path": str(data), "size": 4},
        rollout={"num_generations": 2, "max_completion_length": 4},
        training={"max_steps": 2, "prompts_per_step": 1, "micro_batch_size": 8, "learning_rate": 1e-3},
        verifiers=[
            {"name": "regex_format", "params": {"pattern": "[0-9]", "match": "search"}},
            {"name": "code", "params": {"extract": "full", "wall_s": 3, "cpu_s": 1}},
        ],
    )  # fmt: skip
    steps = Steps()
    result = train(cfg, sink=steps, log=lambda m: None)

    assert result.status == "succeeded" and len(steps.reports) == 2
    details = [r.details["code"] for report in steps.reports for r in report.rollouts]
    assert len(details) == 4
    for detail in details:
        assert "error" not in detail, detail  # the verifier itself never failed
        assert detail["passed"] == 0 and len(detail["tests"]) == len(HOSTILE)
    reasons = json.dumps(details)
    assert "must-not-leak" not in reasons and "INSTALLED_APPS" not in reasons
    ran = [d for d in details if "SyntaxError" not in d["reason"]]
    assert ran, "no completion was valid Python, so the hostile tests never ran"
    for detail in ran:
        statuses = [t["status"] for t in detail["tests"]]
        assert statuses[1] in ("cpu_limit", "timeout") and statuses[2] == "memory_limit", statuses
        assert all(s != "passed" for s in statuses)
