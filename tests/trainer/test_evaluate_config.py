"""BenchmarkConfig validation, the built-in suite, and the experiment's evaluation section."""

from __future__ import annotations

import pytest

from trainer.config import config_from_dict
from trainer.errors import ConfigError
from trainer.evaluation.config import BenchmarkConfig, benchmark_from_dict
from trainer.evaluation.suite import builtin_benchmark_names, resolve_benchmark


def test_pass_k_and_maj_k_default_to_one_and_n():
    config = BenchmarkConfig(name="b", n_samples=16)
    assert (config.pass_k, config.maj_k) == ([1, 16], [16])


def test_a_k_above_n_is_refused_with_how_to_fix_it():
    with pytest.raises(ConfigError, match=r"pass_k has \[16\].*between 1 and n_samples=8"):
        benchmark_from_dict({"name": "b", "n_samples": 8, "pass_k": [1, 16]})


def test_an_unknown_verifier_is_refused():
    with pytest.raises(ConfigError, match="verifier 'nope' is unknown; valid: "):
        benchmark_from_dict({"name": "b", "verifiers": [{"name": "nope"}]})


def test_every_builtin_benchmark_resolves_and_is_torch_free_to_build():
    names = builtin_benchmark_names()
    assert names[:3] == ["builtin:addition", "builtin:chain_sum-easy", "builtin:chain_sum-hard"]
    assert {resolve_benchmark(n).name for n in names} == {n.removeprefix("builtin:") for n in names}


def test_an_unknown_builtin_lists_the_valid_ones():
    with pytest.raises(
        ConfigError, match="unknown built-in benchmark 'builtin:gsm8k'; valid: builtin:addition"
    ):
        resolve_benchmark("builtin:gsm8k")


def test_a_missing_benchmark_file_says_what_was_expected():
    with pytest.raises(ConfigError, match=r"neither a built-in .* nor an existing YAML/JSON file"):
        resolve_benchmark("nowhere.yaml")


def test_overriding_n_resets_the_default_ks():
    config = resolve_benchmark("builtin:addition", n_samples=4)
    assert (config.n_samples, config.pass_k, config.maj_k) == (4, [1, 4], [4])
    assert resolve_benchmark("builtin:addition", n_samples=4, pass_k=[2]).pass_k == [2]


def test_the_hard_builtin_generates_harder_problems_than_the_easy_one():
    from trainer.evaluation.engine import load_benchmark_samples

    easy = load_benchmark_samples(resolve_benchmark("builtin:chain_sum-easy", max_problems=20))
    hard = load_benchmark_samples(resolve_benchmark("builtin:chain_sum-hard", max_problems=20))
    assert max(len(p.answer or "") for p in easy) < max(len(p.answer or "") for p in hard)
    assert len(easy) == 20


def _experiment(evaluation: dict[str, object]) -> dict[str, object]:
    return {"evaluation": evaluation}


def test_the_evaluation_section_is_off_by_default():
    assert config_from_dict({}).evaluation.eval_every == 0


def test_eval_every_without_benchmarks_is_refused():
    with pytest.raises(ConfigError, match=r"evaluation\.benchmarks is empty"):
        config_from_dict(_experiment({"eval_every": 5}))


def test_an_unknown_benchmark_fails_when_the_experiment_is_validated():
    with pytest.raises(ConfigError, match="unknown built-in benchmark 'builtin:nope'"):
        config_from_dict(_experiment({"eval_every": 5, "benchmarks": ["builtin:nope"]}))


def test_an_inline_benchmark_is_validated():
    with pytest.raises(ConfigError, match="temperature"):
        config_from_dict(_experiment({"eval_every": 5, "benchmarks": [{"name": "inline", "temperature": 0}]}))


def test_two_benchmarks_with_one_name_are_refused():
    with pytest.raises(ConfigError, match="two benchmarks share a name"):
        config_from_dict(
            _experiment({"eval_every": 5, "benchmarks": ["builtin:addition", "builtin:addition"]})
        )


def test_the_web_process_can_build_benchmarks_and_read_results_without_torch():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import trainer.evaluation.suite as suite, trainer.evaluation.engine, trainer.evaluation.metrics\n"
        "[suite.resolve_benchmark(n) for n in suite.builtin_benchmark_names()]\n"
        "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
