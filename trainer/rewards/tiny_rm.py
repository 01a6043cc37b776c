"""The tiny chain-arithmetic reward model (``tiny:chain-rm``): built on a CPU in a few minutes, nothing downloaded.

The recipe: sample ``samples_per_prompt`` completions for each of ``prompts`` chain-arithmetic training
problems with the demo's student ``tiny:chain`` (the hf engine, seeded, temperature 1), label them with the
``chain_arithmetic`` verifier, turn every prompt with a correct and an incorrect completion into pairs
(trainer/rewards/pairs.py: correct chosen, incorrect rejected), and train a Bradley-Terry reward model from
``tiny:chain``'s weights with a fresh scalar head (trainer/rewards/bradley_terry.py). Pairs of a held-out
share of the prompts measure the held-out pairwise accuracy. None of the problems is one of the 500 held-out
problems of the ``builtin:chain_arithmetic`` benchmark, on which its Best-of-N is measured
(benchmarks/tiny_rm.py).

Cached under ``$RLVR_HOME/models/chain-rm-v<version>`` like the other built-in models (built in a
temporary folder and renamed into place); ``rlvr train-rm --recipe chain`` builds it.
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

from trainer.data.chain_arithmetic import (  # noqa: F401 -- BENCHMARK_*: re-exported
    BENCHMARK_SEED,
    BENCHMARK_SIZE,
    problems_off_the_benchmark,
)
from trainer.models.tiny_model import BUILD_PREFIX, ensure_tiny_model, one_thread, rlvr_home
from trainer.rewards.bradley_terry import RMProgress, RMTrainingConfig, RMTrainingResult, train_reward_model
from trainer.rewards.pairs import Outcome, PreferencePair, pairs_from_outcomes
from trainer.rollout.base import SamplingParams
from trainer.rollout.hf_engine import HFRolloutEngine
from trainer.samples import Sample
from trainer.verifiers.base import build_verifier

CHAIN_RM = "tiny:chain-rm"
POLICY = "tiny:chain"


@dataclass(frozen=True)
class ChainRMRecipe:
    """How ``tiny:chain-rm`` is built; ``version`` names its cache folder (bump it when the outcome changes)."""

    prompts: int = 384
    samples_per_prompt: int = 8
    pairs_per_prompt: int = 8
    max_new_tokens: int = 96
    temperature: float = 1.0
    data_seed: int = 7
    seed: int = 0
    held_out_frac: float = 0.2
    learning_rate: float = 1e-4
    epochs: int = 2
    batch_size: int = 16
    eval_every: int = 20
    version: int = 2  # 2: the chain models of version 4, built on one thread


RECIPE = ChainRMRecipe()


def tiny_rm_path(recipe: ChainRMRecipe = RECIPE) -> Path:
    return rlvr_home() / "models" / f"chain-rm-v{recipe.version}"


def training_problems(recipe: ChainRMRecipe) -> list[Sample]:
    """``recipe.prompts`` chain problems drawn with ``data_seed``, none of them a benchmark problem."""
    return problems_off_the_benchmark(recipe.prompts, recipe.data_seed, "mixed")


def sample_outcomes(
    policy_dir: str | Path, problems: list[Sample], k: int, *, max_new_tokens: int, temperature: float, seed: int,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[Outcome]:  # fmt: skip
    """``k`` seeded samples of the policy per problem, each labelled by the chain_arithmetic verifier."""
    tokenizer = AutoTokenizer.from_pretrained(policy_dir)
    model = AutoModelForCausalLM.from_pretrained(policy_dir)
    engine = HFRolloutEngine(model, tokenizer)
    params = SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature, batch_size=256)
    generator = torch.Generator().manual_seed(seed)
    verifier = build_verifier("chain_arithmetic")
    outcomes: list[Outcome] = []
    chunk = max(1, 256 // k)
    for start in range(0, len(problems), chunk):
        part = problems[start : start + chunk]
        samples = [s for s in part for _ in range(k)]
        texts = engine.generate([s.prompt for s in samples], params, generator).texts
        for sample, text, result in zip(samples, texts, verifier(texts, samples), strict=True):
            outcomes.append(Outcome(sample.id, sample.prompt, text, result.correct))
        if on_progress is not None:
            on_progress(start + len(part), len(problems))
    return outcomes


def chain_rm_pairs(
    recipe: ChainRMRecipe = RECIPE, log: Callable[[str], None] = print
) -> list[PreferencePair]:
    """The recipe's preference pairs from ``tiny:chain``'s own samples."""
    policy = ensure_tiny_model(POLICY, log=log)
    problems = training_problems(recipe)
    outcomes = sample_outcomes(
        policy, problems, recipe.samples_per_prompt, max_new_tokens=recipe.max_new_tokens,
        temperature=recipe.temperature, seed=recipe.seed,
    )  # fmt: skip
    correct = sum(o.correct for o in outcomes)
    pairs = pairs_from_outcomes(outcomes, per_prompt=recipe.pairs_per_prompt, seed=recipe.seed)
    log(
        f"{len(outcomes)} samples of {len(problems)} problems, {correct} correct: {len(pairs)} pairs from "
        f"{len({p.prompt for p in pairs})} prompts"
    )
    return pairs


def build_chain_rm(
    output_dir: Path, recipe: ChainRMRecipe = RECIPE, on_progress: Callable[[RMProgress], None] | None = None,
    log: Callable[[str], None] = print,
) -> RMTrainingResult:  # fmt: skip
    """Sample, label, pair and train: the tiny chain RM written to ``output_dir``."""
    pairs = chain_rm_pairs(recipe, log)
    config = RMTrainingConfig(
        base_model=POLICY, output_dir=str(output_dir), learning_rate=recipe.learning_rate, epochs=recipe.epochs,
        batch_size=recipe.batch_size, micro_batch_size=recipe.batch_size, max_length=256,
        held_out_frac=recipe.held_out_frac, seed=recipe.seed, eval_every=recipe.eval_every, device="cpu",
    )  # fmt: skip
    return train_reward_model(config, pairs, on_progress=on_progress)


def ensure_tiny_rm(
    recipe: ChainRMRecipe = RECIPE, on_progress: Callable[[RMProgress], None] | None = None,
    log: Callable[[str], None] = print,
) -> Path:  # fmt: skip
    """The cached ``tiny:chain-rm`` folder, built on first use."""
    final = tiny_rm_path(recipe)
    if (final / "config.json").exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix=BUILD_PREFIX, dir=final.parent))
    try:
        with one_thread():  # the same weights on every machine (tiny_model.one_thread)
            result = build_chain_rm(tmp / "rm", recipe, on_progress, log)
        with contextlib.suppress(OSError):  # another process finished first: keep theirs
            (tmp / "rm").rename(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(
        f"{CHAIN_RM} ready in {time.perf_counter() - t0:.0f}s: held-out pairwise accuracy "
        f"{result.held_out_accuracy} on {result.held_out_pairs} pairs"
    )
    return final
