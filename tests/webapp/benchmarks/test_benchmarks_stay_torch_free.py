"""The benchmark pages and API validate configs with trainer modules; none of that may load torch in the
web process (DESIGN.md). Only the worker's task body imports trainer.evaluation.engine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

PROBE = """
import sys
import django
django.setup()
from webapp.benchmarks import api, consumers, exports, selectors, selectors_tables, services, views
from webapp.benchmarks.config_validation import builtin_config, builtin_suite_names, validate_benchmark_config
for name in builtin_suite_names():
    config = builtin_config(name, {})
    validate_benchmark_config(config)
    if not config["greedy"]:  # a greedy benchmark has one completion per problem
        validate_benchmark_config(builtin_config(name, {"n_samples": 2}))
views._verifier_names()
import workers.tasks_eval, workers.eval_sink
from trainer.data.row_check import check_data_file
check_data_file("tests/data/addition.parquet")
print("HEAVY:" + ",".join(sorted(m for m in ("torch", "transformers") if m in sys.modules)))
"""


def test_validating_every_builtin_benchmark_and_reading_a_parquet_file_loads_no_torch() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "webapp.settings", "RLVR_DEBUG": "1"}
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=REPO, env=env)
    assert result.returncode == 0, result.stderr
    assert "HEAVY:\n" in result.stdout, f"the web side imported {result.stdout.strip()}"
