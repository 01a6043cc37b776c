"""The tiny chain-arithmetic PRM (``chain-prm``): built on a CPU in a few minutes from oracle step labels.

The recipe: sample ``samples_per_prompt`` completions of each of ``prompts`` chain-arithmetic training problems
(level ``easy``) with each of the demo's two policies, the student ``tiny:chain`` and ``tiny:chain-teacher`` (the hf
engine, seeded, temperature 0.7), cut each into steps with the ``lines`` segmenter (the chain_arithmetic verifier's
lines), label every step with the ``oracle_chain`` scorer (1 before the verifier's first wrong step, 0 from it on),
and train a two-label token-classification PRM from ``tiny:chain``'s weights (trainer/process/prm_training.py).
Examples of a held-out share of the prompts measure the held-out step accuracy and first-error accuracy. None of the
problems is one of the 500 problems of the ``builtin:chain_arithmetic`` benchmark (trainer/evaluation/suite.py: seed
1234, level mixed).

Why two policies and the easy level: the untrained student's steps are almost all wrong (measured: 249 of 2,746
steps right), so a PRM of its steps alone learns "always wrong"; the teacher's are right often enough (1,739 of
7,680) that the labels carry both classes. Even so most steps are wrong, so the figure to read is the held-out step
accuracy against the majority-class baseline (``majority_step_accuracy``), not against one half.

Cached under ``$RLVR_HOME/models/chain-prm-v<version>`` (built in a temporary folder and renamed into place);
``rlvr train-prm --recipe chain`` builds it, and the ``prm`` scorer loads the folder.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from trainer.data.chain_arithmetic import problems_off_the_benchmark
from trainer.models.tiny_model import BUILD_PREFIX, ensure_tiny_model, one_thread, rlvr_home
from trainer.process.prm_config import PRMTrainingConfig
from trainer.process.prm_training import (
    PRMProgress,
    PRMTrainingResult,
    oracle_labels,
    sample_rollouts,
    train_prm,
)
from trainer.process.step_labels import StepExample
from trainer.rollout.hf_engine import HFRolloutEngine
from trainer.samples import Sample

POLICY = "tiny:chain"  # the PRM's base weights


@dataclass(frozen=True)
class ChainPRMRecipe:
    """How the tiny chain PRM is built; ``version`` names its cache folder (bump it when the outcome changes)."""

    prompts: int = 768
    policies: tuple[str, ...] = ("tiny:chain", "tiny:chain-teacher")
    samples_per_prompt: int = 2  # per policy
    level: str = "easy"
    max_new_tokens: int = 96
    temperature: float = 0.7
    data_seed: int = 11
    seed: int = 0
    held_out_frac: float = 0.2
    learning_rate: float = 3e-4
    epochs: int = 4
    batch_size: int = 16
    eval_every: int = 50
    version: int = 2  # 2: the chain models of version 4, built on one thread


RECIPE = ChainPRMRecipe()


def tiny_prm_path(recipe: ChainPRMRecipe = RECIPE) -> Path:
    return rlvr_home() / "models" / f"chain-prm-v{recipe.version}"


def training_problems(recipe: ChainPRMRecipe) -> list[Sample]:
    """``recipe.prompts`` chain problems drawn with ``data_seed``, none of them a benchmark problem."""
    return problems_off_the_benchmark(recipe.prompts, recipe.data_seed, recipe.level)


def chain_prm_examples(
    recipe: ChainPRMRecipe = RECIPE, log: Callable[[str], None] = print
) -> list[StepExample]:
    """The recipe's oracle-labelled examples from ``tiny:chain``'s own samples."""
    problems = training_problems(recipe)
    examples: list[StepExample] = []
    for n, name in enumerate(recipe.policies):
        policy = ensure_tiny_model(name, log=log)
        engine = HFRolloutEngine(
            AutoModelForCausalLM.from_pretrained(policy), AutoTokenizer.from_pretrained(policy)
        )
        rollouts = sample_rollouts(
            engine, problems, recipe.samples_per_prompt, max_new_tokens=recipe.max_new_tokens,
            temperature=recipe.temperature, generator=torch.Generator().manual_seed(recipe.seed + n),
        )  # fmt: skip
        labelled = oracle_labels(rollouts)
        steps = [y for e in labelled for y in e.labels]
        log(
            f"{name}: {len(rollouts.samples)} samples of {len(problems)} problems, {len(labelled)} labelled, "
            f"{len(steps)} steps, {sum(y == 1.0 for y in steps)} right"
        )
        examples += labelled
    return examples


def build_chain_prm(
    output_dir: Path, recipe: ChainPRMRecipe = RECIPE, on_progress: Callable[[PRMProgress], None] | None = None,
    log: Callable[[str], None] = print, should_stop: Callable[[], bool] | None = None,
) -> PRMTrainingResult:  # fmt: skip
    """Sample, segment, label and train: the tiny chain PRM written to ``output_dir``."""
    examples = chain_prm_examples(recipe, log)
    config = PRMTrainingConfig(
        base_model=POLICY, output_dir=str(output_dir), learning_rate=recipe.learning_rate, epochs=recipe.epochs,
        batch_size=recipe.batch_size, micro_batch_size=recipe.batch_size, max_length=256,
        held_out_frac=recipe.held_out_frac, seed=recipe.seed, eval_every=recipe.eval_every, device="cpu",
    )  # fmt: skip
    source = {"kind": "oracle", "scorer": "oracle_chain", "segmenter": "lines", "policies": list(recipe.policies),
              "recipe": recipe.__dict__}  # fmt: skip
    return train_prm(config, examples, on_progress=on_progress, should_stop=should_stop, source=source)


def ensure_tiny_prm(
    recipe: ChainPRMRecipe = RECIPE, on_progress: Callable[[PRMProgress], None] | None = None,
    log: Callable[[str], None] = print,
) -> Path:  # fmt: skip
    """The cached tiny chain PRM folder, built on first use."""
    final = tiny_prm_path(recipe)
    if (final / "config.json").exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix=BUILD_PREFIX, dir=final.parent))
    try:
        with one_thread():  # the same weights on every machine (tiny_model.one_thread)
            result = build_chain_prm(tmp / "prm", recipe, on_progress, log)
        with contextlib.suppress(OSError):  # another process finished first: keep theirs
            (tmp / "prm").rename(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(
        f"chain PRM ready in {time.perf_counter() - t0:.0f}s: held-out step accuracy {result.held_out_step_accuracy} "
        f"(majority class {result.majority_step_accuracy}) on {result.held_out_steps} steps, first-error accuracy "
        f"{result.held_out_first_error_accuracy} (majority class {result.majority_first_error_accuracy})"
    )
    return final
