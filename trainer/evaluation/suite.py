"""The built-in offline benchmark suite, and how a benchmark name, file or dict becomes a BenchmarkConfig.

Built-ins need no download, so a fresh install can benchmark the tiny model (`rlvr eval --model
tiny:addition --benchmark builtin:addition`):

- ``builtin:addition``: the demo task (2-digit addition, ``"37+58="``), 100 problems generated with a
  data seed the demo run does not train on (seed 1; the run uses 0; with 10^4 possible problems some
  overlap remains), scored by ``exact`` on the first line.
- ``builtin:chain_arithmetic``: the demo's task (``"(9+6)*4-5="``, trainer/data/chain_arithmetic.py, mixed
  levels), 500 problems of data seed 1234 (the demo trains on seed 0; the held-out problems that
  ``benchmarks/chain_demo.py`` and the tiny models' recipes read greedy accuracy on), decoded greedily and
  scored by the ``chain_arithmetic`` verifier: the demo's headline "accuracy (greedy)".
- ``builtin:chain_sum-easy`` / ``-hard`` and ``builtin:basic_arithmetic-easy`` / ``-hard``: reasoning-gym
  tasks (Stojanovski et al. 2025) generated locally at two difficulties. Easy: two 1-2 digit terms;
  hard: three or four 2-3 digit terms. Scored by ``numeric`` on the last number of the completion, not by
  the task's own ``score_answer`` (verifier ``reasoning_gym``): both tasks have integer answers, where
  the two agree on correctness, and ``numeric`` runs in-process (the scorer runs in timeout-pool worker
  processes whose start-up alone costs seconds) and gives no partial credit (reasoning-gym gives 0.01 to
  a wrong answer, which would make avg@n differ from accuracy). A benchmark file can choose
  ``reasoning_gym`` for tasks whose scorer matters.

Torch-free: the web process lists and validates these.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from trainer.data.config import DataConfig
from trainer.errors import ConfigError
from trainer.evaluation.config import BenchmarkConfig, benchmark_from_dict
from trainer.verifiers.spec import VerifierSpec

if TYPE_CHECKING:
    from trainer.config.sections import EvaluationConfig

BUILTIN_PREFIX = "builtin:"
_PROBLEMS = 100


def _addition() -> BenchmarkConfig:
    return BenchmarkConfig(
        name="addition",
        data=DataConfig(source="demo", size=_PROBLEMS, data_seed=1, shuffle=False),
        verifiers=[VerifierSpec(name="exact", params={"extract": "first_line"})],
        max_tokens=8,
    )


def _chain_arithmetic() -> BenchmarkConfig:
    return BenchmarkConfig(
        name="chain_arithmetic",
        data=DataConfig(source="chain_arithmetic", task="mixed", size=500, data_seed=1234, shuffle=False),
        verifiers=[VerifierSpec(name="chain_arithmetic")],
        n_samples=1,
        greedy=True,
        max_tokens=96,
    )


def _reasoning_gym(task: str, level: str, task_config: dict[str, Any]) -> Callable[[], BenchmarkConfig]:
    def build() -> BenchmarkConfig:
        return BenchmarkConfig(
            name=f"{task}-{level}",
            data=DataConfig(
                source="reasoning_gym",
                task=task,
                task_config=task_config,
                size=_PROBLEMS,
                data_seed=1,
                shuffle=False,
            ),
            verifiers=[VerifierSpec(name="numeric", params={"extract": "last_number"})],
            max_tokens=12,
        )

    return build


BUILTIN_BENCHMARKS: dict[str, Callable[[], BenchmarkConfig]] = {
    "addition": _addition,
    "chain_sum-easy": _reasoning_gym(
        "chain_sum", "easy", {"min_terms": 2, "max_terms": 2, "min_digits": 1, "max_digits": 2}
    ),
    "chain_sum-hard": _reasoning_gym(
        "chain_sum", "hard", {"min_terms": 3, "max_terms": 4, "min_digits": 2, "max_digits": 3}
    ),
    "basic_arithmetic-easy": _reasoning_gym(
        "basic_arithmetic",
        "easy",
        {
            "min_terms": 2,
            "max_terms": 2,
            "min_digits": 1,
            "max_digits": 2,
            "operators": ["+", "-"],
            "allow_parentheses": False,
            "allow_negation": False,
        },
    ),
    "basic_arithmetic-hard": _reasoning_gym(
        "basic_arithmetic",
        "hard",
        {
            "min_terms": 3,
            "max_terms": 4,
            "min_digits": 2,
            "max_digits": 3,
            "operators": ["+", "-", "*"],
            "allow_parentheses": True,
            "allow_negation": False,
        },
    ),
    "chain_arithmetic": _chain_arithmetic,
}


def builtin_benchmark_names() -> list[str]:
    """``['builtin:addition', 'builtin:chain_sum-easy', ...]``."""
    return [BUILTIN_PREFIX + name for name in BUILTIN_BENCHMARKS]


def builtin_benchmark(name: str) -> BenchmarkConfig:
    """The built-in benchmark ``name`` (with or without the ``builtin:`` prefix)."""
    key = name.removeprefix(BUILTIN_PREFIX)
    if key not in BUILTIN_BENCHMARKS:
        raise ConfigError(
            f"unknown built-in benchmark {name!r}; valid: {', '.join(builtin_benchmark_names())}"
        )
    return BUILTIN_BENCHMARKS[key]()


def resolve_benchmark(spec: str | dict[str, Any] | BenchmarkConfig, **overrides: Any) -> BenchmarkConfig:
    """A BenchmarkConfig from a built-in name, a YAML/JSON file path, a dict or a config, with ``overrides``
    (e.g. ``n_samples=4``) applied and the result validated again."""
    if isinstance(spec, BenchmarkConfig):
        config, source = spec, spec.name
    elif isinstance(spec, dict):
        config, source = benchmark_from_dict(spec), "benchmark"
    elif spec.startswith(BUILTIN_PREFIX):
        config, source = builtin_benchmark(spec), spec
    else:
        config, source = load_benchmark_file(spec), spec
    if not overrides:
        return config
    data = config.model_dump(mode="json")
    if "n_samples" in overrides:  # a new n resets pass_k / maj_k to their defaults [1, n] / [n] unless given
        data["pass_k"], data["maj_k"] = [], []
    data.update(overrides)
    return benchmark_from_dict(
        data, source=f"{source} with {', '.join(f'{k}={v}' for k, v in overrides.items())}"
    )


def load_benchmark_file(path: str | Path) -> BenchmarkConfig:
    """Load a benchmark from YAML (.yaml/.yml) or JSON; a relative data.path is resolved against the file."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(
            f"benchmark {str(path)!r} is neither a built-in ({', '.join(builtin_benchmark_names())}) nor an "
            "existing YAML/JSON file"
        )
    text = p.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if p.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as err:
        raise ConfigError(f"{p} is not valid {'JSON' if p.suffix == '.json' else 'YAML'}: {err}") from None
    if isinstance(data, dict):
        data.setdefault("name", p.stem)
        path_value = (data.get("data") or {}).get("path")
        if isinstance(path_value, str) and not Path(path_value).is_absolute():
            data["data"]["path"] = str((p.parent / path_value).resolve())
    return benchmark_from_dict(data, source=str(p))


def resolve_training_benchmarks(evaluation: EvaluationConfig) -> list[BenchmarkConfig]:
    """The benchmarks of an experiment's ``evaluation`` section, with its n_samples / max_problems overrides
    applied and bootstrap CIs off (a training curve plots the point estimates)."""
    overrides: dict[str, Any] = {"bootstrap_samples": 0}
    if evaluation.n_samples is not None:
        overrides["n_samples"] = evaluation.n_samples
    if evaluation.max_problems is not None:
        overrides["max_problems"] = evaluation.max_problems
    benchmarks = [resolve_benchmark(spec, **overrides) for spec in evaluation.benchmarks]
    names = [b.name for b in benchmarks]
    if len(set(names)) != len(names):
        raise ConfigError(
            f"two benchmarks share a name in {names}: metrics eval/<name>/... would collide; rename one"
        )
    return benchmarks
