"""What every step scorer shares: its result (``StepScoreBatch``) and what it may read (``ScorerContext``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from trainer.verifiers.chain_arithmetic import ChainArithmeticParams

if TYPE_CHECKING:
    import torch

    from trainer.rollout import RolloutEngine, SamplingParams
    from trainer.verifiers.base import Verifier


@dataclass(frozen=True)
class StepScoreBatch:
    """Scores parallel to the spans (nan: absent), a JSON-friendly detail per completion, and the scorer's metrics
    (``process/mc_tokens`` ...)."""

    scores: list[list[float]]
    detail: list[dict[str, Any]]
    metrics: dict[str, float] = field(default_factory=dict)


class ScorerState(Protocol):
    """What a stateful scorer keeps between training steps (the ``implicit`` scorer's PRM and its optimizer),
    built once by the run setup and saved with every checkpoint; stateless scorers have none."""

    def checkpoint_state(self) -> dict[str, Any]:
        """What ``TrainerState.scorer_state`` keeps (optimizer state, counters): torch-saveable."""
        ...

    def checkpoint_models(self) -> dict[str, Any]:
        """Models saved beside the policy in the checkpoint folder, by subfolder name (``save_pretrained``)."""
        ...


@dataclass
class ScorerContext:
    """What a scorer may read beyond the completions: its params, the tokenizer, each completion's rendered prompt,
    and, for Monte Carlo, the rollout engine, sampling params, a generator and the run's primary verifier; for a
    stateful scorer (``implicit``), its ``state`` and the completions' prompt token ids."""

    params: Any
    tokenizer: Any
    prompts: list[str]  # [N] the rendered prompt of each completion
    engine: RolloutEngine | None = None
    sampling: SamplingParams | None = None
    generator: torch.Generator | None = None
    verifier: Verifier | None = None  # the run's primary verifier (Monte Carlo scores continuations with it)
    correct: list[bool] | None = None  # [N] the primary verifier's verdict on each completion
    micro_batch_size: int = 16
    chain_params: ChainArithmeticParams | None = None  # the run's chain_arithmetic params, when it has one
    state: ScorerState | None = None  # a stateful scorer's (trainer/process/implicit_prm.py)
    prompt_ids: list[list[int]] | None = None  # [N] each completion's prompt tokens as the policy saw them
    dropped: list[bool] | None = None  # [N] completions dropped for an absent reward (no outcome label)
