"""Benchmark configs validated by the trainer's own pydantic model (``trainer.evaluation.config.BenchmarkConfig``).

The web side never re-implements the schema: it builds the dict, asks the trainer's model, and turns a
pydantic error into ``InvalidInput`` with one message per field (``config.n_samples``: ...). The module
imports no torch (trainer/evaluation/config.py promises that), so the web process may call it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from webapp.core.errors import InvalidInput

if TYPE_CHECKING:
    from webapp.benchmarks.models import EvalRun


def validate_benchmark_config(config: Any) -> dict[str, Any]:
    """The config with every default filled in, as JSON; InvalidInput naming each wrong field."""
    from trainer.evaluation.config import BenchmarkConfig

    if not isinstance(config, dict):
        raise InvalidInput("A benchmark config must be a JSON object.", {"config": ["Expected an object."]})
    try:
        return BenchmarkConfig.model_validate(config).model_dump(mode="json")
    except ValidationError as err:
        fields: dict[str, list[str]] = {}
        for e in err.errors():
            path = ".".join(["config", *(str(p) for p in e["loc"])])
            fields.setdefault(path, []).append(str(e["msg"]).removeprefix("Value error, "))
        first = next(iter(fields.items()))
        raise InvalidInput(f"Invalid benchmark config: {first[0]}: {first[1][0]}", fields) from None


def builtin_suite_names() -> list[str]:
    """The built-in suite entries (``builtin:addition`` ...) a benchmark can start from."""
    from trainer.evaluation.suite import builtin_benchmark_names

    return builtin_benchmark_names()


def builtin_config(name: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """A built-in suite entry's config with ``overrides`` laid over it (a new n_samples resets pass_k and
    maj_k to their defaults unless given), as JSON; InvalidInput listing the valid names or the bad field."""
    from trainer.errors import ConfigError
    from trainer.evaluation.suite import resolve_benchmark

    if not name.startswith("builtin:"):
        name = f"builtin:{name}"
    try:
        config: dict[str, Any] = resolve_benchmark(name, **overrides).model_dump(mode="json")
    except ConfigError as err:
        message = str(err).replace("\n", " ")
        raise InvalidInput(message, {"config": [message]}) from None
    return config


def eval_inputs_for_worker(*, eval_run: EvalRun) -> tuple[dict[str, Any], str]:
    """(benchmark config, model) as the eval worker must load them: ``dataset:<id>`` and ``checkpoint:<id>``
    resolved to server paths for the benchmark's own project, checked again here as at launch
    (webapp/experiments/config_paths.py). ConfigError (shown as it is) if either names what it may not."""
    from trainer.errors import ConfigError
    from webapp.experiments.config_paths import confine_benchmark_config, confine_model

    project = eval_run.benchmark.project
    try:
        config = confine_benchmark_config(eval_run.config, project=project, resolve=True)
        model = confine_model(eval_run.model_path, project=project, resolve=True, field="model")
    except InvalidInput as err:
        raise ConfigError(f"evaluation {eval_run.pk}: {err.message}") from None
    return config, model
