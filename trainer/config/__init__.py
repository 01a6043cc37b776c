"""The experiment configuration (``ExperimentConfig``) and its loaders; see README.md beside this file."""

from trainer.config.experiment import ExperimentConfig
from trainer.config.loading import config_from_dict, config_schema, load_config
from trainer.config.method_sections import AlgorithmConfig, RolloutBudgetConfig, ShapingConfig, TeacherConfig
from trainer.config.sections import (
    CheckpointConfig,
    DataConfig,
    EvaluationConfig,
    ModelConfig,
    RolloutConfig,
    TrainingConfig,
    VerifierSpec,
)
from trainer.methods.shaping import AnswerExtractMode

__all__ = [
    "AlgorithmConfig",
    "AnswerExtractMode",
    "CheckpointConfig",
    "DataConfig",
    "EvaluationConfig",
    "ExperimentConfig",
    "ModelConfig",
    "RolloutBudgetConfig",
    "RolloutConfig",
    "ShapingConfig",
    "TeacherConfig",
    "TrainingConfig",
    "VerifierSpec",
    "config_from_dict",
    "config_schema",
    "load_config",
]
