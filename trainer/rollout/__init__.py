"""Rollout engines: prompts -> completions with per-token data (token ids, logprobs, entropies)."""

from trainer.rollout.base import RolloutBatch, RolloutEngine, SamplingParams, TokenEngine
from trainer.rollout.hf_engine import HFRolloutEngine

__all__ = ["HFRolloutEngine", "RolloutBatch", "RolloutEngine", "SamplingParams", "TokenEngine"]
