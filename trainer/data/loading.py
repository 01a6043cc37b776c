"""``load_samples``: one DataConfig in, the Samples of its source out, with the prompt template checked."""

from __future__ import annotations

from trainer.data.chain_arithmetic import chain_arithmetic_samples
from trainer.data.config import DataConfig
from trainer.data.demo_task import demo_samples
from trainer.data.files import load_file_samples
from trainer.data.reasoning_gym_tasks import reasoning_gym_samples
from trainer.data.templates import check_template
from trainer.samples import Sample


def load_samples(cfg: DataConfig) -> list[Sample]:
    """All Samples of ``cfg.source``, in a stable order; DataError naming the file/row/field if it fails."""
    if cfg.source == "demo":
        samples = demo_samples(cfg.size, cfg.data_seed)
    elif cfg.source == "file":
        assert cfg.path is not None  # DataConfig refuses source='file' without a path
        samples = load_file_samples(
            cfg.path,
            format=cfg.format,
            prompt_field=cfg.prompt_field,
            answer_field=cfg.answer_field,
            id_field=cfg.id_field,
        )
    elif cfg.source == "chain_arithmetic":
        samples = chain_arithmetic_samples(cfg.size, cfg.data_seed, level=cfg.task, overrides=cfg.task_config)
    else:
        assert cfg.task is not None  # DataConfig refuses source='reasoning_gym' without a task
        samples = reasoning_gym_samples(
            cfg.task, size=cfg.size, seed=cfg.data_seed, task_config=cfg.task_config
        )
    check_template(cfg, samples)
    return samples
