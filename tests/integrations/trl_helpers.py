"""A real TRL GRPOTrainer on the built-in tiny model, as benchmarks/vs_trl.py builds it: two-digit addition
prompts, rlvr's own ``exact`` verifier (first line) as one reward function and a digit check as another."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.data.demo_task import demo_samples
from trainer.samples import Sample
from trainer.verifiers.exact import ExactParams, ExactVerifier

REPO = Path(__file__).resolve().parents[2]
REWARD_FUNCS = ("first_line_exact", "has_digit")


def first_line_exact(completions: list[str], answer: list[str], **_: Any) -> list[float | None]:
    verifier = ExactVerifier(ExactParams(extract="first_line"))
    samples = [Sample(id=str(i), prompt="", answer=a) for i, a in enumerate(answer)]
    return [r.reward for r in verifier(completions, samples)]


def has_digit(completions: list[str], **_: Any) -> list[float]:
    return [float(any(ch.isdigit() for ch in c)) for c in completions]


def tiny_grpo_trainer(
    model_dir: Path, output_dir: Path, *, reward_funcs: list[Any] | None = None, **overrides: Any
) -> Any:
    """2 prompts x 4 completions of at most 6 tokens a step, float32 on the CPU, one log line per step."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    settings: dict[str, Any] = {
        "output_dir": str(output_dir), "use_cpu": True, "report_to": [], "save_strategy": "no",
        "disable_tqdm": True, "seed": 0, "max_steps": 3, "per_device_train_batch_size": 8, "num_generations": 4,
        "max_completion_length": 6, "temperature": 1.0, "beta": 0.0, "learning_rate": 1e-4, "loss_type": "dapo",
        "logging_steps": 1, "bf16": False, "lr_scheduler_type": "constant", "activation_checkpointing": False,
        **overrides,
    }  # fmt: skip
    rows = [{"prompt": s.prompt, "answer": s.answer} for s in demo_samples(32, 0)]
    return GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(model_dir),
        reward_funcs=reward_funcs or [first_line_exact, has_digit],
        args=GRPOConfig(**settings),
        train_dataset=Dataset.from_list(rows),
        processing_class=AutoTokenizer.from_pretrained(model_dir),
    )


def main() -> None:
    """``torchrun --nproc_per_node 2 tests/integrations/trl_helpers.py MODEL_DIR OUT_DIR PROJECT``: 2 steps on
    2 CPU processes (gloo), 2 rows each, so each prompt's 4 completions are split across the processes."""
    import sys

    import torch

    from rlvr_client.trl import instrument

    torch.set_num_threads(1)
    model_dir, output_dir, project = sys.argv[1:4]
    trainer = tiny_grpo_trainer(Path(model_dir), Path(output_dir), per_device_train_batch_size=2, max_steps=2)
    instrument(trainer, project=project, name="grpo-two-processes")
    trainer.train()


if __name__ == "__main__":
    main()
