"""Rubric rewards: criteria scored by rules or an LLM judge, aggregated into one reward per rollout.

``config.py`` (the ``rubric`` config section; importable without torch), ``rules.py`` (rule scorers
registry), ``judge.py`` (LLM judge through the rollout engine), ``aggregators.py`` (weighted_sum, rank),
``scoring.py`` (``RubricScorer``: scores a batch and adds ``rubric/<criterion>`` keys to the ScoreBatch).
Importing this package loads only the config models: torch loads with ``judge`` / ``scoring``.
"""

from trainer.rubrics.config import CriterionSpec, JudgeModelConfig, JudgeSpec, RubricConfig, RuleSpec

__all__ = ["CriterionSpec", "JudgeModelConfig", "JudgeSpec", "RubricConfig", "RuleSpec"]
