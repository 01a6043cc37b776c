"""load_samples: one DataConfig in, the Samples of its source out (trainer/data/loading.py)."""

from pathlib import Path

import pytest

from trainer.config import DataConfig
from trainer.data import demo_samples, load_samples
from trainer.errors import DataError


def test_the_demo_source_gives_the_demo_task():
    assert load_samples(DataConfig(source="demo", size=5, data_seed=2)) == demo_samples(5, seed=2)


def test_the_file_source_uses_the_configured_fields(data_dir: Path):
    cfg = DataConfig(source="file", path=str(data_dir / "gsm8k_sample.jsonl"), prompt_field="question")
    samples = load_samples(cfg)
    assert len(samples) == 10 and samples[2].answer is not None and samples[2].answer.endswith("#### 12")


def test_the_reasoning_gym_source_uses_size_seed_and_task_config():
    cfg = DataConfig(
        source="reasoning_gym",
        task="chain_sum",
        size=3,
        data_seed=4,
        task_config={"min_terms": 3, "max_terms": 3},
    )
    samples = load_samples(cfg)
    assert [s.id for s in samples] == ["chain_sum-0", "chain_sum-1", "chain_sum-2"]
    assert all(s.meta["entry"]["metadata"]["num_terms"] == 3 for s in samples)


def test_the_template_is_checked_when_the_data_loads(data_dir: Path):
    cfg = DataConfig(
        source="file", path=str(data_dir / "addition.jsonl"), prompt_template="{prompt} ({level})"
    )
    with pytest.raises(DataError, match=r"\{level\}.*available fields: \{prompt\}, \{difficulty\}"):
        load_samples(cfg)


def test_a_template_may_use_a_column_of_the_file(data_dir: Path):
    cfg = DataConfig(
        source="file", path=str(data_dir / "addition.jsonl"), prompt_template="[{difficulty}] {prompt}"
    )
    assert load_samples(cfg)[0].meta["difficulty"] == "easy"
