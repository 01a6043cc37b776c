"""A tiny process reward model for the tests, trained in seconds: tiny:chain's own samples of a handful of chain
problems, cut into steps by the ``lines`` segmenter, labelled by the ``oracle_chain`` scorer and fitted for a few
steps from tiny:chain's weights (trainer/process/prm_training.py), as the tiny chain PRM recipe does at full size
(trainer/process/tiny_prm.py, minutes on a CPU)."""

from __future__ import annotations

from pathlib import Path


def train_tiny_prm(out: Path, *, problems: int = 12, samples: int = 2, steps: int = 6, seed: int = 0) -> Path:
    """The PRM folder ``out`` (kept when it is already there: module fixtures share it)."""
    if (out / "config.json").is_file():
        return out
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer.data.chain_arithmetic import problems_off_the_benchmark
    from trainer.models.tiny_model import ensure_tiny_model
    from trainer.process.prm_config import PRMTrainingConfig
    from trainer.process.prm_training import oracle_labels, sample_rollouts, train_prm
    from trainer.rollout.hf_engine import HFRolloutEngine

    policy = ensure_tiny_model("tiny:chain", log=lambda _m: None)
    engine = HFRolloutEngine(
        AutoModelForCausalLM.from_pretrained(policy), AutoTokenizer.from_pretrained(policy)
    )
    rollouts = sample_rollouts(
        engine, problems_off_the_benchmark(problems, seed + 7, "easy"), samples, max_new_tokens=48,
        temperature=1.0, generator=torch.Generator().manual_seed(seed),
    )  # fmt: skip
    examples = oracle_labels(rollouts)
    config = PRMTrainingConfig(
        base_model="tiny:chain", output_dir=str(out), max_steps=steps, batch_size=8, micro_batch_size=8,
        max_length=128, learning_rate=1e-3, eval_every=0, device="cpu", seed=seed,
    )  # fmt: skip
    train_prm(config, examples, source={"kind": "oracle", "tests": True})
    return out
